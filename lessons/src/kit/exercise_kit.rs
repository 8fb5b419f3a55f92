//! What the lessons' exercise generators share: a value picked from a list
//! with the task's seeded generator, and a number written as the reference
//! a learner would type.

use dlsys_core::float::show_sig;
use rand::{RngExt as _, SeedableRng as _};

/// A task's seeded generator: `seed` mixed with the lesson's `salt`, so two
/// lessons' exercises draw different numbers for the same seed.
pub fn rng(seed: u64, salt: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed ^ salt)
}

/// One of `from`, drawn with `rng`.
pub fn pick<T: Copy>(rng: &mut rand::rngs::StdRng, from: &[T]) -> T {
    from[rng.random_range(0..from.len())]
}

/// Four significant digits, as the reference a learner would type.
pub fn show(x: f64) -> String {
    show_sig(x, 4)
}
