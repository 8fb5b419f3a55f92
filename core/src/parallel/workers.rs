//! What the model-parallel runs share: a function run for every worker
//! (each on its own thread, or one after another), a ring collective over
//! the workers' real buffers with the bytes each one sent counted, and
//! their seeded data.

use rand::RngExt as _;

use crate::collective::{Algorithm, Op, Schedule, run};

/// `f` for every worker, on threads when `threads`; `None` if a thread
/// stopped without its result.
pub(crate) fn each<T: Send>(
    threads: bool,
    workers: usize,
    f: impl Fn(usize) -> T + Sync,
) -> Option<Vec<T>> {
    if !threads {
        return Some((0..workers).map(&f).collect());
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let f = &f;
                scope.spawn(move || f(w))
            })
            .collect();
        // Join every thread before looking at any result: one that failed
        // leaves the others still to be joined.
        let joined: Vec<Option<T>> = handles.into_iter().map(|h| h.join().ok()).collect();
        joined.into_iter().collect()
    })
}

/// Runs `op` on the ring over `buffers` (one per worker, all the same
/// length), adding each worker's bytes sent to `sent`; `None` if the
/// collective cannot be built.
pub(crate) fn ring(op: Op, buffers: &mut [Vec<f32>], sent: &mut [u64]) -> Option<()> {
    let elements = buffers.first().map_or(0, Vec::len);
    let schedule = Schedule::new(Algorithm::Ring, op, buffers.len(), elements).ok()?;
    let outcome = run(&schedule, buffers).ok()?;
    for (s, t) in sent.iter_mut().zip(&outcome.traffic) {
        *s += t.sent_bytes;
    }
    Some(())
}

/// `rows` examples of `inputs` features uniform in [−1, 1), and their labels
/// uniform over `classes`.
pub(crate) fn random_batch(
    rng: &mut rand::rngs::StdRng,
    rows: usize,
    inputs: usize,
    classes: usize,
) -> (Vec<f32>, Vec<usize>) {
    let x = (0..rows * inputs)
        .map(|_| rng.random_range(-1.0f32..1.0))
        .collect();
    let y = (0..rows).map(|_| rng.random_range(0..classes)).collect();
    (x, y)
}
