//! The mixed-precision lesson's claims, reproduced by the engine on a fixed
//! seed (the UCI digits; `dlsys-lab train … --precision` prints the same numbers).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dlsys_core::nn::scenarios::Scenario;
use dlsys_core::nn::{Dataset, EpochStats, Status, Trainer};

struct Outcome {
    status: Status,
    last: EpochStats,
    underflow: f64,
    accumulation_overflows: u64,
    skipped: u64,
}

fn run(scenario: Scenario) -> Outcome {
    let data =
        Dataset::from_dlds("digits", include_bytes!("../../assets/data/digits.dlds")).unwrap();
    let (train, test) = data.split(0.2, 1);
    let mut trainer = Trainer::new(scenario.config(), train, test).unwrap();
    trainer.run();
    let mixed: Vec<_> = trainer
        .history
        .iter()
        .filter_map(|h| h.mixed.clone())
        .collect();
    let outcome = Outcome {
        status: trainer.status.clone(),
        last: trainer.history.last().cloned().unwrap(),
        underflow: mixed.iter().map(|m| m.underflow_fraction).sum::<f64>()
            / mixed.len().max(1) as f64,
        accumulation_overflows: mixed.iter().map(|m| m.accumulation_overflows).sum(),
        skipped: mixed.iter().map(|m| m.skipped_steps).sum(),
    };
    eprintln!(
        "{:<20} acc {:.4} loss {:.4} underflow {:.4} acc-overflows {} skipped {} {:?}",
        scenario.id(),
        outcome.last.test_accuracy,
        outcome.last.train_loss,
        outcome.underflow,
        outcome.accumulation_overflows,
        outcome.skipped,
        outcome.status
    );
    outcome
}

#[test]
fn fp16_without_loss_scaling_loses_gradients_and_trains_worse_than_with_dynamic_scaling() {
    let fp32 = run(Scenario::Fp32);
    let none = run(Scenario::Fp16NoScaling);
    let dynamic = run(Scenario::Fp16Dynamic);
    // More than a tenth of the gradient values underflow to zero without scaling…
    assert!(none.underflow > 0.10, "underflow {}", none.underflow);
    // …and training is measurably worse: lower accuracy, clearly higher loss.
    assert!(none.last.test_accuracy <= dynamic.last.test_accuracy - 0.02);
    assert!(none.last.train_loss > 1.5 * dynamic.last.train_loss);
    // Dynamic scaling keeps nearly everything and matches fp32.
    assert!(dynamic.underflow < 0.01, "underflow {}", dynamic.underflow);
    assert!((dynamic.last.test_accuracy - fp32.last.test_accuracy).abs() <= 0.01);
}

#[test]
fn bf16_without_scaling_tracks_fp32() {
    let fp32 = run(Scenario::Fp32);
    let bf16 = run(Scenario::Bf16NoScaling);
    assert!(bf16.underflow < 0.001, "underflow {}", bf16.underflow);
    assert!((bf16.last.test_accuracy - fp32.last.test_accuracy).abs() <= 0.01);
    assert!((bf16.last.train_loss - fp32.last.train_loss).abs() <= 0.1 * fp32.last.train_loss);
}

#[test]
fn an_fp16_accumulation_buffer_overflows_where_an_fp32_one_does_not() {
    let fp32 = run(Scenario::AccumulateFp32);
    let fp16 = run(Scenario::AccumulateFp16);
    assert_eq!(fp32.accumulation_overflows, 0);
    assert_eq!(fp32.skipped, 0);
    assert!(fp16.accumulation_overflows > 0);
    assert!(fp16.skipped > 0, "overflowing steps are skipped");
    assert!(fp16.last.test_accuracy < fp32.last.test_accuracy - 0.1);
}

#[test]
fn adam_with_fp16_moments_breaks_where_fp32_moments_train() {
    let fp32 = run(Scenario::AdamFp32Moments);
    let fp16 = run(Scenario::AdamFp16Moments);
    assert!(fp32.last.test_accuracy > 0.9);
    let broke = matches!(fp16.status, Status::Diverged { .. }) || fp16.last.test_accuracy < 0.5;
    assert!(
        broke,
        "fp16 moments: {:?}, accuracy {}",
        fp16.status, fp16.last.test_accuracy
    );
}
