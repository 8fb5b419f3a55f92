//! Batching on the virtual clock: requests arrive as a seeded Poisson
//! process and a server runs them with static or continuous batching, every
//! iteration timed by the serving calculator ([`StepCost`]); throughput and
//! the latency percentiles come out.
//!
//! The two schedulers, as this model runs them:
//! - **Static** (request-level batching, as servers did before Orca): the
//!   server waits until `max_batch` requests are waiting, or the oldest has
//!   waited `max_wait_s`, or no more will arrive; it prefills the batch in
//!   one pass, then decodes every sequence until the longest output ends (a
//!   finished sequence keeps its slot and decodes padding), and returns all
//!   the responses when the batch ends.
//! - **Continuous** (iteration-level, as Orca and vLLM do): every iteration
//!   either prefills the waiting requests that fit in the free slots (one
//!   pass; running sequences wait for it) or decodes one token for every
//!   running sequence; a sequence leaves, and returns its response, the
//!   iteration it finishes.
//! - **Chunked** (continuous batching with chunked prefill, as Sarathi-Serve
//!   and vLLM's chunked prefill do): every iteration has a budget of
//!   `chunk_tokens` tokens; each running sequence decodes one, and what is
//!   left goes to the prompts being prefilled, in order of arrival, a chunk
//!   of each at a time. A long prompt no longer stalls every decode behind
//!   it; each iteration that carries a chunk is slower than a decode alone.
//!
//! The prefill produces a request's first output token (time to first
//! token = its end − the arrival).
//!
//! The KV memory beside the weights limits what runs at once besides
//! `max_batch` ([`memory`]): with contiguous reservation each admitted
//! request sets aside the longest request the stream can draw; paged, a
//! request is admitted when its tokens so far fit, and a sequence that
//! finds no free block as it grows preempts the latest admitted one. Static
//! batching reserves the worst case in either layout: a batch runs to its
//! end and cannot preempt, so it must know up front that it fits.

mod memory;
mod schedule;

pub use memory::{KvCapacity, KvLayout, capacity};

use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;

use super::InferError;
use super::calc::{ServeSettings, StepCost};
use crate::quant::calibrate::percentile;

/// Most tokens one request may reach (prompt + output) in the simulation.
pub const MAX_LENGTH: u64 = 8192;
/// Most requests one simulation runs.
pub const MAX_REQUESTS: u32 = 5000;
/// Most sequences one batch holds.
pub const MAX_BATCH: u32 = 1024;
/// The slowest and fastest arrivals a second: slower, the arrival times
/// grow so large that a prefill no longer changes them in f64.
pub const MIN_RATE: f64 = 1e-3;
pub const MAX_RATE: f64 = 1e6;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum Scheme {
    Static,
    Continuous,
    Chunked,
}

impl Scheme {
    pub const ALL: [Self; 3] = [Self::Static, Self::Continuous, Self::Chunked];

    pub fn key(self) -> &'static str {
        match self {
            Self::Static => "static",
            Self::Continuous => "continuous",
            Self::Chunked => "chunked",
        }
    }
}

impl crate::names::Named for Scheme {
    fn name_key(&self) -> String {
        format!("infer.batching.{}", self.key())
    }
}

/// The model on its device, and the stream of requests.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct BatchingSettings {
    /// Model, device and bytes per weight and per cached value (its prompt,
    /// context and batch are set from the fields below when validated).
    pub serve: ServeSettings,
    /// Mean arrivals per second (exponential gaps between them).
    pub rate: f64,
    pub requests: u32,
    /// Prompt lengths, uniform in [lo, hi].
    pub prompt: (u64, u64),
    /// Output lengths, uniform in [lo, hi].
    pub output: (u64, u64),
    pub max_batch: u32,
    /// Static batching starts a batch that is not full once its oldest
    /// request has waited this long.
    pub max_wait_s: f64,
    /// Tokens one iteration of chunked prefill carries (decodes and prompt
    /// chunks together).
    pub chunk_tokens: u32,
    /// How the KV cache is held, and a paged block's tokens.
    pub kv: KvLayout,
    pub block_tokens: u32,
    pub seed: u64,
}

impl BatchingSettings {
    /// A stream on `serve`'s model and device: 200 requests of 16–512
    /// prompt and 16–512 output tokens, batches of up to 32, a static batch
    /// waiting at most 2 s, at `rate` requests a second.
    pub fn new(serve: ServeSettings, rate: f64) -> Self {
        Self {
            // The calculator's prompt, context and batch are set per
            // iteration here: fixed, so they do not tell two streams apart.
            serve: ServeSettings {
                prompt: 1,
                context: 1,
                batch: 1,
                ..serve
            },
            rate,
            requests: 200,
            prompt: (16, 512),
            output: (16, 512),
            max_batch: 32,
            max_wait_s: 2.0,
            chunk_tokens: 512,
            kv: KvLayout::Contiguous,
            block_tokens: 16,
            seed: 1,
        }
    }

    /// The longest request the stream can draw, in tokens: what contiguous
    /// reservation sets aside for each.
    pub fn longest(&self) -> u64 {
        self.prompt.1.saturating_add(self.output.1)
    }

    /// The calculator's settings at this stream's worst case: the longest
    /// prompt, the longest request's context, a full batch.
    fn worst_case(&self) -> ServeSettings {
        ServeSettings {
            prompt: self.prompt.1,
            context: self.prompt.1.saturating_add(self.output.1),
            batch: u64::from(self.max_batch),
            ..self.serve.clone()
        }
    }

    pub fn validate(&self) -> Result<StepCost, InferError> {
        if !(self.rate.is_finite() && (MIN_RATE..=MAX_RATE).contains(&self.rate)) {
            return Err(InferError::Rate { value: self.rate });
        }
        super::check_lengths(self.prompt, self.output, MAX_LENGTH)?;
        if !(1..=MAX_REQUESTS).contains(&self.requests) {
            return Err(InferError::Stream {
                requests: self.requests,
                max: MAX_REQUESTS,
            });
        }
        if !(1..=MAX_BATCH).contains(&self.max_batch) {
            return Err(InferError::MaxBatch {
                value: self.max_batch,
                max: MAX_BATCH,
            });
        }
        if !(self.max_wait_s.is_finite() && (0.0..=3600.0).contains(&self.max_wait_s)) {
            return Err(InferError::MaxWait {
                value: self.max_wait_s,
            });
        }
        if !(1..=256).contains(&self.block_tokens) {
            return Err(InferError::BlockTokens {
                value: self.block_tokens,
            });
        }
        let cost = StepCost::new(&self.worst_case())?;
        capacity(self, &cost)?;
        Ok(cost)
    }

    /// The KV memory beside the weights, for valid settings.
    pub fn kv_capacity(&self) -> Result<KvCapacity, InferError> {
        capacity(self, &self.validate()?)
    }

    /// What chunked prefill needs besides: room in an iteration for a full
    /// batch's decodes and a token of prompt.
    pub fn validate_chunk(&self) -> Result<(), InferError> {
        if self.chunk_tokens <= self.max_batch || u64::from(self.chunk_tokens) > MAX_LENGTH {
            return Err(InferError::ChunkTokens {
                value: self.chunk_tokens,
                min: self.max_batch + 1,
                max: MAX_LENGTH,
            });
        }
        Ok(())
    }

    /// The requests, in order of arrival: (arrival s, prompt, output).
    pub fn draw(&self) -> Vec<Request> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
        let mut t = 0.0;
        (0..self.requests)
            .map(|_| {
                // Exponential gaps: −ln(U)/rate with U in (0, 1].
                let u: f64 = 1.0 - rng.random::<f64>();
                t += -u.ln() / self.rate;
                Request {
                    arrival: t,
                    prompt: rng.random_range(self.prompt.0..=self.prompt.1),
                    output: rng.random_range(self.output.0..=self.output.1),
                }
            })
            .collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Request {
    pub arrival: f64,
    pub prompt: u64,
    pub output: u64,
}

/// When a request got its first token and its response.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Served {
    pub first_token: f64,
    pub done: f64,
}

/// One scheme's run over the stream.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BatchingRun {
    pub scheme: Scheme,
    /// Output tokens a second, from the first arrival to the last response.
    pub throughput: f64,
    pub ttft_p50: f64,
    pub ttft_p99: f64,
    pub e2e_p50: f64,
    pub e2e_p99: f64,
    /// Time per output token after the first, (done − first token) ÷
    /// (output − 1), over requests of two tokens or more.
    pub tpot_p50: f64,
    pub tpot_p99: f64,
    /// Sequences per decode step, averaged over the steps.
    pub mean_batch: f64,
    /// Decode slot-steps spent on sequences already finished (static's padding).
    pub padding_share: f64,
    pub iterations: u64,
    /// Seconds from the first arrival to the last response.
    pub makespan: f64,
    /// How the KV cache was held (static batching: reserved), the share of
    /// reserved KV memory that held no K/V over the decode iterations, and
    /// the preemptions.
    pub kv: KvLayout,
    pub kv_waste: f64,
    pub preempted: u32,
}

/// What a scheduler measured, before the percentiles.
#[derive(Default)]
struct Tally {
    served: Vec<Option<Served>>,
    decode_steps: u64,
    slot_steps: f64,
    padding: f64,
    iterations: u64,
    kv: KvLayout,
    kv_waste: f64,
    preempted: u32,
}

impl Tally {
    fn new(requests: usize) -> Self {
        Self {
            served: vec![None; requests],
            ..Self::default()
        }
    }

    /// What the memory measured.
    fn kv(&mut self, mem: &memory::KvMemory) {
        self.kv = mem.layout();
        self.kv_waste = mem.waste();
        self.preempted = mem.preempted;
    }

    fn finish(self, scheme: Scheme, requests: &[Request]) -> BatchingRun {
        // Every request is served by construction; one that were not would
        // be left out of the figures, never paired with another's times.
        let pairs: Vec<(&Request, Served)> = requests
            .iter()
            .zip(&self.served)
            .filter_map(|(r, s)| s.filter(|s| s.done.is_finite()).map(|s| (r, s)))
            .collect();
        let sorted = |f: &dyn Fn(&Request, &Served) -> f64| {
            let mut v: Vec<f64> = pairs.iter().map(|(r, s)| f(r, s)).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let ttft = sorted(&|r, s| s.first_token - r.arrival);
        let e2e = sorted(&|r, s| s.done - r.arrival);
        // None when no request has a second token: NaN, not a time.
        let mut tpot: Vec<f64> = pairs
            .iter()
            .filter(|(r, _)| r.output >= 2)
            .map(|(r, s)| (s.done - s.first_token) / (r.output - 1) as f64)
            .collect();
        tpot.sort_by(f64::total_cmp);
        let start = requests.first().map_or(0.0, |r| r.arrival);
        let end = pairs.iter().map(|(_, s)| s.done).fold(start, f64::max);
        let makespan = end - start;
        let tokens: u64 = pairs.iter().map(|(r, _)| r.output).sum();
        let steps = self.decode_steps.max(1) as f64;
        BatchingRun {
            scheme,
            throughput: if makespan > 0.0 {
                tokens as f64 / makespan
            } else {
                0.0
            },
            ttft_p50: percentile(&ttft, 50.0),
            ttft_p99: percentile(&ttft, 99.0),
            e2e_p50: percentile(&e2e, 50.0),
            e2e_p99: percentile(&e2e, 99.0),
            tpot_p50: if tpot.is_empty() {
                f64::NAN
            } else {
                percentile(&tpot, 50.0)
            },
            tpot_p99: if tpot.is_empty() {
                f64::NAN
            } else {
                percentile(&tpot, 99.0)
            },
            mean_batch: self.slot_steps / steps,
            padding_share: if self.slot_steps > 0.0 {
                self.padding / self.slot_steps
            } else {
                0.0
            },
            iterations: self.iterations,
            makespan,
            kv: self.kv,
            kv_waste: self.kv_waste,
            preempted: self.preempted,
        }
    }
}

/// Runs the stream through one scheme.
pub fn simulate(s: &BatchingSettings, scheme: Scheme) -> Result<BatchingRun, InferError> {
    simulate_requests(s, scheme, &s.draw())
}

/// Runs `requests` (in order of arrival; `s` gives the model, the device
/// and the limits, its own stream is not drawn) through one scheme.
pub fn simulate_requests(
    s: &BatchingSettings,
    scheme: Scheme,
    requests: &[Request],
) -> Result<BatchingRun, InferError> {
    let cost = s.validate()?;
    if scheme == Scheme::Chunked {
        s.validate_chunk()?;
    }
    let tokens = capacity(s, &cost)?.tokens;
    let layout = if scheme == Scheme::Static {
        KvLayout::Contiguous
    } else {
        s.kv
    };
    let mut mem = memory::KvMemory::new(s, layout, tokens, requests.len());
    let tally = match scheme {
        Scheme::Static => schedule::static_batching(s, &cost, requests, &mut mem),
        Scheme::Continuous => schedule::continuous(s, &cost, requests, &mut mem),
        Scheme::Chunked => schedule::chunked(s, &cost, requests, &mut mem),
    };
    debug_assert!(mem.is_idle(), "a request left memory held");
    Ok(tally.finish(scheme, requests))
}

/// Decode slot-steps a static batch spends on padding: every sequence
/// holds its slot until the longest output ends, and the prefill makes each
/// one's first token, so a batch of outputs o decodes max(o) − 1 steps for
/// each and Σ (max(o) − o) of those slot-steps are padding.
pub fn padding_slots(outputs: &[u64]) -> u64 {
    let longest = outputs.iter().copied().max().unwrap_or(0);
    outputs.iter().map(|o| longest - o).sum()
}

/// Arrival rates for a sweep, as fractions of a rough capacity: a full
/// batch decoding back to back at the mean lengths (prefills left out, so
/// the real capacity is lower and the last rates overload the server).
pub fn sweep_rates(s: &BatchingSettings) -> Result<Vec<f64>, InferError> {
    const FRACTIONS: [f64; 10] = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.25];
    let cost = s.validate()?;
    let mean = |(lo, hi): (u64, u64)| (lo + hi) as f64 / 2.0;
    let (prompt, output) = (mean(s.prompt), mean(s.output));
    let batch = f64::from(s.max_batch);
    let step = cost.decode(batch, batch * (prompt + output / 2.0)).seconds;
    let capacity = batch / (step * output);
    Ok(FRACTIONS.iter().map(|f| f * capacity).collect())
}

/// Both schemes at one arrival rate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RatePoint {
    pub rate: f64,
    pub static_run: BatchingRun,
    pub continuous: BatchingRun,
    pub chunked: BatchingRun,
}

/// Most rates one sweep takes.
pub const MAX_RATES: usize = 32;

/// Every scheme at each rate in `rates`, the rest of `s` unchanged (the
/// same seed: the same requests, arriving faster or slower).
pub fn sweep(s: &BatchingSettings, rates: &[f64]) -> Result<Vec<RatePoint>, InferError> {
    if rates.is_empty() || rates.len() > MAX_RATES {
        return Err(InferError::Rates {
            count: rates.len() as u32,
            max: MAX_RATES as u32,
        });
    }
    rates
        .iter()
        .map(|&rate| {
            let at = BatchingSettings { rate, ..s.clone() };
            Ok(RatePoint {
                rate,
                static_run: simulate(&at, Scheme::Static)?,
                continuous: simulate(&at, Scheme::Continuous)?,
                chunked: simulate(&at, Scheme::Chunked)?,
            })
        })
        .collect()
}
