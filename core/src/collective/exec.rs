//! A schedule run on real buffers: the result, the bytes and messages each
//! node moved, and (traced) what every worker held after every step.

use serde::Serialize;

use super::schedule::{Combine, Schedule, chunk_range};
use super::{CollectiveError, Op};

/// What a collective sums: f32 or f64 gradients.
pub trait Element: Copy + Default + PartialEq + std::fmt::Debug + Send + Sync + 'static {
    fn add(self, other: Self) -> Self;
    fn to_f64(self) -> f64;
}

impl Element for f32 {
    fn add(self, other: Self) -> Self {
        self + other
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Element for f64 {
    fn add(self, other: Self) -> Self {
        self + other
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// Seeded stand-ins for gradients: `workers` buffers of `elements` values
/// uniform in [−1, 1).
pub fn seeded_gradients(workers: usize, elements: usize, seed: u64) -> Vec<Vec<f32>> {
    use rand::{RngExt as _, SeedableRng as _};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..workers)
        .map(|_| {
            (0..elements)
                .map(|_| rng.random_range(-1.0f32..1.0))
                .collect()
        })
        .collect()
}

/// Bytes and messages one node sent and received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Traffic {
    pub sent_bytes: u64,
    pub received_bytes: u64,
    pub sent_messages: u64,
    pub received_messages: u64,
}

/// A run's counts: per node (the server last, for a parameter server).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub traffic: Vec<Traffic>,
    pub steps: usize,
}

impl Outcome {
    /// Bytes sent by all nodes together.
    pub fn total_sent(&self) -> u64 {
        self.traffic.iter().map(|t| t.sent_bytes).sum()
    }
}

/// What every node held after each step (index 0: before the first), and
/// whose inputs went into each element (bit w: worker w's value).
#[derive(Clone, Debug, PartialEq)]
pub struct Trace<T> {
    pub values: Vec<Vec<Vec<T>>>,
    pub contributors: Vec<Vec<Vec<u32>>>,
}

/// Runs `schedule` over `buffers` (one per node: a parameter server's is
/// the last, its contents ignored), leaving each worker with its result.
pub fn run<T: Element>(
    schedule: &Schedule,
    buffers: &mut [Vec<T>],
) -> Result<Outcome, CollectiveError> {
    execute(schedule, buffers, None)
}

/// As [`run`], also returning every step's state (for small buffers: it
/// keeps nodes × elements × (steps + 1) values).
pub fn run_traced<T: Element>(
    schedule: &Schedule,
    buffers: &mut [Vec<T>],
) -> Result<(Outcome, Trace<T>), CollectiveError> {
    let mut trace = Trace {
        values: Vec::new(),
        contributors: Vec::new(),
    };
    let outcome = execute(schedule, buffers, Some(&mut trace))?;
    Ok((outcome, trace))
}

fn execute<T: Element>(
    schedule: &Schedule,
    buffers: &mut [Vec<T>],
    mut trace: Option<&mut Trace<T>>,
) -> Result<Outcome, CollectiveError> {
    if buffers.len() != schedule.nodes || buffers.iter().any(|b| b.len() != schedule.elements) {
        return Err(CollectiveError::Buffers {
            workers: schedule.nodes as u64,
            elements: schedule.elements as u64,
        });
    }
    let bytes = std::mem::size_of::<T>() as u64;
    let mut traffic = vec![Traffic::default(); schedule.nodes];
    // Whose values each element holds (traced runs only): worker w's own
    // elements start as {w} (for an all-gather only its own chunk counts
    // as its input).
    let tracing = trace.is_some();
    let mut masks: Vec<Vec<u32>> = if tracing {
        (0..schedule.nodes)
            .map(|w| {
                (0..schedule.elements)
                    .map(|i| {
                        let own = w < schedule.workers
                            && (schedule.op != Op::AllGather
                                || chunk_range(w, schedule.workers, schedule.elements)
                                    .contains(&i));
                        if own { 1 << w } else { 0 }
                    })
                    .collect()
            })
            .collect()
    } else {
        Vec::new()
    };
    if let Some(t) = trace.as_deref_mut() {
        t.values.push(buffers.to_vec());
        t.contributors.push(masks.clone());
    }
    for step in &schedule.steps {
        // Every message reads its sender as the step began.
        let sent: Vec<(Vec<T>, Vec<u32>)> = step
            .messages
            .iter()
            .map(|m| {
                let values = buffers[m.from][m.range()].to_vec();
                let from_masks = if tracing {
                    masks[m.from][m.range()].to_vec()
                } else {
                    Vec::new()
                };
                (values, from_masks)
            })
            .collect();
        for (m, (values, from_masks)) in step.messages.iter().zip(sent) {
            let len = m.len as u64;
            traffic[m.from].sent_bytes += len * bytes;
            traffic[m.from].sent_messages += 1;
            traffic[m.to].received_bytes += len * bytes;
            traffic[m.to].received_messages += 1;
            let dst = &mut buffers[m.to][m.range()];
            match m.combine {
                Combine::Add => {
                    for (d, v) in dst.iter_mut().zip(&values) {
                        *d = d.add(*v);
                    }
                }
                Combine::Copy => dst.copy_from_slice(&values),
            }
            if tracing {
                let dst_masks = &mut masks[m.to][m.range()];
                match m.combine {
                    Combine::Add => {
                        for (d, v) in dst_masks.iter_mut().zip(&from_masks) {
                            *d |= *v;
                        }
                    }
                    Combine::Copy => dst_masks.copy_from_slice(&from_masks),
                }
            }
        }
        if let Some(t) = trace.as_deref_mut() {
            t.values.push(buffers.to_vec());
            t.contributors.push(masks.clone());
        }
    }
    Ok(Outcome {
        traffic,
        steps: schedule.steps.len(),
    })
}

/// Element `i` of the workers' inputs summed in the order `schedule`'s
/// algorithm adds them, written independently of the schedule: around the
/// ring from the worker after the chunk's owner; the binomial tree's
/// pairwise order; the server's worker order. `None` for halving-doubling,
/// whose order is not one rule per element (it is held to an f64 sum).
pub fn reference_sum<T: Element>(schedule: &Schedule, inputs: &[Vec<T>], i: usize) -> Option<T> {
    use super::Algorithm::{HalvingDoubling, ParameterServer, Ring, Tree};
    let n = schedule.workers;
    match schedule.algorithm {
        Ring => {
            let c = (0..n).find(|&c| chunk_range(c, n, schedule.elements).contains(&i))?;
            let mut acc = inputs[(c + 1) % n][i];
            for k in 2..=n {
                acc = acc.add(inputs[(c + k) % n][i]);
            }
            Some(acc)
        }
        Tree => Some(binomial(inputs, i, 0, n)),
        ParameterServer => {
            let mut acc = inputs[0][i];
            for input in &inputs[1..n] {
                acc = acc.add(input[i]);
            }
            Some(acc)
        }
        HalvingDoubling => None,
    }
}

/// Workers lo..lo+n summed as the binomial tree does: the first p (the
/// largest power of two below n) and the rest, each the same way.
fn binomial<T: Element>(inputs: &[Vec<T>], i: usize, lo: usize, n: usize) -> T {
    if n == 1 {
        return inputs[lo][i];
    }
    let p = 1usize << (usize::BITS - 1 - (n - 1).leading_zeros());
    binomial(inputs, i, lo, p).add(binomial(inputs, i, lo + p, n - p))
}

/// Checks a finished collective against its inputs. All-reduce: every
/// worker holds the same bits, and they are [`reference_sum`]'s bit for bit
/// where the algorithm fixes the order, or within [`super::RELATIVE_TOLERANCE`] of an f64 sum
/// (relative to the sum of the magnitudes) where it does not.
/// Reduce-scatter: worker i's chunk i is the reference sum. All-gather:
/// every worker holds chunk c of worker c, for every c. `Err(i)`: the first
/// element that fails.
pub fn check_result<T: Element>(
    schedule: &Schedule,
    inputs: &[Vec<T>],
    outputs: &[Vec<T>],
) -> Result<(), usize> {
    let (n, e) = (schedule.workers, schedule.elements);
    let bits = |x: T| x.to_f64().to_bits();
    let owner = |i: usize| {
        (0..n)
            .find(|&c| chunk_range(c, n, e).contains(&i))
            .unwrap_or(0)
    };
    let summed = |i: usize, got: T| match reference_sum(schedule, inputs, i) {
        Some(want) => bits(want) == bits(got),
        None => {
            let exact: f64 = inputs[..n].iter().map(|x| x[i].to_f64()).sum();
            let scale: f64 = inputs[..n].iter().map(|x| x[i].to_f64().abs()).sum();
            (got.to_f64() - exact).abs() <= super::RELATIVE_TOLERANCE * scale
        }
    };
    for i in 0..e {
        let ok = match schedule.op {
            Op::AllReduce => {
                (1..n).all(|w| bits(outputs[w][i]) == bits(outputs[0][i]))
                    && summed(i, outputs[0][i])
            }
            Op::ReduceScatter => summed(i, outputs[owner(i)][i]),
            Op::AllGather => (0..n).all(|w| bits(outputs[w][i]) == bits(inputs[owner(i)][i])),
        };
        if !ok {
            return Err(i);
        }
    }
    Ok(())
}
