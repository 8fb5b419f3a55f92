//! Exercise 05: the gradient of softmax + cross-entropy.
//!
//! 中文：
//! 练习 05：softmax + 交叉熵（cross-entropy）的梯度。

/// `logits` holds `labels.len()` rows of `classes` values. The loss is the
/// mean over rows of −log softmax(row)[label]. Return ∂loss/∂logits.
///
/// The check: against the autograd engine's fused softmax-cross-entropy,
/// including logits in the thousands, where a naive exp overflows.
///
/// Hint: per row, (p − onehot(label)) / n, where p is the row's softmax
/// computed stably: subtract the row's max before exp.
///
/// 中文：
/// `logits` 存放 `labels.len()` 行，每行 `classes` 个值。损失是各行
/// −log softmax(row)[label] 的平均值。返回 ∂loss/∂logits。
///
/// 检查方式：与自动微分（autograd）引擎中融合的 softmax 交叉熵对比，包括上千的
/// logits，这时朴素的 exp 会上溢（overflow）。
///
/// 提示：每一行的梯度是 (p − onehot(label)) / n，其中 p 是这一行的 softmax，要用
/// 数值稳定的方法算：先减去这一行的最大值，再做 exp。
pub fn softmax_cross_entropy_backward(
    logits: &[f64],
    labels: &[usize],
    classes: usize,
) -> Vec<f64> {
    todo!()
}
