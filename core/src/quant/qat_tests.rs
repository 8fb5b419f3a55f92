#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::quant::scheme::{Granularity, IntFormat, Mapping};

/// int4 symmetric over one block whose amax is 7: scale 1, codes −7..7.
fn int4() -> QuantSettings {
    QuantSettings {
        format: IntFormat::signed(4),
        mapping: Mapping::Symmetric,
        granularity: Granularity::Tensor,
        ..QuantSettings::default()
    }
}

#[test]
fn the_round_trip_and_its_mask_follow_the_codes() {
    // Min–max over the tensor: nothing is clipped, and 2.5 rounds to even.
    let values = [0.2f32, -1.6, 3.49, 7.0, -7.0, 2.5];
    let (restored, inside) = round_trip(&values, 1, 6, &int4()).unwrap();
    assert_eq!(restored, vec![0.0, -2.0, 3.0, 7.0, -7.0, 2.0]);
    assert_eq!(inside, vec![1.0; 6]);
    let clipped = QuantSettings {
        calibration: crate::quant::Calibration::Fraction { of_range: 0.5 },
        ..int4()
    };
    let (restored, inside) = round_trip(&values, 1, 6, &clipped).unwrap();
    // Scale 0.5 and codes −7..7 cover ±3.5: 7, −7 are clipped (3.49 rounds
    // to code 7, inside).
    assert_eq!(inside, vec![1.0, 1.0, 1.0, 0.0, 0.0, 1.0]);
    assert_eq!(restored[3], 3.5);
    assert_eq!(restored[4], -3.5);
}

/// The op's backward against central differences of its surrogate — the
/// identity inside the clip range, constant outside — through a loss that
/// uses every output, at points at least a step from the clip edges (where
/// the surrogate is not differentiable). Its forward is the core's round trip.
#[test]
fn the_straight_through_backward_is_the_surrogates_gradient() {
    let values = [0.31f32, -1.2, 2.7, 5.9, -6.4, 1.05];
    let clipped = QuantSettings {
        calibration: crate::quant::Calibration::Fraction { of_range: 0.5 },
        ..int4()
    };
    let (restored, inside) = round_trip(&values, 2, 3, &clipped).unwrap();
    let weights = [0.7f32, -1.3, 0.4, 2.0, -0.5, 1.1];
    let mut g = Graph::<f32>::new();
    let x = g.param(Tensor::new(values.to_vec(), &[2, 3]));
    let y = g.fake_quantise(
        x,
        Tensor::new(restored.clone(), &[2, 3]),
        Tensor::new(inside.clone(), &[2, 3]),
    );
    assert_eq!(g.value(y).data, restored);
    let w = g.input(Tensor::new(weights.to_vec(), &[2, 3]));
    let prod = g.mul(y, w);
    let loss = g.sum(prod);
    g.backward(loss);
    let grad = g.grad(x).unwrap().into_owned();
    // The surrogate's edges: the clip range is ±3.2 (6.4 · 0.5).
    let edge = 3.2f64;
    let surrogate = |v: &[f64]| -> f64 {
        v.iter()
            .zip(&weights)
            .map(|(x, w)| x.clamp(-edge, edge) * f64::from(*w))
            .sum()
    };
    let h = 1e-3;
    for i in 0..values.len() {
        let v: Vec<f64> = values.iter().map(|&x| f64::from(x)).collect();
        assert!(
            (v[i].abs() - edge).abs() > 4.0 * h,
            "{} too near an edge",
            v[i]
        );
        let (mut up, mut down) = (v.clone(), v.clone());
        up[i] += h;
        down[i] -= h;
        let numeric = (surrogate(&up) - surrogate(&down)) / (2.0 * h);
        assert!(
            (f64::from(grad.data[i]) - numeric).abs() < 1e-6,
            "{i}: {} vs {numeric}",
            grad.data[i]
        );
    }
    // Two were clipped: their gradient is stopped.
    assert_eq!(grad.data.iter().filter(|g| **g == 0.0).count(), 2);
}

#[test]
fn fine_tuning_recovers_accuracy_at_two_bits_and_bad_settings_are_refused() {
    let ptq = PtqSettings {
        epochs: 3,
        ..PtqSettings::default()
    };
    let trained = crate::quant::ptq::train(&ptq).unwrap();
    let settings = QatSettings {
        bits: 2,
        epochs: 3,
        ..QatSettings::default()
    };
    let mut seen = Vec::new();
    let report = fine_tune(&trained, &ptq, &settings, &mut |e, n| {
        seen.push((e, n));
        true
    })
    .unwrap();
    assert_eq!(seen, vec![(1, 3), (2, 3), (3, 3)]);
    assert_eq!(report.accuracy.len(), 3);
    assert!(report.loss.iter().all(|l| l.is_finite()));
    // Two-bit weights per tensor lose most of the model after training;
    // fine-tuning through them gives back a large part of it.
    assert!(
        report.ptq_accuracy < report.fp32_accuracy - 0.2,
        "{report:?}"
    );
    assert!(
        report.final_accuracy() > report.ptq_accuracy + 0.1,
        "{report:?}"
    );
    // A stop after the first epoch is honoured.
    let stopped = fine_tune(&trained, &ptq, &settings, &mut |_, _| false).unwrap();
    assert_eq!(stopped.accuracy.len(), 1);
    for bad in [
        QatSettings {
            epochs: MAX_QAT_EPOCHS + 1,
            ..settings
        },
        QatSettings {
            lr: f64::NAN,
            ..settings
        },
        QatSettings {
            bits: 9,
            ..settings
        },
    ] {
        assert!(
            fine_tune(&trained, &ptq, &bad, &mut |_, _| true).is_err(),
            "{bad:?}"
        );
    }
}
