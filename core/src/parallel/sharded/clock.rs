//! A sharded step on the virtual clock: the compute stream and the
//! collectives' stream, with the next layer's gather prefetched or not.

use serde::Serialize;

use super::{FsdpSettings, ShardError};
use crate::collective::{Algorithm, Op, Schedule, simulate};

/// What one stream of a worker does on the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Activity {
    Gather,
    Forward,
    Backward,
    Scatter,
}

impl crate::names::Named for Activity {
    fn name_key(&self) -> String {
        format!("fsdp.activity.{self:?}")
    }
}

impl Activity {
    pub const ALL: [Self; 4] = [Self::Gather, Self::Forward, Self::Backward, Self::Scatter];

    /// Whether it runs on the collectives' stream.
    pub fn communicates(self) -> bool {
        matches!(self, Self::Gather | Self::Scatter)
    }
}

/// One span of a step's timeline (every worker's is the same).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Span {
    pub activity: Activity,
    pub layer: usize,
    pub start_s: f64,
    pub end_s: f64,
}

/// The compute stream and the collectives' stream of one step.
struct Streams {
    spans: Vec<Span>,
    compute: f64,
    comm: f64,
}

impl Streams {
    /// `activity` on layer `l` for `seconds`, on its stream, no earlier than `at`.
    fn run(&mut self, activity: Activity, l: usize, at: f64, seconds: f64) -> f64 {
        let stream = if activity.communicates() {
            &mut self.comm
        } else {
            &mut self.compute
        };
        let start = at.max(*stream);
        *stream = start + seconds;
        self.spans.push(Span {
            activity,
            layer: l,
            start_s: start,
            end_s: *stream,
        });
        *stream
    }
}

/// One step on the virtual clock: each layer's forward 2·rows·in·out FLOPs
/// and backward twice that (once, for layer 0, whose input needs no
/// gradient) at the worker's rate; each collective the ring's time on the
/// link. Without prefetch a gather is issued when the compute before it is
/// done; with it, when the layer before starts.
pub(super) fn clock(
    s: &FsdpSettings,
    sizes: &[usize],
    prefetch: bool,
) -> Result<(Vec<Span>, f64), ShardError> {
    let rate = s.gflops * 1e9;
    let forward = |l: usize| 2.0 * (s.rows * sizes[l] * sizes[l + 1]) as f64 / rate;
    let comm = |op: Op, l: usize| {
        Schedule::new(Algorithm::Ring, op, s.workers, s.params(sizes, l))
            .map(|schedule| simulate(&schedule, 4, s.link).end_s)
            .map_err(|_| ShardError::WorkerFailed)
    };
    let mut streams = Streams {
        spans: Vec::new(),
        compute: 0.0,
        comm: 0.0,
    };
    let mut ready: std::collections::BTreeMap<usize, f64> = Default::default();
    let layers = s.layers;
    let order: Vec<(Activity, usize, Option<usize>)> = (0..layers)
        .map(|l| (Activity::Forward, l, (l + 1 < layers).then_some(l + 1)))
        .chain(
            (0..layers)
                .rev()
                .map(|l| (Activity::Backward, l, l.checked_sub(1))),
        )
        .collect();
    for (activity, l, next) in order {
        let gathered = match ready.remove(&l) {
            Some(end) => end,
            None => {
                let at = streams.compute;
                streams.run(Activity::Gather, l, at, comm(Op::AllGather, l)?)
            }
        };
        let start = streams.compute.max(gathered);
        if let Some(next) = next.filter(|_| prefetch) {
            let end = streams.run(Activity::Gather, next, start, comm(Op::AllGather, next)?);
            ready.insert(next, end);
        }
        let seconds = match activity {
            Activity::Backward if l > 0 => 2.0 * forward(l),
            _ => forward(l),
        };
        let done = streams.run(activity, l, start, seconds);
        if activity == Activity::Backward {
            streams.run(Activity::Scatter, l, done, comm(Op::ReduceScatter, l)?);
        }
    }
    let end = streams.compute.max(streams.comm);
    Ok((streams.spans, end))
}
