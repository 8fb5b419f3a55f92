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
