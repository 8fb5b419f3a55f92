//! The KV cache as the scheduler's limit: the device's memory beside the
//! weights, in tokens, held either by contiguous reservation (each admitted
//! request sets aside the longest request the stream can draw, as servers
//! did before vLLM) or by the paged cache (blocks taken as a sequence
//! grows; a sequence that finds no free block preempts the latest admitted
//! one, whose cache is freed and later recomputed — vLLM's recomputation).
//! It also keeps the measure of waste: the share of reserved memory that
//! held no K/V, over the decode iterations.

use serde::Serialize;

use super::BatchingSettings;
use crate::inference::InferError;
use crate::inference::calc::StepCost;
use crate::inference::paged::{PagedCache, SeqId, watermark};

/// How the server holds the KV cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum KvLayout {
    /// Each request reserves the stream's longest request, up front.
    #[default]
    Contiguous,
    /// Blocks of `block_tokens`, taken as sequences grow.
    Paged,
}

impl KvLayout {
    pub const ALL: [Self; 2] = [Self::Contiguous, Self::Paged];

    pub fn key(self) -> &'static str {
        match self {
            Self::Contiguous => "contiguous",
            Self::Paged => "paged",
        }
    }
}

impl crate::names::Named for KvLayout {
    fn name_key(&self) -> String {
        format!("infer.kv_layout.{}", self.key())
    }
}

/// The most tokens the simulation's memory holds: a full batch of the
/// longest requests (more is cut to it, which limits a paged schedule at
/// most by its kept-free blocks and its last blocks' rounding).
const MAX_TOKENS: u64 = super::MAX_BATCH as u64 * super::MAX_LENGTH;

/// The KV memory beside the weights, and what contiguous reservation makes
/// of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct KvCapacity {
    /// Tokens of cache the memory holds (at most [`MAX_TOKENS`]).
    pub tokens: u64,
    /// The longest request the stream can draw: what reservation sets
    /// aside for each.
    pub longest: u64,
    pub block_tokens: u32,
    pub max_batch: u32,
}

impl KvCapacity {
    /// Sequences reservation runs at once.
    pub fn reserved_slots(&self) -> u64 {
        self.tokens / self.longest.max(1)
    }

    /// For the catalogs: `tokens`, `longest`, `fit` (the reserved slots),
    /// `block`, `batch`.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("tokens", self.tokens.to_string()),
            ("longest", self.longest.to_string()),
            ("fit", self.reserved_slots().to_string()),
            ("block", self.block_tokens.to_string()),
            ("batch", self.max_batch.to_string()),
        ]
    }
}

/// The KV memory beside the weights: refused when the longest request
/// could not run alone (with paging, also beside the free blocks kept
/// back).
pub fn capacity(s: &BatchingSettings, cost: &StepCost) -> Result<KvCapacity, InferError> {
    let free = s.serve.device.memory_gb * 1e9 - cost.weight_bytes();
    let tokens = if free > 0.0 && cost.kv_per_token() > 0.0 {
        (free / cost.kv_per_token()).floor().min(MAX_TOKENS as f64) as u64
    } else {
        0
    };
    let longest = s.longest();
    let block = u64::from(s.block_tokens);
    let blocks = tokens / block;
    let usable = match s.kv {
        KvLayout::Contiguous => tokens,
        KvLayout::Paged => blocks.saturating_sub(watermark(blocks)) * block,
    };
    if usable < longest {
        return Err(InferError::KvMemory {
            tokens: usable,
            longest,
        });
    }
    Ok(KvCapacity {
        tokens,
        longest,
        block_tokens: s.block_tokens,
        max_batch: s.max_batch,
    })
}

/// What the schedulers ask of the memory.
pub(super) struct KvMemory {
    layout: KvLayout,
    /// Tokens each request holds now (0: not admitted), their sum, and
    /// the requests admitted.
    held: Vec<u64>,
    used: u64,
    admitted: u64,
    /// Contiguous: the whole memory and each request's reservation.
    tokens: u64,
    reserve: u64,
    /// Paged: the cache, each request's sequence, the blocks kept free.
    cache: PagedCache,
    seqs: Vec<Option<SeqId>>,
    keep_free: u64,
    /// Σ reserved and Σ used tokens over the sampled iterations.
    reserved_sum: f64,
    used_sum: f64,
    pub preempted: u32,
}

impl KvMemory {
    /// Memory of `tokens` tokens for `requests` requests, laid out as
    /// `layout`.
    pub fn new(s: &BatchingSettings, layout: KvLayout, tokens: u64, requests: usize) -> Self {
        let blocks = match layout {
            KvLayout::Contiguous => 0,
            KvLayout::Paged => tokens / u64::from(s.block_tokens),
        };
        Self {
            layout,
            held: vec![0; requests],
            used: 0,
            admitted: 0,
            tokens,
            reserve: s.longest(),
            cache: PagedCache::new(blocks as u32, s.block_tokens),
            seqs: vec![None; requests],
            keep_free: watermark(blocks),
            reserved_sum: 0.0,
            used_sum: 0.0,
            preempted: 0,
        }
    }

    /// Admits `request` holding `held` tokens (the next one's place
    /// included), if it fits: with contiguous reservation when its
    /// reservation does; paged, when its tokens fit beside the blocks kept
    /// free for the running sequences to grow into.
    pub fn admit(&mut self, request: usize, held: u64) -> bool {
        match self.layout {
            KvLayout::Contiguous => {
                if (self.admitted + 1) * self.reserve > self.tokens {
                    return false;
                }
            }
            KvLayout::Paged => {
                let free = u64::from(self.cache.pool().free_blocks());
                if self.cache.blocks_for(held) + self.keep_free > free {
                    return false;
                }
                match self.cache.add(held) {
                    Some(id) => self.seqs[request] = Some(id),
                    None => return false,
                }
            }
        }
        self.admitted += 1;
        self.held[request] = held;
        self.used += held;
        true
    }

    /// One more token for `request`; false when paging found no free block
    /// (nothing changed: the caller preempts someone).
    pub fn grow(&mut self, request: usize) -> bool {
        if let Some(id) = self.seqs[request]
            && self.cache.append(id).is_err()
        {
            return false;
        }
        self.held[request] += 1;
        self.used += 1;
        true
    }

    /// Frees what `request` holds (it finished, or was preempted).
    pub fn release(&mut self, request: usize) {
        if let Some(id) = self.seqs[request].take() {
            self.cache.free(id);
        }
        if self.held[request] > 0 {
            self.admitted -= 1;
            self.used -= self.held[request];
            self.held[request] = 0;
        }
    }

    /// Sequences contiguous reservation holds at once.
    pub fn reserved_slots(&self) -> usize {
        (self.tokens / self.reserve.max(1)) as usize
    }

    /// Whether nothing is held: every request released what it took.
    pub fn is_idle(&self) -> bool {
        self.admitted == 0
            && self.used == 0
            && self.cache.pool().free_blocks() == self.cache.pool().blocks()
    }

    pub fn layout(&self) -> KvLayout {
        self.layout
    }

    /// Counts one iteration's reserved and used memory.
    pub fn sample(&mut self) {
        let (reserved, used) = match self.layout {
            KvLayout::Contiguous => (self.admitted * self.reserve, self.used),
            KvLayout::Paged => (self.cache.reserved_tokens(), self.cache.used_tokens()),
        };
        self.reserved_sum += reserved as f64;
        self.used_sum += used as f64;
    }

    /// The share of reserved memory that held no K/V, over the samples.
    pub fn waste(&self) -> f64 {
        if self.reserved_sum > 0.0 {
            1.0 - self.used_sum / self.reserved_sum
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::calc::{DevicePreset, ServeSettings};
    use crate::memory::transformer::Preset;

    #[test]
    fn a_request_at_the_longest_fits_a_paged_memory_of_exactly_that() {
        let s = BatchingSettings {
            kv: KvLayout::Paged,
            ..BatchingSettings::new(
                ServeSettings::preset(Preset::Llama7b, DevicePreset::H100),
                1.0,
            )
        };
        // 65 blocks of 16: one kept free, 64 × 16 = 1,024 = the longest.
        let longest = s.longest();
        assert_eq!(longest, 1024);
        let mut mem = KvMemory::new(&s, KvLayout::Paged, 65 * 16, 2);
        assert!(mem.admit(0, longest));
        assert!(!mem.admit(1, 1));
        mem.release(0);
        assert!(mem.is_idle());
        // Admitted below the longest, a request grows a block at a time,
        // into the kept-free block too (it is kept for growth), then stops.
        assert!(mem.admit(1, longest - 16));
        assert!((0..32).all(|_| mem.grow(1)));
        assert!(!mem.grow(1));
        mem.release(1);
        assert!(mem.is_idle());
    }
}
