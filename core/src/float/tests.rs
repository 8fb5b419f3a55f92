use super::*;

fn rne(format: &Format, x: f64) -> u32 {
    format.encode_f64(x, Rounding::NearestEven)
}

#[test]
fn range_tables_match_ieee_and_ocp() {
    let check = |f: Format, max: f64, min_normal: f64, min_sub: f64, eps: f64| {
        let r = f.range();
        assert_eq!(
            (r.max_finite, r.min_normal, r.min_subnormal, r.epsilon),
            (max, min_normal, min_sub, eps),
            "{}",
            f.name
        );
    };
    check(
        Format::fp32(),
        f64::from(f32::MAX),
        2f64.powi(-126),
        2f64.powi(-149),
        2f64.powi(-23),
    );
    check(
        Format::fp16(),
        65504.0,
        2f64.powi(-14),
        2f64.powi(-24),
        2f64.powi(-10),
    );
    check(
        Format::bf16(),
        (2.0 - 2f64.powi(-7)) * 2f64.powi(127),
        2f64.powi(-126),
        2f64.powi(-133),
        2f64.powi(-7),
    );
    check(
        Format::tf32(),
        (2.0 - 2f64.powi(-10)) * 2f64.powi(127),
        2f64.powi(-126),
        2f64.powi(-136),
        2f64.powi(-10),
    );
    check(
        Format::fp8_e4m3(),
        448.0,
        2f64.powi(-6),
        2f64.powi(-9),
        0.125,
    );
    check(
        Format::fp8_e5m2(),
        57344.0,
        2f64.powi(-14),
        2f64.powi(-16),
        0.25,
    );
    let fp16 = Format::fp16().range();
    assert!((fp16.min_normal - 6.103515625e-5).abs() < 1e-18);
    assert!((fp16.min_subnormal - 5.960464477539063e-8).abs() < 1e-20);
    assert_eq!(fp16.underflow_to_zero_at, 2f64.powi(-25));
    assert!(!Format::fp8_e4m3().range().has_infinity);
}

#[test]
fn fp16_rounding_modes_on_a_tie_and_between() {
    let fp16 = Format::fp16();
    // 1 + 2^-11 is exactly halfway between 0x3c00 (even) and 0x3c01.
    let tie = 1.0 + 2f64.powi(-11);
    assert_eq!(rne(&fp16, tie), 0x3c00);
    assert_eq!(fp16.encode_f64(tie, Rounding::NearestAway), 0x3c01);
    // 1 + 3·2^-11 is halfway between 0x3c01 (odd) and 0x3c02 (even).
    assert_eq!(rne(&fp16, 1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
    let between = 1.0 + 2f64.powi(-12);
    assert_eq!(fp16.encode_f64(between, Rounding::TowardPositive), 0x3c01);
    assert_eq!(fp16.encode_f64(between, Rounding::TowardZero), 0x3c00);
    assert_eq!(fp16.encode_f64(-between, Rounding::TowardNegative), 0xbc01);
    assert_eq!(fp16.encode_f64(-between, Rounding::TowardPositive), 0xbc00);
    assert_eq!(rne(&fp16, -0.0), 0x8000);
}

#[test]
fn fp16_overflow_by_mode() {
    let fp16 = Format::fp16();
    assert_eq!(rne(&fp16, 65504.0), 0x7bff);
    assert_eq!(rne(&fp16, 65519.99), 0x7bff);
    assert_eq!(rne(&fp16, 65520.0), 0x7c00); // the tie goes to even: infinity
    assert_eq!(fp16.encode_f64(65520.0, Rounding::TowardZero), 0x7bff);
    assert_eq!(fp16.encode_f64(1e9, Rounding::TowardNegative), 0x7bff);
    assert_eq!(fp16.encode_f64(-1e9, Rounding::TowardNegative), 0xfc00);
    assert_eq!(fp16.encode_f64(f64::INFINITY, Rounding::TowardZero), 0x7bff);
    let saturating = Format {
        saturate: true,
        ..Format::fp16()
    };
    assert_eq!(rne(&saturating, 1e9), 0x7bff);
}

#[test]
fn fp16_underflow_and_subnormals() {
    let fp16 = Format::fp16();
    assert_eq!(rne(&fp16, 2f64.powi(-24)), 0x0001);
    assert_eq!(rne(&fp16, 2f64.powi(-25)), 0x0000); // tie with 0: even wins
    assert_eq!(rne(&fp16, 2f64.powi(-25) * 1.0001), 0x0001);
    assert_eq!(rne(&fp16, 3.0 * 2f64.powi(-25)), 0x0002); // tie 1 vs 2: even
    assert_eq!(fp16.classify(0x03ff), Class::Subnormal);
    assert_eq!(fp16.classify(0x0400), Class::Normal);
    // Subnormal rounding carries into the smallest normal.
    assert_eq!(rne(&fp16, 2f64.powi(-14) * (1.0 - 2f64.powi(-12))), 0x0400);
}

#[test]
fn e4m3_has_no_infinity_and_one_nan() {
    let f = Format::fp8_e4m3();
    assert_eq!(rne(&f, 448.0), 0x7e);
    assert_eq!(rne(&f, 464.0), 0x7e); // tie between 448 (even) and 480 (not representable)
    let r = f.range();
    assert_eq!((r.overflow_tie, r.tie_overflows), (464.0, false));
    let r16 = Format::fp16().range();
    assert_eq!((r16.overflow_tie, r16.tie_overflows), (65520.0, true));
    assert_eq!(
        Format::fp16().classify(rne(&Format::fp16(), 65520.0)),
        Class::Infinite
    );
    assert_eq!(f.classify(rne(&f, 465.0)), Class::Nan);
    assert_eq!(f.classify(rne(&f, f64::INFINITY)), Class::Nan);
    assert_eq!(f.encode_f64(1e6, Rounding::TowardZero), 0x7e);
    assert_eq!(f.classify(0x7f), Class::Nan);
    assert_eq!(f.classify(0x7e), Class::Normal);
    assert_eq!(f.decode(0x78), 256.0); // all-ones exponent is a normal binade in FN
    let saturating = Format {
        saturate: true,
        ..Format::fp8_e4m3()
    };
    assert_eq!(rne(&saturating, 1e6), 0x7e);
    assert_eq!(rne(&saturating, -1e6), 0xfe);
    assert_eq!(f.next_up(0x7e), None);
    assert_eq!(Format::fp8_e5m2().decode(0x7b), 57344.0);
}

#[test]
fn one_rounding_from_f64() {
    // Just above fp16's midpoint between 1 and 1 + 2^-10, by less than f32 can hold:
    // f64 → f32 → fp16 double-rounds to 1.0; one rounding gives 1 + 2^-10.
    let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
    let fp16 = Format::fp16();
    let via_f32 = fp16.encode_f32(x as f32, Rounding::NearestEven);
    assert_eq!(via_f32, 0x3c00);
    assert_eq!(rne(&fp16, x), 0x3c01);
}

#[test]
fn neighbours_and_ulp_walk_the_whole_fp16_line() {
    let fp16 = Format::fp16();
    for bits in 0..=0xffffu32 {
        match fp16.classify(bits) {
            Class::Nan => assert_eq!(fp16.next_up(bits), None),
            Class::Infinite => {}
            _ => {
                let x = fp16.decode(bits);
                if let Some(up) = fp16.next_up(bits) {
                    let y = fp16.decode(up);
                    assert!(y > x || (x == 0.0 && y > 0.0), "{bits:#x}");
                    if fp16.classify(up) != Class::Infinite && x >= 0.0 {
                        assert_eq!(y - x, fp16.ulp(bits).unwrap_or(0.0), "{bits:#x}");
                    }
                    if bits != 0x8000 {
                        assert_eq!(fp16.next_down(up), Some(bits), "{bits:#x}");
                    }
                }
            }
        }
    }
    assert_eq!(fp16.next_up(0x7bff), Some(0x7c00));
    assert_eq!(fp16.next_up(0x8001), Some(0x8000));
    assert_eq!(fp16.next_down(0x0001), Some(0x0000));
    assert_eq!(fp16.next_down(0xfc00), None);
    assert_eq!(fp16.next_down(0x7c00), Some(0x7bff));
    assert_eq!(fp16.next_down(0x0000), Some(0x8001));
}

#[test]
fn every_pattern_of_small_formats_round_trips_through_encode() {
    for format in Format::builtins().into_iter().filter(|f| f.bits() <= 19) {
        for bits in 0..=format.pattern_mask() {
            let x = format.to_exact(bits);
            let back = format.encode(&x, Rounding::NearestEven);
            if format.classify(bits) == Class::Nan {
                assert_eq!(format.classify(back), Class::Nan);
            } else {
                assert_eq!(back, bits, "{} {bits:#x}", format.name);
                assert_eq!(format.decode(bits).to_bits(), x.to_f64().to_bits());
            }
        }
    }
}

#[test]
fn tf32_conventions_differ_on_a_tie() {
    // fp32 1 + 2^-11 sits exactly between two tf32 values (10 mantissa bits).
    let tie = tf32_conventions(1.0 + 2f32.powi(-11));
    let values: Vec<f64> = tie.results.iter().map(|r| r.value).collect();
    assert_eq!(values, vec![1.0, 1.0 + 2f64.powi(-10), 1.0]);
    // Above the tie, truncation is the odd one out.
    let above = tf32_conventions(1.0 + 2f32.powi(-11) + 2f32.powi(-20));
    assert_eq!(above.results[0].value, 1.0);
    assert_eq!(above.results[1].value, above.results[2].value);
    assert_eq!(above.results[2].f32_bits & 0x1fff, 0);
}

#[test]
fn stochastic_rounding_is_unbiased_and_seeded() {
    let fp16 = Format::fp16();
    let x = Exact::from_f64(1.0 + 0.3 * 2f64.powi(-10));
    let mut rounder = StochasticRounder::new(7);
    let n = 20_000;
    let ups = (0..n)
        .filter(|_| rounder.encode(&fp16, &x) == 0x3c01)
        .count();
    let p = ups as f64 / f64::from(n);
    assert!((p - 0.3).abs() < 0.02, "p = {p}");
    let mut again = StochasticRounder::new(7);
    let first: Vec<u32> = (0..50).map(|_| again.encode(&fp16, &x)).collect();
    let mut same = StochasticRounder::new(7);
    assert_eq!(
        first,
        (0..50).map(|_| same.encode(&fp16, &x)).collect::<Vec<_>>()
    );
    // Exact values are never moved.
    assert_eq!(rounder.encode(&fp16, &Exact::from_f64(1.5)), 0x3e00);
}

#[test]
fn demos_compute_the_classic_facts() {
    let fp16 = Format::fp16();
    let overflow = overflow_demo(&fp16);
    assert_eq!(
        (overflow.max_finite, overflow.first_overflowing),
        (65504.0, 65520.0)
    );
    assert_eq!(overflow.first_overflowing_rounds_to, f64::INFINITY);
    assert_eq!(overflow.just_below_rounds_to, 65504.0);

    let scaling = loss_scaling_demo(&fp16, 1e-8, 65536.0);
    assert_eq!(scaling.stored_unscaled, 0.0);
    assert!(scaling.recovered_rel_error < 1e-3, "{scaling:?}");

    let bf16 = accumulation_demo(&Format::bf16(), 10_000, 1, 100);
    assert_eq!(bf16.final_sum, 256.0);
    assert!(bf16.stalled_at_step.is_some());
    assert!((bf16.exact_sum - 5000.0).abs() < 150.0);
    let fp32 = accumulation_demo(&Format::fp32(), 10_000, 1, 100);
    assert!((fp32.final_sum - fp32.exact_sum).abs() < 0.05);
    let half = accumulation_demo(&fp16, 10_000, 1, 100);
    assert!(
        half.final_sum < 4200.0 && half.final_sum > 256.0,
        "{}",
        half.final_sum
    );

    let under = underflow_demo(&fp16);
    assert_eq!(under.threshold_rounds_to, 0.0);
    assert_eq!(under.just_above_rounds_to, under.min_subnormal);

    let eps = epsilon_demo(&fp16);
    assert_eq!(eps.one_plus_half_eps, 1.0);
    assert_eq!(eps.one_plus_smallest_visible, 1.0 + eps.epsilon);

    let curve = spacing_curve(&fp16);
    assert_eq!(curve.first(), Some(&(2f64.powi(-24), 2f64.powi(-24))));
    assert_eq!(curve.last(), Some(&(65504.0, 32.0)));
}

#[test]
fn formats_by_name() {
    assert_eq!(
        Format::by_name("E4M3").map(|f| f.name),
        Ok("fp8-e4m3".to_owned())
    );
    let custom = Format::by_name("e6m9").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((custom.bits(), custom.bias), (16, 31));
    assert!(Format::by_name("e9m3").is_err());
    assert!(Format::by_name("e4m0").is_err());
    assert!(Format::by_name("fp64").is_err());
    assert_eq!(Rounding::by_name("RNA"), Ok(Rounding::NearestAway));
    assert!(Rounding::by_name("nearest").is_err());
}

#[test]
fn describe_reports_error_ulp_and_neighbours() {
    let fp16 = Format::fp16();
    let d = fp16.describe(&Exact::from_f64(0.1), Rounding::NearestEven);
    assert_eq!(d.hex, "0x2e66");
    assert_eq!(d.binary, "0 01011 1001100110");
    assert_eq!(d.value, 0.0999755859375);
    assert!((d.rel_error - 2.44140625e-4).abs() < 1e-9);
    assert_eq!(d.ulp, Some(2f64.powi(-14)));
    assert_eq!(d.below, Some(0.0999755859375 - 2f64.powi(-14)));
    assert_eq!(d.class, Class::Normal);
}

#[test]
fn an_overflow_to_nan_has_the_largest_finite_as_its_neighbour() {
    // E4M3 has no infinity: 1e6 becomes NaN, just past 448.
    let e4m3 = Format::fp8_e4m3();
    let big = e4m3.describe(&Exact::from_f64(1e6), Rounding::NearestEven);
    assert_eq!(big.class, Class::Nan);
    assert_eq!((big.below, big.above), (Some(448.0), None));
    let small = e4m3.describe(&Exact::from_f64(-1e6), Rounding::NearestEven);
    assert_eq!((small.below, small.above), (None, Some(-448.0)));
    // A NaN typed as NaN has none; fp16's overflow to inf steps in to 65504.
    let nan = e4m3.describe(&Exact::nan(), Rounding::NearestEven);
    assert_eq!((nan.below, nan.above), (None, None));
    let inf = Format::fp16().describe(&Exact::from_f64(1e6), Rounding::NearestEven);
    assert_eq!((inf.below, inf.above), (Some(65504.0), None));
}

#[test]
fn the_hair_above_half_epsilon_is_a_different_number_and_leaves_one() {
    let e = epsilon_demo(&Format::fp16());
    assert_ne!(show(e.smallest_visible_addend), show(e.epsilon / 2.0));
    assert_eq!(e.one_plus_half_eps, 1.0);
    assert!(e.one_plus_smallest_visible > 1.0);
}

#[test]
fn an_f32_reads_as_its_own_shortest_text() {
    assert_eq!(show_f32(1.0), "1");
    assert_eq!(show_f32(0.0), "0");
    assert_eq!(show_f32(-0.0), "-0");
    assert_eq!(show_f32(0.1), "0.1");
    assert_eq!(show_f32(1e-6), "1e-6");
    assert_eq!(show_f32(f32::INFINITY), "+inf");
    assert_eq!(show_f32(f32::NAN), "NaN");
}
