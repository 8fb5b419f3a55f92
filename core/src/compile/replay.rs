//! The executor: runs a captured step ([`Ir`]) alone — no tape, no model
//! code, no shape checks past the guards, no allocation per op — into one
//! arena laid out by the memory planner ([`super::plan`]). Each kernel is
//! the engine's own math ([`crate::autograd::pointwise`], the same GEMM),
//! so a replay gives the eager step's loss and gradients bit for bit.
//!
//! A node's buffer lives from the kernel that writes it to the last kernel
//! that reads it, inclusive: a kernel never writes over its own inputs
//! (no in-place reuse yet).

use serde::Serialize;

use super::capture::{CaptureError, Ir, Kernel, rows_cols};
use super::plan::{Buffer, plan};
use crate::autograd::Real as _;
use crate::autograd::pointwise as pw;

/// Where every node's values go for one set of input shapes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Layout {
    pub shapes: Vec<Vec<usize>>,
    /// Each node's first value in the arena (f32s).
    pub offsets: Vec<usize>,
    /// The arena, f32s.
    pub arena: usize,
    /// The most f32s live at once and the sum of all buffers.
    pub max_live: usize,
    pub no_reuse: usize,
}

/// Plans the arena for inputs of `shapes` (already checked by the guards).
pub fn layout(ir: &Ir, shapes: &[&[usize]]) -> Layout {
    planned(ir, shapes, false)
}

/// [`layout`] with every buffer kept to the end: nothing reused, so every
/// node's values can be read after a run ([`value`]).
pub fn layout_keeping_all(ir: &Ir, shapes: &[&[usize]]) -> Layout {
    planned(ir, shapes, true)
}

/// Node `i`'s values in `arena` after a run laid out as `layout` (those
/// of a node whose bytes were reused since are gone: see
/// [`layout_keeping_all`]).
pub fn value<'a>(layout: &Layout, arena: &'a [f32], i: usize) -> &'a [f32] {
    let len: usize = layout.shapes[i].iter().product();
    &arena[layout.offsets[i]..layout.offsets[i] + len]
}

fn planned(ir: &Ir, shapes: &[&[usize]], keep_all: bool) -> Layout {
    let shapes = ir.shapes(shapes);
    let n = ir.nodes.len() as u32;
    let mut end: Vec<u32> = (1..=n).map(|e| if keep_all { n } else { e }).collect();
    for (i, k) in ir.nodes.iter().enumerate() {
        for input in k.inputs() {
            end[input] = end[input].max(i as u32 + 1);
        }
    }
    for out in ir.grads.iter().chain([&ir.loss]) {
        end[*out] = n;
    }
    let buffers: Vec<Buffer> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| Buffer {
            id: i as u64,
            bytes: 4 * s.iter().product::<usize>() as u64,
            first: i as u32,
            end: end[i],
        })
        .collect();
    let planned = plan(&buffers);
    let mut offsets = vec![0; shapes.len()];
    for p in &planned.placed {
        offsets[p.buffer.id as usize] = (p.offset / 4) as usize;
    }
    Layout {
        shapes,
        offsets,
        arena: (planned.arena / 4) as usize,
        max_live: (planned.max_live / 4) as usize,
        no_reuse: (planned.no_reuse / 4) as usize,
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
                let (x, y) = (read(a)?, read(b)?);
                let width = y.len().max(1);
                for (o, (i, v)) in out.iter_mut().zip(x.iter().enumerate()) {
                    *o = *v + y[i % width];
                }
            }
            Kernel::Accumulate { a, b } => {
                let (x, y) = (read(a)?, read(b)?);
                for ((o, u), v) in out.iter_mut().zip(x).zip(y) {
                    *o = *u + *v;
                }
            }
            Kernel::Relu(a) => map(out, read(a)?, pw::relu),
            Kernel::Tanh(a) => map(out, read(a)?, f32::tanh),
            Kernel::Sigmoid(a) => map(out, read(a)?, pw::sigmoid),
            Kernel::ReluGrad { g, y } => zip(out, read(g)?, read(y)?, pw::relu_grad),
            Kernel::TanhGrad { g, y } => zip(out, read(g)?, read(y)?, pw::tanh_grad),
            Kernel::SigmoidGrad { g, y } => zip(out, read(g)?, read(y)?, pw::sigmoid_grad),
            Kernel::SumRows(a) => pw::sum_rows_into(read(a)?, out),
            Kernel::Softmax(a) => pw::softmax_rows_into(read(a)?, cols(a), out),
            Kernel::CrossEntropy(a) => out[0] = pw::cross_entropy_rows(read(a)?, cols(a), labels),
            Kernel::CrossEntropyGrad(p) => {
                let scale = 1.0 / f32::from_f64(labels.len() as f64);
                pw::cross_entropy_grad_into(read(p)?, cols(p), labels, scale, out);
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
        launches: ir.launches(),
    })
}

fn map(out: &mut [f32], x: &[f32], f: impl Fn(f32) -> f32) {
    for (o, v) in out.iter_mut().zip(x) {
        *o = f(*v);
    }
}

fn zip(out: &mut [f32], x: &[f32], y: &[f32], f: impl Fn(f32, f32) -> f32) {
    for ((o, u), v) in out.iter_mut().zip(x).zip(y) {
        *o = f(*u, *v);
    }
}
