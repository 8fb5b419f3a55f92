//! A run in flight: the prelude (instrumented run, warm-up), the timed
//! trials and the readback, polled without blocking.
//!
//! Trials are timed by the runner's [`TimerKind`]. With GPU timestamps every
//! trial goes into one submission. With the CPU clock each trial is its own
//! submission, timed from submit to completion with nothing else on the
//! queue: natively [`Job::poll`] first waits for everything submitted before
//! (the warm-up, the frame the app drew last — the app's renderer shares the
//! device), then submits one trial and waits for it, so one poll times one
//! trial and the app draws its frames between trials, never during one; on
//! the web, where nothing may block, [`Job::poll`] submits the next trial
//! when the browser reports the last one done (the untimed prelude goes as
//! one submission, the readback right behind the last trial).

use std::sync::Arc;
use std::sync::mpsc;

use dlsys_core::kernels::{Step, Traffic};

use super::bind::Recorder;
use super::{Prepared, RunOutput, RunSpec};
use crate::plumbing::{Pending, TimerKind, read_mapped, readback_buffer, ticks_to_ns};
use crate::{Gpu, KernelError};

/// What the GPU side reports back to a job.
enum Message {
    Mapped(Result<(), wgpu::BufferAsyncError>),
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
    /// The buffer holding the result, and its bytes read back.
    pub output: &'a wgpu::Buffer,
    pub out_bytes: u64,
    /// The instrumented build's counters.
    pub counters: &'a wgpu::Buffer,
    pub recorder: Recorder,
    pub plain: Vec<Arc<Prepared>>,
    /// The instrumented pipelines and their bind groups.
    pub counted: Option<(Vec<Arc<Prepared>>, Vec<wgpu::BindGroup>)>,
    pub timer: TimerKind,
}

/// One submission of a CPU-clock run: a prelude run, or a timed trial.
struct Piece {
    buffer: wgpu::CommandBuffer,
    timed: bool,
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
    /// 32-bit words of the result.
    out_words: usize,
    times_read: Option<wgpu::Buffer>,
    counters_read: Option<wgpu::Buffer>,
    /// CPU-clock trial times.
    wall_times: Vec<f64>,
    /// CPU-clock trials still to time (the next one last), the one in flight
    /// (web), and the readback after them.
    trials_left: Vec<Piece>,
    /// Web: when the piece in flight was submitted, if it is timed.
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
        // The prelude: the instrumented run, then the warm-up runs, each its
        // own piece (natively, on the CPU clock, each is submitted and waited
        // for alone, so frames keep coming between them on a slow software
        // GPU; the web submits them together and never waits).
        let mut prelude = Vec::new();
        if let Some((pipelines, groups)) = &s.counted {
            let mut encoder = new_encoder();
            encoder.clear_buffer(s.counters, 0, None);
            s.recorder
                .record(&mut encoder, pipelines, Some(groups), None);
            prelude.push(encoder);
        }
        for _ in 0..spec.warmup {
            let mut encoder = new_encoder();
            s.recorder.record(&mut encoder, &s.plain, None, None);
            prelude.push(encoder);
        }
        let out_read = readback_buffer(device, "output readback", s.out_bytes);
        let mut readback = new_encoder();
        readback.copy_buffer_to_buffer(s.output, 0, &out_read, 0, s.out_bytes);
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
            readback.copy_buffer_to_buffer(s.counters, 0, &read, 0, 8);
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
            out_words: (s.out_bytes / 4) as usize,
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
                let mut timed = new_encoder();
                for trial in 0..spec.trials {
                    s.recorder.record(&mut timed, &s.plain, None, Some(trial));
                }
                let mut buffers: Vec<_> = prelude.into_iter().map(|e| e.finish()).collect();
                buffers.extend([timed.finish(), readback.finish()]);
                queue.submit(buffers);
                job.map_all(maps);
            }
            TimerKind::WallPerTrial => {
                let mut pieces: Vec<Piece> = prelude
                    .into_iter()
                    .map(|e| Piece {
                        buffer: e.finish(),
                        timed: false,
                    })
                    .collect();
                pieces.extend((0..spec.trials).map(|_| {
                    let mut encoder = new_encoder();
                    s.recorder.record(&mut encoder, &s.plain, None, None);
                    Piece {
                        buffer: encoder.finish(),
                        timed: true,
                    }
                }));
                job.time_trials(pieces, readback.finish(), maps);
            }
        }
        Ok(job)
    }

    fn map_all(&self, maps: Vec<wgpu::Buffer>) {
        for buf in maps {
            let sender = self.sender.clone();
            buf.map_async(wgpu::MapMode::Read, .., move |result| {
                // The job may be gone (the learner moved on); nothing to do then.
                let _ = sender.send(Message::Mapped(result));
            });
        }
    }

    /// Keeps the pieces to submit (and time) one by one from [`Job::poll`].
    fn time_trials(
        &mut self,
        mut pieces: Vec<Piece>,
        readback: wgpu::CommandBuffer,
        maps: Vec<wgpu::Buffer>,
    ) {
        pieces.reverse();
        self.trials_left = pieces;
        self.readback = Some(readback);
        self.maps = maps;
        self.pending += 1;
        // Web: fires at once (nothing is queued yet); then the first piece goes.
        #[cfg(target_arch = "wasm32")]
        self.after_submitted();
    }

    /// Native: waits for everything submitted so far (the last piece, the
    /// app's last frame), then submits the next piece alone and waits for it,
    /// timing it if it is a trial. After the last one, submits the readback.
    #[cfg(not(target_arch = "wasm32"))]
    fn time_next_trial(&mut self) {
        if self.readback.is_none() {
            return;
        }
        let wait = |device: &wgpu::Device| device.poll(wgpu::PollType::wait_indefinitely());
        if let Err(err) = wait(&self.device) {
            self.failed.get_or_insert(KernelError::Wait {
                error: err.to_string(),
            });
        }
        if let Some(piece) = self.trials_left.pop() {
            let start = std::time::Instant::now();
            self.queue.submit([piece.buffer]);
            match wait(&self.device) {
                Ok(_) if piece.timed => self.wall_times.push(start.elapsed().as_nanos() as f64),
                Ok(_) => {}
                Err(err) => {
                    self.failed.get_or_insert(KernelError::Wait {
                        error: err.to_string(),
                    });
                    self.trials_left.clear();
                }
            }
        }
        if self.trials_left.is_empty() {
            self.submit_readback();
        }
    }

    /// Submits the readback after the last trial and maps its buffers (whose
    /// messages `pending` has counted from the start); retires the trials.
    fn submit_readback(&mut self) {
        if let Some(readback) = self.readback.take() {
            self.queue.submit([readback]);
            let maps = std::mem::take(&mut self.maps);
            self.pending = self.pending.saturating_sub(1);
            self.map_all(maps);
        }
    }

    /// Asks for a message when the work submitted so far is done.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    fn after_submitted(&self) {
        let sender = self.sender.clone();
        self.queue.on_submitted_work_done(move || {
            let _ = sender.send(Message::TrialDone(web_time::Instant::now()));
        });
    }

    /// Web: the last submission is done; time it and submit the next piece.
    /// Each answer costs a frame (the browser delivers it between frames),
    /// so what needs no answer of its own goes along: the untimed prelude
    /// in one submission, and the readback right behind the last piece (the
    /// piece's answer covers only what was submitted before it was asked).
    fn trial_done(&mut self, at: web_time::Instant) {
        if let Some(started) = self.trial_started.take() {
            self.wall_times
                .push(at.duration_since(started).as_nanos() as f64);
        }
        let Some(piece) = self.trials_left.pop() else {
            // No piece at all: only the readback was left.
            if self.readback.is_some() {
                self.pending += 1;
                self.submit_readback();
            }
            return;
        };
        let timed = piece.timed;
        let mut buffers = vec![piece.buffer];
        while !timed && self.trials_left.last().is_some_and(|p| !p.timed) {
            buffers.extend(self.trials_left.pop().map(|p| p.buffer));
        }
        self.trial_started = timed.then(web_time::Instant::now);
        self.queue.submit(buffers);
        self.after_submitted();
        self.pending += 1;
        if self.trials_left.is_empty() {
            // `submit_readback` retires the trials' own pending count.
            self.pending += 1;
            self.submit_readback();
        }
    }

    /// The timer this run uses.
    pub fn timer(&self) -> TimerKind {
        self.timer
    }

    /// Checks for completion; `None` while the GPU works. It does not wait,
    /// except natively on the CPU clock, where each poll times one trial:
    /// the app then draws between trials, never during one.
    pub fn poll(&mut self) -> Option<Result<RunOutput, KernelError>> {
        // Native: lets callbacks run. Web: a no-op; the browser runs them.
        let _ = self.device.poll(wgpu::PollType::Poll);
        #[cfg(not(target_arch = "wasm32"))]
        self.time_next_trial();
        while let Ok(message) = self.receiver.try_recv() {
            self.pending = self.pending.saturating_sub(1);
            match message {
                Message::Mapped(result) => {
                    if let Err(error) = result {
                        self.failed = Some(KernelError::Readback {
                            error: error.to_string(),
                        });
                    }
                }
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
        }
    }

    fn collect(&mut self) -> Result<RunOutput, KernelError> {
        let mut words: Vec<u32> = read_mapped(&self.out_read)?;
        words.truncate(self.out_words);
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
        Ok(RunOutput {
            spec: self.spec,
            output: words.iter().map(|w| f32::from_bits(*w)).collect(),
            words,
            trial_ns,
            step_ns,
            timer: self.timer,
            counted,
            steps: std::mem::take(&mut self.steps),
            traffic: self.traffic,
        })
    }
}
