//! Exercise 02: round an f32 to bf16.

/// Returns the bf16 bit pattern nearest to `x`, ties to even: what a mixed-
/// precision trainer does to every tensor it stores in bf16.
///
/// bf16 keeps an f32's sign, its 8 exponent bits and the top 7 mantissa
/// bits, so it is the top half of the f32's bits, *rounded*. Values past
/// bf16's largest finite value round to infinity; a NaN must stay a NaN.
///
/// The check: ties both ways, overflow, subnormals, NaN payloads and a
/// million random patterns against the float emulator's nearest-even encode.
///
/// Hint: look at `x.to_bits()`. Adding 0x7fff plus the lowest bit you keep
/// (`(bits >> 16) & 1`) before shifting right by 16 rounds to nearest-even
/// in one integer add. Deal with NaN before that: 0x7f80_0001 is a NaN whose
/// top 16 bits alone would be infinity.
pub fn round_to_bf16_rne(x: f32) -> u16 {
    todo!()
}
