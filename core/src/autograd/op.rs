//! What the tape records: node handles, the ops with everything their
//! backward needs, the hooks a precision policy installs, and the planted
//! bugs that show gradient checks at work.

use std::sync::Arc;

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
}

impl PlantedBug {
    pub const ALL: [Self; 3] = [
        Self::BiasNotSummedOverBatch,
        Self::SoftmaxMissingCoupling,
        Self::CrossEntropyNotAveraged,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            Self::BiasNotSummedOverBatch => "bias gradient not summed over the batch",
            Self::SoftmaxMissingCoupling => "softmax backward without the −Σ p·g coupling term",
            Self::CrossEntropyNotAveraged => "cross-entropy gradient not divided by the batch size",
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
    let (rows, cols) = z.rows_cols();
    let mut out = z.data.clone();
    for r in 0..rows {
        let row = &mut out[r * cols..(r + 1) * cols];
        let max = row.iter().fold(row[0], |m, x| m.max(*x));
        let mut sum = T::ZERO;
        for x in row.iter_mut() {
            *x = (*x - max).exp();
            sum += *x;
        }
        for x in row.iter_mut() {
            *x = *x / sum;
        }
    }
    Tensor {
        data: out,
        shape: z.shape.clone(),
    }
}
