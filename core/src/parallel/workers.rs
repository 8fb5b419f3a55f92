//! What the model-parallel runs share: a function run for every worker
//! (each on its own thread, or one after another), and a ring collective
//! over the workers' real buffers with the bytes each one sent counted.

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
        handles.into_iter().map(|h| h.join().ok()).collect()
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
