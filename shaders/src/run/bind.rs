//! A run's buffers, the binding slots the kernels declare, and the recording
//! of one pass of a plan.

use std::sync::Arc;

use dlsys_core::kernels::{Buf, Kernel, MAX_WORKGROUPS_PER_DIM, Step};
use wgpu::util::DeviceExt as _;

use super::{Prepared, RunSpec};
use crate::KernelError;
use crate::plumbing::TimerKind;

/// The bindings of group 0, as `shaders/wgsl/common.wgsl` and `copy.wgsl`
/// declare them (a test holds the two to each other by name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// `params`: rows, cols, n, −inf, aux.
    Params,
    /// `x`: the step's input, as f32.
    X,
    /// `y`: the step's output, as f32.
    Y,
    /// `stats`: the three-pass softmax's per-row max and sum.
    Stats,
    /// `counters`: the instrumented build's byte counters.
    Counters,
    /// `x4`: the step's input, as vec4.
    X4,
    /// `y4`: the step's output, as vec4.
    Y4,
}

impl Slot {
    pub(crate) const ALL: [Self; 7] = [
        Self::Params,
        Self::X,
        Self::Y,
        Self::Stats,
        Self::Counters,
        Self::X4,
        Self::Y4,
    ];

    pub(crate) fn binding(self) -> u32 {
        match self {
            Self::Params => 0,
            Self::X => 1,
            Self::Y => 2,
            Self::Stats => 3,
            Self::Counters => 4,
            Self::X4 => 5,
            Self::Y4 => 6,
        }
    }

    /// The variable's name in the WGSL.
    #[cfg(test)]
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Params => "params",
            Self::X => "x",
            Self::Y => "y",
            Self::Stats => "stats",
            Self::Counters => "counters",
            Self::X4 => "x4",
            Self::Y4 => "y4",
        }
    }

    fn of(binding: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.binding() == binding)
    }
}

/// Every buffer of a run.
pub(super) struct Buffers {
    input: wgpu::Buffer,
    output: wgpu::Buffer,
    stats: wgpu::Buffer,
    partial_a: wgpu::Buffer,
    partial_b: wgpu::Buffer,
    pub(super) counters: wgpu::Buffer,
    /// One uniform block per step.
    params: Vec<wgpu::Buffer>,
}

impl Buffers {
    pub(super) fn new(
        device: &wgpu::Device,
        spec: &RunSpec,
        steps: &[Step],
        input: &[f32],
    ) -> Self {
        let storage = |label: &str, floats: u64, extra: wgpu::BufferUsages| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: floats.max(1) * 4,
                usage: wgpu::BufferUsages::STORAGE | extra,
                mapped_at_creation: false,
            })
        };
        let copy_src = wgpu::BufferUsages::COPY_SRC;
        let elements = spec.problem.elements();
        // Reductions' partials hold a value per workgroup of a level; an
        // unfused chain's intermediates hold every value.
        let chain = matches!(spec.kernel, Kernel::Fusion(_));
        let partial_len = |i: usize| {
            if chain {
                elements
            } else {
                steps.get(i).map_or(1, |s| u64::from(s.workgroups))
            }
        };
        let params = steps
            .iter()
            .map(|s| {
                let words = [
                    spec.problem.rows,
                    spec.problem.cols,
                    s.n,
                    f32::NEG_INFINITY.to_bits(),
                    s.aux,
                    0,
                    0,
                    0,
                ];
                device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("params"),
                    contents: bytemuck::cast_slice(&words),
                    usage: wgpu::BufferUsages::UNIFORM,
                })
            })
            .collect();
        Self {
            input: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("input"),
                contents: bytemuck::cast_slice(input),
                usage: wgpu::BufferUsages::STORAGE,
            }),
            output: storage("output", spec.kernel.output_len(spec.problem), copy_src),
            stats: storage(
                "stats",
                2 * u64::from(spec.problem.rows),
                wgpu::BufferUsages::empty(),
            ),
            partial_a: storage("partial a", partial_len(0).max(partial_len(2)), copy_src),
            partial_b: storage("partial b", partial_len(1).max(partial_len(3)), copy_src),
            counters: storage("counters", 2, copy_src | wgpu::BufferUsages::COPY_DST),
            params,
        }
    }

    pub(super) fn buffer(&self, b: Buf) -> &wgpu::Buffer {
        match b {
            Buf::Input => &self.input,
            Buf::Output => &self.output,
            Buf::Stats => &self.stats,
            Buf::PartialA => &self.partial_a,
            Buf::PartialB => &self.partial_b,
        }
    }

    /// The buffer that holds the result when the plan is done.
    pub(super) fn result(&self, kernel: Kernel, steps: &[Step]) -> &wgpu::Buffer {
        if matches!(kernel, Kernel::Reduce(..)) {
            self.buffer(steps.last().map_or(Buf::PartialA, |s| s.output))
        } else {
            &self.output
        }
    }

    /// The buffer bound at `slot` for step `i`.
    fn at(&self, slot: Slot, i: usize, step: &Step) -> &wgpu::Buffer {
        match slot {
            Slot::Params => &self.params[i],
            Slot::X | Slot::X4 => self.buffer(step.input),
            Slot::Y | Slot::Y4 => self.buffer(step.output),
            Slot::Stats => &self.stats,
            Slot::Counters => &self.counters,
        }
    }

    /// One bind group per step, for the pipelines given.
    pub(super) fn bind(
        &self,
        device: &wgpu::Device,
        steps: &[Step],
        pipelines: &[Arc<Prepared>],
    ) -> Result<Vec<wgpu::BindGroup>, KernelError> {
        steps
            .iter()
            .zip(pipelines)
            .enumerate()
            .map(|(i, (step, prepared))| {
                let entries = prepared
                    .bindings
                    .iter()
                    .map(|b| {
                        let slot = Slot::of(*b).ok_or_else(|| KernelError::UnknownBinding {
                            entry: step.entry.to_owned(),
                            binding: *b,
                        })?;
                        Ok(wgpu::BindGroupEntry {
                            binding: *b,
                            resource: self.at(slot, i, step).as_entire_binding(),
                        })
                    })
                    .collect::<Result<Vec<_>, KernelError>>()?;
                Ok(device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(step.entry),
                    layout: &prepared.pipeline.get_bind_group_layout(0),
                    entries: &entries,
                }))
            })
            .collect()
    }
}

/// A dispatch of `workgroups` workgroups as a grid the device takes: at most
/// [`MAX_WORKGROUPS_PER_DIM`] along x, the rest along y.
pub(super) fn grid(workgroups: u32) -> [u32; 3] {
    [
        workgroups.min(MAX_WORKGROUPS_PER_DIM),
        workgroups.div_ceil(MAX_WORKGROUPS_PER_DIM),
        1,
    ]
}

/// Records passes of a plan: each dispatch in its own pass, with timestamps
/// at its beginning and end when the timer is the GPU's.
pub(super) struct Recorder {
    groups: Vec<wgpu::BindGroup>,
    /// Each dispatch's grid.
    workgroups: Vec<[u32; 3]>,
    pub(super) query_set: Option<wgpu::QuerySet>,
    /// Timestamps per trial (two per step).
    pub(super) per_trial: u32,
}

impl Recorder {
    pub(super) fn new(
        device: &wgpu::Device,
        groups: Vec<wgpu::BindGroup>,
        workgroups: Vec<[u32; 3]>,
        trials: u32,
        timer: TimerKind,
    ) -> Self {
        let per_trial = 2 * workgroups.len() as u32;
        let query_set = matches!(timer, TimerKind::Timestamps { .. }).then(|| {
            device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("kernel timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: trials * per_trial,
            })
        });
        Self {
            groups,
            workgroups,
            query_set,
            per_trial,
        }
    }

    /// One run of the plan with `pipelines` (their bind groups: `groups`, or
    /// the recorder's own); `trial` picks the timestamp slots.
    pub(super) fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        pipelines: &[Arc<Prepared>],
        groups: Option<&[wgpu::BindGroup]>,
        trial: Option<u32>,
    ) {
        let groups = groups.unwrap_or(&self.groups);
        for (i, [x, y, z]) in self.workgroups.iter().copied().enumerate() {
            let timestamp_writes = match (&self.query_set, trial) {
                (Some(qs), Some(t)) => {
                    let q = t * self.per_trial + 2 * i as u32;
                    Some(wgpu::ComputePassTimestampWrites {
                        query_set: qs,
                        beginning_of_pass_write_index: Some(q),
                        end_of_pass_write_index: Some(q + 1),
                    })
                }
                _ => None,
            };
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes,
            });
            pass.set_pipeline(&pipelines[i].pipeline);
            pass.set_bind_group(0, &groups[i], &[]);
            pass.dispatch_workgroups(x, y, z);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{self, Variant};

    #[test]
    fn every_kernel_file_declares_the_slots_by_their_names() {
        for file in source::files() {
            for instrumented in [false, true] {
                let variant =
                    Variant::of(dlsys_core::kernels::Kernel::Copy, file, instrumented, 1024);
                let text = source::build(&variant).unwrap_or_else(|e| panic!("{e}"));
                let checked = source::check(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
                for (_, var) in checked.module.global_variables.iter() {
                    let Some(binding) = &var.binding else {
                        continue;
                    };
                    let slot = Slot::of(binding.binding).unwrap_or_else(|| {
                        panic!("{file}: binding {} has no slot", binding.binding)
                    });
                    assert_eq!(var.name.as_deref(), Some(slot.name()), "{file}");
                }
            }
        }
    }
}
