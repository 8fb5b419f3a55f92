//! Running a kernel's plan on the GPU: buffers, pipelines (cached), timed
//! trials with timestamp queries, an optional instrumented run that counts
//! every global load and store, and readback through `map_async` + a channel,
//! polled without blocking (the web has no blocking wait).

use std::collections::HashMap;
use std::sync::mpsc;

use dlsys_core::kernels::{
    Buf, Device, Kernel, MAX_WORKGROUPS_PER_DIM, Problem, Step, Traffic, WG, plan,
};
use serde::Serialize;
use wgpu::util::DeviceExt as _;

use crate::Gpu;
use crate::source::{self, Variant};

/// How the trials were timed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Timer {
    /// GPU timestamps at the beginning and end of every pass (one pass per dispatch).
    Timestamps { period_ns: f32 },
    /// Each trial submitted alone and waited for, on the CPU clock (used for
    /// adapters that are the CPU, whose timestamps proved unreliable).
    WallPerTrial,
    /// Submission to readback on the CPU clock: includes submission and
    /// mapping latency, so it overstates kernel time.
    WallClock,
}

impl Timer {
    pub fn label(&self) -> String {
        match self {
            Self::Timestamps { period_ns } => {
                format!("GPU timestamps around every dispatch (tick {period_ns} ns)")
            }
            Self::WallPerTrial => {
                "CPU clock per trial, submit to completion (a CPU adapter; its timestamps are not reliable)".to_owned()
            }
            Self::WallClock => {
                "wall clock (no timestamp queries; includes submit and readback)".to_owned()
            }
        }
    }
}

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
    /// Time of each trial, in nanoseconds.
    pub trial_ns: Vec<f64>,
    /// Time of each dispatch in each trial (with inside-pass timestamps).
    pub step_ns: Vec<Vec<f64>>,
    pub timer: Timer,
    /// Bytes the instrumented build loaded and stored.
    pub counted: Option<(u64, u64)>,
    pub steps: Vec<Step>,
    pub traffic: Traffic,
}

pub(crate) fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
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
}

/// Runs kernels on one device, caching pipelines.
pub struct KernelRunner {
    gpu: Gpu,
    /// f32 the fused softmax may keep in workgroup memory (after the scratch).
    pub cache_floats: u32,
    pipelines: HashMap<(Variant, String), std::sync::Arc<Prepared>>,
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

    /// What plans need to know about this device.
    pub fn device(&self) -> Device {
        Device {
            cache_floats: self.cache_floats,
            subgroup_max: self.gpu.adapter_info.subgroup_max_size.max(1),
        }
    }

    /// Whether this device can run `kernel` at all.
    pub fn supports(&self, kernel: Kernel) -> Result<(), String> {
        if !self.gpu.supports_compute() {
            return Err(format!(
                "{} cannot run compute shaders",
                self.gpu.adapter_info.name
            ));
        }
        if kernel.needs_subgroups() && !self.gpu.features().contains(wgpu::Features::SUBGROUP) {
            return Err(format!(
                "{} needs subgroup operations, which this adapter does not offer",
                kernel.id()
            ));
        }
        Ok(())
    }

    fn prepare(
        &mut self,
        step: &Step,
        kernel: Kernel,
        instrumented: bool,
    ) -> Result<std::sync::Arc<Prepared>, String> {
        let (file, entry) = step.entry.split_once(':').ok_or("bad step entry")?;
        let file = source_file(file)?;
        let op = match kernel {
            Kernel::Reduce(_, op) => Some(op),
            _ => None,
        };
        let variant = Variant {
            file,
            op,
            instrumented,
            cache_floats: self.cache_floats,
        };
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
            .ok_or_else(|| format!("{file} has no entry point {entry}"))?;
        let device = &self.gpu.device;
        // Browsers want subgroups enabled in the source; naga (native) rejects the line.
        let uses_subgroups =
            kernel.needs_subgroups() && self.gpu.features().contains(wgpu::Features::SUBGROUP);
        let text = if cfg!(target_arch = "wasm32") && uses_subgroups {
            format!("enable subgroups;\n{text}")
        } else {
            text
        };
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
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
        // Validation errors surface here instead of reaching wgpu's panicking handler.
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(err) = pollster::block_on(scope.pop()) {
            return Err(format!("{}: {err}", step.entry));
        }
        // The web cannot wait here; a failure still shows in the log, and the
        // run reports the invalid pipeline when its result comes back.
        #[cfg(target_arch = "wasm32")]
        {
            let label = step.entry;
            wasm_bindgen_futures::spawn_local(async move {
                if let Some(err) = scope.pop().await {
                    log::error!("{label}: {err}");
                }
            });
        }
        let prepared = std::sync::Arc::new(Prepared { pipeline, bindings });
        self.pipelines.insert(key, prepared.clone());
        Ok(prepared)
    }

    /// Starts a run; poll the returned job until it is done.
    pub fn start(&mut self, spec: RunSpec, input: &[f32]) -> Result<Job, String> {
        self.supports(spec.kernel)?;
        let elements = spec.problem.elements();
        if input.len() as u64 != elements {
            return Err(format!(
                "{} values given for a {}×{} problem",
                input.len(),
                spec.problem.rows,
                spec.problem.cols
            ));
        }
        let trials = spec.trials.clamp(1, MAX_TRIALS);
        let (steps, traffic) = plan(spec.kernel, spec.problem, self.device())?;
        let limits = self.gpu.limits();
        let bytes = elements * 4;
        if bytes > limits.max_storage_buffer_binding_size || bytes > limits.max_buffer_size {
            return Err(format!(
                "{} MiB of input is over this adapter's storage-buffer limit of {} MiB",
                bytes >> 20,
                limits.max_storage_buffer_binding_size >> 20
            ));
        }
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
        let device = &self.gpu.device;
        let storage = |label: &str, floats: u64, extra: wgpu::BufferUsages| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: floats.max(1) * 4,
                usage: wgpu::BufferUsages::STORAGE | extra,
                mapped_at_creation: false,
            })
        };
        let input_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("input"),
            contents: bytemuck::cast_slice(input),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let copy_src = wgpu::BufferUsages::COPY_SRC;
        let output_buf = storage(
            "output",
            if matches!(spec.kernel, Kernel::Reduce(..)) {
                1
            } else {
                elements
            },
            copy_src,
        );
        let partial_len = |i: usize| steps.get(i).map_or(1, |s| u64::from(s.workgroups));
        let partial_a = storage("partial a", partial_len(0).max(partial_len(2)), copy_src);
        let partial_b = storage("partial b", partial_len(1).max(partial_len(3)), copy_src);
        let stats = storage(
            "stats",
            2 * u64::from(spec.problem.rows),
            wgpu::BufferUsages::empty(),
        );
        let counters = storage("counters", 2, copy_src | wgpu::BufferUsages::COPY_DST);
        let buffer = |b: Buf| match b {
            Buf::Input => &input_buf,
            Buf::Output => &output_buf,
            Buf::Stats => &stats,
            Buf::PartialA => &partial_a,
            Buf::PartialB => &partial_b,
        };
        let params: Vec<wgpu::Buffer> = steps
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
        let bind = |prepared: &Prepared, i: usize, s: &Step| {
            let entries: Vec<wgpu::BindGroupEntry<'_>> = prepared
                .bindings
                .iter()
                .map(|b| wgpu::BindGroupEntry {
                    binding: *b,
                    resource: match b {
                        0 => params[i].as_entire_binding(),
                        1 => buffer(s.input).as_entire_binding(),
                        2 => buffer(s.output).as_entire_binding(),
                        3 => stats.as_entire_binding(),
                        5 => buffer(s.input).as_entire_binding(),
                        6 => buffer(s.output).as_entire_binding(),
                        _ => counters.as_entire_binding(),
                    },
                })
                .collect();
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(s.entry),
                layout: &prepared.pipeline.get_bind_group_layout(0),
                entries: &entries,
            })
        };
        let plain_groups: Vec<_> = steps
            .iter()
            .enumerate()
            .map(|(i, s)| bind(&plain[i], i, s))
            .collect();
        // Timing. On GPUs: every step runs in its own pass with timestamps at
        // its beginning and end (the end one waits for the pass's work).
        // Adapters that are really the CPU (lavapipe) were measured writing the
        // end timestamp before asynchronous work finished, so there each trial
        // is its own submission, timed on the CPU clock from a background
        // thread that waits for it (native only), never blocking the UI.
        let is_cpu = self.gpu.adapter_info.device_type == wgpu::DeviceType::Cpu;
        let timestamps = self
            .gpu
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY);
        let mode = if timestamps && !is_cpu {
            Mode::Timestamps
        } else if cfg!(target_arch = "wasm32") {
            Mode::WallBatch
        } else {
            Mode::WallPerTrial
        };
        let per_trial = steps.len() as u32;
        let queries = trials * per_trial * 2;
        let query_set = (mode == Mode::Timestamps).then(|| {
            device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("kernel timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: queries,
            })
        });
        let new_encoder = || {
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("kernel run"),
            })
        };
        let dispatch = |pass: &mut wgpu::ComputePass<'_>,
                        prepared: &Prepared,
                        group: &wgpu::BindGroup,
                        s: &Step| {
            pass.set_pipeline(&prepared.pipeline);
            pass.set_bind_group(0, group, &[]);
            let x = s.workgroups.min(MAX_WORKGROUPS_PER_DIM);
            pass.dispatch_workgroups(x, s.workgroups.div_ceil(MAX_WORKGROUPS_PER_DIM), 1);
        };
        // One run of the plan, each step in its own pass; `first_query` times them.
        let record = |encoder: &mut wgpu::CommandEncoder,
                      pipelines: &[std::sync::Arc<Prepared>],
                      groups: &[wgpu::BindGroup],
                      first_query: Option<u32>| {
            for (i, s) in steps.iter().enumerate() {
                let timestamp_writes = match (&query_set, first_query) {
                    (Some(qs), Some(q)) => Some(wgpu::ComputePassTimestampWrites {
                        query_set: qs,
                        beginning_of_pass_write_index: Some(q + 2 * i as u32),
                        end_of_pass_write_index: Some(q + 2 * i as u32 + 1),
                    }),
                    _ => None,
                };
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes,
                });
                dispatch(&mut pass, &pipelines[i], &groups[i], s);
            }
        };
        let mut prelude = new_encoder();
        if let Some(counted) = &counted {
            let groups: Vec<_> = steps
                .iter()
                .enumerate()
                .map(|(i, s)| bind(&counted[i], i, s))
                .collect();
            prelude.clear_buffer(&counters, 0, None);
            record(&mut prelude, counted, &groups, None);
        }
        for _ in 0..spec.warmup {
            record(&mut prelude, &plain, &plain_groups, None);
        }
        let mut trial_buffers = Vec::new();
        match mode {
            Mode::WallPerTrial => {
                for _ in 0..trials {
                    let mut encoder = new_encoder();
                    record(&mut encoder, &plain, &plain_groups, None);
                    trial_buffers.push(encoder.finish());
                }
            }
            Mode::Timestamps | Mode::WallBatch => {
                for trial in 0..trials {
                    let first = (mode == Mode::Timestamps).then_some(trial * per_trial * 2);
                    record(&mut prelude, &plain, &plain_groups, first);
                }
            }
        }
        let read_buffer = |size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let reduce = matches!(spec.kernel, Kernel::Reduce(..));
        let result_buf = if reduce {
            buffer(steps.last().map_or(Buf::PartialA, |s| s.output))
        } else {
            &output_buf
        };
        let out_len = if reduce { 4 } else { bytes };
        let out_read = read_buffer(out_len);
        let mut readback = new_encoder();
        readback.copy_buffer_to_buffer(result_buf, 0, &out_read, 0, out_len);
        let mut times_read = None;
        if let Some(qs) = &query_set {
            let size = u64::from(queries) * 8;
            let resolve = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamps"),
                size,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            readback.resolve_query_set(qs, 0..queries, &resolve, 0);
            let read = read_buffer(size);
            readback.copy_buffer_to_buffer(&resolve, 0, &read, 0, size);
            times_read = Some(read);
        }
        let counters_read = counted.as_ref().map(|_| {
            let read = read_buffer(8);
            readback.copy_buffer_to_buffer(&counters, 0, &read, 0, 8);
            read
        });
        let (sender, receiver) = mpsc::channel();
        let maps: Vec<wgpu::Buffer> = [
            Some(out_read.clone()),
            times_read.clone(),
            counters_read.clone(),
        ]
        .into_iter()
        .flatten()
        .collect();
        #[cfg_attr(target_arch = "wasm32", allow(unused_mut))]
        let mut pending = maps.len();
        let map_all = move |maps: Vec<wgpu::Buffer>, sender: &mpsc::Sender<Message>| {
            for buf in maps {
                let sender = sender.clone();
                buf.map_async(wgpu::MapMode::Read, .., move |result| {
                    // The job may be gone (the learner moved on); nothing to do then.
                    let _ = sender.send(Message::Mapped(
                        result.map_err(|e| e.to_string()),
                        web_time::Instant::now(),
                    ));
                });
            }
        };
        let started = web_time::Instant::now();
        let queue = self.gpu.queue.clone();
        queue.submit([prelude.finish()]);
        if mode == Mode::WallPerTrial {
            #[cfg(not(target_arch = "wasm32"))]
            {
                pending += 1;
                let device = device.clone();
                let sender = sender.clone();
                let readback = readback.finish();
                std::thread::Builder::new()
                    .name("kernel timer".to_owned())
                    .spawn(move || {
                        // The warm-up first, so the first trial does not include it.
                        let _ = device.poll(wgpu::PollType::wait_indefinitely());
                        let mut times = Vec::new();
                        for buffer in trial_buffers {
                            let start = std::time::Instant::now();
                            queue.submit([buffer]);
                            if device.poll(wgpu::PollType::wait_indefinitely()).is_err() {
                                break;
                            }
                            times.push(start.elapsed().as_nanos() as f64);
                        }
                        queue.submit([readback]);
                        map_all(maps, &sender);
                        let _ = sender.send(Message::Times(times));
                    })
                    .map_err(|err| format!("cannot start the timing thread: {err}"))?;
            }
            #[cfg(target_arch = "wasm32")]
            {
                drop(trial_buffers);
                unreachable!("per-trial wall clock is native only");
            }
        } else {
            queue.submit([readback.finish()]);
            map_all(maps, &sender);
        }
        Ok(Job {
            device: device.clone(),
            receiver,
            pending,
            failed: None,
            finished_at: None,
            started,
            out_read,
            times_read,
            counters_read,
            wall_times: None,
            mode,
            spec: RunSpec { trials, ..spec },
            per_trial,
            period_ns: self.gpu.queue.get_timestamp_period(),
            steps,
            traffic,
            reduce,
        })
    }
}

/// How trials are timed (see `KernelRunner::start`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Timestamps,
    WallPerTrial,
    WallBatch,
}

/// What the GPU side reports back to a job.
enum Message {
    Mapped(Result<(), String>, web_time::Instant),
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    Times(Vec<f64>),
}

fn source_file(name: &str) -> Result<&'static str, String> {
    const FILES: [&str; 9] = [
        "copy",
        "softmax_naive",
        "softmax_three_pass",
        "softmax_workgroup",
        "softmax_online",
        "softmax_subgroup",
        "softmax_subgroup_rows",
        "reduce",
        "reduce_subgroup",
    ];
    FILES
        .into_iter()
        .find(|f| *f == name)
        .ok_or_else(|| format!("no kernel file `{name}`"))
}

/// A run in flight.
pub struct Job {
    device: wgpu::Device,
    receiver: mpsc::Receiver<Message>,
    pending: usize,
    failed: Option<String>,
    finished_at: Option<web_time::Instant>,
    started: web_time::Instant,
    out_read: wgpu::Buffer,
    times_read: Option<wgpu::Buffer>,
    counters_read: Option<wgpu::Buffer>,
    wall_times: Option<Vec<f64>>,
    mode: Mode,
    spec: RunSpec,
    per_trial: u32,
    period_ns: f32,
    steps: Vec<Step>,
    traffic: Traffic,
    reduce: bool,
}

impl Job {
    /// Checks for completion without blocking. `None` while the GPU works.
    pub fn poll(&mut self) -> Option<Result<RunOutput, String>> {
        // Native: lets callbacks run. Web: a no-op; the browser runs them.
        let _ = self.device.poll(wgpu::PollType::Poll);
        while let Ok(message) = self.receiver.try_recv() {
            self.pending -= 1;
            match message {
                Message::Mapped(result, at) => {
                    self.finished_at = Some(self.finished_at.map_or(at, |t| t.max(at)));
                    if let Err(err) = result {
                        self.failed = Some(format!("reading back the result failed: {err}"));
                    }
                }
                Message::Times(times) => self.wall_times = Some(times),
            }
        }
        if self.pending > 0 {
            return None;
        }
        if let Some(err) = self.failed.take() {
            return Some(Err(err));
        }
        Some(self.collect())
    }

    /// Blocks until done (native only: CLI and tests).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn wait(mut self) -> Result<RunOutput, String> {
        loop {
            if let Some(result) = self.poll() {
                return result;
            }
            self.device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|err| format!("waiting for the GPU failed: {err}"))?;
        }
    }

    fn collect(&mut self) -> Result<RunOutput, String> {
        let read_f32 = |buf: &wgpu::Buffer| -> Result<Vec<f32>, String> {
            let view = buf.get_mapped_range(..).map_err(|e| e.to_string())?;
            let values = bytemuck::cast_slice::<u8, f32>(&view).to_vec();
            drop(view);
            buf.unmap();
            Ok(values)
        };
        let output = read_f32(&self.out_read)?;
        let mut trial_ns = Vec::new();
        let mut step_ns = Vec::new();
        let timer = if let Some(buf) = &self.times_read {
            let view = buf.get_mapped_range(..).map_err(|e| e.to_string())?;
            let ticks: Vec<u64> = bytemuck::cast_slice::<u8, u64>(&view).to_vec();
            drop(view);
            buf.unmap();
            let period = f64::from(self.period_ns);
            let ns = |a: u64, b: u64| b.saturating_sub(a) as f64 * period;
            let per = 2 * self.per_trial as usize;
            for trial in ticks.chunks(per) {
                trial_ns.push(ns(trial[0], trial[per - 1]));
                step_ns.push(trial.chunks(2).map(|pair| ns(pair[0], pair[1])).collect());
            }
            Timer::Timestamps {
                period_ns: self.period_ns,
            }
        } else if let Some(times) = self.wall_times.take() {
            if times.len() < self.spec.trials as usize {
                return Err("waiting for the GPU failed during the timed trials".to_owned());
            }
            trial_ns = times;
            Timer::WallPerTrial
        } else {
            let elapsed = self.finished_at.unwrap_or(self.started) - self.started;
            let per = elapsed.as_nanos() as f64 / f64::from(self.spec.trials + self.spec.warmup);
            trial_ns = vec![per; self.spec.trials as usize];
            Timer::WallClock
        };
        let _ = self.mode;
        let counted = match &self.counters_read {
            Some(buf) => {
                let view = buf.get_mapped_range(..).map_err(|e| e.to_string())?;
                let words: Vec<u32> = bytemuck::cast_slice::<u8, u32>(&view).to_vec();
                drop(view);
                buf.unmap();
                Some((u64::from(words[0]), u64::from(words[1])))
            }
            None => None,
        };
        let output = if self.reduce {
            output.into_iter().take(1).collect()
        } else {
            output
        };
        Ok(RunOutput {
            spec: self.spec,
            output,
            trial_ns,
            step_ns,
            timer,
            counted,
            steps: std::mem::take(&mut self.steps),
            traffic: self.traffic,
        })
    }
}
