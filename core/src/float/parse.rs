//! Reading a value exactly: decimal and scientific (correctly rounded in one
//! step, however many digits), hex floats, powers of two, `inf`, `nan`, `-0`,
//! and raw bit patterns of a chosen format (`0x3c00`, `0b…`, `fp16:0x3c00`).

use std::cmp::Ordering;

use super::{Exact, Format, Magnitude};

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

/// Parses `text`. Bare `0x…` (no `p`, no `.`) and `0b…` are bit patterns of
/// `bits_format`; `FORMAT:PATTERN` names the format explicitly.
pub fn parse_input(text: &str, bits_format: &Format) -> Result<ParsedInput, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(
            "type a value: 0.1, -6.1e-5, 0x1.8p-3, 2^-24, inf, nan, or bits like 0x3c00".to_owned(),
        );
    }
    if trimmed.chars().count() > 10_000 {
        return Err("that input is longer than 10,000 characters".to_owned());
    }
    if let Some((prefix, pattern)) = trimmed.split_once(':') {
        let format = Format::by_name(prefix)?;
        return parse_bits(pattern.trim(), &format);
    }
    let lower = trimmed.to_ascii_lowercase().replace('_', "");
    let (negative, body) = match lower.as_bytes().first() {
        Some(b'-') => (true, &lower[1..]),
        Some(b'+') => (false, &lower[1..]),
        _ => (false, lower.as_str()),
    };
    let body = body.trim_start();
    if (body.starts_with("0x") && !body.contains(['p', '.'])) || body.starts_with("0b") {
        if negative {
            return Err("a bit pattern carries its own sign bit; drop the leading sign".to_owned());
        }
        return parse_bits(body, bits_format);
    }
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
        let k: i32 = exp
            .parse()
            .map_err(|_| format!("`{trimmed}`: after 2^ write a whole exponent, like 2^-24"))?;
        if k.abs() > 10_000 {
            return Err(format!(
                "`{trimmed}`: exponents beyond ±10000 are not supported"
            ));
        }
        return Ok(ParsedInput {
            exact: Exact {
                negative,
                magnitude: Magnitude::Finite { mant: 1, exp: k },
            },
            kind: InputKind::PowerOfTwo,
        });
    }
    if let Some(hex) = body.strip_prefix("0x") {
        let magnitude = parse_hex_float(hex).ok_or_else(|| {
            format!("`{trimmed}` is not a hex float; write it like 0x1.8p-3 (hex digits, then p and a decimal exponent)")
        })?;
        return Ok(ParsedInput {
            exact: Exact {
                negative,
                magnitude,
            },
            kind: InputKind::HexFloat,
        });
    }
    let magnitude = parse_decimal(body).ok_or_else(|| {
        format!("`{trimmed}` is not a number; write it like 0.1, -6.1e-5, 0x1.8p-3, 2^-24, inf, nan or 0x3c00")
    })?;
    Ok(ParsedInput {
        exact: Exact {
            negative,
            magnitude,
        },
        kind: InputKind::Decimal,
    })
}

fn parse_bits(pattern: &str, format: &Format) -> Result<ParsedInput, String> {
    let clean: String = pattern
        .chars()
        .filter(|c| !matches!(c, '_' | ' ' | '\''))
        .collect();
    let lower = clean.to_ascii_lowercase();
    let (digits, radix) = if let Some(hex) = lower.strip_prefix("0x") {
        (hex, 16)
    } else if let Some(bin) = lower.strip_prefix("0b") {
        (bin, 2)
    } else {
        return Err(format!(
            "`{pattern}`: write a bit pattern as 0x… (hex) or 0b… (binary)"
        ));
    };
    if digits.is_empty() {
        return Err(format!("`{pattern}` has no digits"));
    }
    let bits = u64::from_str_radix(digits, radix).map_err(|_| {
        format!(
            "`{pattern}` is not a valid {} pattern",
            if radix == 16 { "hex" } else { "binary" }
        )
    })?;
    let width = format.bits();
    if bits >> width != 0 {
        return Err(format!(
            "`{pattern}` has more than {width} bits, too many for {}",
            format.name
        ));
    }
    let bits = bits as u32;
    Ok(ParsedInput {
        exact: format.to_exact(bits),
        kind: InputKind::Bits {
            format: format.clone(),
            bits,
        },
    })
}

/// `1.8p-3` (after `0x`): exact, with a sticky bit past 60 mantissa bits.
fn parse_hex_float(hex: &str) -> Option<Magnitude> {
    let (mantissa, exponent) = match hex.split_once('p') {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (hex, 0),
    };
    if exponent.abs() > 100_000 {
        return None;
    }
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut mant: u64 = 0;
    let mut exp = exponent;
    let mut sticky = false;
    let mut kept = 0;
    for (i, c) in int_part.chars().chain(frac_part.chars()).enumerate() {
        let digit = u64::from(c.to_digit(16)?);
        let fractional = i >= int_part.len();
        if kept < 15 && (mant != 0 || digit != 0) {
            mant = mant << 4 | digit;
            kept += 1;
            if fractional {
                exp -= 4;
            }
        } else if mant == 0 && digit == 0 {
            if fractional {
                exp -= 4;
            }
        } else {
            sticky |= digit != 0;
            if !fractional {
                exp += 4;
            }
        }
    }
    if mant == 0 {
        return Some(Magnitude::Zero);
    }
    Some(if sticky {
        Magnitude::Finite {
            mant: mant << 2 | 1,
            exp: exp - 2,
        }
    } else {
        Magnitude::Finite { mant, exp }
    })
}

/// A decimal or scientific number, exactly: the nearest f64 plus the
/// direction of the remainder, encoded as two extra bits below the f64.
fn parse_decimal(body: &str) -> Option<Magnitude> {
    let (mantissa, exp10) = match body.split_once('e') {
        Some((m, e)) => (m, e.parse::<i64>().ok()?),
        None => (body, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if (int_part.is_empty() && frac_part.is_empty())
        || !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    // Significant digits and the power of ten of the last one.
    let all: String = format!("{int_part}{frac_part}");
    let trimmed = all.trim_start_matches('0');
    let frac_len = frac_part.len() as i64;
    if trimmed.is_empty() {
        return Some(Magnitude::Zero);
    }
    let trailing = trimmed.len() - trimmed.trim_end_matches('0').len();
    let digits = &trimmed[..trimmed.len() - trailing];
    let mut scale = exp10.checked_sub(frac_len)?.checked_add(trailing as i64)?;
    // Beyond 800 digits only a sticky bit matters (an f64 has at most 767).
    let (digits, sticky) = if digits.len() > 800 {
        let dropped = digits.len() - 800;
        scale = scale.checked_add(dropped as i64)?;
        (&digits[..800], true)
    } else {
        (digits, false)
    };
    let magnitude10 = scale + digits.len() as i64; // value < 10^magnitude10
    if magnitude10 > 400 {
        return Some(Magnitude::Finite { mant: 1, exp: 4000 });
    }
    if magnitude10 < -400 {
        return Some(Magnitude::Finite {
            mant: 1,
            exp: -4000,
        });
    }
    let nearest: f64 = format!("{digits}e{scale}").parse().ok()?;
    let Magnitude::Finite { mant, exp } = Exact::from_f64(nearest).magnitude else {
        // Unreachable for these magnitudes, but keep it honest.
        return Some(Magnitude::Finite {
            mant: 1,
            exp: if nearest == 0.0 { -4000 } else { 4000 },
        });
    };
    let mut order = compare_decimal_with_binary(digits, scale, mant, exp);
    if order == Ordering::Equal && sticky {
        order = Ordering::Greater;
    }
    Some(match order {
        Ordering::Equal => Magnitude::Finite { mant, exp },
        Ordering::Greater => Magnitude::Finite {
            mant: (mant << 2) + 1,
            exp: exp - 2,
        },
        Ordering::Less => Magnitude::Finite {
            mant: (mant << 2) - 1,
            exp: exp - 2,
        },
    })
}

/// Compares `digits × 10^scale` with `mant × 2^exp`, exactly.
fn compare_decimal_with_binary(digits: &str, scale: i64, mant: u64, exp: i32) -> Ordering {
    let mut left = BigUint::from_decimal(digits);
    let mut right = BigUint::from_u64(mant);
    // digits × 5^scale × 2^scale  vs  mant × 2^exp
    let mut left_pow2 = scale;
    let mut right_pow2 = i64::from(exp);
    if scale >= 0 {
        left.mul_pow5(scale as u32);
    } else {
        right.mul_pow5((-scale) as u32);
    }
    let common = left_pow2.min(right_pow2);
    left_pow2 -= common;
    right_pow2 -= common;
    left.shl(left_pow2 as u32);
    right.shl(right_pow2 as u32);
    left.cmp(&right)
}

/// Just enough of an unsigned big integer for exact decimal comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BigUint {
    /// Little-endian 32-bit limbs, no trailing zero limbs.
    limbs: Vec<u32>,
}

impl BigUint {
    fn from_u64(x: u64) -> Self {
        let mut n = Self {
            limbs: vec![x as u32, (x >> 32) as u32],
        };
        n.trim();
        n
    }

    fn from_decimal(digits: &str) -> Self {
        let mut n = Self { limbs: Vec::new() };
        for chunk in digits.as_bytes().chunks(9) {
            let mut value = 0u32;
            for &b in chunk {
                value = value * 10 + u32::from(b - b'0');
            }
            n.mul_add_small(10u32.pow(chunk.len() as u32), value);
        }
        n
    }

    fn trim(&mut self) {
        while self.limbs.last() == Some(&0) {
            self.limbs.pop();
        }
    }

    fn mul_add_small(&mut self, factor: u32, add: u32) {
        let mut carry = u64::from(add);
        for limb in &mut self.limbs {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry != 0 {
            self.limbs.push(carry as u32);
        }
        self.trim();
    }

    fn mul_pow5(&mut self, mut k: u32) {
        while k > 0 {
            let step = k.min(13); // 5^13 < 2^32
            self.mul_add_small(5u32.pow(step), 0);
            k -= step;
        }
    }

    fn shl(&mut self, bits: u32) {
        if self.limbs.is_empty() || bits == 0 {
            return;
        }
        let words = (bits / 32) as usize;
        let rest = bits % 32;
        let mut out = vec![0u32; words];
        let mut carry = 0u32;
        for &limb in &self.limbs {
            if rest == 0 {
                out.push(limb);
            } else {
                out.push((limb << rest) | carry);
                carry = limb >> (32 - rest);
            }
        }
        if carry != 0 {
            out.push(carry);
        }
        self.limbs = out;
        self.trim();
    }
}

impl Ord for BigUint {
    fn cmp(&self, other: &Self) -> Ordering {
        self.limbs
            .len()
            .cmp(&other.limbs.len())
            .then_with(|| self.limbs.iter().rev().cmp(other.limbs.iter().rev()))
    }
}

impl PartialOrd for BigUint {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::float::Rounding;

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
            assert!(!err.unwrap_err().is_empty());
        }
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
