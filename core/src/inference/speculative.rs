//! Speculative decoding (Leviathan et al. 2023; Chen et al. 2023): a cheap
//! draft model q proposes k tokens, the target p scores all of them in one
//! pass, and each proposal x is kept with probability min(1, p(x)/q(x));
//! at the first rejection a token is drawn from norm(max(0, p − q)), and if
//! all k are kept one more comes from p. What is emitted is distributed
//! exactly as p: the chi-squared test here checks it, and fails the common
//! mistake of resampling from q after a rejection.
//!
//! The models are next-token tables over a small vocabulary: a bigram
//! target and a unigram draft counted from the shipped text, and, to test
//! the expected-length formula, a context-free pair whose acceptance
//! probability is the same at every position.

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;

use super::InferError;

/// A next-token distribution given the previous token.
pub trait Model {
    fn vocab(&self) -> usize;
    fn next(&self, prev: usize) -> &[f64];
}

/// One table of next-token probabilities per previous token.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// One row per previous token, or a single row for every context.
    rows: Vec<Vec<f64>>,
    vocab: usize,
}

impl Table {
    /// The same distribution whatever came before.
    pub fn context_free(p: Vec<f64>, vocab: usize) -> Self {
        Self {
            rows: vec![normalised(p)],
            vocab,
        }
    }

    /// Bigram counts of `tokens` (add-`smoothing`) over `vocab` tokens.
    pub fn bigram(tokens: &[usize], vocab: usize, smoothing: f64) -> Self {
        let mut rows = vec![vec![smoothing; vocab]; vocab];
        for w in tokens.windows(2) {
            rows[w[0]][w[1]] += 1.0;
        }
        Self {
            rows: rows.into_iter().map(normalised).collect(),
            vocab,
        }
    }

    /// Unigram counts of `tokens` (add-`smoothing`), the same for every context.
    pub fn unigram(tokens: &[usize], vocab: usize, smoothing: f64) -> Self {
        let mut p = vec![smoothing; vocab];
        for &t in tokens {
            p[t] += 1.0;
        }
        Self::context_free(p, vocab)
    }
}

impl Model for Table {
    fn vocab(&self) -> usize {
        self.vocab
    }

    fn next(&self, prev: usize) -> &[f64] {
        &self.rows[prev.min(self.rows.len() - 1)]
    }
}

fn normalised(mut p: Vec<f64>) -> Vec<f64> {
    let total: f64 = p.iter().sum();
    if total > 0.0 {
        for x in &mut p {
            *x /= total;
        }
    }
    p
}

/// A draw from `p` (which sums to 1 up to rounding; the last index with
/// mass takes what rounding leaves).
pub fn sample(p: &[f64], rng: &mut StdRng) -> usize {
    let u: f64 = rng.random();
    let mut acc = 0.0;
    for (i, &x) in p.iter().enumerate() {
        acc += x;
        if u < acc {
            return i;
        }
    }
    p.iter().rposition(|&x| x > 0.0).unwrap_or(0)
}

/// Σ min(p, q): the chance that one proposal from q is kept against p.
pub fn acceptance(p: &[f64], q: &[f64]) -> f64 {
    p.iter().zip(q).map(|(a, b)| a.min(*b)).sum()
}

/// Leviathan et al. 2023, eq. 1: expected tokens per target pass with k
/// proposals, when each is kept independently with probability α.
pub fn expected_tokens(alpha: f64, k: u32) -> f64 {
    if (1.0 - alpha).abs() < 1e-12 {
        return f64::from(k) + 1.0;
    }
    (1.0 - alpha.powi(k as i32 + 1)) / (1.0 - alpha)
}

/// What to do after a rejection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Resample {
    /// norm(max(0, p − q)): exact.
    Residual,
    /// q again: the mistake; what it emits is not distributed as p.
    Draft,
}

/// The check of one proposal `x`, drawn from q, against p: `None` if it is
/// kept (with probability min(1, p(x)/q(x))), or the token drawn in its
/// place. Every speculation here, on tables or on the engine, checks with it.
pub fn verdict(
    p: &[f64],
    q: &[f64],
    x: usize,
    resample: Resample,
    rng: &mut StdRng,
) -> Option<usize> {
    let u: f64 = rng.random();
    if q[x] > 0.0 && u * q[x] < p[x] {
        return None;
    }
    Some(match resample {
        Resample::Residual => {
            let residual: Vec<f64> = p.iter().zip(q).map(|(a, b)| (a - b).max(0.0)).collect();
            sample(&normalised(residual), rng)
        }
        Resample::Draft => sample(q, rng),
    })
}

/// One round: up to k proposals after `prev`, checked against the target.
/// Returns the emitted tokens (at least one) and how many proposals were kept.
pub fn round(
    target: &dyn Model,
    draft: &dyn Model,
    prev: usize,
    k: u32,
    resample: Resample,
    rng: &mut StdRng,
) -> (Vec<usize>, u32) {
    let mut emitted = Vec::with_capacity(k as usize + 1);
    let mut last = prev;
    for kept in 0..k {
        let q = draft.next(last);
        let x = sample(q, rng);
        if let Some(y) = verdict(target.next(last), q, x, resample, rng) {
            emitted.push(y);
            return (emitted, kept);
        }
        emitted.push(x);
        last = x;
    }
    emitted.push(sample(target.next(last), rng));
    (emitted, k)
}

/// Leviathan et al. 2023, §3.4: the expected wall-clock speed-up over
/// plain decoding when a draft step costs `cost` target steps and the
/// target's pass over k + 1 tokens costs one step: E[tokens] ÷ (k·c + 1).
pub fn speedup(alpha: f64, k: u32, cost: f64) -> f64 {
    expected_tokens(alpha, k) / (f64::from(k) * cost + 1.0)
}

/// A draft step's cost in target steps: finite and at least 0.
pub fn check_cost(cost: f64) -> Result<f64, InferError> {
    if cost.is_finite() && cost >= 0.0 {
        Ok(cost)
    } else {
        Err(InferError::DraftCost { value: cost })
    }
}

/// The k in 1..=[`MAX_K`] with the largest [`speedup`], and that speed-up.
pub fn best_k(alpha: f64, cost: f64) -> (u32, f64) {
    (1..=MAX_K)
        .map(|k| (k, speedup(alpha, k, cost)))
        .fold(
            (1, f64::NEG_INFINITY),
            |best, x| if x.1 > best.1 { x } else { best },
        )
}

/// A chi-squared goodness-of-fit test: categories expected fewer than 5
/// times are pooled; the critical value at the 0.1 % level comes from the
/// Wilson–Hilferty approximation (within a few tenths of a percent of the
/// exact quantile for the degrees of freedom here).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ChiSquared {
    pub statistic: f64,
    pub dof: u32,
    pub critical: f64,
    pub samples: u64,
}

impl ChiSquared {
    pub fn passes(&self) -> bool {
        self.statistic <= self.critical
    }
}

/// z of the standard normal at 1 − 0.001.
const Z_999: f64 = 3.090_232;

pub fn chi_squared(counts: &[u64], p: &[f64]) -> ChiSquared {
    let n: u64 = counts.iter().sum();
    let nf = n as f64;
    let (mut statistic, mut cells) = (0.0, 0u32);
    let (mut pooled_obs, mut pooled_exp) = (0.0, 0.0);
    for (&c, &pi) in counts.iter().zip(p) {
        let e = pi * nf;
        if e < 5.0 {
            pooled_obs += c as f64;
            pooled_exp += e;
        } else {
            statistic += (c as f64 - e).powi(2) / e;
            cells += 1;
        }
    }
    if pooled_exp > 0.0 {
        statistic += (pooled_obs - pooled_exp).powi(2) / pooled_exp;
        cells += 1;
    } else if pooled_obs > 0.0 {
        // A token the target gives probability 0 came out: not the target.
        statistic = f64::INFINITY;
    }
    let dof = cells.saturating_sub(1).max(1);
    let d = f64::from(dof);
    let t = 2.0 / (9.0 * d);
    ChiSquared {
        statistic,
        dof,
        critical: d * (1.0 - t + Z_999 * t.sqrt()).powi(3),
        samples: n,
    }
}

/// How to measure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct SpecSettings {
    /// Proposals per round.
    pub k: u32,
    /// Rounds run for the rates (and samples for the exactness test).
    pub rounds: u32,
    pub seed: u64,
}

impl Default for SpecSettings {
    fn default() -> Self {
        Self {
            k: 4,
            rounds: 20_000,
            seed: 1,
        }
    }
}

pub const MAX_K: u32 = 16;
pub const MAX_ROUNDS: u32 = 1_000_000;
/// Fewer samples could not tell the wrong resampler from the exact one.
pub const MIN_ROUNDS: u32 = 2000;

impl SpecSettings {
    pub fn validate(&self) -> Result<(), InferError> {
        if !(1..=MAX_K).contains(&self.k) {
            return Err(InferError::Proposals {
                k: self.k,
                max: MAX_K,
            });
        }
        if !(MIN_ROUNDS..=MAX_ROUNDS).contains(&self.rounds) {
            return Err(InferError::Rounds {
                rounds: self.rounds,
                min: MIN_ROUNDS,
                max: MAX_ROUNDS,
            });
        }
        Ok(())
    }
}

/// Speculation between two models, measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpecReport {
    pub k: u32,
    /// Proposals kept ÷ proposals checked.
    pub alpha: f64,
    /// Tokens emitted per target pass, measured.
    pub tokens_per_pass: f64,
    /// The formula at the measured α.
    pub formula: f64,
    /// Its sampling error: the standard error of the measured mean.
    pub standard_error: f64,
    /// The first emitted token after a fixed context, against the target's
    /// own distribution there: exact resampling, then the mistake.
    pub exact: ChiSquared,
    pub wrong: ChiSquared,
    /// The context of that test (a token id).
    pub context: usize,
}

impl SpecReport {
    /// Acceptance and tokens per pass against the formula, as the page and
    /// the CLI say them.
    pub fn rate_fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("k", self.k.to_string()),
            ("alpha", format!("{:.3}", self.alpha)),
            ("measured", format!("{:.3}", self.tokens_per_pass)),
            ("se", format!("{:.3}", self.standard_error)),
            ("formula", format!("{:.3}", self.formula)),
        ]
    }
}

/// Runs `rounds` rounds (the context carried on from each round's last
/// token), then the exactness test from `context` with both resamplers.
pub fn measure(
    target: &dyn Model,
    draft: &dyn Model,
    context: usize,
    s: &SpecSettings,
) -> Result<SpecReport, InferError> {
    s.validate()?;
    let mut rng = StdRng::seed_from_u64(s.seed);
    let (mut kept, mut checked, mut sum, mut sum_sq) = (0u64, 0u64, 0.0, 0.0);
    let mut prev = context;
    for _ in 0..s.rounds {
        let (emitted, accepted) = round(target, draft, prev, s.k, Resample::Residual, &mut rng);
        kept += u64::from(accepted);
        // A rejection ends the round: the proposals after it are not checked.
        checked += u64::from(if accepted == s.k { s.k } else { accepted + 1 });
        let n = emitted.len() as f64;
        sum += n;
        sum_sq += n * n;
        prev = emitted.last().copied().unwrap_or(context);
    }
    let rounds = f64::from(s.rounds);
    let mean = sum / rounds;
    let var = (sum_sq / rounds - mean * mean).max(0.0);
    let alpha = kept as f64 / checked.max(1) as f64;
    let first = |resample| {
        let mut rng = StdRng::seed_from_u64(s.seed ^ 0x5eed);
        let mut counts = vec![0u64; target.vocab()];
        for _ in 0..s.rounds {
            let (emitted, _) = round(target, draft, context, s.k, resample, &mut rng);
            counts[emitted[0]] += 1;
        }
        chi_squared(&counts, target.next(context))
    };
    Ok(SpecReport {
        k: s.k,
        alpha,
        tokens_per_pass: mean,
        formula: expected_tokens(alpha, s.k),
        standard_error: (var / rounds).sqrt(),
        exact: first(Resample::Residual),
        wrong: first(Resample::Draft),
        context,
    })
}

/// The pair the lesson speculates with, from a text's characters: its
/// bigram model as the target, its unigram model as the draft.
pub fn text_pair(corpus: &crate::nn::models::char_model::Corpus) -> (Table, Table) {
    (
        text_bigram(corpus),
        Table::unigram(&corpus.ids, corpus.vocab.len(), 0.01),
    )
}

/// A text's bigram counts (add-0.01): the tables' target here, and the
/// draft when the engine's model is the target ([`super::spec_run`]).
pub fn text_bigram(corpus: &crate::nn::models::char_model::Corpus) -> Table {
    Table::bigram(&corpus.ids, corpus.vocab.len(), 0.01)
}

/// The context of the exactness test on a text: a space (the letter after
/// it is far from the draft's guess), or token 0 where the text has none.
pub fn text_context(corpus: &crate::nn::models::char_model::Corpus) -> usize {
    corpus.vocab.binary_search(&' ').unwrap_or(0)
}

/// A context-free pair over `vocab` tokens whose acceptance Σ min(p, q) is
/// `alpha` at every position: q is p with the mass 1 − α moved from the
/// first half of the tokens to the second.
pub fn constant_pair(vocab: usize, alpha: f64) -> Result<(Table, Table), InferError> {
    if vocab < 2 || !(0.0..=1.0).contains(&alpha) || vocab > 4096 {
        return Err(InferError::Pair {
            vocab: vocab as u64,
            alpha,
        });
    }
    let half = vocab / 2;
    let p: Vec<f64> = (0..vocab)
        .map(|i| if i < half { 1.0 / half as f64 } else { 0.0 })
        .collect();
    let moved = 1.0 - alpha;
    let rest = (vocab - half) as f64;
    let q: Vec<f64> = (0..vocab)
        .map(|i| {
            if i < half {
                alpha / half as f64
            } else {
                moved / rest
            }
        })
        .collect();
    Ok((Table::context_free(p, vocab), Table::context_free(q, vocab)))
}
