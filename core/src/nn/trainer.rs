//! The trainer: one step function over batches, epochs and their history.

use serde::Serialize;

use super::TrainError;
use super::config::TrainConfig;
use super::data::{DataLoader, Dataset};
use super::layers::Mlp;
use super::optimizers::Optimizer;
use super::pass::{Metering, Outcome, Pass};
use super::precision::{MixedEpoch, MixedReport, MixedState};
use crate::autograd::{Stored, Tensor};
use crate::memory::measure::{Formats, Held, Meter, Phase};
use crate::memory::precision::Component;
use crate::memory::trace::BufKey;
use crate::mixed::MasterWeights;

/// What the trainer is doing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Status {
    Running,
    Finished,
    /// The loss became NaN or infinite at this step; training stopped.
    Diverged {
        epoch: u64,
        step: u64,
        loss: f64,
    },
}

/// One epoch's numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EpochStats {
    pub epoch: u64,
    pub train_loss: f64,
    pub train_accuracy: f64,
    pub test_loss: f64,
    pub test_accuracy: f64,
    /// Under a reduced-precision policy: what the epoch's rounding did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mixed: Option<MixedEpoch>,
}

/// Trains an MLP in f32 one batch at a time, so a UI can interleave it with frames.
pub struct Trainer {
    pub config: TrainConfig,
    pub model: Mlp<f32>,
    pub optimizer: Optimizer<f32>,
    pub train: Dataset,
    pub test: Dataset,
    pub loader: DataLoader,
    pub history: Vec<EpochStats>,
    /// (global step, batch loss) for every step.
    pub losses: Vec<(u64, f64)>,
    pub status: Status,
    pub epoch: u64,
    batches: Vec<Vec<usize>>,
    batch: usize,
    step: u64,
    epoch_loss: f64,
    epoch_correct: usize,
    epoch_seen: usize,
    /// Reduced-precision state, when the policy is not plain fp32.
    mixed: Option<MixedState>,
    /// When set, each step counts every buffer it holds here.
    pub meter: Option<Meter>,
}

impl Trainer {
    pub fn new(config: TrainConfig, train: Dataset, test: Dataset) -> Result<Self, TrainError> {
        config.validate()?;
        if train.is_empty() {
            return Err(TrainError::EmptyTrainingSet);
        }
        let mut sizes = vec![train.features];
        sizes.extend(&config.hidden);
        sizes.push(train.classes);
        let model = Mlp::new(&sizes, config.activation, config.seed)?;
        let loader = DataLoader {
            len: train.len(),
            batch_size: config.batch_size,
            shuffle: true,
            drop_last: false,
            seed: config.seed,
        };
        let batches = loader.batches(0);
        let mut optimizer = Optimizer::new(config.optimizer, config.lr, config.weight_decay);
        let mixed = MixedState::for_config(&config, model.layers.len(), &mut optimizer)?;
        let mut trainer = Self {
            optimizer,
            config,
            model,
            train,
            test,
            loader,
            history: Vec::new(),
            losses: Vec::new(),
            status: Status::Running,
            epoch: 0,
            batches,
            batch: 0,
            step: 0,
            epoch_loss: 0.0,
            epoch_correct: 0,
            epoch_seen: 0,
            mixed,
            meter: None,
        };
        // The training inputs enter the network in the compute format: round
        // them once, not every batch.
        if let Some(m) = &trainer.mixed {
            m.round_to_compute(&mut trainer.train.x);
        }
        // Weights stored in the compute format start out rounded to it.
        if let Some(m) = &trainer.mixed
            && trainer.config.policy.master_weights == MasterWeights::Same
        {
            for p in trainer.model.params_mut() {
                m.round_to_compute(&mut p.data);
            }
        }
        Ok(trainer)
    }

    /// The loss scale, its history and the gradient histograms (reduced precision only).
    pub fn mixed_report(&self) -> Option<MixedReport> {
        self.mixed.as_ref().map(MixedState::report)
    }

    /// Batches per epoch.
    pub fn batches_per_epoch(&self) -> usize {
        self.batches.len()
    }

    /// Fraction of all configured work done, 0..=1.
    pub fn progress(&self) -> f64 {
        let per = self.batches.len().max(1) as f64;
        ((self.epoch as f64 * per + self.batch as f64) / (self.config.epochs as f64 * per)).min(1.0)
    }

    /// Trains on one batch (and closes the epoch when it was the last).
    pub fn step(&mut self) -> &Status {
        self.step_batch();
        &self.status
    }

    /// One batch. Plain fp32 has no policy state: nothing is rounded, scaled
    /// or accumulated, and the optimizer steps on the batch's gradients.
    /// Under a reduced-precision policy every op output and every gradient
    /// is rounded to the compute format, the loss is scaled, gradients are
    /// accumulated over micro-batches in the accumulation format, and the
    /// step is skipped when they are not finite (see [`MixedState`]). With a
    /// [`Self::meter`], every buffer the step holds is counted.
    fn step_batch(&mut self) {
        if self.status != Status::Running {
            return;
        }
        let mut mixed = self.mixed.take();
        let mut meter = self.meter.take();
        let indices = std::mem::take(&mut self.batches[self.batch]);
        let (x, y) = self.train.gather(&indices);
        self.batches[self.batch] = indices;
        let rows = y.len();
        // The weights leave the model for the pass and come back, unless
        // fp32 master weights stay and the pass reads rounded copies.
        let copies = mixed.is_some() && self.config.policy.master_weights != MasterWeights::Same;
        let mut values: Vec<Stored<f32>> = match mixed.as_ref() {
            Some(m) if copies => m.copies(&self.model),
            _ => self
                .model
                .params_mut()
                .into_iter()
                .map(|t| Stored::Whole(std::mem::replace(t, Tensor::zeros(&[0]))))
                .collect(),
        };
        self.step += 1;
        let formats = Formats::of(&self.config.policy);
        // What the trainer holds outside the pass, walked only when metering.
        let outside = meter
            .is_some()
            .then(|| self.held_outside(mixed.as_ref(), &formats, &y));
        let mut pass = Pass {
            activation: self.config.activation,
            x: Tensor::new(x, &[rows, self.train.features]),
            y: &y,
            mixed: mixed.as_ref(),
            step: self.step,
            loss_weight: self.config.loss_weight,
            metering: meter
                .as_mut()
                .zip(outside)
                .map(|(meter, outside)| Metering {
                    meter,
                    outside,
                    formats,
                    reads: formats.compute,
                }),
        };
        let outcome = if self.config.checkpoint > 0 {
            pass.checkpointed(&mut values, self.config.checkpoint)
        } else {
            pass.whole(&mut values)
        };
        drop(pass);
        if copies {
            // This step's copies are done with.
            drop(values);
        } else {
            for (p, v) in self.model.params_mut().into_iter().zip(values) {
                *p = v.into_tensor();
            }
        }
        let (loss_value, predictions, grads) = match outcome {
            Outcome::Done {
                loss,
                predictions,
                grads,
            } => {
                // Into the buffers the optimizer reads (the accumulation
                // format's), one tensor at a time.
                let grads: Vec<Tensor<f32>> = grads.into_iter().map(Stored::into_tensor).collect();
                (loss, predictions, grads)
            }
            Outcome::NotFinite { loss } => {
                // Non-finite parameters show up here too, one step after they appear.
                self.status = Status::Diverged {
                    epoch: self.epoch,
                    step: self.step,
                    loss,
                };
                self.mixed = mixed;
                self.meter = meter;
                return;
            }
        };
        self.epoch_correct += predictions.iter().zip(&y).filter(|(p, t)| p == t).count();
        self.epoch_seen += rows;
        self.epoch_loss += loss_value * rows as f64;
        self.losses.push((self.step, loss_value));
        match mixed.as_mut() {
            Some(m) => m.apply(
                grads,
                self.step,
                &self.config,
                &mut self.optimizer,
                &mut self.model,
            ),
            None => {
                self.optimizer.step(&mut self.model.params_mut(), &grads);
                if let Some(meter) = meter.as_mut() {
                    // The gradients are still held while the optimizer steps.
                    let mut held = self.optimizer_moment(None, &formats, &y);
                    let elements = grads.iter().map(Tensor::numel).sum();
                    held.f32s(
                        BufKey::Gradients,
                        Component::Gradients,
                        elements,
                        formats.accumulation,
                    );
                    meter.record(Phase::Optimizer, &held);
                }
            }
        }
        if let Some(m) = mixed.as_mut() {
            if let Some(meter) = meter.as_mut() {
                // The accumulation buffer holds the gradients until released.
                meter.record(
                    Phase::Optimizer,
                    &self.optimizer_moment(Some(m), &formats, &y),
                );
            }
            m.release_grads(&self.config);
        }
        self.mixed = mixed;
        self.meter = meter;
        self.batch += 1;
        if self.batch == self.batches.len() {
            self.finish_epoch();
        }
    }

    /// What the trainer holds outside a pass: the model's parameters (the
    /// fp32 masters when the pass reads copies), the optimizer state, the
    /// gradient (accumulation) buffer and this batch's labels.
    fn held_outside(&self, mixed: Option<&MixedState>, f: &Formats, y: &[usize]) -> Held {
        let mut held = Held::default();
        let masters = mixed.is_some() && self.config.policy.master_weights != MasterWeights::Same;
        for (i, p) in self.model.params().iter().enumerate() {
            if masters {
                held.f32s(
                    BufKey::Master(i as u32),
                    Component::MasterWeights,
                    p.numel(),
                    4,
                );
            } else {
                held.f32s(
                    BufKey::Param(i as u32),
                    Component::Parameters,
                    p.numel(),
                    f.compute,
                );
            }
        }
        if let Some(m) = mixed {
            held.f32s(
                BufKey::Gradients,
                Component::Gradients,
                m.accumulated_elements(),
                f.accumulation,
            );
        }
        for (i, s) in self.optimizer.state_tensors().enumerate() {
            held.stored(
                BufKey::State(i as u32),
                Component::OptimizerState,
                s,
                f.state,
            );
        }
        held.exact(
            BufKey::Labels,
            Component::Inputs,
            y.len(),
            std::mem::size_of::<usize>() as u64,
        );
        held
    }

    /// What the optimizer step held at its largest: [`Self::held_outside`]
    /// and the f32 scratch packed state was decoded into, a block of each
    /// state tensor at a time (emulation overhead: a real kernel works in
    /// registers).
    fn optimizer_moment(&self, mixed: Option<&MixedState>, f: &Formats, y: &[usize]) -> Held {
        let mut held = self.held_outside(mixed, f, y);
        let scratch = self.optimizer.scratch_elements() as u64 * 4;
        held.buffer(BufKey::StateScratch, Component::OptimizerState, 0, scratch);
        held
    }

    fn finish_epoch(&mut self) {
        let (test_loss, test_accuracy) = self.evaluate(&self.test);
        let mixed = self.mixed.as_mut().map(MixedState::epoch);
        let seen = self.epoch_seen.max(1) as f64;
        self.history.push(EpochStats {
            epoch: self.epoch + 1,
            train_loss: self.epoch_loss / seen,
            train_accuracy: self.epoch_correct as f64 / seen,
            test_loss,
            test_accuracy,
            mixed,
        });
        self.epoch += 1;
        self.batch = 0;
        self.epoch_loss = 0.0;
        self.epoch_correct = 0;
        self.epoch_seen = 0;
        if self.epoch >= self.config.epochs {
            self.status = Status::Finished;
        } else {
            self.batches = self.loader.batches(self.epoch);
        }
    }

    /// Runs until finished or diverged.
    pub fn run(&mut self) -> &Status {
        while self.status == Status::Running {
            self.step_batch();
        }
        &self.status
    }

    /// Trains until the current epoch ends (or training stops).
    pub fn run_epoch(&mut self) -> &Status {
        let epoch = self.epoch;
        while self.status == Status::Running && self.epoch == epoch {
            self.step_batch();
        }
        &self.status
    }

    /// Trains whole batches until `budget` has passed (at least one batch),
    /// so a UI can train between frames without stalling them.
    pub fn run_for(&mut self, budget: web_time::Duration) -> &Status {
        let start = web_time::Instant::now();
        while self.status == Status::Running {
            self.step_batch();
            if start.elapsed() >= budget {
                break;
            }
        }
        &self.status
    }

    /// Mean loss and accuracy of the current model on `data`.
    pub fn evaluate(&self, data: &Dataset) -> (f64, f64) {
        evaluate(&self.model, data)
    }

    /// Predicted class of each test example.
    pub fn predict(&self, data: &Dataset) -> Vec<usize> {
        let indices: Vec<usize> = (0..data.len()).collect();
        indices
            .chunks(512)
            .flat_map(|chunk| {
                let (x, _) = data.gather(chunk);
                self.model.logits(&x, chunk.len()).argmax_rows()
            })
            .collect()
    }
}

/// Σ over rows of −log softmax(logits)[label], stable, in f64.
fn cross_entropy_sum(logits: &Tensor<f32>, labels: &[usize]) -> f64 {
    labels
        .iter()
        .enumerate()
        .map(|(r, label)| {
            let row = logits.row(r);
            let max = row.iter().fold(f32::NEG_INFINITY, |m, x| m.max(*x));
            let sum: f64 = row.iter().map(|x| f64::from(*x - max).exp()).sum();
            sum.ln() - f64::from(row[*label] - max)
        })
        .sum()
}

/// Mean loss and accuracy of `model` on `data` (NaN for no data), in
/// chunks of 500 examples read in place.
pub fn evaluate(model: &Mlp<f32>, data: &Dataset) -> (f64, f64) {
    if data.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let (mut loss, mut correct) = (0.0, 0);
    let chunk = 500;
    for start in (0..data.len()).step_by(chunk) {
        let rows = chunk.min(data.len() - start);
        let x = &data.x[start * data.features..(start + rows) * data.features];
        let labels = &data.y[start..start + rows];
        let logits = model.logits(x, rows);
        loss += cross_entropy_sum(&logits, labels);
        correct += logits
            .argmax_rows()
            .iter()
            .zip(labels)
            .filter(|(p, t)| p == t)
            .count();
    }
    (loss / data.len() as f64, correct as f64 / data.len() as f64)
}
