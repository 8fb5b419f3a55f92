//! The collectives as data: steps of messages, one builder per algorithm.
//!
//! Semantics, which `exec.rs` and `clock.rs` both follow: in a step every
//! message reads its sender's buffer as it was when the step began, and the
//! step's messages then land in the order listed (`Add`: receiver's value +
//! received value; `Copy`: the received value replaces the receiver's).

use std::ops::Range;

use serde::Serialize;

use super::{Algorithm, CollectiveError, MAX_ELEMENTS, MAX_WORKERS, MIN_WORKERS, Op};

/// What a received range does to the receiver's copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Combine {
    Add,
    Copy,
}

/// One message: `len` elements from `start`, sent `from` → `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Message {
    pub from: usize,
    pub to: usize,
    pub start: usize,
    pub len: usize,
    pub combine: Combine,
}

impl Message {
    pub fn range(&self) -> Range<usize> {
        self.start..self.start + self.len
    }
}

/// What a step is part of (the lesson names and colours steps by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum StepKind {
    ReduceScatter,
    AllGather,
    Reduce,
    Broadcast,
    /// Extra workers hand their buffers to a partner (N not a power of two).
    FoldIn,
    /// The partners hand the result back.
    FoldOut,
    /// Workers send to the parameter server.
    Push,
    /// The server sends the sum back.
    Pull,
}

impl StepKind {
    pub const ALL: [Self; 8] = [
        Self::ReduceScatter,
        Self::AllGather,
        Self::Reduce,
        Self::Broadcast,
        Self::FoldIn,
        Self::FoldOut,
        Self::Push,
        Self::Pull,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Self::ReduceScatter => "reduce_scatter",
            Self::AllGather => "all_gather",
            Self::Reduce => "reduce",
            Self::Broadcast => "broadcast",
            Self::FoldIn => "fold_in",
            Self::FoldOut => "fold_out",
            Self::Push => "push",
            Self::Pull => "pull",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    pub kind: StepKind,
    pub messages: Vec<Message>,
}

/// A whole collective.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Schedule {
    pub algorithm: Algorithm,
    pub op: Op,
    pub workers: usize,
    /// Workers, plus the server (the last node) for a parameter server.
    pub nodes: usize,
    pub elements: usize,
    pub steps: Vec<Step>,
}

/// Chunk `c` of `parts` over `elements`: `[c·E/parts, (c+1)·E/parts)`, so
/// chunks differ in length by at most one.
pub fn chunk_range(c: usize, parts: usize, elements: usize) -> Range<usize> {
    // E ≤ 2²⁶ and parts ≤ 16: the products fit easily.
    c * elements / parts..(c + 1) * elements / parts
}

impl Schedule {
    /// The schedule of `op` by `algorithm` over `workers` × `elements`.
    pub fn new(
        algorithm: Algorithm,
        op: Op,
        workers: usize,
        elements: usize,
    ) -> Result<Self, CollectiveError> {
        if !(MIN_WORKERS..=MAX_WORKERS).contains(&workers) {
            return Err(CollectiveError::Workers {
                workers: workers as u64,
                min: MIN_WORKERS as u64,
                max: MAX_WORKERS as u64,
            });
        }
        if !(1..=MAX_ELEMENTS).contains(&elements) {
            return Err(CollectiveError::Elements {
                elements: elements as u64,
                max: MAX_ELEMENTS as u64,
            });
        }
        if op != Op::AllReduce && algorithm != Algorithm::Ring {
            return Err(CollectiveError::OnlyRing {
                op: op.id().to_owned(),
            });
        }
        let mut b = Builder {
            elements,
            steps: Vec::new(),
        };
        let n = workers;
        match (algorithm, op) {
            (Algorithm::Ring, op) => {
                if op != Op::AllGather {
                    b.ring_reduce_scatter(n);
                }
                if op != Op::ReduceScatter {
                    b.ring_all_gather(n);
                }
            }
            (Algorithm::Tree, _) => b.tree(n),
            (Algorithm::HalvingDoubling, _) => b.halving_doubling(n),
            (Algorithm::ParameterServer, _) => b.parameter_server(n),
        }
        Ok(Self {
            algorithm,
            op,
            workers,
            nodes: if algorithm == Algorithm::ParameterServer {
                n + 1
            } else {
                n
            },
            elements,
            steps: b.steps,
        })
    }

    /// Elements each node has sent in the first `steps` steps.
    pub fn sent_in_first(&self, steps: usize) -> Vec<u64> {
        let mut sent = vec![0u64; self.nodes];
        for step in self.steps.iter().take(steps) {
            for m in &step.messages {
                sent[m.from] += m.len as u64;
            }
        }
        sent
    }

    /// Bytes and messages each node sends and receives, read off the
    /// messages (what [`super::run`] counts as it runs them).
    pub fn traffic(&self, element_bytes: u64) -> Vec<super::Traffic> {
        let mut traffic = vec![super::Traffic::default(); self.nodes];
        for (_, m) in self.messages() {
            let bytes = m.len as u64 * element_bytes;
            traffic[m.from].sent_bytes += bytes;
            traffic[m.from].sent_messages += 1;
            traffic[m.to].received_bytes += bytes;
            traffic[m.to].received_messages += 1;
        }
        traffic
    }

    /// Every message, in step order.
    pub fn messages(&self) -> impl Iterator<Item = (usize, &Message)> {
        self.steps
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.messages.iter().map(move |m| (i, m)))
    }
}

struct Builder {
    elements: usize,
    steps: Vec<Step>,
}

impl Builder {
    /// A step of `messages`, without the empty ones (a chunk of no
    /// elements, when E < N, is not sent).
    fn step(&mut self, kind: StepKind, messages: impl IntoIterator<Item = Message>) {
        let messages: Vec<Message> = messages.into_iter().filter(|m| m.len > 0).collect();
        if !messages.is_empty() {
            self.steps.push(Step { kind, messages });
        }
    }

    fn msg(from: usize, to: usize, range: Range<usize>, combine: Combine) -> Message {
        Message {
            from,
            to,
            start: range.start,
            len: range.len(),
            combine,
        }
    }

    /// N−1 steps; in step s worker i adds chunk (i−s−1) mod N into worker
    /// i+1. Chunk c starts at worker c+1 and ends, summed, on worker c.
    fn ring_reduce_scatter(&mut self, n: usize) {
        let e = self.elements;
        for s in 0..n - 1 {
            self.step(
                StepKind::ReduceScatter,
                (0..n).map(|i| {
                    let c = (i + 2 * n - s - 1) % n;
                    Self::msg(i, (i + 1) % n, chunk_range(c, n, e), Combine::Add)
                }),
            );
        }
    }

    /// N−1 steps; in step s worker i passes chunk (i−s) mod N on to i+1.
    fn ring_all_gather(&mut self, n: usize) {
        let e = self.elements;
        for s in 0..n - 1 {
            self.step(
                StepKind::AllGather,
                (0..n).map(|i| {
                    let c = (i + n - s) % n;
                    Self::msg(i, (i + 1) % n, chunk_range(c, n, e), Combine::Copy)
                }),
            );
        }
    }

    /// ⌈log₂N⌉ steps up (at distance d = 1, 2, 4, …, worker i with i mod 2d
    /// = d adds its whole buffer into i − d), then the same down.
    fn tree(&mut self, n: usize) {
        let all = 0..self.elements;
        let levels = ceil_log2(n);
        for k in 0..levels {
            let d = 1 << k;
            self.step(
                StepKind::Reduce,
                (0..n)
                    .filter(|i| i % (2 * d) == d)
                    .map(|i| Self::msg(i, i - d, all.clone(), Combine::Add)),
            );
        }
        for k in (0..levels).rev() {
            let d = 1 << k;
            self.step(
                StepKind::Broadcast,
                (0..n)
                    .filter(|i| i % (2 * d) == 0 && i + d < n)
                    .map(|i| Self::msg(i, i + d, all.clone(), Combine::Copy)),
            );
        }
    }

    /// With p the largest power of two ≤ N and r = N − p: workers 2j+1
    /// (j < r) first add their buffers into 2j; the p workers left (active
    /// rank a is worker 2a for a < r, else a + r) halve and double over p
    /// blocks; the partners then hand the sum back.
    fn halving_doubling(&mut self, n: usize) {
        let e = self.elements;
        let p = 1usize << (usize::BITS - 1 - n.leading_zeros());
        let r = n - p;
        let worker = |a: usize| if a < r { 2 * a } else { a + r };
        let blocks =
            |lo: usize, hi: usize| chunk_range(lo, p, e).start..chunk_range(hi - 1, p, e).end;
        self.step(
            StepKind::FoldIn,
            (0..r).map(|j| Self::msg(2 * j + 1, 2 * j, 0..e, Combine::Add)),
        );
        // Halving: at distance d = p/2, p/4, …, 1, a's window of 2d blocks
        // splits; a keeps the half holding block a and adds the other half
        // into its partner a ^ d.
        let mut d = p / 2;
        while d >= 1 {
            self.step(
                StepKind::ReduceScatter,
                (0..p).map(|a| {
                    let base = a & !(2 * d - 1);
                    let sent = if a & d == 0 {
                        blocks(base + d, base + 2 * d)
                    } else {
                        blocks(base, base + d)
                    };
                    Self::msg(worker(a), worker(a ^ d), sent, Combine::Add)
                }),
            );
            d /= 2;
        }
        // Doubling: at d = 1, 2, …, p/2, a sends the d blocks it holds.
        let mut d = 1;
        while d < p {
            self.step(
                StepKind::AllGather,
                (0..p).map(|a| {
                    let base = a & !(d - 1);
                    Self::msg(
                        worker(a),
                        worker(a ^ d),
                        blocks(base, base + d),
                        Combine::Copy,
                    )
                }),
            );
            d *= 2;
        }
        self.step(
            StepKind::FoldOut,
            (0..r).map(|j| Self::msg(2 * j, 2 * j + 1, 0..e, Combine::Copy)),
        );
    }

    /// The server is node N: the first push replaces its buffer, the rest
    /// add in worker order; then it sends the sum to every worker in turn.
    fn parameter_server(&mut self, n: usize) {
        let all = 0..self.elements;
        self.step(
            StepKind::Push,
            (0..n).map(|i| {
                let combine = if i == 0 { Combine::Copy } else { Combine::Add };
                Self::msg(i, n, all.clone(), combine)
            }),
        );
        self.step(
            StepKind::Pull,
            (0..n).map(|i| Self::msg(n, i, all.clone(), Combine::Copy)),
        );
    }
}

/// ⌈log₂ n⌉ for n ≥ 1.
pub(super) fn ceil_log2(n: usize) -> usize {
    (usize::BITS - (n.max(1) - 1).leading_zeros()) as usize
}
