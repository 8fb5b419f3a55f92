//! Training through the pipeline, every batch timed: when its worker built
//! it, when the trainer asked for it and got it, when its step ended.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::Serialize;
use web_time::Instant;

use super::loader::{Loader, Plan};
use super::model::Costs;
use super::stages::StageTimes;
use super::{MAX_BATCHES, PipelineError, PipelineSettings};
use crate::autograd::Tensor;
use crate::nn::data::Packed;
use crate::nn::{Activation, DataLoader, Dataset, Mlp, Optimizer, OptimizerKind};

/// One training step and the batch it took, in seconds since the run began.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepRecord {
    pub index: usize,
    pub worker: usize,
    /// When the worker started and finished the batch.
    pub load_start_s: f64,
    pub load_end_s: f64,
    /// When the trainer asked for it, got it, and finished its step.
    pub asked_s: f64,
    pub got_s: f64,
    pub done_s: f64,
    pub times: StageTimes,
    pub loss: f64,
}

impl StepRecord {
    pub fn compute_s(&self) -> f64 {
        self.done_s - self.got_s
    }

    pub fn waited_s(&self) -> f64 {
        self.got_s - self.asked_s
    }
}

/// A finished (or stopped) run.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineRun {
    pub settings: PipelineSettings,
    pub records: Vec<StepRecord>,
    /// From the start to the last step's end.
    pub wall_s: f64,
    pub weights: Vec<Tensor<f32>>,
}

impl PipelineRun {
    /// The steady state the model predicts: the steps after the start-up
    /// — the first waits for the pipeline to fill, and the next ones drain
    /// the k·(prefetch + 1) batches the workers built meanwhile — timed from
    /// the end of the last start-up step to the end of the run (at most
    /// half the run is skipped); the whole run if it had one step.
    fn steady(&self) -> (&[StepRecord], f64) {
        let n = self.records.len();
        let skip = (self.settings.workers * (self.settings.prefetch + 1))
            .min(n / 2)
            .max(1);
        match (self.records.get(skip - 1), self.records.last()) {
            (Some(start), Some(end)) if n > skip => {
                (&self.records[skip..], end.done_s - start.done_s)
            }
            _ => (&self.records, self.wall_s),
        }
    }

    /// The share of the steady state the trainer spent computing.
    pub fn utilisation(&self) -> f64 {
        let (steps, span) = self.steady();
        let busy: f64 = steps.iter().map(StepRecord::compute_s).sum();
        if span > 0.0 {
            (busy / span).min(1.0)
        } else {
            0.0
        }
    }

    /// Samples trained per second in the steady state.
    pub fn samples_per_s(&self) -> f64 {
        let (steps, span) = self.steady();
        let samples = (steps.len() * self.settings.batch) as f64;
        if span > 0.0 { samples / span } else { 0.0 }
    }

    /// Each stage's mean time per batch.
    pub fn mean_times(&self) -> StageTimes {
        let mut sum = StageTimes::default();
        for r in &self.records {
            sum.add(&r.times);
        }
        sum.scaled(1.0 / self.records.len().max(1) as f64)
    }

    /// The mean training step in the steady state (the first steps of a
    /// run start cold).
    pub fn mean_compute_s(&self) -> f64 {
        let (steps, _) = self.steady();
        steps.iter().map(StepRecord::compute_s).sum::<f64>() / steps.len().max(1) as f64
    }

    /// The model's inputs, as this run measured them.
    pub fn costs(&self) -> Costs {
        let t = self.mean_times();
        Costs {
            compute_s: self.mean_compute_s(),
            cpu_s: t.cpu_s(),
            io_s: t.extra_io_s,
        }
    }
}

/// `batches` batches of `batch` examples of `examples`, epoch after epoch
/// (each reshuffled, the last partial batch dropped), with their epochs.
pub fn run_batches(examples: usize, batch: usize, batches: usize, seed: u64) -> Plan {
    let loader = DataLoader {
        len: examples,
        batch_size: batch,
        shuffle: true,
        drop_last: true,
        seed,
    };
    let mut plan = Vec::with_capacity(batches);
    let mut epoch = 0;
    while plan.len() < batches {
        let epoch_batches = loader.batches(epoch);
        if epoch_batches.is_empty() {
            break;
        }
        plan.extend(
            epoch_batches
                .into_iter()
                .take(batches - plan.len())
                .map(|b| (epoch, b)),
        );
        epoch += 1;
    }
    Arc::new(plan)
}

fn model(
    settings: &PipelineSettings,
    features: usize,
    classes: usize,
) -> Result<Mlp<f32>, PipelineError> {
    let sizes: Vec<usize> = std::iter::once(features)
        .chain(settings.hidden.iter().copied())
        .chain(std::iter::once(classes))
        .collect();
    Mlp::new(&sizes, Activation::Relu, settings.seed).map_err(|e| PipelineError::Model {
        reason: e.to_string(),
    })
}

fn check_batches(batches: usize) -> Result<(), PipelineError> {
    if batches == 0 || batches > MAX_BATCHES {
        return Err(PipelineError::Batches {
            batches: batches as u64,
            max: MAX_BATCHES as u64,
        });
    }
    Ok(())
}

/// One plain SGD step on a batch; the batch's loss.
fn step(model: &mut Mlp<f32>, optimizer: &mut Optimizer<f32>, x: &[f32], y: &[usize]) -> f64 {
    let (loss, flat) = model.gradient(x, y);
    let grads = model.unflatten(&flat);
    optimizer.step(&mut model.params_mut(), &grads);
    loss
}

/// Trains the settings' MLP on `batches` batches through the pipeline;
/// `on_step` sees each step as it ends and stops the run by returning
/// `false`, and raising `stop` stops it even while the trainer waits for a
/// batch (the loader's workers are stopped and joined before this
/// returns).
pub fn train_through(
    data: Arc<Packed>,
    settings: &PipelineSettings,
    batches: usize,
    stop: Arc<AtomicBool>,
    on_step: &mut dyn FnMut(&StepRecord) -> bool,
) -> Result<PipelineRun, PipelineError> {
    settings.check(data.len())?;
    check_batches(batches)?;
    let mut net = model(settings, data.features(), data.classes)?;
    let mut optimizer = Optimizer::new(OptimizerKind::Sgd, settings.lr, 0.0);
    let plan = run_batches(data.len(), settings.batch, batches, settings.seed);
    let origin = Instant::now();
    let mut loader = Loader::start(data, plan, settings, origin, stop);
    let mut records = Vec::with_capacity(loader.len());
    loop {
        let asked_s = origin.elapsed().as_secs_f64();
        let Some(batch) = loader.next_batch() else {
            break;
        };
        let batch = batch?;
        let got_s = origin.elapsed().as_secs_f64();
        let loss = step(&mut net, &mut optimizer, &batch.x, &batch.y);
        let record = StepRecord {
            index: batch.index,
            worker: batch.worker,
            load_start_s: batch.start_s,
            load_end_s: batch.end_s,
            asked_s,
            got_s,
            done_s: origin.elapsed().as_secs_f64(),
            times: batch.times,
            loss,
        };
        if !loss.is_finite() {
            return Err(PipelineError::Diverged {
                step: batch.index as u64 + 1,
            });
        }
        let go_on = on_step(&record);
        records.push(record);
        if !go_on {
            break;
        }
    }
    drop(loader);
    Ok(PipelineRun {
        settings: settings.clone(),
        wall_s: records.last().map_or(0.0, |r| r.done_s),
        records,
        weights: net.params().into_iter().cloned().collect(),
    })
}

/// The same training without a pipeline: each batch gathered from the
/// decoded data set (no augmentation). Its weights are what
/// [`train_through`] must give with augmentation off.
pub fn train_direct(
    data: &Dataset,
    settings: &PipelineSettings,
    batches: usize,
) -> Result<Vec<Tensor<f32>>, PipelineError> {
    settings.check(data.len())?;
    check_batches(batches)?;
    let mut net = model(settings, data.features, data.classes)?;
    let mut optimizer = Optimizer::new(OptimizerKind::Sgd, settings.lr, 0.0);
    for (_, samples) in run_batches(data.len(), settings.batch, batches, settings.seed).iter() {
        let (x, y) = data.gather(samples);
        step(&mut net, &mut optimizer, &x, &y);
    }
    Ok(net.params().into_iter().cloned().collect())
}
