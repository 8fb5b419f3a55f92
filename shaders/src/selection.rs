//! The GPU side of algorithm selection: the WGSL GEMM rungs raced by the
//! one ladder on a matmul call's shape, and what each took (the core's
//! selector times the CPU candidates itself and takes these for the GPU).

use dlsys_core::compile::dispatch::Call;
use dlsys_core::kernels::{Data, Family, GemmKind, Kernel, Problem};

use crate::LadderSettings;
use crate::ladder::Outcome;

/// Trials per rung: selection times each candidate once, as cuDNN's
/// benchmark mode does (the median of a few trials, against noise).
pub const TRIALS: u32 = 3;

/// The ladder that races `kinds` on `call`'s shape (the copy kernel it
/// always runs first kept small).
pub fn ladder_for(call: &Call, kinds: &[GemmKind]) -> LadderSettings {
    let mut settings =
        LadderSettings::families(&[Family::Gemm], Problem::new(64, 64), Data::Random, TRIALS);
    settings.gemm = kinds.to_vec();
    let size = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
    settings.gemm_shape = Problem::gemm(size(call.m), size(call.n), size(call.k));
    settings
}

/// Seconds each GEMM rung took, from a race's outcomes: `None` for a rung
/// skipped (the device refused it) or whose result was wrong. The CPU
/// path's reference rows are not GPU times and give nothing.
pub fn gemm_seconds(outcomes: &[Outcome]) -> Vec<(GemmKind, Option<f64>)> {
    outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Ran(row) => match row.kernel {
                Kernel::Gemm(kind) => Some((kind, row.ok.then_some(row.median_ms / 1e3))),
                _ => None,
            },
            Outcome::Skipped {
                kernel: Kernel::Gemm(kind),
                ..
            } => Some((*kind, None)),
            _ => None,
        })
        .collect()
}
