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

/// The largest problem `kernel` accepts on `device` within the loop budget,
/// with every smaller one accepted too: columns of a single row for
/// softmax, values for the others (at most `limit`, what the device's
/// buffers hold). A kernel that loops less over rows whose width is a
/// multiple of 4 (16-byte loads) accepts wider such rows:
/// [`largest_accepted_vec4`].
pub fn largest_accepted(kernel: Kernel, device: DeviceLimits, limit: u64) -> u64 {
    let fits = |n: u64| fits_budget(kernel, device, n);
    // Every width up to n: n itself, and the widest width below n that is
    // not a multiple of 4 (the slower class, where the classes differ).
    let all_fit = |n: u64| fits(n) && (n < 4 || !n.is_multiple_of(4) || fits(n - 1));
    let limit = limit.min(u64::from(u32::MAX / 4));
    if all_fit(limit) {
        // The copy's vec4 loads want a multiple of 4.
        return if kernel == Kernel::Copy {
            limit / 4 * 4
        } else {
            limit
        };
    }
    last_true(1, limit, all_fit)
}

/// Where `kernel` accepts rows wider than [`largest_accepted`] when their
/// width is a multiple of 4: the widest such row (`None` when the widths
/// share one limit).
pub fn largest_accepted_vec4(kernel: Kernel, device: DeviceLimits, limit: u64) -> Option<u64> {
    let any = largest_accepted(kernel, device, limit);
    let quads = limit.min(u64::from(u32::MAX / 4)) / 4;
    let fits = |q: u64| fits_budget(kernel, device, 4 * q);
    let widest = if fits(quads) {
        4 * quads
    } else {
        4 * last_true(1, quads, fits)
    };
    (widest > any).then_some(widest)
}

/// Whether one row of `n` columns keeps `kernel` within the loop budget.
fn fits_budget(kernel: Kernel, device: DeviceLimits, n: u64) -> bool {
    let cols = u32::try_from(n).unwrap_or(u32::MAX);
    loop_iterations(kernel, Problem::new(1, cols), device) <= u64::from(LOOP_BUDGET)
}

/// The largest x in `lo..hi` with `ok(x)`, for `ok` true up to a point and
/// false from there on (`ok(lo)` assumed, `ok(hi)` false).
fn last_true(mut lo: u64, mut hi: u64, ok: impl Fn(u64) -> bool) -> u64 {
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
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
        // The same limits whatever the width asked: the rule, not a search from it.
        let limit = u64::from(u32::MAX / 4);
        let largest = largest_accepted(kernel, device, limit);
        return Err(match largest_accepted_vec4(kernel, device, limit) {
            Some(largest_vec4) => PlanError::RowLoopBudget {
                kernel: kernel.id(),
                rows,
                cols,
                iterations,
                budget: LOOP_BUDGET,
                largest,
                largest_vec4,
            },
            None => PlanError::LoopBudget {
                kernel: kernel.id(),
                rows,
                cols,
                iterations,
                budget: LOOP_BUDGET,
                largest,
            },
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
                let per_group = device.rows_per_workgroup();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::TEST_DEVICE;

    /// The row-per-subgroup softmax loops 4× less over rows whose width is
    /// a multiple of 4: it states both limits, the same whatever width was
    /// asked, and accepts every width up to the one that applies.
    #[test]
    fn row_per_subgroup_states_one_rule_whatever_the_width() {
        let kernel = Kernel::Softmax(SoftmaxKind::SubgroupRows);
        let device = DeviceLimits {
            subgroup_min: 8,
            subgroup_max: 8,
            ..TEST_DEVICE
        };
        let limit = u64::from(u32::MAX / 4);
        let any = largest_accepted(kernel, device, limit);
        let vec4 = largest_accepted_vec4(kernel, device, limit).unwrap_or(0);
        assert!(vec4 > any && vec4.is_multiple_of(4), "{any} {vec4}");
        let accepts = |cols: u64| plan(kernel, Problem::new(1, cols as u32), device).is_ok();
        // Every width up to `any`, every multiple of 4 up to `vec4`.
        assert!(accepts(any) && accepts(any - 1) && accepts(any / 4 * 4));
        assert!(!accepts(if (any + 1).is_multiple_of(4) {
            any + 2
        } else {
            any + 1
        }));
        assert!(accepts(vec4) && !accepts(vec4 + 4) && !accepts(vec4 + 1));
        let mut stated = Vec::new();
        for cols in [vec4 + 4, vec4 + 1, any + 1, any + 2, 3 * vec4] {
            if let Err(PlanError::RowLoopBudget {
                largest,
                largest_vec4,
                ..
            }) = plan(kernel, Problem::new(1, cols as u32), device)
            {
                stated.push((largest, largest_vec4));
            }
        }
        assert_eq!(stated, vec![(any, vec4); 5]);
        // The other kernels keep one limit: every width up to it.
        let online = Kernel::Softmax(SoftmaxKind::Online);
        assert_eq!(largest_accepted_vec4(online, device, limit), None);
        let largest = largest_accepted(online, device, limit);
        assert!(plan(online, Problem::new(1, largest as u32), device).is_ok());
        assert!(plan(online, Problem::new(1, largest as u32 + 1), device).is_err());
    }
}
