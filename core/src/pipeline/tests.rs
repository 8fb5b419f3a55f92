//! The pipeline held to what it must be: every sample once per epoch, in
//! order, the same weights whatever the workers, the direct training's
//! weights without augmentation, and the model's arithmetic.

use std::collections::BTreeSet;
use std::sync::Arc;

use web_time::Instant;

use super::*;
use crate::nn::data;

fn digits() -> Arc<crate::nn::data::Packed> {
    Arc::new(data::load_packed("digits").unwrap())
}

fn settings(workers: usize, threads: bool) -> PipelineSettings {
    PipelineSettings {
        workers,
        prefetch: 2,
        batch: 100,
        augment: true,
        threads,
        ..PipelineSettings::default()
    }
}

#[test]
fn the_loader_hands_over_every_sample_once_per_epoch_in_order() {
    let data = digits();
    // 1,797 digits: 17 batches of 100 an epoch; 40 batches span three.
    let plan = run_batches(data.len(), 100, 40, 9);
    assert_eq!(plan.len(), 40);
    for (workers, threads) in [(1, true), (2, true), (3, true), (4, true), (1, false)] {
        let mut loader = Loader::start(
            data.clone(),
            plan.clone(),
            &settings(workers, threads),
            Instant::now(),
            Default::default(),
        );
        let mut seen: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); 3];
        let mut index = 0;
        while let Some(batch) = loader.next_batch() {
            let batch = batch.unwrap();
            assert_eq!(batch.index, index, "k={workers}");
            assert_eq!(batch.worker, if threads { index % workers } else { 0 });
            let (epoch, samples) = &plan[index];
            assert_eq!(&batch.samples, samples);
            assert_eq!(batch.y.len(), 100);
            assert_eq!(batch.x.len(), 100 * 64);
            for s in samples {
                assert!(
                    seen[*epoch as usize].insert(*s),
                    "k={workers}: sample {s} twice in epoch {epoch}"
                );
            }
            index += 1;
        }
        assert_eq!(index, 40);
        assert_eq!(seen[0].len(), 1700);
        assert_eq!(seen[1].len(), 1700);
    }
}

#[test]
fn the_weights_do_not_depend_on_the_workers_and_match_direct_training() {
    let data = digits();
    let run = |s: &PipelineSettings| {
        train_through(data.clone(), s, 25, Default::default(), &mut |_| true).unwrap()
    };
    let one = run(&settings(1, true));
    assert_eq!(one.records.len(), 25);
    for (k, threads) in [(2, true), (4, true), (3, false)] {
        assert_eq!(
            run(&settings(k, threads)).weights,
            one.weights,
            "k={k} threads {threads}"
        );
    }
    // Augmentation off: exactly the training on the decoded data set.
    let plain = PipelineSettings {
        augment: false,
        ..settings(3, true)
    };
    let direct = train_direct(&data.to_dataset(), &plain, 25).unwrap();
    assert_eq!(run(&plain).weights, direct);
    assert_ne!(direct, one.weights, "augmentation changes the data");
    let losses: Vec<f64> = one.records.iter().map(|r| r.loss).collect();
    assert!(losses[24] < losses[0], "{losses:?}");
}

#[test]
fn every_batch_is_timed_and_a_stop_ends_the_run() {
    let data = digits();
    let s = PipelineSettings {
        extra_io_us: 200,
        ..settings(2, true)
    };
    let mut seen = 0;
    let run = train_through(data, &s, 50, Default::default(), &mut |_| {
        seen += 1;
        seen < 5
    })
    .unwrap();
    assert_eq!(run.records.len(), 5);
    for r in &run.records {
        assert!(r.load_start_s <= r.load_end_s && r.load_end_s <= r.got_s + 1e-9);
        assert!(r.asked_s <= r.got_s && r.got_s <= r.done_s);
        // 100 samples × 200 µs of blocking, at least.
        assert!(r.times.extra_io_s >= 0.02, "{:?}", r.times);
        assert!(r.times.read_s > 0.0 && r.times.decode_s > 0.0 && r.times.augment_s > 0.0);
    }
    assert!(run.utilisation() > 0.0 && run.utilisation() <= 1.0);
}

#[test]
fn augmentation_is_seeded_per_epoch_and_sample() {
    let data = digits();
    let plan: loader::Plan = Arc::new(vec![(0, vec![5, 6]), (0, vec![6, 5]), (1, vec![5, 6])]);
    let mut loader = Loader::start(
        data,
        plan,
        &settings(2, true),
        Instant::now(),
        Default::default(),
    );
    let a = loader.next_batch().unwrap().unwrap();
    let b = loader.next_batch().unwrap().unwrap();
    let c = loader.next_batch().unwrap().unwrap();
    // Sample 5 in epoch 0, built by two different workers: the same image.
    assert_eq!(a.x[..64], b.x[64..]);
    assert_ne!(a.x[..64], c.x[..64], "another epoch, another augmentation");
}

#[test]
fn bad_settings_are_refused() {
    let data = digits();
    for bad in [
        PipelineSettings {
            workers: 0,
            ..settings(1, true)
        },
        PipelineSettings {
            workers: MAX_WORKERS + 1,
            ..settings(1, true)
        },
        PipelineSettings {
            prefetch: 0,
            ..settings(1, true)
        },
        PipelineSettings {
            batch: 0,
            ..settings(1, true)
        },
        PipelineSettings {
            batch: 5000,
            ..settings(1, true)
        },
        PipelineSettings {
            extra_cpu_us: MAX_EXTRA_US + 1,
            ..settings(1, true)
        },
        PipelineSettings {
            lr: f64::NAN,
            ..settings(1, true)
        },
    ] {
        assert!(
            train_through(data.clone(), &bad, 5, Default::default(), &mut |_| true).is_err(),
            "{bad:?}"
        );
    }
    assert!(
        train_through(
            data.clone(),
            &settings(1, true),
            0,
            Default::default(),
            &mut |_| true
        )
        .is_err()
    );
    assert!(data::load_packed("moons").is_err());
}

#[test]
fn the_model_finds_the_bound_and_the_knee() {
    let c = Costs {
        compute_s: 0.010,
        cpu_s: 0.004,
        io_s: 0.036,
    };
    // One worker: 40 ms of data per 10 ms step.
    let one = predict(c, 1, 8, true);
    assert_eq!(one.bound, Bound::Workers);
    assert!((one.period_s - 0.040).abs() < 1e-15);
    assert!((one.utilisation - 0.25).abs() < 1e-12);
    // Four workers: 10 ms each, as fast as the step.
    assert_eq!(knee(c, 8, 8), Some(4));
    assert_eq!(knee(c, 8, 3), None, "still short of workers at 3");
    assert_eq!(predict(c, 8, 8, true).bound, Bound::Compute);
    // Two cores, CPU-heavy data: the cores bound it whatever the workers.
    let heavy = Costs {
        compute_s: 0.010,
        cpu_s: 0.030,
        io_s: 0.0,
    };
    let p = predict(heavy, 8, 2, true);
    assert_eq!(p.bound, Bound::Cores);
    assert!((p.period_s - 0.020).abs() < 1e-15);
    assert_eq!(predict(c, 4, 8, false).bound, Bound::Serial);
    assert!((predict(c, 4, 8, false).period_s - 0.050).abs() < 1e-15);
    // The worked example: 1 M images × 5 ms / 8 workers.
    assert!((epoch_seconds(1e6, 5e-3, 0.0, 8) - 625.0).abs() < 1e-9);
    assert!((epoch_seconds(1e6, 5e-3, 0.0, 1) - 5000.0).abs() < 1e-9);
}
