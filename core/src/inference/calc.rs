//! The serving calculator: time to first token, time per output token and
//! tokens per second for a model on a device, each the larger of its FLOPs
//! over the device's peak and its bytes over the device's bandwidth, with
//! the bound that wins named; the batch where the weight GEMMs turn
//! compute-bound; the KV cache per token and how many sequences fit.
//!
//! The shapes, the parameter count, the KV formula and the attention FLOPs
//! are the memory calculator's (`memory::transformer`); nothing is counted
//! twice. Conventions: a forward pass costs 2·N FLOPs per token for the
//! weights (N includes the input embedding, as the memory calculator
//! counts it) plus attention's 4·layers·context·hidden per token (Q·Kᵀ and
//! P·V over the whole context, the calculator's non-causal convention);
//! prefill reads every weight once and writes the prompt's K/V, a decode
//! step reads every weight once and every sequence's K/V.

use serde::Serialize;

use super::InferError;
use crate::memory::transformer::{Preset, TransformerConfig, attention_flops};

/// A device's three numbers, from its datasheet.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Device {
    /// Memory bandwidth, GB/s (10⁹ bytes a second).
    pub bandwidth_gb_s: f64,
    /// Dense 16-bit tensor throughput, TFLOP/s (10¹² a second).
    pub peak_tflops: f64,
    /// Memory, GB (10⁹ bytes).
    pub memory_gb: f64,
}

/// Devices with published figures (dense, no sparsity): NVIDIA's A100
/// datasheet (80 GB SXM: 2,039 GB/s, 312 TFLOP/s BF16), H100 datasheet
/// (SXM: 3,350 GB/s, 989 TFLOP/s BF16, 80 GB) and the Ada Lovelace
/// architecture whitepaper (RTX 4090: 1,008 GB/s, 165 TFLOP/s FP16 with
/// FP32 accumulation, 24 GB).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum DevicePreset {
    A100,
    H100,
    Rtx4090,
}

impl DevicePreset {
    pub const ALL: [Self; 3] = [Self::A100, Self::H100, Self::Rtx4090];

    pub fn name(self) -> &'static str {
        match self {
            Self::A100 => "a100-80gb",
            Self::H100 => "h100-sxm",
            Self::Rtx4090 => "rtx-4090",
        }
    }

    pub fn by_name(name: &str) -> Result<Self, InferError> {
        Self::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| InferError::UnknownDevice {
                name: name.to_owned(),
                choices: Self::ALL.map(Self::name).join(", "),
            })
    }

    pub fn device(self) -> Device {
        let (bandwidth_gb_s, peak_tflops, memory_gb) = match self {
            Self::A100 => (2039.0, 312.0, 80.0),
            Self::H100 => (3350.0, 989.0, 80.0),
            Self::Rtx4090 => (1008.0, 165.0, 24.0),
        };
        Device {
            bandwidth_gb_s,
            peak_tflops,
            memory_gb,
        }
    }
}

/// What a phase's time is bound by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Bound {
    Compute,
    Memory,
}

impl Bound {
    /// The roof that bounds work of `intensity` FLOPs per byte under `roof`.
    pub fn at(roof: &crate::kernels::Roofline, intensity: f64) -> Self {
        if roof.is_memory_bound(intensity) {
            Self::Memory
        } else {
            Self::Compute
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            Self::Compute => "compute",
            Self::Memory => "memory",
        }
    }
}

impl crate::names::Named for Bound {
    fn name_key(&self) -> String {
        format!("infer.bound.{}", self.key())
    }
}

/// One phase: its work, its traffic and the time the device needs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Phase {
    pub flops: f64,
    pub bytes: f64,
    pub compute_s: f64,
    pub memory_s: f64,
    pub seconds: f64,
    pub bound: Bound,
}

impl Phase {
    fn on(device: &Device, flops: f64, bytes: f64) -> Self {
        let compute_s = flops / (device.peak_tflops * 1e12);
        let memory_s = bytes / (device.bandwidth_gb_s * 1e9);
        let bound = if compute_s >= memory_s {
            Bound::Compute
        } else {
            Bound::Memory
        };
        Self {
            flops,
            bytes,
            compute_s,
            memory_s,
            seconds: compute_s.max(memory_s),
            bound,
        }
    }

    /// FLOPs per byte moved.
    pub fn intensity(&self) -> f64 {
        self.flops / self.bytes
    }
}

/// Most of any count the calculator takes (tokens, batch), far past real
/// deployments and well inside f64's exact integers.
pub const MAX_COUNT: u64 = 1 << 20;

/// What to serve, on what.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct ServeSettings {
    pub model: TransformerConfig,
    pub device: Device,
    /// Bytes per weight: 2 (fp16/bf16), 1 (int8/fp8), 0.5 (int4).
    pub weight_bytes: f64,
    /// The cache's element type (the quantisation lesson's), its scales
    /// counted with its values.
    pub kv: crate::quant::KvElement,
    /// Tokens in the prompt (prefill).
    pub prompt: u64,
    /// Tokens in context at the decode step.
    pub context: u64,
    /// Sequences decoded together.
    pub batch: u64,
}

impl ServeSettings {
    /// A preset on a device, fp16 weights and cache, a 512-token prompt,
    /// decoding at 1,024 tokens of context, batch 1.
    pub fn preset(model: Preset, device: DevicePreset) -> Self {
        Self {
            model: model.config(),
            device: device.device(),
            weight_bytes: 2.0,
            kv: crate::quant::KvElement::Fp16,
            prompt: 512,
            context: 1024,
            batch: 1,
        }
    }

    pub fn validate(&self) -> Result<(), InferError> {
        self.model
            .validate()
            .map_err(|reason| InferError::Model { reason })?;
        let d = &self.device;
        let figure = |value: f64| value.is_finite() && value > 0.0 && value < 1e9;
        if !figure(d.bandwidth_gb_s) {
            return Err(InferError::Bandwidth {
                value: d.bandwidth_gb_s,
            });
        }
        if !figure(d.peak_tflops) {
            return Err(InferError::Peak {
                value: d.peak_tflops,
            });
        }
        if !figure(d.memory_gb) {
            return Err(InferError::DeviceMemory { value: d.memory_gb });
        }
        if ![0.5, 1.0, 2.0, 4.0].contains(&self.weight_bytes) {
            return Err(InferError::WeightBytes {
                value: self.weight_bytes,
            });
        }
        let count = |value: u64| (1..=MAX_COUNT).contains(&value);
        if !count(self.prompt) {
            return Err(InferError::Prompt {
                value: self.prompt,
                max: MAX_COUNT,
            });
        }
        if !count(self.context) {
            return Err(InferError::Context {
                value: self.context,
                max: MAX_COUNT,
            });
        }
        if !count(self.batch) {
            return Err(InferError::Batch {
                value: self.batch,
                max: MAX_COUNT,
            });
        }
        Ok(())
    }
}

/// Everything the calculator shows.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ServeReport {
    pub parameters: u64,
    pub weight_bytes: f64,
    pub kv_per_token: f64,
    /// Time to first token: the prompt's prefill, batch 1.
    pub prefill: Phase,
    /// One decode step of the whole batch at `context`.
    pub decode: Phase,
    /// Decode tokens per second over the batch.
    pub tokens_per_s: f64,
    /// The bandwidth bound on tokens per second at this batch and context:
    /// batch · bandwidth ÷ (weights + batch · KV bytes at the context).
    pub bandwidth_bound_tokens_per_s: f64,
    /// The batch at which decoding's weight GEMMs reach the device's ridge
    /// point (KV traffic left out): peak · weight bytes ÷ (2 · bandwidth).
    pub ridge_batch: f64,
    /// FLOPs per byte of attention over the cache, whatever the batch:
    /// 2 · (heads ÷ kv_heads) ÷ kv bytes.
    pub attention_intensity: f64,
    /// The device's ridge point, FLOPs per byte.
    pub ridge_intensity: f64,
    /// Whether the weights alone fit in the device's memory.
    pub weights_fit: bool,
    /// Sequences of `context` tokens whose caches fit beside the weights.
    pub sequences_fit: u64,
}

/// The batch at which decoding's weight GEMMs reach the ridge point: a
/// decode step does 2 FLOPs per weight per sequence and reads each weight
/// (`weight_bytes` bytes) once, so its intensity is 2·batch ÷ weight_bytes.
pub fn ridge_batch(device: &Device, weight_bytes: f64) -> f64 {
    device.peak_tflops * 1e12 * weight_bytes / (2.0 * device.bandwidth_gb_s * 1e9)
}

/// Decode tokens per second if only bytes counted: every step reads the
/// weights once and each of `batch` sequences' `kv_bytes` of cache.
pub fn bandwidth_tokens_per_s(
    device: &Device,
    weight_bytes: f64,
    kv_bytes: f64,
    batch: f64,
) -> f64 {
    batch * device.bandwidth_gb_s * 1e9 / (weight_bytes + batch * kv_bytes)
}

/// Sequences of `per_sequence` cache bytes that fit beside the weights.
pub fn sequences_fit(device: &Device, weight_bytes: f64, per_sequence: f64) -> u64 {
    let free = device.memory_gb * 1e9 - weight_bytes;
    if free > 0.0 && per_sequence > 0.0 {
        (free / per_sequence).floor() as u64
    } else {
        0
    }
}

/// Prefill time if only the weights' FLOPs counted (2 per weight per
/// token), at the device's peak.
pub fn prefill_compute_s(device: &Device, parameters: f64, tokens: f64) -> f64 {
    2.0 * parameters * tokens / (device.peak_tflops * 1e12)
}

/// A token's K and V over every layer in `kv`, scales included (the
/// memory calculator's formula, through the element type).
fn kv_per_token(m: &TransformerConfig, kv: crate::quant::KvElement) -> Result<f64, InferError> {
    let bytes = kv
        .per_token_bytes(m.layers, m.kv_heads, m.head_dim())
        .map_err(|reason| InferError::Model { reason })?;
    Ok(bytes.total as f64)
}

/// The calculator.
pub fn serve(s: &ServeSettings) -> Result<ServeReport, InferError> {
    s.validate()?;
    let m = &s.model;
    let model_err = |reason| InferError::Model { reason };
    let parameters = m.parameters().map_err(model_err)?;
    let n = parameters as f64;
    let weight_bytes = n * s.weight_bytes;
    let kv_per_token = kv_per_token(m, s.kv)?;
    let kv = kv_per_token;
    // Prefill: every prompt token through the weights, attention over the prompt.
    let prompt = s.prompt as f64;
    let prefill_attention =
        attention_flops(m.layers, s.prompt, m.hidden, s.prompt).map_err(model_err)? as f64;
    let prefill = Phase::on(
        &s.device,
        2.0 * n * prompt + prefill_attention,
        weight_bytes + prompt * kv,
    );
    // Decode: one token per sequence, attention over its whole context.
    let batch = s.batch as f64;
    let decode_attention =
        attention_flops(m.layers, s.context, m.hidden, s.batch).map_err(model_err)? as f64;
    let kv_read = batch * s.context as f64 * kv;
    let decode = Phase::on(
        &s.device,
        2.0 * n * batch + decode_attention,
        weight_bytes + kv_read,
    );
    let bandwidth = s.device.bandwidth_gb_s * 1e9;
    let peak = s.device.peak_tflops * 1e12;
    Ok(ServeReport {
        parameters,
        weight_bytes,
        kv_per_token,
        prefill,
        decode,
        tokens_per_s: batch / decode.seconds,
        bandwidth_bound_tokens_per_s: bandwidth_tokens_per_s(
            &s.device,
            weight_bytes,
            s.context as f64 * kv,
            batch,
        ),
        ridge_batch: ridge_batch(&s.device, s.weight_bytes),
        attention_intensity: 2.0 * (m.heads as f64 / m.kv_heads as f64)
            / (s.kv.bits() as f64 / 8.0),
        ridge_intensity: peak / bandwidth,
        weights_fit: weight_bytes <= s.device.memory_gb * 1e9,
        sequences_fit: sequences_fit(&s.device, weight_bytes, s.context as f64 * kv),
    })
}

/// What one forward pass of a model costs on a device, by the calculator's
/// conventions: the batching simulation times every iteration with it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepCost {
    device: Device,
    /// FLOPs per token through the weights: 2·N.
    weight_flops: f64,
    /// Bytes of weights one pass reads.
    weight_bytes: f64,
    /// Bytes of K/V one token holds.
    kv_per_token: f64,
    /// Attention FLOPs per query token per context token (the memory
    /// calculator's `attention_flops` for one of each).
    attention: f64,
}

impl StepCost {
    /// The costs of `s`'s model, weights and cache on its device (its
    /// prompt, context and batch are what it validates, not used).
    pub fn new(s: &ServeSettings) -> Result<Self, InferError> {
        s.validate()?;
        let m = &s.model;
        let model_err = |reason| InferError::Model { reason };
        let n = m.parameters().map_err(model_err)? as f64;
        let kv = kv_per_token(m, s.kv)?;
        let attention = attention_flops(m.layers, 1, m.hidden, 1).map_err(model_err)?;
        Ok(Self {
            device: s.device,
            weight_flops: 2.0 * n,
            weight_bytes: n * s.weight_bytes,
            kv_per_token: kv,
            attention: attention as f64,
        })
    }

    /// Prefill of `tokens` prompt tokens in one pass (one prompt or several
    /// side by side), `attended` = Σ prompt² query–key pairs, writing their K/V.
    pub fn prefill(&self, tokens: f64, attended: f64) -> Phase {
        Phase::on(
            &self.device,
            self.weight_flops * tokens + self.attention * attended,
            self.weight_bytes + tokens * self.kv_per_token,
        )
    }

    /// One pass carrying prompt chunks and decodes together, the weights
    /// read once for both: `chunk` prompt tokens whose queries meet
    /// `chunk_pairs` keys, writing their K/V and reading `chunk_read` earlier
    /// tokens' (as [`StepCost::prefill`] counts a prompt), and a decode step
    /// of `batch` sequences holding `context` tokens (as
    /// [`StepCost::decode`] counts one).
    pub fn mixed(
        &self,
        chunk: f64,
        chunk_pairs: f64,
        chunk_read: f64,
        batch: f64,
        context: f64,
    ) -> Phase {
        Phase::on(
            &self.device,
            self.weight_flops * (chunk + batch) + self.attention * (chunk_pairs + context),
            self.weight_bytes + (chunk + chunk_read + context) * self.kv_per_token,
        )
    }

    /// One decode step of `batch` sequences holding `context` tokens in all.
    pub fn decode(&self, batch: f64, context: f64) -> Phase {
        Phase::on(
            &self.device,
            self.weight_flops * batch + self.attention * context,
            self.weight_bytes + context * self.kv_per_token,
        )
    }

    pub fn weight_bytes(&self) -> f64 {
        self.weight_bytes
    }

    pub fn kv_per_token(&self) -> f64 {
        self.kv_per_token
    }
}

/// Decode at one batch size: what the device reaches, and the rate if only
/// FLOPs or only bytes counted (the two roofs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BatchPoint {
    pub batch: u64,
    pub tokens_per_s: f64,
    pub compute_only: f64,
    pub memory_only: f64,
    pub bound: Bound,
}

/// Decode at each batch in `batches` (the calculator at that batch, the
/// rest of `s` unchanged), for the plot against batch size.
pub fn tokens_per_s_by_batch(
    s: &ServeSettings,
    batches: &[u64],
) -> Result<Vec<BatchPoint>, InferError> {
    batches
        .iter()
        .map(|&batch| {
            let r = serve(&ServeSettings { batch, ..s.clone() })?;
            let b = batch as f64;
            Ok(BatchPoint {
                batch,
                tokens_per_s: r.tokens_per_s,
                compute_only: b / r.decode.compute_s,
                memory_only: b / r.decode.memory_s,
                bound: r.decode.bound,
            })
        })
        .collect()
}
