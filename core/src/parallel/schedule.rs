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
//! With equal stages and free transfers the bubble (idle ÷ total time on a
//! stage) is (P − 1)/(M + P − 1) for GPipe and 1F1B, and
//! (P − 1)/(v·M + P − 1) interleaved ([`bubble_formula`]).

use serde::Serialize;

/// What a stage runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Pass {
    Forward,
    Backward,
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Kind {
    GPipe,
    OneFOneB,
    /// 1F1B over `v` chunks per stage.
    Interleaved {
        v: usize,
    },
}

impl Kind {
    /// Chunks per stage.
    pub fn chunks(self) -> usize {
        match self {
            Self::Interleaved { v } => v,
            _ => 1,
        }
    }
}

/// Why a pipeline cannot be scheduled or run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PipelineError {
    /// No stages, micro-batches or chunks.
    Empty,
    /// Interleaving needs the micro-batches in whole groups of P.
    NotGroups { micro: usize, stages: usize },
    /// A schedule whose stages wait on one another forever.
    Deadlock { stage: usize },
}

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
    pub backward: f64,
    pub transfer: f64,
}

/// A schedule timed: each stage's operations with their start and end.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timeline {
    pub stages: Vec<Vec<(Op, f64, f64)>>,
    /// When the last operation ends.
    pub makespan: f64,
}

/// Times `schedule` (per stage, from [`schedule`]; `chunks` per stage).
pub fn run(schedule: &[Vec<Op>], chunks: usize, times: Times) -> Result<Timeline, PipelineError> {
    let stages = schedule.len();
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
                };
                let ready = match input {
                    None => Some(0.0),
                    Some((pass, q)) => ended.get(&(pass, op.micro, q)).map(|t| {
                        t + if stage_of(q) == s {
                            0.0
                        } else {
                            times.transfer
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
                let end = start
                    + match op.pass {
                        Pass::Forward => times.forward,
                        Pass::Backward => times.backward,
                    };
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
            return Err(PipelineError::Deadlock { stage });
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
    /// (forwards run whose backward has not).
    pub fn peak_in_flight(&self, s: usize) -> usize {
        let mut held: usize = 0;
        let mut peak = 0;
        for (op, _, _) in &self.stages[s] {
            match op.pass {
                Pass::Forward => {
                    held += 1;
                    peak = peak.max(held);
                }
                Pass::Backward => held = held.saturating_sub(1),
            }
        }
        peak
    }
}

/// The closed-form bubble for equal stages and free transfers.
pub fn bubble_formula(kind: Kind, stages: usize, micro: usize) -> f64 {
    let p = stages as f64;
    let m = (micro * kind.chunks()) as f64;
    (p - 1.0) / (m + p - 1.0)
}

/// Checks interleaving's condition (M in whole groups of P).
pub fn check(kind: Kind, stages: usize, micro: usize) -> Result<(), PipelineError> {
    if stages == 0 || micro == 0 || kind.chunks() == 0 {
        return Err(PipelineError::Empty);
    }
    if matches!(kind, Kind::Interleaved { .. }) && !micro.is_multiple_of(stages) {
        return Err(PipelineError::NotGroups { micro, stages });
    }
    Ok(())
}
