//! Speculative decoding on the engine: the character model [`generate`]
//! runs is the target, the text's bigram table the draft. Each round the
//! draft proposes up to k tokens, the target runs one pass over the
//! pending token and the proposals (appending their keys and values to its
//! KV cache), every proposal is checked by [`speculative::verdict`], and
//! the cache forgets the rejected ones. Timed against the target decoding
//! alone with its cache, on the same prompt with the same sampling.
//!
//! The draft's probabilities go through the same [`Sampling`] as the
//! target's (its log-probabilities taken as logits), so a greedy run
//! proposes the bigram's most likely token and keeps it exactly when it is
//! the target's argmax: the text is then the target's own greedy text.

use rand::SeedableRng as _;
use rand::rngs::StdRng;
use serde::Serialize;
use web_time::Instant;

use super::generate::{Sampling, check_request, forward, generate, new_cache};
use super::speculative::{self, MAX_K, Model as _, Resample, Table};
use super::{InferError, median};
use crate::float::show_sig;
use crate::memory::show_seconds;
use crate::nn::models::char_model::{CharModel, Corpus};

/// One target pass.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SpecRound {
    /// Proposals checked in it (k, or fewer where the text ends sooner).
    pub proposed: u32,
    pub kept: u32,
    /// The kept proposals, then the target's token (drawn after a
    /// rejection, or the bonus after k kept).
    pub emitted: Vec<usize>,
}

/// A speculative generation and the plain one it is timed against.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineSpec {
    pub k: u32,
    /// The first token, from the prefill (as in plain decoding).
    pub first: usize,
    pub rounds: Vec<SpecRound>,
    pub text: String,
    /// Proposals kept ÷ proposals checked (a rejection ends its round).
    pub alpha: f64,
    /// Tokens per target pass over the rounds with all k proposals.
    pub tokens_per_pass: f64,
    /// (1 − α^(k+1)) / (1 − α) at the measured α.
    pub formula: f64,
    /// Median seconds of the whole speculative generation (prefill
    /// included), and of the target alone with its cache.
    pub speculative_s: f64,
    pub plain_s: f64,
    /// plain ÷ speculative.
    pub speedup: f64,
    /// A draft proposal, and a target pass over k + 1 tokens, in plain
    /// decoding steps (medians).
    pub draft_cost: f64,
    pub pass_cost: f64,
    /// The formula ÷ (k·draft cost + pass cost): the speed-up these costs
    /// and this α predict.
    pub predicted_speedup: f64,
    /// [`speculative::best_k`] at the measured α and draft cost (a pass
    /// counted as one step, as the paper counts it).
    pub best_k: u32,
    pub best_speedup: f64,
    pub plain_text: String,
    /// Greedy only: whether the text is the target's own (it must be).
    pub same_as_plain: Option<bool>,
}

impl EngineSpec {
    /// Acceptance and tokens per pass, as the page and the CLI say them.
    pub fn rate_fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("k", self.k.to_string()),
            ("rounds", self.rounds.len().to_string()),
            ("alpha", format!("{:.3}", self.alpha)),
            ("measured", format!("{:.3}", self.tokens_per_pass)),
            ("formula", format!("{:.3}", self.formula)),
        ]
    }

    /// The wall clock and the costs that predict it.
    pub fn time_fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("repeats", REPEATS.to_string()),
            ("spec", show_seconds(self.speculative_s)),
            ("plain", show_seconds(self.plain_s)),
            ("speedup", format!("{:.2}", self.speedup)),
            ("c", show_sig(self.draft_cost, 2)),
            ("v", show_sig(self.pass_cost, 3)),
            ("predicted", format!("{:.2}", self.predicted_speedup)),
            ("best_k", self.best_k.to_string()),
            ("best", format!("{:.2}", self.best_speedup)),
        ]
    }
}

/// Times each generation is run; the medians are reported.
pub const REPEATS: usize = 5;

struct Once {
    first: usize,
    rounds: Vec<SpecRound>,
    ids: Vec<usize>,
    total_s: f64,
    draft_s: f64,
    pass_s: Vec<f64>,
}

/// The draft's distribution after `prev`, through the target's sampling.
fn draft_probabilities(draft: &Table, prev: usize, sampling: &Sampling) -> Vec<f64> {
    let logits: Vec<f32> = draft.next(prev).iter().map(|q| q.ln() as f32).collect();
    sampling.probabilities(&logits)
}

fn run_once(
    model: &CharModel,
    draft: &Table,
    mut ids: Vec<usize>,
    tokens: usize,
    k: u32,
    sampling: &Sampling,
) -> Result<Once, InferError> {
    let prompt_len = ids.len();
    let mut rng = StdRng::seed_from_u64(sampling.seed);
    let (mut rounds, mut pass_s, mut draft_s) = (Vec::new(), Vec::new(), 0.0);
    let started = Instant::now();
    let mut cache = new_cache(model);
    let prefill = forward(model, &mut cache, &ids)?;
    let first = sampling.pick(prefill.row(prefill.rows_cols().0 - 1), &mut rng);
    ids.push(first);
    while ids.len() - prompt_len < tokens {
        // Never more tokens than asked: a round emits up to k + 1.
        let proposed = (k as usize).min(tokens - (ids.len() - prompt_len) - 1);
        let drafting = Instant::now();
        let (mut proposals, mut qs) = (Vec::with_capacity(proposed), Vec::with_capacity(proposed));
        let mut prev = ids[ids.len() - 1];
        for _ in 0..proposed {
            let q = draft_probabilities(draft, prev, sampling);
            prev = speculative::sample(&q, &mut rng);
            proposals.push(prev);
            qs.push(q);
        }
        draft_s += drafting.elapsed().as_secs_f64();
        let passing = Instant::now();
        let kept_before = cache.tokens();
        let mut pass = vec![ids[ids.len() - 1]];
        pass.extend_from_slice(&proposals);
        let logits = forward(model, &mut cache, &pass)?;
        let mut kept = 0;
        let mut replaced = None;
        for (i, (&x, q)) in proposals.iter().zip(&qs).enumerate() {
            let p = sampling.probabilities(logits.row(i));
            match speculative::verdict(&p, q, x, Resample::Residual, &mut rng) {
                None => kept += 1,
                Some(y) => {
                    replaced = Some(y);
                    break;
                }
            }
        }
        let next = replaced.unwrap_or_else(|| sampling.pick(logits.row(proposed), &mut rng));
        // The pending token and the kept proposals stay cached; the new
        // token is the next pass's pending one.
        cache.truncate(kept_before + 1 + kept);
        pass_s.push(passing.elapsed().as_secs_f64());
        let mut emitted = proposals[..kept].to_vec();
        emitted.push(next);
        ids.extend_from_slice(&emitted);
        rounds.push(SpecRound {
            proposed: proposed as u32,
            kept: kept as u32,
            emitted,
        });
    }
    Ok(Once {
        first,
        rounds,
        ids,
        total_s: started.elapsed().as_secs_f64(),
        draft_s,
        pass_s,
    })
}

/// `tokens` tokens after `prompt`, speculated with `k` proposals a round,
/// and the same generation by the target alone; each run [`REPEATS`] times.
pub fn speculate(
    model: &CharModel,
    corpus: &Corpus,
    draft: &Table,
    prompt: &str,
    tokens: usize,
    k: u32,
    sampling: &Sampling,
) -> Result<EngineSpec, InferError> {
    if !(1..=MAX_K).contains(&k) {
        return Err(InferError::Proposals { k, max: MAX_K });
    }
    // The prefill's token and one whole round at least: something to time.
    let least = k as usize + 2;
    if tokens < least {
        return Err(InferError::SpecTokens { tokens, least });
    }
    let ids = check_request(corpus, prompt, tokens, model.config.context, sampling)?;
    assert_eq!(
        draft.vocab(),
        model.config.vocab,
        "a draft of another vocabulary (speculative::text_bigram)"
    );
    let (mut plain_s, mut plain_steps, mut spec_s) = (vec![], vec![], vec![]);
    let (mut passes, mut drafts) = (vec![], vec![]);
    let (mut plain, mut once) = (None, None);
    for _ in 0..REPEATS {
        // The whole call, as the speculative run is timed whole: its
        // sampling too, not only its forward passes.
        let started = Instant::now();
        let p = generate(model, corpus, prompt, tokens, true, sampling)?;
        plain_s.push(started.elapsed().as_secs_f64());
        plain_steps.push(p.median_step_s());
        let o = run_once(model, draft, ids.clone(), tokens, k, sampling)?;
        spec_s.push(o.total_s);
        // Whole rounds only: a pass over k + 1 tokens.
        let whole = o
            .pass_s
            .iter()
            .zip(&o.rounds)
            .filter(|(_, r)| r.proposed == k);
        passes.push(median(whole.map(|(s, _)| *s).collect()));
        let proposed: u32 = o.rounds.iter().map(|r| r.proposed).sum();
        drafts.push(o.draft_s / f64::from(proposed.max(1)));
        plain = Some(p);
        once = Some(o);
    }
    let (Some(plain), Some(once)) = (plain, once) else {
        unreachable!("REPEATS is at least 1")
    };
    let checked: u32 = once
        .rounds
        .iter()
        .map(|r| r.kept + u32::from(r.kept < r.proposed))
        .sum();
    let kept: u32 = once.rounds.iter().map(|r| r.kept).sum();
    let full: Vec<&SpecRound> = once.rounds.iter().filter(|r| r.proposed == k).collect();
    let alpha = f64::from(kept) / f64::from(checked.max(1));
    let step = median(plain_steps).max(f64::MIN_POSITIVE);
    let (speculative_s, plain_s) = (median(spec_s), median(plain_s));
    let text = corpus.decode(&once.ids[ids.len()..]);
    let formula = speculative::expected_tokens(alpha, k);
    let draft_cost = median(drafts) / step;
    let pass_cost = median(passes) / step;
    let (best_k, best_speedup) = speculative::best_k(alpha, draft_cost);
    Ok(EngineSpec {
        k,
        first: once.first,
        tokens_per_pass: full.iter().map(|r| r.emitted.len() as f64).sum::<f64>()
            / full.len().max(1) as f64,
        formula,
        alpha,
        speedup: plain_s / speculative_s.max(f64::MIN_POSITIVE),
        speculative_s,
        plain_s,
        draft_cost,
        pass_cost,
        predicted_speedup: formula / (f64::from(k) * draft_cost + pass_cost).max(f64::MIN_POSITIVE),
        best_k,
        best_speedup,
        same_as_plain: (sampling.temperature == 0.0).then(|| text == plain.text),
        plain_text: plain.text,
        rounds: once.rounds,
        text,
    })
}
