//! The device side of a check: a device of the checker's own, the learner's
//! pipeline compiled inside error scopes, every case its own submission (a
//! few queued at once on the web, answered in order) polled without
//! blocking, and a time budget per case after which the device is abandoned.

use std::collections::VecDeque;
#[cfg(not(target_arch = "wasm32"))]
use std::sync::Mutex;
use std::sync::{Arc, mpsc};

use wgpu::util::DeviceExt as _;

use super::cases::{KernelCase, UNWRITTEN};
use super::guard::{GUARD_BINDING, GUARD_LIMIT, guard_loops};
use super::{Diagnostic, KernelExercise, KernelVerdict, Layout, validate};
use crate::plumbing::{Pending, Scopes, map_read, read_mapped, readback_buffer};
use crate::{Gpu, KernelError};
use dlsys_core::names::Words;

/// Devices abandoned with a kernel still running on them. Dropping one would
/// wait for that kernel (forever); they are kept here until the process ends.
#[cfg(not(target_arch = "wasm32"))]
static ABANDONED: Mutex<Vec<Gpu>> = Mutex::new(Vec::new());

/// Runs checks on a device of its own (never the one that draws the UI, so a
/// runaway kernel cannot stall the frame).
pub struct KernelChecker {
    gpu: Option<Gpu>,
    /// Per case.
    pub budget: web_time::Duration,
    /// Cases on the device at once ([`IN_FLIGHT`] unless a test says).
    pub in_flight: usize,
    /// Set when a kernel timed out: the device must be replaced.
    poisoned: bool,
}

impl KernelChecker {
    pub fn new(gpu: Gpu) -> Self {
        Self {
            gpu: Some(gpu),
            budget: web_time::Duration::from_secs(3),
            in_flight: IN_FLIGHT,
            poisoned: false,
        }
    }

    /// A checker on a fresh device (native only: the web cannot block).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn request_blocking() -> Result<Self, crate::GpuError> {
        Gpu::request_blocking().map(Self::new)
    }

    pub fn gpu(&self) -> Option<&Gpu> {
        self.gpu.as_ref()
    }

    /// Whether the last check left the device unusable.
    pub fn needs_recovery(&self) -> bool {
        self.poisoned || self.gpu.is_none()
    }

    /// Abandons the device a runaway kernel still occupies and makes a new one.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn recover(&mut self) -> Result<(), crate::GpuError> {
        self.abandon();
        let gpu = Gpu::request_blocking()?;
        self.gpu = Some(gpu);
        self.poisoned = false;
        Ok(())
    }

    /// Starts checking `source`; poll the job until it answers.
    pub fn start(&mut self, exercise: &'static KernelExercise, source: &str) -> CheckJob {
        let mut job = CheckJob {
            exercise,
            state: State::Done(None),
            cases: exercise.cases(),
            next: 0,
            budget: self.budget,
            in_flight: self.in_flight.max(1),
            lost: false,
        };
        if let Err(d) = validate(exercise, source) {
            job.state = State::Done(Some(KernelVerdict::Invalid(d)));
            return job;
        }
        let Some(gpu) = self.gpu.clone().filter(|_| !self.poisoned) else {
            job.state = State::Done(Some(KernelVerdict::Failed(KernelError::DeviceAbandoned)));
            return job;
        };
        // Every loop counts its iterations, so an endless one is named.
        let guarded = guard_loops(source)
            .ok()
            .map(|(text, _)| text)
            .filter(|text| match validate(exercise, text) {
                Ok(()) => true,
                Err(err) => {
                    log::error!("the loop guard broke a valid kernel: {err}");
                    false
                }
            });
        let (pipeline, compiled) = match &guarded {
            Some(text) => compile(&gpu, exercise.layout, text, true),
            None => compile(&gpu, exercise.layout, source, false),
        };
        job.state = State::Ready {
            gpu,
            pipeline,
            compiled,
            since: web_time::Instant::now(),
        };
        job
    }

    /// [`Self::start`], then waits (native: CLI and tests). Recovers the
    /// device itself after a timeout.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn check_blocking(
        &mut self,
        exercise: &'static KernelExercise,
        source: &str,
    ) -> KernelVerdict {
        let mut job = self.start(exercise, source);
        let verdict = loop {
            if let Some(v) = job.poll() {
                break v;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        if job.abandons_device() {
            self.poisoned = true;
            if let Err(err) = self.recover() {
                log::error!("recreating the GPU device failed: {err}");
            }
        }
        verdict
    }

    /// Tells the checker that a job it started timed out or lost its device
    /// (the app polls jobs itself, then calls this and [`Self::recover`]).
    pub fn mark_poisoned(&mut self) {
        self.poisoned = true;
    }

    /// Gives up the device without making a new one (a kernel still runs on
    /// it: dropping it would wait for that kernel).
    pub fn abandon(&mut self) {
        self.poisoned = true;
        // On the web dropping does not wait (and the device is the app's).
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(old) = self.gpu.take()
            && let Ok(mut graveyard) = ABANDONED.lock()
        {
            graveyard.push(old);
        }
        #[cfg(target_arch = "wasm32")]
        drop(self.gpu.take());
    }
}

pub(super) struct Pipeline {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    /// Whether the source carries the loop guard (and binds its buffer).
    guarded: bool,
}

/// Compiles `source` (with the loop guard's binding when `guarded`).
pub(super) fn compile(
    gpu: &Gpu,
    layout: Layout,
    source: &str,
    guarded: bool,
) -> (Arc<Pipeline>, Pending) {
    let device = &gpu.device;
    let storage = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    let mut entries = vec![
        wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        },
        storage(1, true),
        storage(2, false),
    ];
    if layout == Layout::BiasRelu {
        entries.push(storage(3, true));
    }
    if guarded {
        entries.push(storage(GUARD_BINDING, false));
    }
    let scopes = Scopes::push(device);
    let bind_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("exercise bindings"),
        entries: &entries,
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("exercise"),
        bind_group_layouts: &[Some(&bind_layout)],
        immediate_size: 0,
    });
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("your kernel"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("your kernel"),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let pending = scopes.pop();
    (
        Arc::new(Pipeline {
            pipeline,
            layout: bind_layout,
            guarded,
        }),
        pending,
    )
}

pub(super) fn rejected(error: &str) -> KernelVerdict {
    KernelVerdict::Invalid(Diagnostic {
        line: None,
        column: None,
        message: format!("the device rejected it: {error}"),
    })
}

/// A case's buffers, bound to the learner's pipeline.
pub(super) struct Bound {
    group: wgpu::BindGroup,
    y: wgpu::Buffer,
    /// The loop guard's line (0: no loop ran past the limit).
    guard: wgpu::Buffer,
    out_len: usize,
    workgroups: (u32, u32, u32),
}

impl KernelExercise {
    /// Uploads `case` and binds it. The output starts as the [`UNWRITTEN`]
    /// marker everywhere.
    pub(super) fn bind(&self, gpu: &Gpu, pipeline: &Pipeline, case: &KernelCase) -> Bound {
        let device = &gpu.device;
        // params.n: a GEMM's K, attention's real keys, otherwise the values in x.
        let n = if matches!(self.layout, Layout::Gemm | Layout::Attention) {
            case.k
        } else {
            case.x.len() as u32
        };
        let words = [case.rows, case.cols, n, f32::NEG_INFINITY.to_bits()];
        let init = |label: &str, contents: &[u8], usage: wgpu::BufferUsages| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            })
        };
        let params = init(
            "params",
            bytemuck::cast_slice(&words),
            wgpu::BufferUsages::UNIFORM,
        );
        let x = init(
            "x",
            bytemuck::cast_slice(&case.x),
            wgpu::BufferUsages::STORAGE,
        );
        let out_len = self.output_len(case);
        let y = init(
            "y",
            bytemuck::cast_slice(&vec![UNWRITTEN; out_len]),
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        );
        let bias_values = if case.bias.is_empty() {
            vec![0.0f32]
        } else {
            case.bias.clone()
        };
        let bias = init(
            "bias",
            bytemuck::cast_slice(&bias_values),
            wgpu::BufferUsages::STORAGE,
        );
        let mut entries = vec![
            wgpu::BindGroupEntry {
                binding: 0,
                resource: params.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: x.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 2,
                resource: y.as_entire_binding(),
            },
        ];
        if self.layout == Layout::BiasRelu {
            entries.push(wgpu::BindGroupEntry {
                binding: 3,
                resource: bias.as_entire_binding(),
            });
        }
        let guard = init(
            "loop guard",
            bytemuck::cast_slice(&[0u32]),
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        );
        if pipeline.guarded {
            entries.push(wgpu::BindGroupEntry {
                binding: GUARD_BINDING,
                resource: guard.as_entire_binding(),
            });
        }
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("exercise"),
            layout: &pipeline.layout,
            entries: &entries,
        });
        Bound {
            group,
            y,
            guard,
            out_len,
            workgroups: self.workgroups(case),
        }
    }
}

/// Records one dispatch of the learner's kernel.
pub(super) fn dispatch(
    encoder: &mut wgpu::CommandEncoder,
    pipeline: &Pipeline,
    bound: &Bound,
    timestamps: Option<&wgpu::QuerySet>,
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("your kernel"),
        timestamp_writes: timestamps.map(|set| wgpu::ComputePassTimestampWrites {
            query_set: set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        }),
    });
    pass.set_pipeline(&pipeline.pipeline);
    pass.set_bind_group(0, &bound.group, &[]);
    let (x, y, z) = bound.workgroups;
    pass.dispatch_workgroups(x, y, z);
}

enum State {
    /// The pipeline is compiling.
    Ready {
        gpu: Gpu,
        pipeline: Arc<Pipeline>,
        /// Whether the device accepted the pipeline.
        compiled: Pending,
        since: web_time::Instant,
    },
    /// Cases on the device (`in_flight` at most, each its own submission
    /// and readback), their answers taken in order.
    Running {
        gpu: Gpu,
        pipeline: Arc<Pipeline>,
        in_flight: VecDeque<InFlight>,
        /// When the case at the front began to count: its submission, or
        /// the answer of the one before it (the queue runs them in order).
        started: web_time::Instant,
    },
    Done(Option<KernelVerdict>),
}

/// Cases on the device at once. The web queues several: each answer costs
/// a frame (the browser delivers it between frames), which on a software
/// GPU in a browser was most of a check (9 cases, 9 frames). Not all: the
/// cases left behind when one fails still run, and the next check's budget
/// would count them. Natively one at a time: lavapipe's submit waits while
/// a kernel runs, so a runaway first case would hold the next submit, and
/// the time budget with it.
const IN_FLIGHT: usize = if cfg!(target_arch = "wasm32") { 4 } else { 1 };

/// One case on the device.
struct InFlight {
    readback: wgpu::Buffer,
    receiver: Receiver,
    /// The mapping's answer, once it came.
    mapped: Option<Result<(), wgpu::BufferAsyncError>>,
    /// Whether the device accepted the run.
    errors: Pending,
}

/// A check in flight, never blocking.
pub struct CheckJob {
    exercise: &'static KernelExercise,
    state: State,
    cases: Vec<KernelCase>,
    /// The case whose answer comes next.
    next: usize,
    budget: web_time::Duration,
    in_flight: usize,
    /// The device stopped answering (lost, or its mapping failed).
    lost: bool,
}

impl CheckJob {
    /// Which case is running, of how many (for a progress bar).
    pub fn progress(&self) -> (usize, usize) {
        (self.next, self.cases.len())
    }

    /// Whether the job timed out or lost its device: either way the device
    /// must not be used again.
    pub fn abandons_device(&self) -> bool {
        self.lost
            || matches!(
                self.state,
                State::Done(Some(KernelVerdict::TimedOut { .. }))
            )
    }

    fn timed_out(&self) -> KernelVerdict {
        KernelVerdict::TimedOut {
            case: self
                .cases
                .get(self.next)
                .map_or_else(|| Words::new("case.none", &[]), |c| c.name.clone()),
            budget_ms: self.budget.as_millis() as u64,
        }
    }

    fn done(&mut self, verdict: KernelVerdict) {
        self.state = State::Done(Some(verdict));
    }

    /// Advances without blocking; the verdict once there is one.
    pub fn poll(&mut self) -> Option<KernelVerdict> {
        loop {
            match std::mem::replace(&mut self.state, State::Done(None)) {
                State::Done(verdict) => {
                    self.state = State::Done(verdict.clone());
                    return verdict;
                }
                State::Ready {
                    gpu,
                    pipeline,
                    compiled,
                    since,
                } => match compiled.get() {
                    None if since.elapsed() > self.budget => self.done(self.timed_out()),
                    None => {
                        self.state = State::Ready {
                            gpu,
                            pipeline,
                            compiled,
                            since,
                        };
                        return None;
                    }
                    Some(Some(error)) => self.done(rejected(&error)),
                    Some(None) => {
                        let mut in_flight = VecDeque::new();
                        self.top_up(&gpu, &pipeline, &mut in_flight);
                        self.state = State::Running {
                            gpu,
                            pipeline,
                            in_flight,
                            started: web_time::Instant::now(),
                        };
                    }
                },
                State::Running {
                    gpu,
                    pipeline,
                    mut in_flight,
                    started,
                } => {
                    let Some(front) = in_flight.front_mut() else {
                        self.done(KernelVerdict::Passed {
                            cases: self.cases.len(),
                        });
                        continue;
                    };
                    let _ = gpu.device.poll(wgpu::PollType::Poll);
                    // The mapping's answer is kept until the error scope's
                    // arrives too (on the web they come on separate tasks):
                    // the channel gives it once.
                    if front.mapped.is_none() {
                        match front.receiver.try_recv() {
                            Ok(result) => front.mapped = Some(result),
                            Err(mpsc::TryRecvError::Empty) => {}
                            Err(mpsc::TryRecvError::Disconnected) => {
                                self.lost = true;
                                self.done(KernelVerdict::Failed(KernelError::DeviceLost));
                                continue;
                            }
                        }
                    }
                    let front = &*front;
                    match (&front.mapped, front.errors.get()) {
                        // The device refused the run: that, not the output, is the answer.
                        (_, Some(Some(error))) => {
                            self.done(KernelVerdict::Failed(KernelError::RunRejected { error }));
                        }
                        (Some(Err(err)), _) => {
                            let error = err.to_string();
                            self.lost = true;
                            self.done(KernelVerdict::Failed(KernelError::Readback { error }));
                        }
                        (Some(Ok(())), Some(None)) => {
                            let case = &self.cases[self.next];
                            let got = read_f32(&front.readback);
                            match got.and_then(|(got, endless)| {
                                if endless != 0 {
                                    return Err(KernelVerdict::EndlessLoop {
                                        case: case.name.clone(),
                                        line: endless,
                                        limit: GUARD_LIMIT,
                                    });
                                }
                                self.exercise
                                    .judge(case, &got)
                                    .map_err(KernelVerdict::Mismatch)
                            }) {
                                Ok(()) => {
                                    in_flight.pop_front();
                                    self.next += 1;
                                    self.top_up(&gpu, &pipeline, &mut in_flight);
                                    self.state = State::Running {
                                        gpu,
                                        pipeline,
                                        in_flight,
                                        started: web_time::Instant::now(),
                                    };
                                }
                                Err(verdict) => self.done(verdict),
                            }
                        }
                        _ if started.elapsed() > self.budget => self.done(self.timed_out()),
                        _ => {
                            self.state = State::Running {
                                gpu,
                                pipeline,
                                in_flight,
                                started,
                            };
                            return None;
                        }
                    }
                }
            }
        }
    }

    /// Submits the cases after those in flight, up to `in_flight` of them.
    fn top_up(&self, gpu: &Gpu, pipeline: &Pipeline, in_flight: &mut VecDeque<InFlight>) {
        let end = self
            .cases
            .len()
            .min(self.next.saturating_add(self.in_flight));
        for case in &self.cases[self.next + in_flight.len()..end] {
            in_flight.push_back(self.submit(gpu, pipeline, case));
        }
    }

    /// Uploads a case, dispatches, and asks for the output back.
    fn submit(&self, gpu: &Gpu, pipeline: &Pipeline, case: &KernelCase) -> InFlight {
        let device = &gpu.device;
        let scopes = Scopes::push(device);
        let bound = self.exercise.bind(gpu, pipeline, case);
        // The output, then the loop guard's word.
        let y_bytes = (bound.out_len * 4) as u64;
        let readback = readback_buffer(device, "y readback", y_bytes + 4);
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("your kernel"),
        });
        dispatch(&mut encoder, pipeline, &bound, None);
        encoder.copy_buffer_to_buffer(&bound.y, 0, &readback, 0, Some(y_bytes));
        encoder.copy_buffer_to_buffer(&bound.guard, 0, &readback, y_bytes, Some(4));
        gpu.queue.submit([encoder.finish()]);
        let receiver = map_read(&readback);
        let errors = scopes.pop();
        InFlight {
            readback,
            receiver,
            mapped: None,
            errors,
        }
    }
}

type Receiver = mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>;

/// The output values and, after them, the loop guard's word.
fn read_f32(buffer: &wgpu::Buffer) -> Result<(Vec<f32>, u32), KernelVerdict> {
    let mut values = read_mapped::<f32>(buffer).map_err(KernelVerdict::Failed)?;
    let guard = values.pop().map_or(0, f32::to_bits);
    Ok((values, guard))
}
