use rand::{RngExt as _, SeedableRng as _};

use super::InferError;
use super::calc::{Bound, DevicePreset, ServeSettings, serve, tokens_per_s_by_batch};
use super::paged::{Appended, PagedCache, StreamSettings, run_stream};
use super::speculative::{
    Model as _, SpecSettings, acceptance, constant_pair, expected_tokens, measure, text_context,
    text_pair,
};
use crate::memory::transformer::Preset;

#[test]
fn the_calculator_follows_the_shapes_and_the_datasheet() {
    let s = ServeSettings::preset(Preset::Llama7b, DevicePreset::H100);
    let r = serve(&s).unwrap_or_else(|e| panic!("{e}"));
    // 2 (K and V) · 32 layers · 32 heads · 128 dims · 2 bytes.
    assert_eq!(r.kv_per_token, 524_288.0);
    assert_eq!(r.weight_bytes, 2.0 * r.parameters as f64);
    // One sequence decodes memory-bound; the ridge is peak · 2 B ÷ (2 · bandwidth).
    assert_eq!(r.decode.bound, Bound::Memory);
    assert!((r.ridge_batch - 989e12 * 2.0 / (2.0 * 3350e9)).abs() < 1e-9);
    assert!((r.ridge_intensity - 989e12 / 3350e9).abs() < 1e-9);
    // Without GQA attention over the cache does 2 FLOPs per fp16 byte... ÷ 2 bytes: 1.
    assert_eq!(r.attention_intensity, 1.0);
    let g = serve(&ServeSettings::preset(
        Preset::Llama2_70b,
        DevicePreset::H100,
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(g.attention_intensity, 8.0);
    // A 512-token prefill: 2·N per token plus attention over the prompt.
    let attention = 4.0 * 32.0 * 512.0 * 4096.0 * 512.0;
    assert_eq!(
        r.prefill.flops,
        512.0 * 2.0 * r.parameters as f64 + attention
    );
    assert_eq!(r.prefill.bound, Bound::Compute);
    // The fp16 weights (13.5 GB) leave room for this many 1,024-token caches.
    let fit = ((80e9 - r.weight_bytes) / (1024.0 * 524_288.0)).floor() as u64;
    assert_eq!(r.sequences_fit, fit);
    // An int4 cache: a quarter of the bytes a token plus an fp16 scale per
    // 128-value head vector of K and of V (2 · 32 layers · 32 heads · 2 B),
    // four times the attention's intensity, about four times the
    // sequences that fit.
    let q = serve(&ServeSettings {
        kv: crate::quant::KvElement::Int4,
        ..s.clone()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(q.kv_per_token, 524_288.0 / 4.0 + 4096.0);
    assert_eq!(q.attention_intensity, 4.0);
    let fit4 = ((80e9 - r.weight_bytes) / (1024.0 * 135_168.0)).floor() as u64;
    assert_eq!(q.sequences_fit, fit4);
    assert!(q.decode.bytes < r.decode.bytes);
}

#[test]
fn decoding_sits_on_the_lower_roof_and_turns_compute_bound_past_the_ridge() {
    let mut s = ServeSettings::preset(Preset::Llama7b, DevicePreset::A100);
    // A short context, so the weights dominate the bytes.
    s.context = 16;
    let batches: Vec<u64> = (0..12).map(|i| 1 << i).collect();
    let points = tokens_per_s_by_batch(&s, &batches).unwrap_or_else(|e| panic!("{e}"));
    let ridge = serve(&s).map(|r| r.ridge_batch).unwrap_or(f64::NAN);
    for p in points {
        // The rate is the lower roof, and the bound says which one.
        let lower = p.compute_only.min(p.memory_only);
        assert!((p.tokens_per_s - lower).abs() <= 1e-9 * lower, "{p:?}");
        let expected = if p.memory_only < p.compute_only {
            Bound::Memory
        } else {
            Bound::Compute
        };
        assert_eq!(p.bound, expected, "{p:?}");
        // The bandwidth bound the calculator reports is the memory roof.
        let r = serve(&ServeSettings {
            batch: p.batch,
            ..s.clone()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert!((r.bandwidth_bound_tokens_per_s - p.memory_only).abs() <= 1e-9 * p.memory_only);
        if (p.batch as f64) < 0.8 * ridge {
            assert_eq!(p.bound, Bound::Memory, "{p:?}");
        }
        if (p.batch as f64) > 1.3 * ridge {
            assert_eq!(p.bound, Bound::Compute, "{p:?}");
        }
    }
}

#[test]
fn bad_serving_settings_are_refused_with_the_limit() {
    let good = ServeSettings::preset(Preset::Gpt2Small, DevicePreset::Rtx4090);
    let mut s = good.clone();
    s.batch = 0;
    assert!(matches!(serve(&s), Err(InferError::Batch { value: 0, .. })));
    s = good.clone();
    s.device.bandwidth_gb_s = f64::NAN;
    assert!(matches!(serve(&s), Err(InferError::Bandwidth { .. })));
    s = good.clone();
    s.weight_bytes = 3.0;
    assert!(matches!(serve(&s), Err(InferError::WeightBytes { .. })));
    s = good.clone();
    s.context = u64::MAX;
    assert!(matches!(serve(&s), Err(InferError::Context { .. })));
    assert!(DevicePreset::by_name("H100-SXM").is_ok());
    assert!(matches!(
        DevicePreset::by_name("tpu"),
        Err(InferError::UnknownDevice { .. })
    ));
}

#[test]
fn the_block_pool_never_gives_a_block_twice_and_frees_everything() {
    for seed in 0..40u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let block_tokens = rng.random_range(1..=8);
        let mut cache = PagedCache::new(rng.random_range(4..=40), block_tokens);
        let mut live: Vec<u32> = Vec::new();
        for _ in 0..400 {
            match rng.random_range(0..10) {
                0 | 1 => {
                    if let Some(id) = cache.add(rng.random_range(1..=20)) {
                        live.push(id);
                    }
                }
                2 if !live.is_empty() => {
                    let parent = live[rng.random_range(0..live.len())];
                    if let Some(id) = cache.fork(parent) {
                        live.push(id);
                    }
                }
                3 if !live.is_empty() => {
                    let id = live.swap_remove(rng.random_range(0..live.len()));
                    cache.free(id);
                }
                _ if !live.is_empty() => {
                    let id = live[rng.random_range(0..live.len())];
                    let _ = cache.append(id);
                }
                _ => {}
            }
            if let Err(e) = cache.check() {
                panic!("seed {seed}: {e}");
            }
        }
        for id in live {
            cache.free(id);
        }
        assert_eq!(
            cache.pool().free_blocks(),
            cache.pool().blocks(),
            "seed {seed}"
        );
        assert_eq!(cache.reserved_tokens(), 0);
    }
}

#[test]
fn a_shared_block_is_copied_exactly_when_it_is_written() {
    let mut cache = PagedCache::new(16, 4);
    // A 6-token prompt: one full block and one with 2 of 4 tokens.
    let a = cache.add(6).unwrap_or(u32::MAX);
    let b = cache.fork(a).unwrap_or(u32::MAX);
    assert_eq!(cache.pool().free_blocks(), 14);
    // Writing into the shared, half-full block copies it, once per writer
    // while it is shared; the full block stays shared.
    assert_eq!(cache.append(a), Ok(Appended::Copied));
    assert_eq!(cache.copies, 1);
    assert_eq!(cache.append(a), Ok(Appended::InPlace));
    assert_eq!(cache.append(b), Ok(Appended::InPlace));
    assert_eq!(cache.copies, 1);
    let (ta, tb) = (
        cache.sequence(a).map(|s| s.table.clone()),
        cache.sequence(b).map(|s| s.table.clone()),
    );
    let (ta, tb) = (ta.unwrap_or_default(), tb.unwrap_or_default());
    assert_eq!(ta[0], tb[0]);
    assert_ne!(ta[1], tb[1]);
    // A shared full block is never written: the next token takes a new block.
    let c = cache.add(4).unwrap_or(u32::MAX);
    let d = cache.fork(c).unwrap_or(u32::MAX);
    assert_eq!(cache.append(d), Ok(Appended::NewBlock));
    assert_eq!(cache.copies, 1);
    assert!(cache.check().is_ok());
    // No free block: the append is refused and nothing changes.
    let mut tiny = PagedCache::new(1, 2);
    let e = tiny.add(2).unwrap_or(u32::MAX);
    assert_eq!(tiny.append(e), Err(()));
    assert_eq!(tiny.sequence(e).map(|s| s.tokens), Some(2));
}

#[test]
fn paging_wastes_a_block_per_sequence_at_most_where_reservation_wastes_most() {
    let s = StreamSettings::default();
    let r = run_stream(&s).unwrap_or_else(|e| panic!("{e}"));
    let (c, p) = (&r.contiguous, &r.paged);
    // Contiguous: 2,048 reserved for requests that average ~530 tokens at the end.
    assert!(c.waste() > 0.6, "{}", c.waste());
    // Paged: only the last block of each sequence is partly empty.
    let blocks_worth = p
        .running
        .iter()
        .zip(&p.reserved)
        .filter(|(_, r)| **r > 0)
        .map(|(n, r)| f64::from(*n) * f64::from(s.block_tokens) / *r as f64)
        .fold(0.0, f64::max);
    assert!(p.waste() <= blocks_worth, "{} {blocks_worth}", p.waste());
    assert!(p.waste() < 0.05, "{}", p.waste());
    assert!(p.peak_running() > 2 * c.peak_running());
    assert_eq!(c.finished, s.requests);
    assert_eq!(p.finished, s.requests);
    assert!(p.steps < c.steps);
    // Bad streams are refused with the limit.
    let bad = StreamSettings {
        prompt: (600, 500),
        ..s
    };
    assert!(matches!(
        run_stream(&bad),
        Err(InferError::PromptLengths { .. })
    ));
    let long = StreamSettings {
        output: (16, 1800),
        ..s
    };
    assert!(matches!(
        run_stream(&long),
        Err(InferError::Longest { longest: 2312, .. })
    ));
    let small = StreamSettings {
        memory_tokens: 1000,
        ..s
    };
    assert!(matches!(run_stream(&small), Err(InferError::Memory { .. })));
}

#[test]
fn speculative_sampling_is_exact_and_the_q_resampler_is_caught() {
    let corpus = crate::nn::models::char_model::Corpus::shipped();
    let (target, draft) = text_pair(&corpus);
    // After a space: the target's next-letter distribution is far from the draft's.
    let context = text_context(&corpus);
    let s = SpecSettings {
        k: 4,
        rounds: 20_000,
        seed: 3,
    };
    let r = measure(&target, &draft, context, &s).unwrap_or_else(|e| panic!("{e}"));
    assert!(r.exact.passes(), "{:?}", r.exact);
    assert!(!r.wrong.passes(), "{:?}", r.wrong);
    assert!(r.alpha > 0.05 && r.alpha < 0.95, "{}", r.alpha);
    assert!(r.tokens_per_pass >= 1.0 && r.tokens_per_pass <= f64::from(s.k) + 1.0);
    assert!(matches!(
        measure(&target, &draft, context, &SpecSettings { k: 0, ..s }),
        Err(InferError::Proposals { .. })
    ));
}

#[test]
fn tokens_per_pass_follow_the_formula_when_acceptances_are_independent() {
    for (alpha, k) in [(0.5, 4), (0.8, 3), (0.9, 8), (0.3, 2)] {
        let (p, q) = constant_pair(8, alpha).unwrap_or_else(|e| panic!("{e}"));
        assert!((acceptance(p.next(0), q.next(0)) - alpha).abs() < 1e-12);
        let r = measure(
            &p,
            &q,
            0,
            &SpecSettings {
                k,
                rounds: 20_000,
                seed: 7,
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let formula = expected_tokens(alpha, k);
        assert!(
            (r.tokens_per_pass - formula).abs() < 4.0 * r.standard_error,
            "α {alpha} k {k}: {} vs {formula} ± {}",
            r.tokens_per_pass,
            r.standard_error
        );
        assert!((r.alpha - alpha).abs() < 0.02, "{} {alpha}", r.alpha);
        assert!(r.exact.passes(), "{alpha} {k}: {:?}", r.exact);
    }
    assert_eq!(expected_tokens(1.0, 4), 5.0);
    assert_eq!(expected_tokens(0.0, 4), 1.0);
}

#[test]
fn the_best_k_weighs_tokens_per_pass_against_the_drafts_cost() {
    use super::speculative::{MAX_K, best_k, speedup};
    // α = 0.7, a draft step a tenth of a target step: k = 4 gives
    // (1 − 0.7⁵) / 0.3 / 1.4 = 1.981, above k = 3 (1.948) and k = 5 (1.961).
    let (k, s) = best_k(0.7, 0.1);
    assert_eq!(k, 4);
    assert!((s - 1.980_7).abs() < 1e-3, "{s}");
    assert!(speedup(0.7, 3, 0.1) < s && speedup(0.7, 5, 0.1) < s);
    // A free draft: the more proposals the better; a useless one: k = 1,
    // slower than plain decoding.
    assert_eq!(best_k(0.5, 0.0).0, MAX_K);
    let (k, s) = best_k(0.0, 0.2);
    assert_eq!(k, 1);
    assert!((s - 1.0 / 1.2).abs() < 1e-12);
}

#[test]
fn one_sequence_fills_its_blocks_in_order() {
    use super::paged::one_sequence;
    // 10 prompt tokens and 30 generated: 40 in blocks of 16 → 16, 16, 8.
    let blocks = one_sequence(10, 30, 16);
    assert_eq!(
        blocks.iter().map(|b| b.1).collect::<Vec<_>>(),
        vec![16, 16, 8]
    );
    let mut ids: Vec<u32> = blocks.iter().map(|b| b.0).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "a block given twice: {blocks:?}");
    assert_eq!(one_sequence(16, 0, 16), vec![(blocks[0].0, 16)]);
    // No prompt: the first generated token takes the first block.
    assert_eq!(
        one_sequence(0, 5, 16)
            .iter()
            .map(|b| b.1)
            .collect::<Vec<_>>(),
        vec![5]
    );
    assert!(one_sequence(u64::MAX, 1, 16).is_empty());
}
