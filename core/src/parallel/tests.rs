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
    // Other shares of W: the closed form holds while W ≤ T_F (a delayed W
    // fits the gap a forward leaves); past it the form is only a floor.
    for weight in [0.0, 0.5, 1.0, 1.5] {
        let times = Times { weight, ..EQUAL };
        let zb = pipeline(Kind::ZeroBubble, stages, micro, times).unwrap();
        for row in &zb.rows {
            if weight <= EQUAL.forward {
                assert!((row.bubble - zb.formula).abs() < 1e-12, "W = {weight}");
            } else {
                assert!(row.bubble > zb.formula, "W = {weight}");
            }
        }
    }
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
