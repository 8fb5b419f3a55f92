//! Exercise 06: one step of SGD with momentum.

/// Update `params` in place from `grads` with learning rate `lr` and
/// momentum `mu`. `velocity` starts at zero and is yours to keep between
/// calls (the same slice is passed every step).
///
/// The check: five steps against dlsys-lab's momentum optimizer.
///
/// Hint: v ← μ·v − lr·g, then θ ← θ + v, element by element.
pub fn sgd_momentum_step(
    params: &mut [f64],
    grads: &[f64],
    velocity: &mut [f64],
    lr: f64,
    mu: f64,
) {
    todo!()
}
