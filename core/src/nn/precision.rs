//! What a reduced-precision policy keeps between steps, and the parts of a
//! training step only such a policy has: rounding hooks, rounded copies of
//! fp32 master weights, loss scaling, gradient accumulation over
//! micro-batches, skipped steps, and the tallies behind the lesson's plots.

use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::TrainError;
use super::config::TrainConfig;
use super::layers::Mlp;
use super::optimizers::Optimizer;
use crate::autograd::{Graph, Half, Stored, Tensor, Var};
use crate::mixed::{Histogram, MasterWeights, RoundStats, Rounder, ScaleEvent, Scaler};

/// One epoch under a precision policy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MixedEpoch {
    /// The loss scale at the end of the epoch.
    pub loss_scale: f32,
    pub skipped_steps: u64,
    /// Gradient values rounded to the compute format in backward.
    pub gradient_values: u64,
    /// Of those, non-zero values that became zero.
    pub underflowed: u64,
    pub underflow_fraction: f64,
    /// Finite gradient values that became inf/NaN.
    pub overflowed: u64,
    /// Values of the accumulation buffer that overflowed.
    pub accumulation_overflows: u64,
}

/// One parameter's gradients as they reached the rounding, over the sampled
/// steps: magnitudes (log₂ bins, loss scale included) and what rounding did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LayerGradients {
    pub name: String,
    pub histogram: Histogram,
    pub stats: RoundStats,
}

/// A snapshot of the policy's state, for plots.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MixedReport {
    pub scale: f32,
    pub skipped: u64,
    pub events: Vec<ScaleEvent>,
    /// The sampled gradients of each weight matrix.
    pub layers: Vec<LayerGradients>,
}

/// What a reduced-precision policy keeps between steps.
pub(super) struct MixedState {
    compute: Rounder,
    grads: Rounder,
    accumulation: Rounder,
    scaler: Scaler,
    /// Tallied by the backward pass's hook.
    backward: Arc<Mutex<Tally>>,
    accumulation_overflows: u64,
    skipped_at_epoch_start: u64,
    accum: Vec<Tensor<f32>>,
    micro: u32,
}

/// What the backward hook records.
#[derive(Default)]
struct Tally {
    /// Every gradient value rounded this epoch.
    stats: RoundStats,
    /// Whether this step's parameter gradients go into the histograms
    /// (every tenth step: a sample is enough for a picture).
    sampling: bool,
    /// This step's parameter nodes, in [`Mlp::params`] order.
    params: Vec<Var>,
    layers: Vec<LayerGradients>,
}

impl MixedState {
    /// The state of `config`'s policy for a model of `layers` layers, or
    /// `None` for plain fp32 (nothing rounded, scaled, weighted or
    /// accumulated). Hooks the optimizer's state rounding.
    pub(super) fn for_config(
        config: &TrainConfig,
        layers: usize,
        optimizer: &mut Optimizer<f32>,
    ) -> Result<Option<Self>, TrainError> {
        if config.policy.is_fp32() && config.micro_batches == 1 && config.loss_weight == 1.0 {
            return Ok(None);
        }
        let policy = &config.policy;
        let state = Rounder::by_name(&policy.optimizer_state)?;
        if !state.is_identity() {
            optimizer.state_packing = Half::by_name(&state.format_name());
            optimizer.state_hook = Some(Arc::new(move |d: &mut [f32]| state.round_slice(d)));
        }
        Ok(Some(Self {
            compute: Rounder::by_name(&policy.compute)?,
            grads: Rounder::by_name(&policy.grads)?,
            accumulation: Rounder::by_name(&policy.accumulation)?,
            scaler: Scaler::new(policy.loss_scale),
            backward: Arc::new(Mutex::new(Tally {
                layers: (0..layers * 2)
                    .map(|i| LayerGradients {
                        name: format!("{}{}", if i % 2 == 0 { "W" } else { "b" }, i / 2 + 1),
                        ..LayerGradients::default()
                    })
                    .collect(),
                ..Tally::default()
            })),
            accumulation_overflows: 0,
            skipped_at_epoch_start: 0,
            accum: Vec::new(),
            micro: 0,
        }))
    }

    /// Rounds values once to the compute format (inputs, weights stored in it).
    pub(super) fn round_to_compute(&self, data: &mut [f32]) {
        self.compute.round_slice(data);
    }

    /// The 2-byte packing of the compute format, if it has one.
    pub(super) fn packing(&self) -> Option<Half> {
        Half::by_name(&self.compute.format_name())
    }

    /// Hooks a fresh graph: every op output and every gradient rounded to
    /// the compute format, the gradients tallied (and sampled for the
    /// histograms) as they are rounded, and kept packed in it.
    pub(super) fn hook(&self, g: &mut Graph<f32>) {
        g.set_packing(self.packing());
        if !self.compute.is_identity() {
            let c = self.compute.clone();
            g.set_output_hook(Some(Arc::new(move |d: &mut [f32]| c.round_slice(d))));
        }
        let (c, tally) = (self.compute.clone(), self.backward.clone());
        g.set_grad_hook(Some(Arc::new(move |to: Var, d: &mut [f32]| {
            let Ok(mut t) = tally.lock() else {
                c.round_slice(d);
                return;
            };
            let layer = if t.sampling {
                t.params.iter().position(|p| *p == to)
            } else {
                None
            };
            if let Some(i) = layer {
                t.layers[i].histogram.add_slice(d);
            }
            let stats = c.round_slice_counting(d);
            t.stats.add(&stats);
            if let Some(i) = layer {
                t.layers[i].stats.add(&stats);
            }
        })));
    }

    /// Rounded copies of the fp32 master weights for this step's pass to
    /// read, packed in the compute format when it has a packing (one
    /// tensor at a time goes through an f32 buffer); the masters stay. The
    /// pass drops them: the next step rounds the updated masters afresh.
    pub(super) fn copies(&self, model: &Mlp<f32>) -> Vec<Stored<f32>> {
        let half = self.packing();
        model
            .params()
            .into_iter()
            .map(|master| {
                let mut copy = Tensor::zeros(&master.shape);
                self.compute.round_into(&master.data, &mut copy.data);
                Stored::keep(copy, half)
            })
            .collect()
    }

    /// The accumulation buffer's elements.
    pub(super) fn accumulated_elements(&self) -> usize {
        self.accum.iter().map(Tensor::numel).sum()
    }

    /// Which nodes of the graph being differentiated are the parameters, in
    /// [`Mlp::params`] order (`Var(usize::MAX)` for one not in it): a
    /// checkpointed segment's graph holds only its own layer's.
    pub(super) fn track_params(&self, params: &[Var]) {
        if let Ok(mut t) = self.backward.lock() {
            t.params.clear();
            t.params.extend_from_slice(params);
        }
    }

    /// Before backward: picks whether this step is sampled and scales the
    /// loss by the loss scale and the loss weight.
    pub(super) fn scale_loss(
        &self,
        g: &mut Graph<f32>,
        loss: Var,
        step: u64,
        params: &[Var],
        loss_weight: f32,
    ) -> Var {
        if let Ok(mut t) = self.backward.lock() {
            t.sampling = step % 10 == 1;
        }
        self.track_params(params);
        g.scale(loss, self.scaler.scale * loss_weight)
    }

    /// After backward: rounds the gradients to their format, accumulates
    /// them over micro-batches in the accumulation format and, after the
    /// last micro-batch, unscales them and steps the optimizer, unless a
    /// gradient is not finite (then the step is skipped and the scaler
    /// backs off).
    pub(super) fn apply(
        &mut self,
        mut grads: Vec<Tensor<f32>>,
        step: u64,
        config: &TrainConfig,
        optimizer: &mut Optimizer<f32>,
        model: &mut Mlp<f32>,
    ) {
        let scale = self.scaler.scale;
        if self.grads.format_name() != self.compute.format_name() {
            for grad in &mut grads {
                self.grads.round_slice(&mut grad.data);
            }
        }
        if self.accumulates(config) {
            if self.accum.is_empty() {
                self.accum = grads.iter().map(|t| Tensor::zeros(&t.shape)).collect();
            }
            for (acc, grad) in self.accum.iter_mut().zip(&grads) {
                self.accumulation_overflows +=
                    accumulate(&mut acc.data, &grad.data, &self.accumulation);
            }
        } else {
            // Nothing to accumulate: the batch's gradients are the sum.
            self.accum = grads;
        }
        self.micro += 1;
        if self.micro < config.micro_batches {
            return;
        }
        self.micro = 0;
        let finite = self.accum.iter().all(Tensor::all_finite);
        if self.scaler.update(step, finite) {
            let inverse = 1.0 / (scale * config.micro_batches as f32);
            for acc in &mut self.accum {
                for v in &mut acc.data {
                    *v *= inverse;
                }
            }
            optimizer.step(&mut model.params_mut(), &self.accum);
            if config.policy.master_weights == MasterWeights::Same {
                for p in model.params_mut() {
                    self.compute.round_slice(&mut p.data);
                }
            }
        }
        if self.accumulates(config) {
            for acc in &mut self.accum {
                acc.data.fill(0.0);
            }
        }
    }

    /// Whether gradients are summed into a buffer of their own: over
    /// micro-batches, or one batch's rounded to a format they are not in
    /// already (one batch's sum in fp32, or in their own format, is
    /// themselves).
    fn accumulates(&self, config: &TrainConfig) -> bool {
        config.micro_batches > 1
            || !(self.accumulation.is_identity()
                || self.accumulation.format_name() == self.grads.format_name())
    }

    /// After the step: without accumulation the buffer was this step's
    /// gradients, which are no longer needed (the next step makes its own).
    pub(super) fn release_grads(&mut self, config: &TrainConfig) {
        if !self.accumulates(config) {
            self.accum = Vec::new();
        }
    }

    /// Closes an epoch's tallies.
    pub(super) fn epoch(&mut self) -> MixedEpoch {
        let tally = self
            .backward
            .lock()
            .map(|mut t| std::mem::take(&mut t.stats))
            .unwrap_or_default();
        let epoch = MixedEpoch {
            loss_scale: self.scaler.scale,
            skipped_steps: self.scaler.skipped - self.skipped_at_epoch_start,
            gradient_values: tally.values,
            underflowed: tally.underflowed,
            underflow_fraction: tally.underflow_fraction(),
            overflowed: tally.overflowed,
            accumulation_overflows: std::mem::take(&mut self.accumulation_overflows),
        };
        self.skipped_at_epoch_start = self.scaler.skipped;
        epoch
    }

    /// The loss scale, its history and the gradient histograms.
    pub(super) fn report(&self) -> MixedReport {
        let layers = self
            .backward
            .lock()
            .map(|t| t.layers.iter().step_by(2).cloned().collect())
            .unwrap_or_default();
        MixedReport {
            scale: self.scaler.scale,
            skipped: self.scaler.skipped,
            events: self.scaler.events.clone(),
            layers,
        }
    }
}

/// `acc += grad`, the sum rounded to the buffer's format; returns how many
/// finite sums overflowed to ±inf (in fp32 too, if a sum leaves its range).
fn accumulate(acc: &mut [f32], grad: &[f32], format: &Rounder) -> u64 {
    let mut overflows = 0;
    for (a, g) in acc.iter_mut().zip(grad) {
        let was_finite = a.is_finite() && g.is_finite();
        *a = format.round(*a + *g);
        overflows += u64::from(was_finite && !a.is_finite());
    }
    overflows
}
