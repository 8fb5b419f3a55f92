//! Collectives written out: how N workers sum their gradients over links,
//! message by message, with every byte counted.
//!
//! A collective is first a [`Schedule`] — steps of [`Message`]s, each a
//! contiguous range of the buffer sent from one node to another and either
//! added into the receiver's copy or copied over it (`schedule.rs`, one
//! builder per [`Algorithm`]). The same schedule is then
//! - **run** on real buffers (`exec.rs`): the sum every worker ends with, the
//!   bytes and messages each node sent and received, and, for the lesson's
//!   step-by-step view, what each worker holds after every step and whose
//!   values went into it;
//! - **timed** on a virtual clock (`clock.rs`): an event simulation of the
//!   links under the α-β model (a message of m bytes takes α + m/β), where a
//!   node sends one message at a time and receives one at a time, so
//!   messages queue (a parameter server's incast) and the timeline is the
//!   same on every machine.
//!
//! `train.rs` trains N replicas of the engine's MLP synchronously with
//! them (threads natively, one after another on the web, the same bits).
//!
//! `asynchronous.rs` trains them asynchronously against a parameter
//! server instead, each gradient as stale as the virtual clock makes it.
//!
//! `overlap.rs` times one step whose gradients are all-reduced in
//! buckets while backward still runs, as PyTorch's DDP does.
//!
//! `cost.rs` holds the closed forms the books give (time = a·α + b·S/β for
//! each algorithm, bytes per worker, steps, the crossover size, the
//! speedup of N workers); the tests hold them to the simulation and to the
//! counted bytes.

mod asynchronous;
mod clock;
mod compare;
mod compress;
mod compress_compare;
mod cost;
mod exec;
mod overlap;
mod schedule;
#[cfg(test)]
mod tests;
mod train;
#[cfg(test)]
mod train_tests;

pub use asynchronous::{AsyncRun, AsyncUpdate, train_async};
pub use clock::{Link, Network, SlowLinks, Timeline, Transfer, simulate, simulate_on};
pub use compare::{Row, compare, row};
pub use compress::{Compression, Packed, compressed_sum};
pub use compress_compare::{COMPARED, CompressionRow, compare_compressions};
pub use cost::{Cost, comm_time, crossover_bytes, overlapped_step, speedup, sync_step};
pub use exec::{
    Element, Outcome, Trace, Traffic, check_result, reference_sum, run, run_traced,
    seeded_gradients,
};
pub use overlap::{Bucket, LayerGrad, OverlapPlan, OverlapStep, equal_layers, overlap_step};
pub use schedule::{Combine, Message, Schedule, Step, StepKind, chunk_range};
pub use train::{DpRun, DpSettings, DpStep, DpTrainer, Straggler, train_single, train_sync};

use serde::{Deserialize, Serialize};

/// The fewest and most workers a collective here takes.
pub const MIN_WORKERS: usize = 2;
pub const MAX_WORKERS: usize = 16;
/// The most elements a collective here takes (4 GiB of f32 would not be a
/// lesson; 2²⁶ keeps every count exact in f64 and a run within memory).
pub const MAX_ELEMENTS: usize = 1 << 26;

/// How far halving-doubling's sum may be from an f64 sum, relative to the
/// sum of the magnitudes (its order of addition depends on where an element
/// lies; the other algorithms are checked bit for bit).
pub const RELATIVE_TOLERANCE: f64 = 1e-6;

/// The most values (all nodes' buffers together) a run on real buffers
/// holds: 2²⁷ f32 values, 512 MiB. Schedules and timings take any size.
pub const MAX_RUN_VALUES: usize = 1 << 27;

/// Whether `workers` (+1 for a server) buffers of `elements` fit a run.
pub fn check_runnable(nodes: usize, elements: usize) -> Result<(), CollectiveError> {
    let values = nodes.saturating_mul(elements);
    if values > MAX_RUN_VALUES {
        return Err(CollectiveError::TooBig {
            values: values as u64,
            max: MAX_RUN_VALUES as u64,
        });
    }
    Ok(())
}

/// How the workers' buffers are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Algorithm {
    /// Reduce-scatter then all-gather around a ring, in N chunks.
    Ring,
    /// Binomial-tree reduce to worker 0, then broadcast down the same tree.
    Tree,
    /// Recursive halving (reduce-scatter) then recursive doubling
    /// (all-gather), with a fold-in of the extra workers when N is not a
    /// power of two (Rabenseifner's algorithm).
    HalvingDoubling,
    /// Every worker pushes to a dedicated server, which sums and sends the
    /// sum back.
    ParameterServer,
}

impl Algorithm {
    pub const ALL: [Self; 4] = [
        Self::Ring,
        Self::Tree,
        Self::HalvingDoubling,
        Self::ParameterServer,
    ];

    /// The CLI's name and the catalogs' key.
    pub fn id(self) -> &'static str {
        match self {
            Self::Ring => "ring",
            Self::Tree => "tree",
            Self::HalvingDoubling => "hd",
            Self::ParameterServer => "ps",
        }
    }

    /// Whether the result is a sum in an order fixed for every element
    /// that [`reference_sum`] repeats (so it is checked bit for bit);
    /// halving-doubling adds in an order that depends on where an element
    /// lies, so it is checked within a relative 1e-6 of an f64 sum.
    pub fn fixed_order(self) -> bool {
        !matches!(self, Self::HalvingDoubling)
    }
}

/// What a collective leaves on the workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    /// Every worker holds the whole sum.
    AllReduce,
    /// Worker i holds the sum of chunk i only.
    ReduceScatter,
    /// Worker i starts with chunk i; every worker ends with every chunk.
    AllGather,
}

impl Op {
    pub const ALL: [Self; 3] = [Self::AllReduce, Self::ReduceScatter, Self::AllGather];

    pub fn id(self) -> &'static str {
        match self {
            Self::AllReduce => "all-reduce",
            Self::ReduceScatter => "reduce-scatter",
            Self::AllGather => "all-gather",
        }
    }
}

crate::catalog_error! {
    /// Why a collective cannot be built.
    pub enum CollectiveError {
        /// The worker count is outside 2..=16.
        Workers { workers: u64, min: u64, max: u64 } = "collective.workers",
        /// The element count is outside 1..=2²⁶.
        Elements { elements: u64, max: u64 } = "collective.elements",
        /// Reduce-scatter and all-gather alone are built for the ring only.
        OnlyRing { op: String } = "collective.only_ring",
        /// The buffers handed in are not one per worker, each `elements` long.
        Buffers { workers: u64, elements: u64 } = "collective.buffers",
        /// A link's latency or bandwidth is negative, zero (bandwidth) or not finite.
        Link = "collective.link",
        /// A slow link's factor is below 1 or not finite.
        SlowLink = "collective.slow_link",
        /// An overlap plan with no layer, a negative or non-finite time,
        /// or an empty bucket size.
        Overlap = "collective.overlap",
        /// The global batch (workers × shard) is empty or larger than the data.
        Batch { global: u64, rows: u64 } = "collective.batch",
        /// More steps than a run here takes.
        Steps { steps: u64, max: u64 } = "collective.steps",
        /// A compute rate that is not a positive number, or a straggler
        /// that is no worker or is faster than the rest.
        Rate = "collective.rate",
        /// The model cannot be built or counted.
        Model { reason: String } = "collective.model",
        /// A worker thread stopped without a gradient.
        WorkerFailed = "collective.worker_failed",
        /// Running on real buffers would hold more values than a run here takes.
        TooBig { values: u64, max: u64 } = "collective.too_big",
    }
}
