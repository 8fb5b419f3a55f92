//! Exact binary values: what every conversion starts from.

use serde::{Deserialize, Serialize};

/// The magnitude of an exact value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Magnitude {
    Zero,
    /// `mant × 2^exp`, exactly.
    Finite {
        mant: u64,
        exp: i32,
    },
    Infinite,
    /// A NaN; `payload` holds its mantissa bits left-aligned in 64 bits.
    Nan {
        payload: u64,
    },
}

/// A signed exact value: a sign and a [`Magnitude`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exact {
    pub negative: bool,
    pub magnitude: Magnitude,
}

impl Exact {
    pub fn from_f64(x: f64) -> Self {
        let bits = x.to_bits();
        let negative = bits >> 63 == 1;
        let exp = ((bits >> 52) & 0x7ff) as i32;
        let man = bits & ((1 << 52) - 1);
        let magnitude = match exp {
            0x7ff if man == 0 => Magnitude::Infinite,
            0x7ff => Magnitude::Nan { payload: man << 12 },
            0 if man == 0 => Magnitude::Zero,
            0 => Magnitude::Finite {
                mant: man,
                exp: -1074,
            },
            _ => Magnitude::Finite {
                mant: man | (1 << 52),
                exp: exp - 1075,
            },
        };
        Self {
            negative,
            magnitude,
        }
    }

    pub fn from_f32_bits(bits: u32) -> Self {
        let negative = bits >> 31 == 1;
        let exp = ((bits >> 23) & 0xff) as i32;
        let man = u64::from(bits & 0x7f_ffff);
        let magnitude = match exp {
            0xff if man == 0 => Magnitude::Infinite,
            0xff => Magnitude::Nan { payload: man << 41 },
            0 if man == 0 => Magnitude::Zero,
            0 => Magnitude::Finite {
                mant: man,
                exp: -149,
            },
            _ => Magnitude::Finite {
                mant: man | (1 << 23),
                exp: exp - 150,
            },
        };
        Self {
            negative,
            magnitude,
        }
    }

    pub fn nan() -> Self {
        Self {
            negative: false,
            magnitude: Magnitude::Nan { payload: 1 << 63 },
        }
    }

    pub fn infinity(negative: bool) -> Self {
        Self {
            negative,
            magnitude: Magnitude::Infinite,
        }
    }

    pub fn zero(negative: bool) -> Self {
        Self {
            negative,
            magnitude: Magnitude::Zero,
        }
    }

    /// The same value with the mantissa's trailing zero bits moved into the
    /// exponent: one representation per value (1 from fp16's bits and 1 from
    /// an f64 then compare equal). NaNs keep their payload.
    pub fn normalized(&self) -> Self {
        let magnitude = match self.magnitude {
            Magnitude::Finite { mant: 0, .. } => Magnitude::Zero,
            Magnitude::Finite { mant, exp } => {
                let shift = mant.trailing_zeros();
                Magnitude::Finite {
                    mant: mant >> shift,
                    exp: exp.saturating_add(shift as i32),
                }
            }
            other => other,
        };
        Self {
            negative: self.negative,
            magnitude,
        }
    }

    /// Whether this value is an f64 exactly (the nearest f64 is itself).
    /// Any NaN counts as one.
    pub fn is_f64(&self) -> bool {
        if matches!(self.magnitude, Magnitude::Nan { .. }) {
            return true;
        }
        Self::from_f64(self.to_f64()).normalized() == self.normalized()
    }

    /// The nearest f64 (exact for everything narrower than f64).
    pub fn to_f64(&self) -> f64 {
        let sign = if self.negative { -1.0 } else { 1.0 };
        match self.magnitude {
            Magnitude::Zero => sign * 0.0,
            Magnitude::Infinite => sign * f64::INFINITY,
            Magnitude::Nan { .. } => f64::NAN,
            Magnitude::Finite { mant, exp } => sign * crate::float::Format::fp64_round(mant, exp),
        }
    }
}

impl crate::float::Format {
    /// `mant × 2^exp` rounded to nearest-even f64, without overflow in between.
    pub(crate) fn fp64_round(mant: u64, exp: i32) -> f64 {
        if mant == 0 {
            return 0.0;
        }
        // Normalise to at most 53 bits with a sticky bit, then scale in two steps.
        let bit_len = 64 - mant.leading_zeros() as i32;
        let (m, e) = if bit_len > 53 {
            let drop = bit_len - 53;
            let kept = mant >> drop;
            let rem = mant & ((1u64 << drop) - 1);
            let half = 1u64 << (drop - 1);
            let up = rem > half || (rem == half && kept & 1 == 1);
            (kept + u64::from(up), exp + drop)
        } else {
            (mant, exp)
        };
        let m = m as f64;
        // Split the scaling so neither factor under- or overflows on its own.
        let first = e.clamp(-1000, 1000);
        m * crate::float::pow2(first) * crate::float::pow2((e - first).clamp(-1074, 1023))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_an_f64_whatever_its_representation() {
        // 1 from fp16's bits is 1024 × 2^-10, from an f64 2^52 × 2^-52.
        let fp16 = crate::float::Format::fp16();
        let one = fp16.to_exact(0x3c00);
        assert_ne!(one, Exact::from_f64(1.0), "the representations differ");
        assert!(one.is_f64());
        assert!(fp16.to_exact(0x0001).is_f64(), "a subnormal");
        assert!(Exact::from_f32_bits(0x3dcc_cccd).is_f64(), "f32 0.1");
        let tenth = crate::float::parse::parse_input("0.1", &fp16).expect("a number");
        assert!(!tenth.exact.is_f64(), "decimal 0.1 is no binary value");
        let pattern = crate::float::parse::parse_input("fp16:0x3c00", &fp16).expect("a pattern");
        assert!(pattern.exact.is_f64(), "a typed pattern is exact");
        assert!(Exact::zero(true).is_f64() && Exact::infinity(false).is_f64());
    }

    #[test]
    fn f64_round_trips() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -2.5,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            0.1,
            1e-310,
        ] {
            assert_eq!(Exact::from_f64(x).to_f64().to_bits(), x.to_bits(), "{x}");
        }
        assert!(Exact::from_f64(f64::NAN).to_f64().is_nan());
        assert_eq!(
            Exact::from_f64(f64::NEG_INFINITY).to_f64(),
            f64::NEG_INFINITY
        );
    }

    #[test]
    fn f32_bits_decompose_exactly() {
        for x in [
            0.0f32,
            -0.0,
            1.0,
            3.5,
            f32::MIN_POSITIVE,
            1e-45,
            f32::MAX,
            0.1,
        ] {
            assert_eq!(
                Exact::from_f32_bits(x.to_bits()).to_f64(),
                f64::from(x),
                "{x}"
            );
        }
    }
}
