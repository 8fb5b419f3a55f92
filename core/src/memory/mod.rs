//! Training memory and compute, estimated and measured.
//!
//! - [`precision`]: the precision policies the estimates speak of, and what
//!   each stores per element;
//! - [`transformer`]: the decoder-only calculator — parameters, training
//!   memory by component, ZeRO, the KV cache, FLOPs — from a model's
//!   published configuration;
//! - [`mlp`]: the same estimate for the engine's MLP, a pure function of
//!   shapes, to hold against [`measure`];
//! - [`sharded`]: what a worker of fully sharded training (ZeRO-3 / FSDP)
//!   holds at its worst point, from the MLP's shapes;
//! - [`measure`]: one real training step of the engine with every buffer it
//!   holds counted by role, per phase.
//!
//! Every count is checked arithmetic on `u64`: a size that overflows is an
//! error ([`MemoryError::Overflow`]), never a wrapped number.

pub mod measure;
pub mod mlp;
pub mod models;
pub mod precision;
pub mod sharded;
pub mod show;
pub mod trace;
pub mod transformer;

pub use measure::{Measured, PhaseBytes, check_measurable, measure_step};
pub use mlp::{MlpEstimate, MlpSettings, MlpShape, estimate_mlp};
pub use precision::{Component, Components, Layout, PerParameter, Precision};
pub use show::{show_bytes, show_count, show_flops, show_seconds};
pub use transformer::{
    FfnKind, Norm, Preset, TransformerConfig, TransformerReport, TransformerRun, Zero,
    attention_flops, kv_cache_bytes,
};

crate::catalog_error! {
    /// What an estimate counts or a setting it takes, named in errors.
    #[derive(Copy)]
    pub enum Quantity {
        Layers = "memory.q.layers",
        Hidden = "memory.q.hidden",
        Heads = "memory.q.heads",
        KvHeads = "memory.q.kv_heads",
        Ffn = "memory.q.ffn",
        Vocab = "memory.q.vocab",
        Batch = "memory.q.batch",
        Seq = "memory.q.seq",
        Ranks = "memory.q.ranks",
        LayerSize = "memory.q.layer_size",
        Parameters = "memory.q.parameters",
        Activations = "memory.q.activations",
        KvCache = "memory.q.kv_cache",
        Flops = "memory.q.flops",
        Tokens = "memory.q.tokens",
        States = "memory.q.states",
    }
}

crate::catalog_error! {
    /// Why a memory estimate cannot be made.
    pub enum MemoryError {
        /// A size that must be at least one is zero.
        Zero { what: Quantity } = "memory.zero",
        /// `hidden` is not a multiple of `heads`.
        HeadsDivide { hidden: u64, heads: u64 } = "memory.heads_divide",
        /// `heads` is not a multiple of `kv_heads`.
        KvHeadsDivide { heads: u64, kv_heads: u64 } = "memory.kv_heads_divide",
        /// A count does not fit in 64 bits.
        Overflow { what: Quantity } = "memory.overflow",
        UnknownPreset { name: String, choices: String } = "memory.unknown_preset",
        UnknownPrecision { name: String, choices: String } = "memory.unknown_precision",
        /// ZeRO stage outside 0..=3.
        ZeroStage { stage: u64 } = "memory.zero_stage",
        /// Training stopped before the metered step (a non-finite loss).
        Diverged = "memory.diverged",
        /// Every warm-up step was skipped (gradients overflowed): the
        /// optimizer state never came to exist.
        NeverStepped { steps: u64 } = "memory.never_stepped",
        /// More layers than an MLP estimate takes.
        TooManyLayers { layers: u64, max: u64 } = "memory.too_many_layers",
        /// More layers than a measurement walks in reasonable time.
        TooDeepToMeasure { layers: u64, max: u64 } = "memory.too_deep_to_measure",
        /// A measurement would hold or compute more than this machine is
        /// asked to here.
        TooLargeToMeasure { bytes: String, limit: String } = "memory.too_large",
        /// A model's metered step takes batches of 1..=max.
        MeteredBatch { batch: u64, max: u64 } = "memory.metered_batch",
        /// A model with learned positions cannot see more tokens than it has positions.
        SeqBeyondPositions { seq: u64, positions: u64 } = "memory.seq_beyond_positions",
        /// An MLP given fewer than two sizes (it needs an input and an output).
        MlpSizes { given: u64 } = "memory.mlp_sizes",
        /// More data-parallel ranks than an estimate here takes.
        Ranks { ranks: u64, max: u64 } = "memory.ranks",
        /// A device for the allocator model outside 1..=max MiB.
        DeviceMib { value: u64, max: u64 } = "memory.device_mib",
        /// The MLP cannot be built or trained for a step.
        Train { reason: crate::nn::TrainError } = "memory.train",
    }
}

impl From<crate::nn::TrainError> for MemoryError {
    fn from(reason: crate::nn::TrainError) -> Self {
        Self::Train { reason }
    }
}

/// The one of `all` whose `name` is `wanted` (trimmed, any ASCII case).
fn named<T: Copy>(all: &[T], name: fn(T) -> &'static str, wanted: &str) -> Option<T> {
    let wanted = wanted.trim();
    all.iter()
        .copied()
        .find(|x| name(*x).eq_ignore_ascii_case(wanted))
}

/// `a · b · …`, or [`MemoryError::Overflow`] naming `what`.
pub(crate) fn product(what: Quantity, factors: &[u64]) -> Result<u64, MemoryError> {
    factors
        .iter()
        .try_fold(1u64, |acc, f| acc.checked_mul(*f))
        .ok_or(MemoryError::Overflow { what })
}

/// `a + b + …`, or [`MemoryError::Overflow`] naming `what`.
pub(crate) fn sum(what: Quantity, terms: &[u64]) -> Result<u64, MemoryError> {
    terms
        .iter()
        .try_fold(0u64, |acc, t| acc.checked_add(*t))
        .ok_or(MemoryError::Overflow { what })
}

#[cfg(test)]
mod tests;
