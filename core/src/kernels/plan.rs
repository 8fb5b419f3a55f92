//! A kernel's plan: the dispatches it runs for a problem on a device, and
//! the global-memory traffic each one moves.

use super::{
    Buf, COPY_WORKGROUPS, DeviceLimits, GRID_STRIDE_WORKGROUPS, Kernel, LOOP_BUDGET, PlanError,
    Problem, ReduceKind, SoftmaxKind, Step, Traffic, WG,
};

/// What a kernel's small loops add at most per invocation: two workgroup
/// tree reductions (log₂ 256 = 8 steps each) and a loop over a workgroup's
/// subgroups (at most 256).
const SMALL_LOOPS: u64 = 2 * 8 + WG as u64;

/// The most loop iterations one invocation of `kernel` runs on `problem`:
/// its loops over a row (or over the data, for grid-stride loops) plus
/// [`SMALL_LOOPS`]. Held against [`LOOP_BUDGET`] by [`plan`].
pub fn loop_iterations(kernel: Kernel, problem: Problem, device: DeviceLimits) -> u64 {
    let cols = u64::from(problem.cols);
    let n = problem.elements();
    let wg = u64::from(WG);
    let main = match kernel {
        Kernel::Copy => {
            let quads = n / 4;
            let workgroups = quads.div_ceil(wg).clamp(1, u64::from(COPY_WORKGROUPS));
            quads.div_ceil(workgroups * wg)
        }
        Kernel::Softmax(kind) => {
            let (passes, lanes) = match kind {
                SoftmaxKind::ThreePass => (1, wg),
                SoftmaxKind::Workgroup => (3, wg),
                SoftmaxKind::NaiveUnsafe | SoftmaxKind::Online | SoftmaxKind::Subgroup => (2, wg),
                SoftmaxKind::SubgroupRows => {
                    let lanes = u64::from(device.subgroup_min.clamp(1, WG));
                    (
                        2,
                        if cols.is_multiple_of(4) {
                            4 * lanes
                        } else {
                            lanes
                        },
                    )
                }
            };
            passes * cols.div_ceil(lanes)
        }
        Kernel::Gemm(kind) => return super::gemm::loop_iterations(kind, problem.k, device),
        Kernel::Fusion(kind) => return super::compute::fusion_loop_iterations(kind, problem),
        Kernel::Access(kind) => return super::compute::access_loop_iterations(kind, problem),
        Kernel::Fma => return u64::from(super::FMA_ITERATIONS) + 2,
        Kernel::Reduce(kind, _) => match kind {
            // Each invocation loads at most two values per level.
            ReduceKind::InterleavedDivergent
            | ReduceKind::InterleavedStrided
            | ReduceKind::Sequential
            | ReduceKind::FirstAdd
            | ReduceKind::Unrolled => 0,
            ReduceKind::GridStride | ReduceKind::Subgroup => {
                let workgroups = n
                    .div_ceil(u64::from(kind.elements_per_workgroup()))
                    .clamp(1, u64::from(GRID_STRIDE_WORKGROUPS));
                n.div_ceil(workgroups * wg)
            }
        },
    };
    main + SMALL_LOOPS
}

/// The largest problem `kernel` accepts on `device` within the loop budget:
/// columns of a single row for softmax, values for the others (at most
/// `limit`, what the device's buffers hold).
pub fn largest_accepted(kernel: Kernel, device: DeviceLimits, limit: u64) -> u64 {
    let fits = |n: u64| {
        let cols = u32::try_from(n).unwrap_or(u32::MAX);
        loop_iterations(kernel, Problem::new(1, cols), device) <= u64::from(LOOP_BUDGET)
    };
    let limit = limit.min(u64::from(u32::MAX / 4));
    if fits(limit) {
        // The copy's vec4 loads want a multiple of 4.
        return if kernel == Kernel::Copy {
            limit / 4 * 4
        } else {
            limit
        };
    }
    let (mut lo, mut hi) = (1, limit);
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A kernel's dispatches for a problem on a device.
pub fn plan(
    kernel: Kernel,
    problem: Problem,
    device: DeviceLimits,
) -> Result<(Vec<Step>, Traffic), PlanError> {
    let cache_floats = device.cache_floats;
    let Problem { rows, cols, .. } = problem;
    if rows == 0 || cols == 0 {
        return Err(PlanError::Empty);
    }
    let elements = problem.elements().max(kernel.input_len(problem));
    if elements > u64::from(u32::MAX / 4) {
        return Err(PlanError::TooLarge { elements });
    }

    let iterations = loop_iterations(kernel, problem, device);
    // The newer families check their own loops, with their own limits.
    let memory_bound = matches!(
        kernel,
        Kernel::Copy | Kernel::Softmax(_) | Kernel::Reduce(..)
    );
    if memory_bound && iterations > u64::from(LOOP_BUDGET) {
        return Err(PlanError::LoopBudget {
            kernel: kernel.id(),
            rows,
            cols,
            iterations,
            budget: LOOP_BUDGET,
            largest: largest_accepted(kernel, device, elements),
        });
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
        Kernel::Gemm(kind) => return super::gemm::plan(kind, problem, device),
        Kernel::Fma => return super::gemm::plan_fma(problem),
        Kernel::Fusion(kind) => return super::compute::plan_fusion(kind, problem, device),
        Kernel::Access(kind) => return super::compute::plan_access(kind, problem),
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
