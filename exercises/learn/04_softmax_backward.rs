//! Exercise 04: the backward pass of softmax.
//!
//! 中文：
//! 练习 04：softmax 的反向传播（backward pass）。

/// `p` holds rows of `classes` probabilities, p = softmax(z) per row, and
/// `g` the upstream gradient ∂L/∂p, same shape. Return ∂L/∂z.
///
/// The check: against the autograd engine's backward of sum(g ⊙ softmax(z)).
///
/// Hint: the Jacobian of one row is diag(p) − p·pᵀ, so
/// dz_k = p_k (g_k − Σ_j p_j g_j). You never need the whole matrix.
///
/// 中文：
/// `p` 存放若干行，每行 `classes` 个概率，每行都是 p = softmax(z)；`g` 是上游梯度
/// ∂L/∂p，形状相同。返回 ∂L/∂z。
///
/// 检查方式：与自动微分（autograd）引擎对 sum(g ⊙ softmax(z)) 的反向传播对比。
///
/// 提示：一行的雅可比矩阵（Jacobian）是 diag(p) − p·pᵀ，所以
/// dz_k = p_k (g_k − Σ_j p_j g_j)。完全不需要构造整个矩阵。
pub fn softmax_backward(p: &[f64], g: &[f64], classes: usize) -> Vec<f64> {
    todo!()
}
