//! A bit-exact emulator of binary floating-point formats: fp32, fp16, bf16,
//! tf32, the OCP fp8 formats and any `eXmY` a learner defines.
//!
//! Every conversion goes from the **exact** value of its input — an f64, an
//! f32, another format's bit pattern, or a decimal string parsed exactly — to
//! the target format in **one** rounding. There is no detour through f32, so
//! f64 → fp16 never double-rounds (see `one_rounding_from_f64` in the tests).
//!
//! Emulated arithmetic computes in f64 and rounds once: for formats of at most
//! 24 significant bits that is correctly rounded, because f64's 53 bits are at
//! least `2p + 2` (the classic condition under which double rounding is
//! harmless for +, −, ×, ÷ and √).
//!
//! Over 700 lines: `Format` and `Rounding` with their encode/decode and
//! rounding core are one job (the bit layout and the one rounding step read
//! each other line by line); parsing, demos, errors and numbers as text
//! live beside it.

pub mod batch;
mod demo;
mod error;
mod exact;
mod exact_text;
pub mod parse;
mod show;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use demo::*;
pub use error::FormatError;
pub use exact::{Exact, Magnitude};
pub use parse::{ParseError, ParsedInput, parse_input, parse_number};
pub use show::{show, show_f32, show_sig};

/// How the all-ones exponent is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Specials {
    /// IEEE 754: all-ones exponent is ±inf (mantissa 0) or NaN (otherwise).
    Ieee,
    /// OCP "FN" (finite + NaN): no infinities; only the all-ones pattern
    /// (per sign) is NaN, every other pattern is a finite number.
    FiniteNan,
    /// OCP MX's FP6 and FP4 elements: every pattern is a finite number, with
    /// no infinity and no NaN. Overflow saturates to ±max whatever the
    /// rounding; a NaN has no pattern (the OCP spec leaves its conversion to
    /// the implementation): it becomes ±max too, so callers that can meet
    /// one refuse it first, as the MX quantiser does.
    Finite,
}

/// A binary floating-point format described by its fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Format {
    pub name: String,
    pub exp_bits: u32,
    pub man_bits: u32,
    pub bias: i32,
    pub specials: Specials,
    /// Overflow gives ±max finite instead of ±inf (or NaN in FN formats).
    pub saturate: bool,
}

/// The built-in formats, by their CLI names.
pub const BUILTIN_NAMES: [&str; 6] = ["fp32", "fp16", "bf16", "tf32", "fp8-e4m3", "fp8-e5m2"];

impl Format {
    /// An IEEE-style format with `exp_bits` (2..=8) and `man_bits` (1..=23).
    pub fn ieee(name: &str, exp_bits: u32, man_bits: u32) -> Result<Self, FormatError> {
        if !(2..=8).contains(&exp_bits) {
            return Err(FormatError::ExponentWidth {
                name: name.to_owned(),
                bits: exp_bits,
            });
        }
        if !(1..=23).contains(&man_bits) {
            return Err(FormatError::MantissaWidth {
                name: name.to_owned(),
                bits: man_bits,
            });
        }
        Ok(Self::builtin(name, exp_bits, man_bits))
    }

    fn builtin(name: &str, exp_bits: u32, man_bits: u32) -> Self {
        Self {
            name: name.to_owned(),
            exp_bits,
            man_bits,
            bias: (1 << (exp_bits - 1)) - 1,
            specials: Specials::Ieee,
            saturate: false,
        }
    }

    /// IEEE binary32: 1-8-23.
    pub fn fp32() -> Self {
        Self::builtin("fp32", 8, 23)
    }

    /// IEEE binary16: 1-5-10.
    pub fn fp16() -> Self {
        Self::builtin("fp16", 5, 10)
    }

    /// bfloat16: 1-8-7, fp32's range with 8 significant bits.
    pub fn bf16() -> Self {
        Self::builtin("bf16", 8, 7)
    }

    /// NVIDIA TensorFloat-32: 1-8-10 (19 bits), fp32's range, fp16's precision.
    pub fn tf32() -> Self {
        Self::builtin("tf32", 8, 10)
    }

    /// OCP fp8 E4M3 ("E4M3FN"): no infinities, one NaN pattern per sign, max 448.
    pub fn fp8_e4m3() -> Self {
        Self {
            specials: Specials::FiniteNan,
            ..Self::builtin("fp8-e4m3", 4, 3)
        }
    }

    /// OCP fp8 E5M2: IEEE-style, max 57344.
    pub fn fp8_e5m2() -> Self {
        Self::builtin("fp8-e5m2", 5, 2)
    }

    /// Every built-in format, in [`BUILTIN_NAMES`] order.
    pub fn builtins() -> Vec<Self> {
        vec![
            Self::fp32(),
            Self::fp16(),
            Self::bf16(),
            Self::tf32(),
            Self::fp8_e4m3(),
            Self::fp8_e5m2(),
        ]
    }

    /// A format by name: a built-in (`fp16`, `fp8-e4m3`, also `e4m3`, `e5m2`,
    /// `half`, `float`…) or a custom IEEE-style `eXmY` (e.g. `e6m9`).
    pub fn by_name(name: &str) -> Result<Self, FormatError> {
        let lower = name.trim().to_ascii_lowercase();
        let format = match lower.as_str() {
            "fp32" | "f32" | "float32" | "float" | "binary32" => Self::fp32(),
            "fp16" | "f16" | "float16" | "half" | "binary16" => Self::fp16(),
            "bf16" | "bfloat16" => Self::bf16(),
            "tf32" | "tensorfloat32" => Self::tf32(),
            "fp8-e4m3" | "fp8_e4m3" | "e4m3" | "e4m3fn" | "fp8-e4m3fn" => Self::fp8_e4m3(),
            "fp8-e5m2" | "fp8_e5m2" | "e5m2" => Self::fp8_e5m2(),
            custom => {
                let widths = custom
                    .strip_prefix('e')
                    .and_then(|rest| rest.split_once('m'))
                    .and_then(|(e, m)| Some((e.parse::<u32>().ok()?, m.parse::<u32>().ok()?)));
                let Some((exp_bits, man_bits)) = widths else {
                    return Err(FormatError::UnknownFormat {
                        name: name.to_owned(),
                        choices: BUILTIN_NAMES.join(", "),
                    });
                };
                Self::ieee(&lower, exp_bits, man_bits)?
            }
        };
        Ok(format)
    }

    /// Total width in bits.
    pub fn bits(&self) -> u32 {
        1 + self.exp_bits + self.man_bits
    }

    fn exp_all_ones(&self) -> u32 {
        (1 << self.exp_bits) - 1
    }

    fn man_all_ones(&self) -> u32 {
        (1 << self.man_bits) - 1
    }

    pub fn sign_mask(&self) -> u32 {
        1 << (self.exp_bits + self.man_bits)
    }

    /// The pattern's bits without the sign.
    pub fn magnitude_mask(&self) -> u32 {
        self.sign_mask() - 1
    }

    /// Bits of every valid pattern.
    pub fn pattern_mask(&self) -> u32 {
        if self.bits() >= 32 {
            u32::MAX
        } else {
            (1 << self.bits()) - 1
        }
    }

    /// The smallest normal exponent, `1 − bias`.
    pub fn emin(&self) -> i32 {
        1 - self.bias
    }

    /// The largest finite exponent.
    pub fn emax(&self) -> i32 {
        match self.specials {
            Specials::Ieee => self.exp_all_ones() as i32 - 1 - self.bias,
            Specials::FiniteNan | Specials::Finite => self.exp_all_ones() as i32 - self.bias,
        }
    }

    /// Splits a pattern into (sign, exponent field, mantissa field).
    pub fn fields(&self, bits: u32) -> (u32, u32, u32) {
        (
            (bits >> (self.exp_bits + self.man_bits)) & 1,
            (bits >> self.man_bits) & self.exp_all_ones(),
            bits & self.man_all_ones(),
        )
    }

    fn assemble(&self, sign: u32, exp_field: u32, man_field: u32) -> u32 {
        (sign << (self.exp_bits + self.man_bits)) | (exp_field << self.man_bits) | man_field
    }

    /// The largest finite pattern's magnitude bits.
    fn max_finite_magnitude(&self) -> u32 {
        match self.specials {
            Specials::Ieee => self.assemble(0, self.exp_all_ones() - 1, self.man_all_ones()),
            Specials::FiniteNan => self.assemble(0, self.exp_all_ones(), self.man_all_ones() - 1),
            Specials::Finite => self.assemble(0, self.exp_all_ones(), self.man_all_ones()),
        }
    }

    /// The canonical quiet NaN with the given sign (in a format without
    /// NaN, ±max: see [`Specials::Finite`]).
    pub fn nan_bits(&self, negative: bool) -> u32 {
        let sign = u32::from(negative);
        match self.specials {
            Specials::Ieee => self.assemble(sign, self.exp_all_ones(), 1 << (self.man_bits - 1)),
            Specials::FiniteNan => self.assemble(sign, self.exp_all_ones(), self.man_all_ones()),
            Specials::Finite => self.max_finite_bits(negative),
        }
    }

    /// ±inf, or `None` in a format without infinities.
    pub fn inf_bits(&self, negative: bool) -> Option<u32> {
        match self.specials {
            Specials::Ieee => Some(self.assemble(u32::from(negative), self.exp_all_ones(), 0)),
            Specials::FiniteNan | Specials::Finite => None,
        }
    }

    pub fn max_finite_bits(&self, negative: bool) -> u32 {
        self.max_finite_magnitude() | if negative { self.sign_mask() } else { 0 }
    }

    /// What a pattern is.
    pub fn classify(&self, bits: u32) -> Class {
        let (_, exp, man) = self.fields(bits);
        match self.specials {
            Specials::Ieee if exp == self.exp_all_ones() => {
                if man == 0 {
                    Class::Infinite
                } else {
                    Class::Nan
                }
            }
            Specials::FiniteNan if exp == self.exp_all_ones() && man == self.man_all_ones() => {
                Class::Nan
            }
            _ if exp == 0 => {
                if man == 0 {
                    Class::Zero
                } else {
                    Class::Subnormal
                }
            }
            _ => Class::Normal,
        }
    }

    /// The exact value of a pattern (every format here fits in f64 exactly).
    pub fn decode(&self, bits: u32) -> f64 {
        let (sign, exp, man) = self.fields(bits);
        let sign = if sign == 1 { -1.0 } else { 1.0 };
        match self.classify(bits) {
            Class::Nan => f64::NAN,
            Class::Infinite => sign * f64::INFINITY,
            Class::Zero => sign * 0.0,
            Class::Subnormal => sign * f64::from(man) * pow2(self.emin() - self.man_bits as i32),
            Class::Normal => {
                sign * f64::from(man | (1 << self.man_bits))
                    * pow2(exp as i32 - self.bias - self.man_bits as i32)
            }
        }
    }

    /// The exact value of a pattern as an [`Exact`] (keeps NaN payloads).
    pub fn to_exact(&self, bits: u32) -> Exact {
        let (sign, exp, man) = self.fields(bits);
        let negative = sign == 1;
        let magnitude = match self.classify(bits) {
            Class::Nan => Magnitude::Nan {
                payload: u64::from(man) << (64 - self.man_bits),
            },
            Class::Infinite => Magnitude::Infinite,
            Class::Zero => Magnitude::Zero,
            Class::Subnormal => Magnitude::Finite {
                mant: u64::from(man),
                exp: self.emin() - self.man_bits as i32,
            },
            Class::Normal => Magnitude::Finite {
                mant: u64::from(man | (1 << self.man_bits)),
                exp: exp as i32 - self.bias - self.man_bits as i32,
            },
        };
        Exact {
            negative,
            magnitude,
        }
    }

    /// Rounds an exact value into this format.
    pub fn encode(&self, x: &Exact, rounding: Rounding) -> u32 {
        self.encode_with_random(x, rounding, 0)
    }

    /// [`Self::encode`]; `random` is the uniform 64-bit draw stochastic
    /// rounding compares against (ignored by the other modes).
    pub fn encode_with_random(&self, x: &Exact, rounding: Rounding, random: u64) -> u32 {
        let sign = u32::from(x.negative);
        let (mant, exp) = match x.magnitude {
            Magnitude::Nan { payload } => {
                return match self.specials {
                    // Keep the sign and the top payload bits; set the quiet bit.
                    Specials::Ieee => self.assemble(
                        sign,
                        self.exp_all_ones(),
                        (1 << (self.man_bits - 1)) | (payload >> (64 - self.man_bits)) as u32,
                    ),
                    Specials::FiniteNan | Specials::Finite => self.nan_bits(x.negative),
                };
            }
            Magnitude::Infinite => return self.overflow(x.negative, true, rounding),
            Magnitude::Zero | Magnitude::Finite { mant: 0, .. } => {
                return self.assemble(sign, 0, 0);
            }
            Magnitude::Finite { mant, exp } => (mant, exp),
        };
        let man_bits = self.man_bits as i32;
        let bit_len = 64 - mant.leading_zeros() as i32;
        let e = exp + bit_len - 1; // floor(log2 |x|)
        let mut q = e.max(self.emin()) - man_bits; // exponent of one unit in the last place
        let shift = q - exp;
        let (mut n, frac) = if shift <= 0 {
            // Exact: fewer significant bits than the format keeps.
            (mant << (-shift).min(63), Fraction::ZERO)
        } else {
            Fraction::split(mant, shift)
        };
        let up = match rounding {
            Rounding::NearestEven => {
                frac.half == std::cmp::Ordering::Greater
                    || (frac.half == std::cmp::Ordering::Equal && n & 1 == 1)
            }
            Rounding::NearestAway => frac.half != std::cmp::Ordering::Less,
            Rounding::TowardZero => false,
            Rounding::TowardPositive => frac.nonzero && !x.negative,
            Rounding::TowardNegative => frac.nonzero && x.negative,
            Rounding::Stochastic => frac.nonzero && random < frac.bits64,
        };
        if up {
            n += 1;
            if n == 1 << (man_bits + 1) {
                n >>= 1;
                q += 1;
            }
        }
        if n == 0 {
            return self.assemble(sign, 0, 0);
        }
        let (exp_field, man_field) = if n < 1 << man_bits {
            (0, n as u32)
        } else {
            let biased = i64::from(q) + i64::from(man_bits) + i64::from(self.bias);
            if biased > i64::from(self.exp_all_ones()) {
                return self.overflow(x.negative, up, rounding);
            }
            (biased as u32, (n - (1 << man_bits)) as u32)
        };
        let magnitude = self.assemble(0, exp_field, man_field);
        if magnitude > self.max_finite_magnitude() {
            return self.overflow(x.negative, up, rounding);
        }
        magnitude | (sign << (self.exp_bits + self.man_bits))
    }

    /// The result of a value too large to represent. `rounded_up` says
    /// whether the rounding step went away from zero (so a nearest mode lands
    /// on infinity); directed modes toward zero stop at the largest finite.
    fn overflow(&self, negative: bool, rounded_up: bool, rounding: Rounding) -> u32 {
        let to_infinity = match rounding {
            Rounding::NearestEven | Rounding::NearestAway => true,
            Rounding::Stochastic => rounded_up,
            Rounding::TowardZero => false,
            Rounding::TowardPositive => !negative,
            Rounding::TowardNegative => negative,
        };
        if self.saturate || !to_infinity || self.specials == Specials::Finite {
            return self.max_finite_bits(negative);
        }
        self.inf_bits(negative)
            .unwrap_or_else(|| self.nan_bits(negative))
    }

    /// Rounds an f64 in one step.
    pub fn encode_f64(&self, x: f64, rounding: Rounding) -> u32 {
        self.encode(&Exact::from_f64(x), rounding)
    }

    /// Rounds an f32 (by its bits, so NaN payloads survive on every target).
    pub fn encode_f32(&self, x: f32, rounding: Rounding) -> u32 {
        if rounding == Rounding::NearestEven && self.specials == Specials::Ieee && !self.saturate {
            return self.encode_f32_rne_ieee(x.to_bits());
        }
        self.encode(&Exact::from_f32_bits(x.to_bits()), rounding)
    }

    /// Rounds a slice of f32 into `out` (patterns of at most 16 bits), as the
    /// batch tools and the mixed-precision trainer do.
    ///
    /// # Panics
    /// If the format is wider than 16 bits or the slices differ in length.
    pub fn encode_f32_slice(&self, input: &[f32], out: &mut [u16], rounding: Rounding) {
        assert!(
            self.bits() <= 16 && input.len() == out.len(),
            "encode_f32_slice: 16-bit formats, equal lengths"
        );
        if rounding == Rounding::NearestEven && self.specials == Specials::Ieee && !self.saturate {
            for (x, o) in input.iter().zip(out.iter_mut()) {
                *o = self.encode_f32_rne_ieee(x.to_bits()) as u16;
            }
        } else {
            for (x, o) in input.iter().zip(out.iter_mut()) {
                *o = self.encode(&Exact::from_f32_bits(x.to_bits()), rounding) as u16;
            }
        }
    }

    /// The hot path of [`Self::encode_f32`] for nearest-even into an IEEE-style,
    /// non-saturating format: integer bit arithmetic on the f32 pattern, no
    /// branches beyond the range checks. The general path is its reference
    /// (the exhaustive tests compare both with `half` on all 2^32 inputs).
    pub fn encode_f32_rne_ieee(&self, bits: u32) -> u32 {
        debug_assert!(self.specials == Specials::Ieee && !self.saturate);
        let m = self.man_bits;
        let e = self.exp_bits;
        let sign = (bits >> 31) << (e + m);
        let abs = bits & 0x7fff_ffff;
        let exp_all_ones = (1u32 << e) - 1;
        if abs >= 0x7f80_0000 {
            if abs == 0x7f80_0000 {
                return sign | (exp_all_ones << m);
            }
            // NaN: keep the top payload bits, set the quiet bit.
            return sign | (exp_all_ones << m) | (1 << (m - 1)) | ((abs & 0x7f_ffff) >> (23 - m));
        }
        let shift = 23 - m;
        // f32 subnormals sit at exponent −126 like the smallest normals.
        let unbiased = ((abs >> 23) as i32).max(1) - 127;
        if unbiased > self.emax() {
            return sign | (exp_all_ones << m);
        }
        if unbiased >= self.emin() {
            // Re-bias the exponent in place, then round the dropped bits away.
            let rebiased = abs - (((127 - self.bias) as u32) << 23);
            let rounded = if shift == 0 {
                rebiased
            } else {
                rebiased + (1 << (shift - 1)) - 1 + ((rebiased >> shift) & 1)
            };
            // A carry out of the mantissa bumps the exponent, up to infinity.
            return sign | (rounded >> shift);
        }
        // The result is subnormal (or zero): drop more bits from the significand.
        let drop = shift as i32 + (self.emin() - unbiased);
        if drop > 25 {
            return sign; // below half the smallest subnormal
        }
        let significand = if abs >> 23 == 0 {
            abs
        } else {
            (abs & 0x7f_ffff) | 0x80_0000
        };
        let drop = drop as u32;
        let rounded = (significand + (1 << (drop - 1)) - 1 + ((significand >> drop) & 1)) >> drop;
        sign | rounded
    }

    /// The value an f64 rounds to.
    pub fn round_f64(&self, x: f64, rounding: Rounding) -> f64 {
        self.decode(self.encode_f64(x, rounding))
    }

    /// The next pattern toward +inf (IEEE `nextUp`: −min subnormal goes to −0),
    /// or `None` at +inf, at the top of an FN format, and for NaN.
    pub fn next_up(&self, bits: u32) -> Option<u32> {
        self.step(bits, false)
    }

    /// The next pattern toward −inf (IEEE `nextDown`).
    pub fn next_down(&self, bits: u32) -> Option<u32> {
        self.step(bits, true)
    }

    /// One step toward −inf (`down`) or +inf.
    fn step(&self, bits: u32, down: bool) -> Option<u32> {
        let negative = bits & self.sign_mask() != 0;
        let magnitude = bits & self.magnitude_mask();
        let sign = bits & self.sign_mask();
        let toward_sign = if down { self.sign_mask() } else { 0 };
        match self.classify(bits) {
            Class::Nan => None,
            // At ±inf: moving outward is impossible, inward lands on max finite.
            Class::Infinite if negative == down => None,
            Class::Infinite => Some(self.max_finite_magnitude() | sign),
            Class::Zero => Some(1 | toward_sign),
            // Moving toward zero shrinks the magnitude (stopping at a signed zero).
            _ if negative != down => Some((magnitude - 1) | sign),
            _ if magnitude == self.max_finite_magnitude() => self.inf_bits(negative),
            _ => Some((magnitude + 1) | sign),
        }
    }

    /// The gap from |x|'s pattern to the next larger magnitude (the unit in
    /// the last place at x); `None` for inf and NaN.
    pub fn ulp(&self, bits: u32) -> Option<f64> {
        let (_, exp, _) = self.fields(bits);
        match self.classify(bits) {
            Class::Nan | Class::Infinite => None,
            Class::Zero | Class::Subnormal => Some(pow2(self.emin() - self.man_bits as i32)),
            Class::Normal => Some(pow2(exp as i32 - self.bias - self.man_bits as i32)),
        }
    }

    /// The range and precision of this format, computed from its fields.
    pub fn range(&self) -> RangeTable {
        let max_finite = self.decode(self.max_finite_bits(false));
        let min_normal = self.decode(self.assemble(0, 1, 0));
        let min_subnormal = self.decode(1);
        let one = self.encode_f64(1.0, Rounding::NearestEven);
        let epsilon = self.next_up(one).map_or(f64::NAN, |b| self.decode(b)) - 1.0;
        // Half a step past the largest finite value: the tie between it and
        // the next step up, which nearest-even resolves by the last bit.
        let top = self.max_finite_bits(false);
        let below = self.next_down(top).map_or(0.0, |b| self.decode(b));
        let overflow_tie = max_finite + (max_finite - below) / 2.0;
        let tie_overflows = self.encode_f64(overflow_tie, Rounding::NearestEven) != top;
        RangeTable {
            format: self.name.clone(),
            bits: self.bits(),
            exp_bits: self.exp_bits,
            man_bits: self.man_bits,
            bias: self.bias,
            max_finite,
            min_normal,
            min_subnormal,
            epsilon,
            unit_roundoff: epsilon / 2.0,
            decimal_digits: f64::from(self.man_bits + 1) * std::f64::consts::LOG10_2,
            emin: self.emin(),
            emax: self.emax(),
            has_infinity: self.specials == Specials::Ieee,
            // Below half the smallest subnormal, nearest-even rounds to zero.
            underflow_to_zero_at: min_subnormal / 2.0,
            overflow_tie,
            tie_overflows,
        }
    }

    /// Everything the lesson and the CLI show about one rounded value.
    pub fn describe(&self, x: &Exact, rounding: Rounding) -> Described {
        let bits = self.encode(x, rounding);
        self.describe_bits(bits, x.to_f64())
    }

    /// [`Self::describe`] for a pattern, with the input value it came from.
    pub fn describe_bits(&self, bits: u32, input: f64) -> Described {
        let value = self.decode(bits);
        let abs_error = value - input;
        let rel_error = if input == 0.0 || !input.is_finite() {
            if abs_error == 0.0 { 0.0 } else { f64::NAN }
        } else {
            abs_error.abs() / input.abs()
        };
        let (sign, exp, man) = self.fields(bits);
        let (below, above) = self.neighbours(bits, input);
        Described {
            format: self.name.clone(),
            bits,
            hex: format!(
                "0x{:0width$x}",
                bits,
                width = self.bits().div_ceil(4) as usize
            ),
            binary: self.binary_string(bits),
            sign,
            exponent_field: exp,
            mantissa_field: man,
            value,
            class: self.classify(bits),
            abs_error: if value.is_finite() && input.is_finite() {
                abs_error
            } else {
                f64::NAN
            },
            rel_error,
            ulp: self.ulp(bits),
            below,
            above,
        }
    }

    /// The values on either side of `bits`, for the input it came from: a
    /// number that overflowed to NaN (formats without infinities) still sits
    /// just past the largest finite value, so that is its neighbour inward.
    fn neighbours(&self, bits: u32, input: f64) -> (Option<f64>, Option<f64>) {
        if self.classify(bits) == Class::Nan && !input.is_nan() {
            let largest = self.decode(self.max_finite_magnitude());
            return if input > 0.0 {
                (Some(largest), None)
            } else {
                (None, Some(-largest))
            };
        }
        (
            self.next_down(bits).map(|b| self.decode(b)),
            self.next_up(bits).map(|b| self.decode(b)),
        )
    }

    /// `s eeeee mmmmmmmmmm`, fields separated by spaces.
    pub fn binary_string(&self, bits: u32) -> String {
        let (sign, exp, man) = self.fields(bits);
        format!(
            "{sign} {exp:0ew$b} {man:0mw$b}",
            ew = self.exp_bits as usize,
            mw = self.man_bits as usize
        )
    }
}

/// The fractional part dropped when keeping `shift` fewer bits.
#[derive(Clone, Copy, Debug)]
struct Fraction {
    /// The fraction compared with one half.
    half: std::cmp::Ordering,
    nonzero: bool,
    /// The fraction as a 0.64 fixed-point number (for stochastic rounding).
    bits64: u64,
}

impl Fraction {
    const ZERO: Self = Self {
        half: std::cmp::Ordering::Less,
        nonzero: false,
        bits64: 0,
    };

    /// Splits `mant` into `mant >> shift` and the dropped fraction (`shift ≥ 1`).
    fn split(mant: u64, shift: i32) -> (u64, Self) {
        if shift > 64 {
            // Everything is fraction, and less than a half.
            let bits64 = if shift >= 128 {
                0
            } else {
                mant >> (shift - 64)
            };
            return (
                0,
                Self {
                    half: std::cmp::Ordering::Less,
                    nonzero: true,
                    bits64,
                },
            );
        }
        let shift = shift as u32;
        let kept = if shift == 64 { 0 } else { mant >> shift };
        let rem = if shift == 64 {
            mant
        } else {
            mant & ((1u64 << shift) - 1)
        };
        let half = 1u64 << (shift - 1);
        let bits64 = if shift == 64 {
            rem
        } else {
            rem << (64 - shift)
        };
        (
            kept,
            Self {
                half: rem.cmp(&half),
                nonzero: rem != 0,
                bits64,
            },
        )
    }
}

/// 2^e as f64, exact for the exponents used here (−1074 ..= 1023).
pub fn pow2(e: i32) -> f64 {
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074).max(0))
    }
}

/// What a bit pattern is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Class {
    Zero,
    Subnormal,
    Normal,
    Infinite,
    Nan,
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Zero => "zero",
            Self::Subnormal => "subnormal",
            Self::Normal => "normal",
            Self::Infinite => "infinite",
            Self::Nan => "NaN",
        })
    }
}

/// Rounding modes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Rounding {
    /// Round to nearest, ties to even (IEEE default; `rne`).
    #[default]
    NearestEven,
    /// Round to nearest, ties away from zero (`rna`, e.g. `cvt.rna.tf32.f32`).
    NearestAway,
    /// Truncate (`rtz`).
    TowardZero,
    /// Toward +inf (`up`).
    TowardPositive,
    /// Toward −inf (`down`).
    TowardNegative,
    /// Up with probability equal to the dropped fraction (seeded).
    Stochastic,
}

impl Rounding {
    pub const ALL: [Self; 6] = [
        Self::NearestEven,
        Self::NearestAway,
        Self::TowardZero,
        Self::TowardPositive,
        Self::TowardNegative,
        Self::Stochastic,
    ];

    /// The CLI name.
    pub fn short_name(self) -> &'static str {
        match self {
            Self::NearestEven => "rne",
            Self::NearestAway => "rna",
            Self::TowardZero => "rtz",
            Self::TowardPositive => "up",
            Self::TowardNegative => "down",
            Self::Stochastic => "stochastic",
        }
    }

    pub fn long_name(self) -> &'static str {
        match self {
            Self::NearestEven => "nearest, ties to even",
            Self::NearestAway => "nearest, ties away from zero",
            Self::TowardZero => "toward zero (truncate)",
            Self::TowardPositive => "toward +∞",
            Self::TowardNegative => "toward −∞",
            Self::Stochastic => "stochastic",
        }
    }

    pub fn by_name(name: &str) -> Result<Self, FormatError> {
        Self::ALL
            .into_iter()
            .find(|r| r.short_name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| FormatError::UnknownRounding {
                name: name.to_owned(),
            })
    }
}

/// A format's range and precision, computed from its fields.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RangeTable {
    pub format: String,
    pub bits: u32,
    pub exp_bits: u32,
    pub man_bits: u32,
    pub bias: i32,
    pub max_finite: f64,
    pub min_normal: f64,
    pub min_subnormal: f64,
    /// The gap between 1 and the next larger value.
    pub epsilon: f64,
    /// Half of epsilon: the largest relative error of round-to-nearest.
    pub unit_roundoff: f64,
    pub decimal_digits: f64,
    pub emin: i32,
    pub emax: i32,
    pub has_infinity: bool,
    /// Values of magnitude at or below this round to zero (nearest-even).
    pub underflow_to_zero_at: f64,
    /// The tie between the largest finite value and the step above it:
    /// nearest-even overflows past it, and at it when `tie_overflows`.
    pub overflow_tie: f64,
    /// Whether the tie itself overflows (fp16: 65520 does; E4M3: 464 rounds
    /// to the even 448).
    pub tie_overflows: bool,
}

/// One value rounded into one format, with everything worth showing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Described {
    pub format: String,
    pub bits: u32,
    pub hex: String,
    pub binary: String,
    pub sign: u32,
    pub exponent_field: u32,
    pub mantissa_field: u32,
    pub value: f64,
    pub class: Class,
    /// Decoded value minus the input (NaN when either is not finite).
    pub abs_error: f64,
    pub rel_error: f64,
    pub ulp: Option<f64>,
    /// The neighbouring values below and above.
    pub below: Option<f64>,
    pub above: Option<f64>,
}

/// A seeded source of the 64-bit draws stochastic rounding uses.
pub struct StochasticRounder {
    rng: rand::rngs::StdRng,
}

impl StochasticRounder {
    pub fn new(seed: u64) -> Self {
        use rand::SeedableRng as _;
        Self {
            rng: rand::rngs::StdRng::seed_from_u64(seed),
        }
    }

    pub fn encode(&mut self, format: &Format, x: &Exact) -> u32 {
        use rand::RngExt as _;
        format.encode_with_random(x, Rounding::Stochastic, self.rng.random())
    }
}

#[cfg(test)]
mod tests;
