//! The kernels of a captured step: what each computes, which nodes it
//! reads, its name as the lesson lists it, and whether backward runs it.
//! The executor ([`super::replay`]) runs them; the capture
//! ([`super::capture`]) records them.

use serde::Serialize;

use crate::autograd::{Conv2d, Pool2d};

/// One kernel of the captured step. Inputs are node indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Kernel {
    /// The caller's input `slot` (a parameter or the data), copied in.
    Input {
        slot: usize,
    },
    /// `a·b`, either side read transposed.
    MatMul {
        a: usize,
        b: usize,
        a_t: bool,
        b_t: bool,
    },
    /// `a + b`, `b` of `a`'s shape or one row of it (a bias).
    Add {
        a: usize,
        b: usize,
    },
    Relu(usize),
    Tanh(usize),
    Sigmoid(usize),
    /// The gradient `g` through ReLU, from its output `y`.
    ReluGrad {
        g: usize,
        y: usize,
    },
    /// The gradient `g` through tanh, from its output `y`.
    TanhGrad {
        g: usize,
        y: usize,
    },
    /// The gradient `g` through the sigmoid, from its output `y`.
    SigmoidGrad {
        g: usize,
        y: usize,
    },
    /// The sum over rows (a bias's gradient).
    SumRows(usize),
    /// Row-wise softmax of the logits (kept for backward).
    Softmax(usize),
    /// Mean cross-entropy of the logits against the labels.
    CrossEntropy(usize),
    /// `(p − one-hot)/rows` from the probabilities.
    CrossEntropyGrad(usize),
    /// `a + b` of one shape: a second gradient contribution.
    Accumulate {
        a: usize,
        b: usize,
    },
    /// A convolution of images `x` by filters `w` (im2col + GEMM).
    Conv2d {
        x: usize,
        w: usize,
        geometry: Conv2d,
    },
    /// The convolution's gradient `g` back onto its images, through `w`.
    Conv2dGradInput {
        g: usize,
        w: usize,
        geometry: Conv2d,
    },
    /// The convolution's gradient `g` onto its filters, from the images `x`.
    Conv2dGradWeight {
        g: usize,
        x: usize,
        geometry: Conv2d,
    },
    /// Each channel's batch mean and 1/σ (BatchNorm in training): `[2, C]`.
    ChannelStats {
        x: usize,
        channels: usize,
    },
    /// x̂ = (x − mean)/σ per channel, from `stats`.
    ChannelNormalize {
        x: usize,
        stats: usize,
        channels: usize,
    },
    /// `γ_c·x̂ + β_c`.
    ChannelAffine {
        x: usize,
        gamma: usize,
        beta: usize,
        channels: usize,
    },
    /// BatchNorm's input gradient from `g`, x̂, γ and the statistics.
    ChannelNormalizeGrad {
        g: usize,
        xhat: usize,
        gamma: usize,
        stats: usize,
        channels: usize,
    },
    /// Each channel's sum of `g` (β's gradient).
    ChannelSum {
        g: usize,
        channels: usize,
    },
    /// Each channel's Σ g·x̂ (γ's gradient).
    ChannelDot {
        g: usize,
        xhat: usize,
        channels: usize,
    },
    /// The maximum of each window.
    MaxPool {
        x: usize,
        geometry: Pool2d,
    },
    /// The gradient `g` to each window's largest input of `x` (found again
    /// from `x`: the arena keeps no indices).
    MaxPoolGrad {
        g: usize,
        x: usize,
        geometry: Pool2d,
    },
}

impl Kernel {
    pub fn inputs(&self) -> Vec<usize> {
        match *self {
            Self::Input { .. } => Vec::new(),
            Self::MatMul { a, b, .. } | Self::Add { a, b } | Self::Accumulate { a, b } => {
                vec![a, b]
            }
            Self::ReluGrad { g, y } | Self::TanhGrad { g, y } | Self::SigmoidGrad { g, y } => {
                vec![g, y]
            }
            Self::Relu(a)
            | Self::Tanh(a)
            | Self::Sigmoid(a)
            | Self::SumRows(a)
            | Self::Softmax(a)
            | Self::CrossEntropy(a)
            | Self::CrossEntropyGrad(a) => vec![a],
            Self::Conv2d { x: a, w: b, .. }
            | Self::Conv2dGradInput { g: a, w: b, .. }
            | Self::Conv2dGradWeight { g: a, x: b, .. }
            | Self::ChannelNormalize { x: a, stats: b, .. }
            | Self::ChannelDot { g: a, xhat: b, .. }
            | Self::MaxPoolGrad { g: a, x: b, .. } => vec![a, b],
            Self::ChannelStats { x: a, .. }
            | Self::ChannelSum { g: a, .. }
            | Self::MaxPool { x: a, .. } => vec![a],
            Self::ChannelAffine { x, gamma, beta, .. } => vec![x, gamma, beta],
            Self::ChannelNormalizeGrad {
                g,
                xhat,
                gamma,
                stats,
                ..
            } => vec![g, xhat, gamma, stats],
        }
    }

    /// Its name as the lesson lists it.
    pub fn key(&self) -> &'static str {
        match self {
            Self::Input { .. } => "copy_in",
            Self::MatMul { .. } => "matmul",
            Self::Add { .. } => "add",
            Self::Relu(_) => "relu",
            Self::Tanh(_) => "tanh",
            Self::Sigmoid(_) => "sigmoid",
            Self::ReluGrad { .. } => "relu_grad",
            Self::TanhGrad { .. } => "tanh_grad",
            Self::SigmoidGrad { .. } => "sigmoid_grad",
            Self::SumRows(_) => "sum_rows",
            Self::Softmax(_) => "softmax",
            Self::CrossEntropy(_) => "cross_entropy",
            Self::CrossEntropyGrad(_) => "cross_entropy_grad",
            Self::Accumulate { .. } => "accumulate",
            Self::Conv2d { .. } => "conv2d",
            Self::Conv2dGradInput { .. } => "conv2d_grad_input",
            Self::Conv2dGradWeight { .. } => "conv2d_grad_weight",
            Self::ChannelStats { .. } => "bn_stats",
            Self::ChannelNormalize { .. } => "bn_normalize",
            Self::ChannelAffine { .. } => "bn_affine",
            Self::ChannelNormalizeGrad { .. } => "bn_grad_input",
            Self::ChannelSum { .. } => "channel_sum",
            Self::ChannelDot { .. } => "channel_dot",
            Self::MaxPool { .. } => "maxpool",
            Self::MaxPoolGrad { .. } => "maxpool_grad",
        }
    }

    /// Whether it is part of the backward pass.
    pub fn is_backward(&self) -> bool {
        matches!(
            self,
            Self::ReluGrad { .. }
                | Self::TanhGrad { .. }
                | Self::SigmoidGrad { .. }
                | Self::SumRows(_)
                | Self::CrossEntropyGrad(_)
                | Self::Accumulate { .. }
                | Self::Conv2dGradInput { .. }
                | Self::Conv2dGradWeight { .. }
                | Self::ChannelNormalizeGrad { .. }
                | Self::ChannelSum { .. }
                | Self::ChannelDot { .. }
                | Self::MaxPoolGrad { .. }
        ) || matches!(self, Self::MatMul { a_t, b_t, .. } if *a_t || *b_t)
    }
}
