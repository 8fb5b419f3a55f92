//! The GPU lesson's kernels as data: which variants exist, the dispatches
//! each one runs for a problem size (its *plan*), the global-memory traffic
//! that plan moves, CPU references in f64, and the test inputs. `dlsys-shaders`
//! executes these plans; an instrumented build counts every global load and
//! store and must agree with [`Step::bytes_read`] / [`Step::bytes_written`].

use serde::{Deserialize, Serialize};

pub mod attention;
mod compute;
mod data;
mod gemm;
mod plan;
mod reference;
pub mod sectors;

pub use compute::{
    AccessKind, CHANNELS, FMA_ADD, FMA_ITERATIONS, FMA_MUL, FusionKind, GELU_BIAS, GELU_SCALE,
    LAYERNORM_EPS, STRIDES, channel_batch, channel_sum_reference, fma_reference, fused_reference,
    gelu, gelu_derivative, layernorm_reference, strided_source, transpose_reference,
};
pub use data::Data;
pub use gemm::{
    BLOCK, Block, GEMM_TOLERANCE, GemmKind, GemmReference, TILE, Tile, gemm_b_offset, gemm_inputs,
    gemm_reference, largest_gemm_k,
};
pub use plan::{largest_accepted, largest_accepted_vec4, loop_iterations, plan};
pub use reference::{
    Comparison, compare, compare_with_floor, reduce_reference, relative_error, softmax_reference,
};

crate::catalog_error! {
    /// Why a kernel cannot be planned for a problem.
    pub enum PlanError {
        Empty = "plan.empty",
        TooLarge { elements: u64 } = "plan.too_large",
        CopyNotVec4 = "plan.copy_not_vec4",
        UnknownOp { name: String } = "plan.unknown_op",
        /// An invocation would loop more often than drivers allow.
        LoopBudget { kernel: String, rows: u32, cols: u32, iterations: u64, budget: u32, largest: u64 } = "plan.loop_budget",
        /// The same for a kernel that takes wider rows when their width is a multiple of 4.
        RowLoopBudget { kernel: String, rows: u32, cols: u32, iterations: u64, budget: u32, largest: u64, largest_vec4: u64 } = "plan.row_loop_budget",
        /// A GEMM whose inner dimension K would loop past the budget.
        GemmTooDeep { kernel: String, k: u32, iterations: u64, budget: u32, largest: u32 } = "plan.gemm_too_deep",
        /// The subgroup GEMM's traffic depends on a subgroup size the adapter does not fix.
        SubgroupSizeVaries { min: u32, max: u32 } = "plan.subgroup_size_varies",
        StrideNotDividing { n: u32, stride: u32 } = "plan.stride_not_dividing",
    }
}

/// The most loop iterations one invocation of a kernel may run, all its
/// loops together. The software Vulkan driver (llvmpipe) silently ends an
/// invocation's loops once 65,535 are spent, one allowance for all loops in
/// which every iteration and every loop exit costs one (`shaders/tests/
/// loop_budget.rs` measures it), so a kernel past it returns wrong numbers;
/// plans refuse such sizes instead, on every device alike.
pub const LOOP_BUDGET: u32 = 65_000;

/// Invocations per workgroup: WebGPU's default limit, so every browser runs it.
pub const WG: u32 = 256;
/// Workgroups of the grid-stride copy.
pub const COPY_WORKGROUPS: u32 = 1024;
/// Workgroups in a grid-stride reduction's first level.
pub const GRID_STRIDE_WORKGROUPS: u32 = 256;
/// Workgroups per dispatch dimension (WebGPU's limit); more wrap into y.
pub const MAX_WORKGROUPS_PER_DIM: u32 = 65_535;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SoftmaxKind {
    /// exp(x)/Σexp(x): no max subtracted; overflows on large logits.
    NaiveUnsafe,
    /// Max, sum of exp, normalise: three dispatches, three reads of the row.
    ThreePass,
    /// One fused dispatch, row cached in workgroup memory when it fits.
    Workgroup,
    /// Online softmax: running max and rescaled sum in one pass, then normalise.
    Online,
    /// Online softmax with subgroup reductions.
    Subgroup,
    /// One subgroup per row: online softmax with no workgroup barrier at all.
    SubgroupRows,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReduceKind {
    InterleavedDivergent,
    InterleavedStrided,
    Sequential,
    FirstAdd,
    Unrolled,
    GridStride,
    Subgroup,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReduceOp {
    Sum,
    Max,
}

/// Every kernel the GPU lessons run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Kernel {
    /// vec4 copy: the bandwidth ceiling.
    Copy,
    Softmax(SoftmaxKind),
    Reduce(ReduceKind, ReduceOp),
    /// C = A·B, f32, `rows × k` by `k × cols`.
    Gemm(GemmKind),
    /// An elementwise chain or a LayerNorm, as separate kernels or fused.
    Fusion(FusionKind),
    /// Access patterns and layouts: strided reads, transposes, NCHW/NHWC.
    Access(AccessKind),
    /// Chains of fused multiply-adds in registers: the compute roof.
    Fma,
}

/// The kernels' families: how the lessons and `bench kernels --family`
/// group them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Family {
    Copy,
    Softmax,
    Reduce,
    Gemm,
    Fusion,
    Access,
    Compute,
    /// Attention's rungs, raced as programs.
    Attention,
}

impl Family {
    pub const ALL: [Self; 8] = [
        Self::Copy,
        Self::Softmax,
        Self::Reduce,
        Self::Gemm,
        Self::Fusion,
        Self::Access,
        Self::Compute,
        Self::Attention,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::Copy => "copy",
            Self::Softmax => "softmax",
            Self::Reduce => "reduce",
            Self::Gemm => "gemm",
            Self::Fusion => "fusion",
            Self::Access => "access",
            Self::Compute => "compute",
            Self::Attention => "attention",
        }
    }
}

impl SoftmaxKind {
    pub const ALL: [Self; 6] = [
        Self::NaiveUnsafe,
        Self::ThreePass,
        Self::Workgroup,
        Self::Online,
        Self::Subgroup,
        Self::SubgroupRows,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::NaiveUnsafe => "naive",
            Self::ThreePass => "three-pass",
            Self::Workgroup => "workgroup",
            Self::Online => "online",
            Self::Subgroup => "subgroup",
            Self::SubgroupRows => "row-per-subgroup",
        }
    }

    /// The variant for rows of `cols` when none is asked for: one subgroup
    /// per row (many rows to a workgroup) for rows narrower than a
    /// workgroup, where the adapter has subgroup operations; else online
    /// softmax, a workgroup per row. A workgroup per narrow row leaves most
    /// of its invocations idle, and on a CPU adapter each workgroup costs
    /// tens of microseconds: 2²⁴ rows of 1 took over 500 s that way.
    pub fn for_width(cols: u32, subgroups: bool) -> Self {
        if subgroups && cols < WG {
            Self::SubgroupRows
        } else {
            Self::Online
        }
    }

    /// Whether it runs one workgroup per row.
    pub fn workgroup_per_row(self) -> bool {
        self != Self::SubgroupRows
    }
}

impl ReduceKind {
    pub const ALL: [Self; 7] = [
        Self::InterleavedDivergent,
        Self::InterleavedStrided,
        Self::Sequential,
        Self::FirstAdd,
        Self::Unrolled,
        Self::GridStride,
        Self::Subgroup,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::InterleavedDivergent => "divergent",
            Self::InterleavedStrided => "strided",
            Self::Sequential => "sequential",
            Self::FirstAdd => "first-add",
            Self::Unrolled => "unrolled",
            Self::GridStride => "grid-stride",
            Self::Subgroup => "subgroup",
        }
    }

    /// Elements one workgroup consumes in the first level (grid-stride: all).
    fn elements_per_workgroup(self) -> u32 {
        // Grid-stride kernels also start from one element per thread; the
        // plan caps their workgroups instead.
        if matches!(self, Self::FirstAdd | Self::Unrolled) {
            2 * WG
        } else {
            WG
        }
    }
}

impl ReduceOp {
    pub fn id(self) -> &'static str {
        match self {
            Self::Sum => "sum",
            Self::Max => "max",
        }
    }

    pub const ALL: [Self; 2] = [Self::Sum, Self::Max];

    pub fn by_name(name: &str) -> Result<Self, PlanError> {
        Self::ALL
            .into_iter()
            .find(|op| op.id() == name)
            .ok_or_else(|| PlanError::UnknownOp {
                name: name.to_owned(),
            })
    }
}

impl Kernel {
    /// Every kernel, softmax and both reduction ops included.
    pub fn all() -> Vec<Self> {
        let mut all = vec![Self::Copy];
        all.extend(SoftmaxKind::ALL.map(Self::Softmax));
        for op in [ReduceOp::Sum, ReduceOp::Max] {
            all.extend(ReduceKind::ALL.map(|k| Self::Reduce(k, op)));
        }
        all.extend(GemmKind::EVERY.map(Self::Gemm));
        all.extend(FusionKind::ALL.map(Self::Fusion));
        all.extend(AccessKind::all().into_iter().map(Self::Access));
        all.push(Self::Fma);
        all
    }

    /// A stable id: `copy`, `softmax/online`, `reduce-sum/sequential`,
    /// `gemm/tiled-16`, `fusion/gelu-fused`, `access/stride-4`, `fma`.
    pub fn id(self) -> String {
        match self {
            Self::Copy => "copy".to_owned(),
            Self::Softmax(k) => format!("softmax/{}", k.id()),
            Self::Reduce(k, op) => format!("reduce-{}/{}", op.id(), k.id()),
            Self::Gemm(k) => format!("gemm/{}", k.id()),
            Self::Fusion(k) => format!("fusion/{}", k.id()),
            Self::Access(k) => format!("access/{}", k.id()),
            Self::Fma => "fma".to_owned(),
        }
    }

    pub fn family(self) -> Family {
        match self {
            Self::Copy => Family::Copy,
            Self::Softmax(_) => Family::Softmax,
            Self::Reduce(..) => Family::Reduce,
            Self::Gemm(_) => Family::Gemm,
            Self::Fusion(_) => Family::Fusion,
            Self::Access(_) => Family::Access,
            Self::Fma => Family::Compute,
        }
    }

    /// The kernel whose [`Kernel::id`] is `id`.
    pub fn from_id(id: &str) -> Option<Self> {
        Self::all().into_iter().find(|k| k.id() == id)
    }

    /// Whether a wrong answer is this kernel's lesson rather than a bug: the
    /// naive softmax overflows on large logits by design.
    pub fn expected_to_overflow(self) -> bool {
        self == Self::Softmax(SoftmaxKind::NaiveUnsafe)
    }

    /// The problem this kernel's family runs for a `rows × cols` setting:
    /// softmax, fusion and transposes the matrix; reductions all of its
    /// values as one row; the vec4 copy the same count rounded down to whole
    /// vec4s (at least one); strided reads a multiple of every stride; the
    /// per-channel sums [`CHANNELS`] channels of a batch; the FMA roof one
    /// invocation per value. A GEMM's shape is its own (M, N, K): it is
    /// returned unchanged.
    pub fn problem_for(self, problem: Problem) -> Problem {
        let n = u32::try_from(problem.elements()).unwrap_or(u32::MAX);
        match self {
            Self::Softmax(_) | Self::Gemm(_) | Self::Fusion(_) => problem,
            Self::Access(kind) => kind.problem_for(problem),
            Self::Copy => Problem::new(1, (n / 4 * 4).max(4)),
            Self::Reduce(..) | Self::Fma => Problem::new(1, n),
        }
    }

    /// Arithmetic per element (exp, max and division each count as one), for
    /// the roofline plot of the memory-bound families.
    pub fn ops_per_element(self) -> f64 {
        match self {
            Self::Copy | Self::Access(_) => 0.0,
            // Σ exp, then exp and a division.
            Self::Softmax(SoftmaxKind::NaiveUnsafe) => 4.0,
            // max; subtract, exp, add; subtract, exp, divide.
            Self::Softmax(SoftmaxKind::ThreePass | SoftmaxKind::Workgroup) => 7.0,
            // The running update adds a compare and a rescale to the above.
            Self::Softmax(_) => 9.0,
            Self::Reduce(..) => 1.0,
            Self::Fusion(kind) => kind.ops_per_element(),
            // Not per element: `ops` counts a GEMM's 2·M·N·K.
            Self::Gemm(_) => 0.0,
            Self::Fma => 2.0 * 8.0 * f64::from(FMA_ITERATIONS),
        }
    }

    /// The arithmetic of one run on `problem` (a GEMM: 2·M·N·K flops).
    pub fn ops(self, problem: Problem) -> f64 {
        match self {
            Self::Gemm(_) => {
                2.0 * f64::from(problem.rows) * f64::from(problem.cols) * f64::from(problem.k)
            }
            _ => self.ops_per_element() * problem.elements() as f64,
        }
    }

    /// The values the kernel reads as input: a GEMM's A (padded to whole
    /// vec4s) then B in one buffer, one unused value for the FMA roof (it
    /// reads nothing), the problem's values otherwise.
    pub fn input_len(self, problem: Problem) -> u64 {
        match self {
            // Saturating: a size past u64 is refused as too large anyway.
            Self::Gemm(_) => gemm_b_offset(problem)
                .saturating_add(u64::from(problem.k) * u64::from(problem.cols)),
            Self::Fma => 1,
            _ => problem.elements(),
        }
    }

    /// The values the kernel writes as its result.
    pub fn output_len(self, problem: Problem) -> u64 {
        match self {
            Self::Reduce(..) => 1,
            Self::Access(kind) if kind.is_channel_sum() => u64::from(problem.rows),
            _ => problem.elements(),
        }
    }

    pub fn needs_subgroups(self) -> bool {
        matches!(
            self,
            Self::Softmax(SoftmaxKind::Subgroup | SoftmaxKind::SubgroupRows)
                | Self::Reduce(ReduceKind::Subgroup, _)
                | Self::Gemm(GemmKind::Subgroup)
        )
    }
}

/// Which buffer a step reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Buf {
    Input,
    Output,
    /// Per-row max and sum of the three-pass softmax.
    Stats,
    PartialA,
    PartialB,
}

/// The roofline model: what a kernel of a given arithmetic intensity can
/// attain under a memory roof (bandwidth × intensity) and a compute roof
/// (the peak). Any consistent units: GFLOP/s with GB/s, TFLOP/s with TB/s.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Roofline {
    pub peak: f64,
    pub bandwidth: f64,
}

impl Roofline {
    /// The memory roof at `intensity` (operations per byte).
    pub fn memory_roof(&self, intensity: f64) -> f64 {
        self.bandwidth * intensity
    }

    /// min(peak, bandwidth × intensity).
    pub fn attainable(&self, intensity: f64) -> f64 {
        self.memory_roof(intensity).min(self.peak)
    }

    /// Whether the memory roof is the lower one at `intensity`.
    pub fn is_memory_bound(&self, intensity: f64) -> bool {
        self.memory_roof(intensity) < self.peak
    }

    /// The intensity where the roofs meet (the ridge point).
    pub fn ridge(&self) -> f64 {
        self.peak / self.bandwidth
    }
}

/// One dispatch of a plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// `file:entry_point` of the WGSL that runs.
    pub entry: &'static str,
    pub workgroups: u32,
    /// Elements the step works on (`params.n`; rows × cols for softmax).
    pub n: u32,
    pub input: Buf,
    pub output: Buf,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Kernel-specific parameter (`params.aux`): rows per workgroup for the
    /// row-per-subgroup softmax.
    pub aux: u32,
}

/// What a whole plan moves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Traffic {
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// How many times the input is read end to end.
    pub input_passes: u32,
    pub dispatches: u32,
}

impl Traffic {
    pub fn bytes(&self) -> u64 {
        self.bytes_read + self.bytes_written
    }
}

/// A problem: `rows × cols` for softmax, `cols` elements for reductions and
/// copy (rows = 1); for a GEMM C = A·B, M = `rows`, N = `cols` and the inner
/// dimension `k` (0 for every other kernel); for the per-channel sums
/// `rows` channels of `cols` values each, `k` per image (a batch of
/// `cols / k` images).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Problem {
    pub rows: u32,
    pub cols: u32,
    #[serde(default)]
    pub k: u32,
}

impl Problem {
    pub const fn new(rows: u32, cols: u32) -> Self {
        Self { rows, cols, k: 0 }
    }

    /// C (m × n) = A (m × k) · B (k × n).
    pub const fn gemm(m: u32, n: u32, k: u32) -> Self {
        Self {
            rows: m,
            cols: n,
            k,
        }
    }

    /// `rows × cols`: a GEMM's C, every other kernel's input.
    pub fn elements(&self) -> u64 {
        u64::from(self.rows) * u64::from(self.cols)
    }
}

/// What a plan depends on besides the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceLimits {
    /// f32 the fused softmax can keep in workgroup memory.
    pub cache_floats: u32,
    /// The largest subgroup the adapter may use (rows per workgroup of the
    /// row-per-subgroup softmax are planned for it).
    pub subgroup_max: u32,
    /// The smallest: a subgroup that small loops longest over a row.
    pub subgroup_min: u32,
}

impl DeviceLimits {
    /// Rows the row-per-subgroup softmax takes per workgroup (one per subgroup).
    pub fn rows_per_workgroup(self) -> u32 {
        (WG / self.subgroup_max.clamp(1, WG)).max(1)
    }

    /// What the CPU path and tests assume when there is no adapter to ask.
    pub const TYPICAL: Self = Self {
        cache_floats: 4096 - WG,
        subgroup_max: 32,
        subgroup_min: 32,
    };
}

/// The device the core's plan tests assume: 4096 floats of row cache,
/// subgroups of 32.
#[cfg(test)]
pub(crate) const TEST_DEVICE: DeviceLimits = DeviceLimits {
    cache_floats: 4096,
    subgroup_max: 32,
    subgroup_min: 32,
};

#[cfg(test)]
mod tests {
    use super::*;

    const DEV: DeviceLimits = TEST_DEVICE;

    #[test]
    fn softmax_traffic_follows_the_ladder() {
        let p = Problem::new(1024, 1024);
        let traffic = |k| {
            plan(Kernel::Softmax(k), p, DEV)
                .map(|(_, t)| t)
                .unwrap_or_default()
        };
        let per_elem = |k| traffic(k).bytes() as f64 / p.elements() as f64;
        // 3 reads + 1 write (plus per-row stats) vs 2 + 1 vs 1 + 1.
        assert!((per_elem(SoftmaxKind::ThreePass) - 16.0).abs() < 0.1);
        assert_eq!(per_elem(SoftmaxKind::Online), 12.0);
        assert_eq!(per_elem(SoftmaxKind::Workgroup), 8.0);
        assert_eq!(traffic(SoftmaxKind::ThreePass).dispatches, 3);
        // A row that does not fit in workgroup memory falls back to re-reading.
        let wide = plan(
            Kernel::Softmax(SoftmaxKind::Workgroup),
            Problem::new(2, 5000),
            DEV,
        );
        assert!(wide.is_ok_and(|(s, t)| s[0].entry.ends_with("reread") && t.input_passes == 3));
    }

    #[test]
    fn reductions_finish_in_levels_down_to_one_value() {
        let p = Problem::new(1, 1 << 24);
        let (steps, t) = plan(
            Kernel::Reduce(ReduceKind::Sequential, ReduceOp::Sum),
            p,
            DEV,
        )
        .unwrap_or_default();
        let counts: Vec<u32> = steps.iter().map(|s| s.workgroups).collect();
        assert_eq!(counts, vec![65536, 256, 1]);
        assert_eq!(t.bytes_read, 4 * (65536 * 256 + 65536 + 256));
        let (steps, _) = plan(
            Kernel::Reduce(ReduceKind::GridStride, ReduceOp::Max),
            p,
            DEV,
        )
        .unwrap_or_default();
        assert_eq!(
            steps.iter().map(|s| s.workgroups).collect::<Vec<_>>(),
            vec![256, 1]
        );
        let (one, _) = plan(
            Kernel::Reduce(ReduceKind::FirstAdd, ReduceOp::Sum),
            Problem::new(1, 1),
            DEV,
        )
        .unwrap_or_default();
        assert_eq!(one.len(), 1);
        assert!(plan(Kernel::Copy, Problem::new(1, 0), DEV).is_err());
        assert!(plan(Kernel::Copy, Problem::new(1, 6), DEV).is_err());
    }

    #[test]
    fn references_follow_the_documented_special_rules() {
        let x = [
            1.0f32,
            2.0,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            0.0,
            f32::INFINITY,
            1.0,
        ];
        let y = softmax_reference(&x, 4, 2);
        assert!((y[0] + y[1] - 1.0).abs() < 1e-6);
        assert!(y[2].is_nan() && y[3].is_nan(), "all −inf row");
        assert!(y[4].is_nan() && y[5].is_nan(), "NaN row");
        assert!(
            y[6].is_nan() && y[7].is_nan(),
            "+inf row: inf − inf is NaN, so is the sum"
        );
        assert!(reduce_reference(&[1.0, f32::NAN, 3.0], ReduceOp::Max).is_nan());
        assert_eq!(reduce_reference(&[1.0, 5.0, 3.0], ReduceOp::Max), 5.0);
        let huge = softmax_reference(&[1e4, -1e4], 1, 2);
        assert_eq!(huge, vec![1.0, 0.0]);
    }

    #[test]
    fn comparison_counts_special_mismatches() {
        let c = compare(&[1.0, f32::NAN, 0.5], &[1.0, f32::NAN, 0.5000001]);
        assert!(c.ok(1e-5));
        let bad = compare(&[f32::NAN, 1.0], &[0.5, 1.0]);
        assert_eq!(bad.special_mismatches, 1);
        assert!(!bad.ok(1.0));
        // A non-finite output against a finite reference is no error of 0.
        assert!(bad.max_rel_error.is_infinite() && bad.max_abs_error.is_infinite());
        let overflowed = compare(&[f32::INFINITY, 0.25], &[1.0, 0.25]);
        assert!(overflowed.max_rel_error.is_infinite());
        // Matching NaNs (a row of −inf) are no error at all.
        assert!(c.max_rel_error < 1e-5);
    }
}
