//! The attention family: O = softmax(Q·Kᵀ/√d + mask)·V for `heads` heads
//! of `seq` × `head_dim`, as four rungs (the WGSL is in `dlsys-shaders`):
//!
//! 1. **naive** — three dispatches: S = Q·Kᵀ written to global memory
//!    (16 × 16 tiles, the mask written as −inf), a row softmax of S in place
//!    (a fully masked row gives zeros), then O = P·V (16 × 16 tiles);
//! 2. **rows** — one invocation per query row, the online softmax over K and
//!    V read straight from global memory: no S, but every row reads all of
//!    K and V;
//! 3. **tiled** — FlashAttention-2: a block of Br rows per workgroup (each
//!    invocation keeps its row of Q and of O in registers), K and V staged in
//!    workgroup memory Bc rows at a time and shared by the block, the running
//!    max and sum per row, O rescaled per tile, the log-sum-exp written out;
//! 4. **causal** — the tiled rung skipping the tiles above the diagonal.
//!
//! Every model here counts what those kernels load and store, so the
//! instrumented build must agree with it exactly. Rungs 2–4 write the
//! log-sum-exp after O in the same buffer (−inf for a fully masked row).

use serde::{Deserialize, Serialize};

use super::{LOOP_BUDGET, Traffic};

mod reference;
mod trace;

pub use reference::{Qkv, Reference, reference};
pub use trace::{RowState, TileStep, trace};

/// The head dimensions the kernels are written for (multiples of the naive
/// rung's tile; the tiled rung's registers hold one row of Q and of O).
pub const HEAD_DIMS: [u32; 3] = [32, 64, 128];
/// The longest sequence: each rung is tested at it on the software driver.
pub const MAX_SEQ: u32 = 4096;
/// Heads (batch × heads) in one problem.
pub const MAX_HEADS: u32 = 64;
/// The naive rung's tiles of S and of O: 16 × 16 invocations.
pub const NAIVE_TILE: u32 = 16;
/// Invocations of the naive softmax's workgroup (one workgroup per row).
pub const SOFTMAX_WG: u32 = 256;
/// Rows per workgroup of the rows rung (one per invocation).
pub const ROWS_WG: u32 = 64;
/// The tiled rung's block sizes: query rows per workgroup, key rows per tile.
pub const BR: [u32; 3] = [16, 32, 64];
pub const BC: [u32; 4] = [8, 16, 32, 64];
/// The seed of the Q, K and V that the page and `bench` race on.
pub const SEED: u64 = 37;

/// The sweep's sequence lengths: 128, 256, … up to [`MAX_SEQ`].
pub fn sweep_lengths() -> Vec<u32> {
    std::iter::successors(Some(128u32), |n| Some(n * 2))
        .take_while(|n| *n <= MAX_SEQ)
        .collect()
}

/// The tiles whose invocations loop longest (at d = 128): the tests run them
/// at [`MAX_SEQ`].
pub const WORST_TILES: Tiles = Tiles { br: 16, bc: 8 };

crate::catalog_error! {
    /// Why an attention problem or rung is refused.
    pub enum AttnError {
        Seq { seq: u32, max: u32 } = "attn.seq",
        HeadDim { d: u32 } = "attn.head_dim",
        Heads { heads: u32, max: u32 } = "attn.heads",
        /// One key length per head, or none.
        KvLens { given: usize, heads: u32 } = "attn.kv_lens",
        KvLen { head: usize, len: u32, seq: u32 } = "attn.kv_len",
        Tile { br: u32, bc: u32 } = "attn.tile",
        /// K's and V's tiles do not fit the workgroup memory.
        TileMemory { bc: u32, d: u32, bytes: u64, limit: u64 } = "attn.tile_memory",
        /// The naive rung's N × N scores do not fit one buffer binding.
        Scores { seq: u32, heads: u32, mib: String, limit_mib: String, largest: u32 } = "attn.scores",
        NotCausal = "attn.not_causal",
        /// An invocation would loop more often than the software driver allows.
        LoopBudget { rung: String, iterations: u64, budget: u32 } = "attn.loop_budget",
        Input { name: String, len: usize, want: usize } = "attn.input",
        NotFinite { name: String, index: usize, value: String } = "attn.not_finite",
        /// Q and K so large that a score could pass f32's range.
        ScoreRange { row: usize, bound: String } = "attn.score_range",
        /// Q, K, V or the output larger than one buffer binding.
        Buffer { what: String, mib: String, limit_mib: String } = "attn.buffer",
    }
}

/// One rung of the ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AttnRung {
    Naive,
    Rows,
    Tiled,
    Causal,
}

impl AttnRung {
    pub const ALL: [Self; 4] = [Self::Naive, Self::Rows, Self::Tiled, Self::Causal];

    /// The rung whose [`AttnRung::id`] is `id`.
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.id() == id)
    }

    pub fn id(self) -> &'static str {
        match self {
            Self::Naive => "attn/naive",
            Self::Rows => "attn/rows",
            Self::Tiled => "attn/tiled",
            Self::Causal => "attn/causal",
        }
    }

    /// Its name on the command line (`--rung`).
    pub fn short_id(self) -> &'static str {
        self.id().trim_start_matches("attn/")
    }

    /// Whether it writes the log-sum-exp after O.
    pub fn writes_lse(self) -> bool {
        self != Self::Naive
    }

    /// The rungs that run on `shape`: the causal rung only under a causal mask.
    pub fn for_shape(shape: &AttnShape) -> Vec<Self> {
        Self::ALL
            .into_iter()
            .filter(|r| *r != Self::Causal || shape.causal)
            .collect()
    }
}

impl crate::names::Named for AttnRung {
    fn name_key(&self) -> String {
        format!("attn_rung.{}", self.short_id())
    }
}

/// The tiled rung's blocks: `br` query rows per workgroup, `bc` key rows
/// per tile of K and of V.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tiles {
    pub br: u32,
    pub bc: u32,
}

impl Default for Tiles {
    fn default() -> Self {
        Self { br: 32, bc: 16 }
    }
}

impl Tiles {
    /// Br and Bc from the sizes the WGSL is written for (every rung's WGSL
    /// is built with them, so every rung needs them valid).
    pub fn check(self) -> Result<(), AttnError> {
        if BR.contains(&self.br) && BC.contains(&self.bc) {
            Ok(())
        } else {
            Err(AttnError::Tile {
                br: self.br,
                bc: self.bc,
            })
        }
    }

    /// Workgroup memory the K and V tiles take at head dimension `d`.
    pub fn workgroup_bytes(self, d: u32) -> u64 {
        2 * u64::from(self.bc) * u64::from(d) * 4
    }

    /// The largest Bc of [`BC`] whose tiles fit `limit` bytes at `d`.
    pub fn largest_bc(d: u32, limit: u64) -> Option<u32> {
        BC.into_iter()
            .rev()
            .find(|&bc| Self { br: 16, bc }.workgroup_bytes(d) <= limit)
    }
}

/// Standard attention's global-memory bytes for one head in Dao et al.'s
/// count (each GEMM reading its operands once): S = Q·Kᵀ reads Q and K and
/// writes S; the softmax reads S and writes P; P·V reads P and V and writes
/// O — 4·N·d + 4·N² elements of `elem` bytes.
pub fn standard_bytes(seq: u64, d: u64, elem: u64) -> u64 {
    elem * (4 * seq * d + 4 * seq * seq)
}

/// The most key rows whose K and V tiles (f32) fit `bytes` of workgroup
/// memory at head dimension `d`.
pub fn tile_rows_fit(d: u64, bytes: u64) -> u64 {
    bytes / (2 * 4 * d.max(1))
}

/// The factor O's accumulator and the running sum are multiplied by when a
/// tile's scores raise the running max from `m_old` to `max(m_old, tile_max)`:
/// exp(m_old − m_new) (0 from −inf: nothing was summed yet).
pub fn rescale_factor(m_old: f64, tile_max: f64) -> f64 {
    let m_new = m_old.max(tile_max);
    if m_new == m_old {
        1.0
    } else {
        (m_old - m_new).exp()
    }
}

/// What the device allows, for [`AttnShape::check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttnLimits {
    pub workgroup_bytes: u64,
    pub binding_bytes: u64,
}

impl AttnLimits {
    /// WebGPU's defaults: 16 KiB of workgroup memory, 128 MiB per binding.
    pub const WEBGPU: Self = Self {
        workgroup_bytes: 16 << 10,
        binding_bytes: 128 << 20,
    };
}

/// An attention problem: `heads` independent heads (batch × heads) of
/// `seq` queries and keys of `head_dim` values, with a causal mask or not
/// and a key-padding length per head (keys at or past it are masked).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttnShape {
    pub heads: u32,
    pub seq: u32,
    pub head_dim: u32,
    pub causal: bool,
    /// One per head; empty: every key is real.
    pub kv_len: Vec<u32>,
}

impl AttnShape {
    pub fn new(heads: u32, seq: u32, head_dim: u32, causal: bool) -> Result<Self, AttnError> {
        if seq == 0 || seq > MAX_SEQ {
            return Err(AttnError::Seq { seq, max: MAX_SEQ });
        }
        if !HEAD_DIMS.contains(&head_dim) {
            return Err(AttnError::HeadDim { d: head_dim });
        }
        if heads == 0 || heads > MAX_HEADS {
            return Err(AttnError::Heads {
                heads,
                max: MAX_HEADS,
            });
        }
        Ok(Self {
            heads,
            seq,
            head_dim,
            causal,
            kv_len: Vec::new(),
        })
    }

    /// The same problem with a key-padding length per head.
    pub fn with_kv_len(mut self, kv_len: Vec<u32>) -> Result<Self, AttnError> {
        if kv_len.len() != self.heads as usize {
            return Err(AttnError::KvLens {
                given: kv_len.len(),
                heads: self.heads,
            });
        }
        if let Some((head, &len)) = kv_len.iter().enumerate().find(|(_, l)| **l > self.seq) {
            return Err(AttnError::KvLen {
                head,
                len,
                seq: self.seq,
            });
        }
        self.kv_len = kv_len;
        Ok(self)
    }

    /// Real keys of head `h`.
    pub fn key_len(&self, h: usize) -> u32 {
        self.kv_len.get(h).copied().unwrap_or(self.seq)
    }

    /// Keys query row `i` of head `h` attends to (all below this index).
    pub fn keys(&self, h: usize, i: u32) -> u32 {
        let len = self.key_len(h);
        if self.causal { len.min(i + 1) } else { len }
    }

    /// Values in each of Q, K, V and O.
    pub fn values(&self) -> u64 {
        u64::from(self.heads) * u64::from(self.seq) * u64::from(self.head_dim)
    }

    /// Values the rung's output buffer holds: O, then one log-sum-exp per
    /// row where it writes one.
    pub fn output_values(&self, rung: AttnRung) -> u64 {
        let lse = if rung.writes_lse() {
            u64::from(self.heads) * u64::from(self.seq)
        } else {
            0
        };
        self.values() + lse
    }

    /// Whether `rung` with `tiles` runs on this problem within `limits`
    /// (and within the loop budget every device is held to).
    pub fn check(&self, rung: AttnRung, tiles: Tiles, limits: AttnLimits) -> Result<(), AttnError> {
        tiles.check()?;
        let mib = |b: u64| format!("{:.1}", b as f64 / f64::from(1 << 20));
        for (what, bytes) in [
            ("Q, K, V", 4 * self.values()),
            ("O", 4 * self.output_values(rung)),
        ] {
            if bytes > limits.binding_bytes {
                return Err(AttnError::Buffer {
                    what: what.to_owned(),
                    mib: mib(bytes),
                    limit_mib: mib(limits.binding_bytes),
                });
            }
        }
        self.check_rung(rung, tiles, limits)?;
        let iterations = self.loop_iterations(rung, tiles);
        if iterations > u64::from(LOOP_BUDGET) {
            return Err(AttnError::LoopBudget {
                rung: rung.id().to_owned(),
                iterations,
                budget: LOOP_BUDGET,
            });
        }
        Ok(())
    }

    /// The most loop iterations one invocation runs, every iteration and
    /// every loop exit counted (the loops over d are written out in the
    /// WGSL and cost none): the naive rung's longest dispatch (P·V's walk
    /// over the keys, 16 at a time); a row's walk over its keys; the tiled
    /// rungs' tiles, each a staging loop of ⌈Bc·d/Br⌉ and two loops of Bc.
    pub fn loop_iterations(&self, rung: AttnRung, tiles: Tiles) -> u64 {
        let (n, d) = (u64::from(self.seq), u64::from(self.head_dim));
        let t = u64::from(NAIVE_TILE);
        match rung {
            AttnRung::Naive => {
                let scores = (d / t) * (t + 2) + 1;
                let softmax = 2 * (n.div_ceil(u64::from(SOFTMAX_WG)) + 1) + 9;
                let pv = n.div_ceil(t) * (t + 2) + 1;
                scores.max(softmax).max(pv)
            }
            AttnRung::Rows => n + 1,
            AttnRung::Tiled | AttnRung::Causal => {
                let (br, bc) = (u64::from(tiles.br), u64::from(tiles.bc));
                let per_tile = (bc * d).div_ceil(br) + 1 + 2 * (bc + 1);
                n.div_ceil(bc) * (per_tile + 1) + 1
            }
        }
    }

    fn check_rung(
        &self,
        rung: AttnRung,
        tiles: Tiles,
        limits: AttnLimits,
    ) -> Result<(), AttnError> {
        match rung {
            AttnRung::Naive => {
                let bytes = self.scores_bytes();
                if bytes > limits.binding_bytes {
                    let per_seq = limits.binding_bytes / 4 / u64::from(self.heads);
                    let mib = |b: u64| format!("{:.1}", b as f64 / f64::from(1 << 20));
                    return Err(AttnError::Scores {
                        seq: self.seq,
                        heads: self.heads,
                        mib: mib(bytes),
                        limit_mib: mib(limits.binding_bytes),
                        largest: (per_seq as f64).sqrt().floor() as u32,
                    });
                }
            }
            AttnRung::Rows => {}
            AttnRung::Tiled | AttnRung::Causal => {
                if rung == AttnRung::Causal && !self.causal {
                    return Err(AttnError::NotCausal);
                }
                let bytes = tiles.workgroup_bytes(self.head_dim);
                if bytes > limits.workgroup_bytes {
                    return Err(AttnError::TileMemory {
                        bc: tiles.bc,
                        d: self.head_dim,
                        bytes,
                        limit: limits.workgroup_bytes,
                    });
                }
            }
        }
        Ok(())
    }

    /// The naive rung's score matrix: heads × N × N f32.
    pub fn scores_bytes(&self) -> u64 {
        4 * u64::from(self.heads) * u64::from(self.seq) * u64::from(self.seq)
    }

    /// Global memory a rung needs beyond Q, K, V and O: the score matrix
    /// for the naive rung, the log-sum-exp (one f32 per row) otherwise.
    pub fn extra_bytes(&self, rung: AttnRung) -> u64 {
        match rung {
            AttnRung::Naive => self.scores_bytes(),
            _ => 4 * u64::from(self.heads) * u64::from(self.seq),
        }
    }

    /// The key rows a tiled block loads (its last key, exclusive): every
    /// real key, or with `skip` only those up to the block's last row.
    fn block_keys(&self, h: usize, rows_end: u32, skip: bool) -> u32 {
        let len = self.key_len(h);
        if skip && self.causal {
            len.min(rows_end)
        } else {
            len
        }
    }

    /// Bytes each rung loads and stores, counted as its WGSL does (f32
    /// words; the uniform and the key lengths are not counted).
    pub fn traffic(&self, rung: AttnRung, tiles: Tiles) -> Traffic {
        let (n, d) = (u64::from(self.seq), u64::from(self.head_dim));
        let heads = u64::from(self.heads);
        let (read, written, dispatches) = match rung {
            AttnRung::Naive => {
                let t = n.div_ceil(u64::from(NAIVE_TILE));
                // Scores: each tile pair loads its rows of Q and of K;
                // softmax: S read twice, P written; P·V: each tile of O
                // loads its rows of P and a 16-column strip of V.
                let scores = 2 * n * d * t;
                let softmax = 2 * n * n;
                let pv = n * n * d / u64::from(NAIVE_TILE) + n * d * t;
                (
                    heads * (scores + softmax + pv),
                    heads * (2 * n * n + n * d),
                    3,
                )
            }
            AttnRung::Rows => (heads * n * d + 2 * d * self.pairs(), heads * n * (d + 1), 1),
            AttnRung::Tiled | AttnRung::Causal => {
                let skip = rung == AttnRung::Causal;
                let br = u64::from(tiles.br);
                let mut kv = 0;
                for h in 0..self.heads as usize {
                    for b in 0..n.div_ceil(br) {
                        let end = ((b + 1) * br).min(n) as u32;
                        kv += u64::from(self.block_keys(h, end, skip));
                    }
                }
                (heads * n * d + 2 * d * kv, heads * n * (d + 1), 1)
            }
        };
        Traffic {
            bytes_read: 4 * read,
            bytes_written: 4 * written,
            input_passes: 1,
            dispatches,
        }
    }

    /// Multiply-adds ×2 for Q·Kᵀ and P·V: every pair for the naive rung
    /// (it computes the masked scores too), the unmasked pairs otherwise.
    pub fn flops(&self, rung: AttnRung) -> f64 {
        let d = f64::from(self.head_dim);
        let pairs: u64 = match rung {
            AttnRung::Naive => u64::from(self.heads) * u64::from(self.seq) * u64::from(self.seq),
            _ => self.pairs(),
        };
        4.0 * d * pairs as f64
    }

    /// The (query, key) pairs the mask leaves, over every head.
    fn pairs(&self) -> u64 {
        (0..self.heads as usize)
            .map(|h| {
                (0..self.seq)
                    .map(|i| u64::from(self.keys(h, i)))
                    .sum::<u64>()
            })
            .sum()
    }

    /// (tiles skipped, tiles of the plain tiled rung): the work the causal
    /// rung saves (none for tiles [`Tiles::check`] refuses).
    pub fn tiles_skipped(&self, tiles: Tiles) -> (u64, u64) {
        if tiles.check().is_err() {
            return (0, 0);
        }
        let (br, bc) = (tiles.br, tiles.bc);
        let (mut skipped, mut total) = (0, 0);
        for h in 0..self.heads as usize {
            for b in 0..self.seq.div_ceil(br) {
                let end = ((b + 1) * br).min(self.seq);
                let all = u64::from(self.block_keys(h, end, false).div_ceil(bc));
                let kept = u64::from(self.block_keys(h, end, true).div_ceil(bc));
                total += all;
                skipped += all - kept;
            }
        }
        (skipped, total)
    }
}

#[cfg(test)]
mod tests;
