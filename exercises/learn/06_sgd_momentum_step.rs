//! Exercise 06: one step of SGD with momentum.
//!
//! 中文：
//! 练习 06：带动量（momentum）的 SGD，走一步。

/// Update `params` in place from `grads` with learning rate `lr` and
/// momentum `mu`. `velocity` starts at zero and is yours to keep between
/// calls (the same slice is passed every step).
///
/// The check: five steps against dlsys-lab's momentum optimizer.
///
/// Hint: v ← μ·v − lr·g, then θ ← θ + v, element by element.
///
/// 中文：
/// 用 `grads`、学习率（learning rate）`lr` 和动量系数 `mu` 原地更新 `params`。
/// `velocity` 从零开始，由你在两次调用之间保存（每一步传入的都是同一个切片）。
///
/// 检查方式：与 dlsys-lab 的动量优化器对比五步。
///
/// 提示：逐元素计算 v ← μ·v − lr·g，然后 θ ← θ + v。
pub fn sgd_momentum_step(
    params: &mut [f64],
    grads: &[f64],
    velocity: &mut [f64],
    lr: f64,
    mu: f64,
) {
    todo!()
}
