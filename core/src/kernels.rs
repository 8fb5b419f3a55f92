//! The GPU lesson's kernels as data: which variants exist, the dispatches
//! each one runs for a problem size (its *plan*), the global-memory traffic
//! that plan moves, CPU references in f64, and the test inputs. `dlsys-shaders`
//! executes these plans; an instrumented build counts every global load and
//! store and must agree with [`Step::bytes_read`] / [`Step::bytes_written`].

use rand::{RngExt as _, SeedableRng as _};
use serde::{Deserialize, Serialize};

crate::catalog_error! {
    /// Why a kernel cannot be planned for a problem.
    pub enum PlanError {
        Empty = "plan.empty",
        TooLarge { elements: u64 } = "plan.too_large",
        CopyNotVec4 = "plan.copy_not_vec4",
        UnknownOp { name: String } = "plan.unknown_op",
    }
}

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

/// Every kernel the lesson runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Kernel {
    /// vec4 copy: the bandwidth ceiling.
    Copy,
    Softmax(SoftmaxKind),
    Reduce(ReduceKind, ReduceOp),
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
        all
    }

    /// A stable id: `copy`, `softmax/online`, `reduce-sum/sequential`.
    pub fn id(self) -> String {
        match self {
            Self::Copy => "copy".to_owned(),
            Self::Softmax(k) => format!("softmax/{}", k.id()),
            Self::Reduce(k, op) => format!("reduce-{}/{}", op.id(), k.id()),
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
    /// softmax the matrix; reductions all of its values as one row; the vec4
    /// copy the same count rounded down to whole vec4s (at least one).
    pub fn problem_for(self, problem: Problem) -> Problem {
        let n = u32::try_from(problem.elements()).unwrap_or(u32::MAX);
        match self {
            Self::Softmax(_) => problem,
            Self::Copy => Problem {
                rows: 1,
                cols: (n / 4 * 4).max(4),
            },
            Self::Reduce(..) => Problem { rows: 1, cols: n },
        }
    }

    /// Arithmetic per element (exp, max and division each count as one), for
    /// the roofline plot.
    pub fn ops_per_element(self) -> f64 {
        match self {
            Self::Copy => 0.0,
            // Σ exp, then exp and a division.
            Self::Softmax(SoftmaxKind::NaiveUnsafe) => 4.0,
            // max; subtract, exp, add; subtract, exp, divide.
            Self::Softmax(SoftmaxKind::ThreePass | SoftmaxKind::Workgroup) => 7.0,
            // The running update adds a compare and a rescale to the above.
            Self::Softmax(_) => 9.0,
            Self::Reduce(..) => 1.0,
        }
    }

    pub fn needs_subgroups(self) -> bool {
        matches!(
            self,
            Self::Softmax(SoftmaxKind::Subgroup | SoftmaxKind::SubgroupRows)
                | Self::Reduce(ReduceKind::Subgroup, _)
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

/// A problem: `rows × cols` for softmax, `cols` elements for reductions and copy (rows = 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    pub rows: u32,
    pub cols: u32,
}

impl Problem {
    pub fn elements(&self) -> u64 {
        u64::from(self.rows) * u64::from(self.cols)
    }
}

/// What a plan depends on besides the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Device {
    /// f32 the fused softmax can keep in workgroup memory.
    pub cache_floats: u32,
    /// The largest subgroup the adapter may use (rows per workgroup of the
    /// row-per-subgroup softmax are planned for it).
    pub subgroup_max: u32,
}

/// A kernel's dispatches for a problem on a device.
pub fn plan(
    kernel: Kernel,
    problem: Problem,
    device: Device,
) -> Result<(Vec<Step>, Traffic), PlanError> {
    let cache_floats = device.cache_floats;
    let Problem { rows, cols } = problem;
    if rows == 0 || cols == 0 {
        return Err(PlanError::Empty);
    }
    let elements = problem.elements();
    if elements > u64::from(u32::MAX / 4) {
        return Err(PlanError::TooLarge { elements });
    }
    let n = elements as u32;
    let bytes = |count: u64| 4 * count;
    let (r, rc) = (u64::from(rows), elements);
    let step = |entry, workgroups, input, output, read: u64, written: u64| Step {
        entry,
        workgroups,
        n,
        input,
        output,
        bytes_read: bytes(read),
        bytes_written: bytes(written),
        aux: 0,
    };
    let (steps, input_passes) = match kernel {
        Kernel::Copy => {
            if !n.is_multiple_of(4) {
                return Err(PlanError::CopyNotVec4);
            }
            (
                vec![step(
                    "copy:main",
                    (n / 4).div_ceil(WG).min(COPY_WORKGROUPS),
                    Buf::Input,
                    Buf::Output,
                    rc,
                    rc,
                )],
                1,
            )
        }
        Kernel::Softmax(kind) => match kind {
            SoftmaxKind::NaiveUnsafe => (
                vec![step(
                    "softmax_naive:main",
                    rows,
                    Buf::Input,
                    Buf::Output,
                    2 * rc,
                    rc,
                )],
                2,
            ),
            SoftmaxKind::ThreePass => (
                vec![
                    step(
                        "softmax_three_pass:row_max",
                        rows,
                        Buf::Input,
                        Buf::Stats,
                        rc,
                        r,
                    ),
                    step(
                        "softmax_three_pass:row_sum",
                        rows,
                        Buf::Input,
                        Buf::Stats,
                        rc + r,
                        r,
                    ),
                    step(
                        "softmax_three_pass:normalize",
                        rows,
                        Buf::Input,
                        Buf::Output,
                        rc + 2 * r,
                        rc,
                    ),
                ],
                3,
            ),
            SoftmaxKind::Workgroup if cols <= cache_floats => (
                vec![step(
                    "softmax_workgroup:cached",
                    rows,
                    Buf::Input,
                    Buf::Output,
                    rc,
                    rc,
                )],
                1,
            ),
            SoftmaxKind::Workgroup => (
                vec![step(
                    "softmax_workgroup:reread",
                    rows,
                    Buf::Input,
                    Buf::Output,
                    3 * rc,
                    rc,
                )],
                3,
            ),
            SoftmaxKind::Online => (
                vec![step(
                    "softmax_online:main",
                    rows,
                    Buf::Input,
                    Buf::Output,
                    2 * rc,
                    rc,
                )],
                2,
            ),
            SoftmaxKind::Subgroup => (
                vec![step(
                    "softmax_subgroup:main",
                    rows,
                    Buf::Input,
                    Buf::Output,
                    2 * rc,
                    rc,
                )],
                2,
            ),
            SoftmaxKind::SubgroupRows => {
                let per_group = (WG / device.subgroup_max.clamp(1, WG)).max(1);
                // Whole vec4s when the row allows, 16-byte loads.
                let entry = if cols.is_multiple_of(4) {
                    "softmax_subgroup_rows:main_vec4"
                } else {
                    "softmax_subgroup_rows:main"
                };
                let mut s = step(
                    entry,
                    rows.div_ceil(per_group),
                    Buf::Input,
                    Buf::Output,
                    2 * rc,
                    rc,
                );
                s.aux = per_group;
                (vec![s], 2)
            }
        },
        Kernel::Reduce(kind, _) => {
            let entry = match kind {
                ReduceKind::InterleavedDivergent => "reduce:interleaved_divergent",
                ReduceKind::InterleavedStrided => "reduce:interleaved_strided",
                ReduceKind::Sequential => "reduce:sequential",
                ReduceKind::FirstAdd => "reduce:first_add",
                ReduceKind::Unrolled => "reduce:unrolled",
                ReduceKind::GridStride => "reduce:grid_stride",
                ReduceKind::Subgroup => "reduce_subgroup:main",
            };
            // Level after level over the partials, until one value is left.
            let mut steps = Vec::new();
            let mut remaining = n;
            let mut input = Buf::Input;
            let mut output = Buf::PartialA;
            loop {
                let per = kind.elements_per_workgroup();
                let mut workgroups = remaining.div_ceil(per);
                if matches!(kind, ReduceKind::GridStride | ReduceKind::Subgroup) {
                    workgroups = workgroups.min(GRID_STRIDE_WORKGROUPS);
                }
                // The subgroup kernel reads the input as vec4 when it divides evenly.
                let entry = if kind == ReduceKind::Subgroup
                    && steps.is_empty()
                    && remaining.is_multiple_of(4)
                {
                    "reduce_subgroup:main_vec4"
                } else {
                    entry
                };
                steps.push(Step {
                    entry,
                    workgroups,
                    n: remaining,
                    input,
                    output,
                    bytes_read: bytes(u64::from(remaining)),
                    bytes_written: bytes(u64::from(workgroups)),
                    aux: 0,
                });
                if workgroups == 1 {
                    break;
                }
                remaining = workgroups;
                input = output;
                output = if output == Buf::PartialA {
                    Buf::PartialB
                } else {
                    Buf::PartialA
                };
            }
            (steps, 1)
        }
    };
    let traffic = Traffic {
        bytes_read: steps.iter().map(|s| s.bytes_read).sum(),
        bytes_written: steps.iter().map(|s| s.bytes_written).sum(),
        input_passes,
        dispatches: steps.len() as u32,
    };
    Ok((steps, traffic))
}

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
    let mut c = Comparison::default();
    for (g, w) in got.iter().zip(want) {
        c.compared += 1;
        if !w.is_finite() || !g.is_finite() {
            let same = (g.is_nan() && w.is_nan()) || g == w;
            if !same {
                c.special_mismatches += 1;
            }
            continue;
        }
        let (g, w) = (f64::from(*g), f64::from(*w));
        c.max_abs_error = c.max_abs_error.max((g - w).abs());
        c.max_rel_error = c.max_rel_error.max(relative_error(g, w));
    }
    if got.len() != want.len() {
        c.special_mismatches += got.len().abs_diff(want.len()) as u64;
    }
    c
}

/// Inputs for the kernels, each a hard case for some variant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Data {
    /// Normal-ish logits in about ±3 (uniform(0, 1) for reductions).
    #[default]
    Random,
    /// Logits of ±1e4: exp overflows unless the max is subtracted.
    HugeLogits,
    /// Some rows entirely −inf, others with a few −inf entries.
    NegInfRows,
    /// A few NaN and ±inf values sprinkled in.
    Specials,
}

impl Data {
    pub const ALL: [Self; 4] = [
        Self::Random,
        Self::HugeLogits,
        Self::NegInfRows,
        Self::Specials,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::Random => "random",
            Self::HugeLogits => "huge",
            Self::NegInfRows => "neg-inf",
            Self::Specials => "specials",
        }
    }

    /// `rows × cols` seeded values.
    pub fn generate(self, rows: usize, cols: usize, seed: u64, for_reduction: bool) -> Vec<f32> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut x: Vec<f32> = (0..rows * cols)
            .map(|_| {
                if for_reduction {
                    rng.random::<f32>()
                } else {
                    rng.random_range(-3.0f32..3.0)
                }
            })
            .collect();
        match self {
            Self::Random => {}
            Self::HugeLogits => {
                for v in &mut x {
                    *v *= 1e4 / 3.0;
                }
            }
            Self::NegInfRows => {
                for r in 0..rows {
                    let row = &mut x[r * cols..(r + 1) * cols];
                    if r % 3 == 1 {
                        row.fill(f32::NEG_INFINITY);
                    } else {
                        for v in row.iter_mut().step_by(5) {
                            *v = f32::NEG_INFINITY;
                        }
                        // Keep one finite value so the row has a maximum.
                        row[cols / 2] = rng.random_range(-3.0f32..3.0);
                    }
                }
            }
            Self::Specials => {
                for (i, v) in x.iter_mut().enumerate() {
                    match i % 997 {
                        3 => *v = f32::NAN,
                        500 => *v = f32::INFINITY,
                        700 => *v = f32::NEG_INFINITY,
                        _ => {}
                    }
                }
            }
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEV: Device = Device {
        cache_floats: 4096,
        subgroup_max: 32,
    };

    #[test]
    fn softmax_traffic_follows_the_ladder() {
        let p = Problem {
            rows: 1024,
            cols: 1024,
        };
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
            Problem {
                rows: 2,
                cols: 5000,
            },
            DEV,
        );
        assert!(wide.is_ok_and(|(s, t)| s[0].entry.ends_with("reread") && t.input_passes == 3));
    }

    #[test]
    fn reductions_finish_in_levels_down_to_one_value() {
        let p = Problem {
            rows: 1,
            cols: 1 << 24,
        };
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
            Problem { rows: 1, cols: 1 },
            DEV,
        )
        .unwrap_or_default();
        assert_eq!(one.len(), 1);
        assert!(plan(Kernel::Copy, Problem { rows: 1, cols: 0 }, DEV).is_err());
        assert!(plan(Kernel::Copy, Problem { rows: 1, cols: 6 }, DEV).is_err());
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
    }
}
