//! A run in flight: the prelude (instrumented run, warm-up), the timed
//! trials and the readback, polled without blocking.
//!
//! Trials are timed by the runner's [`TimerKind`]. With GPU timestamps every
//! trial goes into one submission. With the CPU clock each trial is its own
//! submission, so at most one trial's work is queued at a time: natively a
//! background thread submits and waits for each one while the app draws
//! nothing (it draws between trials, when the thread wakes it), so the
//! renderer does not compete with the kernel for the CPU of a software
//! adapter; on the web, where there are no threads, [`Job::poll`] submits the
//! next trial when the browser reports the last one done.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use dlsys_core::kernels::{Kernel, Step, Traffic};

use super::bind::{Buffers, Recorder};
use super::{Prepared, RunOutput, RunSpec, Waker};
use crate::plumbing::{Pending, TimerKind, read_mapped, readback_buffer, ticks_to_ns};
use crate::{Gpu, KernelError};

/// CPU-clock trials running right now (natively, on the timing thread).
static QUIET: AtomicUsize = AtomicUsize::new(0);

/// Whether a trial is being timed on the CPU clock right now: the app should
/// not draw (its renderer would compete with the kernel for the CPU).
pub fn timing_quietly() -> bool {
    QUIET.load(Ordering::Relaxed) > 0
}

/// How long the timing thread leaves the app between two trials to draw a
/// frame (only when a waker is set, i.e. in the app).
#[cfg(not(target_arch = "wasm32"))]
const DRAW_PAUSE: std::time::Duration = std::time::Duration::from_millis(40);

/// What the GPU side reports back to a job.
enum Message {
    Mapped(Result<(), String>),
    /// CPU-clock trial times, from the timing thread.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    Times(Vec<f64>),
    /// The browser finished a trial (web only).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    TrialDone(web_time::Instant),
}

/// Everything [`Job::submit`] needs.
pub(super) struct Submission<'a> {
    pub gpu: &'a Gpu,
    pub spec: RunSpec,
    pub steps: Vec<Step>,
    pub traffic: Traffic,
    pub buffers: Buffers,
    pub recorder: Recorder,
    pub plain: Vec<Arc<Prepared>>,
    /// The instrumented pipelines and their bind groups.
    pub counted: Option<(Vec<Arc<Prepared>>, Vec<wgpu::BindGroup>)>,
    pub timer: TimerKind,
    pub waker: Option<Waker>,
}

/// A run in flight.
pub struct Job {
    device: wgpu::Device,
    queue: wgpu::Queue,
    sender: mpsc::Sender<Message>,
    receiver: mpsc::Receiver<Message>,
    /// Messages still expected before the result can be collected.
    pending: usize,
    failed: Option<KernelError>,
    out_read: wgpu::Buffer,
    times_read: Option<wgpu::Buffer>,
    counters_read: Option<wgpu::Buffer>,
    /// CPU-clock trial times.
    wall_times: Vec<f64>,
    /// Web: trials still to submit, the one in flight, and the readback after them.
    trials_left: Vec<wgpu::CommandBuffer>,
    trial_started: Option<web_time::Instant>,
    readback: Option<wgpu::CommandBuffer>,
    maps: Vec<wgpu::Buffer>,
    /// What the device said about each pipeline (the web answers late).
    created: Vec<Pending>,
    spec: RunSpec,
    per_trial: u32,
    timer: TimerKind,
    steps: Vec<Step>,
    traffic: Traffic,
}

impl Job {
    pub(super) fn submit(s: Submission<'_>) -> Result<Self, KernelError> {
        let device = &s.gpu.device;
        let queue = &s.gpu.queue;
        let spec = s.spec;
        let new_encoder = || {
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("kernel run"),
            })
        };
        let mut prelude = new_encoder();
        if let Some((pipelines, groups)) = &s.counted {
            prelude.clear_buffer(&s.buffers.counters, 0, None);
            s.recorder
                .record(&mut prelude, &s.steps, pipelines, Some(groups), None);
        }
        for _ in 0..spec.warmup {
            s.recorder
                .record(&mut prelude, &s.steps, &s.plain, None, None);
        }
        let reduce = matches!(spec.kernel, Kernel::Reduce(..));
        let out_len = if reduce {
            4
        } else {
            spec.problem.elements() * 4
        };
        let out_read = readback_buffer(device, "output readback", out_len);
        let mut readback = new_encoder();
        readback.copy_buffer_to_buffer(
            s.buffers.result(spec.kernel, &s.steps),
            0,
            &out_read,
            0,
            out_len,
        );
        let times_read = s.recorder.query_set.as_ref().map(|qs| {
            let queries = spec.trials * s.recorder.per_trial;
            let size = u64::from(queries) * 8;
            let resolve = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamps"),
                size,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            readback.resolve_query_set(qs, 0..queries, &resolve, 0);
            let read = readback_buffer(device, "timestamps readback", size);
            readback.copy_buffer_to_buffer(&resolve, 0, &read, 0, size);
            read
        });
        let counters_read = s.counted.as_ref().map(|_| {
            let read = readback_buffer(device, "counters readback", 8);
            readback.copy_buffer_to_buffer(&s.buffers.counters, 0, &read, 0, 8);
            read
        });
        let maps: Vec<wgpu::Buffer> = [
            Some(out_read.clone()),
            times_read.clone(),
            counters_read.clone(),
        ]
        .into_iter()
        .flatten()
        .collect();
        let (sender, receiver) = mpsc::channel();
        let mut job = Self {
            device: device.clone(),
            queue: queue.clone(),
            sender,
            receiver,
            pending: maps.len(),
            failed: None,
            out_read,
            times_read,
            counters_read,
            wall_times: Vec::new(),
            trials_left: Vec::new(),
            trial_started: None,
            readback: None,
            maps: Vec::new(),
            created: s
                .plain
                .iter()
                .chain(s.counted.iter().flat_map(|(p, _)| p))
                .map(|p| p.created.clone())
                .collect(),
            spec,
            per_trial: s.recorder.per_trial,
            timer: s.timer,
            steps: s.steps,
            traffic: s.traffic,
        };
        match s.timer {
            TimerKind::Timestamps { .. } => {
                for trial in 0..spec.trials {
                    s.recorder
                        .record(&mut prelude, &job.steps, &s.plain, None, Some(trial));
                }
                queue.submit([prelude.finish(), readback.finish()]);
                job.map_all(maps);
            }
            TimerKind::WallPerTrial => {
                let trials: Vec<wgpu::CommandBuffer> = (0..spec.trials)
                    .map(|_| {
                        let mut encoder = new_encoder();
                        s.recorder
                            .record(&mut encoder, &job.steps, &s.plain, None, None);
                        encoder.finish()
                    })
                    .collect();
                queue.submit([prelude.finish()]);
                job.time_trials(trials, readback.finish(), maps, s.waker)?;
            }
        }
        Ok(job)
    }

    fn map_all(&self, maps: Vec<wgpu::Buffer>) {
        for buf in maps {
            let sender = self.sender.clone();
            buf.map_async(wgpu::MapMode::Read, .., move |result| {
                // The job may be gone (the learner moved on); nothing to do then.
                let _ = sender.send(Message::Mapped(result.map_err(|e| e.to_string())));
            });
        }
    }

    /// Natively: a thread submits each trial alone and waits for it.
    #[cfg(not(target_arch = "wasm32"))]
    fn time_trials(
        &mut self,
        trials: Vec<wgpu::CommandBuffer>,
        readback: wgpu::CommandBuffer,
        maps: Vec<wgpu::Buffer>,
        waker: Option<Waker>,
    ) -> Result<(), KernelError> {
        self.pending += 1;
        let device = self.device.clone();
        let queue = self.queue.clone();
        let sender = self.sender.clone();
        let map_sender = self.sender.clone();
        std::thread::Builder::new()
            .name("kernel timer".to_owned())
            .spawn(move || {
                let wake = || {
                    if let Some(w) = &waker {
                        w();
                    }
                };
                // The warm-up first, so the first trial does not include it.
                let _ = device.poll(wgpu::PollType::wait_indefinitely());
                let mut times = Vec::new();
                for buffer in trials {
                    QUIET.fetch_add(1, Ordering::Relaxed);
                    let start = std::time::Instant::now();
                    queue.submit([buffer]);
                    let done = device.poll(wgpu::PollType::wait_indefinitely()).is_ok();
                    let elapsed = start.elapsed().as_nanos() as f64;
                    QUIET.fetch_sub(1, Ordering::Relaxed);
                    if !done {
                        break;
                    }
                    times.push(elapsed);
                    if waker.is_some() {
                        wake();
                        std::thread::sleep(DRAW_PAUSE);
                    }
                }
                queue.submit([readback]);
                for buf in maps {
                    let sender = map_sender.clone();
                    buf.map_async(wgpu::MapMode::Read, .., move |result| {
                        let _ = sender.send(Message::Mapped(result.map_err(|e| e.to_string())));
                    });
                }
                // Runs the map callbacks now: the app may not be polling.
                let _ = device.poll(wgpu::PollType::wait_indefinitely());
                let _ = sender.send(Message::Times(times));
                wake();
            })
            .map_err(|err| KernelError::Thread {
                error: err.to_string(),
            })?;
        Ok(())
    }

    /// On the web: trials are submitted one by one from [`Job::poll`].
    #[cfg(target_arch = "wasm32")]
    fn time_trials(
        &mut self,
        mut trials: Vec<wgpu::CommandBuffer>,
        readback: wgpu::CommandBuffer,
        maps: Vec<wgpu::Buffer>,
        _waker: Option<Waker>,
    ) -> Result<(), KernelError> {
        trials.reverse();
        self.trials_left = trials;
        self.readback = Some(readback);
        self.maps = maps;
        // The warm-up is done when this fires; then the first trial goes.
        self.after_submitted();
        self.pending += 1;
        Ok(())
    }

    /// Asks for a message when the work submitted so far is done.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    fn after_submitted(&self) {
        let sender = self.sender.clone();
        self.queue.on_submitted_work_done(move || {
            let _ = sender.send(Message::TrialDone(web_time::Instant::now()));
        });
    }

    /// Web: the last submission is done; time it and submit the next trial
    /// (or the readback after the last one).
    fn trial_done(&mut self, at: web_time::Instant) {
        if let Some(started) = self.trial_started.take() {
            self.wall_times
                .push(at.duration_since(started).as_nanos() as f64);
        }
        if let Some(trial) = self.trials_left.pop() {
            self.trial_started = Some(web_time::Instant::now());
            self.queue.submit([trial]);
            self.after_submitted();
            self.pending += 1;
        } else if let Some(readback) = self.readback.take() {
            self.queue.submit([readback]);
            let maps = std::mem::take(&mut self.maps);
            self.pending += maps.len();
            self.map_all(maps);
        }
    }

    /// The timer this run uses.
    pub fn timer(&self) -> TimerKind {
        self.timer
    }

    /// Whether the app should keep asking for frames while this job runs
    /// (`false` when a timing thread wakes it instead).
    pub fn wants_frames(&self) -> bool {
        cfg!(target_arch = "wasm32") || matches!(self.timer, TimerKind::Timestamps { .. })
    }

    /// Checks for completion without blocking. `None` while the GPU works.
    pub fn poll(&mut self) -> Option<Result<RunOutput, KernelError>> {
        // Native: lets callbacks run. Web: a no-op; the browser runs them.
        let _ = self.device.poll(wgpu::PollType::Poll);
        while let Ok(message) = self.receiver.try_recv() {
            self.pending = self.pending.saturating_sub(1);
            match message {
                Message::Mapped(result) => {
                    if let Err(error) = result {
                        self.failed = Some(KernelError::Readback { error });
                    }
                }
                Message::Times(times) => self.wall_times = times,
                Message::TrialDone(at) => self.trial_done(at),
            }
        }
        for created in &self.created {
            if let Some(Some(error)) = created.get() {
                self.failed.get_or_insert(KernelError::Rejected {
                    entry: "pipeline".to_owned(),
                    error,
                });
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
    pub fn wait(mut self) -> Result<RunOutput, KernelError> {
        loop {
            if let Some(result) = self.poll() {
                return result;
            }
            self.device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|err| KernelError::Wait {
                    error: err.to_string(),
                })?;
            if self.pending > 0 {
                // The timing thread is still at work.
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }

    fn collect(&mut self) -> Result<RunOutput, KernelError> {
        let output: Vec<f32> = read_mapped(&self.out_read)?;
        let mut trial_ns = Vec::new();
        let mut step_ns = Vec::new();
        match (self.timer, &self.times_read) {
            (TimerKind::Timestamps { period_ns }, Some(buf)) => {
                let ticks: Vec<u64> = read_mapped(buf)?;
                let per = self.per_trial as usize;
                for trial in ticks.chunks(per) {
                    trial_ns.push(ticks_to_ns(trial[0], trial[per - 1], period_ns));
                    step_ns.push(
                        trial
                            .chunks(2)
                            .map(|pair| ticks_to_ns(pair[0], pair[1], period_ns))
                            .collect(),
                    );
                }
            }
            _ => {
                if self.wall_times.len() < self.spec.trials as usize {
                    return Err(KernelError::TrialsLost);
                }
                trial_ns = std::mem::take(&mut self.wall_times);
            }
        }
        let counted = match &self.counters_read {
            Some(buf) => {
                let words: Vec<u32> = read_mapped(buf)?;
                Some((u64::from(words[0]), u64::from(words[1])))
            }
            None => None,
        };
        let output = if matches!(self.spec.kernel, Kernel::Reduce(..)) {
            output.into_iter().take(1).collect()
        } else {
            output
        };
        Ok(RunOutput {
            spec: self.spec,
            output,
            trial_ns,
            step_ns,
            timer: self.timer,
            counted,
            steps: std::mem::take(&mut self.steps),
            traffic: self.traffic,
        })
    }
}
