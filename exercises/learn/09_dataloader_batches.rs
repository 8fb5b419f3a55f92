//! Exercise 09: a shuffling data loader.

/// Shuffle the indices 0..len uniformly at random, then cut them into
/// batches of `batch_size` (≥ 1). With `drop_last`, a short last batch is
/// dropped; without it, it is kept. `below(n)` returns a uniformly random
/// number in 0..n: draw all randomness from it, so a seeded stream gives the
/// same batches.
///
/// The check: sizes, every index at most once, reproducibility, and a
/// uniform shuffle: over 60,000 shuffles of three items each of the six
/// orders must come up 1/6 of the time.
///
/// Hint: Fisher–Yates: for i from len − 1 down to 1, swap positions i and
/// below(i + 1). Swapping with below(len) at every i looks as good and is
/// biased: n^n equally likely paths cannot spread evenly over n! orders.
pub fn dataloader_batches(
    len: usize,
    batch_size: usize,
    drop_last: bool,
    below: &mut dyn FnMut(usize) -> usize,
) -> Vec<Vec<usize>> {
    todo!()
}
