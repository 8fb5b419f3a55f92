//! Weight-only post-training quantisation of the engine's CNN and its char
//! transformer: each trained by its own run (`CnnRun`, `TextRun`: the
//! layers lesson's and `dlsys-lab train --model cnn|transformer`'s schedule
//! and seed), then its weight matrices quantised and the model measured
//! again — test accuracy for the CNN, held-out loss (nats per character)
//! for the transformer.
//!
//! What is quantised: every matrix a GEMM multiplies — the CNN's two
//! convolutions (`[out, patch]`: the reduction runs along axis 1, a channel
//! is a row) and its linear layer (`[in, out]`), the transformer's W_q,
//! W_k, W_v, W_o, W_1, W_2 and head (`[in, out]`). What stays f32, as
//! weight-only schemes keep it: biases, BatchNorm's γ and β and running
//! statistics, LayerNorm, and the embeddings (a lookup, not a GEMM).

use serde::Serialize;

use super::QuantError;
use super::ptq::{FP16_SCALE_BYTES, GRID_BITS, GranularityKind, weight_granularity_along};
use super::scheme::{Mapping, QuantSettings};
use super::tensor::{ErrorStats, error_stats, quantise_with_stats};
use crate::autograd::tensor::Tensor;
use crate::nn::data::{self, Dataset};
use crate::nn::models::char_model::CharModel;
use crate::nn::models::cnn::{BnStats, Cnn};
use crate::nn::models::cnn_run::{CnnEvent, CnnPhase, CnnRun, CnnSettings};
use crate::nn::models::text_run::{TextEvent, TextRun, TextSettings};

/// The CNN's evaluation batch (images scored together).
const CNN_EVAL_BATCH: usize = 100;
/// Test images a [`ModelJob::step`] scores: a few hundred, as `CnnRun`'s
/// evaluation steps do.
const SCORE_STEP_IMAGES: usize = 400;

/// Which model to train and what run trains it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum ModelRun {
    /// On MNIST, tested on its held-out split.
    Cnn(CnnSettings),
    /// On the shipped text, measured on its held-out windows.
    Transformer(TextSettings),
}

/// The models the page offers, each with its lessons' run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum ModelKind {
    Cnn,
    #[default]
    Transformer,
}

impl ModelKind {
    pub const ALL: [Self; 2] = [Self::Cnn, Self::Transformer];

    /// The run the layers lesson trains this model with, at `seed`.
    pub fn run(self, seed: u64) -> ModelRun {
        match self {
            Self::Cnn => ModelRun::Cnn(CnnSettings {
                seed,
                ..CnnSettings::default()
            }),
            Self::Transformer => ModelRun::Transformer(TextSettings {
                seed,
                ..TextSettings::default()
            }),
        }
    }
}

impl crate::names::Named for ModelKind {
    fn name_key(&self) -> String {
        format!("quant.model_kind.{self:?}")
    }
}

/// What a model is measured by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Metric {
    /// Test accuracy, 0 to 1: higher is better.
    Accuracy,
    /// Held-out cross-entropy, nats per character: lower is better.
    Loss,
}

enum Net {
    Cnn {
        model: Box<Cnn>,
        test: Dataset,
    },
    Text {
        model: Box<CharModel>,
        held_out: Vec<(Vec<usize>, Vec<usize>)>,
    },
}

/// A trained model, its evaluation data and its fp32 figure.
pub struct TrainedModel {
    net: Net,
    /// The fp32 model's accuracy or loss ([`Self::metric`]).
    pub fp32: f64,
}

/// The stages of a [`ModelJob`].
enum Stage {
    Cnn {
        run: Box<CnnRun>,
        test: Dataset,
        epochs: u64,
        per_epoch: u64,
        /// Training steps done (evaluations between epochs add none).
        done: u64,
    },
    Text {
        run: Box<TextRun>,
        steps: u64,
    },
    Trained(TrainedModel),
}

/// Where a [`ModelJob`] stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobPhase {
    /// Training (evaluation steps between epochs count with the step before).
    Training {
        step: u64,
        steps: u64,
    },
    /// The table's cells measured so far.
    Measuring {
        done: usize,
        total: usize,
    },
    Done,
}

/// Training a model and then measuring the table's cells, one unit of work
/// per [`ModelJob::step`] — a training step, a few hundred test images or
/// one cell — so the page can run it a frame's slice at a time (the
/// browser has no threads) and the command line in a loop.
pub struct ModelJob {
    stage: Stage,
    /// The table's clip (its cells' weights symmetric, at each bit width).
    calibration: super::Calibration,
    cells: Vec<(u32, GranularityKind, bool)>,
    measured: Vec<ModelCell>,
    /// The cell being scored.
    scoring: Option<Scoring>,
}

impl ModelJob {
    /// A job for `run`; with `grid`, the weight-only table with groups of
    /// that size follows training. `mnist` is the data set for the CNN when
    /// the caller has it (the web build downloads it); `None` loads it here.
    pub fn new(
        run: &ModelRun,
        mnist: Option<Dataset>,
        grid: Option<usize>,
        calibration: super::Calibration,
    ) -> Result<Self, QuantError> {
        if grid == Some(0) {
            return Err(QuantError::GroupSize);
        }
        calibration.validate()?;
        let stage = match *run {
            ModelRun::Cnn(settings) => {
                settings.validate()?;
                let data = match mnist {
                    Some(data) => data,
                    None => {
                        data::load("mnist", settings.seed).map_err(crate::nn::TrainError::from)?
                    }
                };
                let (train, test) = data.split(data::TEST_FRACTION, settings.seed);
                let run = CnnRun::new(settings, train, test.clone())?;
                let per_epoch = run.images().div_ceil(settings.batch) as u64;
                Stage::Cnn {
                    run: Box::new(run),
                    test,
                    epochs: settings.epochs,
                    per_epoch,
                    done: 0,
                }
            }
            ModelRun::Transformer(settings) => Stage::Text {
                run: Box::new(TextRun::new(settings)?),
                steps: settings.steps,
            },
        };
        Ok(Self {
            stage,
            calibration,
            cells: grid.map(grid_cells).unwrap_or_default(),
            measured: Vec::new(),
            scoring: None,
        })
    }

    /// One unit of work. A loss that is not finite ends training with an
    /// error; a cell that cannot be measured too.
    pub fn step(&mut self) -> Result<(), QuantError> {
        let trained = match &mut self.stage {
            Stage::Cnn {
                run,
                test,
                epochs,
                done,
                ..
            } => {
                let training = matches!(run.phase(), CnnPhase::Training { .. });
                let event = run.step()?;
                *done += u64::from(training);
                match event {
                    // The last epoch's own evaluation (running statistics,
                    // the whole test set) ends training; the run's
                    // BatchNorm-bug evaluations that follow are not needed.
                    Some(CnnEvent::Epoch(epoch)) if epoch.epoch == *epochs => {
                        let empty = test.first(0);
                        TrainedModel {
                            fp32: epoch.test_accuracy,
                            net: Net::Cnn {
                                model: Box::new(run.model().clone()),
                                test: std::mem::replace(test, empty),
                            },
                        }
                    }
                    _ => return Ok(()),
                }
            }
            Stage::Text { run, .. } => match run.step()? {
                Some(TextEvent::Finished(result)) => TrainedModel {
                    fp32: result.held_out_loss,
                    net: Net::Text {
                        model: Box::new(run.model().clone()),
                        held_out: run.held_out().to_vec(),
                    },
                },
                _ => return Ok(()),
            },
            Stage::Trained(trained) => {
                let Some(&(bits, kind, acts)) = self.cells.get(self.measured.len()) else {
                    return Ok(());
                };
                // A cell is quantised in one step and scored a few hundred
                // test images a step: the browser draws in between.
                let cell = match &mut self.scoring {
                    Some(cell) => cell,
                    None => {
                        let weights = QuantSettings {
                            calibration: self.calibration,
                            ..super::ptq::weight_settings(bits, kind)
                        };
                        let cell = trained.quantised(&weights, kind, acts.then_some(8))?;
                        self.scoring.insert(cell)
                    }
                };
                if trained.score(cell, SCORE_STEP_IMAGES) {
                    let measured = trained.measured(cell);
                    self.scoring = None;
                    self.measured.push(ModelCell {
                        bits,
                        granularity: kind,
                        int8_activations: acts,
                        measured,
                    });
                }
                return Ok(());
            }
        };
        self.stage = Stage::Trained(trained);
        Ok(())
    }

    pub fn phase(&self) -> JobPhase {
        match &self.stage {
            Stage::Cnn {
                per_epoch,
                epochs,
                done,
                ..
            } => JobPhase::Training {
                step: *done,
                steps: per_epoch * epochs,
            },
            Stage::Text { run, steps } => JobPhase::Training {
                step: run.steps_done(),
                steps: *steps,
            },
            Stage::Trained(_) if self.measured.len() < self.cells.len() => JobPhase::Measuring {
                done: self.measured.len(),
                total: self.cells.len(),
            },
            Stage::Trained(_) => JobPhase::Done,
        }
    }

    /// The trained model, once training is over.
    pub fn trained(&self) -> Option<&TrainedModel> {
        match &self.stage {
            Stage::Trained(trained) => Some(trained),
            _ => None,
        }
    }

    /// The cells measured so far, in the table's order.
    pub fn cells(&self) -> &[ModelCell] {
        &self.measured
    }
}

/// The table's cells, `(bits, granularity, int8 activations)`: weight-only
/// at [`GRID_BITS`] × per tensor, per channel and per group of `group`,
/// then W8A8 (activations per tensor, dynamic) with weights per tensor and
/// per channel.
pub fn grid_cells(group: usize) -> Vec<(u32, GranularityKind, bool)> {
    let mut cells: Vec<_> = GRID_BITS
        .into_iter()
        .flat_map(|bits| {
            [
                GranularityKind::Tensor,
                GranularityKind::Channel,
                GranularityKind::Group(group),
            ]
            .map(|kind| (bits, kind, false))
        })
        .collect();
    cells.extend([
        (8, GranularityKind::Tensor, true),
        (8, GranularityKind::Channel, true),
    ]);
    cells
}

/// Runs `job` to its end, reporting its phase after each step; `go_on`
/// returns `false` to stop (then `Ok(None)`).
pub fn run_to_end(
    mut job: ModelJob,
    go_on: &mut dyn FnMut(JobPhase) -> bool,
) -> Result<Option<ModelJob>, QuantError> {
    loop {
        let phase = job.phase();
        if phase == JobPhase::Done {
            return Ok(Some(job));
        }
        if !go_on(phase) {
            return Ok(None);
        }
        job.step()?;
    }
}

/// The transformer's matrices a GEMM multiplies, by index into
/// [`CharModel::params`]: W_q, W_k, W_v, W_o, W_1, W_2, the head.
const TEXT_MATRICES: [usize; 7] = [4, 5, 6, 7, 10, 12, 16];

impl TrainedModel {
    pub fn metric(&self) -> Metric {
        match self.net {
            Net::Cnn { .. } => Metric::Accuracy,
            Net::Text { .. } => Metric::Loss,
        }
    }

    /// Weights quantised and the model measured: its accuracy or loss, the
    /// weights' error and their bytes. The trained model is not changed.
    pub fn measure(
        &self,
        base: &QuantSettings,
        kind: GranularityKind,
    ) -> Result<Measured, QuantError> {
        self.measure_with(base, kind, None)
    }

    /// [`Self::measure`], with every weight GEMM's input (each convolution's and
    /// linear layer's; the transformer's Q/K/V, output, FFN and head
    /// projections') fake-quantised to `act_bits`-bit integers, one dynamic
    /// scale per tensor, when set.
    pub fn measure_with(
        &self,
        base: &QuantSettings,
        kind: GranularityKind,
        act_bits: Option<u32>,
    ) -> Result<Measured, QuantError> {
        let mut cell = self.quantised(base, kind, act_bits)?;
        while !self.score(&mut cell, usize::MAX) {}
        Ok(self.measured(&cell))
    }

    /// The model with its weights quantised, not yet scored.
    fn quantised(
        &self,
        base: &QuantSettings,
        kind: GranularityKind,
        act_bits: Option<u32>,
    ) -> Result<Scoring, QuantError> {
        let (net, weight_error, bytes) = match &self.net {
            Net::Cnn { model, test } => {
                let mut model = model.clone();
                model.act_bits = act_bits;
                let Cnn {
                    conv1, conv2, fc_w, ..
                } = &mut *model;
                let matrices = [(conv1, 1), (conv2, 1), (fc_w, 0)];
                let (error, bytes) = quantise_all(matrices, base, kind)?;
                let empty = test.first(0);
                (Net::Cnn { model, test: empty }, error, bytes)
            }
            Net::Text { model, .. } => {
                let mut model = (**model).clone().with_int_activations(act_bits);
                let matrices = model
                    .params_mut()
                    .iter_mut()
                    .enumerate()
                    .filter(|(i, _)| TEXT_MATRICES.contains(i))
                    .map(|(_, tensor)| (tensor, 0));
                let (error, bytes) = quantise_all(matrices, base, kind)?;
                let net = Net::Text {
                    model: Box::new(model),
                    held_out: Vec::new(),
                };
                (net, error, bytes)
            }
        };
        Ok(Scoring {
            net,
            weight_error,
            bytes,
            done: 0,
            sum: 0.0,
        })
    }

    /// Scores up to `images` more of the test set with `cell`'s model (the
    /// transformer's held-out windows at once); true when all are scored.
    fn score(&self, cell: &mut Scoring, images: usize) -> bool {
        match (&self.net, &cell.net) {
            (Net::Cnn { test, .. }, Net::Cnn { model, .. }) => {
                let end = cell.done.saturating_add(images).min(test.len());
                let indices: Vec<usize> = (cell.done..end).collect();
                for part in indices.chunks(CNN_EVAL_BATCH) {
                    let (x, y) = test.gather(part);
                    cell.sum += model.score(&x, &y, BnStats::Running).1 as f64;
                }
                cell.done = end;
                end == test.len()
            }
            (Net::Text { held_out, .. }, Net::Text { model, .. }) => {
                cell.sum = f64::from(model.loss(held_out));
                cell.done = held_out.len();
                true
            }
            _ => true,
        }
    }

    /// A scored cell's figures.
    fn measured(&self, cell: &Scoring) -> Measured {
        let value = match &self.net {
            Net::Cnn { test, .. } => cell.sum / test.len().max(1) as f64,
            Net::Text { .. } => cell.sum,
        };
        Measured {
            value,
            delta: value - self.fp32,
            weight_error: cell.weight_error,
            bytes: cell.bytes,
        }
    }
}

/// A cell being scored: the quantised model, what its weights lost, and
/// how far through the test set it is (correct answers so far, or the
/// transformer's loss).
struct Scoring {
    net: Net,
    weight_error: ErrorStats,
    bytes: super::QuantBytes,
    done: usize,
    sum: f64,
}

/// Each `(matrix, reduction axis)` quantised in place (fake quantisation:
/// codes and back), and the error and bytes over all of them.
fn quantise_all<'a>(
    matrices: impl IntoIterator<Item = (&'a mut Tensor<f32>, usize)>,
    base: &QuantSettings,
    kind: GranularityKind,
) -> Result<(ErrorStats, super::QuantBytes), QuantError> {
    let (mut all, mut restored, mut clipped) = (Vec::new(), Vec::new(), 0);
    let (mut params, mut blocks) = (0u64, 0u64);
    for (tensor, k_axis) in matrices {
        let (rows, cols) = tensor.rows_cols();
        let settings = QuantSettings {
            granularity: weight_granularity_along(kind, k_axis),
            ..*base
        };
        let (q, stats) = quantise_with_stats(&tensor.data, rows, cols, &settings)?;
        let back = q.dequantise();
        all.extend_from_slice(&tensor.data);
        restored.extend_from_slice(&back);
        clipped += stats.clipped;
        params += (rows * cols) as u64;
        blocks += settings.granularity.blocks(rows, cols).1 as u64;
        tensor.data = back.into_iter().map(|v| v as f32).collect();
    }
    let bytes = super::quantised_bytes(
        params,
        base.format.bits,
        blocks,
        FP16_SCALE_BYTES,
        base.mapping == Mapping::Asymmetric,
    )?;
    Ok((error_stats(&all, &restored, clipped), bytes))
}

/// A quantised model measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measured {
    /// Accuracy or loss, as the model's [`Metric`].
    pub value: f64,
    /// `value` minus the fp32 model's.
    pub delta: f64,
    pub weight_error: ErrorStats,
    pub bytes: super::QuantBytes,
}

/// One cell of the weight-only table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelCell {
    pub bits: u32,
    pub granularity: GranularityKind,
    /// Whether the activations were int8 too (W8A8).
    pub int8_activations: bool,
    #[serde(flatten)]
    pub measured: Measured,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trained(run: &ModelRun) -> TrainedModel {
        let mut job = ModelJob::new(run, None, None, super::super::Calibration::MinMax)
            .unwrap_or_else(|e| panic!("{e}"));
        while job.trained().is_none() {
            job.step().unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(job.phase(), JobPhase::Done);
        match job.stage {
            Stage::Trained(t) => t,
            _ => unreachable!(),
        }
    }

    fn text_run() -> TrainedModel {
        let settings = TextSettings {
            steps: 30,
            ..TextSettings::default()
        };
        trained(&ModelRun::Transformer(settings))
    }

    #[test]
    fn the_transformer_at_8_bits_keeps_its_loss_and_at_2_bits_per_tensor_loses_it() {
        let trained = text_run();
        assert_eq!(trained.metric(), Metric::Loss);
        assert!(trained.fp32.is_finite() && trained.fp32 > 0.0);
        let w8 = trained
            .measure(
                &super::super::ptq::weight_settings(8, GranularityKind::Channel),
                GranularityKind::Channel,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(w8.delta.abs() < 0.02, "{w8:?}");
        let w2 = trained
            .measure(
                &super::super::ptq::weight_settings(2, GranularityKind::Tensor),
                GranularityKind::Tensor,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(w2.delta > w8.delta, "{w2:?} vs {w8:?}");
        // Seven matrices of the width-32 model: 4·d² + 2·4·d² + d·V weights.
        let d = 32;
        assert!(w8.bytes.params > (12 * d * d) as u64, "{:?}", w8.bytes);
        // One scale per output channel fits the weights closer than one
        // for each whole matrix.
        let w4 = |kind| {
            trained
                .measure(&super::super::ptq::weight_settings(4, kind), kind)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let (tensor, channel) = (w4(GranularityKind::Tensor), w4(GranularityKind::Channel));
        assert!(channel.weight_error.rms_error < tensor.weight_error.rms_error);
        assert!(channel.bytes.blocks > tensor.bytes.blocks);
        // Integer activations: int8 keeps the loss, int2 ruins it — the
        // GEMMs' inputs really are quantised.
        let kind = GranularityKind::Channel;
        let w8 = super::super::ptq::weight_settings(8, kind);
        let a8 = trained
            .measure_with(&w8, kind, Some(8))
            .unwrap_or_else(|e| panic!("{e}"));
        let a2 = trained
            .measure_with(&w8, kind, Some(2))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(a8.delta.abs() < 0.05, "{a8:?}");
        assert!(a2.delta > a8.delta + 0.1, "{a2:?} vs {a8:?}");
    }

    #[test]
    fn the_cnn_at_8_bits_per_channel_keeps_its_accuracy() {
        let settings = CnnSettings {
            images: Some(300),
            ..CnnSettings::default()
        };
        let trained = trained(&ModelRun::Cnn(settings));
        assert_eq!(trained.metric(), Metric::Accuracy);
        assert!(trained.fp32 > 0.3, "{}", trained.fp32);
        let kind = GranularityKind::Channel;
        let w8 = trained
            .measure(&super::super::ptq::weight_settings(8, kind), kind)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(w8.delta.abs() <= 0.01, "{w8:?}");
        // Three matrices: 16 × 25, 32 × 144 and 1,568 × 10; per channel,
        // one scale per output channel of each.
        assert_eq!(w8.bytes.params, 16 * 25 + 32 * 144 + 1568 * 10);
        assert_eq!(w8.bytes.blocks, 16 + 32 + 10);
        // Groups of 32 along a convolution's patch (25 and 144 long).
        let g = GranularityKind::Group(32);
        let grouped = trained
            .measure(&super::super::ptq::weight_settings(8, g), g)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(grouped.bytes.blocks, 16 + 32 * 5 + 10 * 49);
        let a8 = trained.measure_with(&super::super::ptq::weight_settings(8, kind), kind, Some(8));
        let a8 = a8.unwrap_or_else(|e| panic!("{e}"));
        assert!(a8.delta.abs() <= 0.02, "{a8:?}");
    }

    #[test]
    fn the_job_counts_its_steps_measures_every_cell_and_stops_when_told() {
        let settings = TextSettings {
            steps: 12,
            ..TextSettings::default()
        };
        let job = ModelJob::new(
            &ModelRun::Transformer(settings),
            None,
            Some(16),
            super::super::Calibration::MinMax,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut phases = Vec::new();
        let job = run_to_end(job, &mut |p| {
            phases.push(p);
            true
        })
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("stopped"));
        assert_eq!(phases[0], JobPhase::Training { step: 0, steps: 12 });
        assert!(phases.contains(&JobPhase::Training {
            step: 11,
            steps: 12
        }));
        assert!(phases.contains(&JobPhase::Measuring {
            done: 13,
            total: 14
        }));
        assert_eq!(job.cells().len(), 14);
        assert_eq!(job.cells()[11].granularity, GranularityKind::Group(16));
        assert!(
            job.cells()[12..]
                .iter()
                .all(|c| c.int8_activations && c.bits == 8)
        );
        let fresh = ModelJob::new(
            &ModelRun::Transformer(settings),
            None,
            None,
            super::super::Calibration::MinMax,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let stopped = run_to_end(fresh, &mut |p| {
            p == JobPhase::Training { step: 0, steps: 12 }
        });
        assert!(matches!(stopped, Ok(None)));
        assert!(matches!(
            ModelJob::new(
                &ModelRun::Transformer(settings),
                None,
                Some(0),
                super::super::Calibration::MinMax
            ),
            Err(QuantError::GroupSize)
        ));
        for kind in ModelKind::ALL {
            use crate::names::Named as _;
            assert!(
                crate::names::catalog().contains(&kind.name_key()),
                "{kind:?}"
            );
        }
    }
}
