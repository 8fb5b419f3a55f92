//! The loader: `k` workers, worker w building batches w, w + k, w + 2k, …
//! of the run, each handing them over its own queue of `prefetch` batches,
//! and the trainer taking batch j from worker j mod k — in order, as
//! PyTorch's DataLoader does. Dropping the loader raises its stop flag,
//! drops the queues (a worker blocked on a full one wakes with an error)
//! and joins every worker before it returns. The caller's stop flag is
//! seen by the workers within a sample and by a trainer waiting for a
//! batch within [`POLL`].

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};

use web_time::{Duration, Instant};

use super::stages::{Batch, Stop, make_batch};
use super::{PipelineError, PipelineSettings};
use crate::nn::data::Packed;

/// How often a trainer waiting for a batch looks at the caller's stop flag.
pub const POLL: Duration = Duration::from_millis(20);

/// The batches of a run: each batch's epoch and its examples.
pub type Plan = Arc<Vec<(u64, Vec<usize>)>>;

pub struct Loader {
    data: Arc<Packed>,
    plan: Plan,
    settings: PipelineSettings,
    origin: Instant,
    stop: Stop,
    queues: Vec<Receiver<Batch>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    next: usize,
}

impl Loader {
    /// Starts the workers (none when `settings.threads` is off: then each
    /// batch is built when it is asked for; at least one worker whatever
    /// the settings say). Times count from `origin`; raising `asked` stops
    /// the run.
    pub fn start(
        data: Arc<Packed>,
        plan: Plan,
        settings: &PipelineSettings,
        origin: Instant,
        asked: Arc<AtomicBool>,
    ) -> Self {
        let settings = PipelineSettings {
            workers: settings.workers.max(1),
            prefetch: settings.prefetch.max(1),
            ..settings.clone()
        };
        let stop = Stop::new(asked);
        let mut queues = Vec::new();
        let mut workers = Vec::new();
        if settings.threads {
            for w in 0..settings.workers {
                let (send, receive) = sync_channel(settings.prefetch);
                queues.push(receive);
                let (data, plan, settings, stop) =
                    (data.clone(), plan.clone(), settings.clone(), stop.clone());
                let worker = move || {
                    for index in (w..plan.len()).step_by(settings.workers) {
                        let (epoch, samples) = &plan[index];
                        let Some(batch) =
                            make_batch(&data, samples, index, *epoch, w, &settings, origin, &stop)
                        else {
                            return;
                        };
                        if send.send(batch).is_err() {
                            return;
                        }
                    }
                };
                match std::thread::Builder::new()
                    .name(format!("loader-{w}"))
                    .spawn(worker)
                {
                    Ok(handle) => workers.push(handle),
                    // No thread: its queue is closed, and the trainer reports it.
                    Err(_) => continue,
                }
            }
        }
        Self {
            data,
            plan,
            settings,
            origin,
            stop,
            queues,
            workers,
            next: 0,
        }
    }

    /// The next batch in the run's order; `None` after the last, or once
    /// the caller asked to stop.
    pub fn next_batch(&mut self) -> Option<Result<Batch, PipelineError>> {
        let index = self.next;
        let (epoch, samples) = self.plan.get(index)?;
        self.next += 1;
        if !self.settings.threads {
            let batch = make_batch(
                &self.data,
                samples,
                index,
                *epoch,
                0,
                &self.settings,
                self.origin,
                &self.stop,
            );
            return match batch {
                Some(batch) => Some(Ok(batch)),
                None if self.stop.asked() => None,
                None => Some(Err(PipelineError::WorkerFailed)),
            };
        }
        let queue = self.queues.get(index % self.settings.workers)?;
        loop {
            match queue.recv_timeout(POLL) {
                Ok(batch) => return Some(Ok(batch)),
                Err(RecvTimeoutError::Timeout) if self.stop.asked() => return None,
                Err(RecvTimeoutError::Timeout) => {}
                // A worker that stopped because the caller asked is a stop, not a failure.
                Err(RecvTimeoutError::Disconnected) if self.stop.asked() => return None,
                Err(RecvTimeoutError::Disconnected) => {
                    return Some(Err(PipelineError::WorkerFailed));
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.plan.len()
    }

    pub fn is_empty(&self) -> bool {
        self.plan.is_empty()
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.stop.raise();
        self.queues.clear();
        for worker in self.workers.drain(..) {
            // A worker that panicked has nothing left to stop.
            let _ = worker.join();
        }
    }
}
