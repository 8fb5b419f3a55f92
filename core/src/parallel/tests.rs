//! Pipeline schedules: the bubble equals the closed form for equal stages
//! and free transfers, 1F1B holds at most P micro-batches' activations
//! against GPipe's M, every operation runs once, and transfers lengthen
//! the step.

use super::schedule::{
    Kind, Pass, PipelineError, Times, bubble_formula, check, pipeline, run, schedule,
};

/// T_F = T_B = T_W: a backward is twice a forward, half of it W.
const EQUAL: Times = Times {
    forward: 1.0,
    backward: 2.0,
    weight: 1.0,
    transfer: 0.0,
};

#[test]
fn the_measured_bubble_is_the_closed_form_for_every_schedule() {
    for (kind, stages, micro) in [
        (Kind::GPipe, 4, 8),
        (Kind::GPipe, 3, 1),
        (Kind::OneFOneB, 4, 8),
        (Kind::OneFOneB, 4, 2),
        (Kind::OneFOneB, 1, 5),
        (Kind::Interleaved { v: 2 }, 4, 8),
        (Kind::Interleaved { v: 3 }, 2, 4),
        (Kind::ZeroBubble, 4, 8),
        (Kind::ZeroBubble, 2, 3),
        (Kind::ZeroBubble, 6, 6),
        (Kind::ZeroBubble, 4, 4),
        (Kind::ZeroBubble, 1, 4),
    ] {
        check(kind, stages, micro).unwrap();
        let run = pipeline(kind, stages, micro, EQUAL).unwrap();
        let ops = if kind.splits_backward() { 3 } else { 2 };
        for s in 0..stages {
            // Every operation once.
            assert_eq!(run.timeline.stages[s].len(), ops * micro * kind.chunks());
            let got = run.rows[s].bubble;
            assert!(
                (got - run.formula).abs() < 1e-12,
                "{kind:?} P={stages} M={micro} stage {s}: {got} vs {}",
                run.formula
            );
        }
    }
}

#[test]
fn zb_h1_leaves_a_third_of_1f1b_s_idle_time_at_its_activation_count() {
    let (stages, micro) = (4, 8);
    let ofob = pipeline(Kind::OneFOneB, stages, micro, EQUAL).unwrap();
    let zb = pipeline(Kind::ZeroBubble, stages, micro, EQUAL).unwrap();
    let idle = |r: &super::schedule::PipelineRun| r.timeline.makespan - r.rows[0].busy;
    // (P − 1)(T_F + T_B + T_W) = 9 against (P − 1)(T_F + T_B − T_W) = 3.
    assert!((idle(&ofob) - 9.0).abs() < 1e-12);
    assert!((idle(&zb) - 3.0).abs() < 1e-12);
    // A micro-batch's activations stay until its W: stage s holds 1F1B's
    // P − s for B and s more for the W's it delays, P in all — 1F1B's peak.
    for s in 0..stages {
        assert_eq!(zb.rows[s].peak_in_flight, stages, "stage {s}");
        assert!((zb.rows[s].busy - ofob.rows[s].busy).abs() < 1e-12);
    }
    let peak = |r: &super::schedule::PipelineRun| r.rows.iter().map(|x| x.peak_in_flight).max();
    assert_eq!(peak(&zb), peak(&ofob));
    // Other shares: the closed form holds while T_W ≤ T_F and T_W ≤ T_B
    // (a delayed W fits the gap a forward or a B leaves); past it the form
    // is only a floor.
    for f in [0.5, 1.0, 1.5] {
        for b in [0.5, 0.9, 1.0, 1.5] {
            for w in [0.0, 0.25, 0.5, 0.9, 1.0, 1.5] {
                let times = Times {
                    forward: f,
                    backward: b + w,
                    weight: w,
                    transfer: 0.0,
                };
                let zb = pipeline(Kind::ZeroBubble, stages, micro, times).unwrap();
                for row in &zb.rows {
                    if w <= f.min(b) {
                        assert!((row.bubble - zb.formula).abs() < 1e-12, "{f} {b} {w}");
                    } else {
                        assert!(row.bubble > zb.formula, "{f} {b} {w}");
                    }
                }
            }
        }
    }
    // Fewer micro-batches than stages: too few W's to fill the gaps.
    let few = pipeline(Kind::ZeroBubble, 4, 3, EQUAL).unwrap();
    assert!(few.rows[0].bubble > few.formula + 1e-9);
    // W larger than the backward is refused.
    let wrong = Times {
        weight: 3.0,
        ..EQUAL
    };
    assert_eq!(
        pipeline(Kind::ZeroBubble, 2, 2, wrong),
        Err(PipelineError::Times)
    );
}

#[test]
fn one_f_one_b_holds_at_most_p_micro_batches_gpipe_all_of_them() {
    let (stages, micro) = (4, 8);
    let gpipe = run(
        &schedule(Kind::GPipe, stages, micro).unwrap(),
        Kind::GPipe,
        EQUAL,
    )
    .unwrap();
    let ofob = run(
        &schedule(Kind::OneFOneB, stages, micro).unwrap(),
        Kind::OneFOneB,
        EQUAL,
    )
    .unwrap();
    for s in 0..stages {
        assert_eq!(gpipe.peak_in_flight(s), micro);
        assert!(ofob.peak_in_flight(s) <= stages, "stage {s}");
        assert_eq!(ofob.peak_in_flight(s), stages - s);
    }
    // The same makespan: 1F1B saves memory, not time.
    assert!((gpipe.makespan - ofob.makespan).abs() < 1e-12);
}

#[test]
fn transfers_lengthen_the_step_and_bad_shapes_are_refused() {
    let plan = schedule(Kind::OneFOneB, 4, 8).unwrap();
    let free = run(&plan, Kind::OneFOneB, EQUAL).unwrap();
    let slow = run(
        &plan,
        Kind::OneFOneB,
        Times {
            transfer: 0.5,
            ..EQUAL
        },
    )
    .unwrap();
    assert!(slow.makespan > free.makespan);
    assert!(slow.bubble(0) > bubble_formula(Kind::OneFOneB, 4, 8, EQUAL));
    assert_eq!(
        check(Kind::Interleaved { v: 2 }, 4, 6),
        Err(PipelineError::NotGroups {
            micro: 6,
            stages: 4
        })
    );
    assert_eq!(schedule(Kind::GPipe, 0, 4), Err(PipelineError::Empty));
    // A stage that runs a backward before its forward waits forever.
    let mut broken = schedule(Kind::GPipe, 2, 2).unwrap();
    broken[1].swap(0, 2);
    assert_eq!(broken[1][0].pass, Pass::Backward);
    assert!(matches!(
        run(&broken, Kind::GPipe, EQUAL),
        Err(PipelineError::Deadlock { .. })
    ));
}

#[test]
fn a_run_reports_each_stage_and_refuses_bad_times() {
    let run = pipeline(Kind::GPipe, 3, 6, EQUAL).unwrap();
    assert_eq!(run.rows.len(), 3);
    assert!((run.rows[0].bubble - run.formula).abs() < 1e-12);
    assert_eq!(run.rows[2].peak_in_flight, 6);
    assert!((run.rows[1].busy - 6.0 * 3.0).abs() < 1e-12);
    let nan = Times {
        forward: f64::NAN,
        ..EQUAL
    };
    assert_eq!(pipeline(Kind::GPipe, 3, 6, nan), Err(PipelineError::Times));
    assert!(matches!(
        pipeline(Kind::OneFOneB, 65, 6, EQUAL),
        Err(PipelineError::TooLarge { .. })
    ));
}

#[test]
fn the_byte_formulas_are_what_the_ring_schedules_send() {
    use super::cost::{
        all_gather_bytes, all_reduce_bytes, reduce_scatter_bytes, sharded_traffic, tp_traffic,
    };
    use crate::collective::{Algorithm, Op, Schedule};
    let counted =
        |op, n, e| Schedule::new(Algorithm::Ring, op, n, e).unwrap().traffic(2)[0].sent_bytes;
    // Sizes N divides and sizes it does not.
    for (n, e) in [(2, 64), (4, 96), (4, 97), (3, 1000), (8, 61)] {
        assert_eq!(
            all_reduce_bytes(n, e as u64, 2),
            counted(Op::AllReduce, n, e),
            "{n} {e}"
        );
        assert_eq!(
            all_gather_bytes(n, e as u64, 2),
            counted(Op::AllGather, n, e),
            "{n} {e}"
        );
        assert_eq!(
            reduce_scatter_bytes(n, e as u64, 2),
            counted(Op::ReduceScatter, n, e),
            "{n} {e}"
        );
    }
    // Megatron: 4 all-reduces of b·s·h per layer, 2(T − 1)/T of it each.
    let tp = tp_traffic(4, 8 * 16, 64, 2);
    assert_eq!(tp.per_all_reduce, 2 * 3 * (8 * 16 * 64 / 4) * 2);
    assert_eq!(tp.per_layer, 4 * tp.per_all_reduce);
    // ZeRO-3 sends 3Ψ(N − 1)/N, plain data parallelism 2Ψ(N − 1)/N.
    let s = sharded_traffic(8, 8_000, 2);
    assert_eq!(s.fsdp, 3 * 7_000 * 2);
    assert_eq!(s.data_parallel, 2 * 7_000 * 2);
    assert_eq!(all_reduce_bytes(1, 100, 2), 0);
}

#[test]
fn micro_batches_for_a_bubble_and_mfu() {
    use super::cost::{mfu, micro_batches_for};
    // (P − 1)/(M + P − 1) ≤ 10 % with P = 4: M ≥ 27.
    assert_eq!(micro_batches_for(Kind::OneFOneB, 4, 0.1, EQUAL), Some(27));
    // Interleaved v = 2: (P − 1)/(2M + P − 1) ≤ 10 %: M ≥ 13.5, so 16 (groups of 4).
    assert_eq!(
        micro_batches_for(Kind::Interleaved { v: 2 }, 4, 0.1, EQUAL),
        Some(16)
    );
    assert_eq!(micro_batches_for(Kind::GPipe, 64, 1e-6, EQUAL), None);
    // 6 × 7e9 × 3e5 tokens/s over 64 × 1e15.
    assert!((mfu(7e9, 3e5, 64.0, 1e15) - 6.0 * 7e9 * 3e5 / 64e15).abs() < 1e-15);
}

#[test]
fn every_schedule_on_real_data_sums_the_unsplit_gradients_bit_for_bit() {
    use super::stages::{PipeSettings, train_pipeline};
    for (kind, stages, micro) in [
        (Kind::GPipe, 4, 4),
        (Kind::OneFOneB, 4, 8),
        (Kind::Interleaved { v: 2 }, 2, 4),
        (Kind::ZeroBubble, 4, 6),
        (Kind::OneFOneB, 1, 3),
    ] {
        let s = PipeSettings {
            kind,
            stages,
            micro,
            rows: 8,
            ..PipeSettings::default()
        };
        for threads in [true, false] {
            let t = train_pipeline(&s, threads).unwrap();
            assert_eq!(t.differing, 0, "{kind:?} threads {threads}");
            assert!(t.gradients.iter().any(|g| *g != 0.0));
            assert_eq!(t.gradients.len(), t.reference.len());
            assert_eq!(t.losses, t.reference_losses, "{kind:?}");
            // What the stages held as they ran is what the clock counts.
            for (s, row) in t.run.rows.iter().enumerate() {
                assert_eq!(t.held[s], row.peak_in_flight, "{kind:?} stage {s}");
            }
        }
    }
}

#[test]
fn bit_for_bit_is_a_claim_about_order_summing_backwards_breaks_it() {
    use super::stages::{PipeSettings, accumulate_unsplit, micro_batches};
    use crate::nn::{Activation, Mlp};
    let s = PipeSettings {
        micro: 8,
        ..PipeSettings::default()
    };
    let mlp = Mlp::<f32>::new(&s.sizes(), Activation::Relu, s.seed).unwrap();
    let mut batches = micro_batches(&s);
    let (_, forwards) = accumulate_unsplit(&mlp, &batches);
    batches.reverse();
    let (_, backwards) = accumulate_unsplit(&mlp, &batches);
    let differ = forwards
        .iter()
        .zip(&backwards)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    assert!(differ > 0);
}

#[test]
fn a_real_run_is_timed_from_its_flops_and_ideal_meets_the_closed_form() {
    use super::stages::{PipeSettings, train_pipeline};
    let s = PipeSettings::default();
    let real = train_pipeline(&s, false).unwrap();
    // Unequal stages (the first and last layers differ) and transfers:
    // the bubble is larger than the closed form.
    assert!(real.run.rows[0].bubble > real.run.formula);
    let ideal = train_pipeline(
        &PipeSettings {
            ideal: true,
            ..s.clone()
        },
        false,
    )
    .unwrap();
    for row in &ideal.run.rows {
        assert!((row.bubble - ideal.run.formula).abs() < 1e-9);
    }
    // The same bits either way: time does not touch the arithmetic.
    assert_eq!(real.gradients, ideal.gradients);
    // More stages than layers is refused.
    let err = train_pipeline(&PipeSettings { stages: 9, ..s }, false).unwrap_err();
    assert_eq!(
        err,
        PipelineError::Layers {
            layers: 8,
            positions: 9
        }
    );
}

#[test]
fn tensor_parallel_shards_are_the_unsplit_slices_and_the_sums_differ_only_in_order() {
    use super::tensor::{Sublayer, TensorError, TpSettings, run_tp};
    for workers in [2, 4] {
        for threads in [true, false] {
            let s = TpSettings {
                workers,
                ..TpSettings::default()
            };
            let run = run_tp(&s, threads).unwrap();
            assert_eq!(run.sublayers.len(), 2);
            assert_eq!(run.all_reduces, 4);
            for sub in &run.sublayers {
                let what = format!("{:?} T={workers}", sub.sublayer);
                assert!(sub.activations_bitwise, "{what}");
                assert!(sub.weight_grads_bitwise, "{what}");
                assert!(sub.both_within_f64_bound, "{what}");
                assert!(sub.output_over_bound <= 1.0, "{what}");
                assert!(sub.input_grad_over_bound <= 1.0, "{what}");
                // Reassociation moves some bits (else the check says nothing).
                assert!(sub.output_max_difference > 0.0 || sub.input_grad_max_difference > 0.0);
                // Every worker sends 2(T − 1)/T of tokens × h f32 values.
                for sent in sub.sent_forward.iter().chain(&sub.sent_backward) {
                    assert_eq!(*sent, sub.formula_bytes, "{what}");
                }
                assert_eq!(
                    sub.formula_bytes,
                    2 * (workers as u64 - 1) * (16 * 64 / workers as u64) * 4
                );
            }
            let mlp = &run.sublayers[1];
            assert_eq!(mlp.sublayer, Sublayer::Mlp);
            assert_eq!(
                mlp.shard_shapes,
                vec![
                    vec![64, 256 / workers],
                    vec![256 / workers],
                    vec![256 / workers, 64]
                ]
            );
            assert_eq!(run.layer_bytes, 4 * mlp.formula_bytes);
        }
    }
    let bad = TpSettings {
        workers: 3,
        ..TpSettings::default()
    };
    assert_eq!(
        run_tp(&bad, false).unwrap_err(),
        TensorError::Heads {
            heads: 8,
            workers: 3
        }
    );
}

#[test]
fn a_tensor_parallel_layer_s_time_share_is_worked_by_hand() {
    use super::cost::tp_step;
    use crate::collective::Link;
    // b·s = 16,384 tokens, h = 4,096, T = 8 on a 450 GB/s, 3 µs link at
    // 400 TFLOP/s: 72 · 16,384 · 4,096² / 8 = 2.473901e12 FLOPs, 6.184753
    // ms; each all-reduce sends 2 · 7/8 · 128 MiB = 234,881,024
    // bytes and takes 14 × 3 µs + 234,881,024 / 450e9 s = 0.563958 ms, four
    // of them 2.255833 ms: 26.7 % of the step.
    let link = Link::new(3.0, 450.0).unwrap();
    let step = tp_step(8, 16_384, 4_096, 2, 400e12, link);
    assert_eq!(step.flops, 72.0 * 16_384.0 * 4_096.0 * 4_096.0 / 8.0);
    assert!(
        (step.compute_s - 6.184_752_906_24e-3).abs() < 1e-15,
        "{step:?}"
    );
    assert!(
        (step.comm_s - 4.0 * (42e-6 + 234_881_024.0 / 450e9)).abs() < 1e-15,
        "{step:?}"
    );
    assert!((step.comm_share - 0.267_2).abs() < 1e-3, "{step:?}");
    assert_eq!(tp_step(1, 16_384, 4_096, 2, 400e12, link).comm_share, 0.0);
}
