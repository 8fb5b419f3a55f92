//! Exercise 03: the backward pass of a fully connected layer.
//!
//! 中文：
//! 练习 03：全连接层（fully connected layer）的反向传播（backward pass）。

/// The layer is `y = x·W + b` with `x` of shape n×d_in, `W` d_in×d_out and
/// `b` of length d_out, all row-major slices. Given `dy` = ∂L/∂y (n×d_out),
/// return `(dx, dW, db)`: the gradients of L with respect to x (n×d_in),
/// W (d_in×d_out) and b (d_out).
///
/// The check: against dlsys-lab's autograd engine on several shapes, with
/// d_in ≠ d_out so a transposed dW cannot hide; relative error in f64 must
/// be in the gradient check's "good" band.
///
/// Hint: dx = dy·Wᵀ and dW = xᵀ·dy. The bias was added to every row of the
/// batch, so its gradient *sums* dy over the rows.
///
/// 中文：
/// 这一层是 `y = x·W + b`：`x` 的形状是 n×d_in，`W` 是 d_in×d_out，`b` 的长度是
/// d_out，都是行主序（row-major）的切片。给定 `dy` = ∂L/∂y（n×d_out），返回
/// `(dx, dW, db)`：L 对 x（n×d_in）、W（d_in×d_out）和 b（d_out）的梯度。
///
/// 检查方式：在几种形状上与 dlsys-lab 的自动微分（autograd）引擎对比，其中
/// d_in ≠ d_out，这样转置了的 dW 藏不住；f64 下的相对误差（relative error）必须落在
/// 梯度检查（gradient check）的 "good" 区间里。
///
/// 提示：dx = dy·Wᵀ，dW = xᵀ·dy。偏置（bias）加到了批（batch）里的每一行上，所以
/// 它的梯度要把 dy 按行*求和*。
pub fn linear_backward(
    x: &[f64],
    w: &[f64],
    dy: &[f64],
    n: usize,
    d_in: usize,
    d_out: usize,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    todo!()
}
