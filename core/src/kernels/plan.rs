//! A kernel's plan: the dispatches it runs for a problem on a device, and
//! the global-memory traffic each one moves.

use super::{
    Buf, COPY_WORKGROUPS, DeviceLimits, GRID_STRIDE_WORKGROUPS, Kernel, PlanError, Problem,
    ReduceKind, SoftmaxKind, Step, Traffic, WG,
};

/// A kernel's dispatches for a problem on a device.
pub fn plan(
    kernel: Kernel,
    problem: Problem,
    device: DeviceLimits,
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
