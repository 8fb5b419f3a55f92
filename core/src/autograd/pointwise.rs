//! The math the tape shares with the executor of a captured graph, said
//! once: the elementwise ops' functions and derivatives, and the row
//! kernels of softmax cross-entropy and of a bias's gradient, on plain
//! slices. The tape ([`super::Graph`]) runs them on its tensors and the
//! executor ([`crate::compile::replay`]) on its arena — the same code, so a
//! replay equals the eager step bit for bit.

use super::tensor::Real;

pub fn relu<T: Real>(x: T) -> T {
    if x > T::ZERO { x } else { T::ZERO }
}

/// ReLU's derivative from its output `y` (positive exactly where the
/// input was), applied to the gradient `g` — as PyTorch's
/// `threshold_backward` reads the result, so the input need not be kept.
pub fn relu_grad<T: Real>(g: T, y: T) -> T {
    if y > T::ZERO { g } else { T::ZERO }
}

/// tanh's derivative from its output `y`.
pub fn tanh_grad<T: Real>(g: T, y: T) -> T {
    g * (T::ONE - y * y)
}

pub fn sigmoid<T: Real>(x: T) -> T {
    T::ONE / (T::ONE + (-x).exp())
}

/// The sigmoid's derivative from its output `y`.
pub fn sigmoid_grad<T: Real>(g: T, y: T) -> T {
    g * y * (T::ONE - y)
}

/// Row-wise softmax of `z` (rows of `cols`) into `out`, numerically
/// stable: the row max is subtracted first.
pub fn softmax_rows_into<T: Real>(z: &[T], cols: usize, out: &mut [T]) {
    out.copy_from_slice(z);
    for row in out.chunks_exact_mut(cols.max(1)) {
        let max = row.iter().fold(row[0], |m, x| m.max(*x));
        let mut sum = T::ZERO;
        for x in row.iter_mut() {
            *x = (*x - max).exp();
            sum += *x;
        }
        for x in row.iter_mut() {
            *x = *x / sum;
        }
    }
}

/// The mean over rows of −log softmax(z)[label], each row's max subtracted.
pub fn cross_entropy_rows<T: Real>(z: &[T], cols: usize, labels: &[usize]) -> T {
    let mut loss = T::ZERO;
    for (row, label) in z.chunks_exact(cols.max(1)).zip(labels) {
        let max = row.iter().fold(row[0], |m, x| m.max(*x));
        let log_sum = row.iter().fold(T::ZERO, |s, x| s + (*x - max).exp()).ln();
        loss += log_sum - (row[*label] - max);
    }
    loss / T::from_f64(labels.len() as f64)
}

/// Softmax cross-entropy's gradient, `(p − one-hot) · scale`, into `out`.
pub fn cross_entropy_grad_into<T: Real>(
    probs: &[T],
    cols: usize,
    labels: &[usize],
    scale: T,
    out: &mut [T],
) {
    out.copy_from_slice(probs);
    for (r, label) in labels.iter().enumerate() {
        out[r * cols + label] -= T::ONE;
    }
    for x in out {
        *x *= scale;
    }
}

/// The sum over rows of `g` (rows of `out.len()`): the gradient of a
/// bias broadcast over the batch.
pub fn sum_rows_into<T: Real>(g: &[T], out: &mut [T]) {
    out.fill(T::ZERO);
    for row in g.chunks_exact(out.len().max(1)) {
        for (o, x) in out.iter_mut().zip(row) {
            *o += *x;
        }
    }
}
