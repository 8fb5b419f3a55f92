//! Exercise 08: online softmax (Milakov & Gimelshein, 2018).
//!
//! 中文：
//! 练习 08：online softmax（Milakov & Gimelshein，2018）。

/// Returns the softmax of `row`, computing its max and its sum of
/// exponentials in *one* pass (then one more pass to write the outputs):
/// the trick behind fused softmax kernels and FlashAttention.
///
/// Rows may hold huge logits (±1000) and −inf entries (masked positions).
///
/// The check: rows of length 1, 2, 2^k ± 1, huge logits, −inf, and a row
/// whose max comes last, against the CPU softmax reference (f64 inside).
///
/// Hint: keep a running max m and a running sum s of exp(x − m). When a new
/// x exceeds m, the old terms were scaled for the old max: s ← s·exp(m − x) + 1,
/// m ← x. Otherwise s ← s + exp(x − m). Skip −inf (it adds nothing, and
/// −inf − (−inf) is NaN).
///
/// 中文：
/// 返回 `row` 的 softmax。它的最大值和指数和要在*一*遍扫描里同时算出（之后再扫一遍
/// 写输出）。这正是融合 softmax kernel 和 FlashAttention 背后的技巧。
///
/// 行里可能有很大的 logits（±1000），也可能有 −inf（被掩码的位置）。
///
/// 检查方式：长度为 1、2、2^k ± 1 的行，超大 logits，−inf，以及最大值在最后的行，
/// 与 CPU softmax 参考实现（内部用 f64）对比。
///
/// 提示：维护当前最大值 m（running max），以及 exp(x − m) 的累加和 s。新的 x 超过 m
/// 时，旧的各项是按旧最大值缩放的：s ← s·exp(m − x) + 1，m ← x。否则
/// s ← s + exp(x − m)。跳过 −inf（它什么也不贡献，而且 −inf − (−inf) 是 NaN）。
pub fn online_softmax(row: &[f32]) -> Vec<f32> {
    todo!()
}
