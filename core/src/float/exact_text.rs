//! Text to an exact value: hex floats and decimals (correctly rounded in
//! one step, however many digits, by an exact big-integer comparison). The
//! readers in `parse.rs` call these on the unsigned, lower-case body.

use std::cmp::Ordering;

use super::{Exact, Magnitude};

/// Binary exponents are saturated at ±2^20: every format here overflows or
/// underflows long before, and text of at most [`MAX_TEXT_CHARS`] characters
/// cannot move the binary point back by more than 4 × that many bits.
pub(super) const MAX_BINARY_EXPONENT: i64 = 1 << 20;

/// The longest text the readers take (a longer one is refused, not cut).
pub(super) const MAX_TEXT_CHARS: usize = 10_000;

/// A whole exponent with an optional sign (`-12`, `+3`, `99999999999999999999`),
/// saturated at ±2^40 instead of overflowing: an exponent that large means
/// 0 or infinity, and saturating keeps that meaning.
pub(super) fn parse_exponent(text: &str) -> Option<i64> {
    const LIMIT: i64 = 1 << 40;
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude = digits
        .bytes()
        .fold(0i64, |acc, b| (acc * 10 + i64::from(b - b'0')).min(LIMIT));
    Some(if negative { -magnitude } else { magnitude })
}

/// `1.8p-3` (after `0x`): exact, with a sticky bit past 60 mantissa bits.
pub(super) fn parse_hex_float(hex: &str) -> Option<Magnitude> {
    let (mantissa, exponent) = match hex.split_once('p') {
        Some((m, e)) => (m, parse_exponent(e)?),
        None => (hex, 0),
    };
    // In range of i32 with room for the digit shifts below (≤ 4 per digit).
    let exponent = exponent.clamp(-MAX_BINARY_EXPONENT, MAX_BINARY_EXPONENT) as i32;
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
pub(super) fn parse_decimal(body: &str) -> Option<Magnitude> {
    let (mantissa, exp10) = match body.split_once('e') {
        Some((m, e)) => (m, parse_exponent(e)?),
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
    // |exp10| ≤ 2^40 and the text is short, so none of this can overflow.
    let mut scale = exp10 - frac_len + trailing as i64;
    // Beyond 800 digits only a sticky bit matters (an f64 has at most 767).
    let (digits, sticky) = if digits.len() > 800 {
        let dropped = digits.len() - 800;
        scale += dropped as i64;
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
pub(super) fn compare_decimal_with_binary(
    digits: &str,
    scale: i64,
    mant: u64,
    exp: i32,
) -> Ordering {
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
