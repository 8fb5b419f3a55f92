//! Running a kernel's plan on the GPU: pipelines (cached, each created inside
//! its own error scope), buffers and bindings ([`bind`]), timed trials and an
//! optional instrumented run that counts every global load and store, and
//! readback polled without blocking ([`job`]; the web has no blocking wait).

mod bind;
mod job;
pub mod program;

use std::collections::HashMap;
use std::sync::Arc;

use dlsys_core::kernels::{DeviceLimits, Kernel, Problem, Step, Traffic, WG, plan};
use serde::Serialize;

pub use job::Job;

use crate::plumbing::{Scopes, TimerKind, median};
use crate::source::{self, Variant};
use crate::{Gpu, KernelError};

/// What to run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunSpec {
    pub kernel: Kernel,
    pub problem: Problem,
    pub warmup: u32,
    pub trials: u32,
    /// Also run the instrumented build once and report its byte counts.
    pub instrumented: bool,
}

/// The result of a run.
#[derive(Clone, Debug, Serialize)]
pub struct RunOutput {
    pub spec: RunSpec,
    /// The kernel's output: the softmax or copy, or the one reduced value.
    pub output: Vec<f32>,
    /// The same output as the 32-bit words the GPU wrote (integer outputs
    /// are read from here, bit for bit).
    pub words: Vec<u32>,
    /// Time of each trial, in nanoseconds.
    pub trial_ns: Vec<f64>,
    /// Time of each dispatch in each trial (with inside-pass timestamps).
    pub step_ns: Vec<Vec<f64>>,
    pub timer: TimerKind,
    /// Bytes the instrumented build loaded and stored.
    pub counted: Option<(u64, u64)>,
    pub steps: Vec<Step>,
    pub traffic: Traffic,
}

impl RunOutput {
    pub fn median_ns(&self) -> f64 {
        median(&self.trial_ns)
    }

    /// (fastest, slowest) trial.
    pub fn spread_ns(&self) -> (f64, f64) {
        let min = self.trial_ns.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self
            .trial_ns
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        (min, max)
    }

    /// Median time of each dispatch.
    pub fn step_median_ns(&self) -> Vec<f64> {
        let steps = self.step_ns.first().map_or(0, Vec::len);
        (0..steps)
            .map(|i| median(&self.step_ns.iter().map(|t| t[i]).collect::<Vec<_>>()))
            .collect()
    }

    /// Modelled bytes ÷ median time, in GB/s.
    pub fn effective_gb_per_s(&self) -> f64 {
        self.traffic.bytes() as f64 / self.median_ns()
    }
}

/// A compiled pipeline and the bindings its entry point uses.
struct Prepared {
    pipeline: wgpu::ComputePipeline,
    bindings: Vec<u32>,
    /// Each binding with its WGSL variable's name (programs bind by name).
    names: Vec<(u32, String)>,
    /// What the device said about creating it (known at once on native,
    /// a little later on the web).
    created: crate::plumbing::Pending,
}

/// Runs kernels on one device, caching pipelines.
pub struct KernelRunner {
    gpu: Gpu,
    /// f32 the fused softmax may keep in workgroup memory (after the scratch).
    pub cache_floats: u32,
    pipelines: HashMap<(Variant, String), Arc<Prepared>>,
}

/// The most trials one run may time (query sets hold 4096 queries).
pub const MAX_TRIALS: u32 = 200;

impl KernelRunner {
    pub fn new(gpu: Gpu) -> Self {
        let limit = gpu.limits().max_compute_workgroup_storage_size;
        // Leave room for the reduction scratch (WG floats) and a little slack.
        let cache_floats = (limit / 4).saturating_sub(WG + 64).min(16_384);
        Self {
            gpu,
            cache_floats,
            pipelines: HashMap::new(),
        }
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The timer this runner's runs use.
    pub fn timer(&self) -> TimerKind {
        TimerKind::for_gpu(&self.gpu)
    }

    /// What plans need to know about this device.
    pub fn device(&self) -> DeviceLimits {
        DeviceLimits {
            cache_floats: self.cache_floats,
            subgroup_max: self.gpu.adapter_info.subgroup_max_size.max(1),
            subgroup_min: self.gpu.adapter_info.subgroup_min_size.max(1),
        }
    }

    /// Whether this device can run `kernel` at all.
    pub fn supports(&self, kernel: Kernel) -> Result<(), KernelError> {
        if !self.gpu.supports_compute() {
            return Err(KernelError::NoCompute {
                adapter: self.gpu.adapter_info.name.clone(),
            });
        }
        if kernel.needs_subgroups() && !self.gpu.features().contains(wgpu::Features::SUBGROUP) {
            return Err(KernelError::NeedsSubgroups {
                kernel: kernel.id(),
            });
        }
        Ok(())
    }

    /// The pipeline for one step, created (once) inside error scopes that are
    /// popped before anything else is created.
    fn prepare(
        &mut self,
        step: &Step,
        kernel: Kernel,
        instrumented: bool,
    ) -> Result<Arc<Prepared>, KernelError> {
        let (file, entry) = step
            .entry
            .split_once(':')
            .ok_or_else(|| KernelError::BadEntry {
                entry: step.entry.to_owned(),
            })?;
        let variant = Variant::of(kernel, file, instrumented, self.cache_floats);
        let key = (variant.clone(), entry.to_owned());
        if let Some(prepared) = self.pipelines.get(&key) {
            return Ok(prepared.clone());
        }
        let text = source::build(&variant)?;
        let checked = source::check(&text)?;
        let bindings = checked
            .bindings
            .iter()
            .find(|(name, _)| name == entry)
            .map(|(_, b)| b.clone())
            .ok_or_else(|| KernelError::NoEntryPoint {
                file: file.to_owned(),
                entry: entry.to_owned(),
            })?;
        let device = &self.gpu.device;
        // Browsers want subgroups enabled in the source; naga (native) rejects the line.
        let uses_subgroups =
            kernel.needs_subgroups() && self.gpu.features().contains(wgpu::Features::SUBGROUP);
        let text = if cfg!(target_arch = "wasm32") && uses_subgroups {
            format!("enable subgroups;\n{text}")
        } else {
            text
        };
        let scopes = Scopes::push(device);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(step.entry),
            source: wgpu::ShaderSource::Wgsl(text.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(step.entry),
            layout: None,
            module: &module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        });
        // Popped now, before the next pipeline's scopes are pushed.
        let created = scopes.pop();
        if let Some(Some(err)) = created.get() {
            return Err(KernelError::Rejected {
                entry: step.entry.to_owned(),
                error: err,
            });
        }
        let prepared = Arc::new(Prepared {
            pipeline,
            bindings,
            names: Vec::new(),
            created,
        });
        self.pipelines.insert(key, prepared.clone());
        Ok(prepared)
    }

    /// Checks a run before anything is allocated: the device, the input's
    /// length, the plan, and the adapter's buffer limits.
    fn plan_for(
        &self,
        spec: &RunSpec,
        input_len: usize,
    ) -> Result<(Vec<Step>, Traffic), KernelError> {
        self.supports(spec.kernel)?;
        let expected = spec.kernel.input_len(spec.problem);
        if input_len as u64 != expected {
            return Err(KernelError::WrongLength {
                given: input_len,
                expected,
                rows: spec.problem.rows,
                cols: spec.problem.cols,
            });
        }
        self.check_size(expected.max(spec.kernel.output_len(spec.problem)))?;
        let planned = plan(spec.kernel, spec.problem, self.device())?;
        Ok(planned)
    }

    /// The most f32 values one buffer may hold on this device.
    pub fn max_elements(&self) -> u64 {
        let limits = self.gpu.limits();
        limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size)
            / 4
    }

    /// Refuses `elements` values that one of this device's buffers cannot hold.
    pub fn check_size(&self, elements: u64) -> Result<(), KernelError> {
        let limit = self.max_elements();
        if elements > limit {
            let mib = |values: u64| format!("{:.2}", values as f64 * 4.0 / f64::from(1 << 20));
            return Err(KernelError::TooLarge {
                values: elements,
                mib: mib(elements),
                limit,
                limit_mib: mib(limit),
            });
        }
        Ok(())
    }

    /// Starts a run; poll the returned job until it is done.
    pub fn start(&mut self, spec: RunSpec, input: &[f32]) -> Result<Job, KernelError> {
        let (steps, traffic) = self.plan_for(&spec, input.len())?;
        let spec = RunSpec {
            trials: spec.trials.clamp(1, MAX_TRIALS),
            ..spec
        };
        let plain: Vec<_> = steps
            .iter()
            .map(|s| self.prepare(s, spec.kernel, false))
            .collect::<Result<_, _>>()?;
        let counted: Option<Vec<_>> = if spec.instrumented {
            Some(
                steps
                    .iter()
                    .map(|s| self.prepare(s, spec.kernel, true))
                    .collect::<Result<_, _>>()?,
            )
        } else {
            None
        };
        let timer = self.timer();
        let device = &self.gpu.device;
        let buffers = bind::Buffers::new(device, &spec, &steps, input);
        let groups = buffers.bind(device, &steps, &plain)?;
        let counted = match counted {
            Some(pipelines) => {
                let groups = buffers.bind(device, &steps, &pipelines)?;
                Some((pipelines, groups))
            }
            None => None,
        };
        let workgroups = steps.iter().map(|s| bind::grid(s.workgroups)).collect();
        let recorder = bind::Recorder::new(device, groups, workgroups, spec.trials, timer);
        let out_bytes = spec.kernel.output_len(spec.problem) * 4;
        Job::submit(job::Submission {
            gpu: &self.gpu,
            output: buffers.result(spec.kernel, &steps),
            out_bytes,
            counters: &buffers.counters,
            spec,
            steps,
            traffic,
            recorder,
            plain,
            counted,
            timer,
        })
    }
}
