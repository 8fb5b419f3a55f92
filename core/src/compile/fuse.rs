//! The fusion pass over a captured step: elementwise kernels joined into
//! chains ([`Chain`]), each chain one generated kernel, with the pass's
//! decision for every edge between two kernels, in words. An edge p → c is
//! fused when both are elementwise, p is c's running operand (a chain
//! follows one value; a second operand is loaded as an extra input, one
//! value per element or a bias row) and nothing else reads p — so p's
//! values never go to memory. Launches and bytes before and after: elementwise kernels
//! counted as the instrumented build counts them (every element loads its
//! operands, a bias too), GEMMs and reductions as each operand read once
//! and the output written once.

use serde::Serialize;

use super::capture::{Ir, Kernel};
use super::chain::{Chain, ChainOp, Extra};

/// What the pass decided for an edge, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Joined: the producer's values stay in registers.
    Fused,
    /// A GEMM on either side: a library kernel (an epilogue could take a
    /// bias or an activation; this pass joins elementwise kernels only).
    Gemm,
    /// The producer is a reduction: the consumer needs the whole reduced
    /// row before it can start.
    AfterReduction,
    /// The consumer reduces: legal as a trailing reduction, but the
    /// generator emits elementwise chains only.
    TrailingReduction,
    /// An op the generator has no form for (softmax cross-entropy's
    /// gradient reads the labels, BatchNorm's maps read per-channel
    /// operands, max pooling's gradient scatters to a window's winner).
    NotGenerated,
    /// The producer feeds the consumer's second operand: a chain follows
    /// one running value.
    OtherOperand,
    /// Another kernel reads the producer too (or the consumer reads it
    /// twice, or it is a result of the step), so its values must be
    /// written anyway.
    Shared,
}

impl Verdict {
    pub fn key(self) -> &'static str {
        match self {
            Self::Fused => "fused",
            Self::Gemm => "gemm",
            Self::AfterReduction => "after_reduction",
            Self::TrailingReduction => "trailing_reduction",
            Self::NotGenerated => "not_generated",
            Self::OtherOperand => "other_operand",
            Self::Shared => "shared",
        }
    }
}

impl Fusion {
    /// The longest group (the first of the longest), whose kernel the
    /// lesson shows.
    pub fn longest(&self) -> Option<(usize, &Group)> {
        self.groups
            .iter()
            .enumerate()
            .rev()
            .max_by_key(|(_, g)| g.nodes.len())
    }
}

impl crate::names::Named for Verdict {
    fn name_key(&self) -> String {
        format!("fuse.{}", self.key())
    }
}

/// One edge of the graph between two kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub verdict: Verdict,
}

/// A chain of elementwise kernels run as one generated kernel.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// The graph's nodes it computes, in order; the last is its output.
    pub nodes: Vec<usize>,
    /// The node whose values it starts from.
    pub input: usize,
    /// The nodes it loads as extra inputs, in the chain's order.
    pub extras: Vec<usize>,
    pub chain: Chain,
    /// Elements, and the width of a row (for a bias).
    pub n: usize,
    pub cols: usize,
}

/// The pass's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fusion {
    pub groups: Vec<Group>,
    pub edges: Vec<Edge>,
    pub launches_before: usize,
    pub launches_after: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Input,
    Gemm,
    Elementwise,
    Reduction,
    Other,
}

fn class(k: &Kernel) -> Class {
    match k {
        Kernel::Input { .. } => Class::Input,
        Kernel::MatMul { .. }
        | Kernel::Conv2d { .. }
        | Kernel::Conv2dGradInput { .. }
        | Kernel::Conv2dGradWeight { .. } => Class::Gemm,
        Kernel::SumRows(_)
        | Kernel::Softmax(_)
        | Kernel::CrossEntropy(_)
        | Kernel::ChannelStats { .. }
        | Kernel::ChannelSum { .. }
        | Kernel::ChannelDot { .. }
        | Kernel::MaxPool { .. } => Class::Reduction,
        Kernel::CrossEntropyGrad(_)
        | Kernel::ChannelNormalize { .. }
        | Kernel::ChannelAffine { .. }
        | Kernel::ChannelNormalizeGrad { .. }
        | Kernel::MaxPoolGrad { .. } => Class::Other,
        Kernel::Add { .. }
        | Kernel::Accumulate { .. }
        | Kernel::Relu(_)
        | Kernel::Tanh(_)
        | Kernel::Sigmoid(_)
        | Kernel::ReluGrad { .. }
        | Kernel::TanhGrad { .. }
        | Kernel::SigmoidGrad { .. } => Class::Elementwise,
    }
}

/// An elementwise kernel as a chain op: its running operand, its extra
/// operand (if any) and the op (the extra's index filled in later).
fn as_op(k: &Kernel) -> Option<(usize, Option<usize>, ChainOp)> {
    Some(match *k {
        Kernel::Add { a, b } | Kernel::Accumulate { a, b } => (a, Some(b), ChainOp::Add(0)),
        Kernel::Relu(a) => (a, None, ChainOp::Relu),
        Kernel::Tanh(a) => (a, None, ChainOp::Tanh),
        Kernel::Sigmoid(a) => (a, None, ChainOp::Sigmoid),
        Kernel::ReluGrad { g, y } => (g, Some(y), ChainOp::ReluGrad(0)),
        Kernel::TanhGrad { g, y } => (g, Some(y), ChainOp::TanhGrad(0)),
        Kernel::SigmoidGrad { g, y } => (g, Some(y), ChainOp::SigmoidGrad(0)),
        _ => return None,
    })
}

/// Runs the pass on `ir` with every node's shape.
pub fn fuse(ir: &Ir, shapes: &[Vec<usize>]) -> Fusion {
    let numel = |i: usize| shapes[i].iter().product::<usize>();
    // Operand slots reading each node (a kernel reading it twice counts twice).
    let mut reads = vec![0usize; ir.nodes.len()];
    for k in &ir.nodes {
        for j in k.inputs() {
            reads[j] += 1;
        }
    }
    let outputs: Vec<usize> = ir.grads.iter().copied().chain([ir.loss]).collect();
    let mut edges = Vec::new();
    let mut fused_into = vec![false; ir.nodes.len()];
    for (c, k) in ir.nodes.iter().enumerate() {
        let mut seen = Vec::new();
        for p in k.inputs() {
            if seen.contains(&p) || class(&ir.nodes[p]) == Class::Input {
                continue;
            }
            seen.push(p);
            let (cp, cc) = (class(&ir.nodes[p]), class(k));
            let verdict = if cp == Class::Gemm || cc == Class::Gemm {
                Verdict::Gemm
            } else if cp == Class::Reduction {
                Verdict::AfterReduction
            } else if cp == Class::Other || cc == Class::Other {
                Verdict::NotGenerated
            } else if as_op(k).is_some_and(|(running, _, _)| running != p) {
                Verdict::OtherOperand
            } else if reads[p] > 1 || outputs.contains(&p) {
                Verdict::Shared
            } else if cc == Class::Reduction {
                Verdict::TrailingReduction
            } else {
                fused_into[c] = true;
                Verdict::Fused
            };
            edges.push(Edge {
                from: p,
                to: c,
                verdict,
            });
        }
    }
    // Chains: a kernel fused into from its running operand joins that
    // operand's group.
    let mut groups: Vec<Group> = Vec::new();
    let mut group_of: Vec<Option<usize>> = vec![None; ir.nodes.len()];
    for (c, k) in ir.nodes.iter().enumerate() {
        let Some((running, extra, op)) = as_op(k) else {
            continue;
        };
        let g = match group_of[running].filter(|_| fused_into[c]) {
            Some(g) => g,
            None => {
                groups.push(Group {
                    nodes: Vec::new(),
                    input: running,
                    extras: Vec::new(),
                    chain: Chain {
                        extras: Vec::new(),
                        ops: Vec::new(),
                    },
                    n: numel(c),
                    cols: shapes[c].last().copied().unwrap_or(1),
                });
                groups.len() - 1
            }
        };
        let group = &mut groups[g];
        let op = match extra {
            Some(e) => {
                let kind = if numel(e) == group.n {
                    Extra::Full
                } else {
                    Extra::Row
                };
                group.extras.push(e);
                group.chain.extras.push(kind);
                op.reading(group.chain.extras.len() - 1)
            }
            None => op,
        };
        group.chain.ops.push(op);
        group.nodes.push(c);
        group_of[c] = Some(g);
    }
    let other_bytes = |i: usize, k: &Kernel| -> u64 {
        let read: usize = k.inputs().iter().map(|j| numel(*j)).sum();
        4 * (read + numel(i)) as u64
    };
    let (mut before, mut after) = (0u64, 0u64);
    for (i, k) in ir.nodes.iter().enumerate() {
        match class(k) {
            Class::Input => {}
            Class::Elementwise => {
                let Some(group) = group_of[i].map(|g| &groups[g]) else {
                    continue;
                };
                let at = group.nodes.iter().position(|n| *n == i).unwrap_or(0);
                before += group.chain.single(at).fused_traffic(group.n).bytes();
            }
            _ => {
                before += other_bytes(i, k);
                after += other_bytes(i, k);
            }
        }
    }
    after += groups
        .iter()
        .map(|g| g.chain.fused_traffic(g.n).bytes())
        .sum::<u64>();
    let fused = edges.iter().filter(|e| e.verdict == Verdict::Fused).count();
    Fusion {
        launches_before: ir.launches(),
        launches_after: ir.launches() - fused,
        bytes_before: before,
        bytes_after: after,
        groups,
        edges,
    }
}
