//! Exercise 07: one step of Adam.
//!
//! 中文：
//! 练习 07：Adam，走一步。

use dlsys_exercises::AdamConfig;

/// Update `params` in place. `m` and `v` (first and second moments) start
/// at zero and are kept between calls; `t` is the step number, 1 on the
/// first call. `c` holds lr, beta1, beta2 and eps.
///
/// The check: five steps against dlsys-lab's Adam.
///
/// Hint: m ← β1·m + (1−β1)·g; v ← β2·v + (1−β2)·g². The moments start at 0,
/// so early on they are biased toward 0: use m̂ = m / (1 − β1^t) and
/// v̂ = v / (1 − β2^t), then θ ← θ − lr·m̂ / (√v̂ + eps).
///
/// 中文：
/// 原地更新 `params`。`m` 和 `v`（一阶矩和二阶矩，first / second moment）从零开始，
/// 在两次调用之间保留；`t` 是步数，第一次调用时为 1。`c` 里是 lr、beta1、beta2 和
/// eps。
///
/// 检查方式：与 dlsys-lab 的 Adam 对比五步。
///
/// 提示：m ← β1·m + (1−β1)·g；v ← β2·v + (1−β2)·g²。两个矩都从 0 开始，所以前几步
/// 会偏向 0：用 m̂ = m / (1 − β1^t) 和 v̂ = v / (1 − β2^t) 做偏差修正（bias
/// correction），再算 θ ← θ − lr·m̂ / (√v̂ + eps)。
pub fn adam_step(
    params: &mut [f64],
    grads: &[f64],
    m: &mut [f64],
    v: &mut [f64],
    t: i32,
    c: AdamConfig,
) {
    todo!()
}
