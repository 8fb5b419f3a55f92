//! Where a training step's time goes, eager vs replayed. The eager step
//! builds a tape, checks shapes and allocates every value and gradient;
//! the replay of its capture runs the same kernels into a planned arena.
//! The math is what the kernels take, timed around each one in the
//! replay; the same kernels run in the eager step, so each path's
//! overhead is its time less that math. A tiny step takes microseconds,
//! under a browser timer's resolution, so steps are timed in blocks of
//! enough of them to take [`BLOCK`] seconds; the figures are medians over
//! blocks, eager and replayed interleaved.

use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;

use super::capture::CaptureError;
use super::replay::{layout, run};
use crate::nn::{Activation, Mlp};

/// The sizes the lesson compares: a tiny step and a large one.
pub const CASES: [(usize, usize); 2] = [(1, 16), (256, 1024)];

/// Seconds a timed block of steps takes at least (as the warm-up step
/// suggests), and the most steps in a block.
pub const BLOCK: f64 = 0.002;
const MAX_REPS: usize = 1000;

/// Hidden layers of the timed MLPs (width → width → width → 10).
const HIDDEN: usize = 2;

/// One size, timed both ways.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Overhead {
    pub batch: usize,
    pub width: usize,
    /// Median seconds of a step.
    pub eager_seconds: f64,
    pub replay_seconds: f64,
    /// Median seconds in the kernels.
    pub math_seconds: f64,
    pub launches: usize,
    /// Blocks timed, and steps in each.
    pub runs: usize,
    pub reps: usize,
}

impl Overhead {
    /// The share of the eager step that is not math.
    pub fn eager_share(&self) -> f64 {
        share(self.eager_seconds, self.math_seconds)
    }

    pub fn replay_share(&self) -> f64 {
        share(self.replay_seconds, self.math_seconds)
    }

    /// How many times faster the replay is.
    pub fn speedup(&self) -> f64 {
        self.eager_seconds / self.replay_seconds.max(f64::MIN_POSITIVE)
    }
}

fn share(total: f64, math: f64) -> f64 {
    if total > 0.0 {
        ((total - math) / total).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// A seeded batch: `rows` rows of `features` values in [0, 1), labels below `classes`.
pub fn batch(rows: usize, features: usize, classes: usize, seed: u64) -> (Vec<f32>, Vec<usize>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let x = (0..rows * features).map(|_| rng.random::<f32>()).collect();
    let y = (0..rows).map(|_| rng.random_range(0..classes)).collect();
    (x, y)
}

/// The largest batch and width timed.
pub const MAX_SIZE: usize = 4096;

/// Times an MLP of `width` on a batch of `rows`, `runs` times each way.
pub fn measure(rows: usize, width: usize, runs: usize) -> Result<Overhead, CaptureError> {
    if !(1..=MAX_SIZE).contains(&rows) || !(1..=MAX_SIZE).contains(&width) {
        return Err(CaptureError::Size {
            rows: rows as u64,
            width: width as u64,
            max: MAX_SIZE as u64,
        });
    }
    let mut sizes = vec![width; HIDDEN + 1];
    sizes.push(10);
    let mlp = Mlp::<f32>::new(&sizes, Activation::Relu, 7).map_err(|_| CaptureError::Size {
        rows: rows as u64,
        width: width as u64,
        max: MAX_SIZE as u64,
    })?;
    let (x, y) = batch(rows, width, 10, 11);
    let step = mlp.step(&x, &y);
    let ir = super::capture::capture(&step.graph, step.loss, &step.params, step.data, false)?;
    drop(step);
    let params = mlp.params();
    let data_shape = [rows, width];
    let mut inputs: Vec<(&[f32], &[usize])> = params
        .iter()
        .map(|p| (p.data.as_slice(), p.shape.as_slice()))
        .collect();
    inputs.push((&x, &data_shape));
    let shapes: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
    ir.check(&shapes)?;
    let plan = layout(&ir, &shapes);
    let mut arena = Vec::new();
    let runs = runs.max(1);
    // Warm-up, one step each way, which also sizes the blocks.
    let start = web_time::Instant::now();
    drop(mlp.step(&x, &y));
    let warm = start.elapsed().as_secs_f64();
    let last = run(&ir, &plan, &inputs, &y, &mut arena)?;
    let reps = ((BLOCK / warm.max(1e-9)).ceil() as usize).clamp(1, MAX_REPS);
    let (mut eager, mut replay, mut math) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let start = web_time::Instant::now();
        for _ in 0..reps {
            drop(mlp.step(&x, &y));
        }
        eager.push(start.elapsed().as_secs_f64() / reps as f64);
        let mut kernels = 0.0;
        let start = web_time::Instant::now();
        for _ in 0..reps {
            kernels += run(&ir, &plan, &inputs, &y, &mut arena)?.math_seconds;
        }
        replay.push(start.elapsed().as_secs_f64() / reps as f64);
        math.push(kernels / reps as f64);
    }
    Ok(Overhead {
        batch: rows,
        width,
        eager_seconds: median(eager),
        replay_seconds: median(replay),
        math_seconds: median(math),
        launches: last.launches,
        runs,
        reps,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}
