//! The fused step run end to end: the captured graph executed with each
//! group of the fusion pass run as one kernel (generated WGSL on a GPU, by
//! a hook the `shaders` crate supplies; or the chain's CPU meaning here),
//! every other kernel by the executor, and the loss and gradients held to
//! the eager step's within a stated tolerance. Nothing is reused between
//! buffers in this run: the plan's lifetimes are per kernel, and a group
//! reads its inputs only at its last node.

use serde::Serialize;

use super::capture::{CaptureError, Ir};
use super::chain::Chain;
use super::fuse::{Fusion, Group, fuse};
use super::replay::{GroupKernel, Replayed, layout_keeping_all, run, run_hooked, value};

/// A value `got` agrees with the eager `want` when
/// |got − want| ≤ [`ABS`] + [`REL`]·|want| (NaN with NaN, an infinity with
/// itself). A generated kernel's `exp`, `tanh` and division may differ from
/// the CPU's by a few ulps, and the GEMMs downstream carry that on.
pub const ABS: f64 = 1e-6;
pub const REL: f64 = 1e-5;

/// How a fused run's loss and gradients compare with the eager step's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Agreement {
    /// Values compared (the loss and every gradient's).
    pub values: usize,
    /// Those outside the tolerance.
    pub off: usize,
    /// Those equal bit for bit.
    pub exact: usize,
    /// The largest |got − want| / (ABS + REL·|want|) over the finite ones:
    /// at most 1 when all agree.
    pub worst: f64,
}

impl Agreement {
    pub fn holds(&self) -> bool {
        self.off == 0
    }
}

/// Compares a fused run with the eager step.
pub fn agreement(got: &Replayed, want: &Replayed) -> Agreement {
    let mut a = Agreement {
        values: 0,
        off: 0,
        exact: 0,
        worst: 0.0,
    };
    let mut one = |g: f32, w: f32| {
        a.values += 1;
        a.exact += usize::from(g.to_bits() == w.to_bits());
        let (g, w) = (f64::from(g), f64::from(w));
        if g.is_nan() || w.is_nan() || g.is_infinite() || w.is_infinite() {
            a.off += usize::from(!(g.is_nan() && w.is_nan()) && g != w);
            return;
        }
        let ratio = (g - w).abs() / (ABS + REL * w.abs());
        a.worst = a.worst.max(ratio);
        a.off += usize::from(ratio > 1.0);
    };
    one(got.loss, want.loss);
    let mut missing = usize::from(got.grads.len() != want.grads.len());
    for (g, w) in got.grads.iter().zip(&want.grads) {
        missing += usize::from(g.len() != w.len());
        for (x, y) in g.iter().zip(w) {
            one(*x, *y);
        }
    }
    a.off += missing;
    a
}

/// Runs `ir` on `inputs` (slot order) and `labels` with the fusion pass's
/// groups run by `kernel`: the pass's result and the run's loss and
/// gradients (its launches the fused count).
pub fn run_fused(
    ir: &Ir,
    inputs: &[(&[f32], &[usize])],
    labels: &[usize],
    kernel: &mut GroupKernel<'_>,
) -> Result<(Fusion, Replayed), CaptureError> {
    let shapes: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
    ir.check(&shapes)?;
    let layout = layout_keeping_all(ir, &shapes);
    let fusion = fuse(ir, &layout.shapes);
    let hook = Some((&fusion, kernel));
    let run = run_hooked(ir, &layout, inputs, labels, &mut Vec::new(), false, hook)?;
    Ok((fusion, run))
}

/// A group run on the CPU: its chain's meaning ([`super::chain::Chain::eval`]),
/// what the generated kernel computes.
pub fn cpu_group(
    group: &Group,
    x: &[f32],
    extras: &[&[f32]],
    out: &mut [f32],
) -> Result<(), CaptureError> {
    let values =
        group
            .chain
            .eval(x, extras, group.cols)
            .map_err(|e| CaptureError::GroupKernel {
                why: format!("{e:?}"),
            })?;
    out.copy_from_slice(&values);
    Ok(())
}

/// A generated kernel to time on the step's own values: a group's chain
/// fused, or one of its ops alone (what the step launches unfused).
#[derive(Clone, Debug, PartialEq)]
pub struct Timed {
    pub group: usize,
    /// The op it runs alone; `None`: the whole group, fused.
    pub op: Option<usize>,
    pub chain: Chain,
    pub x: Vec<f32>,
    pub extras: Vec<Vec<f32>>,
    pub cols: usize,
}

impl Timed {
    /// Its name on a plot: the group, then the fused ops (`g2/add+relu`)
    /// or the op's place and key (`g2/1:add`).
    pub fn id(&self) -> String {
        let keys: Vec<&str> = self.chain.ops.iter().map(|o| o.key()).collect();
        match self.op {
            None => format!("g{}/{}", self.group + 1, keys.join("+")),
            Some(k) => format!("g{}/{}:{}", self.group + 1, k + 1, keys.join("+")),
        }
    }
}

/// Every group of the fusion pass as its fused kernel and as its ops one
/// by one, each on the values the eager step gave its inputs (a replay
/// that keeps every buffer).
pub fn timed_kernels(
    ir: &Ir,
    inputs: &[(&[f32], &[usize])],
    labels: &[usize],
) -> Result<Vec<Timed>, CaptureError> {
    let shapes: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
    ir.check(&shapes)?;
    let layout = layout_keeping_all(ir, &shapes);
    let mut arena = Vec::new();
    run(ir, &layout, inputs, labels, &mut arena, false)?;
    let of = |node: usize| value(&layout, &arena, node).to_vec();
    let fusion = fuse(ir, &layout.shapes);
    let mut out = Vec::new();
    for (group, g) in fusion.groups.iter().enumerate() {
        out.push(Timed {
            group,
            op: None,
            chain: g.chain.clone(),
            x: of(g.input),
            extras: g.extras.iter().map(|e| of(*e)).collect(),
            cols: g.cols,
        });
        // Op k reads the value op k − 1 wrote (the group's input first)
        // and its own extra input.
        for (k, op) in g.chain.ops.iter().enumerate() {
            let running = if k == 0 { g.input } else { g.nodes[k - 1] };
            out.push(Timed {
                group,
                op: Some(k),
                chain: g.chain.single(k),
                x: of(running),
                extras: op
                    .extra()
                    .map(|e| vec![of(g.extras[e])])
                    .unwrap_or_default(),
                cols: g.cols,
            });
        }
    }
    Ok(out)
}
