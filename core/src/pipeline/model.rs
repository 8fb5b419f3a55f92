//! What the pipeline should do, from the stage times measured with one
//! worker (never fitted to the runs it predicts).
//!
//! Per batch the trainer computes for T_c, a worker spends T_cpu on a core
//! and T_io blocked. In the steady state a batch leaves the pipeline every
//! max(T_c, (T_cpu + T_io)/k, (T_c + T_cpu)/cores) seconds: the trainer
//! cannot go faster than its own step, k workers cannot build batches
//! faster than k at a time, and all the CPU work (the trainer's and the
//! workers') shares the machine's cores. The trainer's utilisation is
//! T_c over that period. With one cooperative worker in the trainer's
//! thread nothing overlaps: the period is T_c + T_cpu + T_io.

use serde::Serialize;

/// Per-batch times, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Costs {
    pub compute_s: f64,
    pub cpu_s: f64,
    pub io_s: f64,
}

/// What sets the pace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Bound {
    /// The training step: the pipeline keeps up.
    Compute,
    /// Too few workers for the data's cost.
    Workers,
    /// The cores: the workers' CPU work and the step compete for them.
    Cores,
    /// One worker in the trainer's thread: everything in turn.
    Serial,
}

impl Bound {
    pub fn key(self) -> &'static str {
        match self {
            Self::Compute => "compute",
            Self::Workers => "workers",
            Self::Cores => "cores",
            Self::Serial => "serial",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// Seconds between batches in the steady state.
    pub period_s: f64,
    /// T_c / period.
    pub utilisation: f64,
    pub bound: Bound,
}

impl Prediction {
    pub fn samples_per_s(&self, batch: usize) -> f64 {
        if self.period_s > 0.0 {
            batch as f64 / self.period_s
        } else {
            0.0
        }
    }
}

/// The steady state with `workers` workers on `cores` cores (`threads`
/// off: one worker in the trainer's thread).
pub fn predict(costs: Costs, workers: usize, cores: usize, threads: bool) -> Prediction {
    let (period_s, bound) = if threads {
        let k = workers.max(1) as f64;
        let candidates = [
            (costs.compute_s, Bound::Compute),
            ((costs.cpu_s + costs.io_s) / k, Bound::Workers),
            (
                (costs.compute_s + costs.cpu_s) / cores.max(1) as f64,
                Bound::Cores,
            ),
        ];
        candidates.into_iter().fold(
            (0.0, Bound::Compute),
            |best, c| if c.0 > best.0 { c } else { best },
        )
    } else {
        (costs.compute_s + costs.cpu_s + costs.io_s, Bound::Serial)
    };
    Prediction {
        period_s,
        utilisation: if period_s > 0.0 {
            costs.compute_s / period_s
        } else {
            1.0
        },
        bound,
    }
}

/// How far a measured throughput may run above the model's before it is
/// flagged: the model's period is at least the trainer's step, so it bounds
/// the rate, and a point well above it means the stage times fed to the model
/// were measured while the machine was busier than during that point.
pub const ABOVE_MODEL_TOLERANCE: f64 = 0.10;

/// Whether `measured` samples/s exceed the model's `predicted` by more than
/// [`ABOVE_MODEL_TOLERANCE`].
pub fn above_model(measured: f64, predicted: f64) -> bool {
    measured > predicted * (1.0 + ABOVE_MODEL_TOLERANCE)
}

/// The fewest workers (up to `max`) past which more add nothing: where the
/// workers stop being the bound; `None` if they still are at `max`.
pub fn knee(costs: Costs, cores: usize, max: usize) -> Option<usize> {
    (1..=max.max(1)).find(|&k| predict(costs, k, cores, true).bound != Bound::Workers)
}

/// An epoch of `samples` when each takes `data_s` to load (spread over
/// `workers`) and `compute_s` to train on: samples × max(compute, data/k).
pub fn epoch_seconds(samples: f64, data_s: f64, compute_s: f64, workers: usize) -> f64 {
    samples * compute_s.max(data_s / workers.max(1) as f64)
}
