//! Exercise 01: decode an fp16 bit pattern.
//!
//! 中文：
//! 练习 01：解码一个 fp16 位模式。

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
///
/// 中文：
/// 把 IEEE 754 半精度位模式 `bits` 表示的值作为 f32 返回（每个 fp16 值都能用 f32
/// 精确表示，所以不需要舍入）。
///
/// 布局：第 15 位是符号位（sign），第 14..10 位是指数位（exponent，偏置 15），
/// 第 9..0 位是尾数位（mantissa）。指数为 31：无穷大（尾数为 0）或 NaN。指数为 0：
/// 零或非规格化数（subnormal，也叫次正规数）。请直接对各字段做算术，不要用库里的
/// `half` 或 `f16`。
///
/// 检查方式：用 dlsys-lab 的浮点模拟器核对全部 65,536 个位模式。
///
/// 提示：非规格化数没有隐含的前导 1，它的值是 mantissa × 2^-24。规格化数（normal）
/// 的值是 (1 + mantissa/1024) × 2^(exponent − 15)。
pub fn fp16_from_bits(bits: u16) -> f32 {
    todo!()
}
