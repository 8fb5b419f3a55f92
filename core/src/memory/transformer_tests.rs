use super::*;

fn params(p: Preset) -> u64 {
    p.config().parameters().unwrap_or(0)
}

#[test]
fn presets_give_the_published_parameter_counts() {
    // GPT-2 small: 124,439,808 with tied embeddings and 1,024 positions.
    assert_eq!(params(Preset::Gpt2Small), 124_439_808);
    // GPT-3 175B: 174.6 B.
    assert_eq!(params(Preset::Gpt3), 174_604_259_328);
    assert_eq!(params(Preset::Llama7b), 6_738_415_616);
    // LLaMA-2-70B with grouped-query attention (8 KV heads): 68.98 B.
    assert_eq!(params(Preset::Llama2_70b), 68_976_648_192);
}

#[test]
fn kv_cache_per_token_in_fp16() {
    let kv = |p: Preset| p.config().kv_cache_per_token().unwrap_or(0);
    assert_eq!(kv(Preset::Llama7b), 512 * 1024);
    assert_eq!(kv(Preset::Llama2_70b), 320 * 1024);
    let run = TransformerRun::preset(Preset::Llama7b);
    let report = run.report().expect("valid preset");
    // 2,048 tokens of context: 1 GiB.
    assert_eq!(report.kv_cache_context, 1 << 30);
}

#[test]
fn gpt_layers_match_korthikanti_34_plus_5_a_s_over_h() {
    // 16-bit activations with dropout: s·b·h·(34 + 5·a·s/h) per layer.
    let m = Preset::Gpt3.config();
    let (s, b) = (2048u64, 2u64);
    let got = m.layer_activations(s, b, 2, false).unwrap_or(0);
    let want = s * b * m.hidden * 34 + 5 * m.heads * s * s * b;
    assert_eq!(got, want);
    // FlashAttention: the 5·a·s²·b score terms become 4·a·s·b of log-sum-exp.
    let flash = m.layer_activations(s, b, 2, true).unwrap_or(0);
    assert_eq!(flash, s * b * m.hidden * 34 + 4 * m.heads * s * b);
}

#[test]
fn the_flash_switch_swaps_the_score_terms_in_every_layer() {
    let mut run = TransformerRun::preset(Preset::Gpt3);
    run.seq = 2048;
    let plain = run.report().expect("valid");
    run.flash_attention = true;
    let flash = run.report().expect("valid");
    let (a, s) = (Preset::Gpt3.config().heads, 2048);
    assert_eq!(plain.scores_per_layer, 5 * a * s * s);
    assert_eq!(plain.lse_per_layer, 4 * a * s);
    assert_eq!(
        plain.activations - flash.activations,
        Preset::Gpt3.config().layers * (plain.scores_per_layer - plain.lse_per_layer)
    );
    assert_eq!(flash.scores_per_layer, plain.scores_per_layer);
}

#[test]
fn mixed_precision_adam_is_16_bytes_per_parameter_and_zero_shards_it() {
    let mut run = TransformerRun::preset(Preset::Llama7b);
    let n = params(Preset::Llama7b);
    let full = run.report().expect("valid").per_rank;
    assert_eq!(full.training_state(), 16 * n);
    run.ranks = 8;
    for zero in Zero::ALL {
        run.zero = zero;
        let c = run.report().expect("valid").per_rank;
        let shard = n.div_ceil(8);
        let expect = |sharded: bool, bytes: u64| if sharded { shard * bytes } else { n * bytes };
        let s = zero.stage();
        assert_eq!(c.get(Component::Parameters), expect(s >= 3, 2), "{zero:?}");
        assert_eq!(c.get(Component::Gradients), expect(s >= 2, 2), "{zero:?}");
        assert_eq!(
            c.get(Component::OptimizerState),
            expect(s >= 1, 8),
            "{zero:?}"
        );
        assert_eq!(
            c.get(Component::MasterWeights),
            expect(s >= 1, 4),
            "{zero:?}"
        );
    }
}

#[test]
fn llama_7b_counts_its_input_embedding_two_percent_above_kaplan() {
    let r = TransformerRun::preset(Preset::Llama7b)
        .report()
        .expect("valid");
    assert_eq!(r.lookup_parameters, 32_000 * 4096);
    let above = r.lookup_parameters as f64 / (r.parameters - r.lookup_parameters) as f64;
    assert!((0.015..0.025).contains(&above), "{above}");
}

#[test]
fn training_flops_are_six_n_t_plus_attention_and_eight_with_recomputation() {
    let run = TransformerRun::preset(Preset::Gpt2Small);
    let r = run.report().expect("valid");
    let t = 1024;
    assert_eq!(r.tokens, t);
    assert_eq!(r.flops_dense, 6 * r.parameters * t);
    assert_eq!(r.flops_attention, 12 * 12 * 1024 * 768 * t);
    assert_eq!(
        r.flops_recompute,
        8 * r.parameters * t + 16 * 12 * 1024 * 768 * t
    );
}

#[test]
fn checkpointing_keeps_far_fewer_activations() {
    let r = TransformerRun::preset(Preset::Llama7b)
        .report()
        .expect("valid");
    assert!(r.activations_checkpointed * 4 < r.activations, "{r:?}");
    assert!(r.activations_checkpointed > r.activations_per_layer);
}

#[test]
fn bad_shapes_are_errors_not_panics() {
    let mut m = Preset::Gpt2Small.config();
    m.layers = 0;
    assert!(matches!(m.parameters(), Err(MemoryError::Zero { .. })));
    let mut m = Preset::Gpt2Small.config();
    m.heads = 7;
    m.kv_heads = 7;
    assert!(matches!(
        m.parameters(),
        Err(MemoryError::HeadsDivide { .. })
    ));
    let mut m = Preset::Llama2_70b.config();
    m.kv_heads = 3;
    assert!(matches!(
        m.parameters(),
        Err(MemoryError::KvHeadsDivide { .. })
    ));
    let mut run = TransformerRun::preset(Preset::Gpt3);
    run.model.hidden = u64::MAX / 2;
    run.model.heads = 1;
    run.model.kv_heads = 1;
    assert!(matches!(run.report(), Err(MemoryError::Overflow { .. })));
    let mut run = TransformerRun::preset(Preset::Gpt3);
    run.batch = u64::MAX;
    assert!(matches!(run.report(), Err(MemoryError::Overflow { .. })));
    assert!(Zero::from_stage(4).is_err());
    let mut run = TransformerRun::preset(Preset::Gpt2Small);
    run.seq = 2048;
    assert!(matches!(
        run.report(),
        Err(MemoryError::SeqBeyondPositions { .. })
    ));
    let mut m = Preset::Gpt2Small.config();
    m.ffn_kind = FfnKind::SwiGlu;
    m.ffn = u64::MAX;
    assert!(matches!(m.parameters(), Err(MemoryError::Overflow { .. })));
    assert!(Preset::by_name("gpt-5").is_err());
}
