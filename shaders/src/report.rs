//! Turning a run into the row the lesson and `dlsys-lab bench kernels` show:
//! time, bytes, bandwidth against the copy kernel, error against the reference.

use dlsys_core::kernels::{
    Kernel, Problem, compare, reduce_reference, relative_error, softmax_reference,
};
use serde::{Serialize, Serializer};

use crate::RunOutput;
use crate::plumbing::TimerKind;

/// A kernel as its stable id (`softmax/online`) in JSON.
pub fn kernel_id<S: Serializer>(kernel: &Kernel, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&kernel.id())
}

pub(crate) fn timer_label<S: Serializer>(timer: &TimerKind, s: S) -> Result<S::Ok, S::Error> {
    use dlsys_core::names::Named as _;
    s.serialize_str(&timer.name(dlsys_core::text::Lang::En))
}

/// One variant's numbers.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    #[serde(serialize_with = "kernel_id")]
    pub kernel: Kernel,
    /// The problem this run had (its plots use it, whatever the settings say now).
    pub problem: Problem,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Median time of each dispatch, when timed inside the pass.
    pub dispatch_ms: Vec<f64>,
    pub bytes: u64,
    pub input_passes: u32,
    pub dispatches: u32,
    pub gb_per_s: f64,
    /// Effective bandwidth as a fraction of the copy kernel's, same run.
    pub fraction_of_copy: Option<f64>,
    /// Infinite when an output is NaN or inf where the reference is not
    /// (an overflowed kernel); JSON writes that as `null`.
    pub max_abs_error: f64,
    pub max_rel_error: f64,
    /// Elements whose NaN/inf pattern differs from the reference.
    pub special_mismatches: u64,
    pub ok: bool,
    #[serde(serialize_with = "timer_label")]
    pub timer: TimerKind,
}

impl Row {
    /// (arithmetic intensity in ops/byte, throughput in Gop/s) for the
    /// roofline, from this run's own problem; `None` for the copy kernel.
    pub fn roofline_point(&self) -> Option<(f64, f64)> {
        roofline_point(self.kernel, self.problem, self.bytes, self.median_ms)
    }

    /// GFLOP/s, for a kernel that does arithmetic.
    pub fn gflops(&self) -> Option<f64> {
        let ops = self.kernel.ops(self.problem);
        (ops > 0.0 && self.median_ms > 0.0).then(|| ops / (self.median_ms * 1e6))
    }
}

/// (ops per byte, Gop/s) of `kernel` on `problem`, moving `bytes` in `ms`;
/// `None` for the copy kernel (no arithmetic).
pub fn roofline_point(kernel: Kernel, problem: Problem, bytes: u64, ms: f64) -> Option<(f64, f64)> {
    let work = kernel.ops(problem);
    if work == 0.0 || bytes == 0 {
        return None;
    }
    Some((work / bytes as f64, work / (ms * 1e6)))
}

/// What the plots need of one measured kernel, timed on the GPU or (the
/// CPU path) its reference timed on the CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// The hand-written kernel; `None` for a program (a generated kernel).
    pub kernel: Option<Kernel>,
    /// Its name on the plots, and its family (its colour).
    pub id: String,
    pub family: dlsys_core::kernels::Family,
    pub gb_per_s: f64,
    pub roofline: Option<(f64, f64)>,
    /// Timed on the CPU (no compute GPU): the plots say so.
    pub on_cpu: bool,
}

/// Softmax: relative error ≤ 1e-5 with the same NaN pattern; sums: ≤ 1e-5; max: exact.
pub const TOLERANCE: f64 = 1e-5;

/// What `kernel`'s error is held to: the relative error of each value
/// (a GEMM's: relative to Σₖ|aᵢₖ|·|bₖⱼ|, fusion's: to max(|want|, 1)).
pub fn tolerance(kernel: Kernel) -> f64 {
    match kernel {
        Kernel::Reduce(_, dlsys_core::kernels::ReduceOp::Max) => 0.0,
        Kernel::Gemm(_) => dlsys_core::kernels::GEMM_TOLERANCE,
        // 512 rounded steps of a recurrence: a few ulp each.
        Kernel::Fma => 1e-4,
        _ => TOLERANCE,
    }
}

/// What a kernel's output is checked against (computed once per input).
#[derive(Clone, Debug)]
pub enum Reference {
    /// Copy, softmax, transposes, fusion: the expected output, element by element.
    Values(Vec<f32>),
    /// The same, each error relative to max(|want|, `floor`).
    Floored(Vec<f32>, f64),
    /// A reduction: the expected value.
    Scalar(f64),
    /// A GEMM: C in f64 and the bound's scale per element.
    Gemm(dlsys_core::kernels::GemmReference),
}

impl Reference {
    /// The reference for `kernel` on `input` (the CPU work happens here).
    pub fn compute(kernel: Kernel, input: &[f32], problem: dlsys_core::kernels::Problem) -> Self {
        use dlsys_core::kernels::{self as k, AccessKind};
        let (rows, cols) = (problem.rows as usize, problem.cols as usize);
        match kernel {
            Kernel::Copy => Self::Values(input.to_vec()),
            Kernel::Softmax(_) => Self::Values(softmax_reference(input, rows, cols)),
            Kernel::Reduce(_, op) => Self::Scalar(reduce_reference(input, op)),
            Kernel::Gemm(_) => Self::Gemm(k::gemm_reference(input, problem)),
            // Near 0 a relative error says little: GELU(x) for x ≈ −3 is
            // 1 − tanh's cancellation; held to 1e-5 of max(|y|, 1).
            Kernel::Fusion(kind) => Self::Floored(k::fused_reference(kind, input, rows, cols), 1.0),
            Kernel::Fma => Self::Values(k::fma_reference(cols, k::FMA_ITERATIONS)),
            Kernel::Access(kind) => Self::Values(match kind {
                AccessKind::Strided(stride) => {
                    let n = input.len() as u32;
                    (0..n)
                        .map(|i| input[k::strided_source(i, n, stride) as usize])
                        .collect()
                }
                AccessKind::TransposeNaive | AccessKind::TransposeTiled => {
                    k::transpose_reference(input, rows, cols)
                }
                AccessKind::ChannelNchw | AccessKind::ChannelNhwc => {
                    k::channel_sum_reference(input, problem, kind == AccessKind::ChannelNhwc)
                        .into_iter()
                        .map(|v| v as f32)
                        .collect()
                }
            }),
        }
    }
}

/// Summarises a run against its reference.
pub fn row(out: &RunOutput, reference: &Reference, copy_gb_per_s: Option<f64>) -> Row {
    let (max_abs_error, max_rel_error, special_mismatches) = match reference {
        Reference::Values(want) => {
            let c = compare(&out.output, want);
            (c.max_abs_error, c.max_rel_error, c.special_mismatches)
        }
        Reference::Floored(want, floor) => {
            let c = dlsys_core::kernels::compare_with_floor(&out.output, want, *floor);
            (c.max_abs_error, c.max_rel_error, c.special_mismatches)
        }
        Reference::Gemm(reference) => {
            let c = reference.compare(&out.output);
            (c.max_abs_error, c.max_rel_error, c.special_mismatches)
        }
        Reference::Scalar(want) => {
            let want = *want;
            let got = out.output.first().map_or(f64::NAN, |v| f64::from(*v));
            // The same rule as `compare`: a special value on either side
            // must be matched exactly (NaN by NaN).
            let matched = got == want
                || (got.is_finite() && want.is_finite())
                || (got.is_nan() && want.is_nan());
            let special = u64::from(!matched);
            let finite = got.is_finite() && want.is_finite();
            // A NaN or inf that the reference does not have is an infinite
            // error, never 0 (matching specials are no error).
            let (abs, rel) = if finite {
                ((got - want).abs(), relative_error(got, want))
            } else if special > 0 {
                (f64::INFINITY, f64::INFINITY)
            } else {
                (0.0, 0.0)
            };
            (abs, rel, special)
        }
    };
    let tolerance = tolerance(out.spec.kernel);
    let (min, max) = out.spread_ns();
    let gb = out.effective_gb_per_s();
    Row {
        kernel: out.spec.kernel,
        problem: out.spec.problem,
        median_ms: out.median_ns() / 1e6,
        min_ms: min / 1e6,
        max_ms: max / 1e6,
        dispatch_ms: out.step_median_ns().iter().map(|ns| ns / 1e6).collect(),
        bytes: out.traffic.bytes(),
        input_passes: out.traffic.input_passes,
        dispatches: out.traffic.dispatches,
        gb_per_s: gb,
        fraction_of_copy: copy_gb_per_s.map(|c| gb / c),
        max_abs_error,
        max_rel_error,
        special_mismatches,
        ok: special_mismatches == 0 && max_rel_error <= tolerance,
        timer: out.timer,
    }
}
