//! Exercise 03: the backward pass of a fully connected layer.

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
