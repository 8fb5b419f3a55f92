//! The network: layers, activations and the MLP.

use rand::SeedableRng as _;
use serde::{Deserialize, Serialize};

use super::TrainError;
use crate::autograd::{Graph, Real, Tensor, Var};

/// The hidden layers' nonlinearity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Activation {
    #[default]
    Relu,
    Tanh,
    Sigmoid,
}

impl Activation {
    pub const ALL: [Self; 3] = [Self::Relu, Self::Tanh, Self::Sigmoid];

    pub fn name(self) -> &'static str {
        match self {
            Self::Relu => "relu",
            Self::Tanh => "tanh",
            Self::Sigmoid => "sigmoid",
        }
    }

    pub fn by_name(name: &str) -> Result<Self, TrainError> {
        Self::ALL
            .into_iter()
            .find(|a| a.name() == name.trim().to_ascii_lowercase())
            .ok_or_else(|| TrainError::UnknownActivation {
                name: name.to_owned(),
            })
    }

    pub(crate) fn apply<T: Real>(self, g: &mut Graph<T>, x: Var) -> Var {
        match self {
            Self::Relu => g.relu(x),
            Self::Tanh => g.tanh(x),
            Self::Sigmoid => g.sigmoid(x),
        }
    }
}

/// `y = x·W + b` with `W: [in, out]`, `b: [out]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Linear<T> {
    pub weight: Tensor<T>,
    pub bias: Tensor<T>,
}

impl<T: Real> Linear<T> {
    /// Weights uniform with variance `gain / fan_in` (He for ReLU, LeCun
    /// otherwise), biases zero.
    pub fn new(
        inputs: usize,
        outputs: usize,
        activation: Activation,
        rng: &mut rand::rngs::StdRng,
    ) -> Self {
        let gain = if activation == Activation::Relu {
            2.0
        } else {
            1.0
        };
        let limit = (3.0 * gain / inputs as f64).sqrt();
        Self {
            weight: Tensor::uniform(rng, &[inputs, outputs], limit),
            bias: Tensor::zeros(&[outputs]),
        }
    }
}

/// One layer recorded: `x·W + b`, then the activation unless it is the last.
pub(crate) fn layer<T: Real>(
    g: &mut Graph<T>,
    x: Var,
    w: Var,
    b: Var,
    activation: Option<Activation>,
) -> Var {
    let z = g.matmul(x, w);
    let h = g.add(z, b);
    match activation {
        Some(a) => a.apply(g, h),
        None => h,
    }
}

/// A training step's graph after backward, with its loss, parameter and
/// data nodes (the MLP's, and the CNN's: [`super::models::Cnn::step`]).
pub struct TapeStep<T: Real> {
    pub graph: Graph<T>,
    pub loss: Var,
    /// The parameters, in the model's order (the MLP's: weight, bias per layer).
    pub params: Vec<Var>,
    pub data: Var,
}

/// A multi-layer perceptron: linear layers with an activation between them.
#[derive(Clone, Debug, PartialEq)]
pub struct Mlp<T> {
    pub layers: Vec<Linear<T>>,
    pub activation: Activation,
}

impl<T: Real> Mlp<T> {
    /// `sizes` = input, hidden…, output. Seeded.
    pub fn new(sizes: &[usize], activation: Activation, seed: u64) -> Result<Self, TrainError> {
        Self::check_sizes(sizes)?;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let layers = sizes
            .windows(2)
            .map(|w| Linear::new(w[0], w[1], activation, &mut rng))
            .collect();
        Ok(Self { layers, activation })
    }

    /// Whether `sizes` (input, hidden…, output) make a network here: two or
    /// more, none zero, none wider than 8,192.
    pub fn check_sizes(sizes: &[usize]) -> Result<(), TrainError> {
        if sizes.len() < 2 || sizes.contains(&0) {
            return Err(TrainError::MlpShape {
                sizes: format!("{sizes:?}"),
            });
        }
        if sizes.iter().any(|s| *s > 8192) {
            return Err(TrainError::TooWide);
        }
        Ok(())
    }

    pub fn parameter_count(&self) -> usize {
        self.layers
            .iter()
            .map(|l| l.weight.numel() + l.bias.numel())
            .sum()
    }

    /// Records the forward pass; returns the logits and the parameter leaves
    /// (weight, bias per layer) in [`Self::params_mut`] order.
    pub fn forward(&self, g: &mut Graph<T>, x: Var) -> (Var, Vec<Var>) {
        let values = self.params().into_iter().cloned().collect();
        self.forward_with(g, x, values)
    }

    /// The mean cross-entropy loss and the flat gradient (every parameter
    /// in [`Self::params`] order) on a batch: `x` holds `y.len()` rows.
    pub fn gradient(&self, x: &[f32], y: &[usize]) -> (f64, Vec<T>) {
        let TapeStep {
            graph: g,
            loss,
            params,
            ..
        } = self.step(x, y);
        let value = Real::to_f64(g.value(loss).data[0]);
        let mut flat = Vec::with_capacity(self.parameter_count());
        for p in params {
            if let Some(grad) = g.grad(p) {
                flat.extend_from_slice(&grad.data);
            }
        }
        (value, flat)
    }

    /// One training step recorded and run, forward and backward, on a
    /// batch: `x` holds `y.len()` rows.
    pub fn step(&self, x: &[f32], y: &[usize]) -> TapeStep<T> {
        let features = x.len() / y.len().max(1);
        let mut g = Graph::new();
        let data = g.input(Tensor::new(
            x.iter().map(|v| T::from_f64(f64::from(*v))).collect(),
            &[y.len(), features],
        ));
        let (logits, params) = self.forward(&mut g, data);
        let loss = g.softmax_cross_entropy(logits, y);
        g.backward(loss);
        TapeStep {
            graph: g,
            loss,
            params,
            data,
        }
    }

    /// Splits a flat gradient back into tensors shaped like the parameters.
    pub fn unflatten(&self, flat: &[T]) -> Vec<Tensor<T>> {
        let mut at = 0;
        self.params()
            .into_iter()
            .map(|p| {
                let n = p.numel();
                let t = Tensor::new(flat[at..at + n].to_vec(), &p.shape);
                at += n;
                t
            })
            .collect()
    }

    pub fn params_mut(&mut self) -> Vec<&mut Tensor<T>> {
        self.layers
            .iter_mut()
            .flat_map(|l| [&mut l.weight, &mut l.bias])
            .collect()
    }

    pub fn params(&self) -> Vec<&Tensor<T>> {
        self.layers
            .iter()
            .flat_map(|l| [&l.weight, &l.bias])
            .collect()
    }

    /// [`Self::forward`] that moves the parameters into the graph instead of
    /// copying them; [`Self::take_back`] returns them after the backward pass.
    pub fn forward_moving(&mut self, g: &mut Graph<T>, x: Var) -> (Var, Vec<Var>) {
        let values = self
            .params_mut()
            .into_iter()
            .map(|t| std::mem::replace(t, Tensor::zeros(&[0])))
            .collect();
        self.forward_with(g, x, values)
    }

    /// [`Self::forward`] with the given parameter values (weight, bias per
    /// layer) as leaves — e.g. rounded copies of fp32 master weights.
    pub fn forward_with(
        &self,
        g: &mut Graph<T>,
        x: Var,
        values: Vec<Tensor<T>>,
    ) -> (Var, Vec<Var>) {
        let mut h = x;
        let mut params = Vec::with_capacity(values.len());
        let mut values = values.into_iter();
        for i in 0..self.layers.len() {
            let (Some(w), Some(b)) = (values.next(), values.next()) else {
                break;
            };
            let (w, b) = (g.param(w), g.param(b));
            params.extend([w, b]);
            let last = i + 1 == self.layers.len();
            h = layer(g, h, w, b, (!last).then_some(self.activation));
        }
        (h, params)
    }

    /// Moves the parameters back out of `g` (see [`Self::forward_moving`]).
    pub fn take_back(&mut self, g: &mut Graph<T>, params: &[Var]) {
        for (layer, pair) in self.layers.iter_mut().zip(params.chunks(2)) {
            layer.weight = g.take_value(pair[0]);
            layer.bias = g.take_value(pair[1]);
        }
    }

    /// Logits for a batch of `rows` examples (read in place): a plain
    /// forward pass, no graph, no copy of the input.
    pub fn logits(&self, x: &[T], rows: usize) -> Tensor<T> {
        let mut h = Tensor::zeros(&[0]);
        for (i, layer) in self.layers.iter().enumerate() {
            let input = if i == 0 { x } else { &h.data };
            h = crate::autograd::tensor::matmul_rows(input, rows, &layer.weight);
            let cols = layer.bias.numel();
            for row in h.data.chunks_mut(cols) {
                for (v, b) in row.iter_mut().zip(&layer.bias.data) {
                    *v += *b;
                }
            }
            if i + 1 < self.layers.len() {
                h = match self.activation {
                    Activation::Relu => h.map(|v| if v > T::ZERO { v } else { T::ZERO }),
                    Activation::Tanh => h.map(T::tanh),
                    Activation::Sigmoid => h.map(|v| T::ONE / (T::ONE + (-v).exp())),
                };
            }
        }
        h
    }
}
