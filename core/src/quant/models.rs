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

/// Which model to train and what run trains it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum ModelRun {
    /// On MNIST, tested on its held-out split.
    Cnn(CnnSettings),
    /// On the shipped text, measured on its held-out windows.
    Transformer(TextSettings),
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

/// Trains the model of `run`, reporting `(step, steps)` as it goes; the
/// callback returns `false` to stop (then `Ok(None)`).
pub fn train(
    run: &ModelRun,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<Option<TrainedModel>, QuantError> {
    match *run {
        ModelRun::Cnn(settings) => {
            let (train, test) =
                data::load_split("mnist", settings.seed).map_err(crate::nn::TrainError::from)?;
            let mut run = CnnRun::new(settings, train, test.clone())?;
            let per_epoch = run.images().div_ceil(settings.batch) as u64;
            let total = per_epoch * settings.epochs;
            loop {
                // The last epoch's own evaluation is where training ends;
                // the run's BatchNorm-bug evaluations that follow are not
                // needed here.
                if let Some(CnnEvent::Epoch(epoch)) = run.step()?
                    && epoch.epoch == settings.epochs
                {
                    break;
                }
                if let CnnPhase::Training { epoch, step, .. } = run.phase()
                    && !progress((epoch - 1) * per_epoch + step as u64, total)
                {
                    return Ok(None);
                }
            }
            let model = Box::new(run.model().clone());
            let fp32 = model.accuracy(&test, BnStats::Running, CNN_EVAL_BATCH);
            Ok(Some(TrainedModel {
                net: Net::Cnn { model, test },
                fp32,
            }))
        }
        ModelRun::Transformer(settings) => {
            let mut run = TextRun::new(settings)?;
            while !matches!(run.step()?, Some(TextEvent::Finished(_))) {
                if !progress(run.steps_done(), settings.steps) {
                    return Ok(None);
                }
            }
            let held_out = run.held_out().to_vec();
            let fp32 = run.held_out_loss();
            Ok(Some(TrainedModel {
                net: Net::Text {
                    model: Box::new(run.model().clone()),
                    held_out,
                },
                fp32,
            }))
        }
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
        let (value, weight_error, bytes) = match &self.net {
            Net::Cnn { model, test } => {
                let mut model = model.clone();
                let Cnn {
                    conv1, conv2, fc_w, ..
                } = &mut *model;
                let matrices = [(conv1, 1), (conv2, 1), (fc_w, 0)];
                let (error, bytes) = quantise_all(matrices, base, kind)?;
                (
                    model.accuracy(test, BnStats::Running, CNN_EVAL_BATCH),
                    error,
                    bytes,
                )
            }
            Net::Text { model, held_out } => {
                let mut model = model.clone();
                let matrices = model
                    .params_mut()
                    .iter_mut()
                    .enumerate()
                    .filter(|(i, _)| TEXT_MATRICES.contains(i))
                    .map(|(_, tensor)| (tensor, 0));
                let (error, bytes) = quantise_all(matrices, base, kind)?;
                (f64::from(model.loss(held_out)), error, bytes)
            }
        };
        Ok(Measured {
            value,
            delta: value - self.fp32,
            weight_error,
            bytes,
        })
    }

    /// The weight-only table: [`GRID_BITS`] × per tensor, per channel and
    /// per group of `group`, reporting `(done, total)` after each cell.
    pub fn grid(
        &self,
        group: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<ModelCell>, QuantError> {
        let kinds = [
            GranularityKind::Tensor,
            GranularityKind::Channel,
            GranularityKind::Group(group),
        ];
        let total = GRID_BITS.len() * kinds.len();
        let mut cells = Vec::with_capacity(total);
        for bits in GRID_BITS {
            for kind in kinds {
                let settings = super::ptq::weight_settings(bits, kind);
                let measured = self.measure(&settings, kind)?;
                cells.push(ModelCell {
                    bits,
                    granularity: kind,
                    measured,
                });
                progress(cells.len(), total);
            }
        }
        Ok(cells)
    }
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
    #[serde(flatten)]
    pub measured: Measured,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_run() -> TrainedModel {
        let settings = TextSettings {
            steps: 30,
            ..TextSettings::default()
        };
        train(&ModelRun::Transformer(settings), &mut |_, _| true)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("not stopped"))
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
    }

    #[test]
    fn the_cnn_at_8_bits_per_channel_keeps_its_accuracy() {
        let settings = CnnSettings {
            images: Some(300),
            ..CnnSettings::default()
        };
        let trained = train(&ModelRun::Cnn(settings), &mut |_, _| true)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("not stopped"));
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
    }

    #[test]
    fn a_stopped_run_is_none_not_a_model() {
        let stopped = train(
            &ModelRun::Transformer(TextSettings::default()),
            &mut |step, _| step < 3,
        );
        assert!(matches!(stopped, Ok(None)));
    }
}
