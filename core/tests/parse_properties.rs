//! Property tests of the float parser and the batch converter against an
//! independent reference: the text's exact value as a big rational, rounded
//! once (nearest-even) by the code below, not through an f64 (which would
//! round twice). Fixed seeds, so a failure reproduces; ≈ 20,000 cases each.

use dlsys_core::float::batch::convert_batch;
use dlsys_core::float::{Exact, Format, Rounding, parse_input, parse_number};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One as _, Signed as _, Zero as _};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// A runner with a fixed seed and no persistence files.
fn runner(cases: u32, seed: u8) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    )
}

/// What a text means: an exact rational, or a magnitude too far out for any
/// format (`Huge`: overflows; `Tiny`: zero, or rounds to zero), with its sign.
#[derive(Clone, Debug)]
enum Value {
    Exact(BigRational),
    Huge(bool),
    Tiny(bool),
}

fn pow(base: u32, exp: u32) -> BigInt {
    num_traits::pow(BigInt::from(base), exp as usize)
}

/// `digits × base^exp` (exp may be negative), or beyond any format's range.
fn scaled(negative: bool, digits: &BigInt, base: u32, exp: i64) -> Value {
    if digits.is_zero() {
        // A signed zero: `-0` is −0.
        return Value::Tiny(negative);
    }
    // Mantissas here have at most 60 digits: |exp| > 2000 is far out of range.
    if exp > 2000 {
        return Value::Huge(negative);
    }
    if exp < -2000 {
        return Value::Tiny(negative);
    }
    let magnitude = if exp >= 0 {
        BigRational::from_integer(digits * pow(base, exp as u32))
    } else {
        BigRational::new(digits.clone(), pow(base, (-exp) as u32))
    };
    Value::Exact(if negative { -magnitude } else { magnitude })
}

/// Rounds `value` into an IEEE-style `format` (with infinities), nearest-even.
fn reference_bits(value: &Value, format: &Format) -> u32 {
    let man = format.man_bits;
    let sign_bit = 1u32 << (format.exp_bits + man);
    let inf = ((1u32 << format.exp_bits) - 1) << man;
    let (negative, q) = match value {
        Value::Huge(negative) => return if *negative { sign_bit | inf } else { inf },
        Value::Tiny(negative) => return if *negative { sign_bit } else { 0 },
        Value::Exact(q) => (q.is_negative(), q.abs()),
    };
    let sign = if negative { sign_bit } else { 0 };
    if q.is_zero() {
        return sign;
    }
    // e = floor(log2 q), from the bit lengths, then corrected.
    let mut e = q.numer().bits() as i64 - q.denom().bits() as i64;
    let two = BigRational::from_integer(BigInt::from(2));
    let pow2 = |k: i64| {
        if k >= 0 {
            num_traits::pow(two.clone(), k as usize)
        } else {
            BigRational::one() / num_traits::pow(two.clone(), (-k) as usize)
        }
    };
    while pow2(e) > q {
        e -= 1;
    }
    while pow2(e + 1) <= q {
        e += 1;
    }
    let bias = i64::from(format.bias);
    let emin = 1 - bias;
    let quantum = e.max(emin) - i64::from(man);
    let scaled = &q / pow2(quantum);
    let mut n = scaled.to_integer();
    let rest = &scaled - BigRational::from_integer(n.clone());
    let half = BigRational::new(BigInt::one(), BigInt::from(2));
    if rest > half || (rest == half && (&n % 2u32) == BigInt::one()) {
        n += 1;
    }
    let n: u64 = n.try_into().unwrap_or(u64::MAX);
    let implicit = 1u64 << man;
    if n < implicit {
        // Subnormal (or rounded up to the smallest normal, which n == implicit covers).
        return sign | n as u32;
    }
    let (n, exponent) = if n >= implicit << 1 {
        (n >> 1, quantum + i64::from(man) + 1)
    } else {
        (n, quantum + i64::from(man))
    };
    let biased = exponent + bias;
    if biased >= (1i64 << format.exp_bits) - 1 {
        return sign | inf;
    }
    sign | (biased as u32) << man | (n - implicit) as u32
}

/// How a decimal's exponent is written.
#[derive(Clone, Debug)]
enum Exponent {
    None,
    /// `e{k}`.
    Whole(i64),
    /// `e99999999999999999999` (or with `-`): longer than any integer type.
    Endless {
        negative: bool,
    },
}

/// A decimal: sign, integer and fraction digits, and an exponent that is
/// usually small and sometimes absurd.
fn decimal() -> impl Strategy<Value = (String, Value)> {
    let exponent = prop_oneof![
        1 => Just(Exponent::None),
        4 => (-60i64..60).prop_map(Exponent::Whole),
        1 => (-400i64..400).prop_map(Exponent::Whole),
        1 => prop_oneof![
            Just(i64::MAX),
            Just(i64::MIN + 1),
            10_000i64..i64::MAX / 2,
            i64::MIN / 2..-10_000,
        ]
        .prop_map(Exponent::Whole),
        1 => any::<bool>().prop_map(|negative| Exponent::Endless { negative }),
    ];
    (
        any::<bool>(),
        "[0-9]{0,25}",
        "[0-9]{0,25}",
        any::<bool>(),
        exponent,
    )
        .prop_filter("a digit", |(_, int, frac, _, _)| {
            !int.is_empty() || !frac.is_empty()
        })
        .prop_map(|(negative, int, frac, point, exponent)| {
            let mut text = if negative {
                "-".to_owned()
            } else {
                String::new()
            };
            text.push_str(&int);
            if point || int.is_empty() {
                text.push('.');
                text.push_str(&frac);
            }
            let frac_digits = if point || int.is_empty() {
                frac.as_str()
            } else {
                ""
            };
            let exp10 = match exponent {
                Exponent::None => 0,
                Exponent::Whole(k) => {
                    text.push_str(&format!("e{k}"));
                    k
                }
                Exponent::Endless { negative } => {
                    text.push_str(if negative { "e-" } else { "e" });
                    text.push_str("99999999999999999999");
                    if negative { i64::MIN / 2 } else { i64::MAX / 2 }
                }
            };
            let digits: BigInt = format!("0{int}{frac_digits}").parse().unwrap_or_default();
            let value = scaled(
                negative,
                &digits,
                10,
                exp10.saturating_sub(frac_digits.len() as i64),
            );
            (text, value)
        })
}

/// A hex float `0xH.HpE` or a power of two `2^k`.
fn binary() -> impl Strategy<Value = (String, Value)> {
    let hex = (
        any::<bool>(),
        "[0-9a-f]{1,14}",
        "[0-9a-f]{0,14}",
        prop_oneof![
            3 => -200i64..200,
            1 => prop_oneof![Just(i32::MIN as i64), Just(i32::MAX as i64), Just(100_001i64), (-3_000_000_000i64..3_000_000_000)],
        ],
    )
        .prop_map(|(negative, int, frac, exp)| {
            let sign = if negative { "-" } else { "" };
            let text = format!("{sign}0x{int}.{frac}p{exp}");
            let digits = BigInt::parse_bytes(format!("0{int}{frac}").as_bytes(), 16).unwrap_or_default();
            (text, scaled(negative, &digits, 2, exp - 4 * frac.len() as i64))
        });
    let power = (
        any::<bool>(),
        prop_oneof![3 => -200i64..200, 1 => -5_000_000_000i64..5_000_000_000],
    )
        .prop_map(|(negative, k)| {
            let sign = if negative { "-" } else { "" };
            (
                format!("{sign}2^{k}"),
                scaled(negative, &BigInt::one(), 2, k),
            )
        });
    prop_oneof![hex, power]
}

fn formats() -> [Format; 3] {
    [Format::fp32(), Format::fp16(), Format::bf16()]
}

fn check_text(text: &str, value: &Value) -> Result<(), TestCaseError> {
    let parsed = parse_input(text, &Format::fp32())
        .map_err(|e| TestCaseError::fail(format!("`{text}` refused: {e}")))?;
    for format in formats() {
        let got = format.encode(&parsed.exact, Rounding::NearestEven);
        let want = reference_bits(value, &format);
        prop_assert_eq!(got, want, "`{}` in {}", text, format.name);
    }
    // The answer reader gives the same value, rounded once into f64.
    let answer = parse_number(text).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let in_f64 = Format::fp32().encode(&Exact::from_f64(answer), Rounding::NearestEven);
    let direct = Format::fp32().encode(&parsed.exact, Rounding::NearestEven);
    // Rounding through f64 first may differ only by a double rounding in fp32's
    // last place; infinities and zeros must agree.
    let special = |bits: u32| bits & 0x7fff_ffff == 0 || bits & 0x7f80_0000 == 0x7f80_0000;
    if special(direct) || special(in_f64) {
        prop_assert_eq!(in_f64, direct, "`{}` read as an answer", text);
    }
    Ok(())
}

#[test]
fn every_decimal_reads_as_its_exact_value_rounded_once() {
    runner(10_000, 7)
        .run(&decimal(), |(text, value)| check_text(&text, &value))
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn every_hex_float_and_power_of_two_reads_as_its_exact_value() {
    runner(6_000, 8)
        .run(&binary(), |(text, value)| check_text(&text, &value))
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn any_text_is_a_value_or_an_error_never_a_panic() {
    runner(4_000, 9)
        .run(&"\\PC{0,40}", |text| {
            if let Ok(parsed) = parse_input(&text, &Format::fp16()) {
                for format in Format::builtins() {
                    let _ = format.encode(&parsed.exact, Rounding::NearestEven);
                }
            }
            let _ = parse_number(&text);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn the_batch_converter_answers_every_line_with_the_reference() {
    let line = prop_oneof![
        4 => any::<u32>().prop_map(|bits| (format!("0x{bits:08x}"), Some(bits))),
        1 => any::<u32>().prop_map(|bits| (format!("{bits:x}"), Some(bits))),
        1 => "[ -~]{0,12}".prop_map(|text| (text, None)),
    ];
    runner(400, 10)
        .run(&prop::collection::vec(line, 1..50), |lines| {
            let input: String = lines.iter().map(|(text, _)| format!("{text}\n")).collect();
            for format in formats() {
                let mut out = Vec::new();
                let report = convert_batch(
                    input.as_bytes(),
                    &mut out,
                    &format,
                    Rounding::NearestEven,
                    0,
                    |_, _| {},
                )
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let out = String::from_utf8_lossy(&out).into_owned();
                let answers: Vec<&str> = out.lines().collect();
                prop_assert_eq!(answers.len(), lines.len());
                prop_assert_eq!(report.lines, lines.len());
                for ((text, _), answer) in lines.iter().zip(&answers) {
                    match f32_pattern(text) {
                        // NaNs keep their payload rules (tested elsewhere).
                        Some(bits) if f32::from_bits(bits).is_nan() => {}
                        Some(bits) => {
                            let value = Value::Exact(exact_rational(bits));
                            let width = format.bits().div_ceil(4) as usize;
                            let want = format!("0x{:0width$x}", reference_bits(&value, &format));
                            prop_assert_eq!(
                                *answer,
                                want.as_str(),
                                "`{}` into {}",
                                text,
                                format.name
                            );
                        }
                        None => prop_assert_eq!(*answer, "invalid", "`{}`", text),
                    }
                }
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

/// What a batch line means, read independently: up to 8 hex digits, `0x`
/// optional, surrounding white space ignored.
fn f32_pattern(line: &str) -> Option<u32> {
    let text = line.trim();
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    let ok = (1..=8).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then(|| u32::from_str_radix(digits, 16).ok()).flatten()
}

/// The exact value of an fp32 pattern (finite or infinite), as a rational;
/// infinities become values far beyond every format.
fn exact_rational(bits: u32) -> BigRational {
    let negative = bits >> 31 == 1;
    let exp = (bits >> 23) & 0xff;
    let frac = i64::from(bits & 0x7f_ffff);
    let value = match exp {
        0 => match scaled(false, &BigInt::from(frac), 2, -149) {
            Value::Exact(q) => q,
            _ => BigRational::zero(),
        },
        255 => BigRational::from_integer(pow(2, 4000)),
        _ => match scaled(
            false,
            &BigInt::from(frac | 1 << 23),
            2,
            i64::from(exp) - 150,
        ) {
            Value::Exact(q) => q,
            _ => BigRational::zero(),
        },
    };
    if negative { -value } else { value }
}
