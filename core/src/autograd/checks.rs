//! The gradient checks the lesson, the CLI and the tests share: one per op,
//! and a whole MLP. Each op's output is weighted by fixed random numbers
//! before summing, so every element gets a different gradient.

use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;

use super::gradcheck::{GradcheckReport, gradcheck};
use super::tensor::{Real, Tensor};
use super::{Graph, PlantedBug, Var};
use crate::mixed::Rounder;
use std::sync::Arc;

crate::catalog_error! {
    /// A gradient check asked for in a precision it does not run in.
    pub enum PrecisionError {
        Unknown { name: String, choices: String } = "gradcheck.precision",
    }
}

impl PrecisionError {
    fn new(name: &str) -> Self {
        Self::Unknown {
            name: name.to_owned(),
            choices: PRECISIONS.join(", "),
        }
    }
}

/// The arithmetics [`Check::run_in`] knows, widest first.
pub const PRECISIONS: [&str; 5] = ["f64", "f32", "tf32", "bf16", "fp16"];

/// The finite-difference step in emulated formats: 2⁻⁵, a power of two (so
/// `x ± h` and `x ± 2h` are exact in them for |x| < 4) below the 0.1 the ReLU
/// check keeps from its kink.
pub const EMULATED_STEP: f64 = 1.0 / 32.0;

/// Every check, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum Check {
    Add,
    Sub,
    Mul,
    MatMul,
    Relu,
    Tanh,
    Sigmoid,
    Exp,
    Log,
    Scale,
    Sum,
    Mean,
    Softmax,
    LogSoftmax,
    SoftmaxCrossEntropy,
    Mse,
    /// A 5-6-4-3 MLP (tanh, then ReLU) with softmax cross-entropy, all parameters.
    Mlp,
}

impl Check {
    pub const ALL: [Self; 17] = [
        Self::Add,
        Self::Sub,
        Self::Mul,
        Self::MatMul,
        Self::Relu,
        Self::Tanh,
        Self::Sigmoid,
        Self::Exp,
        Self::Log,
        Self::Scale,
        Self::Sum,
        Self::Mean,
        Self::Softmax,
        Self::LogSoftmax,
        Self::SoftmaxCrossEntropy,
        Self::Mse,
        Self::Mlp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Add => "add (bias broadcast)",
            Self::Sub => "sub",
            Self::Mul => "mul (row broadcast)",
            Self::MatMul => "matmul",
            Self::Relu => "relu",
            Self::Tanh => "tanh",
            Self::Sigmoid => "sigmoid",
            Self::Exp => "exp",
            Self::Log => "log",
            Self::Scale => "scale",
            Self::Sum => "sum",
            Self::Mean => "mean",
            Self::Softmax => "softmax",
            Self::LogSoftmax => "log_softmax",
            Self::SoftmaxCrossEntropy => "softmax_cross_entropy",
            Self::Mse => "mse",
            Self::Mlp => "MLP 5-6-4-3",
        }
    }

    /// The finite-difference step that suits the precision.
    pub fn step<T: Real>() -> f64 {
        if T::NAME == "f64" { 1e-4 } else { 1e-2 }
    }

    /// Runs this check in precision `T`.
    pub fn run<T: Real>(self, seed: u64, bug: Option<PlantedBug>) -> GradcheckReport {
        let (inputs, extra) = self.inputs(seed);
        let inputs: Vec<(String, Tensor<T>)> = inputs
            .into_iter()
            .map(|(n, t)| (n, Tensor::from_f64(&t.data, &t.shape)))
            .collect();
        let weights: Tensor<T> = Tensor::from_f64(&extra.weights.data, &extra.weights.shape);
        let labels = extra.labels.clone();
        let build =
            move |g: &mut Graph<T>, v: &[Var]| -> Var { self.build(g, v, &weights, &labels) };
        gradcheck(self.name(), &build, &inputs, Self::step::<T>(), bug)
    }

    /// Runs this check in `precision`: f64 or f32 natively, or tf32, bf16 or
    /// fp16 emulated — f32 arithmetic with the inputs, every op's output and
    /// every gradient rounded to the format (nearest-even), the finite
    /// differences taken at a power-of-two step so `x ± h` stays exact.
    pub fn run_in(
        self,
        precision: &str,
        seed: u64,
        bug: Option<PlantedBug>,
    ) -> Result<GradcheckReport, PrecisionError> {
        let name: &'static str = match precision {
            "f64" => return Ok(self.run::<f64>(seed, bug)),
            "f32" => return Ok(self.run::<f32>(seed, bug)),
            "tf32" => "tf32",
            "bf16" => "bf16",
            "fp16" => "fp16",
            other => return Err(PrecisionError::new(other)),
        };
        let rounder = Rounder::by_name(name).map_err(|_| PrecisionError::new(name))?;
        let round = |t: &Tensor<f64>| -> Tensor<f32> {
            Tensor::new(
                t.data.iter().map(|v| rounder.round(*v as f32)).collect(),
                &t.shape,
            )
        };
        let (inputs, extra) = self.inputs(seed);
        let inputs: Vec<(String, Tensor<f32>)> =
            inputs.iter().map(|(n, t)| (n.clone(), round(t))).collect();
        let weights = round(&extra.weights);
        let labels = extra.labels.clone();
        let build = move |g: &mut Graph<f32>, v: &[Var]| -> Var {
            let (outputs, grads) = (rounder.clone(), rounder.clone());
            g.set_output_hook(Some(Arc::new(move |d: &mut [f32]| outputs.round_slice(d))));
            g.set_grad_hook(Some(Arc::new(move |_: Var, d: &mut [f32]| {
                grads.round_slice(d);
            })));
            self.build(g, v, &weights, &labels)
        };
        let mut report = gradcheck(self.name(), &build, &inputs, EMULATED_STEP, bug);
        report.precision = name;
        Ok(report)
    }

    fn build<T: Real>(
        self,
        g: &mut Graph<T>,
        v: &[Var],
        weights: &Tensor<T>,
        labels: &[usize],
    ) -> Var {
        let weighted_sum = |g: &mut Graph<T>, out: Var| {
            let w = g.input(weights.clone());
            let prod = g.mul(out, w);
            g.sum(prod)
        };
        match self {
            Self::Add => {
                let y = g.add(v[0], v[1]);
                weighted_sum(g, y)
            }
            Self::Sub => {
                let y = g.sub(v[0], v[1]);
                weighted_sum(g, y)
            }
            Self::Mul => {
                let y = g.mul(v[0], v[1]);
                weighted_sum(g, y)
            }
            Self::MatMul => {
                let y = g.matmul(v[0], v[1]);
                weighted_sum(g, y)
            }
            Self::Relu => {
                let y = g.relu(v[0]);
                weighted_sum(g, y)
            }
            Self::Tanh => {
                let y = g.tanh(v[0]);
                weighted_sum(g, y)
            }
            Self::Sigmoid => {
                let y = g.sigmoid(v[0]);
                weighted_sum(g, y)
            }
            Self::Exp => {
                let y = g.exp(v[0]);
                weighted_sum(g, y)
            }
            Self::Log => {
                let y = g.log(v[0]);
                weighted_sum(g, y)
            }
            Self::Scale => {
                let y = g.scale(v[0], T::from_f64(-0.7));
                weighted_sum(g, y)
            }
            Self::Sum => {
                let y = g.mul(v[0], v[0]);
                g.sum(y)
            }
            Self::Mean => {
                let y = g.mul(v[0], v[0]);
                g.mean(y)
            }
            Self::Softmax => {
                let y = g.softmax(v[0]);
                weighted_sum(g, y)
            }
            Self::LogSoftmax => {
                let y = g.log_softmax(v[0]);
                weighted_sum(g, y)
            }
            Self::SoftmaxCrossEntropy => g.softmax_cross_entropy(v[0], labels),
            Self::Mse => g.mse(v[0], v[1]),
            Self::Mlp => {
                let x = g.input(weights.clone());
                let h = g.matmul(x, v[0]);
                let h = g.add(h, v[1]);
                let h = g.tanh(h);
                let h = g.matmul(h, v[2]);
                let h = g.add(h, v[3]);
                let h = g.relu(h);
                let z = g.matmul(h, v[4]);
                let z = g.add(z, v[5]);
                g.softmax_cross_entropy(z, labels)
            }
        }
    }

    /// The inputs under test, and the fixed extras (weights or data, labels).
    fn inputs(self, seed: u64) -> (Vec<(String, Tensor<f64>)>, Extra) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (self as u64 * 0x9e37_79b9));
        let mut uniform = |shape: &[usize], lo: f64, hi: f64| {
            let n = shape.iter().product();
            Tensor::new((0..n).map(|_| rng.random_range(lo..hi)).collect(), shape)
        };
        let named = |items: Vec<(&str, Tensor<f64>)>| {
            items.into_iter().map(|(n, t)| (n.to_owned(), t)).collect()
        };
        let weights = uniform(&[4, 5], -1.0, 1.0);
        let mut extra = Extra {
            weights,
            labels: vec![1, 0, 4, 2],
        };
        let inputs = match self {
            Self::Add | Self::Mul => named(vec![
                ("a", uniform(&[4, 5], -2.0, 2.0)),
                ("b (row)", uniform(&[5], -2.0, 2.0)),
            ]),
            Self::Sub => named(vec![
                ("a", uniform(&[4, 5], -2.0, 2.0)),
                ("b", uniform(&[4, 5], -2.0, 2.0)),
            ]),
            Self::MatMul => named(vec![
                ("A", uniform(&[4, 6], -1.0, 1.0)),
                ("B", uniform(&[6, 5], -1.0, 1.0)),
            ]),
            Self::Relu => {
                // Keep inputs away from the kink at 0, where the derivative jumps.
                let mut x = uniform(&[4, 5], 0.1, 2.0);
                for (i, v) in x.data.iter_mut().enumerate() {
                    if i % 2 == 1 {
                        *v = -*v;
                    }
                }
                named(vec![("x", x)])
            }
            Self::Tanh
            | Self::Sigmoid
            | Self::Exp
            | Self::Scale
            | Self::Softmax
            | Self::LogSoftmax => named(vec![("x", uniform(&[4, 5], -2.0, 2.0))]),
            Self::Log => named(vec![("x", uniform(&[4, 5], 0.5, 3.0))]),
            Self::Sum | Self::Mean => named(vec![("x", uniform(&[3, 4], -2.0, 2.0))]),
            Self::SoftmaxCrossEntropy => named(vec![("logits", uniform(&[4, 5], -3.0, 3.0))]),
            Self::Mse => named(vec![
                ("prediction", uniform(&[4, 3], -1.0, 1.0)),
                ("target", uniform(&[4, 3], -1.0, 1.0)),
            ]),
            Self::Mlp => {
                extra.weights = uniform(&[4, 5], -1.0, 1.0); // the batch x
                extra.labels = vec![2, 0, 1, 2];
                named(vec![
                    ("W1", uniform(&[5, 6], -0.8, 0.8)),
                    ("b1", uniform(&[6], -0.2, 0.2)),
                    ("W2", uniform(&[6, 4], -0.8, 0.8)),
                    ("b2", uniform(&[4], 0.3, 0.6)), // positive: ReLU units stay off the kink
                    ("W3", uniform(&[4, 3], -0.8, 0.8)),
                    ("b3", uniform(&[3], -0.2, 0.2)),
                ])
            }
        };
        (inputs, extra)
    }
}

struct Extra {
    weights: Tensor<f64>,
    labels: Vec<usize>,
}
