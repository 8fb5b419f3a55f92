//! The KV cache, paged (Kwon et al. 2023, "Efficient Memory Management for
//! Large Language Model Serving with PagedAttention"): the cache is cut into
//! blocks of a fixed number of tokens, each sequence has a block table, a
//! block is allocated only when the sequence's last one is full, and
//! parallel samples of one prompt share its blocks, with reference counts
//! and a copy on the first write into a shared block.
//!
//! This is the allocator's bookkeeping, run for real on block ids; the
//! values in the blocks are not modelled (the engine's KV cache holds them).

use std::collections::BTreeMap;

use serde::Serialize;

use super::InferError;

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
        // Tokens counted block by block, each shared block once.
        let mut seen = std::collections::BTreeSet::new();
        let block_tokens = u64::from(self.pool.block_tokens);
        let mut used = 0;
        for seq in self.seqs.values() {
            for (i, &b) in seq.table.iter().enumerate() {
                if seen.insert(b) {
                    used += seq.tokens.saturating_sub(i as u64 * block_tokens).min(block_tokens);
                }
            }
        }
        if used != self.used_tokens() {
            return Err(format!("{} tokens counted as used, {used} are", self.used_tokens()));
        }
        let shared = held.iter().filter(|&&h| h > 1).count() as u32;
        if shared != self.pool.shared {
            return Err(format!("{} blocks counted as shared, {shared} are", self.pool.shared));
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

/// Blocks of `block_tokens` that sequences of `lengths` tokens need, and
/// the tokens those blocks leave empty (only each sequence's last block
/// can be partly empty).
pub fn blocks_and_waste(lengths: &[u64], block_tokens: u64) -> (u64, u64) {
    let block = block_tokens.max(1);
    let blocks: u64 = lengths.iter().map(|l| l.div_ceil(block)).sum();
    (blocks, blocks * block - lengths.iter().sum::<u64>())
}

/// How requests are drawn and the cache is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct StreamSettings {
    /// KV memory, in tokens.
    pub memory_tokens: u64,
    pub block_tokens: u32,
    /// Prompt lengths, uniform in [lo, hi].
    pub prompt: (u64, u64),
    /// Output lengths, uniform in [lo, hi].
    pub output: (u64, u64),
    /// What contiguous reservation sets aside per request: the model's
    /// context (existing systems before vLLM reserved the maximum).
    pub reserve: u64,
    /// Requests in the stream (all waiting from the start).
    pub requests: u32,
    /// Decode iterations simulated at most.
    pub steps: u32,
    pub seed: u64,
}

impl Default for StreamSettings {
    fn default() -> Self {
        Self {
            memory_tokens: 16_384,
            block_tokens: 16,
            prompt: (16, 512),
            output: (16, 512),
            reserve: 2048,
            requests: 200,
            steps: 10_000,
            seed: 1,
        }
    }
}

/// Most tokens the stream simulation's memory holds.
pub const MAX_MEMORY_TOKENS: u64 = 1 << 22;

impl StreamSettings {
    pub fn validate(&self) -> Result<(), InferError> {
        let bad = |(lo, hi): (u64, u64)| lo == 0 || lo > hi || hi > self.reserve;
        let (prompt, output, reserve) = (self.prompt, self.output, self.reserve);
        if bad(prompt) {
            return Err(InferError::PromptLengths {
                lo: prompt.0,
                hi: prompt.1,
                reserve,
            });
        }
        if bad(output) {
            return Err(InferError::OutputLengths {
                lo: output.0,
                hi: output.1,
                reserve,
            });
        }
        if prompt.1 + output.1 > reserve {
            return Err(InferError::Longest {
                longest: prompt.1 + output.1,
                reserve,
            });
        }
        if !(1..=256).contains(&self.block_tokens) {
            return Err(InferError::BlockTokens {
                value: self.block_tokens,
            });
        }
        if self.memory_tokens < self.reserve || self.memory_tokens > MAX_MEMORY_TOKENS {
            return Err(InferError::Memory {
                tokens: self.memory_tokens,
                reserve: self.reserve,
                max: MAX_MEMORY_TOKENS,
            });
        }
        if !(1..=10_000).contains(&self.requests) || !(1..=100_000).contains(&self.steps) {
            return Err(InferError::Stream {
                requests: self.requests,
                steps: self.steps,
            });
        }
        Ok(())
    }

    /// The stream: (prompt, output) per request, seeded.
    pub fn draw(&self) -> Vec<(u64, u64)> {
        use rand::{RngExt as _, SeedableRng as _};
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
        (0..self.requests)
            .map(|_| {
                let p = rng.random_range(self.prompt.0..=self.prompt.1);
                let o = rng.random_range(self.output.0..=self.output.1);
                (p, o)
            })
            .collect()
    }
}

/// One scheme's run: memory over time and what it achieved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SchemeRun {
    /// Per decode iteration: tokens reserved, tokens holding K/V, requests running.
    pub reserved: Vec<u64>,
    pub used: Vec<u64>,
    pub running: Vec<u32>,
    pub finished: u32,
    pub generated: u64,
    pub steps: u32,
    /// Requests pushed back to the queue when a block could not be had
    /// (their cache freed; they start again, as vLLM's recomputation does).
    pub preempted: u32,
}

impl SchemeRun {
    /// The share of reserved memory that held no K/V, averaged over the
    /// iterations that held anything.
    pub fn waste(&self) -> f64 {
        let (r, u) = self
            .reserved
            .iter()
            .zip(&self.used)
            .filter(|(r, _)| **r > 0)
            .fold((0.0, 0.0), |(r, u), (a, b)| (r + *a as f64, u + *b as f64));
        if r > 0.0 { 1.0 - u / r } else { 0.0 }
    }

    pub fn mean_running(&self) -> f64 {
        if self.running.is_empty() {
            return 0.0;
        }
        self.running.iter().map(|r| f64::from(*r)).sum::<f64>() / self.running.len() as f64
    }

    pub fn peak_running(&self) -> u32 {
        self.running.iter().copied().max().unwrap_or(0)
    }
}

/// Contiguous reservation and paging, side by side on the same stream.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StreamReport {
    pub contiguous: SchemeRun,
    pub paged: SchemeRun,
}

/// Runs the stream through both schemes: each decode iteration admits
/// waiting requests first come first served while memory allows (their
/// prompt's K/V written in that iteration), then every running request
/// adds one token; a request that has produced its output leaves.
pub fn run_stream(s: &StreamSettings) -> Result<StreamReport, InferError> {
    s.validate()?;
    let requests = s.draw();
    Ok(StreamReport {
        contiguous: contiguous(s, &requests),
        paged: paged(s, &requests),
    })
}

fn contiguous(s: &StreamSettings, requests: &[(u64, u64)]) -> SchemeRun {
    let slots = s.memory_tokens / s.reserve;
    let mut run = empty_run();
    let mut next = 0;
    // (tokens so far, tokens at the end)
    let mut running: Vec<(u64, u64)> = Vec::new();
    for _ in 0..s.steps {
        while next < requests.len() && (running.len() as u64) < slots {
            let (p, o) = requests[next];
            running.push((p, p + o));
            next += 1;
        }
        if running.is_empty() {
            break;
        }
        for r in &mut running {
            r.0 += 1;
        }
        run.generated += running.len() as u64;
        run.reserved.push(running.len() as u64 * s.reserve);
        run.used.push(running.iter().map(|r| r.0).sum());
        run.running.push(running.len() as u32);
        run.steps += 1;
        let before = running.len();
        running.retain(|r| r.0 < r.1);
        run.finished += (before - running.len()) as u32;
    }
    run
}

fn paged(s: &StreamSettings, requests: &[(u64, u64)]) -> SchemeRun {
    let blocks = (s.memory_tokens / u64::from(s.block_tokens)) as u32;
    let mut cache = PagedCache::new(blocks, s.block_tokens);
    let watermark = u64::from(blocks / 100).max(1);
    let mut run = empty_run();
    let mut queue: std::collections::VecDeque<usize> = (0..requests.len()).collect();
    // (request, sequence)
    let mut running: Vec<(usize, SeqId)> = Vec::new();
    for _ in 0..s.steps {
        // Admit while the prompt and its first new token fit, keeping a
        // watermark of 1 % of the blocks free for the running ones to grow
        // into (as vLLM's scheduler does).
        while let Some(&r) = queue.front() {
            let (p, _) = requests[r];
            let free = u64::from(cache.pool().free_blocks());
            if cache.blocks_for(p + 1) + watermark > free {
                break;
            }
            let Some(id) = cache.add(p) else { break };
            queue.pop_front();
            running.push((r, id));
        }
        if running.is_empty() {
            break;
        }
        // One token each; a request that cannot get a block preempts the
        // latest admitted one (possibly itself) and tries again.
        let mut i = 0;
        while i < running.len() {
            let id = running[i].1;
            if cache.append(id).is_ok() {
                i += 1;
                continue;
            }
            if let Some((victim, vid)) = running.pop() {
                cache.free(vid);
                queue.push_front(victim);
                run.preempted += 1;
            }
        }
        run.generated += running.len() as u64;
        run.reserved.push(cache.reserved_tokens());
        run.used.push(cache.used_tokens());
        run.running.push(running.len() as u32);
        run.steps += 1;
        let before = running.len();
        running.retain(|&(r, id)| {
            let (p, o) = requests[r];
            let done = cache.sequence(id).is_some_and(|seq| seq.tokens >= p + o);
            if done {
                cache.free(id);
            }
            !done
        });
        run.finished += (before - running.len()) as u32;
    }
    run
}

fn empty_run() -> SchemeRun {
    SchemeRun {
        reserved: Vec::new(),
        used: Vec::new(),
        running: Vec::new(),
        finished: 0,
        generated: 0,
        steps: 0,
        preempted: 0,
    }
}
