//! Where a training step's time goes, eager vs replayed. The eager step
//! builds a tape, checks shapes and allocates every value and gradient;
//! the replay of its capture runs the same kernels into a planned arena.
//! The math is what the kernels take, timed around each one in the
//! replay; the same kernels run in the eager step, so each path's
//! overhead is its time less that math. A tiny step takes microseconds,
//! under a browser timer's resolution, so each path is timed in blocks of
//! enough steps to take [`BLOCK`] seconds (sized by its own warm-up step);
//! the math in blocks of replays with each kernel timed, less what the
//! timer costs by itself (measured: a thousand empty timings). Each
//! round times the three, eager or replay first in turn; the figures are
//! medians over rounds, each share worked out within its round.

use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;

use super::capture::CaptureError;
use super::capture::slots;
use super::replay::{layout, run};
use crate::nn::{Activation, Mlp};

/// The sizes the lesson compares, (batch, width): a tiny step and a large
/// one — smaller on the web, where the work runs between frames.
#[cfg(not(target_arch = "wasm32"))]
pub const CASES: [(usize, usize); 2] = [(1, 16), (256, 1024)];
#[cfg(target_arch = "wasm32")]
pub const CASES: [(usize, usize); 2] = [(1, 16), (64, 512)];

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
    /// Median seconds in the kernels (a replay with each kernel timed).
    pub math_seconds: f64,
    /// Medians of each round's share of the step that is not math (noise
    /// can make one negative; it is shown as measured).
    pub eager_share: f64,
    pub replay_share: f64,
    pub launches: usize,
    /// Rounds timed, and steps in a block of each path.
    pub runs: usize,
    pub reps_eager: usize,
    pub reps_replay: usize,
}

impl Overhead {
    /// How many times faster the replay is.
    pub fn speedup(&self) -> f64 {
        self.eager_seconds / self.replay_seconds.max(f64::MIN_POSITIVE)
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
    let inputs = slots(&params, &x, &data_shape);
    let shapes: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
    ir.check(&shapes)?;
    let plan = layout(&ir, &shapes);
    let mut arena = Vec::new();
    // A block of `reps` steps; the seconds of one.
    let eager_block = |reps: usize| {
        let start = web_time::Instant::now();
        for _ in 0..reps {
            drop(mlp.step(&x, &y));
        }
        start.elapsed().as_secs_f64() / reps as f64
    };
    let mut replay_block = |reps: usize, timed: bool| -> Result<(f64, f64), CaptureError> {
        let (start, mut kernels) = (web_time::Instant::now(), 0.0);
        for _ in 0..reps {
            kernels += run(&ir, &plan, &inputs, &y, &mut arena, timed)?.math_seconds;
        }
        Ok((
            start.elapsed().as_secs_f64() / reps as f64,
            kernels / reps as f64,
        ))
    };
    // What timing one kernel adds by itself (a read of the clock before
    // and after), taken off the math.
    let timer = {
        let start = web_time::Instant::now();
        let mut sum = 0.0;
        for _ in 0..1000 {
            sum += std::hint::black_box(web_time::Instant::now())
                .elapsed()
                .as_secs_f64();
        }
        std::hint::black_box(sum);
        start.elapsed().as_secs_f64() / 1000.0
    };
    // Warm-up, one step each way, which also sizes each path's blocks.
    let size = |seconds: f64| ((BLOCK / seconds.max(1e-9)).ceil() as usize).clamp(1, MAX_REPS);
    let reps_eager = size(eager_block(1));
    let reps_replay = size(replay_block(1, false)?.0);
    let runs = runs.max(1);
    let mut rounds = Vec::with_capacity(runs);
    for round in 0..runs {
        // Alternate which path goes first.
        let (eager, replay) = if round % 2 == 0 {
            let e = eager_block(reps_eager);
            (e, replay_block(reps_replay, false)?.0)
        } else {
            let r = replay_block(reps_replay, false)?.0;
            (eager_block(reps_eager), r)
        };
        let math = (replay_block(reps_replay, true)?.1 - timer * ir.launches() as f64).max(0.0);
        rounds.push([eager, replay, math, 1.0 - math / eager, 1.0 - math / replay]);
    }
    let column = |c: usize| median(rounds.iter().map(|r| r[c]).collect());
    Ok(Overhead {
        batch: rows,
        width,
        eager_seconds: column(0),
        replay_seconds: column(1),
        math_seconds: column(2),
        eager_share: column(3),
        replay_share: column(4),
        launches: ir.launches(),
        runs,
        reps_eager,
        reps_replay,
    })
}

/// The median of `v` (0 for none).
pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}
