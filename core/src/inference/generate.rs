//! Generation with the engine's character model: the prompt prefilled in
//! one pass, then one token a step — with a KV cache (each token's keys and
//! values kept, so a step computes one new row) or without (the whole prefix
//! run again every step) — every step timed.
//!
//! [`forward`] is the model's forward pass over new tokens that attend to
//! the cached ones: the same layers as `CharModel::forward` (embeddings,
//! LayerNorm, causal attention, the GELU MLP, the head; the engine's ε and
//! GELU), written on rows so that a step can reuse the cache. With an empty
//! cache and the whole sequence it is the engine's forward, up to the order
//! of f32 sums (tested). Each token is the argmax, or drawn from the
//! softmax at a temperature, cut to the top k and to the top p of the
//! probability mass ([`Sampling`]); cached and uncached decoding draw the
//! same random numbers.

use rand::SeedableRng as _;
use serde::{Deserialize, Serialize};

use super::InferError;
use crate::autograd::{Tensor, matmul, mean_and_variance};
use crate::kernels::{LAYERNORM_EPS, gelu};
use crate::nn::models::char_model::{CharModel, Corpus};
use crate::nn::models::kv_cache::KvCache;

/// An empty cache for `model`'s keys and values (one layer, f32).
pub fn new_cache(model: &CharModel) -> KvCache<f32> {
    KvCache::new(model.config.width)
}

/// The rows of `x` (`[rows, cols]`) normalised, then scaled by γ and shifted by β.
fn layer_norm(x: &Tensor<f32>, gamma: &Tensor<f32>, beta: &Tensor<f32>) -> Tensor<f32> {
    let (rows, cols) = x.rows_cols();
    let mut y = x.clone();
    for r in 0..rows {
        let (mean, var) = mean_and_variance(x.row(r));
        let inv = 1.0 / (var + LAYERNORM_EPS).sqrt();
        for c in 0..cols {
            let i = r * cols + c;
            y.data[i] = gamma.data[c] * ((x.data[i] - mean) * inv) + beta.data[c];
        }
    }
    y
}

/// `x + bias` with the bias broadcast over the rows.
fn add_bias(mut x: Tensor<f32>, bias: &Tensor<f32>) -> Tensor<f32> {
    let cols = bias.numel();
    for (i, v) in x.data.iter_mut().enumerate() {
        *v += bias.data[i % cols];
    }
    x
}

/// Rows [`project`] streams the weights for; more go through the GEMM. A
/// speculative pass (the pending token and up to `speculative::MAX_K`
/// proposals) stays below it, so its rows are bit for bit what one-row
/// decoding computes.
pub const SKINNY_ROWS: usize = 17;

/// `x·w`. For a few rows (a decode step, a speculative pass) each row of
/// `w` is read once, in order, and added into every output row while it
/// is in cache: the weights stream through once, whatever the rows. For
/// more rows (a prefill) the engine's GEMM. A GEMM library packs `w` into
/// panels before it multiplies: at one row that reads, writes and reads
/// again every weight, about three times the bytes a decode step needs
/// (measured with `dlsys-lab infer roofline`).
pub fn project(x: &Tensor<f32>, w: &Tensor<f32>) -> Tensor<f32> {
    let (rows, k) = x.rows_cols();
    let (_, n) = w.rows_cols();
    if rows > SKINNY_ROWS {
        return matmul(x, false, w, false);
    }
    let mut y = vec![0.0f32; rows * n];
    let w_row = |i: usize| &w.data[i * n..(i + 1) * n];
    if rows == 1 {
        // A GEMV: one stream of weights into one row of sums.
        for (xi, w_row) in x.data.iter().zip(w.data.chunks_exact(n)) {
            for (yj, wj) in y.iter_mut().zip(w_row) {
                *yj += xi * wj;
            }
        }
        return Tensor::new(y, &[1, n]);
    }
    // Four rows of `w` at a time: every output row's partial sums are read
    // and written once per four weight rows instead of once per row. The
    // four products are added one by one, in the one-row order, so each
    // output row is bit for bit the one-row result.
    let mut i = 0;
    while i + 4 <= k {
        let (w0, w1, w2, w3) = (w_row(i), w_row(i + 1), w_row(i + 2), w_row(i + 3));
        for (r, out) in y.chunks_exact_mut(n).enumerate() {
            let a = &x.data[r * k + i..r * k + i + 4];
            let lanes = out.iter_mut().zip(w0).zip(w1).zip(w2).zip(w3);
            for ((((yj, b0), b1), b2), b3) in lanes {
                let mut sum = *yj;
                sum += a[0] * b0;
                sum += a[1] * b1;
                sum += a[2] * b2;
                sum += a[3] * b3;
                *yj = sum;
            }
        }
        i += 4;
    }
    for i in i..k {
        for (r, out) in y.chunks_exact_mut(n).enumerate() {
            let a = x.data[r * k + i];
            for (yj, b) in out.iter_mut().zip(w_row(i)) {
                *yj += a * b;
            }
        }
    }
    Tensor::new(y, &[rows, n])
}

/// The logits (`[ids.len(), vocab]`) of `ids` placed after the cached
/// tokens, whose keys and values are appended to `cache`.
pub fn forward(
    model: &CharModel,
    cache: &mut KvCache<f32>,
    ids: &[usize],
) -> Result<Tensor<f32>, InferError> {
    forward_by(model, cache, ids, project)
}

/// [`forward`] with every product through the engine's GEMM, one row or
/// many: the rival [`project`]'s GEMV is measured against.
pub fn forward_gemm(
    model: &CharModel,
    cache: &mut KvCache<f32>,
    ids: &[usize],
) -> Result<Tensor<f32>, InferError> {
    forward_by(model, cache, ids, |x, w| matmul(x, false, w, false))
}

fn forward_by(
    model: &CharModel,
    cache: &mut KvCache<f32>,
    ids: &[usize],
    project: impl Fn(&Tensor<f32>, &Tensor<f32>) -> Tensor<f32>,
) -> Result<Tensor<f32>, InferError> {
    let config = model.config;
    let (d, heads, start) = (config.width, config.heads, cache.tokens());
    assert_eq!(
        cache.width(),
        d,
        "a cache made for another model (generate::new_cache)"
    );
    if start + ids.len() > config.context {
        return Err(InferError::PastContext {
            tokens: start + ids.len(),
            context: config.context,
        });
    }
    if let Some(&id) = ids.iter().find(|&&id| id >= config.vocab) {
        return Err(InferError::UnknownToken {
            id,
            vocab: config.vocab,
        });
    }
    let p = model.params();
    let n = ids.len();
    let mut x = Tensor::zeros(&[n, d]);
    for (i, &id) in ids.iter().enumerate() {
        let (token, place) = (p[0].row(id), p[1].row(start + i));
        for c in 0..d {
            x.data[i * d + c] = token[c] + place[c];
        }
    }
    let h = layer_norm(&x, &p[2], &p[3]);
    let q = project(&h, &p[4]);
    cache.append(&project(&h, &p[5]).data, &project(&h, &p[6]).data);
    // Each new row attends causally: to the cache before it and to itself.
    let mut attended = Tensor::zeros(&[n, d]);
    for i in 0..n {
        let row = cache.attend(&q.data[i * d..(i + 1) * d], start + i + 1, heads);
        attended.data[i * d..(i + 1) * d].copy_from_slice(&row);
    }
    let o = project(&attended, &p[7]);
    let x = x.zip_map(&o, |a, b| a + b);
    let h = layer_norm(&x, &p[8], &p[9]);
    let h = add_bias(project(&h, &p[10]), &p[11]).map(|v| gelu(f64::from(v)) as f32);
    let h = add_bias(project(&h, &p[12]), &p[13]);
    let x = x.zip_map(&h, |a, b| a + b);
    let h = layer_norm(&x, &p[14], &p[15]);
    Ok(add_bias(project(&h, &p[16]), &p[17]))
}

/// The context of the model this lesson generates with: 256 characters,
/// so a 200-character continuation of a short prompt never slides its
/// window (a slid window would move every cached key to a new position).
pub const CONTEXT: usize = crate::nn::models::text_run::MAX_CONTEXT;

/// The training run of the generation model: the lesson's text run (its
/// schedule and seed rule) at [`CONTEXT`] characters, `steps` steps.
pub fn model_settings(steps: u64, seed: u64) -> crate::nn::models::text_run::TextSettings {
    crate::nn::models::text_run::TextSettings {
        steps,
        seed,
        context: CONTEXT,
        ..Default::default()
    }
}

/// What the page and `dlsys-lab infer generate` start from: the prompt,
/// the characters generated after it, the training steps.
pub const DEFAULT_PROMPT: &str = "Attention ";
pub const DEFAULT_TOKENS: usize = 200;
pub const DEFAULT_STEPS: u64 = 300;

/// Most characters a prompt may hold.
pub const MAX_PROMPT: usize = 200;

/// One generation, timed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Generation {
    pub cached: bool,
    pub prompt: String,
    pub text: String,
    /// Seconds of the prompt's prefill (its first token's).
    pub prefill_s: f64,
    /// Seconds of each decode step after it, in order.
    pub step_s: Vec<f64>,
    /// Each new token's logits (the prefill's last row first).
    #[serde(skip)]
    pub logits: Vec<Vec<f32>>,
    /// Tokens whose K and V the cache holds at the end (0 without it): the
    /// prompt's and each step's input (the last token is never run).
    pub cache_tokens: usize,
    /// The cache's bytes at the end (0 without it).
    pub cache_bytes: u64,
}

impl Generation {
    pub fn total_s(&self) -> f64 {
        self.prefill_s + self.step_s.iter().sum::<f64>()
    }

    /// The median decode step, seconds (0 with no step).
    pub fn median_step_s(&self) -> f64 {
        super::median(self.step_s.clone())
    }
}

/// The prompt's ids, if `tokens` more fit in `context` positions and
/// `sampling` is valid: what a generation checks before it starts (and a
/// caller before training a model for it).
pub fn check_request(
    corpus: &Corpus,
    prompt: &str,
    tokens: usize,
    context: usize,
    sampling: &Sampling,
) -> Result<Vec<usize>, InferError> {
    sampling.validate()?;
    let ids = encode(corpus, prompt)?;
    if tokens == 0 || ids.len() + tokens > context {
        return Err(InferError::Continuation {
            prompt: ids.len(),
            tokens,
            context,
        });
    }
    Ok(ids)
}

/// The prompt's characters as the model's ids.
pub fn encode(corpus: &Corpus, prompt: &str) -> Result<Vec<usize>, InferError> {
    if prompt.is_empty() {
        return Err(InferError::EmptyPrompt);
    }
    let count = prompt.chars().count();
    if count > MAX_PROMPT {
        return Err(InferError::LongPrompt {
            chars: count,
            max: MAX_PROMPT,
        });
    }
    prompt
        .chars()
        .map(|c| {
            corpus
                .vocab
                .binary_search(&c)
                .map_err(|_| InferError::Character {
                    character: c.to_string(),
                })
        })
        .collect()
}

/// How the next token is chosen from the logits.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sampling {
    /// 0: always the most likely token (greedy); otherwise the logits are
    /// divided by it before the softmax (below 1 sharper, above 1 flatter).
    pub temperature: f64,
    /// Keep only the k most likely tokens (0: all).
    pub top_k: usize,
    /// Then keep the fewest most likely tokens whose probabilities (among
    /// those top-k kept) reach p (nucleus sampling; 1: all).
    pub top_p: f64,
    pub seed: u64,
}

impl Default for Sampling {
    /// Greedy.
    fn default() -> Self {
        Self {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            seed: 1,
        }
    }
}

/// The hottest temperature taken.
pub const MAX_TEMPERATURE: f64 = 10.0;

impl Sampling {
    pub fn validate(&self) -> Result<(), InferError> {
        if !(self.temperature.is_finite() && (0.0..=MAX_TEMPERATURE).contains(&self.temperature)) {
            return Err(InferError::Temperature {
                value: self.temperature,
                max: MAX_TEMPERATURE,
            });
        }
        if !(self.top_p.is_finite() && self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(InferError::TopP { value: self.top_p });
        }
        Ok(())
    }

    /// The probabilities the next token is drawn from: the softmax of
    /// logits ÷ temperature, cut to the top k and the top p, renormalised
    /// (all on the argmax when greedy).
    pub fn probabilities(&self, logits: &[f32]) -> Vec<f64> {
        let mut probs = vec![0.0; logits.len()];
        if logits.is_empty() {
            return probs;
        }
        if self.temperature == 0.0 {
            probs[argmax(logits)] = 1.0;
            return probs;
        }
        let max = logits.iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v));
        let mut order: Vec<usize> = (0..logits.len()).collect();
        order.sort_by(|a, b| logits[*b].total_cmp(&logits[*a]).then(a.cmp(b)));
        let weights: Vec<f64> = logits
            .iter()
            .map(|v| (f64::from(v - max) / self.temperature).exp())
            .collect();
        // Top-k first; top-p then over what top-k kept, renormalised (the
        // order Hugging Face and vLLM apply them in).
        let keep_k = if self.top_k == 0 {
            logits.len()
        } else {
            self.top_k.min(logits.len())
        };
        let kept_k: f64 = order[..keep_k].iter().map(|&i| weights[i]).sum();
        let mut mass = 0.0;
        for (rank, &i) in order[..keep_k].iter().enumerate() {
            if rank > 0 && mass >= self.top_p {
                break;
            }
            probs[i] = weights[i] / kept_k;
            mass += probs[i];
        }
        let kept: f64 = probs.iter().sum();
        probs.iter_mut().for_each(|p| *p /= kept);
        probs
    }

    /// The next token, by `rng`'s next draw.
    pub fn pick(&self, logits: &[f32], rng: &mut rand::rngs::StdRng) -> usize {
        if self.temperature == 0.0 {
            return argmax(logits);
        }
        super::speculative::sample(&self.probabilities(logits), rng)
    }
}

fn argmax(row: &[f32]) -> usize {
    row.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |(bi, bv), (i, &v)| {
            if v > bv { (i, v) } else { (bi, bv) }
        })
        .0
}

/// `tokens` tokens after `prompt`, chosen by `sampling`: with the cache,
/// each step runs the new token alone; without, each step runs the whole
/// sequence again.
pub fn generate(
    model: &CharModel,
    corpus: &Corpus,
    prompt: &str,
    tokens: usize,
    cached: bool,
    sampling: &Sampling,
) -> Result<Generation, InferError> {
    let context = model.config.context;
    let mut ids = check_request(corpus, prompt, tokens, context, sampling)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(sampling.seed);
    let mut cache = new_cache(model);
    let started = web_time::Instant::now();
    let first = forward(model, &mut cache, &ids)?;
    let prefill_s = started.elapsed().as_secs_f64();
    let mut logits = vec![first.row(first.rows_cols().0 - 1).to_vec()];
    let mut step_s = Vec::with_capacity(tokens);
    while logits.len() < tokens {
        ids.push(sampling.pick(&logits[logits.len() - 1], &mut rng));
        let started = web_time::Instant::now();
        let row = if cached {
            let last = ids[ids.len() - 1];
            forward(model, &mut cache, &[last])?
        } else {
            cache = new_cache(model);
            let all = forward(model, &mut cache, &ids)?;
            Tensor::new(all.row(ids.len() - 1).to_vec(), &[1, model.config.vocab])
        };
        step_s.push(started.elapsed().as_secs_f64());
        logits.push(row.data);
    }
    ids.push(sampling.pick(&logits[logits.len() - 1], &mut rng));
    let prompt_len = ids.len() - tokens;
    Ok(Generation {
        cached,
        prompt: prompt.to_owned(),
        text: corpus.decode(&ids[prompt_len..]),
        prefill_s,
        step_s,
        logits,
        cache_tokens: if cached { cache.tokens() } else { 0 },
        cache_bytes: if cached { cache.bytes() } else { 0 },
    })
}
