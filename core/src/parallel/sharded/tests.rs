use super::*;

fn small(workers: usize, prefetch: bool) -> FsdpSettings {
    FsdpSettings {
        workers,
        rows: 4,
        layers: 4,
        steps: 2,
        prefetch,
        ..FsdpSettings::default()
    }
}

fn check(run: &FsdpRun) {
    let n = run.settings.workers as u64;
    assert_eq!(run.differing, 0, "weights differ from data parallelism");
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&run.losses), bits(&run.dp_losses));
    assert_eq!(
        run.peak, run.estimate,
        "measured peak against the calculator"
    );
    let psi = run.model_bytes();
    assert_eq!(run.sent.iter().sum::<u64>(), 3 * (n - 1) * psi);
    assert_eq!(run.dp_sent.iter().sum::<u64>(), 2 * (n - 1) * psi);
}

#[test]
fn sharded_training_is_data_parallel_training_bit_for_bit() {
    for prefetch in [false, true] {
        let s = small(4, prefetch);
        let run = train_fsdp(&s, true).unwrap();
        check(&run);
        // Every layer's size divides by 4: each worker sends 3Ψ(N − 1)/N.
        let psi = run.model_bytes();
        assert!(
            run.sent.iter().all(|b| *b == 3 * psi * 3 / 4),
            "{:?}",
            run.sent
        );
        assert!(run.losses.iter().all(|l| l.is_finite()));
        let in_turn = train_fsdp(&s, false).unwrap();
        assert_eq!(in_turn.losses, run.losses);
        assert_eq!(in_turn.peak, run.peak);
    }
}

#[test]
fn uneven_shards_hold_too() {
    // 3 workers over layers of 7·4 + 4 = 32, 4·4 + 4 = 20 (twice) and
    // 4·3 + 3 = 15 values: 3 divides only the last; 5 workers over 32, 20,
    // 20 and 15: only the second and third.
    let s = FsdpSettings {
        inputs: 7,
        width: 4,
        classes: 3,
        rows: 3,
        ..small(3, true)
    };
    let five = FsdpSettings {
        workers: 5,
        ..s.clone()
    };
    for s in [s, five] {
        let run = train_fsdp(&s, false).unwrap();
        check(&run);
    }
}

#[test]
fn prefetch_holds_two_layers_and_hides_the_gathers() {
    let mut s = small(4, true);
    // A slow link: the gathers matter.
    s.link = Link {
        alpha_s: 20e-6,
        bytes_per_s: 1e8,
    };
    let with = train_fsdp(&s, false).unwrap();
    s.prefetch = false;
    let without = train_fsdp(&s, false).unwrap();
    assert!(
        with.step_s < without.step_s,
        "{} {}",
        with.step_s,
        without.step_s
    );
    assert!(with.peak[0] > without.peak[0]);
    // Prefetch holds one more layer at most: the largest is layer 0's.
    let largest = 4 * (16 * 16 + 16);
    assert!(with.peak[0] - without.peak[0] <= largest);
    for run in [&with, &without] {
        let count = |a: Activity| run.timeline.iter().filter(|x| x.activity == a).count();
        assert_eq!(count(Activity::Gather), 2 * s.layers);
        assert_eq!(count(Activity::Scatter), s.layers);
        assert_eq!(
            count(Activity::Forward) + count(Activity::Backward),
            2 * s.layers
        );
        for comm in [false, true] {
            let mut spans: Vec<_> = run
                .timeline
                .iter()
                .filter(|x| x.activity.communicates() == comm)
                .collect();
            spans.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
            for pair in spans.windows(2) {
                assert!(pair[0].end_s <= pair[1].start_s, "{pair:?}");
            }
        }
    }
}

#[test]
fn bad_settings_are_refused() {
    for s in [
        small(1, true),
        small(17, true),
        FsdpSettings {
            layers: 0,
            ..small(2, true)
        },
        FsdpSettings {
            width: MAX_WIDTH + 1,
            ..small(2, true)
        },
        FsdpSettings {
            gflops: f64::NAN,
            ..small(2, true)
        },
    ] {
        assert!(matches!(
            train_fsdp(&s, false),
            Err(ShardError::Size { .. })
        ));
    }
}
