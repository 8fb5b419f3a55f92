#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;

use super::*;
use crate::kernels::{DeviceLimits, GemmKind, Kernel, Problem, plan};

/// The plain reference: every product summed in i64, which cannot overflow.
fn reference(m: usize, n: usize, k: usize, a: &[i8], b: &[i8]) -> Vec<i64> {
    let mut c = vec![0i64; m * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                c[i * n + j] += i64::from(a[i * k + p]) * i64::from(b[p * n + j]);
            }
        }
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Every accepted shape, K = 1 and K not a multiple of 4 among them,
    /// on values that include −128.
    #[test]
    fn the_int32_gemm_equals_the_wide_reference(
        m in 1usize..6, n in 1usize..6, k in 1usize..40, seed in any::<u64>(),
    ) {
        let shape = GemmShape::new(m as u32, n as u32, k as u32).unwrap();
        let (mut a, b) = seeded_operands(shape, seed);
        a[..k].fill(-128);
        let got = gemm_i32(shape, &a, &b).unwrap();
        let want = reference(m, n, k, &a, &b);
        prop_assert_eq!(got.iter().map(|&x| i64::from(x)).collect::<Vec<_>>(), want);
    }

    /// The fixed-point requantisation equals the exact rational rounding
    /// (taken in i128 by floor division), and lies within half a code plus
    /// the multiplier's 31-bit representation error of acc · real.
    #[test]
    fn requantisation_rounds_the_exact_product(
        log_real in -20.0f64..8.0, acc in any::<i32>(), zero in -128i32..=127,
    ) {
        let real = 2f64.powf(log_real);
        let r = Requant::new(real, zero).unwrap();
        prop_assert!((r.real() - real).abs() <= real * 2f64.powi(-31));
        let num = i128::from(acc) * i128::from(r.multiplier);
        let den = 1i128 << r.shift;
        let (floor, rem) = (num.div_euclid(den), num.rem_euclid(den));
        // Half away from zero: a tie goes up for a positive product, down
        // (towards −∞ is away from zero) for a negative one.
        let rounded = if num >= 0 { floor + i128::from(2 * rem >= den) } else { floor + i128::from(2 * rem > den) };
        let want = (rounded + i128::from(zero)).clamp(-128, 127) as i8;
        prop_assert_eq!(r.apply(acc), want);
        let ideal = f64::from(acc) * real + f64::from(zero);
        if (-128.0..=127.0).contains(&ideal) {
            let slack = 0.5 + f64::from(acc).abs() * real * 2f64.powi(-31) + 1e-9;
            prop_assert!((f64::from(r.apply(acc)) - ideal).abs() <= slack);
        }
    }
}

#[test]
fn the_largest_k_fits_int32_on_the_worst_input_and_one_more_is_refused() {
    assert_eq!(MAX_K, 131_071);
    let k = MAX_K as usize;
    let (a, b) = (vec![-128i8; k], vec![-128i8; k]);
    let shape = GemmShape::new(1, 1, MAX_K).unwrap();
    let got = gemm_i32(shape, &a, &b).unwrap();
    assert_eq!(i64::from(got[0]), 131_071 * 16_384);
    assert_eq!(shape.words_per_row(), 32_768);
    assert!(shape.words_per_row() < crate::kernels::LOOP_BUDGET);
    let err = GemmShape::new(1, 1, MAX_K + 1).unwrap_err();
    assert_eq!(
        err,
        QuantError::GemmK {
            k: MAX_K + 1,
            max: MAX_K
        }
    );
    assert!(err.to_string().contains("131071"), "{err}");
    // 131,072 products of 2¹⁴ are 2³¹: one past i32::MAX.
    assert!(i64::from(MAX_K + 1) * MAX_PRODUCT > i64::from(i32::MAX));
}

#[test]
fn empty_shapes_and_mismatched_buffers_are_refused() {
    assert!(matches!(
        GemmShape::new(0, 3, 3),
        Err(QuantError::GemmEmpty { .. })
    ));
    assert!(matches!(
        GemmShape::new(3, 3, 0),
        Err(QuantError::GemmEmpty { .. })
    ));
    assert!(matches!(
        GemmShape::new(1 << 16, 1 << 16, 4),
        Err(QuantError::GemmOutputs { .. })
    ));
    let shape = GemmShape::new(2, 2, 3).unwrap();
    assert!(matches!(
        gemm_i32(shape, &[1; 5], &[1; 6]),
        Err(QuantError::Shape {
            len: 5,
            rows: 2,
            cols: 3
        })
    ));
}

#[test]
fn a_16_bit_accumulator_wraps_on_the_third_product_of_127s() {
    let (a, b) = int16_example();
    let s = dot_i16(&a, &b);
    assert_eq!(s.exact, 3 * 16_129);
    assert_eq!(i64::from(s.wrapped), 3 * 16_129 - 65_536);
    assert_eq!(s.first_overflow, Some(2));
    // Two products of (−128)² already pass 32,767; an int32 holds both.
    let s = dot_i16(&[-128, -128], &[-128, -128]);
    assert_eq!(
        (s.exact, s.wrapped, s.first_overflow),
        (32_768, -32_768, Some(1))
    );
    let shape = GemmShape::new(1, 1, 3).unwrap();
    assert_eq!(gemm_i32(shape, &a, &b).unwrap(), vec![48_387]);
}

#[test]
fn multipliers_out_of_reach_are_refused() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-30, 1e12] {
        assert!(
            matches!(Requant::new(bad, 0), Err(QuantError::Multiplier { .. })),
            "{bad}"
        );
    }
    assert!(matches!(
        Requant::new(0.5, 128),
        Err(QuantError::ZeroPoint { value: 128 })
    ));
    // Powers of two are held exactly, at the top of the multiplier's range.
    let r = Requant::new(0.25, 0).unwrap();
    assert_eq!((r.multiplier, r.shift), (1 << 30, 32));
    assert_eq!(r.apply(6), 2); // 1.5 rounds away from zero
    assert_eq!(r.apply(-6), -2);
    assert_eq!(r.apply(1_000), 127);
    assert_eq!(r.apply(-1_000), -128);
}

#[test]
fn the_packed_rungs_read_a_quarter_of_the_f32_naive_rungs_bytes() {
    let shape = GemmShape::new(64, 32, 256).unwrap();
    let f32_naive = plan(
        Kernel::Gemm(GemmKind::Naive),
        Problem::gemm(64, 32, 256),
        DeviceLimits::TYPICAL,
    )
    .unwrap()
    .1;
    for kernel in Int8Kernel::ALL {
        let t = kernel.traffic(shape);
        assert_eq!(t.bytes_written, f32_naive.bytes_written);
        assert_eq!(4 * t.bytes_read, f32_naive.bytes_read);
        assert_eq!(kernel.ops(shape), 2.0 * 64.0 * 32.0 * 256.0);
    }
    // K = 5 pads its second word: the reads are whole words.
    let odd = GemmShape::new(3, 2, 5).unwrap();
    assert_eq!(Int8Kernel::Dot4.traffic(odd).bytes_read, 8 * 6 * 2);
    // Past 65,535 workgroups the grid wraps into y and still covers every output.
    let wide = GemmShape::new(1 << 12, 1 << 11, 4).unwrap();
    let [x, y, _] = wide.workgroups();
    assert!(x <= MAX_WORKGROUPS_PER_DIM && u64::from(x) * u64::from(y) * 64 >= wide.outputs());
}
