//! Pipeline schedules: the bubble equals the closed form for equal stages
//! and free transfers, 1F1B holds at most P micro-batches' activations
//! against GPipe's M, every operation runs once, and transfers lengthen
//! the step.

use super::schedule::{Kind, Pass, PipelineError, Times, bubble_formula, check, run, schedule};

const EQUAL: Times = Times {
    forward: 1.0,
    backward: 2.0,
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
    ] {
        check(kind, stages, micro).unwrap();
        let v = kind.chunks() as f64;
        let times = Times {
            forward: EQUAL.forward / v,
            backward: EQUAL.backward / v,
            transfer: 0.0,
        };
        let plan = schedule(kind, stages, micro).unwrap();
        let timeline = run(&plan, kind.chunks(), times).unwrap();
        let want = bubble_formula(kind, stages, micro);
        for s in 0..stages {
            // Every operation once.
            assert_eq!(timeline.stages[s].len(), 2 * micro * kind.chunks());
            let got = timeline.bubble(s);
            assert!(
                (got - want).abs() < 1e-12,
                "{kind:?} P={stages} M={micro} stage {s}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn one_f_one_b_holds_at_most_p_micro_batches_gpipe_all_of_them() {
    let (stages, micro) = (4, 8);
    let gpipe = run(&schedule(Kind::GPipe, stages, micro).unwrap(), 1, EQUAL).unwrap();
    let ofob = run(&schedule(Kind::OneFOneB, stages, micro).unwrap(), 1, EQUAL).unwrap();
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
    let free = run(&plan, 1, EQUAL).unwrap();
    let slow = run(
        &plan,
        1,
        Times {
            transfer: 0.5,
            ..EQUAL
        },
    )
    .unwrap();
    assert!(slow.makespan > free.makespan);
    assert!(slow.bubble(0) > bubble_formula(Kind::OneFOneB, 4, 8));
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
        run(&broken, 1, EQUAL),
        Err(PipelineError::Deadlock { .. })
    ));
}

#[test]
fn a_run_reports_each_stage_and_refuses_bad_times() {
    use super::schedule::pipeline;
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
