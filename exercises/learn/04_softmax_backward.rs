//! Exercise 04: the backward pass of softmax.

/// `p` holds rows of `classes` probabilities, p = softmax(z) per row, and
/// `g` the upstream gradient ∂L/∂p, same shape. Return ∂L/∂z.
///
/// The check: against the autograd engine's backward of sum(g ⊙ softmax(z)).
///
/// Hint: the Jacobian of one row is diag(p) − p·pᵀ, so
/// dz_k = p_k (g_k − Σ_j p_j g_j). You never need the whole matrix.
pub fn softmax_backward(p: &[f64], g: &[f64], classes: usize) -> Vec<f64> {
    todo!()
}
