//! Sizes: the bytes of quantised weights (payload, scales, zero points),
//! the bound on an integer dot product's sum, and fp8's per-tensor scale.

use serde::Serialize;

use super::QuantError;
use super::scheme::{IntFormat, MAX_BITS, MIN_BITS};
use crate::float::Format;

/// What `params` weights take at `bits` each, with one scale (and, when
/// asymmetric, one zero point of `bits` bits) per block.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct QuantBytes {
    pub params: u64,
    pub bits: u32,
    pub blocks: u64,
    pub scale_bytes: u32,
    pub payload_bytes: u64,
    pub scales_bytes: u64,
    pub zero_points_bytes: u64,
    pub total_bytes: u64,
    /// total · 8 / params.
    pub bits_per_param: f64,
}

/// The one byte count: `params` values packed at `bits` (rounded up to
/// whole bytes), `blocks` scales of `scale_bytes` each (2 for fp16), and
/// `blocks` zero points packed at `bits` when `zero_points`.
pub fn quantised_bytes(
    params: u64,
    bits: u32,
    blocks: u64,
    scale_bytes: u32,
    zero_points: bool,
) -> Result<QuantBytes, QuantError> {
    if !(MIN_BITS..=16).contains(&bits) {
        return Err(QuantError::Bits {
            bits,
            min: MIN_BITS,
            max: MAX_BITS,
        });
    }
    let packed = |count: u64| (u128::from(count) * u128::from(bits)).div_ceil(8) as u64;
    let payload_bytes = packed(params);
    let scales_bytes = blocks.saturating_mul(u64::from(scale_bytes));
    let zero_points_bytes = if zero_points { packed(blocks) } else { 0 };
    let total_bytes = payload_bytes
        .saturating_add(scales_bytes)
        .saturating_add(zero_points_bytes);
    Ok(QuantBytes {
        params,
        bits,
        blocks,
        scale_bytes,
        payload_bytes,
        scales_bytes,
        zero_points_bytes,
        total_bytes,
        bits_per_param: if params == 0 {
            0.0
        } else {
            total_bytes as f64 * 8.0 / params as f64
        },
    })
}

/// [`quantised_bytes`] with groups of `group` along K: one block per
/// `group` weights (a model whose K is a multiple of `group`, as LLMs'
/// 4096 or 8192 are; `group = 0` means one scale for the whole tensor).
pub fn grouped_bytes(
    params: u64,
    bits: u32,
    group: u64,
    scale_bytes: u32,
    zero_points: bool,
) -> Result<QuantBytes, QuantError> {
    let blocks = if group == 0 {
        1
    } else {
        params.div_ceil(group)
    };
    quantised_bytes(params, bits, blocks, scale_bytes, zero_points)
}

/// The largest |Σ qa·qw| over a K-long dot product of codes in `a` and `w`
/// (each code's magnitude at most |qmin|, the larger end), and the bits a
/// signed accumulator needs to hold it.
pub fn dot_bound(k: u64, a: IntFormat, w: IntFormat) -> (u128, u32) {
    let mag = |f: IntFormat| u128::from(f.qmin().unsigned_abs().max(f.qmax().unsigned_abs()));
    let bound = u128::from(k) * mag(a) * mag(w);
    (bound, 129 - bound.leading_zeros())
}

/// fp8 per-tensor scaling from the current amax, as NVIDIA Transformer
/// Engine computes it: `scale = max_finite / amax / 2^margin`, the tensor
/// multiplied by it before conversion (so its amax lands `margin` binades
/// below the format's largest finite value). `amax = 0` keeps scale 1.
pub fn fp8_scale(amax: f64, format: &Format, margin: i32) -> f64 {
    let max = format.range().max_finite;
    if amax > 0.0 && amax.is_finite() {
        max / amax / crate::float::pow2(margin)
    } else {
        1.0
    }
}

/// The element type of an inference-time KV cache. The quantisation lesson
/// owns it; the memory calculator and `dlsys-lab memory --kv-dtype` size
/// the cache with it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum KvElement {
    #[default]
    Fp16,
    /// E4M3 with one fp32 scale per layer for K and one for V (per-tensor
    /// scaling, as vLLM's fp8 cache keeps it).
    Fp8,
    /// Symmetric int8 with one fp16 scale per token, head and K or V.
    Int8,
    /// The same at 4 bits.
    Int4,
}

/// A KV cache's bytes: the values and their scales.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KvBytes {
    pub values: u64,
    pub scales: u64,
    pub total: u64,
}

impl KvElement {
    pub const ALL: [Self; 4] = [Self::Fp16, Self::Fp8, Self::Int8, Self::Int4];

    /// `fp16`, `fp8`, `int8`, `int4`.
    pub fn id(self) -> &'static str {
        match self {
            Self::Fp16 => "fp16",
            Self::Fp8 => "fp8",
            Self::Int8 => "int8",
            Self::Int4 => "int4",
        }
    }

    pub fn bits(self) -> u64 {
        match self {
            Self::Fp16 => 16,
            Self::Fp8 | Self::Int8 => 8,
            Self::Int4 => 4,
        }
    }

    /// K and V of `layers` layers for `tokens` tokens, each `kv_heads`
    /// heads of `head_dim` values: through the memory calculator's one KV
    /// formula (in bits, then bytes), plus the scales — fp8's per-layer
    /// scales once for the whole cache, the integers' per head vector.
    pub fn cache_bytes(
        self,
        layers: u64,
        kv_heads: u64,
        head_dim: u64,
        tokens: u64,
    ) -> Result<KvBytes, crate::memory::MemoryError> {
        use crate::memory::kv_cache_bytes;
        let values = kv_cache_bytes(layers, kv_heads, head_dim, tokens, self.bits())? / 8;
        let scales = match self {
            Self::Fp16 => 0,
            // One fp32 scale for K and one for V per layer (tokens: 1, head_dim: 1).
            Self::Fp8 => kv_cache_bytes(layers, 1, 1, 1, 4)?,
            // One fp16 scale per head vector of K and of V.
            Self::Int8 | Self::Int4 => kv_cache_bytes(layers, kv_heads, 1, tokens, 2)?,
        };
        Ok(KvBytes {
            values,
            scales,
            total: values.saturating_add(scales),
        })
    }

    /// What each token adds to the cache: [`Self::cache_bytes`] of one
    /// token without fp8's per-layer scales, which do not grow with it.
    pub fn per_token_bytes(
        self,
        layers: u64,
        kv_heads: u64,
        head_dim: u64,
    ) -> Result<KvBytes, crate::memory::MemoryError> {
        let one = self.cache_bytes(layers, kv_heads, head_dim, 1)?;
        if self == Self::Fp8 {
            return Ok(KvBytes {
                scales: 0,
                total: one.values,
                ..one
            });
        }
        Ok(one)
    }
}

#[cfg(test)]
mod tests {
    use super::KvElement;

    /// LLaMA-7B's 2,048 tokens (32 layers, 32 KV heads of 128): 1 GiB in
    /// fp16; int8 halves the values and adds an fp16 scale per head vector
    /// (1/64 of them); fp8 adds a per-layer fp32 scale for K and for V.
    #[test]
    fn a_quantised_cache_counts_its_scales() {
        let at = |kv: KvElement| kv.cache_bytes(32, 32, 128, 2048).map(|b| b.total).ok();
        assert_eq!(at(KvElement::Fp16), Some(1 << 30));
        assert_eq!(at(KvElement::Int8), Some((1 << 29) + (1 << 23)));
        assert_eq!(at(KvElement::Fp8), Some((1 << 29) + 2 * 32 * 4));
        assert_eq!(at(KvElement::Int4), Some((1 << 28) + (1 << 23)));
        // Per token, fp8's per-layer scales are not counted again.
        let fp8 = KvElement::Fp8.per_token_bytes(32, 32, 128).ok();
        assert_eq!(fp8.map(|b| (b.values, b.scales)), Some((1 << 18, 0)));
    }
}
