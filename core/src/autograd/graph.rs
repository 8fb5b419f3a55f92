//! The reverse-mode tape. Each op computes its value when it is recorded;
//! `backward` walks the graph in reverse topological order and applies each
//! op's local derivative, accumulating into its inputs' gradients.

use std::borrow::Cow;

mod backward;
mod backward_layers;
mod layers;

pub use layers::{Attention, dropout_mask, mean_and_variance};

use super::op::{GradHook, Node, Op, OutputHook, PlantedBug, Var, softmax_rows};
use super::pointwise;
use super::stored::{Half, Stored};
use super::tensor::{Real, Tensor, matmul};

/// How two operands of an elementwise op line up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Broadcast {
    Same,
    /// `b` is one row (`[n]` or `[1, n]`) repeated over the rows of `a`.
    Row,
    /// `b` is a single value.
    Scalar,
}

fn broadcast(a: &[usize], b: &[usize], op: &str) -> Broadcast {
    let b_numel: usize = b.iter().product();
    if a == b {
        Broadcast::Same
    } else if b_numel == 1 {
        Broadcast::Scalar
    } else if a.len() == 2 && (b == [a[1]] || b == [1, a[1]]) {
        Broadcast::Row
    } else {
        panic!(
            "{op}: shapes {a:?} and {b:?} do not broadcast (b must match a, be one row of it, or be a scalar)"
        )
    }
}

/// The graph of one computation.
#[derive(Clone)]
pub struct Graph<T: Real> {
    /// Tells graphs apart in an allocation trace (see [`Graph::serial`]).
    serial: u64,
    nodes: Vec<Node<T>>,
    output_hook: Option<OutputHook<T>>,
    grad_hook: Option<GradHook<T>>,
    planted_bug: Option<PlantedBug>,
    /// Backward drops each inner node's gradient once it has been passed on
    /// (only leaves keep theirs), as frameworks do unless asked to retain them.
    free_inner_grads: bool,
    /// The format values and gradients are packed in when they are exactly
    /// in it (a reduced-precision policy's rounded values).
    pack: Option<Half>,
}

/// What a buffer the graph holds is (see [`Graph::buffers`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffer {
    /// A leaf that wants a gradient (a parameter): its value.
    Parameter,
    /// A leaf without a gradient (the data).
    Input,
    /// An op's output, kept for backward (and what a layer keeps besides:
    /// a dropout mask, a norm's x̂ and 1/σ).
    Saved,
    /// Softmax-cross-entropy's probabilities, kept for backward unrounded.
    SavedProbabilities,
    /// Indices, `usize` each: softmax-cross-entropy's labels, a max-pool's
    /// argmax, an embedding's ids.
    Labels,
    /// A parameter's accumulated gradient.
    ParameterGrad,
    /// An inner node's (or an input's) accumulated gradient.
    InnerGrad,
}

impl<T: Real> Default for Graph<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The serial number of the next graph made.
static NEXT_SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl<T: Real> Graph<T> {
    pub fn new() -> Self {
        Self {
            serial: NEXT_SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            nodes: Vec::new(),
            output_hook: None,
            grad_hook: None,
            planted_bug: None,
            free_inner_grads: false,
            pack: None,
        }
    }

    /// A number no other graph made by this process has: it keys the
    /// graph's buffers in an allocation trace.
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// Keeps every value and gradient that is exactly in `half` packed in
    /// it, two bytes an element (see [`Stored`]); reads decode them.
    pub fn set_packing(&mut self, half: Option<Half>) {
        self.pack = half;
    }

    /// Whether backward drops inner nodes' gradients once passed on (see
    /// [`Buffer::InnerGrad`]); leaves always keep theirs.
    pub fn set_free_inner_grads(&mut self, free: bool) {
        self.free_inner_grads = free;
    }

    /// Every buffer the graph holds, with its node, element count and
    /// whether it is packed: `f(node, kind, elements, packed)`. Values are
    /// `size_of::<T>()` bytes each, or 2 packed; labels `size_of::<usize>()`.
    /// This is what byte accounting walks: nodes are the graph's only storage.
    pub fn buffers(&self, mut f: impl FnMut(Var, Buffer, usize, bool)) {
        for (i, node) in self.nodes.iter().enumerate() {
            let v = Var(i);
            let (value, grad) = match &node.op {
                Op::Leaf {
                    requires_grad: true,
                } => (Buffer::Parameter, Buffer::ParameterGrad),
                Op::Leaf {
                    requires_grad: false,
                } => (Buffer::Input, Buffer::InnerGrad),
                Op::SoftmaxCrossEntropy { labels, probs, .. } => {
                    f(v, Buffer::SavedProbabilities, probs.numel(), false);
                    f(v, Buffer::Labels, labels.len(), false);
                    (Buffer::Saved, Buffer::InnerGrad)
                }
                // What the layers keep for backward besides their outputs.
                Op::Dropout { mask, .. } | Op::FakeQuantise { inside: mask, .. } => {
                    f(v, Buffer::Saved, mask.numel(), false);
                    (Buffer::Saved, Buffer::InnerGrad)
                }
                Op::LayerNorm { xhat, inv_std, .. } | Op::BatchNorm { xhat, inv_std, .. } => {
                    f(v, Buffer::Saved, xhat.numel() + inv_std.len(), false);
                    (Buffer::Saved, Buffer::InnerGrad)
                }
                Op::MaxPool {
                    argmax: indices, ..
                }
                | Op::Embedding { ids: indices, .. } => {
                    f(v, Buffer::Labels, indices.len(), false);
                    (Buffer::Saved, Buffer::InnerGrad)
                }
                _ => (Buffer::Saved, Buffer::InnerGrad),
            };
            f(v, value, node.value.numel(), node.value.is_packed());
            if let Some(g) = &node.grad {
                f(v, grad, g.numel(), g.is_packed());
            }
        }
    }

    /// Every gradient contribution flowing backward passes through `hook`,
    /// with the node it flows to (precision emulation of the backward pass).
    pub fn set_grad_hook(&mut self, hook: Option<GradHook<T>>) {
        self.grad_hook = hook;
    }

    /// Every op output passes through `hook` (see [`OutputHook`]).
    pub fn set_output_hook(&mut self, hook: Option<OutputHook<T>>) {
        self.output_hook = hook;
    }

    /// Makes one backward rule wrong, on purpose (for gradient-check demos).
    pub fn plant_bug(&mut self, bug: Option<PlantedBug>) {
        self.planted_bug = bug;
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph computes plain values: no hook, no planted bug,
    /// nothing packed (what a capture can replay).
    pub fn is_plain(&self) -> bool {
        self.output_hook.is_none()
            && self.grad_hook.is_none()
            && self.planted_bug.is_none()
            && self.pack.is_none()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn node(&self, v: Var) -> &Node<T> {
        &self.nodes[v.0]
    }

    /// A node's value: borrowed, or decoded when packed.
    pub fn value(&self, v: Var) -> Cow<'_, Tensor<T>> {
        self.nodes[v.0].value.get()
    }

    /// A node's shape (without decoding its value).
    pub fn shape(&self, v: Var) -> &[usize] {
        self.nodes[v.0].value.shape()
    }

    pub fn grad(&self, v: Var) -> Option<Cow<'_, Tensor<T>>> {
        self.nodes[v.0].grad()
    }

    /// The gradients of `vars`, zeros where none reached a node: what an
    /// optimizer step takes.
    pub fn grads_or_zeros(&self, vars: &[Var]) -> Vec<Tensor<T>> {
        vars.iter()
            .map(|v| {
                self.grad(*v)
                    .map_or_else(|| Tensor::zeros(self.shape(*v)), Cow::into_owned)
            })
            .collect()
    }

    /// Moves a node's value out (leaving an empty tensor): for taking
    /// parameters back after a step without copying them.
    pub fn take_value(&mut self, v: Var) -> Tensor<T> {
        std::mem::take(&mut self.nodes[v.0].value).into_tensor()
    }

    /// Moves a node's value out as it is kept (packed or not).
    pub fn take_stored(&mut self, v: Var) -> Stored<T> {
        std::mem::take(&mut self.nodes[v.0].value)
    }

    /// Moves a node's accumulated gradient out.
    pub fn take_grad(&mut self, v: Var) -> Option<Tensor<T>> {
        self.nodes[v.0].grad.take().map(Stored::into_tensor)
    }

    /// Moves a node's accumulated gradient out as it is kept.
    pub fn take_stored_grad(&mut self, v: Var) -> Option<Stored<T>> {
        self.nodes[v.0].grad.take()
    }

    pub fn set_label(&mut self, v: Var, label: &str) {
        label.clone_into(&mut self.nodes[v.0].label);
    }

    /// A leaf that gradients flow to (a parameter or an input under test).
    pub fn param(&mut self, value: Tensor<T>) -> Var {
        self.push(
            value,
            Op::Leaf {
                requires_grad: true,
            },
        )
    }

    /// [`Self::param`] from a value as kept elsewhere (packed stays packed).
    pub fn param_stored(&mut self, value: Stored<T>) -> Var {
        self.push_stored(
            value,
            Op::Leaf {
                requires_grad: true,
            },
        )
    }

    /// A leaf without a gradient (data).
    pub fn input(&mut self, value: Tensor<T>) -> Var {
        self.push(
            value,
            Op::Leaf {
                requires_grad: false,
            },
        )
    }

    fn push(&mut self, mut value: Tensor<T>, op: Op<T>) -> Var {
        if !matches!(op, Op::Leaf { .. })
            && let Some(hook) = &self.output_hook
        {
            hook(&mut value.data);
        }
        self.push_stored(Stored::Whole(value), op)
    }

    /// Records a value already kept (leaves only: no output hook).
    fn push_stored(&mut self, value: Stored<T>, op: Op<T>) -> Var {
        let value = match (value, self.pack) {
            (Stored::Whole(t), Some(half)) => Stored::keep(t, Some(half)),
            (kept, _) => kept,
        };
        self.nodes.push(Node {
            value,
            grad: None,
            op,
            label: String::new(),
        });
        Var(self.nodes.len() - 1)
    }

    fn elementwise(&mut self, a: Var, b: Var, name: &str, f: impl Fn(T, T) -> T) -> Tensor<T> {
        let (av, bv) = (self.value(a), self.value(b));
        let kind = broadcast(&av.shape, &bv.shape, name);
        let (_, cols) = av.rows_cols();
        let data = av
            .data
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let y = match kind {
                    Broadcast::Same => bv.data[i],
                    Broadcast::Row => bv.data[i % cols],
                    Broadcast::Scalar => bv.data[0],
                };
                f(*x, y)
            })
            .collect();
        Tensor {
            data,
            shape: av.shape.clone(),
        }
    }

    /// `a + b`, with `b` broadcast over rows (a bias) or as a scalar.
    pub fn add(&mut self, a: Var, b: Var) -> Var {
        let value = self.elementwise(a, b, "add", |x, y| x + y);
        self.push(value, Op::Add(a, b))
    }

    pub fn sub(&mut self, a: Var, b: Var) -> Var {
        let value = self.elementwise(a, b, "sub", |x, y| x - y);
        self.push(value, Op::Sub(a, b))
    }

    /// Elementwise `a ⊙ b` (same broadcasting as [`Self::add`]).
    pub fn mul(&mut self, a: Var, b: Var) -> Var {
        let value = self.elementwise(a, b, "mul", |x, y| x * y);
        self.push(value, Op::Mul(a, b))
    }

    /// Matrix product `a · b` (`[m, k] · [k, n] → [m, n]`).
    pub fn matmul(&mut self, a: Var, b: Var) -> Var {
        let value = matmul(&self.value(a), false, &self.value(b), false);
        self.push(value, Op::MatMul(a, b))
    }

    fn unary(&mut self, a: Var, f: impl Fn(T) -> T, op: Op<T>) -> Var {
        let value = self.value(a).map(f);
        self.push(value, op)
    }

    pub fn relu(&mut self, a: Var) -> Var {
        self.unary(a, pointwise::relu, Op::Relu(a))
    }

    pub fn tanh(&mut self, a: Var) -> Var {
        self.unary(a, T::tanh, Op::Tanh(a))
    }

    pub fn sigmoid(&mut self, a: Var) -> Var {
        self.unary(a, pointwise::sigmoid, Op::Sigmoid(a))
    }

    pub fn exp(&mut self, a: Var) -> Var {
        self.unary(a, T::exp, Op::Exp(a))
    }

    pub fn log(&mut self, a: Var) -> Var {
        self.unary(a, T::ln, Op::Log(a))
    }

    /// `s · a` for a constant `s` (loss scaling uses this).
    pub fn scale(&mut self, a: Var, s: T) -> Var {
        self.unary(a, |x| x * s, Op::Scale(a, s))
    }

    /// The sum of every element (a scalar).
    pub fn sum(&mut self, a: Var) -> Var {
        let value = Tensor::scalar(self.value(a).sum());
        self.push(value, Op::Sum(a))
    }

    pub fn mean(&mut self, a: Var) -> Var {
        let v = self.value(a);
        let value = Tensor::scalar(v.sum() / T::from_f64(v.numel() as f64));
        self.push(value, Op::Mean(a))
    }

    /// Row-wise softmax, numerically stable: the row max is subtracted first.
    pub fn softmax(&mut self, a: Var) -> Var {
        let value = softmax_rows(&self.value(a));
        self.push(value, Op::Softmax(a))
    }

    /// Row-wise log-softmax: `z − max − log Σ exp(z − max)`.
    pub fn log_softmax(&mut self, a: Var) -> Var {
        let v = self.value(a);
        let (rows, cols) = v.rows_cols();
        let mut out = v.data.clone();
        for r in 0..rows {
            let row = &mut out[r * cols..(r + 1) * cols];
            let max = row.iter().fold(row[0], |m, x| m.max(*x));
            let log_sum = row.iter().fold(T::ZERO, |s, x| s + (*x - max).exp()).ln();
            for x in row.iter_mut() {
                *x = *x - max - log_sum;
            }
        }
        let value = Tensor {
            data: out,
            shape: v.shape.clone(),
        };
        self.push(value, Op::LogSoftmax(a))
    }

    /// Mean softmax cross-entropy of `logits` (`[batch, classes]`) against
    /// class indices; stable (row max subtracted). Its gradient is `(p − y)/batch`.
    ///
    /// # Panics
    /// If the labels do not match the rows or a label is out of range.
    pub fn softmax_cross_entropy(&mut self, logits: Var, labels: &[usize]) -> Var {
        let z = self.value(logits);
        let (rows, cols) = z.rows_cols();
        assert_eq!(
            rows,
            labels.len(),
            "softmax_cross_entropy: {rows} rows but {} labels",
            labels.len()
        );
        assert!(
            labels.iter().all(|l| *l < cols),
            "softmax_cross_entropy: a label is ≥ {cols} classes"
        );
        let probs = softmax_rows(&z);
        let value = Tensor::scalar(pointwise::cross_entropy_rows(&z.data, cols, labels));
        self.push(
            value,
            Op::SoftmaxCrossEntropy {
                logits,
                labels: labels.to_vec(),
                probs,
            },
        )
    }

    /// Mean squared error `mean((a − b)²)`.
    pub fn mse(&mut self, a: Var, b: Var) -> Var {
        let (av, bv) = (self.value(a), self.value(b));
        assert_eq!(av.shape, bv.shape, "mse: shapes differ");
        let sum = av
            .data
            .iter()
            .zip(&bv.data)
            .fold(T::ZERO, |s, (x, y)| s + (*x - *y) * (*x - *y));
        let value = Tensor::scalar(sum / T::from_f64(av.numel() as f64));
        self.push(value, Op::Mse(a, b))
    }

    /// Clears every accumulated gradient.
    pub fn zero_grad(&mut self) {
        for node in &mut self.nodes {
            node.grad = None;
        }
    }

    /// The nodes `root` depends on, each after all of its inputs (depth-first).
    pub fn topological_order(&self, root: Var) -> Vec<Var> {
        let mut order = Vec::new();
        let mut state = vec![0u8; self.nodes.len()]; // 0 new, 1 open, 2 done
        let mut stack = vec![(root, false)];
        while let Some((v, expanded)) = stack.pop() {
            if expanded {
                state[v.0] = 2;
                order.push(v);
                continue;
            }
            if state[v.0] != 0 {
                continue;
            }
            state[v.0] = 1;
            stack.push((v, true));
            for input in self.nodes[v.0].op.inputs().into_iter().rev() {
                if state[input.0] == 0 {
                    stack.push((input, false));
                }
            }
        }
        order
    }

    /// Back-propagates from a scalar `loss` (seeded with 1) and adds every
    /// node's gradient to its `.grad`: calling it twice doubles the gradients,
    /// and a node used twice collects both contributions.
    pub fn backward(&mut self, loss: Var) {
        self.backward_steps(loss, usize::MAX);
    }

    /// [`Self::backward`], stopping after `steps` nodes of the reverse
    /// topological order (for stepping through it). Returns the nodes done, in order.
    pub fn backward_steps(&mut self, loss: Var, steps: usize) -> Vec<Var> {
        self.backward_stepped(loss, steps).done
    }

    /// [`Self::backward_steps`], also returning the gradient each node not
    /// yet done has received so far (from the consumers already done): what
    /// the step-by-step view shows while a sum is still being collected.
    pub fn backward_stepped(&mut self, loss: Var, steps: usize) -> Stepped<T> {
        let seed = Tensor::full(self.shape(loss), T::ONE);
        let (done, received) = self.run_backward(loss, seed, steps, &mut |_, _| {});
        Stepped { done, received }
    }

    /// Back-propagates `seed` (the gradient of some loss with respect to
    /// `root`, shaped like it) — how a checkpointed segment continues the
    /// backward pass of the segment after it. After each node, `observe`
    /// sees the graph and the elements of gradient in flight (not yet
    /// added to a node), for byte accounting.
    pub fn backward_from(
        &mut self,
        root: Var,
        seed: Tensor<T>,
        observe: &mut dyn FnMut(&Self, usize),
    ) -> Vec<Var> {
        assert_eq!(
            seed.shape,
            self.shape(root),
            "backward_from: the seed's shape is not the root's"
        );
        self.run_backward(root, seed, usize::MAX, observe).0
    }

    fn run_backward(
        &mut self,
        root: Var,
        seed: Tensor<T>,
        steps: usize,
        observe: &mut dyn FnMut(&Self, usize),
    ) -> (Vec<Var>, Vec<Option<Tensor<T>>>) {
        let order = self.topological_order(root);
        // Which nodes lead to a leaf that wants a gradient.
        let mut needs = vec![false; self.nodes.len()];
        for v in &order {
            needs[v.0] = match &self.nodes[v.0].op {
                Op::Leaf { requires_grad } => *requires_grad,
                op => op.inputs().iter().any(|i| needs[i.0]),
            };
        }
        let mut pending: Vec<Option<Tensor<T>>> = vec![None; self.nodes.len()];
        // Elements of gradient in flight: the pending ones and the one
        // being passed on.
        let mut in_flight = seed.numel();
        pending[root.0] = Some(seed);
        let mut done = Vec::new();
        for v in order.iter().rev().take(steps) {
            let Some(g) = pending[v.0].take() else {
                continue;
            };
            if needs[v.0] {
                self.propagate(*v, &g, &mut pending, &needs, &mut in_flight);
            }
            observe(self, in_flight);
            in_flight -= g.numel();
            let keep = !self.free_inner_grads || matches!(self.nodes[v.0].op, Op::Leaf { .. });
            if keep {
                let sum = match self.nodes[v.0].grad.take() {
                    Some(acc) => {
                        let mut acc = acc.into_tensor();
                        acc.add_assign(&g);
                        acc
                    }
                    None => g,
                };
                self.nodes[v.0].grad = Some(Stored::keep(sum, self.pack));
            }
            done.push(*v);
        }
        (done, pending)
    }
}

/// Where a stepped backward pass stopped: the nodes done, in order, and per
/// node (indexed by [`Var`]) the gradient received but not yet passed on.
#[derive(Clone, Debug)]
pub struct Stepped<T> {
    pub done: Vec<Var>,
    pub received: Vec<Option<Tensor<T>>>,
}
