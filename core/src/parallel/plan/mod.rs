//! The 3D planner: every TP × PP × DP factorisation of a cluster's GPUs
//! for a model from the memory calculator's presets, each with its memory
//! per GPU and its step time term by term, ranked by throughput among
//! those that fit, and every other one with the reason it does not.
//!
//! Memory per GPU (mixed-precision Adam: 2 + 2 + 12 bytes a parameter,
//! Rajbhandari et al. 2020; the weights, gradients and optimizer state
//! sharded over DP by ZeRO stages 3, 2 and 1): the model's N parameters
//! split evenly over TP · PP (embeddings included, a simplification: a real
//! first stage holds the embedding besides). Activations of a layer per
//! micro-batch, bytes at 2-byte activations, as Korthikanti et al. 2022
//! count a GPT layer (eq. 2–4, Table 2): s·b·h·(10 + 24/t + 5·a·s/(h·t))
//! with tensor parallelism t, s·b·h·(34/t + 5·a·s/(h·t)) with sequence
//! parallelism too, 2·s·b·h (the layer's input alone; 2·s·b·h/t when
//! sequence parallelism splits it) with full recomputation; the first stage of 1F1B holds min(PP, M) micro-batches'
//! worth of its L/PP layers.
//!
//! Time per step: the hardware FLOPs (6·N per token, 8·N with
//! recomputation) at `efficiency` of the peak; the pipeline bubble, (PP −
//! 1)/M of it (Narayanan et al. 2021); per layer and micro-batch 4
//! all-reduces of the b·s·h activations in bf16 within the node (6 with
//! recomputation; sequence parallelism's reduce-scatter + all-gather send
//! the same bytes), not overlapped; each micro-batch's activation and
//! gradient between stages; the data-parallel gradient all-reduce of each
//! GPU's 2·N/(TP·PP) bytes over the NICs (3/2 of it under ZeRO-3, charged
//! once a step as if each stage kept its gathered weights across its
//! micro-batches; that buffer is not counted),
//! overlapped with the backward or not. MFU is PaLM's: 6·N·tokens/s over
//! the peak (recomputation not counted); HFU counts it.

mod cluster;
#[cfg(test)]
mod tests;

use serde::Serialize;

pub use cluster::Cluster;

use crate::memory::{Preset, Zero};

/// The most GPUs a plan takes.
pub const MAX_GPUS: u64 = 1 << 16;

crate::catalog_error! {
    /// Why the planner cannot run.
    pub enum PlanError {
        /// GPUs, batch, sequence or micro-batch out of range, or an
        /// efficiency or usable share outside (0, 1].
        Settings { gpus: u64, batch: u64, seq: u64 } = "parallel.plan_settings",
    }
}

crate::catalog_error! {
    /// Why a factorisation is not a plan.
    #[derive(Serialize)]
    pub enum Refusal {
        /// Tensor parallelism stays inside a node.
        Node { tp: u64, gpus_per_node: u64 } = "parallel.plan_node",
        /// The (KV) heads do not divide among the TP ranks.
        Heads { heads: u64, kv_heads: u64, tp: u64 } = "parallel.plan_heads",
        /// The layers do not divide among the stages.
        Layers { layers: u64, pp: u64 } = "parallel.plan_layers",
        /// The global batch is not a whole number of micro-batches per DP rank.
        Batch { batch: u64, dp: u64, micro: u64 } = "parallel.plan_batch",
        /// It needs more memory than a GPU has.
        Memory { need: String, usable: String, have: String } = "parallel.plan_memory",
    }
}

/// What the planner is asked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanSettings {
    pub preset: Preset,
    pub gpus: u64,
    pub cluster: Cluster,
    /// Sequences per step, and their length.
    pub global_batch: u64,
    pub seq: u64,
    /// Sequences per micro-batch.
    pub micro_batch: u64,
    /// Full activation recomputation.
    pub recompute: bool,
    pub sequence_parallel: bool,
    pub zero: Zero,
    /// The fraction of the peak the matrix multiplies reach.
    pub efficiency: f64,
    /// The data-parallel all-reduce overlapped with the backward.
    pub overlap: bool,
    /// The share of a GPU's memory a plan may fill: the rest is left to the
    /// CUDA context, the allocator's fragmentation and the collectives'
    /// buffers.
    pub usable: f64,
}

impl Default for PlanSettings {
    fn default() -> Self {
        Self {
            preset: Preset::Llama2_70b,
            gpus: 64,
            cluster: Cluster::ALL[0],
            global_batch: 1024,
            seq: 4096,
            micro_batch: 1,
            recompute: true,
            sequence_parallel: true,
            zero: Zero::Stage1,
            efficiency: 0.5,
            overlap: true,
            usable: 0.9,
        }
    }
}

/// Bytes per GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PlanMemory {
    pub weights: u64,
    pub gradients: u64,
    pub optimizer: u64,
    pub activations: u64,
    pub total: u64,
}

/// Seconds per step, term by term.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PlanTime {
    pub compute: f64,
    pub bubble: f64,
    pub tp: f64,
    pub pp: f64,
    /// The data-parallel collective's time, and what of it is not hidden
    /// behind the backward.
    pub dp: f64,
    pub dp_exposed: f64,
    pub step: f64,
}

/// The figures of a factorisation that has them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub memory: PlanMemory,
    pub time: PlanTime,
    pub tokens_per_s: f64,
    pub mfu: f64,
    pub hfu: f64,
}

/// One TP × PP × DP factorisation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    pub tp: u64,
    pub pp: u64,
    pub dp: u64,
    /// Micro-batches per step on each pipeline.
    pub micro_batches: u64,
    pub estimate: Option<Estimate>,
    pub refusal: Option<Refusal>,
}

impl Plan {
    pub fn fits(&self) -> bool {
        self.refusal.is_none() && self.estimate.is_some()
    }
}

/// Every factorisation: those that fit, fastest first, then the others.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanReport {
    pub settings: PlanSettings,
    pub parameters: u64,
    pub plans: Vec<Plan>,
}

impl PlanSettings {
    pub fn validate(&self) -> Result<(), PlanError> {
        let ok = (1..=MAX_GPUS).contains(&self.gpus)
            && (1..=1 << 24).contains(&self.global_batch)
            && (1..=1 << 20).contains(&self.seq)
            && (1..=self.global_batch).contains(&self.micro_batch)
            && self.efficiency > 0.0
            && self.efficiency <= 1.0
            && self.usable > 0.0
            && self.usable <= 1.0;
        if ok {
            Ok(())
        } else {
            Err(PlanError::Settings {
                gpus: MAX_GPUS,
                batch: 1 << 24,
                seq: 1 << 20,
            })
        }
    }
}

/// Plans every factorisation of `s.gpus`.
pub fn plan(s: &PlanSettings) -> Result<PlanReport, PlanError> {
    s.validate()?;
    let model = s.preset.config();
    let parameters = model.parameters().map_err(|_| PlanError::Settings {
        gpus: MAX_GPUS,
        batch: 1 << 24,
        seq: 1 << 20,
    })?;
    let divisors = |n: u64| (1..=n).filter(move |d| n.is_multiple_of(*d));
    let mut plans: Vec<Plan> = Vec::new();
    for tp in divisors(s.gpus) {
        for pp in divisors(s.gpus / tp) {
            let dp = s.gpus / (tp * pp);
            plans.push(factorisation(s, parameters, tp, pp, dp));
        }
    }
    let throughput = |p: &Plan| p.estimate.map_or(0.0, |e| e.tokens_per_s);
    plans.sort_by(|a, b| {
        b.fits()
            .cmp(&a.fits())
            .then(throughput(b).total_cmp(&throughput(a)))
            .then(a.tp.cmp(&b.tp))
            .then(a.pp.cmp(&b.pp))
    });
    Ok(PlanReport {
        settings: s.clone(),
        parameters,
        plans,
    })
}

/// One factorisation: refused for its shape, or estimated (and refused
/// when it does not fit).
fn factorisation(s: &PlanSettings, parameters: u64, tp: u64, pp: u64, dp: u64) -> Plan {
    let m = s.preset.config();
    let micro_batches = s.global_batch / (dp * s.micro_batch).max(1);
    let shape = if tp > s.cluster.gpus_per_node {
        Some(Refusal::Node {
            tp,
            gpus_per_node: s.cluster.gpus_per_node,
        })
    } else if !m.heads.is_multiple_of(tp) || !m.kv_heads.is_multiple_of(tp) {
        Some(Refusal::Heads {
            heads: m.heads,
            kv_heads: m.kv_heads,
            tp,
        })
    } else if !m.layers.is_multiple_of(pp) {
        Some(Refusal::Layers {
            layers: m.layers,
            pp,
        })
    } else if !s.global_batch.is_multiple_of(dp * s.micro_batch) {
        Some(Refusal::Batch {
            batch: s.global_batch,
            dp,
            micro: s.micro_batch,
        })
    } else {
        None
    };
    let mut plan = Plan {
        tp,
        pp,
        dp,
        micro_batches,
        estimate: None,
        refusal: shape,
    };
    if plan.refusal.is_none() {
        let e = estimate(s, parameters, tp, pp, dp, micro_batches);
        let usable = (s.cluster.memory as f64 * s.usable).floor() as u64;
        if e.memory.total > usable {
            plan.refusal = Some(Refusal::Memory {
                need: crate::memory::show_bytes(e.memory.total),
                usable: crate::memory::show_bytes(usable),
                have: crate::memory::show_bytes(s.cluster.memory),
            });
        }
        plan.estimate = Some(e);
    }
    plan
}

/// Bytes a layer keeps for backward per micro-batch (Korthikanti et al.
/// 2022), 2-byte activations.
pub fn layer_activation_bytes(
    seq: u64,
    micro: u64,
    hidden: u64,
    heads: u64,
    tp: u64,
    sequence_parallel: bool,
    recompute: bool,
) -> f64 {
    let (s, b, h, a, t) = (
        seq as f64,
        micro as f64,
        hidden as f64,
        heads as f64,
        tp as f64,
    );
    let sbh = s * b * h;
    let scores = 5.0 * a * s / (h * t);
    if recompute {
        // The layer's input alone, split along the sequence with sequence
        // parallelism.
        if sequence_parallel {
            2.0 * sbh / t
        } else {
            2.0 * sbh
        }
    } else if sequence_parallel {
        sbh * (34.0 / t + scores)
    } else {
        sbh * (10.0 + 24.0 / t + scores)
    }
}

/// A ring all-reduce's time for `bytes` over `n` ranks (2(n − 1) steps,
/// 2(n − 1)/n of the bytes sent by each); `share` scales the bytes (3/2
/// for ZeRO-3's two gathers and a reduce-scatter).
fn ring(n: u64, bytes: f64, bytes_per_s: f64, alpha_s: f64, share: f64) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let n = n as f64;
    share * (2.0 * (n - 1.0) / n * bytes / bytes_per_s + 2.0 * (n - 1.0) * alpha_s)
}

fn estimate(s: &PlanSettings, parameters: u64, tp: u64, pp: u64, dp: u64, m: u64) -> Estimate {
    let model = s.preset.config();
    let c = &s.cluster;
    let n = parameters as f64;
    let per_gpu = n / (tp * pp) as f64;
    let stage = s.zero.stage();
    let sharded = |from: u64| if stage >= from { dp as f64 } else { 1.0 };
    let weights = (2.0 * per_gpu / sharded(3)).ceil() as u64;
    let gradients = (2.0 * per_gpu / sharded(2)).ceil() as u64;
    let optimizer = (12.0 * per_gpu / sharded(1)).ceil() as u64;
    let per_layer = layer_activation_bytes(
        s.seq,
        s.micro_batch,
        model.hidden,
        model.heads,
        tp,
        s.sequence_parallel,
        s.recompute,
    );
    let in_flight = pp.min(m) as f64;
    let activations = ((model.layers / pp) as f64 * in_flight * per_layer).ceil() as u64;
    let memory = PlanMemory {
        weights,
        gradients,
        optimizer,
        activations,
        // Saturating: a sequence of 2²⁰ tokens in micro-batches of 2²⁴
        // needs more than 2⁶⁴ bytes, and is refused for memory.
        total: weights
            .saturating_add(gradients)
            .saturating_add(optimizer)
            .saturating_add(activations),
    };
    let tokens = s.global_batch as f64 * s.seq as f64;
    let model_flops = 6.0 * n * tokens;
    let hardware_flops = if s.recompute { 8.0 } else { 6.0 } * n * tokens;
    let machine = s.gpus as f64 * c.peak_flops;
    let compute = hardware_flops / (machine * s.efficiency);
    let bubble = compute * (pp - 1) as f64 / m as f64;
    let activation_bytes = 2.0 * (s.seq * s.micro_batch * model.hidden) as f64;
    let collectives = if s.recompute { 6.0 } else { 4.0 };
    let layers_here = (model.layers / pp) as f64;
    let tp_time = layers_here
        * m as f64
        * collectives
        * ring(
            tp,
            activation_bytes,
            c.intra_bytes_per_s,
            c.intra_alpha_s,
            1.0,
        );
    let (pp_bw, pp_alpha) = if tp * pp > c.gpus_per_node {
        (c.inter_bytes_per_s, c.inter_alpha_s)
    } else {
        (c.intra_bytes_per_s, c.intra_alpha_s)
    };
    let pp_time = if pp > 1 {
        2.0 * m as f64 * (pp_alpha + activation_bytes / pp_bw)
    } else {
        0.0
    };
    let (dp_bw, dp_alpha) = if s.gpus > c.gpus_per_node {
        (c.inter_bytes_per_s, c.inter_alpha_s)
    } else {
        (c.intra_bytes_per_s, c.intra_alpha_s)
    };
    let share = if stage >= 3 { 1.5 } else { 1.0 };
    let dp_time = ring(dp, 2.0 * per_gpu, dp_bw, dp_alpha, share);
    // The backward's part of the compute: 4 of 6 FLOPs a parameter and
    // token, 6 of 8 with the forward recomputed.
    let backward = compute * (hardware_flops - 2.0 * n * tokens) / hardware_flops;
    let dp_exposed = if s.overlap {
        (dp_time - backward).max(0.0)
    } else {
        dp_time
    };
    let step = compute + bubble + tp_time + pp_time + dp_exposed;
    Estimate {
        memory,
        time: PlanTime {
            compute,
            bubble,
            tp: tp_time,
            pp: pp_time,
            dp: dp_time,
            dp_exposed,
            step,
        },
        tokens_per_s: tokens / step,
        mfu: model_flops / step / machine,
        hfu: hardware_flops / step / machine,
    }
}
