//! Generation with the engine's model: the row-wise forward against the
//! engine's graph, cached against recomputed decoding, sampling, bad prompts.

use super::InferError;
use super::generate::{Sampling, forward, generate, new_cache};
use crate::autograd::{Graph, Var};
use crate::memory::transformer::kv_cache_bytes;
use crate::nn::models::char_model::{CharConfig, CharModel, Corpus, shipped_config};

/// The bound on |logit| differences between the row-wise forward and
/// the engine's graph, and between cached and recomputed decoding: f32
/// sums taken in another order, over rows of width 32 to 128.
const BOUND: f32 = 1e-4;

fn model(context: usize) -> (Corpus, CharModel) {
    let corpus = Corpus::shipped();
    let config = CharConfig {
        context,
        ..shipped_config(&corpus)
    };
    (corpus, CharModel::new(config, 7))
}

#[test]
fn the_row_wise_forward_is_the_engines_forward() {
    let (corpus, model) = model(48);
    let ids = &corpus.ids[..48];
    let mut g = Graph::new();
    let leaves: Vec<Var> = model.params().iter().map(|t| g.input(t.clone())).collect();
    let (logits, _) = model.forward(&mut g, &leaves, ids);
    let engine = g.value(logits).into_owned();
    let ours = forward(&model, &mut new_cache(&model), ids).unwrap();
    assert_eq!(engine.shape, ours.shape);
    let worst = crate::autograd::max_abs_diff(&engine.data, &ours.data);
    assert!(worst <= BOUND, "{worst}");
    // In two pieces, the second attending to the first's cache: the same.
    let mut cache = new_cache(&model);
    forward(&model, &mut cache, &ids[..30]).unwrap();
    let tail = forward(&model, &mut cache, &ids[30..]).unwrap();
    let worst = crate::autograd::max_abs_diff(&tail.data, &ours.data[30 * ours.shape[1]..]);
    assert!(worst <= BOUND, "{worst}");
}

#[test]
fn decoding_with_the_cache_equals_decoding_without_it() {
    let (corpus, model) = model(64);
    let (prompt, tokens) = ("Attention ", 40);
    let sampled = Sampling {
        temperature: 0.8,
        top_k: 20,
        top_p: 0.95,
        seed: 3,
    };
    for sampling in [Sampling::default(), sampled] {
        let with = generate(&model, &corpus, prompt, tokens, true, &sampling).unwrap();
        let without = generate(&model, &corpus, prompt, tokens, false, &sampling).unwrap();
        assert_eq!((with.logits.len(), with.step_s.len()), (tokens, tokens - 1));
        let (a, b): (Vec<char>, Vec<char>) =
            (with.text.chars().collect(), without.text.chars().collect());
        for (i, (x, y)) in with.logits.iter().zip(&without.logits).enumerate() {
            let worst = crate::autograd::max_abs_diff(x, y);
            assert!(worst <= BOUND, "step {i}: {worst}");
            let mut sorted = x.clone();
            sorted.sort_by(|p, q| q.total_cmp(p));
            if a[i] != b[i] {
                // Greedy: only a near tie may pick another token; after
                // it the texts part. Sampled, the same draws on logits
                // this close pick the same tokens with this seed.
                assert!(
                    sampling.temperature == 0.0 && sorted[0] - sorted[1] <= 2.0 * BOUND,
                    "step {i}"
                );
                break;
            }
        }
        // The cache holds the prompt's and every step's K and V: the
        // memory calculator's formula for one layer in f32.
        let cached = prompt.len() + tokens - 1;
        let config = model.config;
        let expect = kv_cache_bytes(
            1,
            config.heads as u64,
            (config.width / config.heads) as u64,
            cached as u64,
            4,
        )
        .unwrap();
        assert_eq!(with.cache_bytes, expect);
        assert_eq!(with.cache_tokens, cached);
        assert_eq!(without.cache_bytes, 0);
    }
}

#[test]
fn sampling_follows_the_softmax_at_its_temperature_cut_to_top_k_and_top_p() {
    use rand::SeedableRng as _;
    let logits = [2.0f32, 1.0, 0.5, -1.0, 0.0];
    let soft = |t: f64| -> Vec<f64> {
        let w: Vec<f64> = logits.iter().map(|v| (f64::from(*v) / t).exp()).collect();
        let s: f64 = w.iter().sum();
        w.iter().map(|x| x / s).collect()
    };
    let s = Sampling {
        temperature: 1.0,
        ..Sampling::default()
    };
    let p = s.probabilities(&logits);
    assert!(p.iter().zip(soft(1.0)).all(|(a, b)| (a - b).abs() < 1e-12));
    // Drawn 20,000 times, each token within 4 standard errors of its probability.
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let n = 20_000;
    let mut counts = [0usize; 5];
    for _ in 0..n {
        counts[s.pick(&logits, &mut rng)] += 1;
    }
    for (c, q) in counts.iter().zip(&p) {
        let se = (q * (1.0 - q) / n as f64).sqrt();
        assert!(
            (*c as f64 / n as f64 - q).abs() < 4.0 * se + 1e-9,
            "{counts:?} vs {p:?}"
        );
    }
    // Hotter is flatter; top-k keeps k; top-p keeps the fewest reaching p.
    let hot = Sampling {
        temperature: 2.0,
        ..s
    }
    .probabilities(&logits);
    assert!(
        hot.iter()
            .zip(soft(2.0))
            .all(|(a, b)| (a - b).abs() < 1e-12)
    );
    let k2 = Sampling { top_k: 2, ..s }.probabilities(&logits);
    assert_eq!(k2.iter().filter(|p| **p > 0.0).count(), 2);
    assert!((k2[0] - p[0] / (p[0] + p[1])).abs() < 1e-12);
    let nucleus = Sampling {
        top_p: p[0] + 1e-9,
        ..s
    }
    .probabilities(&logits);
    assert_eq!(
        nucleus.iter().filter(|p| **p > 0.0).count(),
        2,
        "{nucleus:?}"
    );
    // Top-p counts the mass top-k kept: of the top 3 (renormalised) the
    // first two reach 0.8 here, where over all five they would not.
    let both = Sampling {
        top_k: 3,
        top_p: 0.8,
        ..s
    }
    .probabilities(&logits);
    let top3 = p[0] + p[1] + p[2];
    assert!((p[0] + p[1]) / top3 >= 0.8 && p[0] + p[1] < 0.8, "{p:?}");
    assert_eq!(both.iter().filter(|p| **p > 0.0).count(), 2, "{both:?}");
    let first = Sampling { top_p: 0.1, ..s }.probabilities(&logits);
    assert_eq!(first, vec![1.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(Sampling::default().pick(&logits, &mut rng), 0);
    assert!(
        Sampling {
            temperature: -1.0,
            ..s
        }
        .validate()
        .is_err()
    );
    assert!(Sampling { top_p: 0.0, ..s }.validate().is_err());
    assert!(
        Sampling {
            top_p: f64::NAN,
            ..s
        }
        .validate()
        .is_err()
    );
}

#[test]
fn bad_prompts_are_refused_with_the_reason() {
    let (corpus, model) = model(32);
    let refused = |prompt: &str, tokens| {
        generate(&model, &corpus, prompt, tokens, true, &Sampling::default()).unwrap_err()
    };
    assert!(matches!(refused("", 4), InferError::EmptyPrompt));
    assert!(matches!(
        refused("naïve €", 4),
        InferError::Character { .. }
    ));
    assert!(matches!(
        refused("Attention ", 30),
        InferError::Continuation { .. }
    ));
    assert!(matches!(
        refused("Attention ", 0),
        InferError::Continuation { .. }
    ));
    assert!(matches!(
        forward(&model, &mut new_cache(&model), &[0; 33]),
        Err(InferError::PastContext { .. })
    ));
    assert!(matches!(
        forward(&model, &mut new_cache(&model), &[9999]),
        Err(InferError::UnknownToken { .. })
    ));
}

#[test]
fn greedy_speculation_on_the_engine_writes_the_targets_own_text() {
    use super::spec_run::speculate;
    use super::speculative::text_bigram;
    let (corpus, model) = model(96);
    let draft = text_bigram(&corpus);
    let plain = generate(&model, &corpus, "the ", 60, true, &Sampling::default()).unwrap();
    for k in [1, 3, 8, super::speculative::MAX_K] {
        let run = speculate(&model, &corpus, &draft, "the ", 60, k, &Sampling::default()).unwrap();
        assert_eq!(run.same_as_plain, Some(true), "k = {k}");
        assert_eq!(run.text, plain.text);
        // Every round emits what it kept and one more; the prefill the first.
        let emitted: usize = run.rounds.iter().map(|r| r.emitted.len()).sum();
        assert_eq!(emitted + 1, 60);
        assert!(
            run.rounds
                .iter()
                .all(|r| r.emitted.len() == r.kept as usize + 1
                    && r.kept <= r.proposed
                    && r.proposed <= k)
        );
        // Both outcomes happen, so the cache was cut back and kept whole.
        let kept: u32 = run.rounds.iter().map(|r| r.kept).sum();
        assert!(
            kept > 0 && run.rounds.iter().any(|r| r.kept < r.proposed),
            "k = {k}: {:?}",
            run.rounds
        );
        assert!((0.0..=1.0).contains(&run.alpha) && run.speedup > 0.0);
    }
}

#[test]
fn sampled_speculation_on_the_engine_emits_what_was_asked_and_refuses_bad_k() {
    use super::spec_run::speculate;
    use super::speculative::text_bigram;
    let (corpus, model) = model(64);
    let draft = text_bigram(&corpus);
    let sampling = Sampling {
        temperature: 1.0,
        seed: 5,
        ..Sampling::default()
    };
    let run = speculate(&model, &corpus, &draft, "a", 50, 4, &sampling).unwrap();
    assert_eq!(run.text.chars().count(), 50);
    assert_eq!(run.same_as_plain, None);
    assert!(run.rounds.iter().any(|r| r.kept > 0));
    for k in [0, super::speculative::MAX_K + 1] {
        assert!(matches!(
            speculate(&model, &corpus, &draft, "a", 50, k, &sampling),
            Err(InferError::Proposals { .. })
        ));
    }
    assert!(matches!(
        speculate(&model, &corpus, &draft, "a", 64, 4, &sampling),
        Err(InferError::Continuation { .. })
    ));
    // The prefill's token and one whole round of 4: 6 at least.
    assert!(matches!(
        speculate(&model, &corpus, &draft, "a", 5, 4, &sampling),
        Err(InferError::SpecTokens { least: 6, .. })
    ));
    assert!(speculate(&model, &corpus, &draft, "a", 6, 4, &sampling).is_ok());
}

#[test]
fn a_few_rows_project_bit_for_bit_as_one_row_does() {
    use super::generate::{SKINNY_ROWS, project};
    use crate::autograd::Tensor;
    // k = 6 rows of w: one block of four, then two one by one.
    let (k, n) = (6, 5);
    let w = Tensor::new(
        (0..k * n)
            .map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.37)
            .collect(),
        &[k, n],
    );
    for rows in [2, 5, SKINNY_ROWS, SKINNY_ROWS + 1] {
        let x = Tensor::new(
            (0..rows * k)
                .map(|i| ((i * 3 % 13) as f32 - 6.0) * 0.11)
                .collect(),
            &[rows, k],
        );
        let all = project(&x, &w);
        for r in 0..rows {
            let one = project(&Tensor::new(x.row(r).to_vec(), &[1, k]), &w);
            let exact = all.row(r) == one.data.as_slice();
            // Past SKINNY_ROWS the GEMM runs: the same up to rounding.
            let close = all
                .row(r)
                .iter()
                .zip(&one.data)
                .all(|(a, b)| (a - b).abs() < 1e-5);
            assert!(
                if rows <= SKINNY_ROWS { exact } else { close },
                "{rows} rows, row {r}"
            );
        }
    }
}
