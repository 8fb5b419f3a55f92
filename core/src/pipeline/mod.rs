//! The input pipeline: why the trainer waits for data, measured on a real
//! loader.
//!
//! `k` loader workers (threads natively; on the web one cooperative worker
//! in the trainer's own thread) each build every k-th batch of the epoch
//! through per-sample stages that really run (`stages.rs`): read the
//! example's bytes from the packed image set, decode them to f32, augment
//! (a shift and noise seeded per epoch and sample), optionally burn extra
//! CPU (a slow JPEG decoder) or block (a slow disk or network read), then
//! collate the batch. Each worker hands its batches over a bounded queue of
//! `prefetch` batches (`loader.rs`); the trainer takes them in order, so no
//! sample is lost or repeated, and dropping the loader stops its workers.
//!
//! `train.rs` trains the engine's MLP through it and keeps every batch's
//! timestamps: when its worker built it, when the trainer asked for it and
//! got it, when the step ended. `model.rs` predicts the throughput and the
//! trainer's utilisation from the stage times measured with one worker.

mod loader;
mod model;
mod stages;
#[cfg(test)]
mod tests;
mod train;

pub use loader::Loader;
pub use model::{
    ABOVE_MODEL_TOLERANCE, Bound, Costs, Prediction, above_model, epoch_seconds, knee, predict,
};
pub use stages::{Batch, StageTimes, make_batch};
pub use train::{PipelineRun, StepRecord, run_batches, train_direct, train_through};

use serde::{Deserialize, Serialize};

/// The most loader workers, prefetched batches per worker, examples per
/// batch and batches per run a pipeline here takes.
pub const MAX_WORKERS: usize = 8;
pub const MAX_PREFETCH: usize = 16;
pub const MAX_BATCH: usize = 1024;
pub const MAX_BATCHES: usize = 10_000;
/// The most extra cost per sample, in microseconds (0.1 s).
pub const MAX_EXTRA_US: u64 = 100_000;

/// A pipeline and the run through it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PipelineSettings {
    pub workers: usize,
    /// Batches each worker may have ready ahead of the trainer.
    pub prefetch: usize,
    pub batch: usize,
    pub augment: bool,
    /// Extra CPU work per sample (µs), as a slow decoder would cost.
    pub extra_cpu_us: u64,
    /// Extra blocking wait per sample (µs), as a slow read would cost.
    pub extra_io_us: u64,
    pub seed: u64,
    /// Workers on threads; `false`: one cooperative worker in the
    /// trainer's thread (the web).
    pub threads: bool,
    /// The MLP's hidden layers and the learning rate of its SGD.
    pub hidden: Vec<usize>,
    pub lr: f64,
}

impl Default for PipelineSettings {
    fn default() -> Self {
        Self {
            workers: 1,
            prefetch: 2,
            batch: 32,
            augment: true,
            extra_cpu_us: 0,
            extra_io_us: 0,
            seed: 1,
            threads: true,
            hidden: vec![64],
            lr: 0.1,
        }
    }
}

impl PipelineSettings {
    /// Whether the settings describe a pipeline here.
    pub fn check(&self, examples: usize) -> Result<(), PipelineError> {
        let count = |value: usize| value as u64;
        if !(1..=MAX_WORKERS).contains(&self.workers) {
            return Err(PipelineError::Workers {
                value: count(self.workers),
                max: count(MAX_WORKERS),
            });
        }
        if !(1..=MAX_PREFETCH).contains(&self.prefetch) {
            return Err(PipelineError::Prefetch {
                value: count(self.prefetch),
                max: count(MAX_PREFETCH),
            });
        }
        let max = MAX_BATCH.min(examples);
        if !(1..=max).contains(&self.batch) {
            return Err(PipelineError::Batch {
                value: count(self.batch),
                max: count(max),
            });
        }
        if let Some(us) = [self.extra_cpu_us, self.extra_io_us]
            .into_iter()
            .find(|us| *us > MAX_EXTRA_US)
        {
            return Err(PipelineError::Extra {
                us,
                max: MAX_EXTRA_US,
            });
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(PipelineError::LearningRate { value: self.lr });
        }
        Ok(())
    }
}

crate::catalog_error! {
    /// Why a pipeline cannot run.
    pub enum PipelineError {
        /// Loader workers outside 1..=max.
        Workers { value: u64, max: u64 } = "pipeline.workers",
        /// Prefetched batches per worker outside 1..=max.
        Prefetch { value: u64, max: u64 } = "pipeline.prefetch",
        /// A batch outside 1..=max (the batch limit, or the data's size).
        Batch { value: u64, max: u64 } = "pipeline.batch",
        /// Extra cost per sample past the limit (µs).
        Extra { us: u64, max: u64 } = "pipeline.extra",
        /// A learning rate that is not a positive number.
        LearningRate { value: f64 } = "pipeline.lr",
        /// No batches asked for, or too many.
        Batches { batches: u64, max: u64 } = "pipeline.batches",
        /// The data set is not an image set or cannot be read.
        Data { reason: String } = "pipeline.data",
        /// The model cannot be built.
        Model { reason: String } = "pipeline.model",
        /// A loader worker stopped without its batch.
        WorkerFailed = "pipeline.worker_failed",
        /// The loss stopped being finite.
        Diverged { step: u64 } = "pipeline.diverged",
    }
}
