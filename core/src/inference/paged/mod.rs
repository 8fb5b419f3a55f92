//! The KV cache, paged (Kwon et al. 2023, "Efficient Memory Management for
//! Large Language Model Serving with PagedAttention"): the cache is cut into
//! blocks of a fixed number of tokens, each sequence has a block table, a
//! block is allocated only when the sequence's last one is full, and
//! parallel samples of one prompt share its blocks, with reference counts
//! and a copy on the first write into a shared block.
//!
//! This is the allocator's bookkeeping, run for real on block ids; the
//! values in the blocks are not modelled (the engine's KV cache holds them).
//! [`stream`] runs a seeded stream of requests through it and through
//! contiguous reservation.

mod stream;

pub use stream::{
    MAX_MEMORY_TOKENS, SchemeRun, StreamReport, StreamSettings, blocks_and_waste, run_stream,
    watermark,
};

use std::collections::BTreeMap;

use serde::Serialize;

/// A block's number in the pool.
pub type BlockId = u32;

/// A sequence's number.
pub type SeqId = u32;

/// The pool: `blocks` blocks of `block_tokens` tokens each.
#[derive(Clone, Debug)]
pub struct BlockPool {
    block_tokens: u32,
    /// Free blocks, taken from the end.
    free: Vec<BlockId>,
    /// References to each block (0: free).
    refs: Vec<u32>,
    /// Blocks held by more than one table.
    shared: u32,
}

impl BlockPool {
    pub fn new(blocks: u32, block_tokens: u32) -> Self {
        Self {
            block_tokens: block_tokens.max(1),
            free: (0..blocks).rev().collect(),
            refs: vec![0; blocks as usize],
            shared: 0,
        }
    }

    pub fn block_tokens(&self) -> u32 {
        self.block_tokens
    }

    pub fn blocks(&self) -> u32 {
        self.refs.len() as u32
    }

    pub fn free_blocks(&self) -> u32 {
        self.free.len() as u32
    }

    pub fn refs(&self, block: BlockId) -> u32 {
        self.refs.get(block as usize).copied().unwrap_or(0)
    }

    fn take(&mut self) -> Option<BlockId> {
        let block = self.free.pop()?;
        self.refs[block as usize] = 1;
        Some(block)
    }

    fn retain(&mut self, block: BlockId) {
        let r = &mut self.refs[block as usize];
        *r += 1;
        if *r == 2 {
            self.shared += 1;
        }
    }

    fn release(&mut self, block: BlockId) {
        let r = &mut self.refs[block as usize];
        *r -= 1;
        match *r {
            0 => self.free.push(block),
            1 => self.shared -= 1,
            _ => {}
        }
    }
}

/// One sequence: its block table and its length in tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Sequence {
    pub table: Vec<BlockId>,
    pub tokens: u64,
}

/// What an append did to the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Appended {
    /// The token went into the last block.
    InPlace,
    /// The last block was full: a new one was taken.
    NewBlock,
    /// The last block was shared: it was copied first (copy-on-write).
    Copied,
}

/// Sequences and their block tables over one pool.
#[derive(Clone, Debug)]
pub struct PagedCache {
    pool: BlockPool,
    seqs: BTreeMap<SeqId, Sequence>,
    next: SeqId,
    /// Blocks copied on write so far.
    pub copies: u64,
}

/// The longest sequence [`one_sequence`] lays out (a pool of up to a
/// million blocks).
pub const MAX_LAID_OUT: u64 = 1 << 20;

/// How a paged cache holds one sequence: a prompt of `prompt` tokens
/// added, then `generated` tokens appended one by one, through the
/// allocator itself. Each block of its table, in order, with the tokens it
/// holds. Empty for a sequence past [`MAX_LAID_OUT`] tokens.
pub fn one_sequence(prompt: u64, generated: u64, block_tokens: u32) -> Vec<(BlockId, u32)> {
    let block = u64::from(block_tokens.max(1));
    let Some(total) = prompt.checked_add(generated).filter(|t| *t <= MAX_LAID_OUT) else {
        return Vec::new();
    };
    let blocks = total.div_ceil(block) as u32;
    let mut cache = PagedCache::new(blocks, block_tokens);
    let Some(id) = cache.add(prompt) else {
        return Vec::new();
    };
    for _ in 0..generated {
        if cache.append(id).is_err() {
            break;
        }
    }
    let Some(seq) = cache.sequence(id) else {
        return Vec::new();
    };
    seq.table
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let held = seq.tokens.saturating_sub(i as u64 * block).min(block);
            (b, held as u32)
        })
        .collect()
}

impl PagedCache {
    pub fn new(blocks: u32, block_tokens: u32) -> Self {
        Self {
            pool: BlockPool::new(blocks, block_tokens),
            seqs: BTreeMap::new(),
            next: 0,
            copies: 0,
        }
    }

    pub fn pool(&self) -> &BlockPool {
        &self.pool
    }

    pub fn sequence(&self, id: SeqId) -> Option<&Sequence> {
        self.seqs.get(&id)
    }

    pub fn sequences(&self) -> impl Iterator<Item = (SeqId, &Sequence)> {
        self.seqs.iter().map(|(id, s)| (*id, s))
    }

    /// Blocks a sequence of `tokens` tokens needs.
    pub fn blocks_for(&self, tokens: u64) -> u64 {
        tokens.div_ceil(u64::from(self.pool.block_tokens))
    }

    /// A new sequence holding a prompt of `tokens` tokens, or `None` (and
    /// nothing taken) when the pool has too few free blocks.
    pub fn add(&mut self, tokens: u64) -> Option<SeqId> {
        let need = self.blocks_for(tokens);
        if need > u64::from(self.pool.free_blocks()) {
            return None;
        }
        let table = (0..need).filter_map(|_| self.pool.take()).collect();
        let id = self.next;
        self.next += 1;
        self.seqs.insert(id, Sequence { table, tokens });
        Some(id)
    }

    /// A parallel sample of `parent`: the same blocks, shared.
    pub fn fork(&mut self, parent: SeqId) -> Option<SeqId> {
        let seq = self.seqs.get(&parent)?.clone();
        for &b in &seq.table {
            self.pool.retain(b);
        }
        let id = self.next;
        self.next += 1;
        self.seqs.insert(id, seq);
        Some(id)
    }

    /// One more token for `id`. `Err(())` when a block is needed and none is
    /// free (the caller preempts someone); nothing changes then.
    #[allow(clippy::result_unit_err)]
    pub fn append(&mut self, id: SeqId) -> Result<Appended, ()> {
        let block_tokens = u64::from(self.pool.block_tokens);
        let Some(seq) = self.seqs.get(&id) else {
            return Err(());
        };
        let full = seq.tokens % block_tokens == 0;
        let last = seq.table.last().copied();
        let what = match last {
            None => Appended::NewBlock,
            Some(_) if full => Appended::NewBlock,
            Some(b) if self.pool.refs(b) > 1 => Appended::Copied,
            Some(_) => Appended::InPlace,
        };
        match what {
            Appended::InPlace => {}
            Appended::NewBlock | Appended::Copied => {
                let Some(new) = self.pool.take() else {
                    return Err(());
                };
                let seq = self.seqs.get_mut(&id).ok_or(())?;
                if what == Appended::Copied {
                    // The copy replaces the shared block in this table only.
                    if let Some(slot) = seq.table.last_mut() {
                        let old = std::mem::replace(slot, new);
                        self.pool.release(old);
                    }
                    self.copies += 1;
                } else {
                    seq.table.push(new);
                }
            }
        }
        if let Some(seq) = self.seqs.get_mut(&id) {
            seq.tokens += 1;
        }
        Ok(what)
    }

    /// Frees `id`'s blocks (a shared one stays for its other holders).
    pub fn free(&mut self, id: SeqId) {
        if let Some(seq) = self.seqs.remove(&id) {
            for b in seq.table {
                self.pool.release(b);
            }
        }
    }

    /// Tokens held in all sequences (a shared prompt counted once per block).
    /// Without shared blocks (the stream simulation's case) it is the sum
    /// of the lengths, so a step costs one pass over the sequences.
    pub fn used_tokens(&self) -> u64 {
        if self.pool.shared == 0 {
            return self.seqs.values().map(|s| s.tokens).sum();
        }
        self.used_block_by_block()
    }

    /// Tokens counted block by block, each shared block once.
    fn used_block_by_block(&self) -> u64 {
        let mut seen = std::collections::BTreeSet::new();
        let block_tokens = u64::from(self.pool.block_tokens);
        let mut used = 0;
        for seq in self.seqs.values() {
            for (i, &b) in seq.table.iter().enumerate() {
                if seen.insert(b) {
                    let start = i as u64 * block_tokens;
                    used += seq.tokens.saturating_sub(start).min(block_tokens);
                }
            }
        }
        used
    }

    /// Blocks in use, in tokens.
    pub fn reserved_tokens(&self) -> u64 {
        u64::from(self.pool.blocks() - self.pool.free_blocks()) * u64::from(self.pool.block_tokens)
    }

    /// Checks the bookkeeping: every block's count equals the tables that
    /// hold it, a free block is held by none and listed once, and each
    /// table holds exactly the blocks its length needs.
    #[cfg(test)]
    pub(crate) fn check(&self) -> Result<(), String> {
        let mut held = vec![0u32; self.pool.blocks() as usize];
        for (id, seq) in &self.seqs {
            if seq.table.len() as u64 != self.blocks_for(seq.tokens) {
                return Err(format!(
                    "sequence {id}: {} blocks for {} tokens",
                    seq.table.len(),
                    seq.tokens
                ));
            }
            for &b in &seq.table {
                held[b as usize] += 1;
            }
        }
        let mut free = vec![false; held.len()];
        for &b in &self.pool.free {
            if std::mem::replace(&mut free[b as usize], true) {
                return Err(format!("block {b} is free twice"));
            }
        }
        // The one-pass count (no shared block) must agree with the block count.
        let used = self.used_block_by_block();
        if used != self.used_tokens() {
            return Err(format!(
                "{} tokens counted as used, {used} are",
                self.used_tokens()
            ));
        }
        let shared = held.iter().filter(|&&h| h > 1).count() as u32;
        if shared != self.pool.shared {
            return Err(format!(
                "{} blocks counted as shared, {shared} are",
                self.pool.shared
            ));
        }
        for (b, (&h, &r)) in held.iter().zip(&self.pool.refs).enumerate() {
            if h != r {
                return Err(format!(
                    "block {b}: {r} references counted, {h} tables hold it"
                ));
            }
            if (h == 0) != free[b] {
                return Err(format!("block {b}: held by {h} tables, free: {}", free[b]));
            }
        }
        Ok(())
    }
}
