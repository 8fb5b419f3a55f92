//! The precision policies memory is estimated under, what each stores per
//! element, and the components a training step's bytes are split into.

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::MemoryError;
use crate::mixed::{LossScale, MasterWeights, Policy};

/// A training precision policy, as memory estimates speak of it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Precision {
    /// Everything in fp32.
    #[default]
    Fp32,
    /// fp16 compute (weights, activations, gradients) with fp32 master
    /// weights and optimizer state, dynamic loss scaling.
    MixedFp16,
    /// The same with bf16 (no loss scaling).
    MixedBf16,
    /// bf16 everywhere: weights, gradients and optimizer state; no master copy.
    PureBf16,
}

impl Precision {
    pub const ALL: [Self; 4] = [Self::Fp32, Self::MixedFp16, Self::MixedBf16, Self::PureBf16];

    pub fn name(self) -> &'static str {
        match self {
            Self::Fp32 => "fp32",
            Self::MixedFp16 => "mixed-fp16",
            Self::MixedBf16 => "mixed-bf16",
            Self::PureBf16 => "pure-bf16",
        }
    }

    pub fn by_name(name: &str) -> Result<Self, MemoryError> {
        super::named(&Self::ALL, Self::name, name).ok_or_else(|| MemoryError::UnknownPrecision {
            name: name.to_owned(),
            choices: Self::ALL.map(Self::name).join(", "),
        })
    }

    /// Bytes per element of the weights the forward pass reads, of the
    /// activations and of the gradients.
    pub fn compute_bytes(self) -> u64 {
        if self == Self::Fp32 { 4 } else { 2 }
    }

    /// Bytes per element of each optimizer-state tensor.
    pub fn state_bytes(self) -> u64 {
        if self == Self::PureBf16 { 2 } else { 4 }
    }

    /// Bytes per element of the fp32 master copy (0: there is none).
    pub fn master_bytes(self) -> u64 {
        match self {
            Self::MixedFp16 | Self::MixedBf16 => 4,
            Self::Fp32 | Self::PureBf16 => 0,
        }
    }

    /// Bytes per parameter of weights, gradients, master weights and
    /// `states` optimizer-state tensors: 16 for mixed-precision Adam
    /// (2 + 2 + 4 + 4 + 4). The estimates count this layout.
    pub fn bytes_per_parameter(self, states: u64) -> u64 {
        self.per_parameter(states, Layout::MasterCopy).total()
    }

    /// Bytes per parameter component by component, in `layout`. Under
    /// [`Layout::Autocast`] a mixed policy keeps fp32 weights and gradients
    /// and no master copy; fp32 and pure bf16 are the same in both layouts.
    pub fn per_parameter(self, states: u64, layout: Layout) -> PerParameter {
        let autocast = layout == Layout::Autocast && self.master_bytes() > 0;
        let (weights, master) = if autocast {
            (4, 0)
        } else {
            (self.compute_bytes(), self.master_bytes())
        };
        PerParameter {
            weights,
            gradients: weights,
            master,
            states,
            state_bytes: self.state_bytes(),
        }
    }
}

/// Where a mixed-precision step keeps its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Megatron-LM and DeepSpeed, as the ZeRO paper counts: weights and
    /// gradients in the compute format, an fp32 master copy beside the
    /// optimizer state.
    MasterCopy,
    /// PyTorch's autocast with GradScaler: parameters and their gradients
    /// stay fp32 and each op casts its inputs (the casts live like
    /// activations, until backward has used them).
    Autocast,
}

/// Bytes per parameter, component by component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerParameter {
    pub weights: u64,
    pub gradients: u64,
    pub master: u64,
    /// Optimizer-state tensors, each `state_bytes` a parameter.
    pub states: u64,
    pub state_bytes: u64,
}

impl PerParameter {
    /// All optimizer-state tensors together.
    pub fn state(&self) -> u64 {
        self.states * self.state_bytes
    }

    pub fn total(&self) -> u64 {
        self.weights + self.gradients + self.master + self.state()
    }
}

/// The sum written out, each non-zero term once: `2 + 2 + 4 + 4 + 4 = 16`.
impl std::fmt::Display for PerParameter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let states = std::iter::repeat_n(self.state_bytes, self.states as usize);
        let terms: Vec<String> = [self.weights, self.gradients, self.master]
            .into_iter()
            .chain(states)
            .filter(|b| *b > 0)
            .map(|b| b.to_string())
            .collect();
        write!(f, "{} = {}", terms.join(" + "), self.total())
    }
}

impl Precision {
    /// The engine's policy for this precision (the mixed-precision lesson's
    /// formats). The gradients the optimizer reads stay in the compute
    /// format, 2 bytes a parameter as in the ZeRO paper's count: one
    /// batch's gradients need no accumulation buffer of their own.
    pub fn policy(self) -> Policy {
        let reduced = |format: &str, scale, masters| Policy {
            accumulation: format.to_owned(),
            ..Policy::uniform(format, scale, masters)
        };
        match self {
            Self::Fp32 => Policy::default(),
            Self::MixedFp16 => reduced("fp16", LossScale::dynamic(), MasterWeights::Fp32),
            Self::MixedBf16 => reduced("bf16", LossScale::None, MasterWeights::Fp32),
            Self::PureBf16 => Policy {
                optimizer_state: "bf16".to_owned(),
                ..reduced("bf16", LossScale::None, MasterWeights::Same)
            },
        }
    }
}

/// What a byte of training memory is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Component {
    /// The weights the forward pass reads (in the compute format).
    Parameters,
    Gradients,
    /// Momentum, or Adam's m and v.
    OptimizerState,
    /// The fp32 copy of the weights under mixed precision.
    MasterWeights,
    /// Values saved in forward for backward.
    Activations,
    /// The batch (inputs and labels).
    Inputs,
    /// Gradients in flight during backward, before they reach a parameter.
    Temporaries,
    /// What the emulation holds beyond the format: a 2-byte value kept in a
    /// 4-byte f32 buffer counts 2 bytes here.
    EmulationOverhead,
}

impl Component {
    pub const ALL: [Self; 8] = [
        Self::Parameters,
        Self::Gradients,
        Self::OptimizerState,
        Self::MasterWeights,
        Self::Activations,
        Self::Inputs,
        Self::Temporaries,
        Self::EmulationOverhead,
    ];

    /// Stable key (JSON, catalogs).
    pub fn key(self) -> &'static str {
        match self {
            Self::Parameters => "parameters",
            Self::Gradients => "gradients",
            Self::OptimizerState => "optimizer_state",
            Self::MasterWeights => "master_weights",
            Self::Activations => "activations",
            Self::Inputs => "inputs",
            Self::Temporaries => "temporaries",
            Self::EmulationOverhead => "emulation_overhead",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Bytes per [`Component`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Components([u64; 8]);

impl Components {
    pub fn get(&self, c: Component) -> u64 {
        self.0[c.index()]
    }

    pub fn set(&mut self, c: Component, bytes: u64) {
        self.0[c.index()] = bytes;
    }

    pub fn add(&mut self, c: Component, bytes: u64) {
        self.0[c.index()] = self.0[c.index()].saturating_add(bytes);
    }

    /// The sum over components (saturating: inputs are checked upstream).
    pub fn total(&self) -> u64 {
        self.0.iter().fold(0u64, |a, b| a.saturating_add(*b))
    }

    /// Each component's larger value.
    pub fn max(&self, other: &Self) -> Self {
        let mut out = *self;
        for (o, b) in out.0.iter_mut().zip(other.0) {
            *o = (*o).max(b);
        }
        out
    }

    /// What training keeps whatever the batch: weights, gradients,
    /// optimizer state and master weights.
    pub fn training_state(&self) -> u64 {
        [
            Component::Parameters,
            Component::Gradients,
            Component::OptimizerState,
            Component::MasterWeights,
        ]
        .iter()
        .fold(0u64, |sum, c| sum.saturating_add(self.get(*c)))
    }

    /// The components with a non-zero byte count, in [`Component::ALL`] order.
    pub fn nonzero(&self) -> impl Iterator<Item = (Component, u64)> + '_ {
        Component::ALL
            .into_iter()
            .map(|c| (c, self.get(c)))
            .filter(|(_, b)| *b > 0)
    }
}

impl Serialize for Components {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(Component::ALL.len()))?;
        for c in Component::ALL {
            map.serialize_entry(c.key(), &self.get(c))?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_precision_adam_is_sixteen_bytes_per_parameter() {
        assert_eq!(
            Precision::MixedFp16.bytes_per_parameter(2),
            2 + 2 + 4 + 4 + 4
        );
        assert_eq!(Precision::MixedBf16.bytes_per_parameter(2), 16);
        // fp32 Adam is 16 too: mixed precision does not halve it.
        assert_eq!(Precision::Fp32.bytes_per_parameter(2), 4 + 4 + 4 + 4);
        assert_eq!(Precision::PureBf16.bytes_per_parameter(2), 8);
        assert_eq!(Precision::Fp32.bytes_per_parameter(0), 8);
    }

    #[test]
    fn autocast_splits_mixed_adam_differently_into_the_same_sixteen_bytes() {
        for p in [Precision::MixedFp16, Precision::MixedBf16] {
            let megatron = p.per_parameter(2, Layout::MasterCopy);
            let autocast = p.per_parameter(2, Layout::Autocast);
            assert_eq!(
                (megatron.weights, megatron.gradients, megatron.master),
                (2, 2, 4)
            );
            assert_eq!(
                (autocast.weights, autocast.gradients, autocast.master),
                (4, 4, 0)
            );
            assert_eq!((megatron.state(), autocast.state()), (8, 8));
            assert_eq!((megatron.total(), autocast.total()), (16, 16));
            assert_eq!(megatron.to_string(), "2 + 2 + 4 + 4 + 4 = 16");
            assert_eq!(autocast.to_string(), "4 + 4 + 4 + 4 = 16");
            // Whatever the optimizer, fp32 weights and gradients (4 + 4) cost
            // what low-precision ones and a master copy (2 + 2 + 4) cost.
            assert_eq!(p.per_parameter(0, Layout::Autocast).total(), 8);
            assert_eq!(p.per_parameter(0, Layout::MasterCopy).total(), 8);
        }
        for p in [Precision::Fp32, Precision::PureBf16] {
            assert_eq!(
                p.per_parameter(2, Layout::Autocast),
                p.per_parameter(2, Layout::MasterCopy)
            );
        }
    }

    #[test]
    fn names_round_trip_and_policies_validate() {
        for p in Precision::ALL {
            assert_eq!(Precision::by_name(p.name()), Ok(p));
            assert!(p.policy().validate().is_ok(), "{p:?}");
        }
        assert!(matches!(
            Precision::by_name("fp64"),
            Err(MemoryError::UnknownPrecision { .. })
        ));
    }
}
