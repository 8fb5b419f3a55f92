//! What the lessons' exercise generators share: a value picked from a list
//! with the task's seeded generator, and a number written as the reference
//! a learner would type.

use dlsys_core::float::show_sig;
use rand::RngExt as _;

/// One of `from`, drawn with `rng`.
pub fn pick<T: Copy>(rng: &mut rand::rngs::StdRng, from: &[T]) -> T {
    from[rng.random_range(0..from.len())]
}

/// Four significant digits, as the reference a learner would type.
pub fn show(x: f64) -> String {
    show_sig(x, 4)
}
