//! The three schedulers on the virtual clock, each admitting what the KV
//! memory ([`KvMemory`]) lets in: static batching, continuous batching, and
//! continuous batching with chunked prefill (the module above says how
//! each runs). A sequence the paged memory preempts goes back to the front
//! of the queue with the tokens it had produced; on readmission its prompt
//! and those tokens are prefilled again (recomputed), and that pass makes
//! its next token.

use std::collections::VecDeque;

use super::memory::KvMemory;
use super::{BatchingSettings, Request, Served, Tally, padding_slots};
use crate::inference::calc::StepCost;

/// A running sequence: (request, tokens produced, tokens in context).
type Running = (usize, u64, u64);

pub(super) fn static_batching(
    s: &BatchingSettings,
    cost: &StepCost,
    requests: &[Request],
    mem: &mut KvMemory,
) -> Tally {
    let mut tally = Tally::new(requests.len());
    // A batch no larger than the memory's reservations hold.
    let max_batch = (s.max_batch as usize).min(mem.reserved_slots()).max(1);
    let (mut t, mut next) = (0.0_f64, 0);
    while next < requests.len() {
        // Wait for a full batch, the oldest's deadline or the last arrival.
        let oldest = requests[next].arrival;
        let full = requests.get(next + max_batch - 1).map(|r| r.arrival);
        let start = t.max(oldest).max(match full {
            Some(at) => at.min(oldest + s.max_wait_s),
            None => (oldest + s.max_wait_s).min(requests[requests.len() - 1].arrival),
        });
        let arrived = requests[next..]
            .iter()
            .take(max_batch)
            .take_while(|r| r.arrival <= start)
            .count()
            .max(1);
        // As many as the memory holds (the first always fits alone).
        let admitted = (next..next + arrived)
            .take_while(|&i| mem.admit(i, requests[i].prompt + 1))
            .count()
            .max(1);
        let batch = &requests[next..next + admitted];
        let first_token = start + prefill(cost, batch.iter().map(|r| r.prompt));
        t = first_token;
        tally.iterations += 1;
        let longest = batch.iter().map(|r| r.output).max().unwrap_or(1);
        let mut context: f64 = batch.iter().map(|r| (r.prompt + 1) as f64).sum();
        let b = batch.len() as f64;
        // Every slot decodes (and caches) until the longest output ends.
        for _ in 1..longest {
            for i in next..next + admitted {
                mem.grow(i);
            }
            mem.sample();
            t += cost.decode(b, context).seconds;
            context += b;
        }
        let decode_steps = longest - 1;
        tally.iterations += decode_steps;
        tally.decode_steps += decode_steps;
        tally.slot_steps += b * decode_steps as f64;
        let outputs: Vec<u64> = batch.iter().map(|r| r.output).collect();
        tally.padding += padding_slots(&outputs) as f64;
        for i in next..next + admitted {
            tally.served[i] = Some(Served {
                first_token,
                done: t,
            });
            mem.release(i);
        }
        next += admitted;
    }
    tally.kv(mem);
    tally
}

/// The waiting requests: those preempted (request, tokens produced), which
/// go first, then the stream's in order of arrival.
struct Queue<'a> {
    requests: &'a [Request],
    preempted: VecDeque<(usize, u64)>,
    next: usize,
}

impl<'a> Queue<'a> {
    fn new(requests: &'a [Request]) -> Self {
        Self {
            requests,
            preempted: VecDeque::new(),
            next: 0,
        }
    }

    fn is_empty(&self) -> bool {
        self.preempted.is_empty() && self.next >= self.requests.len()
    }

    /// The next request waiting at `t`, and what it had produced.
    fn front(&self, t: f64) -> Option<(usize, u64)> {
        self.preempted.front().copied().or_else(|| {
            let r = self.requests.get(self.next)?;
            (r.arrival <= t).then_some((self.next, 0))
        })
    }

    fn pop(&mut self) {
        if self.preempted.pop_front().is_none() {
            self.next += 1;
        }
    }

    /// When the server, idle, next has work.
    fn next_arrival(&self) -> Option<f64> {
        if self.preempted.is_empty() {
            self.requests.get(self.next).map(|r| r.arrival)
        } else {
            None
        }
    }

    /// Admits the waiting requests, in order, while `room` says there is
    /// a slot and the memory holds their tokens so far and the next: each
    /// (request, tokens produced).
    fn admit(&mut self, t: f64, mut room: usize, mem: &mut KvMemory) -> Vec<(usize, u64)> {
        let mut admitted = Vec::new();
        while room > 0
            && let Some((id, produced)) = self.front(t)
            && mem.admit(id, self.requests[id].prompt + produced + 1)
        {
            self.pop();
            admitted.push((id, produced));
            room -= 1;
        }
        admitted
    }
}

/// Every running sequence takes its next token's place in the cache; one
/// that finds no free block preempts the latest admitted (possibly itself):
/// a prompt still being prefilled (admitted after every running one), else
/// the last running sequence. The victim goes back to the queue.
fn grow(
    running: &mut Vec<Running>,
    filling: &mut Vec<Filling>,
    queue: &mut Queue<'_>,
    mem: &mut KvMemory,
) {
    let mut i = 0;
    while i < running.len() {
        if mem.grow(running[i].0) {
            i += 1;
            continue;
        }
        let victim = match filling.pop() {
            Some(f) => (f.id, f.produced),
            None => match running.pop() {
                Some((id, produced, _)) => (id, produced),
                None => break,
            },
        };
        mem.release(victim.0);
        mem.preempted += 1;
        queue.preempted.push_front(victim);
    }
}

/// A prefill of a request that had produced `produced` tokens (none: its
/// first prefill) ended at `t` with its next token: its first token's time
/// the first time, its response if that was the last, else it runs on.
fn prefilled(
    (id, produced): (usize, u64),
    requests: &[Request],
    tally: &mut Tally,
    running: &mut Vec<Running>,
    mem: &mut KvMemory,
    t: f64,
) {
    let r = &requests[id];
    let made = produced + 1;
    let done = made >= r.output;
    if produced == 0 {
        tally.served[id] = Some(Served {
            first_token: t,
            done: f64::NAN,
        });
    }
    if done {
        if let Some(served) = &mut tally.served[id] {
            served.done = t;
        }
        mem.release(id);
    } else {
        running.push((id, made, r.prompt + made));
    }
}

pub(super) fn continuous(
    s: &BatchingSettings,
    cost: &StepCost,
    requests: &[Request],
    mem: &mut KvMemory,
) -> Tally {
    let mut tally = Tally::new(requests.len());
    let max_batch = s.max_batch as usize;
    let mut t = 0.0_f64;
    let mut queue = Queue::new(requests);
    let mut running: Vec<Running> = Vec::new();
    while !queue.is_empty() || !running.is_empty() {
        if running.is_empty()
            && let Some(at) = queue.next_arrival()
        {
            t = t.max(at);
        }
        let batch = queue.admit(t, max_batch - running.len(), mem);
        tally.iterations += 1;
        if !batch.is_empty() {
            t += prefill(cost, batch.iter().map(|&(id, p)| requests[id].prompt + p));
            for one in batch {
                prefilled(one, requests, &mut tally, &mut running, mem, t);
            }
            continue;
        }
        grow(&mut running, &mut Vec::new(), &mut queue, mem);
        if running.is_empty() {
            continue;
        }
        mem.sample();
        let context: u64 = running.iter().map(|r| r.2).sum();
        t += cost.decode(running.len() as f64, context as f64).seconds;
        decoded(&mut running, requests, &mut tally, mem, t);
    }
    tally.kv(mem);
    tally
}

/// Every running sequence made one more token in the iteration that ended
/// at `t`: counted, and those done leave with their response.
fn decoded(
    running: &mut Vec<Running>,
    requests: &[Request],
    tally: &mut Tally,
    mem: &mut KvMemory,
    t: f64,
) {
    if running.is_empty() {
        return;
    }
    tally.decode_steps += 1;
    tally.slot_steps += running.len() as f64;
    running.retain_mut(|(id, produced, context)| {
        *produced += 1;
        *context += 1;
        let done = *produced >= requests[*id].output;
        if done {
            if let Some(served) = &mut tally.served[*id] {
                served.done = t;
            }
            mem.release(*id);
        }
        !done
    });
}

/// A prompt being prefilled in chunks: its request, the tokens to prefill
/// (the prompt, and after a preemption what it had produced), those done.
struct Filling {
    id: usize,
    produced: u64,
    target: u64,
    done: u64,
}

pub(super) fn chunked(
    s: &BatchingSettings,
    cost: &StepCost,
    requests: &[Request],
    mem: &mut KvMemory,
) -> Tally {
    let mut tally = Tally::new(requests.len());
    let (max_batch, budget) = (s.max_batch as usize, u64::from(s.chunk_tokens));
    let mut t = 0.0_f64;
    let mut queue = Queue::new(requests);
    let mut running: Vec<Running> = Vec::new();
    // Admitted in order; their whole prompt's memory is held from the start.
    let mut filling: Vec<Filling> = Vec::new();
    while !queue.is_empty() || !running.is_empty() || !filling.is_empty() {
        // The running sequences' next tokens first, then what else fits.
        grow(&mut running, &mut filling, &mut queue, mem);
        let room = max_batch - running.len() - filling.len();
        for (id, produced) in queue.admit(t, room, mem) {
            let target = requests[id].prompt + produced;
            filling.push(Filling {
                id,
                produced,
                target,
                done: 0,
            });
        }
        if running.is_empty() && filling.is_empty() {
            if let Some(at) = queue.next_arrival() {
                t = t.max(at);
            }
            continue;
        }
        if !running.is_empty() {
            mem.sample();
        }
        // The decodes first, then chunks of the prompts in order.
        let context: u64 = running.iter().map(|r| r.2).sum();
        let mut left = budget - running.len() as u64;
        let (mut tokens, mut pairs, mut read) = (0.0, 0.0, 0.0);
        let mut chunks = Vec::with_capacity(filling.len());
        for f in &filling {
            let chunk = left.min(f.target - f.done);
            // Each query counted against the whole prompt, the calculator's
            // convention for a prefill: the chunks of a prompt add up to
            // its one-pass count.
            if chunk > 0 {
                tokens += chunk as f64;
                pairs += (chunk * f.target) as f64;
                read += f.done as f64;
            }
            chunks.push(chunk);
            left -= chunk;
        }
        let batch = running.len() as f64;
        t += cost
            .mixed(tokens, pairs, read, batch, context as f64)
            .seconds;
        tally.iterations += 1;
        decoded(&mut running, requests, &mut tally, mem, t);
        let mut still = Vec::with_capacity(filling.len());
        for (mut f, chunk) in filling.into_iter().zip(chunks) {
            f.done += chunk;
            if f.done < f.target {
                still.push(f);
                continue;
            }
            // The prompt's last chunk makes the next output token.
            prefilled(
                (f.id, f.produced),
                requests,
                &mut tally,
                &mut running,
                mem,
                t,
            );
        }
        filling = still;
    }
    tally.kv(mem);
    tally
}

/// One prefill pass over prompts of these lengths, in seconds.
fn prefill(cost: &StepCost, prompts: impl Iterator<Item = u64>) -> f64 {
    let (mut tokens, mut attended) = (0.0, 0.0);
    for p in prompts {
        tokens += p as f64;
        attended += (p * p) as f64;
    }
    cost.prefill(tokens, attended).seconds
}
