//! The mixed-precision lesson's one-click scenarios, shared with the CLI and
//! the tests that pin their outcomes. Each trains on the UCI digits.

use serde::{Deserialize, Serialize};

use super::{Activation, OptimizerKind, TrainConfig};
use crate::mixed::{LossScale, MasterWeights, Policy};

/// The loss weight of the underflow scenarios: a loss averaged over 2^16 times
/// more elements, so every gradient is 2^16 times smaller.
pub const SMALL_GRADIENTS: f32 = 1.0 / 65536.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scenario {
    /// The reference: small gradients, fp32 throughout.
    Fp32,
    /// fp16 compute and gradients, no loss scaling: small gradients underflow.
    Fp16NoScaling,
    /// The same with dynamic loss scaling: the gradients survive.
    Fp16Dynamic,
    /// bf16 without scaling: fp32's exponent range keeps them.
    Bf16NoScaling,
    /// Gradients of 64 micro-batches summed into an fp32 buffer.
    AccumulateFp32,
    /// The same sum kept in an fp16 buffer: it overflows.
    AccumulateFp16,
    /// Adam with its moments kept in fp32.
    AdamFp32Moments,
    /// Adam with its moments kept in fp16: g² underflows, v̂ ≈ 0, steps explode.
    AdamFp16Moments,
}

impl Scenario {
    pub const ALL: [Self; 8] = [
        Self::Fp32,
        Self::Fp16NoScaling,
        Self::Fp16Dynamic,
        Self::Bf16NoScaling,
        Self::AccumulateFp32,
        Self::AccumulateFp16,
        Self::AdamFp32Moments,
        Self::AdamFp16Moments,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::Fp32 => "fp32",
            Self::Fp16NoScaling => "fp16-no-scaling",
            Self::Fp16Dynamic => "fp16-dynamic",
            Self::Bf16NoScaling => "bf16-no-scaling",
            Self::AccumulateFp32 => "accumulate-fp32",
            Self::AccumulateFp16 => "accumulate-fp16",
            Self::AdamFp32Moments => "adam-fp32-moments",
            Self::AdamFp16Moments => "adam-fp16-moments",
        }
    }

    /// The fp32 run this scenario is compared with.
    pub fn baseline(self) -> Self {
        match self {
            Self::AccumulateFp16 | Self::AccumulateFp32 => Self::AccumulateFp32,
            Self::AdamFp16Moments | Self::AdamFp32Moments => Self::AdamFp32Moments,
            _ => Self::Fp32,
        }
    }

    pub fn config(self) -> TrainConfig {
        let small = TrainConfig {
            hidden: vec![64],
            activation: Activation::Relu,
            optimizer: OptimizerKind::adam(),
            lr: 0.003,
            batch_size: 32,
            epochs: 15,
            seed: 1,
            loss_weight: SMALL_GRADIENTS,
            ..TrainConfig::default()
        };
        let uniform = |precision, scale| Policy::uniform(precision, scale, MasterWeights::Fp32);
        let accumulate = |buffer: &str| TrainConfig {
            hidden: vec![64],
            batch_size: 8,
            micro_batches: 64,
            epochs: 8,
            lr: 0.05,
            policy: Policy {
                accumulation: buffer.to_owned(),
                ..uniform("fp32", LossScale::Static(65536.0))
            },
            ..TrainConfig::default()
        };
        let adam = |state: &str| TrainConfig {
            hidden: vec![64],
            optimizer: OptimizerKind::adam(),
            lr: 0.001,
            batch_size: 32,
            epochs: 15,
            policy: Policy {
                optimizer_state: state.to_owned(),
                ..Policy::default()
            },
            ..TrainConfig::default()
        };
        match self {
            Self::Fp32 => small,
            Self::Fp16NoScaling => TrainConfig {
                policy: uniform("fp16", LossScale::None),
                ..small
            },
            Self::Fp16Dynamic => TrainConfig {
                policy: uniform("fp16", LossScale::dynamic()),
                ..small
            },
            Self::Bf16NoScaling => TrainConfig {
                policy: uniform("bf16", LossScale::None),
                ..small
            },
            Self::AccumulateFp32 => accumulate("fp32"),
            Self::AccumulateFp16 => accumulate("fp16"),
            Self::AdamFp32Moments => adam("fp32"),
            Self::AdamFp16Moments => adam("fp16"),
        }
    }
}
