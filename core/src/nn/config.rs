//! How to train: the network, the optimizer, the schedule and the
//! precision policy, checked before a trainer is built.

use serde::{Deserialize, Serialize};

use super::layers::Activation;
use super::optimizers::OptimizerKind;
use super::{Divergence, TrainError};
use crate::mixed::Policy;

/// How to train.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrainConfig {
    pub hidden: Vec<usize>,
    pub activation: Activation,
    pub optimizer: OptimizerKind,
    pub lr: f64,
    pub weight_decay: f64,
    pub batch_size: usize,
    pub epochs: u64,
    pub seed: u64,
    /// The precision policy (fp32 throughout by default).
    pub policy: Policy,
    /// Batches whose gradients are accumulated before each optimizer step.
    pub micro_batches: u32,
    /// Multiplies the loss before backward (e.g. 2^-16 for a loss averaged
    /// over many more elements), which shrinks every gradient alike.
    pub loss_weight: f32,
    /// Activation checkpointing: the layers per recomputed segment (0:
    /// none). Every segment but the last is recomputed in backward from its
    /// input instead of keeping its values; 1 recomputes every layer but
    /// the last.
    pub checkpoint: usize,
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            hidden: vec![128],
            activation: Activation::Relu,
            optimizer: OptimizerKind::Momentum {
                mu: 0.9,
                nesterov: false,
            },
            lr: 0.05,
            weight_decay: 0.0,
            batch_size: 64,
            epochs: 10,
            seed: 1,
            policy: Policy::default(),
            micro_batches: 1,
            loss_weight: 1.0,
            checkpoint: 0,
        }
    }
}

/// The largest batch the MLP trains on.
pub const MAX_BATCH: usize = 65_536;
/// The most epochs an MLP run takes (the data-parallel runs too).
pub const MAX_EPOCHS: u64 = 10_000;

/// Refuses an epoch count outside `1..=MAX_EPOCHS`.
pub fn check_epochs(epochs: u64) -> Result<(), TrainError> {
    if epochs == 0 || epochs > MAX_EPOCHS {
        return Err(TrainError::Epochs {
            value: epochs,
            max: MAX_EPOCHS,
        });
    }
    Ok(())
}

impl TrainConfig {
    pub fn validate(&self) -> Result<(), TrainError> {
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(TrainError::LearningRate { value: self.lr });
        }
        if self.batch_size == 0 || self.batch_size > MAX_BATCH {
            return Err(TrainError::BatchSize {
                value: self.batch_size,
                max: MAX_BATCH,
            });
        }
        check_epochs(self.epochs)?;
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err(TrainError::WeightDecay);
        }
        if !(self.loss_weight.is_finite() && self.loss_weight > 0.0) {
            return Err(TrainError::LossWeight {
                value: self.loss_weight,
            });
        }
        if !(1..=1024).contains(&self.micro_batches) {
            return Err(TrainError::MicroBatches {
                value: self.micro_batches,
            });
        }
        self.policy.validate()?;
        Ok(())
    }
}

impl TrainConfig {
    /// Why a run with this configuration diverged at `step` (epoch `epoch`,
    /// 0-based) with `loss`, naming the setting most likely at fault: a loss
    /// weight far from 1, then a compute format with a small range, else
    /// the learning rate.
    pub fn divergence(&self, epoch: u64, step: u64, loss: f64) -> Divergence {
        let (epoch, loss) = (epoch + 1, loss.to_string());
        if !(1e-3..=1e3).contains(&self.loss_weight) {
            return Divergence::LossWeight {
                step,
                epoch,
                loss,
                weight: self.loss_weight,
            };
        }
        if let Ok(format) = crate::float::Format::by_name(&self.policy.compute) {
            let max = format.range().max_finite;
            if max < 1e5 {
                return Divergence::Precision {
                    step,
                    epoch,
                    loss,
                    format: format.name,
                    max: crate::float::show(max),
                };
            }
        }
        Divergence::LearningRate {
            step,
            epoch,
            loss,
            lr: self.lr,
        }
    }
}
