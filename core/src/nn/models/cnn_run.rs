//! Training the small CNN as one value both views poll: the lesson page a
//! slice per frame, `dlsys-lab train --model cnn` in a loop. One settings
//! type with its limits, one schedule (Adam at a constant rate), one seed
//! rule (the seed draws the weights, the train/test split — so the first
//! epoch's order — and every later epoch's shuffle), and the same
//! evaluations: after each epoch with the running statistics, at the end
//! also the two classic BatchNorm bugs.

use crate::nn::data::DataLoader;
use crate::nn::models::cnn::{self, BnStats, Cnn};
use crate::nn::optimizers::Optimizer;
use crate::nn::{Dataset, TrainError};

/// The largest batch: a CNN image holds ≈ 0.5 MB of activations and
/// gradients in flight, so 1,024 images take about half a gigabyte.
pub const MAX_BATCH: usize = 1024;
/// The most epochs (an epoch of 8,000 images takes seconds).
pub const MAX_EPOCHS: u64 = 100;

/// Images evaluated together in the batched modes, and per step: a step
/// stays well under a frame's worth of work, in the browser too. The
/// training-mode bug goes one image at a time (each normalised by its own
/// statistics), 25 a step.
const EVAL_CHUNK: usize = 100;
const EVAL_STEP_IMAGES: usize = 400;
const SINGLE_STEP_IMAGES: usize = 25;

/// What a CNN run is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct CnnSettings {
    /// Training images used (the first ones; `None`: all).
    pub images: Option<usize>,
    pub epochs: u64,
    pub batch: usize,
    pub lr: f64,
    pub seed: u64,
}

impl Default for CnnSettings {
    /// The lesson's run: one epoch on 2,000 images, batches of 16, Adam at 3e-3.
    fn default() -> Self {
        Self {
            images: Some(2000),
            epochs: 1,
            batch: 16,
            lr: 3e-3,
            seed: 1,
        }
    }
}

impl CnnSettings {
    /// Every limit, with the value refused.
    pub fn validate(&self) -> Result<(), TrainError> {
        super::check_step(self.lr, self.batch, MAX_BATCH)?;
        if self.epochs == 0 || self.epochs > MAX_EPOCHS {
            return Err(TrainError::ModelEpochs {
                value: self.epochs,
                max: MAX_EPOCHS,
            });
        }
        if self.images == Some(0) {
            return Err(TrainError::EmptyTrainingSet);
        }
        Ok(())
    }
}

/// One epoch's figures.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct CnnEpoch {
    pub epoch: u64,
    pub train_loss: f64,
    pub train_accuracy: f64,
    pub test_loss: f64,
    pub test_accuracy: f64,
}

/// What the run reached: the test accuracy with the running statistics,
/// evaluated in training mode one image at a time, and with statistics
/// never updated.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct CnnResult {
    pub accuracy: [f64; 3],
    pub test: usize,
    /// The last training step's loss.
    pub train_loss: f32,
}

/// The evaluation modes of [`CnnResult::accuracy`], in order.
pub const MODES: [BnStats; 3] = [BnStats::Running, BnStats::Batch, BnStats::Initial];

/// What one [`CnnRun::step`] finished, if anything.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CnnEvent {
    Epoch(CnnEpoch),
    Finished(CnnResult),
}

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CnnPhase {
    Training {
        epoch: u64,
        step: usize,
        steps: usize,
        loss: f32,
    },
    /// Evaluating in `MODES[mode]`, `done` of `total` test images.
    Evaluating {
        mode: usize,
        done: usize,
        total: usize,
    },
    Done,
}

/// A CNN training run in flight.
pub struct CnnRun {
    settings: CnnSettings,
    model: Cnn,
    optimizer: Optimizer<f32>,
    train: Dataset,
    test: Dataset,
    loader: DataLoader,
    epoch: u64,
    batches: Vec<Vec<usize>>,
    step: usize,
    loss: f32,
    loss_sum: f64,
    correct: usize,
    eval: Option<Eval>,
    accuracy: [f64; 3],
    done: bool,
}

/// An evaluation in progress: `mode` 0 after every epoch, 1 and 2 at the end.
struct Eval {
    mode: usize,
    done: usize,
    correct: usize,
    loss_sum: f64,
}

impl CnnRun {
    /// A run of `settings` on `train` (the first `settings.images`), tested on `test`.
    pub fn new(settings: CnnSettings, train: Dataset, test: Dataset) -> Result<Self, TrainError> {
        settings.validate()?;
        let len = settings.images.map_or(train.len(), |n| n.min(train.len()));
        if len == 0 || test.is_empty() {
            return Err(TrainError::EmptyTrainingSet);
        }
        let loader = DataLoader {
            len,
            batch_size: settings.batch,
            shuffle: true,
            drop_last: false,
            seed: settings.seed,
        };
        Ok(Self {
            model: Cnn::new(settings.seed),
            optimizer: cnn::optimizer(settings.lr),
            batches: epoch_batches(&loader, 1),
            loader,
            settings,
            train,
            test,
            epoch: 1,
            step: 0,
            loss: f32::NAN,
            loss_sum: 0.0,
            correct: 0,
            eval: None,
            accuracy: [f64::NAN; 3],
            done: false,
        })
    }

    pub fn settings(&self) -> &CnnSettings {
        &self.settings
    }

    pub fn model(&self) -> &Cnn {
        &self.model
    }

    /// Training images per epoch.
    pub fn images(&self) -> usize {
        self.loader.len
    }

    pub fn test_len(&self) -> usize {
        self.test.len()
    }

    pub fn phase(&self) -> CnnPhase {
        match (&self.eval, self.done) {
            (_, true) => CnnPhase::Done,
            (Some(e), false) => CnnPhase::Evaluating {
                mode: e.mode,
                done: e.done,
                total: self.test.len(),
            },
            (None, false) => CnnPhase::Training {
                epoch: self.epoch,
                step: self.step,
                steps: self.batches.len(),
                loss: self.loss,
            },
        }
    }

    /// One unit of work — a training step, or a few hundred test images
    /// evaluated — and what it finished. A loss that is not finite stops
    /// the run with the epoch it happened in.
    pub fn step(&mut self) -> Result<Option<CnnEvent>, TrainError> {
        if self.done {
            return Ok(None);
        }
        if let Some(eval) = &mut self.eval {
            let stats = MODES[eval.mode];
            let (chunk, per_step) = if stats == BnStats::Batch {
                (1, SINGLE_STEP_IMAGES)
            } else {
                (EVAL_CHUNK, EVAL_STEP_IMAGES)
            };
            let end = (eval.done + per_step).min(self.test.len());
            let indices: Vec<usize> = (eval.done..end).collect();
            for part in indices.chunks(chunk) {
                let (x, y) = self.test.gather(part);
                let (loss, correct) = self.model.score(&x, &y, stats);
                eval.loss_sum += loss;
                eval.correct += correct;
            }
            eval.done = end;
            if eval.done < self.test.len() {
                return Ok(None);
            }
            let n = self.test.len() as f64;
            self.accuracy[eval.mode] = eval.correct as f64 / n;
            let (mode, test_loss) = (eval.mode, eval.loss_sum / n);
            self.eval = None;
            if mode == 0 {
                let images = self.loader.len as f64;
                let epoch = CnnEpoch {
                    epoch: self.epoch,
                    train_loss: self.loss_sum / images,
                    train_accuracy: self.correct as f64 / images,
                    test_loss,
                    test_accuracy: self.accuracy[0],
                };
                if self.epoch < self.settings.epochs {
                    self.next_epoch();
                } else {
                    self.eval = Some(Eval::of(1));
                }
                return Ok(Some(CnnEvent::Epoch(epoch)));
            }
            if mode + 1 < MODES.len() {
                self.eval = Some(Eval::of(mode + 1));
                return Ok(None);
            }
            self.done = true;
            return Ok(Some(CnnEvent::Finished(CnnResult {
                accuracy: self.accuracy,
                test: self.test.len(),
                train_loss: self.loss,
            })));
        }
        let (x, y) = self.train.gather(&self.batches[self.step]);
        let step = self.model.train_step(&mut self.optimizer, &x, &y);
        if !step.loss.is_finite() {
            self.done = true;
            return Err(TrainError::Diverged { epoch: self.epoch });
        }
        self.loss = step.loss;
        self.loss_sum += f64::from(step.loss) * y.len() as f64;
        self.correct += step.correct;
        self.step += 1;
        if self.step == self.batches.len() {
            self.eval = Some(Eval::of(0));
        }
        Ok(None)
    }

    fn next_epoch(&mut self) {
        self.epoch += 1;
        self.batches = epoch_batches(&self.loader, self.epoch);
        self.step = 0;
        self.loss_sum = 0.0;
        self.correct = 0;
    }
}

/// Epoch `epoch`'s batches: the first in the split's own (seeded, random)
/// order, every later one reshuffled.
fn epoch_batches(loader: &DataLoader, epoch: u64) -> Vec<Vec<usize>> {
    let shuffle = epoch > 1;
    DataLoader {
        shuffle,
        ..loader.clone()
    }
    .batches(epoch)
}

impl Eval {
    fn of(mode: usize) -> Self {
        Self {
            mode,
            done: 0,
            correct: 0,
            loss_sum: 0.0,
        }
    }
}
