#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::quant::fp8_train::{self, Fp8TrainSettings, Recipe};

fn e4m3() -> Format {
    Format {
        saturate: true,
        ..Format::fp8_e4m3()
    }
}

#[test]
fn current_scaling_puts_the_amax_on_the_largest_value_and_rounds_within_half_an_ulp() {
    let mut cast = ScaledCast::new(e4m3(), Fp8Scaling::Current, 0);
    let original = [2.0f32, -1.3, 0.37, 1e-3, 0.0];
    let mut values = original;
    let stats = cast.cast(&mut values);
    assert_eq!((stats.amax, stats.scale), (2.0, 224.0));
    assert_eq!(values[0], 2.0);
    assert_eq!(values[4], 0.0);
    // Three mantissa bits: a normal value is off by at most 2⁻⁴ of itself.
    for (x, y) in original.iter().zip(&values).take(3) {
        assert!((x - y).abs() <= x.abs() / 16.0, "{x} → {y}");
    }
    assert_eq!((stats.overflowed, stats.saturated), (0, 0));
    // A margin of 2 leaves the amax two binades below 448.
    let margin = ScaledCast::new(e4m3(), Fp8Scaling::Current, 2);
    assert_eq!(margin.scale_for(2.0), 56.0);
}

#[test]
fn delayed_scaling_uses_the_history_before_the_tensor_and_forgets_the_oldest() {
    let mut cast = ScaledCast::new(e4m3(), Fp8Scaling::Delayed { history: 2 }, 0);
    // No history yet: scale 1, as TE starts.
    assert_eq!(cast.cast(&mut [4.0f32, 1.0]).scale, 1.0);
    assert_eq!(cast.cast(&mut [1.0f32]).scale, 448.0 / 4.0);
    assert_eq!(cast.cast(&mut [0.5f32]).scale, 448.0 / 4.0);
    // The 4 has left a history of two: max(1, 0.5) = 1.
    assert_eq!(cast.cast(&mut [0.5f32]).scale, 448.0);
}

#[test]
fn a_stale_scale_saturates_or_overflows_as_the_conversion_says() {
    let values = [0.5f32, 1.0, 3.0, -4.0];
    let e = stale_scale(&values, 1.0, &Format::fp8_e4m3(), 0);
    // Scale 448 from the history: 3 and −4 land past 448.
    assert_eq!(e.saturating.scale, 448.0);
    assert_eq!((e.saturating.saturated, e.saturating.overflowed), (2, 0));
    assert_eq!((e.overflowing.saturated, e.overflowing.overflowed), (0, 2));
    // E5M2 has infinities: the same story with ±inf.
    let f = stale_scale(&values, 1.0, &Format::fp8_e5m2(), 0);
    assert_eq!(f.overflowing.overflowed, 2);
}

#[test]
fn hybrid_fp8_and_bf16_train_the_mlp_and_count_their_casts() {
    let run = |recipe| {
        fp8_train::train(
            &Fp8TrainSettings {
                recipe,
                epochs: 2,
                ..Fp8TrainSettings::default()
            },
            &mut |_, _| true,
        )
        .unwrap()
    };
    let fp32 = run(Recipe::Fp32);
    assert_eq!((fp32.forward.values, fp32.backward.values), (0, 0));
    for recipe in [
        Recipe::Bf16,
        Recipe::Hybrid(Fp8Scaling::Current),
        Recipe::Hybrid(Fp8Scaling::Delayed { history: 16 }),
    ] {
        let r = run(recipe);
        assert_eq!(r.accuracy.len(), 2);
        assert!(r.loss.iter().all(|l| l.is_finite()), "{r:?}");
        assert!(r.forward.values > 0 && r.backward.values > 0, "{r:?}");
        assert_eq!(
            (r.forward.overflowed, r.backward.overflowed),
            (0, 0),
            "{r:?}"
        );
        // Within a few points of fp32 after two epochs on the digits.
        assert!(
            r.accuracy[1] > fp32.accuracy[1] - 0.05,
            "{recipe:?}: {r:?} vs {fp32:?}"
        );
        // The casts changed the numbers: not fp32's run.
        assert_ne!(r.loss, fp32.loss);
    }
    let too_long = Fp8TrainSettings {
        epochs: fp8_train::MAX_FP8_EPOCHS + 1,
        ..Fp8TrainSettings::default()
    };
    assert!(fp8_train::train(&too_long, &mut |_, _| true).is_err());
}

#[test]
fn fp8s_grid_crowds_zero_where_int8s_is_even() {
    // A bell of values: most near zero, a few out at ±3.
    let values: Vec<f32> = (0..2001)
        .map(|i| ((i as f32 - 1000.0) / 1000.0).powi(3) * 3.0)
        .collect();
    let c = versus_int8(&values, &Format::fp8_e4m3()).unwrap();
    assert_eq!(c.int8_grid.len(), 255);
    let step = c.int8_grid[1] - c.int8_grid[0];
    assert!(
        c.int8_grid
            .windows(2)
            .all(|w| ((w[1] - w[0]) - step).abs() < 1e-12)
    );
    // E4M3 within ±amax: 0, and 126 magnitudes a side down to the smallest
    // subnormal; steps grow from 2⁻⁹ of the scale's unit near zero to 32 at 448.
    assert_eq!(c.fp8_grid.len(), 253);
    let first = c.fp8_grid[127] - c.fp8_grid[126];
    let last = c.fp8_grid[252] - c.fp8_grid[251];
    assert!(last / first > 1000.0, "{first} {last}");
    // An even spread keeps more of its signal in int8 (7 bits of
    // resolution everywhere against fp8's 3 of mantissa); one outlier 100×
    // the rest turns it round: int8's step grows with the outlier and the
    // rest round to a few codes, fp8's relative step does not.
    let even: Vec<f32> = (0..2000).map(|i| (i as f32 * 0.7).sin()).collect();
    let e = versus_int8(&even, &Format::fp8_e4m3()).unwrap();
    assert!(
        e.int8_error.sqnr_db > e.fp8_error.sqnr_db && !e.fp8_wins,
        "{e:?}"
    );
    let mut spiked = even.clone();
    spiked[0] = 100.0;
    let o = versus_int8(&spiked, &Format::fp8_e4m3()).unwrap();
    assert!(
        o.fp8_error.sqnr_db > o.int8_error.sqnr_db && o.fp8_wins,
        "{o:?}"
    );
    assert!(versus_int8(&[1.0, f32::NAN], &Format::fp8_e4m3()).is_err());
}
