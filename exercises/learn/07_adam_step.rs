//! Exercise 07: one step of Adam.

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
