//! Prefill and decode on the CPU's roofline: a shape model (the engine's
//! character model at a stated size, random weights, far larger than the
//! CPU's last-level cache) run through the same forward pass as
//! generation; every pass's FLOPs and bytes counted from the model's
//! shapes; the CPU's roofs measured once (one core, as the engine's GEMM
//! runs: a large matrix product for the compute roof, a streaming read for
//! the memory roof); and the decode bound, bandwidth ÷ (weights + KV at
//! the context), beside the measured rate; and the last decode step run
//! again with every product through the engine's GEMM, the rival of the
//! decode's GEMV ([`super::generate::project`]).
//!
//! Bytes counted per pass (f32): every weight once (the embeddings only
//! the rows the pass reads), the cached K and V once, and each matrix
//! product's input and output rows (the new K and V among them). The
//! decode bound divides the bandwidth by all of a step's bytes. FLOPs: 2 per
//! weight per new token, and attention's 4·width per (query, key) pair the
//! causal mask keeps.

use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;
use web_time::Instant;

use super::InferError;
use super::calc::Bound;
use super::generate::{forward, forward_gemm, new_cache};
use crate::autograd::{Tensor, matmul};
use crate::float::show_sig;
use crate::kernels::Roofline;
use crate::memory::show_seconds;
use crate::names::Named as _;
use crate::nn::models::char_model::{CharConfig, CharModel};
use crate::nn::models::kv_cache::KvCache;
use crate::text::Lang;

/// One pass's work and traffic.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PassCost {
    pub flops: f64,
    pub bytes: f64,
}

impl PassCost {
    /// FLOPs per byte.
    pub fn intensity(&self) -> f64 {
        self.flops / self.bytes
    }
}

const F32: f64 = 4.0;

/// The bytes of the weights a pass reads whole (all but the embeddings).
pub fn weight_bytes(c: &CharConfig) -> f64 {
    let (d, v) = (c.width as f64, c.vocab as f64);
    // 3 LayerNorms (γ, β), W_q, W_k, W_v, W_o, W_1 + b_1, W_2 + b_2, the head + its bias.
    F32 * (6.0 * d + 4.0 * d * d + (d * 4.0 * d + 4.0 * d) + (4.0 * d * d + d) + (d * v + v))
}

/// The KV cache's bytes at `tokens` tokens (one layer, f32).
pub fn kv_bytes(c: &CharConfig, tokens: usize) -> f64 {
    2.0 * F32 * (c.width * tokens) as f64
}

/// A pass over `new` tokens placed after `cached` ones.
pub fn pass_cost(c: &CharConfig, new: usize, cached: usize) -> PassCost {
    let (d, v, n) = (c.width as f64, c.vocab as f64, new as f64);
    // The weight products' (in, out) sizes: W_q, W_k, W_v, W_o, W_1, W_2, the head.
    let products = [
        (d, d),
        (d, d),
        (d, d),
        (d, d),
        (d, 4.0 * d),
        (4.0 * d, d),
        (d, v),
    ];
    let weight_flops: f64 = products.iter().map(|(i, o)| 2.0 * n * i * o).sum();
    // Row i attends to the cached tokens and the new ones up to itself.
    let pairs = n * cached as f64 + n * (n + 1.0) / 2.0;
    let attention_flops = 4.0 * d * pairs;
    let activations: f64 = products.iter().map(|(i, o)| F32 * n * (i + o)).sum();
    let embeddings = 2.0 * F32 * n * d;
    PassCost {
        flops: weight_flops + attention_flops,
        // The new K and V are written as W_k's and W_v's outputs: counted
        // in the activations.
        bytes: weight_bytes(c) + embeddings + kv_bytes(c, cached) + activations,
    }
}

/// The shape model's sizes: the shipped text's vocabulary, `width` wide
/// (`width / 128` heads), `context` positions.
pub fn shape_config(vocab: usize, width: usize, context: usize) -> CharConfig {
    CharConfig {
        vocab,
        context,
        width,
        heads: (width / 128).max(1),
    }
}

/// The widths the shape model takes: a multiple of 128, 128 to 4,096
/// (4,096 is 805 MB of weights).
pub const MAX_WIDTH: usize = 4096;
/// Prompt and decode steps together: at most 4,091 (the model's positions
/// hold them and the speculative pass measured after the last step).
pub const MAX_SHAPE_CONTEXT: usize = 4096 - VERIFY_TOKENS;
/// Its default width: 2,560, 315 MB of weights, ten times this machine's
/// 32 MiB of last-level cache.
pub const SHAPE_WIDTH: usize = 2560;

/// What to measure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct RooflineSettings {
    pub width: usize,
    /// Prompt tokens prefilled in one pass.
    pub prompt: usize,
    /// Decode steps after it.
    pub steps: usize,
    pub seed: u64,
}

impl Default for RooflineSettings {
    fn default() -> Self {
        Self {
            width: SHAPE_WIDTH,
            prompt: 512,
            steps: 16,
            seed: 1,
        }
    }
}

impl RooflineSettings {
    pub fn validate(&self) -> Result<(), InferError> {
        if self.width == 0 || !self.width.is_multiple_of(128) || self.width > MAX_WIDTH {
            return Err(InferError::ShapeWidth {
                value: self.width,
                max: MAX_WIDTH,
            });
        }
        if self.prompt == 0 || self.steps == 0 || self.prompt + self.steps > MAX_SHAPE_CONTEXT {
            return Err(InferError::ShapeTokens {
                prompt: self.prompt,
                steps: self.steps,
                max: MAX_SHAPE_CONTEXT,
            });
        }
        Ok(())
    }

    pub fn config(&self, vocab: usize) -> CharConfig {
        shape_config(vocab, self.width, self.prompt + self.steps + VERIFY_TOKENS)
    }
}

/// A measured pass.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Point {
    pub tokens: usize,
    /// Tokens cached before it.
    pub cached: usize,
    pub cost: PassCost,
    pub seconds: f64,
}

impl Point {
    /// GFLOP/s attained.
    pub fn gflops(&self) -> f64 {
        self.cost.flops / self.seconds.max(f64::MIN_POSITIVE) / 1e9
    }
}

/// The product and the read the CPU's roofs come from: 2.1 GFLOP, and
/// 268 MB (eight times this machine's last-level cache).
pub const GEMM_SIZE: usize = 1024;
pub const READ_BYTES: usize = 256 << 20;

/// The CPU's roofs, measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CpuRoofs {
    /// GFLOP/s and GB/s.
    pub roofline: Roofline,
    /// The product and the read they came from.
    pub gemm_size: usize,
    pub read_bytes: f64,
}

/// The compute roof: a `size`³ product with the engine's GEMM (one core),
/// best of three; the memory roof: a sum over `read_bytes` of f32 (one
/// core, eight independent sums so the adds do not wait on each other),
/// best of three. Best, not median: a roof is what the machine can do.
/// Sizes from 16 to 4,096, reads from 1 MiB to 4 GiB.
pub fn measure_cpu(size: usize, read_bytes: usize) -> Result<CpuRoofs, InferError> {
    // In u64: 4 GiB does not fit a 32-bit usize (the web's).
    if !(16..=4096).contains(&size) || !(1u64 << 20..=4u64 << 30).contains(&(read_bytes as u64)) {
        return Err(InferError::RoofSizes {
            gemm: size,
            mb: read_bytes >> 20,
        });
    }
    let a = Tensor::<f32>::new(
        (0..size * size).map(|i| (i % 7) as f32 * 0.1).collect(),
        &[size, size],
    );
    let gemm_s = (0..3)
        .map(|_| {
            let started = Instant::now();
            let c = matmul(&a, false, &a, false);
            std::hint::black_box(&c);
            started.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    let n = read_bytes / 4;
    let data: Vec<f32> = (0..n).map(|i| (i % 3) as f32).collect();
    let read_s = (0..3)
        .map(|_| {
            let started = Instant::now();
            let mut sums = [0.0f32; 8];
            for chunk in data.chunks_exact(8) {
                for (s, x) in sums.iter_mut().zip(chunk) {
                    *s += x;
                }
            }
            std::hint::black_box(sums);
            started.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    let flops = 2.0 * (size as f64).powi(3);
    Ok(CpuRoofs {
        roofline: Roofline {
            peak: flops / gemm_s.max(f64::MIN_POSITIVE) / 1e9,
            bandwidth: (n * 4) as f64 / read_s.max(f64::MIN_POSITIVE) / 1e9,
        },
        gemm_size: size,
        read_bytes: (n * 4) as f64,
    })
}

impl CpuRoofs {
    /// The roof that bounds a pass of `intensity` FLOPs per byte.
    pub fn bound(&self, intensity: f64) -> Bound {
        Bound::at(&self.roofline, intensity)
    }

    /// What the roofs are, as the page and the CLI say it.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let r = &self.roofline;
        vec![
            ("peak", show_sig(r.peak, 3)),
            ("size", self.gemm_size.to_string()),
            ("bandwidth", show_sig(r.bandwidth, 3)),
            ("mb", show_sig(self.read_bytes / 1e6, 3)),
            ("ridge", show_sig(r.ridge(), 3)),
        ]
    }
}

impl Point {
    /// What a pass did against the roofs, as the page and the CLI say it
    /// (`steps`: how many decode steps its median is of).
    pub fn fields(
        &self,
        roofs: &CpuRoofs,
        steps: usize,
        lang: Lang,
    ) -> Vec<(&'static str, String)> {
        let intensity = self.cost.intensity();
        vec![
            ("tokens", self.tokens.to_string()),
            ("cached", self.cached.to_string()),
            ("steps", steps.to_string()),
            ("gflop", show_sig(self.cost.flops / 1e9, 3)),
            ("mb", show_sig(self.cost.bytes / 1e6, 4)),
            ("intensity", show_sig(intensity, 3)),
            ("time", show_seconds(self.seconds)),
            ("gflops", show_sig(self.gflops(), 3)),
            ("roof", show_sig(roofs.roofline.attainable(intensity), 3)),
            ("bound", roofs.bound(intensity).name(lang)),
        ]
    }
}

/// The shape model measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RooflineReport {
    pub config: CharConfig,
    pub parameters: usize,
    pub weight_bytes: f64,
    pub prefill: Point,
    pub decode: Vec<Point>,
    /// The median decode step, and the pass at its place.
    pub decode_median: Point,
    /// Tokens per second measured (1 ÷ the median step) and the bound:
    /// bandwidth ÷ that step's bytes.
    pub decode_tokens_per_s: f64,
    pub decode_bound_tokens_per_s: f64,
    /// The last decode step again through the engine's GEMM instead of
    /// the GEMV (best of three), seconds.
    pub gemm_step_s: f64,
    /// A pass over [`VERIFY_TOKENS`] tokens at the last step's place, as
    /// speculative decoding's target runs it (best of three), seconds.
    pub verify_s: f64,
}

/// The tokens of the speculative pass measured: the pending one and 4
/// proposals.
pub const VERIFY_TOKENS: usize = 5;

/// The shape model measured a pass at a time (a page runs one pass a
/// frame): first the prompt's prefill in one pass, then the decode steps.
pub struct ShapeRun {
    settings: RooflineSettings,
    config: CharConfig,
    model: CharModel,
    prompt: Vec<usize>,
    cache: KvCache<f32>,
    bandwidth_gb_s: f64,
    prefill: Option<Point>,
    decode: Vec<Point>,
    next: usize,
    gemm_step_s: f64,
    verify_s: f64,
}

impl ShapeRun {
    /// Builds the shape model (random weights, `vocab` tokens) and a
    /// random prompt; `roofs` give the decode bound.
    pub fn new(s: &RooflineSettings, vocab: usize, roofs: &CpuRoofs) -> Result<Self, InferError> {
        s.validate()?;
        let config = s.config(vocab);
        let model = CharModel::new(config, s.seed);
        let mut rng = rand::rngs::StdRng::seed_from_u64(s.seed);
        let prompt = (0..s.prompt).map(|_| rng.random_range(0..vocab)).collect();
        Ok(Self {
            settings: *s,
            config,
            cache: new_cache(&model),
            model,
            prompt,
            bandwidth_gb_s: roofs.roofline.bandwidth,
            prefill: None,
            decode: Vec::with_capacity(s.steps),
            next: 0,
            gemm_step_s: 0.0,
            verify_s: 0.0,
        })
    }

    /// Passes run, of [`ShapeRun::passes`].
    pub fn done(&self) -> usize {
        usize::from(self.prefill.is_some()) + self.decode.len()
    }

    /// The prefill and every decode step.
    pub fn passes(&self) -> usize {
        self.settings.steps + 1
    }

    /// Runs the next pass; the report once the last has run.
    pub fn step(&mut self) -> Result<Option<RooflineReport>, InferError> {
        if self.done() == self.passes() {
            return Ok(Some(self.report()));
        }
        let cached = self.cache.tokens();
        let ids = if self.prefill.is_none() {
            std::mem::take(&mut self.prompt)
        } else {
            vec![self.next]
        };
        let started = Instant::now();
        let logits = forward(&self.model, &mut self.cache, &ids)?;
        let point = Point {
            tokens: ids.len(),
            cached,
            cost: pass_cost(&self.config, ids.len(), cached),
            seconds: started.elapsed().as_secs_f64(),
        };
        self.next = logits.argmax_rows().last().copied().unwrap_or(0);
        if self.prefill.is_none() {
            self.prefill = Some(point);
        } else {
            self.decode.push(point);
        }
        if self.done() < self.passes() {
            return Ok(None);
        }
        // The rival: the last step again, every product through the GEMM;
        // and a speculative pass at the same place.
        let verify = vec![self.next; VERIFY_TOKENS];
        let (mut gemm_s, mut verify_s) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..3 {
            let mut cache = self.cache.clone();
            cache.truncate(cached);
            let started = Instant::now();
            forward_gemm(&self.model, &mut cache, &ids)?;
            gemm_s = gemm_s.min(started.elapsed().as_secs_f64());
            cache.truncate(cached);
            let started = Instant::now();
            forward(&self.model, &mut cache, &verify)?;
            verify_s = verify_s.min(started.elapsed().as_secs_f64());
        }
        self.gemm_step_s = gemm_s;
        self.verify_s = verify_s;
        Ok(Some(self.report()))
    }

    fn report(&self) -> RooflineReport {
        let prefill = self.prefill.unwrap_or(Point {
            tokens: 0,
            cached: 0,
            cost: PassCost {
                flops: 0.0,
                bytes: 0.0,
            },
            seconds: 0.0,
        });
        // The step in the middle by time (the upper middle of an even count).
        let mut by_time = self.decode.clone();
        by_time.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
        let decode_median = by_time.get(by_time.len() / 2).copied().unwrap_or(prefill);
        let seconds = decode_median.seconds;
        RooflineReport {
            config: self.config,
            parameters: self.model.parameter_count(),
            weight_bytes: weight_bytes(&self.config),
            decode_tokens_per_s: 1.0 / seconds.max(f64::MIN_POSITIVE),
            decode_bound_tokens_per_s: self.bandwidth_gb_s * 1e9 / decode_median.cost.bytes,
            prefill,
            decode: self.decode.clone(),
            decode_median,
            gemm_step_s: self.gemm_step_s,
            verify_s: self.verify_s,
        }
    }
}

impl RooflineReport {
    /// The last decode step (0 s before any).
    pub fn last_step_s(&self) -> f64 {
        self.decode.last().map_or(0.0, |p| p.seconds)
    }

    /// The decode bound against the rate, as the page and the CLI say it.
    pub fn bound_fields(&self, roofs: &CpuRoofs) -> Vec<(&'static str, String)> {
        vec![
            ("measured", show_sig(self.decode_tokens_per_s, 3)),
            ("bound", show_sig(self.decode_bound_tokens_per_s, 3)),
            ("bandwidth", show_sig(roofs.roofline.bandwidth, 3)),
            ("mb", show_sig(self.decode_median.cost.bytes / 1e6, 4)),
            (
                "share",
                format!(
                    "{:.0}",
                    100.0 * self.decode_tokens_per_s / self.decode_bound_tokens_per_s
                ),
            ),
        ]
    }

    /// The GEMV against the GEMM at the last step, and the speculative pass.
    pub fn rival_fields(&self) -> Vec<(&'static str, String)> {
        let step = self.last_step_s().max(f64::MIN_POSITIVE);
        vec![
            ("gemm", show_seconds(self.gemm_step_s)),
            ("gemv", show_seconds(self.last_step_s())),
            ("ratio", show_sig(self.gemm_step_s / step, 3)),
            ("tokens", VERIFY_TOKENS.to_string()),
            ("time", show_seconds(self.verify_s)),
            ("steps", show_sig(self.verify_s / step, 3)),
        ]
    }
}

/// [`ShapeRun`] to the end; `progress` hears the passes done of all.
pub fn measure(
    s: &RooflineSettings,
    vocab: usize,
    roofs: &CpuRoofs,
    mut progress: impl FnMut(usize, usize),
) -> Result<RooflineReport, InferError> {
    let mut run = ShapeRun::new(s, vocab, roofs)?;
    loop {
        let report = run.step()?;
        progress(run.done(), run.passes());
        if let Some(report) = report {
            return Ok(report);
        }
    }
}
