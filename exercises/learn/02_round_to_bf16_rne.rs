//! Exercise 02: round an f32 to bf16.
//!
//! 中文：
//! 练习 02：把 f32 舍入成 bf16。

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
///
/// 中文：
/// 返回离 `x` 最近的 bf16 位模式，采用就近舍入（偶数优先，round to nearest,
/// ties to even）。混合精度（mixed precision）训练器把张量存成 bf16 时，对每个张量做的
/// 就是这件事。
///
/// bf16 保留 f32 的符号位、全部 8 个指数位和尾数位的高 7 位，所以它就是 f32 位模式
/// 的高半部分，但要经过*舍入*。超过 bf16 最大有限值的数舍入为无穷大；NaN 必须仍是
/// NaN。
///
/// 检查方式：向上和向下两种中点情形、上溢（overflow）、非规格化数（subnormal）、NaN 的
/// payload，以及一百万个随机位模式，与浮点模拟器按就近舍入（偶数优先）编码的结果对比。
///
/// 提示：看 `x.to_bits()`。右移 16 位之前，先加上 0x7fff 和要保留的最低位
/// （`(bits >> 16) & 1`），一次整数加法就完成了就近舍入（偶数优先）。NaN 要在这之前
/// 处理：0x7f80_0001 是 NaN，只看它的高 16 位却是无穷大。
pub fn round_to_bf16_rne(x: f32) -> u16 {
    todo!()
}
