use super::*;

fn find(report: &PlanReport, tp: u64, pp: u64) -> &Plan {
    report
        .plans
        .iter()
        .find(|p| p.tp == tp && p.pp == pp)
        .expect("the factorisation")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
}

/// Llama 2 70B on 64 DGX H100 GPUs, global batch 1,024 × 4,096 tokens,
/// micro-batch 1, full recomputation, sequence parallelism, ZeRO-1, 50 %
/// of peak, TP 8 × PP 4 × DP 2, worked by hand:
/// - N = 68,976,648,192; per GPU N/32 = 2,155,520,256 parameters: weights
///   and gradients 2 bytes each, 4,311,040,512 B; Adam's 12 bytes over DP
///   2: 12,933,121,536 B.
/// - Activations: the layer's input split over TP by sequence parallelism,
///   2·s·b·h/8 = 2 · 4,096 · 8,192 / 8 = 8,388,608 B a layer; the first
///   stage holds 4 micro-batches of its 20 layers: 671,088,640 B.
///   Total 22,226,291,200 B (20.7 GiB) of the 72 GiB (90 % of 80) a plan
///   may use.
/// - Compute: 8·N·T with T = 4,194,304 tokens, over 64 × 989e12 × 0.5:
///   73.1317 s; bubble 3/512 of it, 0.428506 s.
/// - TP: 20 layers × 512 micro-batches × 6 all-reduces of 64 MiB, each
///   2·7/8 · 64 MiB / 450 GB/s plus 14 × 3 µs: 18.6150 s.
/// - PP: 2 × 512 × (10 µs + 64 MiB / 50 GB/s): 1.38463 s.
/// - DP: 2·1/2 · 4,311,040,512 B / 50 GB/s plus 2 × 10 µs: 0.0862408 s,
///   hidden behind the backward (6/8 of the compute).
/// - Step 93.5599 s: 44,830 tokens/s, MFU 29.3 %, HFU 39.1 %.
#[test]
fn the_planner_reproduces_a_hand_worked_example() {
    let report = plan(&PlanSettings::default()).unwrap();
    assert_eq!(report.parameters, 68_976_648_192);
    let p = find(&report, 8, 4);
    assert_eq!((p.dp, p.micro_batches), (2, 512));
    assert!(p.fits(), "{p:?}");
    let e = p.estimate.unwrap();
    assert_eq!(e.memory.weights, 4_311_040_512);
    assert_eq!(e.memory.gradients, 4_311_040_512);
    assert_eq!(e.memory.optimizer, 12_933_121_536);
    assert_eq!(e.memory.activations, 671_088_640);
    assert_eq!(e.memory.total, 22_226_291_200);
    let t = e.time;
    assert!(close(t.compute, 73.13170662747683), "{t:?}");
    assert!(close(t.bubble, 0.42850609352037206), "{t:?}");
    assert!(close(t.tp, 18.615024571733333), "{t:?}");
    assert!(close(t.pp, 1.38462953472), "{t:?}");
    assert!(close(t.dp, 0.08624081024000001), "{t:?}");
    assert_eq!(t.dp_exposed, 0.0);
    assert!(close(t.step, 93.55986682745053), "{t:?}");
    assert!(close(e.tokens_per_s, 44_830.16214351203));
    assert!(close(e.mfu, 0.29312130206300674));
    assert!(close(e.hfu, 0.3908284027506757));
}

#[test]
fn every_factorisation_is_listed_and_the_fitting_ones_come_first_fastest_first() {
    let report = plan(&PlanSettings::default()).unwrap();
    // 64 = 2⁶: Σ over TP of the divisors of 64/TP = 7 + 6 + … + 1.
    assert_eq!(report.plans.len(), 28);
    for p in &report.plans {
        assert_eq!(p.tp * p.pp * p.dp, 64);
    }
    let fits: Vec<bool> = report.plans.iter().map(Plan::fits).collect();
    let first_refused = fits.iter().position(|f| !f).unwrap();
    assert!(first_refused > 0 && fits[first_refused..].iter().all(|f| !f));
    let speeds: Vec<f64> = report.plans[..first_refused]
        .iter()
        .map(|p| p.estimate.unwrap().tokens_per_s)
        .collect();
    assert!(speeds.windows(2).all(|w| w[0] >= w[1]), "{speeds:?}");
    // Each refusal for its reason.
    assert!(matches!(
        find(&report, 16, 1).refusal,
        Some(Refusal::Node { .. })
    ));
    assert!(matches!(
        find(&report, 1, 32).refusal,
        Some(Refusal::Layers { .. })
    ));
    // 70B on one GPU's shard of nothing: 16 bytes × 70B does not fit in 80 GiB.
    assert!(matches!(
        find(&report, 1, 1).refusal,
        Some(Refusal::Memory { .. })
    ));
}

#[test]
fn without_recomputation_the_attention_scores_do_not_fit_and_sequence_parallelism_helps() {
    let s = PlanSettings {
        recompute: false,
        ..PlanSettings::default()
    };
    let report = plan(&s).unwrap();
    // TP 8 × PP 4: s·b·h(34/8 + 5·64·4096/(8192·8)) = 24.25·s·b·h a layer,
    // 80 layers' worth on the first stage: 65.1 GB and 86.7 GB in all.
    let p = find(&report, 8, 4);
    assert_eq!(p.estimate.unwrap().memory.activations, 65_095_598_080);
    assert!(matches!(p.refusal, Some(Refusal::Memory { .. })), "{p:?}");
    let with_sp = layer_activation_bytes(4096, 1, 8192, 64, 8, true, false);
    let without = layer_activation_bytes(4096, 1, 8192, 64, 8, false, false);
    // 10 + 24/8 against 34/8 of s·b·h.
    assert_eq!(without - with_sp, (13.0 - 4.25) * 4096.0 * 8192.0);
    // With t = 1 both are the unsplit 34 + 5as/h.
    assert_eq!(
        layer_activation_bytes(4096, 1, 8192, 64, 1, true, false),
        layer_activation_bytes(4096, 1, 8192, 64, 1, false, false)
    );
}

#[test]
fn zero_three_shards_the_weights_and_sends_half_again() {
    let base = plan(&PlanSettings::default()).unwrap();
    let z3 = plan(&PlanSettings {
        zero: Zero::Stage3,
        ..PlanSettings::default()
    })
    .unwrap();
    let (a, b) = (
        find(&base, 8, 1).estimate.unwrap(),
        find(&z3, 8, 1).estimate.unwrap(),
    );
    assert_eq!(b.memory.weights, a.memory.weights.div_ceil(8));
    assert!(close(b.time.dp, 1.5 * a.time.dp));
}

#[test]
fn bad_settings_are_refused() {
    for s in [
        PlanSettings {
            gpus: 0,
            ..PlanSettings::default()
        },
        PlanSettings {
            efficiency: 1.5,
            ..PlanSettings::default()
        },
        PlanSettings {
            micro_batch: 2048,
            ..PlanSettings::default()
        },
        PlanSettings {
            seq: 0,
            ..PlanSettings::default()
        },
        PlanSettings {
            usable: 0.0,
            ..PlanSettings::default()
        },
    ] {
        assert!(plan(&s).is_err());
    }
    // A batch that divides among no DP size past 1 still plans: those
    // factorisations are refused with the reason.
    let odd = plan(&PlanSettings {
        global_batch: 3,
        gpus: 8,
        ..PlanSettings::default()
    })
    .unwrap();
    assert!(
        odd.plans
            .iter()
            .any(|p| matches!(p.refusal, Some(Refusal::Batch { .. })))
    );
}

#[test]
fn the_largest_settings_do_not_overflow_and_are_refused_for_memory() {
    let s = PlanSettings {
        gpus: 1,
        global_batch: 1 << 24,
        micro_batch: 1 << 24,
        seq: 1 << 20,
        ..PlanSettings::default()
    };
    let report = plan(&s).unwrap();
    let p = &report.plans[0];
    assert!(matches!(p.refusal, Some(Refusal::Memory { .. })), "{p:?}");
    assert_eq!(p.estimate.unwrap().memory.total, u64::MAX);
}
