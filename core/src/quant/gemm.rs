//! The integer GEMM: int8 × int8 products summed in an int32 accumulator
//! (the longest K whose sum always fits, and what a 16-bit accumulator does
//! instead), requantised to int8 by a fixed-point multiplier as integer
//! kernels do (no float in the epilogue), and the traffic model of the two
//! WGSL rungs that run it on the GPU (`shaders/wgsl/gemm_int8.wgsl`).

use serde::Serialize;

use super::QuantError;
use crate::kernels::{MAX_WORKGROUPS_PER_DIM, Traffic};

/// The largest |a·b| of two int8 values: (−128)·(−128) = 2¹⁴.
pub const MAX_PRODUCT: i64 = 128 * 128;

/// The longest K whose sum always fits an i32: ⌊(2³¹ − 1) / 2¹⁴⌋ = 131,071.
/// The GPU rungs loop K/4 times (32,768 at most), well inside the software
/// driver's loop budget, so this bound is the one that binds.
pub const MAX_K: u32 = (i32::MAX as i64 / MAX_PRODUCT) as u32;

/// Invocations per workgroup of the GPU rungs (one output each).
pub const GEMM_WG: u32 = 64;

/// C = A·B with A of `m × k` and B of `k × n` int8 values, C of `m × n` i32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GemmShape {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

impl GemmShape {
    /// Refuses an empty side, a K whose int32 sum could overflow (naming
    /// the bound), and more outputs than one index can address.
    pub fn new(m: u32, n: u32, k: u32) -> Result<Self, QuantError> {
        if m == 0 || n == 0 || k == 0 {
            return Err(QuantError::GemmEmpty { m, n, k });
        }
        if k > MAX_K {
            return Err(QuantError::GemmK { k, max: MAX_K });
        }
        if u64::from(m) * u64::from(n) > u64::from(u32::MAX) {
            return Err(QuantError::GemmOutputs {
                outputs: u64::from(m) * u64::from(n),
                max: u64::from(u32::MAX),
            });
        }
        Ok(Self { m, n, k })
    }

    /// u32 words a row of K int8 values takes, packed four to a word (the
    /// last word padded with zeros).
    pub fn words_per_row(self) -> u32 {
        self.k.div_ceil(4)
    }

    pub fn outputs(self) -> u64 {
        u64::from(self.m) * u64::from(self.n)
    }

    /// Multiply–adds: M·N·K.
    pub fn macs(self) -> u64 {
        self.outputs() * u64::from(self.k)
    }

    /// The GPU grid: one invocation per output, [`GEMM_WG`] to a workgroup,
    /// wrapped into y past the per-dimension limit.
    pub fn workgroups(self) -> [u32; 3] {
        let groups = self.outputs().div_ceil(u64::from(GEMM_WG));
        let x = groups.min(u64::from(MAX_WORKGROUPS_PER_DIM));
        [x as u32, groups.div_ceil(x.max(1)) as u32, 1]
    }
}

/// C = A·B in int32: A is `m × k`, B is `k × n`, both row-major. Exact for
/// every shape [`GemmShape::new`] accepts (each partial sum stays within
/// K·2¹⁴ ≤ 2³¹ − 1).
pub fn gemm_i32(shape: GemmShape, a: &[i8], b: &[i8]) -> Result<Vec<i32>, QuantError> {
    let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
    for (len, rows, cols) in [(a.len(), m, k), (b.len(), k, n)] {
        if len != rows * cols {
            return Err(QuantError::Shape { len, rows, cols });
        }
    }
    let mut c = vec![0i32; m * n];
    for i in 0..m {
        let row = &a[i * k..(i + 1) * k];
        for (j, out) in c[i * n..(i + 1) * n].iter_mut().enumerate() {
            *out = row
                .iter()
                .enumerate()
                .map(|(p, &x)| i32::from(x) * i32::from(b[p * n + j]))
                .sum();
        }
    }
    Ok(c)
}

/// A and B (row-major, `m × k` and `k × n`) drawn uniformly from the whole
/// int8 range, −128 included, from `seed`.
pub fn seeded_operands(shape: GemmShape, seed: u64) -> (Vec<i8>, Vec<i8>) {
    use rand::{RngExt as _, SeedableRng as _};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
    let a = (0..m * k).map(|_| rng.random::<i8>()).collect();
    let b = (0..k * n).map(|_| rng.random::<i8>()).collect();
    (a, b)
}

/// One dot product summed in a 16-bit accumulator, as a kernel that
/// skimped would: the exact sum, what the i16 holds after wrapping, and the
/// first product after which the two differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct NarrowSum {
    pub exact: i64,
    pub wrapped: i16,
    pub first_overflow: Option<usize>,
}

pub fn dot_i16(a: &[i8], b: &[i8]) -> NarrowSum {
    let (mut exact, mut wrapped, mut first_overflow) = (0i64, 0i16, None);
    for (p, (&x, &y)) in a.iter().zip(b).enumerate() {
        let product = i16::from(x).wrapping_mul(i16::from(y));
        exact += i64::from(x) * i64::from(y);
        wrapped = wrapped.wrapping_add(product);
        if first_overflow.is_none() && i64::from(wrapped) != exact {
            first_overflow = Some(p);
        }
    }
    NarrowSum {
        exact,
        wrapped,
        first_overflow,
    }
}

/// The concrete input the lesson and `dlsys-lab quant --int16` show: three
/// products of 127 · 127 (16,129 each) — the third passes 32,767.
pub fn int16_example() -> ([i8; 3], [i8; 3]) {
    ([127; 3], [127; 3])
}

/// Requantisation from the int32 accumulator to int8 without a float: the
/// real multiplier `s_a · s_w / s_out` held as `multiplier · 2^−shift` with
/// the multiplier in [2³⁰, 2³¹) (31 bits of precision), the product taken in
/// i64, rounded half away from zero, the zero point added and the result
/// clamped to [−128, 127] (TFLite's and gemmlowp's scheme).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Requant {
    pub multiplier: i32,
    pub shift: u32,
    pub zero_point: i32,
}

impl Requant {
    /// Refuses a multiplier that is not finite and positive, or so small or
    /// large that its shift would leave 1..=62, and a zero point outside int8.
    pub fn new(real: f64, zero_point: i32) -> Result<Self, QuantError> {
        let refuse = || QuantError::Multiplier { value: real };
        if !(real.is_finite() && real > 0.0) {
            return Err(refuse());
        }
        if !(-128..=127).contains(&zero_point) {
            return Err(QuantError::ZeroPoint { value: zero_point });
        }
        // real = f · 2^e with f in [0.5, 1).
        let e = real.log2().floor() as i32 + 1;
        let f = real / crate::float::pow2(e);
        // log2 may round across a power of two: bring f back into range.
        let (f, e) = if f >= 1.0 {
            (f / 2.0, e + 1)
        } else if f < 0.5 {
            (f * 2.0, e - 1)
        } else {
            (f, e)
        };
        let mut m = (f * crate::float::pow2(31)).round() as i64;
        let mut e = e;
        if m == 1 << 31 {
            m = 1 << 30;
            e += 1;
        }
        let shift = 31 - e;
        if !(1..=62).contains(&shift) {
            return Err(refuse());
        }
        Ok(Self {
            multiplier: m as i32,
            shift: shift as u32,
            zero_point,
        })
    }

    /// The multiplier it really applies: multiplier · 2^−shift.
    pub fn real(self) -> f64 {
        f64::from(self.multiplier) / crate::float::pow2(self.shift as i32)
    }

    /// One accumulator to its int8 code.
    pub fn apply(self, acc: i32) -> i8 {
        let product = i64::from(acc) * i64::from(self.multiplier);
        let half = 1i64 << (self.shift - 1);
        let scaled = if product >= 0 {
            (product + half) >> self.shift
        } else {
            -((-product + half) >> self.shift)
        };
        (scaled + i64::from(self.zero_point)).clamp(-128, 127) as i8
    }
}

/// The two WGSL rungs of the int8 GEMM: the same loop over K/4 packed words,
/// one with WGSL's `dot4I8Packed`, one unpacking each word with
/// `extractBits` and multiplying lane by lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Int8Kernel {
    Dot4,
    Extract,
}

impl Int8Kernel {
    pub const ALL: [Self; 2] = [Self::Dot4, Self::Extract];

    pub fn id(self) -> &'static str {
        match self {
            Self::Dot4 => "int8/dot4",
            Self::Extract => "int8/extract",
        }
    }

    /// Its name among the int8 rungs (`--int8-kernel`).
    pub fn short_id(self) -> &'static str {
        match self {
            Self::Dot4 => "dot4",
            Self::Extract => "extract",
        }
    }

    /// `params.rung` in `gemm_int8.wgsl`: which sum its one entry runs.
    pub fn selector(self) -> u32 {
        match self {
            Self::Dot4 => 0,
            Self::Extract => 1,
        }
    }

    /// Each invocation reads its row of A and its row of Bᵀ, K/4 words each
    /// (4 bytes carry four int8 values), and writes one i32: 8·⌈K/4⌉ bytes
    /// read per output where the f32 naive rung reads 8·K.
    pub fn traffic(self, shape: GemmShape) -> Traffic {
        Traffic {
            bytes_read: 8 * shape.outputs() * u64::from(shape.words_per_row()),
            bytes_written: 4 * shape.outputs(),
            input_passes: 1,
            dispatches: 1,
        }
    }

    /// Integer operations for the roofline: a multiply and an add per MAC.
    pub fn ops(self, shape: GemmShape) -> f64 {
        2.0 * shape.macs() as f64
    }
}

#[cfg(test)]
#[path = "gemm_tests.rs"]
mod tests;
