//! Pipeline schedules written out: P stages (workers), M micro-batches,
//! each stage holding `v` chunks of the model (interleaving; v = 1 for
//! GPipe and 1F1B). Chunk `c` of stage `s` is position `c·P + s` of the
//! pipeline, as Megatron-LM assigns them. A schedule is, per stage, the
//! order in which it runs its forwards and backwards; [`run`] times it: a
//! stage runs its operations in that order, each as soon as the stage is
//! free and its inputs have arrived (a forward needs the previous
//! position's forward of the same micro-batch, a backward the next
//! position's backward, the last position's backward its own forward),
//! with `transfer` seconds between positions on different stages.
//!
//! - **GPipe** (Huang et al. 2019): every forward, then every backward.
//! - **1F1B** (PipeDream-Flush, Narayanan et al. 2021): stage s runs
//!   min(P − 1 − s, M) forwards to warm up, then one forward and one
//!   backward in turn, then the backwards left — at most P micro-batches'
//!   activations held at once, against GPipe's M.
//! - **Interleaved 1F1B** (Narayanan et al. 2021, §2.2): micro-batches in
//!   groups of P through each chunk in turn; warm-up (P − s − 1)·2 +
//!   (v − 1)·P chunk-forwards, as Megatron-LM's
//!   `forward_backward_pipelining_with_interleaving` does; needs M
//!   divisible by P.
//!
//! - **ZB-H1** (Qi et al., ICLR 2024): 1F1B with each backward split into
//!   B (the input gradient, which the previous stage waits for) and W (the
//!   weight gradient, which nobody waits for). Stage s runs 1F1B's order
//!   with B in place of the backward and holds back s of its W's: the W of
//!   micro-batch m runs after the B of micro-batch m + s, the last s at the
//!   end, so the later stages (which have no warm-up to wait in) end
//!   their B's sooner and the earlier ones fill their cool-down with W's.
//!   A micro-batch's activations stay until its W: stage s holds 1F1B's
//!   P − s and s delayed, P on every stage, 1F1B's peak.
//!
//! With equal stages and free transfers the bubble (idle ÷ total time on a
//! stage) is (P − 1)/(M + P − 1) for GPipe and 1F1B, and
//! (P − 1)/(v·M + P − 1) interleaved ([`bubble_formula`]); ZB-H1's idle
//! time is (P − 1)(T_F + T_B − T_W) against 1F1B's (P − 1)(T_F + T_B + T_W)
//! while T_W ≤ T_F, T_W ≤ T_B and M ≥ P (otherwise the W's do not fit the
//! gaps).

use serde::{Deserialize, Serialize};

use crate::names::Named;

/// What a stage runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Pass {
    Forward,
    /// The whole backward, or in ZB-H1 its input-gradient part B.
    Backward,
    /// ZB-H1's weight-gradient part W.
    Weight,
}

/// One operation of a stage: a pass of one micro-batch through one of its
/// chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Op {
    pub pass: Pass,
    pub micro: usize,
    pub chunk: usize,
}

/// The schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    GPipe,
    OneFOneB,
    /// 1F1B over `v` chunks per stage.
    Interleaved {
        v: usize,
    },
    /// 1F1B with the backward split into B and W, the W's delayed.
    ZeroBubble,
}

impl Kind {
    /// The schedules by name (interleaved with 2 chunks; the CLI sets v).
    pub const ALL: [Self; 4] = [
        Self::GPipe,
        Self::OneFOneB,
        Self::Interleaved { v: 2 },
        Self::ZeroBubble,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Self::GPipe => "gpipe",
            Self::OneFOneB => "1f1b",
            Self::Interleaved { .. } => "interleaved",
            Self::ZeroBubble => "zb-h1",
        }
    }

    /// The schedule with `v` chunks per stage where it takes them.
    pub fn with_chunks(self, v: usize) -> Self {
        match self {
            Self::Interleaved { .. } => Self::Interleaved { v },
            other => other,
        }
    }

    /// Whether the backward runs as two operations, B and W.
    pub fn splits_backward(self) -> bool {
        self == Self::ZeroBubble
    }

    /// Chunks per stage.
    pub fn chunks(self) -> usize {
        match self {
            Self::Interleaved { v } => v,
            _ => 1,
        }
    }
}

impl Named for Kind {
    fn name_key(&self) -> String {
        format!("pp.schedule.{}", self.key())
    }
}

impl Named for Pass {
    fn name_key(&self) -> String {
        format!("pp.pass.{self:?}")
    }
}

impl Pass {
    pub const ALL: [Self; 3] = [Self::Forward, Self::Backward, Self::Weight];

    /// Its name in `kind`'s timeline: a split backward is the input
    /// gradient B alone.
    pub fn name_in(self, kind: Kind, lang: crate::text::Lang) -> String {
        if self == Self::Backward && kind.splits_backward() {
            crate::names::catalog()
                .get(lang, "pp.pass.Backward.split")
                .to_owned()
        } else {
            self.name(lang)
        }
    }
}

crate::catalog_error! {
    /// Why a pipeline cannot be scheduled or run.
    pub enum PipelineError {
        /// No stages, micro-batches or chunks.
        Empty = "parallel.empty",
        /// More than a schedule here takes.
        TooLarge { stages: u64, micro: u64, chunks: u64 } = "parallel.too_large",
        /// Interleaving needs the micro-batches in whole groups of P.
        NotGroups { micro: u64, stages: u64 } = "parallel.not_groups",
        /// A time that is negative or not a number (a pass must take some),
        /// or a weight-gradient part larger than the backward.
        Times = "parallel.times",
        /// A schedule whose stages wait on one another forever.
        Deadlock { stage: u64 } = "parallel.deadlock",
        /// Fewer layers than positions to put them on.
        Layers { layers: u64, positions: u64 } = "parallel.layers",
        /// A model or a run on real data past what a run here takes.
        Model { micro: u64, rows: u64, width: u64, layers: u64 } = "parallel.model",
        /// A stage's thread stopped without its results.
        WorkerFailed = "parallel.worker_failed",
    }
}

/// The most stages, micro-batches and chunks per stage a schedule takes.
pub const MAX_STAGES: usize = 64;
pub const MAX_MICRO: usize = 1024;
pub const MAX_CHUNKS: usize = 8;

/// The schedule `kind` for `stages` stages and `micro` micro-batches: per
/// stage, its operations in order.
pub fn schedule(kind: Kind, stages: usize, micro: usize) -> Result<Vec<Vec<Op>>, PipelineError> {
    check(kind, stages, micro)?;
    let op = |pass, micro, chunk| Op { pass, micro, chunk };
    Ok((0..stages)
        .map(|s| match kind {
            Kind::GPipe => (0..micro)
                .map(|m| op(Pass::Forward, m, 0))
                .chain((0..micro).map(|m| op(Pass::Backward, m, 0)))
                .collect(),
            Kind::OneFOneB => {
                let warmup = (stages - 1 - s).min(micro);
                let forwards = (0..micro).map(|m| op(Pass::Forward, m, 0));
                let backwards = (0..micro).map(|m| op(Pass::Backward, m, 0));
                interleave(
                    &forwards.collect::<Vec<_>>(),
                    &backwards.collect::<Vec<_>>(),
                    warmup,
                )
            }
            Kind::Interleaved { v } => {
                let total = micro * v;
                let group = stages * v;
                // The k-th chunk-forward (and chunk-backward) of a stage.
                let at = |k: usize, pass| {
                    let chunk = (k % group) / stages;
                    let chunk = if pass == Pass::Forward {
                        chunk
                    } else {
                        v - 1 - chunk
                    };
                    op(pass, (k / group) * stages + k % stages, chunk)
                };
                let warmup = ((stages - s - 1) * 2 + (v - 1) * stages).min(total);
                let forwards = (0..total).map(|k| at(k, Pass::Forward));
                let backwards = (0..total).map(|k| at(k, Pass::Backward));
                interleave(
                    &forwards.collect::<Vec<_>>(),
                    &backwards.collect::<Vec<_>>(),
                    warmup,
                )
            }
            Kind::ZeroBubble => {
                let warmup = (stages - 1 - s).min(micro);
                let forwards: Vec<Op> = (0..micro).map(|m| op(Pass::Forward, m, 0)).collect();
                let backwards: Vec<Op> = (0..micro).map(|m| op(Pass::Backward, m, 0)).collect();
                let delay = s;
                let mut out = Vec::with_capacity(3 * micro);
                let mut weights = 0;
                for o in interleave(&forwards, &backwards, warmup) {
                    out.push(o);
                    if o.pass == Pass::Backward && o.micro >= delay {
                        out.push(op(Pass::Weight, weights, 0));
                        weights += 1;
                    }
                }
                out.extend((weights..micro).map(|m| op(Pass::Weight, m, 0)));
                out
            }
        })
        .collect())
}

/// `warmup` forwards, then one forward and one backward in turn, then the
/// backwards left.
fn interleave(forwards: &[Op], backwards: &[Op], warmup: usize) -> Vec<Op> {
    let mut out: Vec<Op> = forwards[..warmup].to_vec();
    let steady = forwards.len() - warmup;
    for k in 0..steady {
        out.push(forwards[warmup + k]);
        out.push(backwards[k]);
    }
    out.extend_from_slice(&backwards[steady..]);
    out
}

/// Seconds per chunk-operation and per transfer between stages.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Times {
    pub forward: f64,
    /// The whole backward (B + W).
    pub backward: f64,
    /// Its weight-gradient part W (run on its own by ZB-H1 only).
    pub weight: f64,
    pub transfer: f64,
}

impl Times {
    /// How long `pass` takes in `kind`: a backward is B + W unless the
    /// schedule splits it.
    pub fn of(&self, kind: Kind, pass: Pass) -> f64 {
        match pass {
            Pass::Forward => self.forward,
            Pass::Backward if kind.splits_backward() => self.backward - self.weight,
            Pass::Backward => self.backward,
            Pass::Weight => self.weight,
        }
    }

    /// Every time finite and not negative, some work per micro-batch, and W
    /// a part of the backward.
    pub fn valid(&self) -> bool {
        let ok = |t: f64| t.is_finite() && t >= 0.0;
        ok(self.forward)
            && ok(self.backward)
            && ok(self.weight)
            && ok(self.transfer)
            && self.weight <= self.backward
            && self.forward + self.backward > 0.0
    }
}

/// A schedule timed: each stage's operations with their start and end.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timeline {
    pub stages: Vec<Vec<(Op, f64, f64)>>,
    /// When the last operation ends.
    pub makespan: f64,
}

/// Times `schedule` (per stage, from [`schedule`] for `kind`) with the same
/// `times` per chunk-operation everywhere.
pub fn run(schedule: &[Vec<Op>], kind: Kind, times: Times) -> Result<Timeline, PipelineError> {
    run_positions(schedule, kind, &vec![times; schedule.len() * kind.chunks()])
}

/// [`run`] with each position's own times (one per position `chunk·P + s`
/// of the pipeline; a transfer takes its sender's).
pub fn run_positions(
    schedule: &[Vec<Op>],
    kind: Kind,
    times: &[Times],
) -> Result<Timeline, PipelineError> {
    let chunks = kind.chunks();
    let stages = schedule.len();
    if times.len() != stages * chunks || !times.iter().all(Times::valid) {
        return Err(PipelineError::Times);
    }
    let positions = stages * chunks;
    let position = |s: usize, chunk: usize| chunk * stages + s;
    let stage_of = |p: usize| p % stages;
    // When each (pass, micro-batch, position) ended.
    let mut ended: std::collections::HashMap<(Pass, usize, usize), f64> = Default::default();
    let mut next = vec![0; stages];
    let mut free = vec![0.0f64; stages];
    let mut out: Vec<Vec<(Op, f64, f64)>> = vec![Vec::new(); stages];
    loop {
        let mut progress = false;
        for s in 0..stages {
            while let Some(op) = schedule[s].get(next[s]).copied() {
                let p = position(s, op.chunk);
                // The input this operation waits for, and where it comes from.
                let input = match op.pass {
                    Pass::Forward => p.checked_sub(1).map(|q| (Pass::Forward, q)),
                    Pass::Backward if p + 1 < positions => Some((Pass::Backward, p + 1)),
                    Pass::Backward => Some((Pass::Forward, p)),
                    // W needs its own B (run earlier on this stage).
                    Pass::Weight => Some((Pass::Backward, p)),
                };
                let ready = match input {
                    None => Some(0.0),
                    Some((pass, q)) => ended.get(&(pass, op.micro, q)).map(|t| {
                        t + if stage_of(q) == s {
                            0.0
                        } else {
                            times[q].transfer
                        }
                    }),
                };
                // A backward also needs its own forward (always earlier on
                // this stage in a valid schedule).
                let own =
                    op.pass == Pass::Backward && !ended.contains_key(&(Pass::Forward, op.micro, p));
                let Some(ready) = ready.filter(|_| !own) else {
                    break;
                };
                let start = free[s].max(ready);
                let end = start + times[p].of(kind, op.pass);
                ended.insert((op.pass, op.micro, p), end);
                free[s] = end;
                out[s].push((op, start, end));
                next[s] += 1;
                progress = true;
            }
        }
        if (0..stages).all(|s| next[s] == schedule[s].len()) {
            break;
        }
        if !progress {
            let stage = (0..stages)
                .find(|s| next[*s] < schedule[*s].len())
                .unwrap_or(0);
            return Err(PipelineError::Deadlock {
                stage: stage as u64,
            });
        }
    }
    let makespan = free.iter().copied().fold(0.0, f64::max);
    Ok(Timeline {
        stages: out,
        makespan,
    })
}

impl Timeline {
    /// Stage `s`'s idle time ÷ the makespan.
    pub fn bubble(&self, s: usize) -> f64 {
        let busy: f64 = self.stages[s].iter().map(|(_, a, b)| b - a).sum();
        if self.makespan > 0.0 {
            1.0 - busy / self.makespan
        } else {
            0.0
        }
    }

    /// The most chunk-forwards stage `s` holds activations for at once
    /// (forwards run whose backward has not; when the backward is split,
    /// whose W has not).
    pub fn peak_in_flight(&self, s: usize) -> usize {
        let split = self.stages[s]
            .iter()
            .any(|(op, _, _)| op.pass == Pass::Weight);
        let release = if split { Pass::Weight } else { Pass::Backward };
        let mut held: usize = 0;
        let mut peak = 0;
        for (op, _, _) in &self.stages[s] {
            if op.pass == Pass::Forward {
                held += 1;
                peak = peak.max(held);
            } else if op.pass == release {
                held = held.saturating_sub(1);
            }
        }
        peak
    }
}

/// The closed-form bubble for equal stages and free transfers: idle time
/// (P − 1)·T over a stage's busy time M·T plus it, where T is a micro-batch's
/// forward and backward through a stage (1/v of them per chunk when
/// interleaved) and ZB-H1 leaves only (P − 1)(T_F + T_B − T_W) idle.
pub fn bubble_formula(kind: Kind, stages: usize, micro: usize, times: Times) -> f64 {
    let p = stages as f64;
    let per_micro = times.forward + times.backward;
    let busy = micro as f64 * per_micro;
    let idle = (p - 1.0)
        * match kind {
            Kind::ZeroBubble => times.forward + times.backward - 2.0 * times.weight,
            _ => per_micro / kind.chunks() as f64,
        };
    if busy + idle > 0.0 {
        idle / (busy + idle)
    } else {
        0.0
    }
}

/// Checks the sizes (none empty, none past the limits) and interleaving's
/// condition (M in whole groups of P).
pub fn check(kind: Kind, stages: usize, micro: usize) -> Result<(), PipelineError> {
    let chunks = kind.chunks();
    if stages == 0 || micro == 0 || chunks == 0 {
        return Err(PipelineError::Empty);
    }
    if stages > MAX_STAGES || micro > MAX_MICRO || chunks > MAX_CHUNKS {
        return Err(PipelineError::TooLarge {
            stages: MAX_STAGES as u64,
            micro: MAX_MICRO as u64,
            chunks: MAX_CHUNKS as u64,
        });
    }
    if matches!(kind, Kind::Interleaved { .. }) && !micro.is_multiple_of(stages) {
        return Err(PipelineError::NotGroups {
            micro: micro as u64,
            stages: stages as u64,
        });
    }
    Ok(())
}

/// One stage of a timed schedule.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageRow {
    /// Seconds running operations.
    pub busy: f64,
    pub bubble: f64,
    /// Chunk-forwards whose activations it holds at most.
    pub peak_in_flight: usize,
}

/// A schedule run: what the lesson's page and `dlsys-lab parallel pp`
/// show.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PipelineRun {
    pub kind: Kind,
    pub stages: usize,
    pub micro: usize,
    /// Seconds per micro-batch and whole stage (a chunk's operation takes
    /// 1/v of them), and per transfer.
    pub times: Times,
    pub timeline: Timeline,
    pub rows: Vec<StageRow>,
    /// The closed-form bubble (equal stages, free transfers).
    pub formula: f64,
}

/// Schedules `kind` over `stages` and `micro` and times it; `times` per
/// micro-batch and whole stage.
pub fn pipeline(
    kind: Kind,
    stages: usize,
    micro: usize,
    times: Times,
) -> Result<PipelineRun, PipelineError> {
    if !times.valid() {
        return Err(PipelineError::Times);
    }
    let v = kind.chunks() as f64;
    let per_chunk = Times {
        forward: times.forward / v,
        backward: times.backward / v,
        weight: times.weight / v,
        transfer: times.transfer,
    };
    check(kind, stages, micro)?;
    pipeline_positions(
        kind,
        stages,
        micro,
        &vec![per_chunk; stages * kind.chunks()],
        times,
    )
}

/// [`pipeline`] with each position's own times (`chunk·P + s`, per
/// chunk-operation); `summary` is what is reported per micro-batch and
/// whole stage, and what the closed form is computed from.
pub fn pipeline_positions(
    kind: Kind,
    stages: usize,
    micro: usize,
    per_position: &[Times],
    summary: Times,
) -> Result<PipelineRun, PipelineError> {
    let plan = schedule(kind, stages, micro)?;
    let timeline = run_positions(&plan, kind, per_position)?;
    let rows = (0..stages)
        .map(|s| StageRow {
            busy: timeline.stages[s].iter().map(|(_, a, b)| b - a).sum(),
            bubble: timeline.bubble(s),
            peak_in_flight: timeline.peak_in_flight(s),
        })
        .collect();
    Ok(PipelineRun {
        kind,
        stages,
        micro,
        times: summary,
        timeline,
        rows,
        formula: bubble_formula(kind, stages, micro, summary),
    })
}
