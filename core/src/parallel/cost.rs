//! What model parallelism costs, in the closed forms the papers give: the
//! bytes a tensor-parallel layer and a sharded (ZeRO-3 / FSDP) step send
//! per worker, the micro-batches a pipeline needs for a bubble, the model
//! FLOPs utilisation, and an expert-parallel all-to-all. Each per-worker
//! byte count comes from the collective engine's ring
//! ([`Algorithm::elements_sent`]), which its tests hold to the messages a
//! schedule sends; `parallel::tests` holds these to counted schedules too.

use serde::Serialize;

use super::schedule::{Kind, MAX_MICRO, Times, bubble_formula};
use crate::collective::{Algorithm, chunk_range};

/// All-reduces a Megatron layer does per step with tensor parallelism:
/// attention and MLP each need one in forward (g, after the row-parallel
/// linear) and one in backward (f, for the input gradient) — Shoeybi et
/// al. 2019, §3.
pub const TP_ALL_REDUCES_PER_LAYER: u64 = 4;

/// Bytes one worker sends in a ring all-reduce of `elements` values of
/// `element_bytes` over `workers`: 2(T − 1)/T of the buffer when T divides
/// it.
pub fn all_reduce_bytes(workers: usize, elements: u64, element_bytes: u64) -> u64 {
    if workers < 2 {
        return 0;
    }
    Algorithm::Ring.elements_sent(workers, elements as usize, 0) * element_bytes
}

/// Bytes worker 0 sends in a ring all-gather of `elements` values: every
/// chunk but its successor's, (N − 1)/N of the buffer when N divides it.
pub fn all_gather_bytes(workers: usize, elements: u64, element_bytes: u64) -> u64 {
    all_but_chunk(workers, elements, 1) * element_bytes
}

/// Bytes worker 0 sends in a ring reduce-scatter: every chunk but its own.
pub fn reduce_scatter_bytes(workers: usize, elements: u64, element_bytes: u64) -> u64 {
    all_but_chunk(workers, elements, 0) * element_bytes
}

/// The buffer less chunk `c` of `workers`.
fn all_but_chunk(workers: usize, elements: u64, c: usize) -> u64 {
    if workers < 2 {
        return 0;
    }
    elements - chunk_range(c, workers, elements as usize).len() as u64
}

/// A tensor-parallel transformer layer's traffic per worker and step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TpTraffic {
    /// One all-reduce of the b·s·h activations.
    pub per_all_reduce: u64,
    /// The layer's four: 2 forward, 2 backward.
    pub per_layer: u64,
}

/// [`TpTraffic`] for `workers`-way tensor parallelism over `tokens` = b·s
/// tokens of width `hidden`.
pub fn tp_traffic(workers: usize, tokens: u64, hidden: u64, element_bytes: u64) -> TpTraffic {
    let per_all_reduce = all_reduce_bytes(workers, tokens.saturating_mul(hidden), element_bytes);
    TpTraffic {
        per_all_reduce,
        per_layer: TP_ALL_REDUCES_PER_LAYER * per_all_reduce,
    }
}

/// One tensor-parallel layer's step on one GPU.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TpStep {
    /// Its share of the layer's matrix multiplies, forward and backward:
    /// 72·b·s·h²/T FLOPs (Narayanan et al. 2021: 24·b·s·h² forward, twice
    /// that backward; the attention scores' 4·b·s²·h left out).
    pub flops: f64,
    pub compute_s: f64,
    /// The 4 all-reduces on the ring, each 2(T − 1) steps of α plus its
    /// bytes over the link.
    pub comm_s: f64,
    /// The share of the step spent communicating (nothing overlapped).
    pub comm_share: f64,
}

/// [`TpStep`] for `tokens` (b·s) × `hidden` at `flops_per_s` per GPU, the
/// activations `element_bytes` each, over `link`.
pub fn tp_step(
    workers: usize,
    tokens: u64,
    hidden: u64,
    element_bytes: u64,
    flops_per_s: f64,
    link: crate::collective::Link,
) -> TpStep {
    let (b_s, h) = (tokens as f64, hidden as f64);
    let flops = 72.0 * b_s * h * h / workers.max(1) as f64;
    let compute_s = flops / flops_per_s;
    let traffic = tp_traffic(workers, tokens, hidden, element_bytes);
    let steps = 2.0 * workers.saturating_sub(1) as f64;
    let one = steps * link.alpha_s + traffic.per_all_reduce as f64 / link.bytes_per_s;
    let comm_s = if workers > 1 {
        TP_ALL_REDUCES_PER_LAYER as f64 * one
    } else {
        0.0
    };
    TpStep {
        flops,
        compute_s,
        comm_s,
        comm_share: comm_s / (compute_s + comm_s),
    }
}

/// Bytes per worker and step for Ψ parameters over N workers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ShardedTraffic {
    /// ZeRO-3 / FSDP: the weights all-gathered before forward and again
    /// before backward (resharded after forward), the gradients
    /// reduce-scattered: 3Ψ(N − 1)/N.
    pub fsdp: u64,
    /// Plain data parallelism: one all-reduce of the gradients,
    /// 2Ψ(N − 1)/N.
    pub data_parallel: u64,
}

/// [`ShardedTraffic`] for `parameters` values of `element_bytes`.
pub fn sharded_traffic(workers: usize, parameters: u64, element_bytes: u64) -> ShardedTraffic {
    let gather = all_gather_bytes(workers, parameters, element_bytes);
    ShardedTraffic {
        fsdp: 2 * gather + reduce_scatter_bytes(workers, parameters, element_bytes),
        data_parallel: all_reduce_bytes(workers, parameters, element_bytes),
    }
}

/// The fewest micro-batches for which `kind` over `stages` stages has a
/// bubble of at most `target` (equal stages, free transfers; interleaving
/// in whole groups of P), or `None` past [`MAX_MICRO`].
pub fn micro_batches_for(kind: Kind, stages: usize, target: f64, times: Times) -> Option<usize> {
    let step = if matches!(kind, Kind::Interleaved { .. }) {
        stages.max(1)
    } else {
        1
    };
    (1..=MAX_MICRO / step)
        .map(|k| k * step)
        .find(|m| bubble_formula(kind, stages, *m, times) <= target + 1e-12)
}

/// Model FLOPs utilisation (PaLM, Chowdhery et al. 2022, appendix B): the
/// 6·N FLOPs per token a dense model's training needs, at the measured
/// tokens per second, over the GPUs' dense peak. Recomputation is not
/// counted (that would be hardware FLOPs utilisation).
pub fn mfu(parameters: f64, tokens_per_s: f64, gpus: f64, peak_flops: f64) -> f64 {
    6.0 * parameters * tokens_per_s / (gpus * peak_flops)
}

/// Bytes one GPU sends in one expert-parallel all-to-all (Switch
/// Transformer, Fedus et al. 2022): its `tokens`, each routed to `top_k`
/// experts, in slots of `capacity` × the even share, spread over `experts`
/// GPUs (one expert each) — all but the share that stays on this GPU.
/// A layer's forward does two (dispatch and combine).
pub fn all_to_all_bytes(
    tokens: f64,
    top_k: f64,
    capacity: f64,
    hidden: f64,
    element_bytes: f64,
    experts: f64,
) -> f64 {
    tokens * top_k * capacity * hidden * element_bytes * (experts - 1.0) / experts
}
