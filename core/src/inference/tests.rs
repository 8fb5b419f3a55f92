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
    assert_eq!(r.kv_per_token, 524_288);
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

mod batching {
    use super::super::InferError;
    use super::super::batching::{
        BatchingSettings, Scheme, padding_slots, simulate, sweep, sweep_rates,
    };
    use super::super::calc::{DevicePreset, ServeSettings, StepCost, serve};
    use crate::memory::transformer::Preset;

    fn llama_h100() -> ServeSettings {
        ServeSettings::preset(Preset::Llama7b, DevicePreset::H100)
    }

    #[test]
    fn a_step_costs_what_the_calculator_says() {
        let s = ServeSettings {
            batch: 4,
            ..llama_h100()
        };
        let r = serve(&s).unwrap();
        let cost = StepCost::new(&s).unwrap();
        let p = s.prompt as f64;
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
        let prefill = cost.prefill(p, p * p);
        let decode = cost.decode(4.0, 4.0 * s.context as f64);
        for (a, b) in [
            (prefill.flops, r.prefill.flops),
            (prefill.bytes, r.prefill.bytes),
            (decode.flops, r.decode.flops),
            (decode.bytes, r.decode.bytes),
        ] {
            assert!(close(a, b), "{a} vs {b}");
        }
        assert_eq!(decode.bound, r.decode.bound);
    }

    #[test]
    fn one_request_alone_takes_its_prefill_and_its_decode_steps_in_both_schemes() {
        let s = BatchingSettings {
            requests: 1,
            ..BatchingSettings::new(llama_h100(), 1.0)
        };
        let r = s.draw()[0];
        let cost = StepCost::new(&llama_h100()).unwrap();
        let p = r.prompt as f64;
        let ttft = cost.prefill(p, p * p).seconds;
        let decode: f64 = (0..r.output - 1)
            .map(|i| cost.decode(1.0, p + 1.0 + i as f64).seconds)
            .sum();
        for scheme in Scheme::ALL {
            let run = simulate(&s, scheme).unwrap();
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
            assert!(
                close(run.ttft_p50, ttft),
                "{scheme:?}: {} vs {ttft}",
                run.ttft_p50
            );
            assert!(close(run.e2e_p99, ttft + decode), "{scheme:?}");
            assert!(close(run.throughput * run.makespan, r.output as f64));
            assert_eq!(run.padding_share, 0.0);
        }
    }

    #[test]
    fn continuous_batching_serves_more_and_pads_nothing_when_requests_crowd_in() {
        let s = BatchingSettings::new(llama_h100(), 200.0);
        let st = simulate(&s, Scheme::Static).unwrap();
        let co = simulate(&s, Scheme::Continuous).unwrap();
        assert!(st.padding_share > 0.2, "static pads: {}", st.padding_share);
        assert_eq!(co.padding_share, 0.0);
        assert!(
            co.throughput > 1.2 * st.throughput,
            "{} vs {}",
            co.throughput,
            st.throughput
        );
        assert!(co.e2e_p50 < st.e2e_p50);
        assert!(co.mean_batch <= f64::from(s.max_batch));
        // At a trickle, a static batch waits for company; continuous does not.
        let slow = BatchingSettings::new(llama_h100(), 0.2);
        let st = simulate(&slow, Scheme::Static).unwrap();
        let co = simulate(&slow, Scheme::Continuous).unwrap();
        assert!(
            st.ttft_p50 > co.ttft_p50 + 1.0,
            "{} vs {}",
            st.ttft_p50,
            co.ttft_p50
        );
    }

    #[test]
    fn arrivals_are_poisson_at_the_rate_and_the_same_requests_at_every_rate() {
        let s = BatchingSettings {
            requests: 5000,
            ..BatchingSettings::new(llama_h100(), 4.0)
        };
        let a = s.draw();
        let mean_gap = a[a.len() - 1].arrival / a.len() as f64;
        assert!((mean_gap * 4.0 - 1.0).abs() < 0.05, "mean gap {mean_gap}");
        let b = BatchingSettings {
            rate: 8.0,
            ..s.clone()
        }
        .draw();
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| (x.prompt, x.output) == (y.prompt, y.output))
        );
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| (x.arrival - 2.0 * y.arrival).abs() < 1e-9 * x.arrival.max(1.0))
        );
        let s = BatchingSettings::new(llama_h100(), 1.0);
        let rates = sweep_rates(&s).unwrap();
        let points = sweep(&s, &rates).unwrap();
        // Throughput grows with the rate until the server saturates; past
        // the rough capacity continuous batching serves more than static.
        assert!(
            points[..5]
                .windows(2)
                .all(|w| w[1].continuous.throughput > w[0].continuous.throughput)
        );
        let last = &points[points.len() - 1];
        assert!(last.continuous.throughput > last.static_run.throughput);
        assert_eq!(padding_slots(&[3, 10, 7]), 7 + 3);
        assert_eq!(padding_slots(&[]), 0);
    }

    #[test]
    fn bad_batching_settings_are_refused_with_the_reason() {
        let ok = BatchingSettings::new(llama_h100(), 1.0);
        let refused = |s: BatchingSettings| simulate(&s, Scheme::Continuous).unwrap_err();
        assert!(matches!(
            refused(BatchingSettings {
                rate: 0.0,
                ..ok.clone()
            }),
            InferError::Rate { .. }
        ));
        assert!(matches!(
            refused(BatchingSettings {
                rate: f64::NAN,
                ..ok.clone()
            }),
            InferError::Rate { .. }
        ));
        assert!(matches!(
            refused(BatchingSettings {
                max_batch: 0,
                ..ok.clone()
            }),
            InferError::MaxBatch { .. }
        ));
        assert!(matches!(
            refused(BatchingSettings {
                output: (0, 4),
                ..ok.clone()
            }),
            InferError::OutputLengths { .. }
        ));
        assert!(matches!(
            refused(BatchingSettings {
                max_wait_s: -1.0,
                ..ok.clone()
            }),
            InferError::MaxWait { .. }
        ));
        let big = BatchingSettings {
            max_batch: 1024,
            output: (16, 4096),
            ..ok.clone()
        };
        assert!(matches!(refused(big), InferError::BatchMemory { .. }));
        assert!(matches!(sweep(&ok, &[]), Err(InferError::Rates { .. })));
    }
}

mod generation {
    use super::super::InferError;
    use super::super::generate::{Cache, Sampling, forward, generate};
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
        let ours = forward(&model, &mut Cache::default(), ids).unwrap();
        assert_eq!(engine.shape, ours.shape);
        let worst = engine
            .data
            .iter()
            .zip(&ours.data)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(worst <= BOUND, "{worst}");
        // In two pieces, the second attending to the first's cache: the same.
        let mut cache = Cache::default();
        forward(&model, &mut cache, &ids[..30]).unwrap();
        let tail = forward(&model, &mut cache, &ids[30..]).unwrap();
        let worst = tail
            .data
            .iter()
            .zip(&ours.data[30 * ours.shape[1]..])
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
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
                let worst = x
                    .iter()
                    .zip(y)
                    .map(|(p, q)| (p - q).abs())
                    .fold(0.0, f32::max);
                assert!(worst <= BOUND, "step {i}: {worst}");
                let mut sorted = x.clone();
                sorted.sort_by(|p, q| q.total_cmp(p));
                if a[i] != b[i] {
                    // Only a near tie may pick another token; after it the texts part.
                    assert!(sorted[0] - sorted[1] <= 2.0 * BOUND, "step {i}");
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
            forward(&model, &mut Cache::default(), &[0; 33]),
            Err(InferError::PastContext { .. })
        ));
        assert!(matches!(
            forward(&model, &mut Cache::default(), &[9999]),
            Err(InferError::UnknownToken { .. })
        ));
    }
}
