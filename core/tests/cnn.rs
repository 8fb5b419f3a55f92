//! The small CNN learns MNIST: the lesson's run (`CnnRun` with its default
//! settings: one epoch on 2,000 training images) reaches ≥ 90 % on the
//! 2,000 held-out ones (`dlsys-lab train --model cnn`, in the README's
//! benchmarks, trains longer); and both classic BatchNorm bugs cost
//! accuracy: evaluating in training mode one image at a time, and running
//! statistics never updated. The page shows exactly these numbers.

#![allow(clippy::unwrap_used)]

use dlsys_core::nn::data::load_split;
use dlsys_core::nn::models::cnn_run::{CnnEvent, CnnRun, CnnSettings};

#[test]
fn the_lessons_run_reaches_90_percent_and_both_bugs_cost_accuracy() {
    let settings = CnnSettings::default();
    let (train, test) = load_split("mnist", settings.seed).unwrap();
    let started = std::time::Instant::now();
    let mut run = CnnRun::new(settings, train, test).unwrap();
    let mut epochs = 0;
    let result = loop {
        match run.step().unwrap() {
            Some(CnnEvent::Epoch(_)) => epochs += 1,
            Some(CnnEvent::Finished(result)) => break result,
            None => {}
        }
    };
    let [accuracy, training_mode, initial] = result.accuracy;
    eprintln!(
        "CNN, 1 epoch on 2,000 images: test accuracy {:.2} %; in training mode {:.2} %; \
         with initial statistics {:.2} % ({:.1} s)",
        100.0 * accuracy,
        100.0 * training_mode,
        100.0 * initial,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(epochs, 1);
    assert_eq!(result.test, 2000);
    assert!(accuracy >= 0.90, "{accuracy}");
    // Left in training mode, one image at a time: each image normalised by
    // its own statistics.
    assert!(training_mode < accuracy, "{training_mode} vs {accuracy}");
    // Running statistics never updated: the network sees inputs on another scale.
    assert!(initial < accuracy - 0.05, "{initial} vs {accuracy}");
}

#[test]
fn settings_past_their_limits_are_refused_with_the_limit() {
    use dlsys_core::nn::models::cnn_run::{MAX_BATCH, MAX_EPOCHS};
    for bad in [
        CnnSettings {
            batch: 0,
            ..CnnSettings::default()
        },
        CnnSettings {
            batch: MAX_BATCH + 1,
            ..CnnSettings::default()
        },
        CnnSettings {
            epochs: MAX_EPOCHS + 1,
            ..CnnSettings::default()
        },
        CnnSettings {
            lr: f64::NAN,
            ..CnnSettings::default()
        },
    ] {
        let err = bad.validate().unwrap_err().to_string();
        assert!(err.contains("must be"), "{err}");
    }
}
