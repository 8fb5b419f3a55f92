//! CPU references in f64 for the kernels, and the comparison of a kernel's
//! output with them.

use serde::Serialize;

use super::ReduceOp;

/// Row-wise softmax in f64 by the safe formula (max subtracted), rounded to
/// f32. Rows holding NaN or +inf, and rows that are all −inf, come out all
/// NaN (inf − inf poisons the sum); the kernels follow the same rule.
pub fn softmax_reference(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let has_nan = row.iter().any(|v| v.is_nan());
        let max = row
            .iter()
            .fold(f64::NEG_INFINITY, |m, v| m.max(f64::from(*v)));
        let sum: f64 = row.iter().map(|v| (f64::from(*v) - max).exp()).sum();
        for (o, v) in out[r * cols..(r + 1) * cols].iter_mut().zip(row) {
            *o = if has_nan {
                f32::NAN
            } else {
                ((f64::from(*v) - max).exp() / sum) as f32
            };
        }
    }
    out
}

/// A sum (in f64) or a NaN-propagating max.
pub fn reduce_reference(x: &[f32], op: ReduceOp) -> f64 {
    match op {
        ReduceOp::Sum => x.iter().map(|v| f64::from(*v)).sum(),
        ReduceOp::Max => x.iter().fold(f64::NEG_INFINITY, |m, v| {
            let v = f64::from(*v);
            if m.is_nan() || v.is_nan() {
                f64::NAN
            } else {
                m.max(v)
            }
        }),
    }
}

/// Relative error with a floor of 1e-30 under the reference (values below f32's
/// normal range may be flushed to zero by a GPU).
pub fn relative_error(got: f64, want: f64) -> f64 {
    if got == want || (got.is_nan() && want.is_nan()) {
        return 0.0;
    }
    (got - want).abs() / want.abs().max(1e-30)
}

/// How a kernel's output compares with the reference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Comparison {
    /// Over the elements; infinite when any element's NaN/inf pattern
    /// differs from the reference's (a NaN where 0.5 belongs is no small error).
    pub max_abs_error: f64,
    pub max_rel_error: f64,
    /// Elements where exactly one of the two is NaN (or the infinities differ).
    pub special_mismatches: u64,
    pub compared: u64,
}

impl Comparison {
    /// Within `tolerance` everywhere, with the same NaN/inf pattern.
    pub fn ok(&self, tolerance: f64) -> bool {
        self.special_mismatches == 0 && self.max_rel_error <= tolerance
    }
}

pub fn compare(got: &[f32], want: &[f32]) -> Comparison {
    compare_with_floor(got, want, 1e-30)
}

/// [`compare`] with each error relative to max(|want|, `floor`): where
/// values near 0 are the result of a cancellation, an absolute error.
pub fn compare_with_floor(got: &[f32], want: &[f32], floor: f64) -> Comparison {
    let mut c = Comparison::default();
    for (g, w) in got.iter().zip(want) {
        c.compared += 1;
        if !w.is_finite() || !g.is_finite() {
            let same = (g.is_nan() && w.is_nan()) || g == w;
            if !same {
                // NaN or inf where the reference has something else (or the
                // other way round): no finite error describes it.
                c.special_mismatches += 1;
                c.max_abs_error = f64::INFINITY;
                c.max_rel_error = f64::INFINITY;
            }
            continue;
        }
        let (g, w) = (f64::from(*g), f64::from(*w));
        c.max_abs_error = c.max_abs_error.max((g - w).abs());
        let rel = if g == w {
            0.0
        } else {
            (g - w).abs() / w.abs().max(floor)
        };
        c.max_rel_error = c.max_rel_error.max(rel);
    }
    if got.len() != want.len() {
        c.special_mismatches += got.len().abs_diff(want.len()) as u64;
    }
    c
}
