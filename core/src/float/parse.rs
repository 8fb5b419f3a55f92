//! Reading a value exactly: decimal and scientific (correctly rounded in one
//! step, however many digits), hex floats, powers of two, `inf`, `nan`, `-0`,
//! and raw bit patterns of a chosen format (`0x3c00`, `0b…`, `fp16:0x3c00`).
//!
//! This is the one number parser of the crate. Two entry points read text in
//! two dialects:
//! - [`parse_input`], the float explorer's: a bare `0x…` without `p` or `.`
//!   is a bit pattern of a format;
//! - [`parse_number`], an exercise answer's: every `0x…` is a hex float, no
//!   bit patterns, whitespace anywhere is ignored; the value is an `f64`.
//!
//! [`parse_pattern`] reads a bit pattern of a given width for both.

use super::exact_text::{
    MAX_BINARY_EXPONENT, MAX_TEXT_CHARS, parse_decimal, parse_exponent, parse_hex_float,
};
use super::{Exact, Format, FormatError, Magnitude};

/// How the text was read.
#[derive(Clone, Debug, PartialEq)]
pub enum InputKind {
    Decimal,
    HexFloat,
    PowerOfTwo,
    Special,
    /// A raw pattern of `format`.
    Bits {
        format: Format,
        bits: u32,
    },
}

/// A parsed input: its exact value and how it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedInput {
    pub exact: Exact,
    pub kind: InputKind,
}

/// Which reader produced an error: the float explorer's or an exercise
/// answer's (whose messages are whole sentences and whose hints differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// [`parse_input`]: bit patterns allowed.
    Value,
    /// [`parse_number`] and answer bit patterns.
    Answer,
}

crate::catalog_error! {
    /// Why text could not be read as a value or a bit pattern. `text` is
    /// what was typed (trimmed).
    #[derive(serde::Serialize, serde::Deserialize)]
    pub enum ParseError {
        Empty = "parse.empty",
        TooLong = "parse.too_long",
        /// `FORMAT:` named no format.
        UnknownFormat { reason: FormatError } = "parse.format",
        /// A bit pattern written with a sign.
        SignedPattern = "parse.signed_pattern",
        /// `2^` not followed by a whole exponent.
        PowerExponent { text: String } = "parse.power_exponent",
        HexFloat { text: String } = "parse.hex_float",
        NotANumber { text: String } = "parse.not_a_number",
        /// Neither `0x…` nor `0b…` (nor, in an answer, bare binary digits).
        NotAPattern { text: String } = "parse.not_a_pattern",
        /// `0x` or `0b` with no digits after it.
        NoDigits { text: String } = "parse.no_digits",
        /// Digits outside the radix.
        BadDigits { text: String } = "parse.bad_digits",
        /// More bits than an answer has.
        TooWide { text: String, width: u32 } = "parse.too_wide",
        /// More bits than the format has.
        TooWideFor { text: String, width: u32, format: String } = "parse.too_wide_for",
    }
}

/// Parses `text`. Bare `0x…` (no `p`, no `.`) and `0b…` are bit patterns of
/// `bits_format`; `FORMAT:PATTERN` names the format explicitly.
pub fn parse_input(text: &str, bits_format: &Format) -> Result<ParsedInput, ParseError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ParseError::Empty);
    }
    if trimmed.chars().count() > MAX_TEXT_CHARS {
        return Err(ParseError::TooLong);
    }
    if let Some((prefix, pattern)) = trimmed.split_once(':') {
        let format =
            Format::by_name(prefix).map_err(|reason| ParseError::UnknownFormat { reason })?;
        return parse_bits(pattern.trim(), &format);
    }
    let lower = trimmed.to_ascii_lowercase().replace('_', "");
    let (negative, body) = split_sign(&lower);
    let body = body.trim_start();
    if (body.starts_with("0x") && !body.contains(['p', '.'])) || body.starts_with("0b") {
        if negative {
            return Err(ParseError::SignedPattern);
        }
        return parse_bits(body, bits_format);
    }
    parse_value(trimmed, negative, body)
}

/// Reads a number as an exercise answer: decimal, scientific, `inf`, `nan`,
/// a hex float (`0x1.8p-3`; any `0x…` is one, `0x3c00` is 15360) or a power
/// of two (`2^-24`, since powers of two are the currency here). Whitespace
/// and `_` anywhere are ignored. The value is the exact one rounded once to
/// the nearest `f64`.
pub fn parse_number(text: &str) -> Result<f64, ParseError> {
    let trimmed = text.trim();
    if trimmed.chars().count() > MAX_TEXT_CHARS {
        return Err(ParseError::TooLong);
    }
    let lower: String = trimmed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '_')
        .collect::<String>()
        .to_ascii_lowercase();
    let (negative, body) = split_sign(&lower);
    parse_value(trimmed, negative, body).map(|parsed| parsed.exact.to_f64())
}

/// Reads a bit pattern of at most `width` (≤ 64) bits: `0x3c00` or `0b…`,
/// and in an answer also bare binary digits. `_`, `'` and spaces (in an
/// answer, any whitespace) are ignored.
pub fn parse_pattern(text: &str, width: u32, dialect: Dialect) -> Result<u64, ParseError> {
    let clean: String = text
        .chars()
        .filter(|c| match dialect {
            Dialect::Value => !matches!(c, '_' | ' ' | '\''),
            Dialect::Answer => !c.is_whitespace() && !matches!(c, '_' | '\''),
        })
        .collect();
    let lower = clean.to_ascii_lowercase();
    let (digits, radix) = if let Some(hex) = lower.strip_prefix("0x") {
        (hex, 16)
    } else if let Some(bin) = lower.strip_prefix("0b") {
        (bin, 2)
    } else if dialect == Dialect::Answer && lower.chars().all(|c| c == '0' || c == '1') {
        (lower.as_str(), 2)
    } else {
        return Err(ParseError::NotAPattern {
            text: text.to_owned(),
        });
    };
    if digits.is_empty() {
        return Err(ParseError::NoDigits {
            text: text.to_owned(),
        });
    }
    // `from_str_radix` would take a sign (`0x+3c00`); a pattern has none.
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(ParseError::BadDigits {
            text: text.to_owned(),
        });
    }
    let bits = u64::from_str_radix(digits, radix).map_err(|_| ParseError::BadDigits {
        text: text.to_owned(),
    })?;
    if width < 64 && bits >> width != 0 {
        return Err(ParseError::TooWide {
            text: text.to_owned(),
            width,
        });
    }
    Ok(bits)
}

/// `-x` → (true, `x`), `+x` → (false, `x`).
fn split_sign(lower: &str) -> (bool, &str) {
    match lower.as_bytes().first() {
        Some(b'-') => (true, &lower[1..]),
        Some(b'+') => (false, &lower[1..]),
        _ => (false, lower),
    }
}

/// A special, a power of two, a hex float or a decimal (lower-case, unsigned
/// `body`); `text` is what was typed, for the messages.
fn parse_value(text: &str, negative: bool, body: &str) -> Result<ParsedInput, ParseError> {
    let special = match body {
        "inf" | "infinity" | "∞" => Some(Exact::infinity(negative)),
        "nan" => Some(Exact {
            negative,
            ..Exact::nan()
        }),
        _ => None,
    };
    if let Some(exact) = special {
        return Ok(ParsedInput {
            exact,
            kind: InputKind::Special,
        });
    }
    if let Some(exp) = body.strip_prefix("2^") {
        let exp = exp.trim_start_matches('(').trim_end_matches(')');
        let k = parse_exponent(exp).ok_or_else(|| ParseError::PowerExponent {
            text: text.to_owned(),
        })?;
        // Saturated far beyond every format's range: the value rounds the same.
        let k = k.clamp(-MAX_BINARY_EXPONENT, MAX_BINARY_EXPONENT) as i32;
        return Ok(ParsedInput {
            exact: Exact {
                negative,
                magnitude: Magnitude::Finite { mant: 1, exp: k },
            },
            kind: InputKind::PowerOfTwo,
        });
    }
    if let Some(hex) = body.strip_prefix("0x") {
        let magnitude = parse_hex_float(hex).ok_or_else(|| ParseError::HexFloat {
            text: text.to_owned(),
        })?;
        return Ok(ParsedInput {
            exact: Exact {
                negative,
                magnitude,
            },
            kind: InputKind::HexFloat,
        });
    }
    let magnitude = parse_decimal(body).ok_or_else(|| ParseError::NotANumber {
        text: text.to_owned(),
    })?;
    Ok(ParsedInput {
        exact: Exact {
            negative,
            magnitude,
        },
        kind: InputKind::Decimal,
    })
}

fn parse_bits(pattern: &str, format: &Format) -> Result<ParsedInput, ParseError> {
    let width = format.bits();
    let bits = parse_pattern(pattern, width, Dialect::Value).map_err(|err| match err {
        ParseError::TooWide { text, width } => ParseError::TooWideFor {
            text,
            width,
            format: format.name.clone(),
        },
        other => other,
    })?;
    let bits = bits as u32;
    Ok(ParsedInput {
        exact: format.to_exact(bits),
        kind: InputKind::Bits {
            format: format.clone(),
            bits,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::float::Rounding;
    use crate::float::exact_text::compare_decimal_with_binary;
    use std::cmp::Ordering;

    fn fp32() -> Format {
        Format::fp32()
    }

    #[test]
    fn decimal_is_exact_beyond_f64() {
        // 1 + 2^-11 is the fp16 midpoint between 1 and 1 + 2^-10; a hair above
        // must round up, although the nearest f64 is the midpoint itself.
        let fp16 = Format::fp16();
        let above = parse_input("1.00048828125000000000000001", &fp32()).unwrap();
        assert_eq!(fp16.encode(&above.exact, Rounding::NearestEven), 0x3c01);
        let exact_mid = parse_input("1.00048828125", &fp32()).unwrap();
        assert_eq!(fp16.encode(&exact_mid.exact, Rounding::NearestEven), 0x3c00);
        let below = parse_input("1.00048828124999999999999999", &fp32()).unwrap();
        assert_eq!(fp16.encode(&below.exact, Rounding::NearestAway), 0x3c00);
        // Toward zero from just below a representable value lands one below it.
        let just_below_one = parse_input("0.99999999999999999999999", &fp32()).unwrap();
        assert_eq!(
            fp16.encode(&just_below_one.exact, Rounding::TowardZero),
            0x3bff
        );
        assert_eq!(
            fp16.encode(&just_below_one.exact, Rounding::NearestEven),
            0x3c00
        );
    }

    #[test]
    fn tiny_and_huge_decimals_round_by_mode() {
        let fp16 = Format::fp16();
        let tiny = parse_input("1e-500", &fp32()).unwrap();
        assert_eq!(fp16.encode(&tiny.exact, Rounding::NearestEven), 0);
        assert_eq!(fp16.encode(&tiny.exact, Rounding::TowardPositive), 1);
        let huge = parse_input("-1e500", &fp32()).unwrap();
        assert_eq!(fp16.encode(&huge.exact, Rounding::NearestEven), 0xfc00);
        assert_eq!(fp16.encode(&huge.exact, Rounding::TowardZero), 0xfbff);
    }

    #[test]
    fn reads_every_form() {
        let f = fp32();
        let value = |s: &str| parse_input(s, &f).map(|p| p.exact.to_f64());
        assert_eq!(value("0x1.8p-3"), Ok(0.1875));
        assert_eq!(value("-0x1p-14"), Ok(-(2f64.powi(-14))));
        assert_eq!(value("2^-24"), Ok(2f64.powi(-24)));
        assert_eq!(value("6.1e-5"), Ok(6.1e-5));
        assert_eq!(value(".5"), Ok(0.5));
        assert_eq!(value("1_000"), Ok(1000.0));
        assert_eq!(value("0x3f800000"), Ok(1.0));
        assert_eq!(value("fp16:0x3c00"), Ok(1.0));
        assert_eq!(value("bf16:0b0011111110000000"), Ok(1.0));
        assert_eq!(value("-inf"), Ok(f64::NEG_INFINITY));
        assert!(value("nan").is_ok_and(f64::is_nan));
        let neg_zero = parse_input("-0", &f).unwrap();
        assert!(neg_zero.exact.negative && neg_zero.exact.magnitude == Magnitude::Zero);
    }

    /// Exponents beyond any integer type saturate: every valid number keeps
    /// its value (0 or ±inf here), and none wraps around.
    #[test]
    fn huge_exponents_saturate_instead_of_wrapping() {
        let f = fp32();
        let bits = |text: &str| {
            let parsed = parse_input(text, &f).unwrap_or_else(|e| panic!("`{text}`: {e}"));
            f.encode(&parsed.exact, Rounding::NearestEven)
        };
        for (text, want) in [
            ("1e9223372036854775807", 0x7f80_0000),
            ("10e9223372036854775807", 0x7f80_0000),
            ("1e99999999999999999999", 0x7f80_0000),
            ("-1e99999999999999999999", 0xff80_0000),
            ("1e-99999999999999999999", 0),
            ("0x0.1p-2147483648", 0),
            ("0x1p100001", 0x7f80_0000),
            ("0x1p-100001", 0),
            ("0x1p99999999999999999999", 0x7f80_0000),
            ("2^-2147483647", 0),
            ("2^-2147483648", 0),
            ("2^2147483648", 0x7f80_0000),
            ("2^99999999999999999999", 0x7f80_0000),
            ("2^-149", 1),
        ] {
            assert_eq!(bits(text), want, "`{text}`");
        }
        assert_eq!(parse_number("1e99999999999999999999"), Ok(f64::INFINITY));
        assert_eq!(parse_number("2^-2147483647"), Ok(0.0));
        assert_eq!(parse_number("0x1p100001"), Ok(f64::INFINITY));
    }

    #[test]
    fn a_bit_pattern_has_no_sign_inside() {
        let f = Format::fp16();
        assert!(parse_input("0x+3c00", &f).is_err());
        assert!(parse_input("fp16:0x+3c00", &f).is_err());
        assert!(parse_pattern("0x+3c00", 16, Dialect::Answer).is_err());
        assert_eq!(parse_pattern("0x3c00", 16, Dialect::Answer), Ok(0x3c00));
    }

    #[test]
    fn rejects_with_a_reason() {
        let f = Format::fp16();
        for bad in [
            "",
            "abc",
            "1e",
            "0x",
            "0x1.zp3",
            "fp16:0x1ffff",
            "e9m2:0x1",
            "1.2.3",
            "--1",
            "-0x3c00",
            "2^x",
            "0b",
            "0b102",
        ] {
            let err = parse_input(bad, &f);
            assert!(err.is_err(), "`{bad}` should be rejected, got {err:?}");
            assert!(err.is_err_and(|e| !e.to_string().is_empty()));
        }
    }

    #[test]
    fn answers_read_hex_as_floats_and_ignore_whitespace() {
        assert_eq!(parse_number("2^-24"), Ok(2f64.powi(-24)));
        assert_eq!(parse_number("2^(-24)"), Ok(2f64.powi(-24)));
        assert_eq!(parse_number("-0x1p-14"), Ok(-(2f64.powi(-14))));
        assert_eq!(parse_number("0x3c00"), Ok(15360.0));
        assert_eq!(parse_number("0x1.8p-3"), Ok(0.1875));
        assert_eq!(parse_number("0x.8"), Ok(0.5));
        assert_eq!(parse_number("1_000"), Ok(1000.0));
        assert_eq!(parse_number("1 000"), Ok(1000.0));
        assert_eq!(parse_number("1e-3"), Ok(1e-3));
        assert_eq!(parse_number("0.5"), Ok(0.5));
        assert_eq!(parse_number("6.5504E4"), Ok(65504.0));
        assert_eq!(parse_number("-inf"), Ok(f64::NEG_INFINITY));
        assert_eq!(parse_number("2^-20000"), Ok(0.0));
        assert_eq!(parse_number("2^20000"), Ok(f64::INFINITY));
        assert!(parse_number("nan").is_ok_and(f64::is_nan));
        for bad in ["0x", "2^x", "six", "0b101", "fp16:0x3c00", "", "1e"] {
            assert!(parse_number(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_number("six").map_err(|e| e.to_string()),
            Err(
                "`six` is not a number; write it like 0.1, -6.1e-5, 0x1.8p-3, 2^-24, inf or nan"
                    .to_owned()
            )
        );
    }

    #[test]
    fn answers_parse_like_the_standard_library() {
        use rand::{RngExt as _, SeedableRng as _};
        let mut rng = rand::rngs::StdRng::seed_from_u64(13);
        for _ in 0..20_000 {
            let x = f64::from_bits(rng.random());
            if x.is_nan() {
                continue;
            }
            let digits = rng.random_range(1..20);
            for text in [format!("{x:e}"), format!("{x:.digits$e}"), format!("{x}")] {
                let expected = text.parse::<f64>().ok();
                let got = parse_number(&text).ok();
                assert_eq!(got.map(f64::to_bits), expected.map(f64::to_bits), "{text}");
            }
        }
    }

    #[test]
    fn patterns_of_a_width() {
        use Dialect::{Answer, Value};
        assert_eq!(
            parse_pattern("0b0011_1100_0000_0000", 16, Answer),
            Ok(0x3c00)
        );
        assert_eq!(parse_pattern("0X3C00", 16, Answer), Ok(0x3c00));
        assert_eq!(parse_pattern("0011 1100", 8, Answer), Ok(0x3c));
        assert!(parse_pattern("0011", 8, Value).is_err());
        assert!(parse_pattern("0x13c00", 16, Answer).is_err());
        assert!(parse_pattern("0xzz", 16, Answer).is_err());
        assert_eq!(
            parse_pattern("0xffffffffffffffff", 64, Answer),
            Ok(u64::MAX)
        );
    }

    #[test]
    fn bigint_compares() {
        // 0.1 < 0.125 = 1·2^-3
        assert_eq!(compare_decimal_with_binary("1", -1, 1, -3), Ordering::Less);
        assert_eq!(
            compare_decimal_with_binary("125", -3, 1, -3),
            Ordering::Equal
        );
        assert_eq!(compare_decimal_with_binary("1", 1, 5, 1), Ordering::Equal);
        assert_eq!(compare_decimal_with_binary("1", 1, 5, 0), Ordering::Greater);
        // 2^-1074 written out in full (751 significant digits) is exact.
        let min_sub = format!("{:.1074}", 5e-324f64);
        assert_eq!(
            parse_decimal(&min_sub),
            Some(Magnitude::Finite {
                mant: 1,
                exp: -1074
            })
        );
    }

    #[test]
    fn property_any_input_gives_a_value_or_an_error() {
        use rand::{RngExt as _, SeedableRng as _};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let pieces = [
            "0",
            "1",
            "9",
            ".",
            "e",
            "E",
            "-",
            "+",
            "x",
            "0x",
            "0b",
            "p",
            "p-",
            "inf",
            "nan",
            "2^",
            "_",
            " ",
            "fp16:",
            "e5m2:",
            "bf16:0x",
            "ff",
            "∞",
            "é",
            "1e999999999",
            "(",
            ")",
            ":",
            "00000000000000000000",
        ];
        let bits_format = Format::fp16();
        for _ in 0..50_000 {
            let n = rng.random_range(0..8);
            let text: String = (0..n)
                .map(|_| pieces[rng.random_range(0..pieces.len())])
                .collect();
            if let Ok(parsed) = parse_input(&text, &bits_format) {
                // Whatever parses can be rounded into every format without a panic.
                for format in Format::builtins() {
                    let _ = format.encode(&parsed.exact, Rounding::NearestEven);
                }
            }
        }
        for _ in 0..20_000 {
            let len = rng.random_range(0..24);
            let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            let _ = parse_input(&String::from_utf8_lossy(&bytes), &bits_format);
        }
    }

    #[test]
    fn property_decimal_text_of_any_f64_parses_back_exactly() {
        use rand::{RngExt as _, SeedableRng as _};
        let mut rng = rand::rngs::StdRng::seed_from_u64(12);
        for _ in 0..20_000 {
            let x = f64::from_bits(rng.random());
            if !x.is_finite() {
                continue;
            }
            for text in [format!("{x:e}"), format!("{x}")] {
                let parsed = parse_input(&text, &fp32()).unwrap_or_else(|e| panic!("{text}: {e}"));
                assert_eq!(parsed.exact.to_f64().to_bits(), x.to_bits(), "{text}");
            }
        }
        // The full decimal expansion of an f64 is that f64 exactly (no sticky bits);
        // one digit more or less in the last place is not.
        for _ in 0..2_000 {
            let x = f64::from_bits(rng.random::<u64>() >> 1);
            if !x.is_finite() || x == 0.0 {
                continue;
            }
            let text = format!("{x:.1100}");
            let parsed = parse_input(&text, &fp32()).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(parsed.exact, Exact::from_f64(x), "{x:e}");
            let nudged = format!("{text}1");
            let above = parse_input(&nudged, &fp32()).unwrap_or_else(|e| panic!("{e}"));
            assert_ne!(above.exact, Exact::from_f64(x));
            assert_eq!(above.exact.to_f64(), x);
        }
    }
}
