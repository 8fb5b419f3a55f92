//! Quantisation-aware training: the trained MLP fine-tuned with its
//! weights fake-quantised in every forward pass (the autograd engine's
//! `fake_quantise` op, whose backward is the clipped straight-through
//! estimator), the fp32 shadow weights updated by momentum SGD, and the
//! deployed integer model's test accuracy measured after every epoch
//! beside post-training quantisation's.

use serde::Serialize;

use super::QuantError;
use super::ptq::{
    GranularityKind, PtqSettings, Trained, accuracy, quantise_weights, weight_settings,
};
use super::scheme::QuantSettings;
use super::tensor::quantise;
use crate::autograd::{Graph, Tensor};
use crate::nn::data::{self, DataLoader};
use crate::nn::optimizers::{Optimizer, OptimizerKind};
use crate::nn::{Mlp, TrainError};

/// The round trip of `values` (`rows × cols`) under `settings`, and the
/// straight-through mask: 1 where the value's code, before clamping, lies
/// in the format's range (PyTorch's `FakeQuantize` mask), 0 where it was
/// clipped.
pub fn round_trip(
    values: &[f32],
    rows: usize,
    cols: usize,
    settings: &QuantSettings,
) -> Result<(Vec<f32>, Vec<f32>), QuantError> {
    let q = quantise(values, rows, cols, settings)?;
    let restored = q.dequantise().into_iter().map(|v| v as f32).collect();
    let inside = values
        .iter()
        .zip(&q.block)
        .map(|(&x, &b)| {
            let p = q.params[b as usize];
            let code = (f64::from(x) / p.scale).round_ties_even() + f64::from(p.zero_point);
            if (f64::from(p.qmin)..=f64::from(p.qmax)).contains(&code) {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    Ok((restored, inside))
}

/// What to fine-tune: the weights' bits and granularity (symmetric,
/// min–max, as the PTQ table), epochs, and momentum SGD's rate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct QatSettings {
    pub bits: u32,
    pub granularity: GranularityKind,
    pub epochs: u64,
    pub lr: f64,
    pub batch: usize,
}

impl Default for QatSettings {
    fn default() -> Self {
        Self {
            bits: 4,
            granularity: GranularityKind::Tensor,
            epochs: 5,
            lr: 0.01,
            batch: 64,
        }
    }
}

/// The most epochs a fine-tune takes.
pub const MAX_QAT_EPOCHS: u64 = 100;

/// The fine-tune's outcome: fp32, PTQ at the same settings, and the
/// quantised model's test accuracy and mean training loss after each epoch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QatReport {
    pub settings: QatSettings,
    pub fp32_accuracy: f64,
    pub ptq_accuracy: f64,
    pub accuracy: Vec<f64>,
    pub loss: Vec<f64>,
}

impl QatReport {
    /// The quantised model's accuracy after the last epoch (PTQ's with none).
    pub fn final_accuracy(&self) -> f64 {
        self.accuracy.last().copied().unwrap_or(self.ptq_accuracy)
    }
}

/// Fine-tunes `trained` (trained by `ptq`'s settings, whose seed also
/// draws the training split and the batches) with fake-quantised weights;
/// `progress(epoch, epochs)` after each epoch, returning false stops it.
pub fn fine_tune(
    trained: &Trained,
    ptq: &PtqSettings,
    settings: &QatSettings,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<QatReport, QuantError> {
    check_run(settings.epochs, MAX_QAT_EPOCHS, settings.lr, settings.batch)?;
    let weights = weight_settings(settings.bits, settings.granularity);
    weights.validate()?;
    let (train, _) = data::load_split(&ptq.dataset, ptq.seed).map_err(TrainError::from)?;
    let ptq_accuracy = accuracy(
        &quantise_weights(&trained.model, &weights)?.0,
        &trained.test,
        &trained.calibration,
        None,
    )?;
    let (loader, mut optimizer) =
        loader_and_sgd(train.len(), settings.batch, ptq.seed, settings.lr);
    let mut model = trained.model.clone();
    let (mut acc, mut losses) = (Vec::new(), Vec::new());
    for epoch in 0..settings.epochs {
        let mut total = 0.0;
        let batches = loader.batches(epoch);
        for batch in &batches {
            let (x, y) = train.gather(batch);
            let (loss, grads) = qat_step(&model, &x, &y, train.features, &weights)?;
            if !loss.is_finite() {
                return Err(TrainError::Diverged { epoch: epoch + 1 }.into());
            }
            total += loss;
            optimizer.step(&mut model.params_mut(), &grads);
        }
        losses.push(total / batches.len().max(1) as f64);
        acc.push(accuracy(
            &quantise_weights(&model, &weights)?.0,
            &trained.test,
            &trained.calibration,
            None,
        )?);
        if !progress(epoch + 1, settings.epochs) {
            break;
        }
    }
    Ok(QatReport {
        settings: *settings,
        fp32_accuracy: trained.fp32_accuracy,
        ptq_accuracy,
        accuracy: acc,
        loss: losses,
    })
}

/// One step recorded: each layer's weight fake-quantised, the loss, and
/// the gradients of the fp32 weights and biases (in `params_mut` order).
fn qat_step(
    model: &Mlp<f32>,
    x: &[f32],
    y: &[usize],
    features: usize,
    weights: &QuantSettings,
) -> Result<(f64, Vec<Tensor<f32>>), QuantError> {
    let mut g = Graph::<f32>::new();
    let mut h = g.input(Tensor::new(x.to_vec(), &[y.len(), features]));
    let mut leaves = Vec::with_capacity(2 * model.layers.len());
    for (i, layer) in model.layers.iter().enumerate() {
        let (rows, cols) = layer.weight.rows_cols();
        let (restored, inside) = round_trip(&layer.weight.data, rows, cols, weights)?;
        let w = g.param(layer.weight.clone());
        let b = g.param(layer.bias.clone());
        let shape = [rows, cols];
        let wq = g.fake_quantise(
            w,
            Tensor::new(restored, &shape),
            Tensor::new(inside, &shape),
        );
        let last = i + 1 == model.layers.len();
        h = crate::nn::layers::layer(&mut g, h, wq, b, (!last).then_some(model.activation));
        leaves.extend([w, b]);
    }
    let loss = g.softmax_cross_entropy(h, y);
    g.backward(loss);
    let value = f64::from(g.value(loss).data[0]);
    Ok((value, leaf_grads(&g, &leaves)))
}

/// Refuses more than `max` epochs, a learning rate that is not positive
/// and finite, and an empty batch.
pub(super) fn check_run(epochs: u64, max: u64, lr: f64, batch: usize) -> Result<(), QuantError> {
    if epochs > max {
        return Err(QuantError::Epochs { epochs, max });
    }
    if !(lr.is_finite() && lr > 0.0) || batch == 0 {
        return Err(QuantError::Params { value: lr });
    }
    Ok(())
}

/// Seeded shuffled batches of `batch` over `len` examples, and momentum
/// SGD (μ = 0.9) at `lr`: the fine-tunes' training loop.
pub(super) fn loader_and_sgd(
    len: usize,
    batch: usize,
    seed: u64,
    lr: f64,
) -> (DataLoader, Optimizer<f32>) {
    let loader = DataLoader {
        len,
        batch_size: batch,
        shuffle: true,
        drop_last: false,
        seed,
    };
    let momentum = OptimizerKind::Momentum {
        mu: 0.9,
        nesterov: false,
    };
    (loader, Optimizer::new(momentum, lr, 0.0))
}

/// Each leaf's gradient after backward (zeros where none reached it).
pub(super) fn leaf_grads(g: &Graph<f32>, leaves: &[crate::autograd::Var]) -> Vec<Tensor<f32>> {
    leaves
        .iter()
        .map(|&v| {
            g.grad(v)
                .map_or_else(|| Tensor::zeros(&g.value(v).shape), |t| t.into_owned())
        })
        .collect()
}

#[cfg(test)]
#[path = "qat_tests.rs"]
mod tests;
