//! What the tape records: node handles, the ops with everything their
//! backward needs, the hooks a precision policy installs, and the planted
//! bugs that show gradient checks at work.

use std::sync::Arc;

use super::conv::{Conv2d, Pool2d};
use super::stored::Stored;
use super::tensor::{Real, Tensor};

/// A handle to a node of a [`Graph`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub usize);

/// A deliberately wrong backward rule, for showing that gradient checks catch bugs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum PlantedBug {
    /// A broadcast bias takes the gradient of the first row instead of the
    /// sum over the batch.
    BiasNotSummedOverBatch,
    /// Softmax backward drops the coupling term: `p ⊙ g` instead of `p ⊙ (g − Σ p g)`.
    SoftmaxMissingCoupling,
    /// Softmax-cross-entropy's gradient is not divided by the batch size.
    CrossEntropyNotAveraged,
    /// LayerNorm backward without the −mean(ĝ) term: as if the row's mean
    /// did not depend on its inputs.
    LayerNormMissingMean,
    /// BatchNorm backward in training treating the batch's mean and
    /// variance as constants (the evaluation-mode derivative).
    BatchNormStatsAsConstants,
    /// Max pooling passes the gradient to every value of the window, not
    /// only to the one that was the maximum.
    MaxPoolToEveryInput,
}

impl PlantedBug {
    /// The MLP's bugs (the autograd lesson's).
    pub const ALL: [Self; 3] = [
        Self::BiasNotSummedOverBatch,
        Self::SoftmaxMissingCoupling,
        Self::CrossEntropyNotAveraged,
    ];

    /// The layers' bugs.
    pub const LAYERS: [Self; 3] = [
        Self::LayerNormMissingMean,
        Self::BatchNormStatsAsConstants,
        Self::MaxPoolToEveryInput,
    ];

    /// Every bug.
    pub const EVERY: [Self; 6] = [
        Self::BiasNotSummedOverBatch,
        Self::SoftmaxMissingCoupling,
        Self::CrossEntropyNotAveraged,
        Self::LayerNormMissingMean,
        Self::BatchNormStatsAsConstants,
        Self::MaxPoolToEveryInput,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            Self::BiasNotSummedOverBatch => "bias gradient not summed over the batch",
            Self::SoftmaxMissingCoupling => "softmax backward without the −Σ p·g coupling term",
            Self::CrossEntropyNotAveraged => "cross-entropy gradient not divided by the batch size",
            Self::LayerNormMissingMean => "LayerNorm backward without its −mean(ĝ) term",
            Self::BatchNormStatsAsConstants => {
                "BatchNorm backward treating the batch statistics as constants"
            }
            Self::MaxPoolToEveryInput => "max-pool gradient sent to every value of the window",
        }
    }
}

/// What produced a node, with everything its backward needs.
#[derive(Clone, Debug)]
pub enum Op<T> {
    Leaf {
        requires_grad: bool,
    },
    Add(Var, Var),
    Sub(Var, Var),
    Mul(Var, Var),
    MatMul(Var, Var),
    Relu(Var),
    Tanh(Var),
    Sigmoid(Var),
    Exp(Var),
    Log(Var),
    Scale(Var, T),
    Sum(Var),
    Mean(Var),
    Softmax(Var),
    LogSoftmax(Var),
    /// Mean over rows of −log softmax(logits)[label]; keeps the probabilities.
    SoftmaxCrossEntropy {
        logits: Var,
        labels: Vec<usize>,
        probs: Tensor<T>,
    },
    Mse(Var, Var),
    /// GELU, tanh form ([`crate::kernels::gelu`]).
    Gelu(Var),
    /// `x ⊙ mask`, the mask 0 or 1/(1 − p) per element, drawn when recorded.
    Dropout {
        input: Var,
        mask: Tensor<T>,
    },
    /// Fake quantisation (quantise, then dequantise) with the
    /// straight-through estimator: the value is the caller's round trip of
    /// the input; backward passes the gradient where `inside` is 1 (the
    /// input within the clip range) and stops it where the input was
    /// clipped (`inside` 0) — d(round(x/s)·s)/dx taken as 1, not the 0 it is
    /// almost everywhere.
    FakeQuantise {
        input: Var,
        inside: Tensor<T>,
    },
    /// Each row to mean 0 and variance 1 (biased, + ε), then `γ ⊙ x̂ + β`;
    /// keeps x̂ and 1/σ per row.
    LayerNorm {
        input: Var,
        gamma: Var,
        beta: Var,
        xhat: Tensor<T>,
        inv_std: Vec<T>,
    },
    /// Each of `channels` channels (a row is `channels` runs of equal
    /// length: NCHW's C·H·W, or features with H·W = 1) normalised over the
    /// batch and its pixels, then `γ_c·x̂ + β_c`. In training the statistics
    /// are the batch's (so they depend on it); in evaluation they are fixed
    /// running ones. Keeps x̂ and 1/σ per channel.
    BatchNorm {
        input: Var,
        gamma: Var,
        beta: Var,
        channels: usize,
        training: bool,
        xhat: Tensor<T>,
        inv_std: Vec<T>,
    },
    /// A convolution of `[N, C·H·W]` images by `[OC, C·KH·KW]` filters
    /// through im2col and a GEMM, plus a bias per output channel.
    Conv2d {
        input: Var,
        weight: Var,
        bias: Option<Var>,
        geometry: Conv2d,
    },
    /// The maximum of each window; keeps which input it was.
    MaxPool {
        input: Var,
        geometry: Pool2d,
        argmax: Vec<usize>,
    },
    AvgPool {
        input: Var,
        geometry: Pool2d,
    },
    /// A matrix transposed.
    Transpose(Var),
    /// A square matrix of scores with every entry above the diagonal set to
    /// −∞: a query attends to itself and earlier positions only.
    CausalMask(Var),
    /// Rows `ids` of a `[vocabulary, dim]` table.
    Embedding {
        table: Var,
        ids: Vec<usize>,
    },
    /// Columns `start .. start + width` of a matrix (one attention head's).
    Columns {
        input: Var,
        start: usize,
    },
    /// Matrices side by side (the heads' outputs).
    Concat(Vec<Var>),
}

impl<T> Op<T> {
    /// The op's name as the lesson shows it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Leaf { .. } => "leaf",
            Self::Add(..) => "add",
            Self::Sub(..) => "sub",
            Self::Mul(..) => "mul",
            Self::MatMul(..) => "matmul",
            Self::Relu(_) => "relu",
            Self::Tanh(_) => "tanh",
            Self::Sigmoid(_) => "sigmoid",
            Self::Exp(_) => "exp",
            Self::Log(_) => "log",
            Self::Scale(..) => "scale",
            Self::Sum(_) => "sum",
            Self::Mean(_) => "mean",
            Self::Softmax(_) => "softmax",
            Self::LogSoftmax(_) => "log_softmax",
            Self::SoftmaxCrossEntropy { .. } => "softmax_cross_entropy",
            Self::Mse(..) => "mse",
            Self::Gelu(_) => "gelu",
            Self::Dropout { .. } => "dropout",
            Self::FakeQuantise { .. } => "fake_quantise",
            Self::LayerNorm { .. } => "layernorm",
            Self::BatchNorm { .. } => "batchnorm",
            Self::Conv2d { .. } => "conv2d",
            Self::MaxPool { .. } => "maxpool",
            Self::AvgPool { .. } => "avgpool",
            Self::Transpose(_) => "transpose",
            Self::CausalMask(_) => "causal_mask",
            Self::Embedding { .. } => "embedding",
            Self::Columns { .. } => "columns",
            Self::Concat(_) => "concat",
        }
    }

    /// The nodes this op reads.
    pub fn inputs(&self) -> Vec<Var> {
        match self {
            Self::Leaf { .. } => Vec::new(),
            Self::Add(a, b)
            | Self::Sub(a, b)
            | Self::Mul(a, b)
            | Self::MatMul(a, b)
            | Self::Mse(a, b) => vec![*a, *b],
            Self::Relu(a)
            | Self::Tanh(a)
            | Self::Sigmoid(a)
            | Self::Exp(a)
            | Self::Log(a)
            | Self::Scale(a, _)
            | Self::Sum(a)
            | Self::Mean(a)
            | Self::Softmax(a)
            | Self::LogSoftmax(a) => vec![*a],
            Self::SoftmaxCrossEntropy { logits, .. } => vec![*logits],
            Self::Gelu(a) | Self::Transpose(a) | Self::CausalMask(a) => vec![*a],
            Self::Dropout { input, .. }
            | Self::FakeQuantise { input, .. }
            | Self::MaxPool { input, .. }
            | Self::AvgPool { input, .. }
            | Self::Columns { input, .. } => vec![*input],
            Self::LayerNorm {
                input, gamma, beta, ..
            }
            | Self::BatchNorm {
                input, gamma, beta, ..
            } => vec![*input, *gamma, *beta],
            Self::Conv2d {
                input,
                weight,
                bias,
                ..
            } => [*input, *weight].into_iter().chain(*bias).collect(),
            Self::Embedding { table, .. } => vec![*table],
            Self::Concat(parts) => parts.clone(),
        }
    }
}

/// One recorded value.
#[derive(Clone, Debug)]
pub struct Node<T> {
    pub(super) value: Stored<T>,
    /// Accumulated over `backward` calls until [`Graph::zero_grad`].
    pub(super) grad: Option<Stored<T>>,
    pub op: Op<T>,
    pub label: String,
}

impl<T: Real> Node<T> {
    /// The value (decoded if the graph packs it).
    pub fn value(&self) -> std::borrow::Cow<'_, Tensor<T>> {
        self.value.get()
    }

    /// The accumulated gradient (decoded if packed).
    pub fn grad(&self) -> Option<std::borrow::Cow<'_, Tensor<T>>> {
        self.grad.as_ref().map(Stored::get)
    }
}

/// A hook applied to every op's output as it is computed (e.g. rounding it
/// through an emulated fp16), so a precision policy can wrap the engine.
pub type OutputHook<T> = Arc<dyn Fn(&mut [T]) + Send + Sync>;

/// A hook applied to every gradient contribution in backward, given the node
/// it flows to.
pub type GradHook<T> = Arc<dyn Fn(Var, &mut [T]) + Send + Sync>;

/// Row-wise softmax, with the row max subtracted so `exp` cannot overflow.
pub fn softmax_rows<T: Real>(z: &Tensor<T>) -> Tensor<T> {
    let (_, cols) = z.rows_cols();
    let mut out = vec![T::ZERO; z.numel()];
    super::pointwise::softmax_rows_into(&z.data, cols, &mut out);
    Tensor {
        data: out,
        shape: z.shape.clone(),
    }
}
