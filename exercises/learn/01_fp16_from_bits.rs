//! Exercise 01: decode an fp16 bit pattern.

/// Returns the value of the IEEE 754 half-precision pattern `bits` as an f32
/// (every fp16 value is exactly an f32, so there is no rounding to do).
///
/// Layout: bit 15 sign, bits 14..10 exponent (bias 15), bits 9..0 mantissa.
/// Exponent 31: infinity (mantissa 0) or NaN. Exponent 0: zero or a
/// subnormal. Do it with arithmetic on the fields, not with `half` or
/// `f16` from a library.
///
/// The check: all 65,536 patterns against dlsys-lab's float emulator.
///
/// Hint: a subnormal has no implicit leading 1: its value is
/// mantissa × 2^-24. A normal one is (1 + mantissa/1024) × 2^(exponent − 15).
pub fn fp16_from_bits(bits: u16) -> f32 {
    todo!()
}
