//! How the engine keeps a tensor between uses: as its elements, or packed
//! as the 16-bit patterns of a format every element is exactly in. A
//! reduced-precision policy rounds its values to fp16 or bf16; packed, they
//! really take two bytes each, and reading them decodes them. Packing never
//! loses anything: a tensor with one value outside the format stays whole.

use std::borrow::Cow;

use super::tensor::{Real, Tensor};
use crate::float::Format;

/// A 16-bit format tensors can be packed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    Fp16,
    Bf16,
}

impl Half {
    /// The format named `name`, when it is fp16 or bf16 (else `None`: it
    /// has no 2-byte packing here, and its values stay in f32 buffers).
    pub fn by_name(name: &str) -> Option<Self> {
        match Format::by_name(name) {
            Ok(f) if f == Format::fp16() => Some(Self::Fp16),
            Ok(f) if f == Format::bf16() => Some(Self::Bf16),
            _ => None,
        }
    }

    /// `src`'s patterns, and whether every value is exactly in the format
    /// (a NaN counts as exact). Branch-free, so the loop vectorises (with
    /// AVX2 where the CPU has it).
    fn encode_into(self, src: &[f32], dst: &mut [u16]) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2")]
            fn avx2(half: Half, src: &[f32], dst: &mut [u16]) -> bool {
                encode(half, src, dst)
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: a `target_feature` function may run only on a CPU
                // that has the feature, and AVX2 was detected just above.
                #[allow(unsafe_code)]
                return unsafe { avx2(self, src, dst) };
            }
        }
        encode(self, src, dst)
    }

    fn decode_into(self, src: &[u16], dst: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2")]
            fn avx2(half: Half, src: &[u16], dst: &mut [f32]) {
                decode(half, src, dst);
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: as in `encode_into`.
                #[allow(unsafe_code)]
                return unsafe { avx2(self, src, dst) };
            }
        }
        decode(self, src, dst);
    }

    /// `data` packed, or `None` if a value is not exactly in the format
    /// (any NaN counts as exact: it stays a NaN).
    pub fn pack<T: Real>(self, data: &[T]) -> Option<Vec<u16>> {
        let mut bits = vec![0u16; data.len()];
        self.pack_into(data, &mut bits).then_some(bits)
    }

    /// [`Self::pack`] into `bits` (as long as `data`); `false` if a value
    /// is not exactly in the format (then `bits` holds nothing useful).
    pub fn pack_into<T: Real>(self, data: &[T], bits: &mut [u16]) -> bool {
        if data.len() != bits.len() {
            return false;
        }
        if let Some(xs) = T::as_f32s(data) {
            return self.encode_into(xs, bits);
        }
        let mut wide = [0f32; BLOCK];
        for (src, dst) in data.chunks(BLOCK).zip(bits.chunks_mut(BLOCK)) {
            for (w, x) in wide.iter_mut().zip(src) {
                *w = x.to_f64() as f32;
                if f64::from(*w) != x.to_f64() && !w.is_nan() {
                    return false;
                }
            }
            if !self.encode_into(&wide[..src.len()], dst) {
                return false;
            }
        }
        true
    }

    pub fn unpack<T: Real>(self, bits: &[u16]) -> Vec<T> {
        let mut out = vec![0f32; bits.len()];
        self.decode_into(bits, &mut out);
        T::from_f32s(out)
    }

    /// [`Self::unpack`] into `out`, reusing its buffer.
    pub fn unpack_into<T: Real>(self, bits: &[u16], out: &mut Vec<T>) {
        out.clear();
        out.resize(bits.len(), T::ZERO);
        match T::as_f32s_mut(out) {
            Some(dst) => self.decode_into(bits, dst),
            None => {
                let mut wide = [0f32; BLOCK];
                for (src, dst) in bits.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
                    self.decode_into(src, &mut wide[..src.len()]);
                    for (d, w) in dst.iter_mut().zip(&wide) {
                        *d = T::from_f64(f64::from(*w));
                    }
                }
            }
        }
    }
}

#[inline(always)]
fn encode(half: Half, src: &[f32], dst: &mut [u16]) -> bool {
    let mut exact = true;
    match half {
        Half::Bf16 => {
            for (d, x) in dst.iter_mut().zip(src) {
                let b = x.to_bits();
                // A NaN whose payload is all in the low half stays a NaN:
                // its quiet bit is set.
                *d = (b >> 16) as u16 | (u16::from(x.is_nan()) << 6);
                exact &= (b & 0xffff == 0) | x.is_nan();
            }
        }
        Half::Fp16 => {
            for (d, x) in dst.iter_mut().zip(src) {
                let (h, ok) = fp16_bits(*x);
                *d = h;
                exact &= ok;
            }
        }
    }
    exact
}

#[inline(always)]
fn decode(half: Half, src: &[u16], dst: &mut [f32]) {
    match half {
        Half::Bf16 => {
            for (d, h) in dst.iter_mut().zip(src) {
                *d = f32::from_bits(u32::from(*h) << 16);
            }
        }
        Half::Fp16 => {
            for (d, h) in dst.iter_mut().zip(src) {
                *d = fp16_value(*h);
            }
        }
    }
}

/// Values of a wider type narrowed to f32 per block, on the stack.
const BLOCK: usize = 1024;

/// An fp16 pattern's value (exact in f32), without branches.
#[inline(always)]
fn fp16_value(h: u16) -> f32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let em = h & 0x7fff;
    // Normal: the exponent rebiased (15 → 127), the mantissa moved up.
    let normal = (em << 13) + 0x3800_0000;
    let special = (em << 13) | 0x7f80_0000;
    // Subnormal: m·2⁻²⁴, exact (and a normal f32).
    let subnormal = (em as f32 * f32::from_bits(0x3380_0000)).to_bits();
    let bits = if em >= 0x7c00 {
        special
    } else if em < 0x0400 {
        subnormal
    } else {
        normal
    };
    f32::from_bits(sign | bits)
}

/// `x`'s fp16 pattern and whether `x` is exactly that value, without
/// branches (a value not in fp16 gives some pattern and `false`).
#[inline(always)]
fn fp16_bits(x: f32) -> (u16, bool) {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let abs = b & 0x7fff_ffff;
    // Normal fp16: 2⁻¹⁴ ≤ |x| ≤ 65504, the low 13 mantissa bits zero.
    let is_normal = (0x3880_0000..=0x477f_e000).contains(&abs);
    let normal = (abs.wrapping_sub(0x3800_0000) >> 13) as u16;
    // Subnormal fp16: |x| < 2⁻¹⁴, a whole multiple m of 2⁻²⁴. Added to
    // 0.5, whose ulp is 2⁻²⁴, m lands in the low mantissa bits (no
    // float-to-int conversion: the loop stays vectorised); the sum minus
    // 0.5 is |x| again exactly when |x| is such a multiple.
    let magnitude = f32::from_bits(abs);
    let shifted = magnitude + 0.5;
    let m = shifted.to_bits().wrapping_sub(0x3f00_0000);
    let is_sub = abs < 0x3880_0000;
    let sub_exact = shifted - 0.5 == magnitude;
    let is_inf = abs == 0x7f80_0000;
    let is_nan = abs > 0x7f80_0000;
    let h = if is_normal {
        normal
    } else if is_sub {
        m as u16
    } else if is_nan {
        0x7e00
    } else {
        0x7c00
    };
    let exact = (is_normal & (abs & 0x1fff == 0)) | (is_sub & sub_exact) | is_inf | is_nan;
    (sign | h, exact)
}

/// A tensor as the engine keeps it.
#[derive(Clone, Debug, PartialEq)]
pub enum Stored<T> {
    Whole(Tensor<T>),
    Packed {
        half: Half,
        bits: Vec<u16>,
        shape: Vec<usize>,
    },
}

impl<T: Real> Stored<T> {
    /// `t` packed in `half` when every value is exactly in it, else whole.
    pub fn keep(t: Tensor<T>, half: Option<Half>) -> Self {
        match half.and_then(|h| h.pack(&t.data).map(|bits| (h, bits))) {
            Some((half, bits)) => Self::Packed {
                half,
                bits,
                shape: t.shape,
            },
            None => Self::Whole(t),
        }
    }

    /// The tensor: borrowed when whole, decoded when packed.
    pub fn get(&self) -> Cow<'_, Tensor<T>> {
        match self {
            Self::Whole(t) => Cow::Borrowed(t),
            Self::Packed { half, bits, shape } => Cow::Owned(Tensor {
                data: half.unpack(bits),
                shape: shape.clone(),
            }),
        }
    }

    pub fn into_tensor(self) -> Tensor<T> {
        match self {
            Self::Whole(t) => t,
            Self::Packed { half, bits, shape } => Tensor {
                data: half.unpack(&bits),
                shape,
            },
        }
    }

    pub fn shape(&self) -> &[usize] {
        match self {
            Self::Whole(t) => &t.shape,
            Self::Packed { shape, .. } => shape,
        }
    }

    pub fn numel(&self) -> usize {
        match self {
            Self::Whole(t) => t.numel(),
            Self::Packed { bits, .. } => bits.len(),
        }
    }

    /// Whether the tensor is packed (2 bytes an element).
    pub fn is_packed(&self) -> bool {
        matches!(self, Self::Packed { .. })
    }
}

impl<T> Default for Stored<T> {
    fn default() -> Self {
        Self::Whole(Tensor {
            data: Vec::new(),
            shape: vec![0],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_exact_values_only_and_reads_them_back_bit_for_bit() {
        let tiny = 2f32.powi(-24); // fp16's smallest subnormal
        let exact = Tensor::new(
            vec![1.0f32, -0.5, 65504.0, tiny, 0.0, f32::INFINITY],
            &[2, 3],
        );
        let s = Stored::keep(exact.clone(), Some(Half::Fp16));
        assert!(s.is_packed());
        assert_eq!(s.shape(), &[2, 3]);
        let back = s.into_tensor();
        let bits = |t: &Tensor<f32>| t.data.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&exact));
        // 0.1 is no fp16 value: the tensor stays whole, nothing lost.
        let inexact = Tensor::new(vec![1.0f32, 0.1], &[2]);
        let s = Stored::keep(inexact.clone(), Some(Half::Fp16));
        assert!(!s.is_packed());
        assert_eq!(s.get().data, inexact.data);
        // 65504·2 is no fp16 value but is a bf16 value.
        let big = Tensor::new(vec![131_072.0f32], &[1]);
        assert!(!Stored::keep(big.clone(), Some(Half::Fp16)).is_packed());
        assert!(Stored::keep(big, Some(Half::Bf16)).is_packed());
        assert!(Stored::keep(Tensor::new(vec![f32::NAN], &[1]), Some(Half::Bf16)).is_packed());
        // A NaN whose payload is only in the bits bf16 drops stays a NaN.
        let low_nan = Tensor::new(vec![f32::from_bits(0x7f80_0001)], &[1]);
        let low_nan = Stored::keep(low_nan, Some(Half::Bf16));
        assert!(low_nan.is_packed() && low_nan.get().data[0].is_nan());
    }

    /// Every one of the 2¹⁶ patterns of each format decodes to the value the
    /// float emulator gives it, and packs back to itself (NaNs: to a NaN).
    #[test]
    fn every_pattern_round_trips_and_agrees_with_the_emulator() {
        for (half, format) in [(Half::Fp16, Format::fp16()), (Half::Bf16, Format::bf16())] {
            let all: Vec<u16> = (0..=u16::MAX).collect();
            let values: Vec<f32> = half.unpack(&all);
            for (bits, x) in all.iter().zip(&values) {
                let emulated = format.decode(u32::from(*bits));
                assert!(
                    x.to_bits() == (emulated as f32).to_bits() || (x.is_nan() && emulated.is_nan()),
                    "{half:?} {bits:#06x}: {x} vs {emulated}"
                );
            }
            let back = half.pack(&values).expect("every decoded value is exact");
            for ((bits, b), x) in all.iter().zip(&back).zip(&values) {
                assert!(b == bits || x.is_nan(), "{half:?} {bits:#06x} → {b:#06x}");
            }
            // The f64 path (a graph of f64) agrees.
            let wide: Vec<f64> = values.iter().map(|x| f64::from(*x)).collect();
            assert_eq!(half.pack(&wide).map(|b| b.len()), Some(all.len()));
            assert_eq!(half.pack(&[0.1f64]), None);
        }
    }

    /// For random f32 patterns, a value packs exactly when the float
    /// emulator's nearest-even rounding leaves it unchanged.
    #[test]
    fn a_value_packs_exactly_when_rounding_keeps_it() {
        use crate::float::Rounding;
        use rand::{RngExt as _, SeedableRng as _};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x7061_636b);
        for (half, format) in [(Half::Fp16, Format::fp16()), (Half::Bf16, Format::bf16())] {
            for i in 0..200_000u32 {
                // Every fourth value is one of the format's own, the rest any f32.
                let x = if i % 4 == 0 {
                    let bits: u16 = rng.random();
                    half.unpack::<f32>(&[bits])[0]
                } else {
                    f32::from_bits(rng.random())
                };
                let kept = format.decode(format.encode_f32(x, Rounding::NearestEven)) as f32;
                let exact = kept.to_bits() == x.to_bits() || (x.is_nan() && kept.is_nan());
                let packed = half.pack(&[x]);
                assert_eq!(
                    packed.is_some(),
                    exact,
                    "{half:?} {x:e} ({:#010x})",
                    x.to_bits()
                );
                // What packs reads back as itself (a NaN as a NaN).
                if let Some(bits) = packed {
                    let back: f32 = half.unpack(&bits)[0];
                    let same = back.to_bits() == x.to_bits() || (x.is_nan() && back.is_nan());
                    assert!(same, "{half:?} {x:e}");
                }
            }
        }
    }

    #[test]
    fn only_fp16_and_bf16_pack() {
        assert_eq!(Half::by_name("fp16"), Some(Half::Fp16));
        assert_eq!(Half::by_name("bf16"), Some(Half::Bf16));
        assert_eq!(Half::by_name("fp32"), None);
        assert_eq!(Half::by_name("tf32"), None);
        assert_eq!(Half::by_name("e4m3"), None);
    }
}
