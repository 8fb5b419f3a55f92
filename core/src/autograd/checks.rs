//! The gradient checks the lesson, the CLI and the tests share: one per op,
//! and a whole MLP. Each op's output is weighted by fixed random numbers
//! before summing, so every element gets a different gradient.

use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;

use super::conv::{Conv2d, Pool2d};
use super::gradcheck::{GradcheckReport, gradcheck};
use super::graph::dropout_mask;
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
    Gelu,
    /// Dropout with a fixed mask (p = 0.3).
    Dropout,
    LayerNorm,
    /// BatchNorm with the batch's statistics (training mode).
    BatchNorm,
    /// BatchNorm with fixed running statistics (evaluation mode).
    BatchNormEval,
    /// A convolution with stride 2, padding 1 and dilation 2, with bias.
    Conv2d,
    MaxPool,
    /// Overlapping 3 × 3 windows, stride 1.
    AvgPool,
    /// Two heads of causal self-attention: q, k, v all under test.
    Attention,
    Embedding,
}

impl Check {
    /// The MLP's ops and the MLP (the autograd and mixed-precision lessons').
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

    /// The layers' ops.
    pub const LAYERS: [Self; 10] = [
        Self::Gelu,
        Self::Dropout,
        Self::LayerNorm,
        Self::BatchNorm,
        Self::BatchNormEval,
        Self::Conv2d,
        Self::MaxPool,
        Self::AvgPool,
        Self::Attention,
        Self::Embedding,
    ];

    /// Every check: [`Self::ALL`], then [`Self::LAYERS`].
    pub fn every() -> impl Iterator<Item = Self> {
        Self::ALL.into_iter().chain(Self::LAYERS)
    }

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
            Self::Gelu => "gelu",
            Self::Dropout => "dropout (fixed mask)",
            Self::LayerNorm => "layernorm",
            Self::BatchNorm => "batchnorm (training)",
            Self::BatchNormEval => "batchnorm (evaluation)",
            Self::Conv2d => "conv2d (s=2, p=1, d=2)",
            Self::MaxPool => "maxpool 2×2",
            Self::AvgPool => "avgpool 3×3, stride 1",
            Self::Attention => "attention (2 heads, causal)",
            Self::Embedding => "embedding",
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
        let constants: Vec<Tensor<T>> = extra
            .constants
            .iter()
            .map(|t| Tensor::from_f64(&t.data, &t.shape))
            .collect();
        let labels = extra.labels.clone();
        let build = move |g: &mut Graph<T>, v: &[Var]| -> Var {
            self.build(g, v, (&weights, &constants), &labels)
        };
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
        let constants: Vec<Tensor<f32>> = extra.constants.iter().map(round).collect();
        let labels = extra.labels.clone();
        let build = move |g: &mut Graph<f32>, v: &[Var]| -> Var {
            let (outputs, grads) = (rounder.clone(), rounder.clone());
            g.set_output_hook(Some(Arc::new(move |d: &mut [f32]| outputs.round_slice(d))));
            g.set_grad_hook(Some(Arc::new(move |_: Var, d: &mut [f32]| {
                grads.round_slice(d);
            })));
            self.build(g, v, (&weights, &constants), &labels)
        };
        let mut report = gradcheck(self.name(), &build, &inputs, EMULATED_STEP, bug);
        report.precision = name;
        Ok(report)
    }

    fn build<T: Real>(
        self,
        g: &mut Graph<T>,
        v: &[Var],
        (weights, constants): (&Tensor<T>, &[Tensor<T>]),
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
            Self::Gelu => {
                let y = g.gelu(v[0]);
                weighted_sum(g, y)
            }
            Self::Dropout => {
                let y = g.dropout(v[0], constants[0].clone());
                weighted_sum(g, y)
            }
            Self::LayerNorm => {
                let y = g.layer_norm(v[0], v[1], v[2]);
                weighted_sum(g, y)
            }
            Self::BatchNorm => {
                let (y, _, _) = g.batch_norm_train(v[0], v[1], v[2], BN_CHANNELS);
                weighted_sum(g, y)
            }
            Self::BatchNormEval => {
                let stats = (constants[0].data.as_slice(), constants[1].data.as_slice());
                let y = g.batch_norm_eval(v[0], v[1], v[2], BN_CHANNELS, stats);
                weighted_sum(g, y)
            }
            Self::Conv2d => {
                let y = g.conv2d(v[0], v[1], Some(v[2]), CONV);
                weighted_sum(g, y)
            }
            Self::MaxPool => {
                let y = g.max_pool(v[0], MAX_POOL);
                weighted_sum(g, y)
            }
            Self::AvgPool => {
                let y = g.avg_pool(v[0], AVG_POOL);
                weighted_sum(g, y)
            }
            Self::Attention => {
                let a = g.attention(v[0], v[1], v[2], 2, true);
                weighted_sum(g, a.output)
            }
            Self::Embedding => {
                let y = g.embedding(v[0], labels);
                weighted_sum(g, y)
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
            constants: Vec::new(),
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
            Self::Gelu => named(vec![("x", uniform(&[4, 5], -3.0, 3.0))]),
            Self::Dropout => {
                extra.constants = vec![dropout_mask(&[4, 5], 0.3, seed)];
                named(vec![("x", uniform(&[4, 5], -2.0, 2.0))])
            }
            Self::LayerNorm => {
                extra.weights = uniform(&[4, 6], -1.0, 1.0);
                named(vec![
                    ("x", uniform(&[4, 6], -2.0, 2.0)),
                    ("γ", uniform(&[6], 0.5, 1.5)),
                    ("β", uniform(&[6], -0.5, 0.5)),
                ])
            }
            Self::BatchNorm | Self::BatchNormEval => {
                // 3 images of 2 channels of 2 × 2 pixels.
                extra.weights = uniform(&[3, 8], -1.0, 1.0);
                extra.constants = vec![
                    uniform(&[BN_CHANNELS], -0.5, 0.5),
                    uniform(&[BN_CHANNELS], 0.5, 2.0),
                ];
                named(vec![
                    ("x", uniform(&[3, 8], -2.0, 2.0)),
                    ("γ", uniform(&[BN_CHANNELS], 0.5, 1.5)),
                    ("β", uniform(&[BN_CHANNELS], -0.5, 0.5)),
                ])
            }
            Self::Conv2d => {
                extra.weights = uniform(&[2, CONV.output_len()], -1.0, 1.0);
                named(vec![
                    ("x", uniform(&[2, CONV.input_len()], -1.0, 1.0)),
                    ("W", uniform(&[CONV.out_channels, CONV.patch()], -0.5, 0.5)),
                    ("b", uniform(&[CONV.out_channels], -0.5, 0.5)),
                ])
            }
            Self::MaxPool => {
                // Distinct values 0.05 apart, shuffled: no window holds a tie
                // within a finite-difference step of its maximum.
                let n = 2 * MAX_POOL.input_len();
                let mut values: Vec<f64> = (0..n).map(|i| i as f64 * 0.05 - 1.5).collect();
                for i in (1..n).rev() {
                    let j = (uniform(&[1], 0.0, 1.0).data[0] * (i + 1) as f64) as usize;
                    values.swap(i, j.min(i));
                }
                extra.weights = uniform(&[2, MAX_POOL.output_len()], -1.0, 1.0);
                named(vec![("x", Tensor::new(values, &[2, MAX_POOL.input_len()]))])
            }
            Self::AvgPool => {
                extra.weights = uniform(&[2, AVG_POOL.output_len()], -1.0, 1.0);
                named(vec![("x", uniform(&[2, AVG_POOL.input_len()], -1.0, 1.0))])
            }
            Self::Attention => {
                extra.weights = uniform(&[4, 6], -1.0, 1.0);
                named(vec![
                    ("q", uniform(&[4, 6], -1.0, 1.0)),
                    ("k", uniform(&[4, 6], -1.0, 1.0)),
                    ("v", uniform(&[4, 6], -1.0, 1.0)),
                ])
            }
            Self::Embedding => {
                // Id 1 twice: its row collects both gradients.
                extra.labels = vec![1, 0, 4, 1];
                extra.weights = uniform(&[4, 3], -1.0, 1.0);
                named(vec![("table", uniform(&[5, 3], -1.0, 1.0))])
            }
        };
        (inputs, extra)
    }
}

/// The BatchNorm checks' channels.
const BN_CHANNELS: usize = 2;

/// The convolution check: 2 channels of 6 × 5 to 3, 3 × 3 taps 2 apart,
/// stride 2, padding 1 (2 × 2 outputs).
const CONV: Conv2d = Conv2d {
    in_channels: 2,
    out_channels: 3,
    height: 6,
    width: 5,
    kernel: (3, 3),
    stride: 2,
    padding: 1,
    dilation: 2,
};

const MAX_POOL: Pool2d = Pool2d {
    channels: 2,
    height: 4,
    width: 4,
    kernel: 2,
    stride: 2,
};

const AVG_POOL: Pool2d = Pool2d {
    channels: 2,
    height: 4,
    width: 4,
    kernel: 3,
    stride: 1,
};

struct Extra {
    weights: Tensor<f64>,
    labels: Vec<usize>,
    /// Fixed tensors a check needs besides: a dropout mask, running statistics.
    constants: Vec<Tensor<f64>>,
}
