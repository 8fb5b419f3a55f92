//! A seeded stream of requests through contiguous reservation and through
//! the paged cache: every decode iteration admits waiting requests while
//! memory allows, then every running request adds a token; memory reserved
//! and used, requests running, preemptions and steps to finish, measured.

use serde::Serialize;

use super::{PagedCache, SeqId};
use crate::inference::InferError;

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
            seed: 1,
        }
    }
}

/// Most tokens the stream simulation's memory holds.
pub const MAX_MEMORY_TOKENS: u64 = 1 << 22;

/// Most requests in a stream.
pub const MAX_REQUESTS: u32 = 10_000;

/// The blocks the paged scheduler keeps free when it admits: 1 % of the
/// pool, at least one (vLLM's watermark).
pub fn watermark(blocks: u64) -> u64 {
    (blocks / 100).max(1)
}

impl StreamSettings {
    pub fn validate(&self) -> Result<(), InferError> {
        crate::inference::check_lengths(self.prompt, self.output, self.reserve)?;
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
        // The paged pool holds whole blocks and keeps its watermark free:
        // the longest request must still fit alone, or it would preempt
        // itself for ever.
        let block = u64::from(self.block_tokens);
        let blocks = self.memory_tokens / block;
        let usable = blocks.saturating_sub(watermark(blocks)) * block;
        if usable < self.reserve {
            return Err(InferError::BlockMemory {
                usable,
                reserve: self.reserve,
            });
        }
        if !(1..=MAX_REQUESTS).contains(&self.requests) {
            return Err(InferError::Stream {
                requests: self.requests,
                max: MAX_REQUESTS,
            });
        }
        Ok(())
    }

    /// Decode iterations simulated at most: twice what contiguous
    /// reservation needs at worst (one slot after another, each request
    /// running its longest output). Every request finishes well within it.
    pub fn step_limit(&self) -> u64 {
        let slots = (self.memory_tokens / self.reserve.max(1)).max(1);
        (u64::from(self.requests).div_ceil(slots) + 1) * (self.output.1 + 1) * 2
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
    /// Requests in the stream, and those that finished.
    pub requests: u32,
    pub finished: u32,
    /// Output tokens produced (a preempted request keeps its own).
    pub generated: u64,
    pub steps: u32,
    /// Requests pushed back to the queue when a block could not be had:
    /// their cache is freed and, on readmission, recomputed from the prompt
    /// and the tokens they had produced (vLLM's recomputation).
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

    /// Whether every request finished.
    pub fn complete(&self) -> bool {
        self.finished == self.requests
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

impl StreamReport {
    /// Requests running at once with paging, per request with contiguous
    /// reservation (means over each run).
    pub fn concurrency_ratio(&self) -> f64 {
        self.paged.mean_running() / self.contiguous.mean_running().max(1e-9)
    }
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
    let mut run = empty_run(requests.len());
    let mut next = 0;
    // (tokens so far, tokens at the end)
    let mut running: Vec<(u64, u64)> = Vec::new();
    for _ in 0..s.step_limit() {
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
    let keep_free = watermark(u64::from(blocks));
    let mut run = empty_run(requests.len());
    let mut queue: std::collections::VecDeque<usize> = (0..requests.len()).collect();
    // Output tokens each request has produced (kept across a preemption).
    let mut produced = vec![0u64; requests.len()];
    // (request, sequence)
    let mut running: Vec<(usize, SeqId)> = Vec::new();
    for _ in 0..s.step_limit() {
        // Admit while the request's tokens so far and its next one fit,
        // keeping the watermark free for the running ones to grow into.
        while let Some(&r) = queue.front() {
            let held = requests[r].0 + produced[r];
            let free = u64::from(cache.pool().free_blocks());
            if cache.blocks_for(held + 1) + keep_free > free {
                break;
            }
            let Some(id) = cache.add(held) else { break };
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
                let held = cache.sequence(vid).map_or(0, |seq| seq.tokens);
                produced[victim] = held.saturating_sub(requests[victim].0);
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

fn empty_run(requests: usize) -> SchemeRun {
    SchemeRun {
        reserved: Vec::new(),
        used: Vec::new(),
        running: Vec::new(),
        requests: requests as u32,
        finished: 0,
        generated: 0,
        steps: 0,
        preempted: 0,
    }
}
