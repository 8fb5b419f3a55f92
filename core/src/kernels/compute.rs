//! Fusion and access patterns: an elementwise chain y = gelu(x·scale +
//! bias) and a LayerNorm, each as separate kernels or fused; strided reads,
//! transposes, and a per-channel sum over NCHW and NHWC tensors. Their
//! dispatches and traffic, loop counts, and CPU references in f64.

use serde::{Deserialize, Serialize};

use super::{Buf, DeviceLimits, LOOP_BUDGET, PlanError, Problem, Step, Traffic, WG};

/// The chain's constants: y = gelu(x·GELU_SCALE + GELU_BIAS).
pub const GELU_SCALE: f32 = 0.5;
pub const GELU_BIAS: f32 = 0.1;
/// LayerNorm's ε (no affine: y = (x − mean) / √(var + ε)).
pub const LAYERNORM_EPS: f32 = 1e-5;
/// Rounds of eight fused multiply-adds each FMA-roof invocation runs.
pub const FMA_ITERATIONS: u32 = 512;
/// The FMA roof's recurrence x ← x·FMA_MUL + FMA_ADD (it converges to 1).
pub const FMA_MUL: f32 = 0.9999;
pub const FMA_ADD: f32 = 1e-4;
/// The strides of the strided-read sweep.
pub const STRIDES: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// Channels of the per-channel sums.
pub const CHANNELS: u32 = 64;
/// Images in the per-channel sums' batch (fewer when the data is small).
const BATCH: u32 = 8;

/// GELU in its tanh form, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), the
/// one formula the kernels, the engine and the exercises use. The tanh's
/// argument is clamped to ±20 (where tanh is ±1 exactly in f64 and f32, and
/// a tanh computed from exp(2z) cannot overflow), so |x| up to 1e4 and
/// beyond stays finite; NaN stays NaN.
pub fn gelu(x: f64) -> f64 {
    let inner = (GELU_C * (x + GELU_A * x * x * x)).clamp(-20.0, 20.0);
    0.5 * x * (1.0 + inner.tanh())
}

/// √(2/π) to the ten digits GELU's tanh form is written with.
const GELU_C: f64 = 0.797_884_560_8;
/// The cubic term's coefficient.
const GELU_A: f64 = 0.044_715;

/// The derivative of [`gelu`]: 0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)·(1 +
/// 3·0.044715·x²), t the tanh; where the tanh's argument is clamped (it is
/// ±1 exactly there) the second term is 0, as the clamped function's slope.
pub fn gelu_derivative(x: f64) -> f64 {
    let u = GELU_C * (x + GELU_A * x * x * x);
    let t = u.clamp(-20.0, 20.0).tanh();
    let inner = if u.abs() > 20.0 {
        0.0
    } else {
        0.5 * x * (1.0 - t * t) * GELU_C * (1.0 + 3.0 * GELU_A * x * x)
    };
    0.5 * (1.0 + t) + inner
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FusionKind {
    /// x·scale, then + bias, then gelu: three kernels, two round trips
    /// through memory in between.
    GeluUnfused,
    /// The same chain in one kernel: one read, one write.
    GeluFused,
    /// Mean, variance and normalise as three kernels over the rows.
    LayerNormPasses,
    /// One kernel per row: the row kept in workgroup memory when it fits.
    LayerNormFused,
}

impl FusionKind {
    pub const ALL: [Self; 4] = [
        Self::GeluUnfused,
        Self::GeluFused,
        Self::LayerNormPasses,
        Self::LayerNormFused,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::GeluUnfused => "gelu-unfused",
            Self::GeluFused => "gelu-fused",
            Self::LayerNormPasses => "layernorm-passes",
            Self::LayerNormFused => "layernorm-fused",
        }
    }

    /// Arithmetic per element: scale 1, bias 1, gelu 9 (x³ 2, ·c 1, + x 1,
    /// ·√(2/π) 1, tanh 1, + 1 1, · x 1, · 0.5 1); LayerNorm: add for the
    /// mean; subtract, square, add for the variance; subtract, multiply.
    pub fn ops_per_element(self) -> f64 {
        match self {
            Self::GeluUnfused | Self::GeluFused => 11.0,
            Self::LayerNormPasses | Self::LayerNormFused => 6.0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AccessKind {
    /// Invocation i reads x at [`strided_source`]: neighbours `stride` apart.
    Strided(u32),
    /// Reads rows, writes columns (its writes are `rows` floats apart).
    TransposeNaive,
    /// Through a 16 × 16 tile in workgroup memory: reads and writes both
    /// along rows.
    TransposeTiled,
    /// The sum of each channel of an NCHW tensor: a channel's values lie in
    /// runs of H·W.
    ChannelNchw,
    /// The same sum over NHWC: a channel's values lie C floats apart.
    ChannelNhwc,
}

impl AccessKind {
    pub fn all() -> Vec<Self> {
        let mut all: Vec<Self> = STRIDES.iter().map(|s| Self::Strided(*s)).collect();
        all.extend([
            Self::TransposeNaive,
            Self::TransposeTiled,
            Self::ChannelNchw,
            Self::ChannelNhwc,
        ]);
        all
    }

    pub fn id(self) -> String {
        match self {
            Self::Strided(s) => format!("stride-{s}"),
            Self::TransposeNaive => "transpose-naive".to_owned(),
            Self::TransposeTiled => "transpose-tiled".to_owned(),
            Self::ChannelNchw => "channel-sum-nchw".to_owned(),
            Self::ChannelNhwc => "channel-sum-nhwc".to_owned(),
        }
    }

    pub fn is_channel_sum(self) -> bool {
        matches!(self, Self::ChannelNchw | Self::ChannelNhwc)
    }

    /// The problem for a `rows × cols` setting (see `Kernel::problem_for`).
    pub(super) fn problem_for(self, problem: Problem) -> Problem {
        let n = u32::try_from(problem.elements()).unwrap_or(u32::MAX / 4);
        match self {
            Self::Strided(_) => {
                let whole = STRIDES.iter().copied().max().unwrap_or(1);
                Problem::new(1, (n / whole * whole).max(whole))
            }
            Self::TransposeNaive | Self::TransposeTiled => problem,
            Self::ChannelNchw | Self::ChannelNhwc => {
                let per_channel = (n / CHANNELS).max(1);
                let (batch, image) = channel_batch(per_channel);
                Problem {
                    rows: CHANNELS,
                    cols: batch * image,
                    k: image,
                }
            }
        }
    }
}

/// (images, values per image and channel) for `per_channel` values of
/// each channel: [`BATCH`] images when there are enough values.
pub fn channel_batch(per_channel: u32) -> (u32, u32) {
    let batch = BATCH.min(per_channel.max(1));
    (batch, (per_channel / batch).max(1))
}

/// What FMA-roof invocation g writes, in f64 by the closed form: eight
/// chains x₀ = (g mod 1024)/1024 + j, each after `iterations` steps of
/// x ← c·x + d, is 1 + (x₀ − 1)·cⁱ when d = 1 − c, summed.
pub fn fma_reference(n: usize, iterations: u32) -> Vec<f32> {
    let c = f64::from(FMA_MUL);
    let d = f64::from(FMA_ADD);
    let fixed = d / (1.0 - c);
    let decay = c.powi(iterations as i32);
    (0..n)
        .map(|g| {
            let start = (g % 1024) as f64 / 1024.0;
            (0..8)
                .map(|j| fixed + (start + f64::from(j) - fixed) * decay)
                .sum::<f64>() as f32
        })
        .collect()
}

/// Where invocation `i` of the strided read finds its value among `n`
/// (a multiple of `stride`): a permutation, neighbours `stride` apart.
pub fn strided_source(i: u32, n: u32, stride: u32) -> u32 {
    let q = n / stride.max(1);
    (i % q) * stride + i / q
}

const SMALL_LOOPS: u64 = 2 * 8 + 2;

pub(super) fn fusion_loop_iterations(kind: FusionKind, problem: Problem) -> u64 {
    let per_row = u64::from(problem.cols).div_ceil(u64::from(WG));
    match kind {
        FusionKind::GeluUnfused | FusionKind::GeluFused => 0,
        // Each dispatch walks its row once (the fused kernel three times).
        FusionKind::LayerNormPasses => per_row + 2 + SMALL_LOOPS,
        FusionKind::LayerNormFused => 3 * (per_row + 1) + 2 * SMALL_LOOPS,
    }
}

pub(super) fn access_loop_iterations(kind: AccessKind, problem: Problem) -> u64 {
    match kind {
        AccessKind::ChannelNchw | AccessKind::ChannelNhwc => {
            u64::from(problem.cols).div_ceil(u64::from(WG)) + 2 + SMALL_LOOPS
        }
        _ => 0,
    }
}

/// Refuses a problem whose invocations would loop past the budget, naming
/// the most columns `iterations` (loop count for a number of columns) allows.
fn check_loops(
    kernel: String,
    problem: Problem,
    iterations: impl Fn(u32) -> u64,
) -> Result<(), PlanError> {
    let spent = iterations(problem.cols);
    if spent <= u64::from(LOOP_BUDGET) {
        return Ok(());
    }
    let (mut lo, mut hi) = (1u32, problem.cols);
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if iterations(mid) <= u64::from(LOOP_BUDGET) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Err(PlanError::LoopBudget {
        kernel,
        rows: problem.rows,
        cols: problem.cols,
        iterations: spent,
        budget: LOOP_BUDGET,
        largest: u64::from(lo),
    })
}

fn step(entry: &'static str, workgroups: u64, n: u32, io: (Buf, Buf), rw: (u64, u64)) -> Step {
    Step {
        entry,
        workgroups: u32::try_from(workgroups).unwrap_or(u32::MAX),
        n,
        input: io.0,
        output: io.1,
        bytes_read: 4 * rw.0,
        bytes_written: 4 * rw.1,
        aux: 0,
    }
}

fn traffic(steps: &[Step], input_passes: u32) -> Traffic {
    Traffic {
        bytes_read: steps.iter().map(|s| s.bytes_read).sum(),
        bytes_written: steps.iter().map(|s| s.bytes_written).sum(),
        input_passes,
        dispatches: steps.len() as u32,
    }
}

pub(super) fn plan_fusion(
    kind: FusionKind,
    problem: Problem,
    device: DeviceLimits,
) -> Result<(Vec<Step>, Traffic), PlanError> {
    check_loops(format!("fusion/{}", kind.id()), problem, |cols| {
        fusion_loop_iterations(kind, Problem { cols, ..problem })
    })?;
    let e = problem.elements();
    let r = u64::from(problem.rows);
    let n = e as u32;
    let flat = e.div_ceil(u64::from(WG));
    let (steps, passes) = match kind {
        FusionKind::GeluUnfused => (
            vec![
                step("fusion:scale", flat, n, (Buf::Input, Buf::PartialA), (e, e)),
                step(
                    "fusion:shift",
                    flat,
                    n,
                    (Buf::PartialA, Buf::PartialB),
                    (e, e),
                ),
                step(
                    "fusion:gelu_only",
                    flat,
                    n,
                    (Buf::PartialB, Buf::Output),
                    (e, e),
                ),
            ],
            3,
        ),
        FusionKind::GeluFused => (
            vec![step(
                "fusion:gelu_fused",
                flat,
                n,
                (Buf::Input, Buf::Output),
                (e, e),
            )],
            1,
        ),
        // One invocation of each row's workgroup loads the row's statistics.
        FusionKind::LayerNormPasses => (
            vec![
                step("layernorm:mean", r, n, (Buf::Input, Buf::Stats), (e, r)),
                step(
                    "layernorm:variance",
                    r,
                    n,
                    (Buf::Input, Buf::Stats),
                    (e + r, r),
                ),
                step(
                    "layernorm:normalize_rows",
                    r,
                    n,
                    (Buf::Input, Buf::Output),
                    (e + 2 * r, e),
                ),
            ],
            3,
        ),
        FusionKind::LayerNormFused if problem.cols <= device.cache_floats => (
            vec![step(
                "layernorm:fused_cached",
                r,
                n,
                (Buf::Input, Buf::Output),
                (e, e),
            )],
            1,
        ),
        FusionKind::LayerNormFused => (
            vec![step(
                "layernorm:fused_reread",
                r,
                n,
                (Buf::Input, Buf::Output),
                (3 * e, e),
            )],
            3,
        ),
    };
    let t = traffic(&steps, passes);
    Ok((steps, t))
}

pub(super) fn plan_access(
    kind: AccessKind,
    problem: Problem,
) -> Result<(Vec<Step>, Traffic), PlanError> {
    check_loops(format!("access/{}", kind.id()), problem, |cols| {
        access_loop_iterations(kind, Problem { cols, ..problem })
    })?;
    let e = problem.elements();
    let n = e as u32;
    let flat = e.div_ceil(u64::from(WG));
    let io = (Buf::Input, Buf::Output);
    let mut s = match kind {
        AccessKind::Strided(stride) => {
            if stride == 0 || !n.is_multiple_of(stride) {
                return Err(PlanError::StrideNotDividing { n, stride });
            }
            let mut s = step("access:strided", flat, n, io, (e, e));
            s.aux = stride;
            s
        }
        AccessKind::TransposeNaive => step("access:transpose_naive", flat, n, io, (e, e)),
        AccessKind::TransposeTiled => {
            let tiles = u64::from(problem.rows.div_ceil(16)) * u64::from(problem.cols.div_ceil(16));
            step("access:transpose_tiled", tiles, n, io, (e, e))
        }
        AccessKind::ChannelNchw | AccessKind::ChannelNhwc => {
            let entry = if kind == AccessKind::ChannelNchw {
                "access:channel_nchw"
            } else {
                "access:channel_nhwc"
            };
            let mut s = step(
                entry,
                u64::from(problem.rows),
                n,
                io,
                (e, u64::from(problem.rows)),
            );
            s.aux = problem.k.max(1);
            s
        }
    };
    if s.workgroups == u32::MAX {
        return Err(PlanError::TooLarge { elements: e });
    }
    s.n = n;
    let steps = vec![s];
    let t = traffic(&steps, 1);
    Ok((steps, t))
}

/// The chain or the LayerNorm on `rows × cols` values, in f64, rounded to f32.
pub fn fused_reference(kind: FusionKind, x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    match kind {
        FusionKind::GeluUnfused | FusionKind::GeluFused => x
            .iter()
            .map(|v| gelu(f64::from(*v) * f64::from(GELU_SCALE) + f64::from(GELU_BIAS)) as f32)
            .collect(),
        FusionKind::LayerNormPasses | FusionKind::LayerNormFused => {
            layernorm_reference(x, rows, cols)
        }
    }
}

/// (x − mean) / √(var + ε) per row, the variance the mean of squared
/// deviations (two passes in f64: no cancellation).
pub fn layernorm_reference(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows * cols);
    for row in x.chunks(cols.max(1)).take(rows) {
        let n = row.len() as f64;
        let mean = row.iter().map(|v| f64::from(*v)).sum::<f64>() / n;
        let var = row
            .iter()
            .map(|v| (f64::from(*v) - mean).powi(2))
            .sum::<f64>()
            / n;
        let inv = 1.0 / (var + f64::from(LAYERNORM_EPS)).sqrt();
        out.extend(row.iter().map(|v| ((f64::from(*v) - mean) * inv) as f32));
    }
    out
}

pub fn transpose_reference(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = x[r * cols + c];
        }
    }
    out
}

/// Each channel's sum, in f64: `nhwc` says where channel c's values are.
pub fn channel_sum_reference(x: &[f32], problem: Problem, nhwc: bool) -> Vec<f64> {
    let (c_n, per) = (problem.rows as usize, problem.cols as usize);
    let image = problem.k.max(1) as usize;
    (0..c_n)
        .map(|c| {
            (0..per)
                .map(|p| {
                    let (b, s) = (p / image, p % image);
                    let i = if nhwc {
                        p * c_n + c
                    } else {
                        (b * c_n + c) * image + s
                    };
                    f64::from(x[i])
                })
                .sum()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::{Kernel, plan};

    const DEV: DeviceLimits = crate::kernels::TEST_DEVICE;

    #[test]
    fn gelu_derivative_matches_a_central_difference() {
        for x in [-6.0, -2.5, -1.0, -0.3, 0.0, 0.2, 1.0, 3.0, 7.0] {
            let h = 1e-5;
            let numeric = (gelu(x + h) - gelu(x - h)) / (2.0 * h);
            assert!((gelu_derivative(x) - numeric).abs() < 1e-8, "{x}");
        }
        assert_eq!(gelu_derivative(1e4), 1.0);
        assert_eq!(gelu_derivative(-1e4), 0.0);
    }

    #[test]
    fn gelu_is_the_tanh_form_and_finite_far_out() {
        assert_eq!(gelu(0.0), 0.0);
        assert!((gelu(1.0) - 0.841_191_990_8).abs() < 1e-9);
        assert!((gelu(-1.0) + 0.158_808_009_2).abs() < 1e-9);
        assert_eq!(gelu(1e4), 1e4);
        assert_eq!(gelu(-1e4), 0.0);
        assert!(gelu(f64::NAN).is_nan());
    }

    #[test]
    fn fusing_the_chain_moves_a_third_of_the_bytes() {
        let p = Problem::new(1024, 1024);
        let bytes = |k| {
            plan(Kernel::Fusion(k), p, DEV)
                .map(|(_, t)| t.bytes())
                .unwrap_or(0)
        };
        assert_eq!(
            bytes(FusionKind::GeluUnfused),
            3 * bytes(FusionKind::GeluFused)
        );
        assert_eq!(bytes(FusionKind::GeluFused), 8 * 1024 * 1024);
        // LayerNorm: three reads of the input and small stats, against one.
        assert_eq!(
            bytes(FusionKind::LayerNormPasses),
            4 * (3 * 1024 * 1024 + 3 * 1024 + 1024 * 1024 + 2 * 1024)
        );
        assert_eq!(bytes(FusionKind::LayerNormFused), 8 * 1024 * 1024);
    }

    #[test]
    fn the_strided_read_is_a_permutation_with_neighbours_stride_apart() {
        for stride in STRIDES {
            let n = 64;
            let mut seen: Vec<u32> = (0..n).map(|i| strided_source(i, n, stride)).collect();
            assert_eq!(
                strided_source(1, n, stride) - strided_source(0, n, stride),
                stride
            );
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn channel_sums_find_each_channel_in_either_layout() {
        // 2 channels, 2 images of 3 values: NCHW holds image 0's channel 0,
        // then its channel 1, then image 1's.
        let p = Problem {
            rows: 2,
            cols: 6,
            k: 3,
        };
        let x: Vec<f32> = (0..12).map(|v| v as f32).collect();
        assert_eq!(
            channel_sum_reference(&x, p, false),
            vec![
                0.0 + 1.0 + 2.0 + 6.0 + 7.0 + 8.0,
                3.0 + 4.0 + 5.0 + 9.0 + 10.0 + 11.0
            ]
        );
        assert_eq!(channel_sum_reference(&x, p, true), vec![30.0, 36.0]);
        let q = Kernel::Access(AccessKind::ChannelNhwc).problem_for(Problem::new(1024, 1024));
        assert_eq!(u64::from(q.rows) * u64::from(q.cols), 1 << 20);
        assert_eq!(q.cols % q.k, 0);
    }
}
