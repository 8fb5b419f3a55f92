#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;

use super::ptq::{self, ActScales, GranularityKind, OutlierSettings, PtqSettings};
use super::*;
use crate::float::{Format, Rounding};

fn mapping_strategy() -> impl Strategy<Value = Mapping> {
    prop_oneof![
        Just(Mapping::Symmetric),
        Just(Mapping::SymmetricFull),
        Just(Mapping::Asymmetric)
    ]
}

/// A range (low ≤ high) of magnitudes from 1e-6 to 1e6, or zero.
fn range_strategy() -> impl Strategy<Value = (f64, f64)> {
    (-6.0f64..6.0, -6.0f64..6.0, any::<bool>(), any::<bool>()).prop_map(|(a, b, na, nb)| {
        let a = if na { -(10f64.powf(a)) } else { 10f64.powf(a) };
        let b = if nb { -(10f64.powf(b)) } else { 10f64.powf(b) };
        (a.min(b), a.max(b))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Inside the clip range (widened to hold 0), nearest rounding is off
    /// by at most half a step. Computed in f64: x / scale and (q − z)·scale
    /// each round once (relative 2^-53), so the bound checked is
    /// scale/2 + 4·eps·max(|x|, scale).
    #[test]
    fn error_is_at_most_half_a_step_inside_the_clip_range(
        bits in MIN_BITS..=MAX_BITS,
        signed in any::<bool>(),
        mapping in mapping_strategy(),
        (lo, hi) in range_strategy(),
        t in 0.0f64..=1.0,
    ) {
        let mapping = if signed { mapping } else { Mapping::Asymmetric };
        let format = IntFormat { bits, signed };
        let p = QParams::for_range(lo, hi, format, mapping).unwrap();
        let (lo, hi) = (lo.min(0.0), hi.max(0.0));
        let (lo, hi) = if mapping == Mapping::Asymmetric { (lo, hi) } else {
            let a = lo.abs().max(hi);
            (-a, a)
        };
        let x = lo + (hi - lo) * t;
        let back = p.dequantise(p.quantise(x, Rounding::NearestEven, 0));
        let slack = 4.0 * f64::EPSILON * x.abs().max(p.scale);
        prop_assert!((x - back).abs() <= p.scale / 2.0 + slack,
            "x {x} back {back} scale {} {p:?}", p.scale);
    }

    /// Every code's value quantises back to that code.
    #[test]
    fn representable_values_round_trip(
        bits in MIN_BITS..=MAX_BITS,
        signed in any::<bool>(),
        mapping in mapping_strategy(),
        (lo, hi) in range_strategy(),
        pick in 0.0f64..1.0,
    ) {
        let mapping = if signed { mapping } else { Mapping::Asymmetric };
        let p = QParams::for_range(lo, hi, IntFormat { bits, signed }, mapping).unwrap();
        let span = f64::from(p.qmax - p.qmin);
        let q = p.qmin + (pick * (span + 1.0)).floor().min(span) as i32;
        let x = p.dequantise(q);
        prop_assert_eq!(p.quantise(x, Rounding::NearestEven, 0), q);
        prop_assert_eq!(p.quantise(x, Rounding::Stochastic, u64::MAX), q);
        prop_assert_eq!(p.quantise(x, Rounding::Stochastic, 0), q);
        prop_assert_eq!(p.quantise(x, Rounding::TowardZero, 0), q);
    }

    /// The zero point is a code, and 0 is exact.
    #[test]
    fn zero_point_is_in_range_and_zero_is_exact(
        bits in MIN_BITS..=MAX_BITS,
        signed in any::<bool>(),
        (lo, hi) in range_strategy(),
    ) {
        let p = QParams::for_range(lo, hi, IntFormat { bits, signed }, Mapping::Asymmetric).unwrap();
        prop_assert!(p.qmin <= p.zero_point && p.zero_point <= p.qmax, "{p:?}");
        prop_assert_eq!(p.dequantise(p.quantise(0.0, Rounding::NearestEven, 0)), 0.0);
    }

    /// A constant (or all-zero) tensor gives finite scales and values, at
    /// every granularity and calibration.
    #[test]
    fn a_constant_tensor_gives_no_nan(
        c in prop_oneof![Just(0.0f32), -1e6f32..1e6],
        bits in MIN_BITS..=MAX_BITS,
        mapping in mapping_strategy(),
        cal in prop_oneof![Just(Calibration::MinMax), Just(Calibration::Mse), Just(Calibration::Percentile { pct: 99.0 })],
        gran in prop_oneof![Just(Granularity::Tensor), Just(Granularity::Channel { axis: 1 }), Just(Granularity::Group { axis: 0, size: 3 })],
    ) {
        let values = vec![c; 7 * 5];
        let settings = QuantSettings { format: IntFormat::signed(bits), mapping, granularity: gran, calibration: cal, ..QuantSettings::default() };
        let (q, stats) = quantise_with_stats(&values, 7, 5, &settings).unwrap();
        for p in &q.params {
            prop_assert!(p.scale.is_finite() && p.scale > 0.0);
        }
        for v in q.dequantise() {
            prop_assert!(v.is_finite());
            // Exact where the mapping puts amax on a code; PyTorch's
            // amax/127.5 puts it half a step past the last code.
            let tol = if mapping == Mapping::SymmetricFull { q.params[0].scale * (0.5 + 1e-12) } else { 1e-9 * f64::from(c.abs()).max(1.0) };
            prop_assert!((v - f64::from(c)).abs() <= tol, "{v} vs {c}");
        }
        prop_assert!(stats.max_abs_error.is_finite());
    }
}

#[test]
fn conventions_are_named_and_computed() {
    let int8 = IntFormat::signed(8);
    let p = QParams::for_range(-1.0, 1.0, int8, Mapping::Symmetric).unwrap();
    assert_eq!(
        (p.scale, p.qmin, p.qmax, p.zero_point),
        (1.0 / 127.0, -127, 127, 0)
    );
    let torch = QParams::for_range(-1.0, 1.0, int8, Mapping::SymmetricFull).unwrap();
    assert_eq!(
        (torch.scale, torch.qmin, torch.qmax),
        (1.0 / 127.5, -128, 127)
    );
    let u8 = QParams::for_range(-1.0, 3.0, IntFormat::unsigned(8), Mapping::Asymmetric).unwrap();
    assert_eq!((u8.scale, u8.zero_point), (4.0 / 255.0, 64));
    assert_eq!(int8.name(), "int8");
    assert_eq!(
        (IntFormat::signed(4).qmin(), IntFormat::unsigned(3).qmax()),
        (-8, 7)
    );
}

#[test]
fn bad_settings_and_values_are_refused_by_type() {
    let bad = |s: QuantSettings| quantise(&[0.5], 1, 1, &s).unwrap_err();
    let base = QuantSettings::default();
    for bits in [0, 1, 9, 32] {
        let e = bad(QuantSettings {
            format: IntFormat::signed(bits),
            ..base
        });
        assert!(matches!(e, QuantError::Bits { .. }), "{e}");
    }
    let e = bad(QuantSettings {
        format: IntFormat::unsigned(8),
        ..base
    });
    assert_eq!(e, QuantError::SymmetricUnsigned);
    let e = bad(QuantSettings {
        granularity: Granularity::Group { axis: 0, size: 0 },
        ..base
    });
    assert_eq!(e, QuantError::GroupSize);
    let e = bad(QuantSettings {
        calibration: Calibration::Percentile { pct: f64::NAN },
        ..base
    });
    assert!(matches!(e, QuantError::Percentile { .. }));
    for v in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let e = quantise(&[0.0, 1.0, v], 1, 3, &base).unwrap_err();
        assert!(matches!(e, QuantError::NotFinite { index: 2, .. }), "{e}");
    }
    assert_eq!(quantise(&[], 0, 0, &base).unwrap_err(), QuantError::Empty);
    assert!(matches!(
        quantise(&[1.0; 5], 2, 2, &base).unwrap_err(),
        QuantError::Shape { .. }
    ));
    assert!(quantise_value(f64::NAN, -1.0, 1.0, &base).is_err());
    assert!(matches!(
        quantise_value(0.1, 1.0, -1.0, &base).unwrap_err(),
        QuantError::Range { .. }
    ));
}

#[test]
fn a_short_last_group_gets_its_own_scale() {
    // 72 rows (K) × 2 columns, groups of 32 along K: 32, 32 and 8 rows.
    let (rows, cols) = (72, 2);
    let values: Vec<f32> = (0..rows * cols)
        .map(|i| if i / cols >= 64 { 0.01 } else { 1.0 })
        .collect();
    let s = QuantSettings {
        granularity: Granularity::Group { axis: 0, size: 32 },
        ..QuantSettings::default()
    };
    let q = quantise(&values, rows, cols, &s).unwrap();
    assert_eq!(q.params.len(), 3 * cols);
    let last = q.params[q.block[(rows - 1) * cols] as usize];
    assert!((last.scale - 0.01f32 as f64 / 127.0).abs() < 1e-15);
    assert!((q.params[0].scale - 1.0 / 127.0).abs() < 1e-15);
    let (_, count) = Granularity::Channel { axis: 1 }.blocks(rows, cols);
    assert_eq!(count, cols);
    let (block, count) = Granularity::Group { axis: 1, size: 2 }.blocks(2, 5);
    assert_eq!((count, block), (6, vec![0, 0, 1, 1, 2, 3, 3, 4, 4, 5]));
}

#[test]
fn clipping_calibrations_trade_the_tail_for_a_finer_grid() {
    let mut values: Vec<f64> = (0..1000).map(|i| ((i as f64) * 0.37).sin()).collect();
    values[17] = 6.0;
    let f = IntFormat::signed(4);
    let (_, hi) =
        calibrate::clip_range(&values, Calibration::MinMax, f, Mapping::Symmetric).unwrap();
    let (_, p99) = calibrate::clip_range(
        &values,
        Calibration::Percentile { pct: 99.0 },
        f,
        Mapping::Symmetric,
    )
    .unwrap();
    let (_, mse) = calibrate::clip_range(&values, Calibration::Mse, f, Mapping::Symmetric).unwrap();
    assert_eq!(hi, 6.0);
    assert!(p99 < 1.0 + 1e-12 && p99 > 0.9, "{p99}");
    assert!(mse < hi, "{mse}");
    let err = |a: f64| {
        let p = QParams::for_range(-a, a, f, Mapping::Symmetric).unwrap();
        values
            .iter()
            .map(|&x| (x - p.dequantise(p.quantise(x, Rounding::NearestEven, 0))).powi(2))
            .sum::<f64>()
    };
    assert!(err(mse) < err(hi));
    // The entropy clip gives up the outlier too, for a finer grid where
    // the values are.
    let (_, kl) =
        calibrate::clip_range(&values, Calibration::Entropy, f, Mapping::Symmetric).unwrap();
    assert!(kl < hi && kl > 0.0, "{kl}");
    assert!(err(kl) < err(hi), "{kl}");
}

#[test]
fn the_entropy_clip_keeps_a_uniform_range_and_cuts_a_long_tail() {
    use rand::{RngExt as _, SeedableRng as _};
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    // Uniform on [−1, 1]: nothing to cut, the clip stays near amax.
    let uniform: Vec<f64> = (0..20_000).map(|_| rng.random_range(-1.0..1.0)).collect();
    let amax = uniform.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let t = calibrate::entropy_clip(&uniform, 128);
    assert!(t > 0.9 * amax && t <= amax, "{t} vs {amax}");
    // Laplace-like (a long tail): the clip falls well inside amax.
    let tailed: Vec<f64> = (0..20_000)
        .map(|_| {
            let u: f64 = rng.random_range(1e-9..1.0);
            let s = if rng.random_range(0.0..1.0) < 0.5 {
                -1.0
            } else {
                1.0
            };
            -s * u.ln()
        })
        .collect();
    let amax = tailed.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let t = calibrate::entropy_clip(&tailed, 8);
    assert!(t < 0.7 * amax, "{t} vs {amax}");
    assert_eq!(calibrate::entropy_clip(&[0.0; 9], 128), 0.0);
    // A constant tensor (the entropy search is too slow for the property
    // test's thousands of cases): its value exactly, at every granularity.
    for c in [0.0f32, 3.5, -1e6] {
        let settings = |granularity| QuantSettings {
            calibration: Calibration::Entropy,
            granularity,
            ..QuantSettings::default()
        };
        // Blocks of 7 or 3 values cannot fill the histogram: refused.
        for granularity in [
            Granularity::Channel { axis: 1 },
            Granularity::Group { axis: 0, size: 3 },
        ] {
            assert!(matches!(
                quantise(&[c; 560], 7, 80, &settings(granularity)),
                Err(QuantError::KlValues {
                    min: calibrate::KL_MIN_VALUES,
                    ..
                })
            ));
        }
        {
            let q = quantise(&[c; 560], 7, 80, &settings(Granularity::Tensor)).unwrap();
            assert!(
                q.params
                    .iter()
                    .all(|p| p.scale.is_finite() && p.scale > 0.0)
            );
            assert!(
                q.dequantise()
                    .iter()
                    .all(|&v| (v - f64::from(c)).abs() <= 1e-9 * f64::from(c.abs()).max(1.0)),
                "{c}"
            );
        }
    }
}

#[test]
fn stochastic_rounding_is_unbiased_and_seeded() {
    let values = vec![0.3f32 / 127.0; 20_000];
    let mut scaled = values.clone();
    scaled.push(1.0); // amax 1: scale 1/127, so each value is 0.3 of a step
    let s = QuantSettings {
        rounding: Rounding::Stochastic,
        seed: 9,
        ..QuantSettings::default()
    };
    let q = quantise(&scaled, 1, scaled.len(), &s).unwrap();
    let ups = q.codes[..values.len()].iter().filter(|&&c| c == 1).count();
    let share = ups as f64 / values.len() as f64;
    assert!((share - 0.3).abs() < 0.02, "{share}");
    assert!(q.codes[..values.len()].iter().all(|&c| c == 0 || c == 1));
    assert_eq!(q, quantise(&scaled, 1, scaled.len(), &s).unwrap());
    let rne = quantise(&scaled, 1, scaled.len(), &QuantSettings::default()).unwrap();
    assert!(rne.codes[..values.len()].iter().all(|&c| c == 0));
}

#[test]
fn ties_go_to_even_codes() {
    let p = QParams::for_range(-127.0, 127.0, IntFormat::signed(8), Mapping::Symmetric).unwrap();
    assert_eq!(p.scale, 1.0);
    let codes: Vec<i32> = [0.5, 1.5, 2.5, -0.5, -2.5]
        .iter()
        .map(|&x| p.quantise(x, Rounding::NearestEven, 0))
        .collect();
    assert_eq!(codes, [0, 2, 2, 0, -2]);
    assert_eq!(p.quantise(1000.0, Rounding::NearestEven, 0), 127);
}

#[test]
fn bytes_of_a_70b_model_at_int4_g128_with_fp16_scales() {
    let b = grouped_bytes(70_000_000_000, 4, 128, 2, false).unwrap();
    assert_eq!(b.payload_bytes, 35_000_000_000);
    assert_eq!(b.scales_bytes, 1_093_750_000);
    assert_eq!(b.total_bytes, 36_093_750_000);
    assert!((b.bits_per_param - 4.125).abs() < 1e-12);
    let asym = grouped_bytes(70_000_000_000, 4, 128, 2, true).unwrap();
    assert_eq!(asym.zero_points_bytes, 273_437_500);
    assert_eq!(
        grouped_bytes(10, 3, 0, 2, false).unwrap().total_bytes,
        4 + 2
    );
    assert!(grouped_bytes(10, 1, 0, 2, false).is_err());
}

#[test]
fn integer_dot_products_need_wide_accumulators() {
    let i8 = IntFormat::signed(8);
    assert_eq!(dot_bound(1, i8, i8), (16_384, 16));
    assert_eq!(dot_bound(4096, i8, i8), (67_108_864, 28));
    let (bound, bits) = dot_bound(131_072, i8, i8);
    assert_eq!((bound, bits), (1u128 << 31, 33));
    assert_eq!(fp8_scale(448.0, &Format::fp8_e4m3(), 0), 1.0);
    assert_eq!(fp8_scale(7.0, &Format::fp8_e4m3(), 1), 32.0);
    assert_eq!(fp8_scale(0.0, &Format::fp8_e5m2(), 0), 1.0);
}

#[test]
fn post_training_quantisation_of_the_trained_mlp() {
    let trained = ptq::train(&PtqSettings {
        epochs: 4,
        ..PtqSettings::default()
    })
    .unwrap();
    assert!(trained.fp32_accuracy > 0.85, "{}", trained.fp32_accuracy);
    let mut seen = Vec::new();
    let cells = ptq::grid(&trained, 32, Calibration::MinMax, &mut |done, total| {
        seen.push((done, total));
    })
    .unwrap();
    assert_eq!(cells.len(), 16);
    assert_eq!(seen.last(), Some(&(16, 16)));
    let cell = |bits, kind, acts: Option<ActScales>| {
        cells
            .iter()
            .find(|c| c.bits == bits && c.granularity == kind && c.activations == acts)
            .unwrap()
    };
    let w8 = cell(8, GranularityKind::Channel, None);
    assert!(w8.delta.abs() < 0.02, "{w8:?}");
    // Fewer bits, larger weight error, at every granularity.
    for kind in [
        GranularityKind::Tensor,
        GranularityKind::Channel,
        GranularityKind::Group(32),
    ] {
        let errs: Vec<f64> = ptq::GRID_BITS
            .iter()
            .map(|&b| cell(b, kind, None).weight_error.rms_error)
            .collect();
        assert!(errs.windows(2).all(|w| w[0] < w[1]), "{kind:?} {errs:?}");
    }
    // Finer scales, smaller error, at 3 bits.
    let e = |k| cell(3, k, None).weight_error.rms_error;
    assert!(e(GranularityKind::Group(32)) < e(GranularityKind::Channel));
    assert!(e(GranularityKind::Channel) < e(GranularityKind::Tensor));

    let report = ptq::outlier(&trained, &OutlierSettings::default()).unwrap();
    assert!(
        (report.planted_fp32_accuracy - report.fp32_accuracy).abs() < 0.01,
        "{report:?}"
    );
    assert!(report.outlier_amax >= report.magnitude && report.others_amax <= 1.0);
    let acc = |acts| {
        report
            .rows
            .iter()
            .find(|r| {
                r.activations == acts
                    && r.weights == GranularityKind::Channel
                    && r.smooth_alpha.is_none()
            })
            .unwrap()
            .accuracy
    };
    // SmoothQuant: the same function (fp32 unchanged), and per-tensor
    // activation scales — which an integer GEMM runs — survive the outlier.
    let smoothed = ptq::smooth(&trained, ptq::SMOOTH_ALPHA);
    assert_ne!(smoothed.test.x, trained.test.x);
    let fp32 = crate::nn::evaluate(&trained.model, &trained.test).1;
    assert!((crate::nn::evaluate(&smoothed.model, &smoothed.test).1 - fp32).abs() < 0.01);
    let smooth_tensor = report
        .rows
        .iter()
        .find(|r| r.smooth_alpha.is_some() && r.activations == ActScales::PerTensor)
        .unwrap();
    assert!(smooth_tensor.integer_gemm);
    assert!(
        smooth_tensor.accuracy > acc(ActScales::PerTensor) + 0.2,
        "{report:?}"
    );
    assert!(
        acc(ActScales::PerTensor) < report.fp32_accuracy - 0.2,
        "{report:?}"
    );
    // Per-input-channel scales (fake quantisation only) keep most of it;
    // what they lose is the outlier's weight row, which per-output-channel
    // weight scales round to zero.
    assert!(
        acc(ActScales::PerInputChannel) > report.fp32_accuracy - 0.1,
        "{report:?}"
    );
    assert!(
        acc(ActScales::PerInputChannel) > acc(ActScales::PerToken),
        "{report:?}"
    );
    assert!(
        ptq::outlier(
            &trained,
            &OutlierSettings {
                channel: Some(64),
                magnitude: 10.0
            }
        )
        .is_err()
    );
    assert!(
        ptq::outlier(
            &trained,
            &OutlierSettings {
                channel: None,
                magnitude: f64::NAN
            }
        )
        .is_err()
    );
}

#[test]
fn static_activation_scales_come_from_the_calibration_set() {
    let trained = ptq::train(&PtqSettings {
        epochs: 3,
        ..PtqSettings::default()
    })
    .unwrap();
    assert_eq!(trained.calibration.len(), ptq::CALIBRATION_EXAMPLES);
    let kind = GranularityKind::Channel;
    let w8 = ptq::weight_settings(8, kind);
    let fixed = ptq::measure(&trained, &w8, kind, Some(ActScales::StaticTensor)).unwrap();
    assert!(fixed.delta.abs() <= 0.02, "{fixed:?}");
    // Calibrated on faint inputs (÷ 100), the scales are far too small:
    // the test set's activations clip and the accuracy collapses — the
    // scales really are fixed beforehand, not taken from the test batch.
    let mut faint = trained.clone();
    for v in &mut faint.calibration.x {
        *v /= 100.0;
    }
    let clipped = ptq::measure(&faint, &w8, kind, Some(ActScales::StaticTensor)).unwrap();
    assert!(
        clipped.accuracy < fixed.accuracy - 0.2,
        "{clipped:?} vs {fixed:?}"
    );
    let dynamic = ptq::measure(&faint, &w8, kind, Some(ActScales::PerTensor)).unwrap();
    assert_eq!(
        dynamic.accuracy,
        ptq::measure(&trained, &w8, kind, Some(ActScales::PerTensor))
            .unwrap()
            .accuracy
    );
    let mut empty = trained.clone();
    empty.calibration = empty.calibration.first(0);
    assert!(matches!(
        ptq::measure(&empty, &w8, kind, Some(ActScales::StaticTensor)),
        Err(QuantError::Empty)
    ));
}
