//! The executor: runs a captured step ([`Ir`]) alone — no tape, no model
//! code, no shape checks past the guards, no allocation per op — into one
//! arena laid out by the memory planner ([`super::plan`]). Each kernel is
//! the engine's own math ([`crate::autograd::pointwise`], the same GEMM),
//! so a replay gives the eager step's loss and gradients bit for bit.
//!
//! A node's buffer lives from the kernel that writes it to the last kernel
//! that reads it, inclusive, so a kernel does not write over its inputs —
//! except an elementwise kernel over its running operand when that operand
//! dies there (in place: both are one buffer to the planner).

use serde::Serialize;

use super::capture::{CaptureError, Ir, Kernel, rows_cols};
use super::fuse::{Fusion, Group};
use super::plan::{Buffer, plan};
use crate::autograd::Real as _;
use crate::autograd::layer_math as lm;
use crate::autograd::pointwise as pw;

/// Where every node's values go for one set of input shapes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Layout {
    pub shapes: Vec<Vec<usize>>,
    /// Each node's first value in the arena (f32s).
    pub offsets: Vec<usize>,
    /// The arena, f32s.
    pub arena: usize,
    /// The most f32s live at once (kernels written in place counting
    /// once) and the sum of all nodes' buffers.
    pub max_live: usize,
    pub no_reuse: usize,
    /// Each node's buffer: its own, or the one it was written over in
    /// place (by an elementwise kernel whose running operand died there).
    pub owner: Vec<usize>,
    /// Nodes written in place.
    pub in_place: usize,
}

/// The operand an elementwise kernel may write over: its running value.
fn in_place_operand(k: &Kernel) -> Option<usize> {
    match *k {
        Kernel::Add { a, .. }
        | Kernel::Accumulate { a, .. }
        | Kernel::Relu(a)
        | Kernel::Tanh(a)
        | Kernel::Sigmoid(a)
        | Kernel::ReluGrad { g: a, .. }
        | Kernel::TanhGrad { g: a, .. }
        | Kernel::SigmoidGrad { g: a, .. } => Some(a),
        _ => None,
    }
}

/// Plans the arena for inputs of `shapes` (already checked by the guards):
/// with in-place writes and without, keeping the smaller arena (greedy
/// planning is a heuristic: fewer, longer buffers can pack worse; XLA too
/// tries several orders and keeps the best).
pub fn layout(ir: &Ir, shapes: &[&[usize]]) -> Layout {
    let with = planned(ir, shapes, Reuse::InPlace);
    let without = planned(ir, shapes, Reuse::Apart);
    if with.arena <= without.arena {
        with
    } else {
        without
    }
}

/// The plan with in-place writes allowed, whatever its arena (for tests
/// and for showing what in-place reuse does).
pub fn layout_in_place(ir: &Ir, shapes: &[&[usize]]) -> Layout {
    planned(ir, shapes, Reuse::InPlace)
}

/// How buffers may share bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reuse {
    /// Also an elementwise kernel over its dying running operand.
    InPlace,
    /// Only buffers never live together.
    Apart,
    /// None: every buffer kept to the end.
    KeepAll,
}

/// [`layout`] with every buffer kept to the end: nothing reused, so every
/// node's values can be read after a run ([`value`]).
pub fn layout_keeping_all(ir: &Ir, shapes: &[&[usize]]) -> Layout {
    planned(ir, shapes, Reuse::KeepAll)
}

/// Node `i`'s values in `arena` after a run laid out as `layout` (those
/// of a node whose bytes were reused since are gone: see
/// [`layout_keeping_all`]).
pub fn value<'a>(layout: &Layout, arena: &'a [f32], i: usize) -> &'a [f32] {
    let len: usize = layout.shapes[i].iter().product();
    &arena[layout.offsets[i]..layout.offsets[i] + len]
}

/// Liveness analysis: node `i` (reading the nodes `inputs[i]`, written at
/// point `i`) is live at the points `first..end` — from its own point
/// through the point of its last reader (inclusive: the reader reads it
/// while it runs), or to the end of the step for a result (`outputs`);
/// a node nobody reads lives at its own point only.
pub fn liveness(inputs: &[Vec<usize>], outputs: &[usize]) -> Vec<(u32, u32)> {
    let n = inputs.len() as u32;
    let mut end: Vec<u32> = (1..=n).collect();
    for (i, reads) in inputs.iter().enumerate() {
        for j in reads {
            end[*j] = end[*j].max(i as u32 + 1);
        }
    }
    for out in outputs {
        end[*out] = n;
    }
    end.into_iter()
        .enumerate()
        .map(|(i, e)| (i as u32, e))
        .collect()
}

fn planned(ir: &Ir, shapes: &[&[usize]], reuse: Reuse) -> Layout {
    let shapes = ir.shapes(shapes);
    let n = ir.nodes.len() as u32;
    let keep_all = reuse == Reuse::KeepAll;
    let inputs: Vec<Vec<usize>> = ir.nodes.iter().map(Kernel::inputs).collect();
    let results: Vec<usize> = ir.grads.iter().copied().chain([ir.loss]).collect();
    let end: Vec<u32> = liveness(&inputs, &results)
        .into_iter()
        .map(|(_, e)| if keep_all { n } else { e })
        .collect();
    let numel = |i: usize| shapes[i].iter().product::<usize>();
    // In place: an elementwise kernel writes over its running operand when
    // that operand dies here, has its size, is read once by the kernel and
    // is not a result of the step; the planner sees one buffer for both.
    let mut owner: Vec<usize> = (0..shapes.len()).collect();
    if reuse == Reuse::InPlace {
        for (i, k) in ir.nodes.iter().enumerate() {
            if let Some(j) = in_place_operand(k)
                && end[j] == i as u32 + 1
                && numel(j) == numel(i)
                && inputs[i].iter().filter(|x| **x == j).count() == 1
                && !results.contains(&j)
            {
                owner[i] = owner[j];
            }
        }
    }
    // One buffer per owner, living until its last member's last reader.
    let mut buffers: Vec<Buffer> = Vec::new();
    let mut buffer_of = vec![0; shapes.len()];
    for i in 0..shapes.len() {
        if owner[i] == i {
            buffer_of[i] = buffers.len();
            buffers.push(Buffer {
                id: i as u64,
                bytes: 4 * numel(i) as u64,
                first: i as u32,
                end: end[i],
            });
        } else {
            let b = &mut buffers[buffer_of[owner[i]]];
            b.end = b.end.max(end[i]);
        }
    }
    let planned = plan(&buffers);
    let mut at = vec![0; shapes.len()];
    for p in &planned.placed {
        at[p.buffer.id as usize] = (p.offset / 4) as usize;
    }
    let offsets = owner.iter().map(|o| at[*o]).collect();
    Layout {
        in_place: owner.iter().enumerate().filter(|(i, o)| *i != **o).count(),
        no_reuse: (0..shapes.len()).map(numel).sum(),
        shapes,
        offsets,
        owner,
        arena: (planned.arena / 4) as usize,
        max_live: (planned.max_live / 4) as usize,
    }
}

/// What a replay gives.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Replayed {
    pub loss: f32,
    /// Each parameter's gradient, in parameter order.
    pub grads: Vec<Vec<f32>>,
    /// Seconds in the kernels alone (the math), summed; 0 unless timed.
    pub math_seconds: f64,
    /// Kernels launched.
    pub launches: usize,
}

/// Runs `ir` on `inputs` (in slot order) and `labels` — guards first.
pub fn execute(
    ir: &Ir,
    inputs: &[(&[f32], &[usize])],
    labels: &[usize],
) -> Result<Replayed, CaptureError> {
    let shapes: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
    ir.check(&shapes)?;
    let layout = layout(ir, &shapes);
    let mut arena = Vec::new();
    run(ir, &layout, inputs, labels, &mut arena, false)
}

/// Runs `ir` laid out as `layout` (for these inputs' shapes), reusing
/// `arena` across calls; with `timed`, each kernel is timed (the math).
pub fn run(
    ir: &Ir,
    layout: &Layout,
    inputs: &[(&[f32], &[usize])],
    labels: &[usize],
    arena: &mut Vec<f32>,
    timed: bool,
) -> Result<Replayed, CaptureError> {
    run_hooked(ir, layout, inputs, labels, arena, timed, None)
}

/// Runs a fused group's generated kernel: the group, its input's values,
/// its extra inputs' values, and its output to fill.
pub type GroupKernel<'a> =
    dyn FnMut(&Group, &[f32], &[&[f32]], &mut [f32]) -> Result<(), CaptureError> + 'a;

/// [`run`], with each of `fused`'s groups run as one kernel by the hook
/// at its last node (its other nodes skipped: their values never reach
/// memory). The layout must keep a group's inputs until its last node
/// ([`layout_keeping_all`] does).
pub(super) fn run_hooked(
    ir: &Ir,
    layout: &Layout,
    inputs: &[(&[f32], &[usize])],
    labels: &[usize],
    arena: &mut Vec<f32>,
    timed: bool,
    mut fused: Option<(&Fusion, &mut GroupKernel<'_>)>,
) -> Result<Replayed, CaptureError> {
    // A group reads its inputs at its last node, after their lifetimes as
    // single kernels end: only a plan that reuses nothing keeps them.
    if fused.is_some() && layout.arena != layout.no_reuse {
        return Err(CaptureError::Overlap);
    }
    // Per node: the group it ends, or whether a group computes it on the way.
    let mut ends: Vec<Option<usize>> = vec![None; ir.nodes.len()];
    let mut inside = vec![false; ir.nodes.len()];
    if let Some((f, _)) = &fused {
        for (g, group) in f.groups.iter().enumerate() {
            for n in &group.nodes {
                inside[*n] = true;
            }
            if let Some(last) = group.nodes.last() {
                ends[*last] = Some(g);
            }
        }
    }
    let rows = ir
        .data_node()
        .and_then(|d| layout.shapes[d].first().copied())
        .unwrap_or(0);
    if labels.len() != rows {
        return Err(CaptureError::Guard {
            input: "labels".to_owned(),
            expected: format!("[{rows}]"),
            got: format!("[{}]", labels.len()),
        });
    }
    if let Some(Kernel::CrossEntropy(z)) = ir.nodes.get(ir.loss)
        && let Some(bad) = labels
            .iter()
            .find(|l| **l >= rows_cols(&layout.shapes[*z]).1)
    {
        return Err(CaptureError::Label {
            label: *bad as u64,
            classes: rows_cols(&layout.shapes[*z]).1 as u64,
        });
    }
    arena.resize(layout.arena, 0.0);
    let len = |i: usize| layout.shapes[i].iter().product::<usize>();
    let range = |i: usize| layout.offsets[i]..layout.offsets[i] + len(i);
    let cols = |i: usize| layout.shapes[i].last().copied().unwrap_or(1);
    let mut math = 0.0;
    for (i, k) in ir.nodes.iter().enumerate() {
        let out_range = range(i);
        let (left, rest) = arena.split_at_mut(out_range.start);
        let (out, right) = rest.split_at_mut(out_range.len());
        let right_start = out_range.end;
        // An input lies wholly before or after the output (the planner
        // keeps buffers live together apart).
        let read = |j: usize| -> Result<&[f32], CaptureError> {
            let r = range(j);
            if r.end <= out_range.start {
                Ok(&left[r])
            } else if r.start >= right_start {
                Ok(&right[r.start - right_start..r.end - right_start])
            } else {
                Err(CaptureError::Overlap)
            }
        };
        if let Kernel::Input { slot } = *k {
            let (values, _) = inputs[slot];
            if values.len() != out.len() {
                return Err(CaptureError::Inputs {
                    expected: out.len() as u64,
                    got: values.len() as u64,
                });
            }
            out.copy_from_slice(values);
            continue;
        }
        if let (Some(g), Some((f, kernel))) = (ends[i], fused.as_mut()) {
            let group = &f.groups[g];
            let extras = group
                .extras
                .iter()
                .map(|e| read(*e))
                .collect::<Result<Vec<_>, _>>()?;
            kernel(group, read(group.input)?, &extras, out)?;
            continue;
        }
        if inside[i] {
            continue;
        }
        // The running operand, or None where the kernel runs in place.
        let inplace = in_place_operand(k)
            .is_some_and(|j| layout.owner[i] != i && layout.offsets[j] == out_range.start);
        let running = |j: usize| -> Result<Option<&[f32]>, CaptureError> {
            if inplace { Ok(None) } else { read(j).map(Some) }
        };
        let start = timed.then(web_time::Instant::now);
        match *k {
            Kernel::Input { .. } => {}
            Kernel::MatMul { a, b, a_t, b_t } => {
                let (ar, ac) = rows_cols(&layout.shapes[a]);
                let (br, bc) = rows_cols(&layout.shapes[b]);
                let (m, kk) = if a_t { (ac, ar) } else { (ar, ac) };
                let n = if b_t { br } else { bc };
                let a_strides = if a_t { (1, m) } else { (kk, 1) };
                let b_strides = if b_t { (1, kk) } else { (n, 1) };
                f32::gemm_strided(m, kk, n, read(a)?, a_strides, read(b)?, b_strides, 0.0, out);
            }
            Kernel::Add { a, b } => {
                let y = read(b)?;
                let width = y.len().max(1);
                zip_at(out, running(a)?, |i| y[i % width], |u, v| u + v);
            }
            Kernel::Accumulate { a, b } => {
                let y = read(b)?;
                zip_at(out, running(a)?, |i| y[i], |u, v| u + v);
            }
            Kernel::Relu(a) => zip_at(out, running(a)?, |_| 0.0, |u, _| pw::relu(u)),
            Kernel::Tanh(a) => zip_at(out, running(a)?, |_| 0.0, |u, _| u.tanh()),
            Kernel::Sigmoid(a) => zip_at(out, running(a)?, |_| 0.0, |u, _| pw::sigmoid(u)),
            Kernel::ReluGrad { g, y } => {
                let y = read(y)?;
                zip_at(out, running(g)?, |i| y[i], pw::relu_grad);
            }
            Kernel::TanhGrad { g, y } => {
                let y = read(y)?;
                zip_at(out, running(g)?, |i| y[i], pw::tanh_grad);
            }
            Kernel::SigmoidGrad { g, y } => {
                let y = read(y)?;
                zip_at(out, running(g)?, |i| y[i], pw::sigmoid_grad);
            }
            Kernel::SumRows(a) => pw::sum_rows_into(read(a)?, out),
            Kernel::Softmax(a) => pw::softmax_rows_into(read(a)?, cols(a), out),
            Kernel::CrossEntropy(a) => out[0] = pw::cross_entropy_rows(read(a)?, cols(a), labels),
            Kernel::CrossEntropyGrad(p) => {
                let scale = 1.0 / f32::from_f64(labels.len() as f64);
                pw::cross_entropy_grad_into(read(p)?, cols(p), labels, scale, out);
            }
            Kernel::Conv2d { x, w, geometry } => {
                lm::conv2d_into(&geometry, read(x)?, read(w)?, None, out);
            }
            Kernel::Conv2dGradInput { g, w, geometry } => {
                lm::conv2d_grad_input_into(&geometry, read(g)?, read(w)?, out);
            }
            Kernel::Conv2dGradWeight { g, x, geometry } => {
                lm::conv2d_grad_weight_into(&geometry, read(g)?, read(x)?, out);
            }
            Kernel::ChannelStats { x, channels } => {
                let (mean, var) = lm::channel_moments(read(x)?, channels, cols(x) / channels);
                out[..channels].copy_from_slice(&mean);
                out[channels..].copy_from_slice(&lm::inverse_std(&var));
            }
            Kernel::ChannelNormalize { x, stats, channels } => {
                let s = read(stats)?;
                let (mean, inv_std) = s.split_at(channels);
                lm::normalise_into(read(x)?, (channels, cols(x) / channels), mean, inv_std, out);
            }
            Kernel::ChannelAffine {
                x,
                gamma,
                beta,
                channels,
            } => {
                let layout = (channels, cols(x) / channels);
                lm::channel_affine_into(read(x)?, layout, read(gamma)?, read(beta)?, out);
            }
            Kernel::ChannelNormalizeGrad {
                g,
                xhat,
                gamma,
                stats,
                channels,
            } => {
                let inv_std = &read(stats)?[channels..];
                let layout = (channels, cols(g) / channels);
                let (g, xhat, gamma) = (read(g)?, read(xhat)?, read(gamma)?);
                lm::batch_norm_grad_input_into(g, xhat, layout, gamma, inv_std, (true, true), out);
            }
            Kernel::ChannelSum { g, channels } => {
                lm::channel_sums_into(read(g)?, (channels, cols(g) / channels), out);
            }
            Kernel::ChannelDot { g, xhat, channels } => {
                let layout = (channels, cols(g) / channels);
                lm::channel_dots_into(read(g)?, read(xhat)?, layout, out);
            }
            Kernel::MaxPool { x, geometry } => lm::max_pool_into(&geometry, read(x)?, out, None),
            Kernel::MaxPoolGrad { g, x, geometry } => {
                let winners = lm::window_winners(&geometry, read(x)?);
                lm::max_pool_grad_into(read(g)?, winners, out);
            }
        }
        if let Some(start) = start {
            math += start.elapsed().as_secs_f64();
        }
    }
    Ok(Replayed {
        loss: arena[layout.offsets[ir.loss]],
        grads: ir.grads.iter().map(|g| arena[range(*g)].to_vec()).collect(),
        math_seconds: math,
        launches: fused.map_or(ir.launches(), |(f, _)| f.launches_after),
    })
}

/// `out[i] = f(x[i], e(i))`, `x` being `out` itself where the kernel
/// runs in place (`None`).
fn zip_at(
    out: &mut [f32],
    x: Option<&[f32]>,
    e: impl Fn(usize) -> f32,
    f: impl Fn(f32, f32) -> f32,
) {
    match x {
        Some(x) => {
            for (i, (o, u)) in out.iter_mut().zip(x).enumerate() {
                *o = f(*u, e(i));
            }
        }
        None => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = f(*o, e(i));
            }
        }
    }
}
