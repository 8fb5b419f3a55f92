//! Capture: one eager training step of the engine, recorded into a static
//! graph — the forward ops the tape recorded and the backward ops its
//! `backward` ran, in the order it ran them (as AOTAutograd traces the
//! backward into the same graph that torch.compile hands to its back end).
//! The graph ([`Ir`]) is plain data: a node per kernel, its inputs by
//! index, and the inputs it expects with their shapes. Shapes are not
//! stored per node: [`Ir::shapes`] derives them from the inputs' shapes,
//! which is also how a capture with a symbolic batch ([`Guards`]) serves
//! every batch size. [`super::replay`] runs it.
//!
//! The captured ops are those the MLP and the CNN use (matmul, bias add,
//! ReLU, tanh, sigmoid, softmax cross-entropy; convolution, BatchNorm in
//! training — as its statistics, x̂ and the affine map, as PyTorch's
//! decompositions split it — and max pooling, whose backward finds each
//! window's winner again from the input); a step with any other op is refused
//! with the op's name (a "graph break", which torch.compile would answer
//! by splitting the graph and running that op eagerly).

use serde::Serialize;

pub use super::kernel::Kernel;
use crate::autograd::{Graph, Op, Var};

crate::catalog_error! {
    /// Why a step cannot be captured or a captured graph cannot run.
    pub enum CaptureError {
        /// An op the capture has no kernel for.
        GraphBreak { op: String } = "compile.graph_break",
        /// The step uses a hook, a planted bug or packed values, or a
        /// parameter that takes no gradient or gets none.
        NotPlain = "compile.not_plain",
        /// A label past the classes.
        Label { label: u64, classes: u64 } = "compile.label",
        /// The data's values are not whole rows.
        Rows { values: u64, rows: u64 } = "compile.rows",
        /// An input's shape is not one the capture accepts.
        Guard { input: String, expected: String, got: String } = "compile.guard",
        /// The inputs given are not the ones the capture takes.
        Inputs { expected: u64, got: u64 } = "compile.inputs",
        /// Two buffers live at once were planned into the same bytes: a
        /// planner bug, refused rather than run.
        Overlap = "compile.overlap",
        /// The overhead measurement's sizes out of range.
        Size { rows: u64, width: u64, max: u64 } = "compile.size",
        /// A branch guard failed: the batch's mean is above the threshold,
        /// the graph was captured on the path taken below it…
        BranchAbove { mean: String, threshold: String } = "compile.branch_above",
        /// …or below it, the graph captured on the path above.
        BranchBelow { mean: String, threshold: String } = "compile.branch_below",
        /// A model whose step has no captured kernels (the transformer).
        Model = "compile.capture_model",
        /// A fused group's kernel could not run (the device's words).
        GroupKernel { why: String } = "compile.group_kernel",
    }
}

/// What an input of the captured step is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Role {
    /// The `i`-th parameter (weight, bias per layer).
    Parameter(usize),
    /// The batch of data.
    Data,
}

/// What a replay is checked against before it runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Guards {
    /// Every input's shape when captured, in slot order.
    pub shapes: Vec<Vec<usize>>,
    /// Whether the batch (the data's first dimension and the label count)
    /// may be any size: a symbolic dimension, as torch.compile's dynamic
    /// shapes.
    pub symbolic_batch: bool,
    /// The outcome of a data-dependent branch the step took, when its
    /// model has one.
    pub branch: Option<Branch>,
}

/// A data-dependent branch, as captured: which side of `threshold` the
/// batch's mean was on. A replay is valid only for batches on that side.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Branch {
    pub threshold: f32,
    pub above: bool,
}

impl Branch {
    /// The statistic the branch tests: `x`'s mean, in f64.
    pub fn mean(x: &[f32]) -> f64 {
        x.iter().map(|v| f64::from(*v)).sum::<f64>() / x.len().max(1) as f64
    }

    /// Which way a batch of this `mean` goes.
    pub fn at(mean: f64, threshold: f32) -> Self {
        Self {
            threshold,
            above: mean > f64::from(threshold),
        }
    }

    /// Which way `x` goes, with its mean.
    pub fn of(x: &[f32], threshold: f32) -> (f64, Self) {
        let mean = Self::mean(x);
        (mean, Self::at(mean, threshold))
    }
}

/// A captured training step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ir {
    pub nodes: Vec<Kernel>,
    /// The role of each input slot.
    pub roles: Vec<Role>,
    pub guards: Guards,
    /// The node holding the loss.
    pub loss: usize,
    /// The node holding each parameter's gradient, in parameter order.
    pub grads: Vec<usize>,
}

impl Ir {
    /// Checks inputs of `shapes` against the guards: the first that fails.
    pub fn check(&self, shapes: &[&[usize]]) -> Result<(), CaptureError> {
        if shapes.len() != self.guards.shapes.len() {
            return Err(CaptureError::Inputs {
                expected: self.guards.shapes.len() as u64,
                got: shapes.len() as u64,
            });
        }
        for ((role, want), got) in self.roles.iter().zip(&self.guards.shapes).zip(shapes) {
            let batch_free = self.guards.symbolic_batch && *role == Role::Data && !want.is_empty();
            let ok = want.len() == got.len()
                && want
                    .iter()
                    .zip(got.iter())
                    .enumerate()
                    .all(|(d, (w, g))| w == g || (batch_free && d == 0 && *g > 0));
            if !ok {
                let expected = if batch_free {
                    let rest: Vec<String> = want[1..].iter().map(usize::to_string).collect();
                    format!("[B, {}]", rest.join(", "))
                } else {
                    format!("{want:?}")
                };
                return Err(CaptureError::Guard {
                    input: match role {
                        Role::Parameter(i) => format!("param{i}"),
                        Role::Data => "x".to_owned(),
                    },
                    expected,
                    got: format!("{got:?}"),
                });
            }
        }
        Ok(())
    }

    /// Checks a batch of this `mean` ([`Branch::mean`]) against the branch
    /// guard (none: passes).
    pub fn check_branch(&self, mean: f64) -> Result<(), CaptureError> {
        let Some(want) = self.guards.branch else {
            return Ok(());
        };
        let got = Branch::at(mean, want.threshold);
        if got.above == want.above {
            return Ok(());
        }
        let (mean, threshold) = (format!("{mean:.3}"), format!("{}", want.threshold));
        Err(if got.above {
            CaptureError::BranchAbove { mean, threshold }
        } else {
            CaptureError::BranchBelow { mean, threshold }
        })
    }

    /// Every node's shape, from the inputs' (already checked against the
    /// guards): the shape functions of the kernels.
    pub fn shapes(&self, inputs: &[&[usize]]) -> Vec<Vec<usize>> {
        let mut out: Vec<Vec<usize>> = Vec::with_capacity(self.nodes.len());
        for k in &self.nodes {
            let rc = |s: &Vec<usize>| rows_cols(s);
            let shape = match *k {
                Kernel::Input { slot } => inputs[slot].to_vec(),
                Kernel::MatMul { a, b, a_t, b_t } => {
                    let (ar, ac) = rc(&out[a]);
                    let (br, bc) = rc(&out[b]);
                    vec![if a_t { ac } else { ar }, if b_t { br } else { bc }]
                }
                Kernel::Add { a, .. }
                | Kernel::Accumulate { a, .. }
                | Kernel::Relu(a)
                | Kernel::Tanh(a)
                | Kernel::Sigmoid(a)
                | Kernel::Softmax(a)
                | Kernel::CrossEntropyGrad(a)
                | Kernel::ReluGrad { g: a, .. }
                | Kernel::TanhGrad { g: a, .. }
                | Kernel::SigmoidGrad { g: a, .. } => out[a].clone(),
                Kernel::SumRows(a) => vec![rc(&out[a]).1],
                Kernel::CrossEntropy(_) => vec![1],
                Kernel::Conv2d { x, geometry, .. } => {
                    vec![rc(&out[x]).0, geometry.output_len()]
                }
                Kernel::MaxPool { x, geometry } => vec![rc(&out[x]).0, geometry.output_len()],
                Kernel::Conv2dGradInput { g, geometry, .. } => {
                    vec![rc(&out[g]).0, geometry.input_len()]
                }
                Kernel::Conv2dGradWeight { geometry, .. } => {
                    vec![geometry.out_channels, geometry.patch()]
                }
                Kernel::ChannelStats { channels, .. } => vec![2, channels],
                Kernel::ChannelSum { channels, .. } | Kernel::ChannelDot { channels, .. } => {
                    vec![channels]
                }
                Kernel::ChannelNormalize { x: a, .. }
                | Kernel::ChannelAffine { x: a, .. }
                | Kernel::ChannelNormalizeGrad { g: a, .. }
                | Kernel::MaxPoolGrad { x: a, .. } => out[a].clone(),
            };
            out.push(shape);
        }
        out
    }

    /// The node the data is copied into.
    pub fn data_node(&self) -> Option<usize> {
        let slot = self.roles.iter().position(|r| *r == Role::Data)?;
        self.nodes.iter().position(|k| *k == Kernel::Input { slot })
    }

    /// Kernels launched by a replay (inputs are copies, not kernels).
    pub fn launches(&self) -> usize {
        self.nodes
            .iter()
            .filter(|k| !matches!(k, Kernel::Input { .. }))
            .count()
    }
}

/// Records the step `g` ran: the forward ops `loss` depends on, then the
/// backward ops in the order [`Graph::backward`] applies them. `params`
/// are the leaves whose gradients the step returns; `data` the batch; the
/// labels are the softmax cross-entropy's. `g` must have been built
/// without hooks (a plain f32 step).
pub fn capture(
    g: &Graph<f32>,
    loss: Var,
    params: &[Var],
    data: Var,
    symbolic_batch: bool,
) -> Result<Ir, CaptureError> {
    let leaf_wants_grad = |v: &Var| {
        matches!(
            g.node(*v).op,
            Op::Leaf {
                requires_grad: true
            }
        )
    };
    if !g.is_plain() || !params.iter().all(leaf_wants_grad) || leaf_wants_grad(&data) {
        return Err(CaptureError::NotPlain);
    }
    let order = g.topological_order(loss);
    let mut nodes: Vec<Kernel> = Vec::new();
    let mut roles = Vec::new();
    let mut shapes = Vec::new();
    let mut at: Vec<Option<usize>> = vec![None; g.len()];
    let push = |nodes: &mut Vec<Kernel>, k: Kernel| {
        nodes.push(k);
        nodes.len() - 1
    };
    // Inputs first, in slot order: the parameters, then the data.
    for (i, p) in params.iter().enumerate() {
        roles.push(Role::Parameter(i));
        shapes.push(g.shape(*p).to_vec());
        at[p.0] = Some(push(&mut nodes, Kernel::Input { slot: i }));
    }
    roles.push(Role::Data);
    shapes.push(g.shape(data).to_vec());
    at[data.0] = Some(push(&mut nodes, Kernel::Input { slot: params.len() }));
    let mut probs: Vec<Option<usize>> = vec![None; g.len()];
    // A BatchNorm's statistics and x̂ nodes, for its backward.
    let mut norms: Vec<Option<(usize, usize)>> = vec![None; g.len()];
    let node_of = |at: &[Option<usize>], v: Var| {
        at[v.0].ok_or_else(|| CaptureError::GraphBreak {
            op: "leaf".to_owned(),
        })
    };
    for v in &order {
        let op = &g.node(*v).op;
        let k = match op {
            Op::Leaf { .. } => {
                // A leaf that is neither a parameter nor the data.
                node_of(&at, *v)?;
                continue;
            }
            Op::MatMul(a, b) => Kernel::MatMul {
                a: node_of(&at, *a)?,
                b: node_of(&at, *b)?,
                a_t: false,
                b_t: false,
            },
            Op::Add(a, b) => {
                let (sa, sb) = (g.shape(*a), g.shape(*b));
                let row = sa.len() == 2 && (sb == [sa[1]] || sb == [1, sa[1]]);
                if sa != sb && !row {
                    return Err(CaptureError::GraphBreak {
                        op: "add_scalar".to_owned(),
                    });
                }
                Kernel::Add {
                    a: node_of(&at, *a)?,
                    b: node_of(&at, *b)?,
                }
            }
            Op::Relu(a) => Kernel::Relu(node_of(&at, *a)?),
            Op::Tanh(a) => Kernel::Tanh(node_of(&at, *a)?),
            Op::Sigmoid(a) => Kernel::Sigmoid(node_of(&at, *a)?),
            Op::SoftmaxCrossEntropy { logits, .. } => {
                let z = node_of(&at, *logits)?;
                probs[v.0] = Some(push(&mut nodes, Kernel::Softmax(z)));
                Kernel::CrossEntropy(z)
            }
            Op::Conv2d {
                input,
                weight,
                bias: None,
                geometry,
            } => Kernel::Conv2d {
                x: node_of(&at, *input)?,
                w: node_of(&at, *weight)?,
                geometry: *geometry,
            },
            Op::BatchNorm {
                input,
                gamma,
                beta,
                channels,
                training: true,
                ..
            } => {
                let (x, channels) = (node_of(&at, *input)?, *channels);
                let stats = push(&mut nodes, Kernel::ChannelStats { x, channels });
                let xhat = Kernel::ChannelNormalize { x, stats, channels };
                let xhat = push(&mut nodes, xhat);
                norms[v.0] = Some((stats, xhat));
                Kernel::ChannelAffine {
                    x: xhat,
                    gamma: node_of(&at, *gamma)?,
                    beta: node_of(&at, *beta)?,
                    channels,
                }
            }
            Op::MaxPool {
                input, geometry, ..
            } => Kernel::MaxPool {
                x: node_of(&at, *input)?,
                geometry: *geometry,
            },
            // The forms the capture has no kernels for, named as such.
            Op::Conv2d { bias: Some(_), .. } => {
                return Err(CaptureError::GraphBreak {
                    op: "conv2d+bias".to_owned(),
                });
            }
            Op::BatchNorm {
                training: false, ..
            } => {
                return Err(CaptureError::GraphBreak {
                    op: "batchnorm(eval)".to_owned(),
                });
            }
            other => {
                return Err(CaptureError::GraphBreak {
                    op: other.name().to_owned(),
                });
            }
        };
        at[v.0] = Some(push(&mut nodes, k));
    }
    let loss_node = at[loss.0].ok_or(CaptureError::NotPlain)?;
    if !matches!(nodes[loss_node], Kernel::CrossEntropy(_)) {
        return Err(CaptureError::GraphBreak {
            op: g.node(loss).op.name().to_owned(),
        });
    }
    // Backward, as `Graph::backward` runs it: reverse topological order,
    // only towards nodes that lead to a parameter; a node's contributions
    // summed in the order they arrive.
    let mut needs = vec![false; g.len()];
    for v in &order {
        needs[v.0] = match &g.node(*v).op {
            Op::Leaf { requires_grad } => *requires_grad,
            op => op.inputs().iter().any(|i| needs[i.0]),
        };
    }
    let mut pending: Vec<Option<usize>> = vec![None; g.len()];
    let give = |nodes: &mut Vec<Kernel>, pending: &mut [Option<usize>], to: Var, k: usize| {
        if !needs[to.0] {
            return;
        }
        pending[to.0] = Some(match pending[to.0] {
            Some(acc) => push(nodes, Kernel::Accumulate { a: acc, b: k }),
            None => k,
        });
    };
    for v in order.iter().rev() {
        if !needs[v.0] {
            continue;
        }
        let own = at[v.0].ok_or(CaptureError::NotPlain)?;
        let grad = match pending[v.0] {
            Some(gn) => gn,
            None if *v == loss => usize::MAX,
            None => continue,
        };
        let node = |x: &Var| at[x.0].ok_or(CaptureError::NotPlain);
        match &g.node(*v).op {
            Op::Leaf { .. } => {}
            Op::SoftmaxCrossEntropy { logits, .. } => {
                let p = probs[v.0].ok_or(CaptureError::NotPlain)?;
                let k = push(&mut nodes, Kernel::CrossEntropyGrad(p));
                give(&mut nodes, &mut pending, *logits, k);
            }
            Op::Add(a, b) => {
                give(&mut nodes, &mut pending, *a, grad);
                let k = if g.shape(*a) == g.shape(*b) {
                    grad
                } else {
                    push(&mut nodes, Kernel::SumRows(grad))
                };
                give(&mut nodes, &mut pending, *b, k);
            }
            Op::MatMul(a, b) => {
                if needs[a.0] {
                    let k = Kernel::MatMul {
                        a: grad,
                        b: node(b)?,
                        a_t: false,
                        b_t: true,
                    };
                    let k = push(&mut nodes, k);
                    give(&mut nodes, &mut pending, *a, k);
                }
                if needs[b.0] {
                    let k = Kernel::MatMul {
                        a: node(a)?,
                        b: grad,
                        a_t: true,
                        b_t: false,
                    };
                    let k = push(&mut nodes, k);
                    give(&mut nodes, &mut pending, *b, k);
                }
            }
            Op::Relu(a) => {
                let k = push(&mut nodes, Kernel::ReluGrad { g: grad, y: own });
                give(&mut nodes, &mut pending, *a, k);
            }
            Op::Tanh(a) => {
                let k = push(&mut nodes, Kernel::TanhGrad { g: grad, y: own });
                give(&mut nodes, &mut pending, *a, k);
            }
            Op::Sigmoid(a) => {
                let k = push(&mut nodes, Kernel::SigmoidGrad { g: grad, y: own });
                give(&mut nodes, &mut pending, *a, k);
            }
            Op::Conv2d {
                input,
                weight,
                geometry,
                ..
            } => {
                let geometry = *geometry;
                if needs[input.0] {
                    let w = node(weight)?;
                    let k = push(
                        &mut nodes,
                        Kernel::Conv2dGradInput {
                            g: grad,
                            w,
                            geometry,
                        },
                    );
                    give(&mut nodes, &mut pending, *input, k);
                }
                if needs[weight.0] {
                    let x = node(input)?;
                    let k = push(
                        &mut nodes,
                        Kernel::Conv2dGradWeight {
                            g: grad,
                            x,
                            geometry,
                        },
                    );
                    give(&mut nodes, &mut pending, *weight, k);
                }
            }
            Op::BatchNorm {
                input,
                gamma,
                beta,
                channels,
                ..
            } => {
                let (stats, xhat) = norms[v.0].ok_or(CaptureError::NotPlain)?;
                let channels = *channels;
                if needs[input.0] {
                    let k = Kernel::ChannelNormalizeGrad {
                        g: grad,
                        xhat,
                        gamma: node(gamma)?,
                        stats,
                        channels,
                    };
                    let k = push(&mut nodes, k);
                    give(&mut nodes, &mut pending, *input, k);
                }
                if needs[gamma.0] {
                    let k = push(
                        &mut nodes,
                        Kernel::ChannelDot {
                            g: grad,
                            xhat,
                            channels,
                        },
                    );
                    give(&mut nodes, &mut pending, *gamma, k);
                }
                if needs[beta.0] {
                    let k = push(&mut nodes, Kernel::ChannelSum { g: grad, channels });
                    give(&mut nodes, &mut pending, *beta, k);
                }
            }
            Op::MaxPool {
                input, geometry, ..
            } if needs[input.0] => {
                let k = Kernel::MaxPoolGrad {
                    g: grad,
                    x: node(input)?,
                    geometry: *geometry,
                };
                let k = push(&mut nodes, k);
                give(&mut nodes, &mut pending, *input, k);
            }
            Op::MaxPool { .. } => {}
            other => {
                return Err(CaptureError::GraphBreak {
                    op: other.name().to_owned(),
                });
            }
        }
    }
    let grads = params
        .iter()
        .map(|p| pending[p.0].ok_or(CaptureError::NotPlain))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Ir {
        nodes,
        roles,
        guards: Guards {
            shapes,
            symbolic_batch,
            branch: None,
        },
        loss: loss_node,
        grads,
    })
}

/// A shape as a matrix: `[r, c]`, a row `[c]`, else one row of everything.
pub fn rows_cols(shape: &[usize]) -> (usize, usize) {
    match shape {
        [r, c] => (*r, *c),
        [c] => (1, *c),
        _ => (1, shape.iter().product()),
    }
}

/// The inputs of a captured step in slot order: the parameters, then
/// the data `x` of `shape`.
pub fn slots<'a>(
    params: &'a [&'a crate::autograd::Tensor<f32>],
    x: &'a [f32],
    shape: &'a [usize],
) -> Vec<(&'a [f32], &'a [usize])> {
    params
        .iter()
        .map(|p| (p.data.as_slice(), p.shape.as_slice()))
        .chain([(x, shape)])
        .collect()
}
