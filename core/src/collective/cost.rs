//! The closed forms: what the books write for each algorithm's time, bytes
//! and steps under the α-β model, and the speedup of N workers. The tests
//! hold every one to the schedules' counted bytes and simulated time.

use serde::Serialize;

use super::Algorithm;
use super::clock::Link;
use super::schedule::{ceil_log2, chunk_range};

/// An all-reduce of S bytes over N workers takes
/// `latency_terms·α + bandwidth_terms·S/β` (exactly when the chunks are
/// equal: N divides the elements for the ring, p does for
/// halving-doubling), in `steps` rounds of messages.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Cost {
    pub latency_terms: f64,
    pub bandwidth_terms: f64,
    pub steps: usize,
}

impl Cost {
    pub fn time(&self, bytes: f64, link: Link) -> f64 {
        self.latency_terms * link.alpha_s + self.bandwidth_terms * bytes / link.bytes_per_s
    }
}

/// p = the largest power of two ≤ n, and r = n − p.
fn fold(n: usize) -> (usize, usize) {
    let p = 1usize << (usize::BITS - 1 - n.max(1).leading_zeros());
    (p, n - p)
}

impl Algorithm {
    /// The all-reduce's closed form for `n` workers.
    ///
    /// - ring: 2(N−1) steps, each α + (S/N)/β;
    /// - tree: ⌈log₂N⌉ steps up and as many down, each a whole S;
    /// - halving-doubling: 2·log₂p steps moving S/2, S/4, … S/p each way,
    ///   plus, when r = N − p > 0, a fold-in and a fold-out of S each;
    /// - parameter server: the server's port takes the N pushes of S one
    ///   after another, then sends N pulls of S: 2N·(α + S/β).
    pub fn cost(self, n: usize) -> Cost {
        let nf = n as f64;
        match self {
            Self::Ring => Cost {
                latency_terms: 2.0 * (nf - 1.0),
                bandwidth_terms: 2.0 * (nf - 1.0) / nf,
                steps: 2 * (n - 1),
            },
            Self::Tree => {
                let l = ceil_log2(n);
                Cost {
                    latency_terms: 2.0 * l as f64,
                    bandwidth_terms: 2.0 * l as f64,
                    steps: 2 * l,
                }
            }
            Self::HalvingDoubling => {
                let (p, r) = fold(n);
                let extra = if r > 0 { 2.0 } else { 0.0 };
                let steps = 2 * p.trailing_zeros() as usize + if r > 0 { 2 } else { 0 };
                Cost {
                    latency_terms: steps as f64,
                    bandwidth_terms: 2.0 * (p as f64 - 1.0) / p as f64 + extra,
                    steps,
                }
            }
            Self::ParameterServer => Cost {
                latency_terms: 2.0 * nf,
                bandwidth_terms: 2.0 * nf,
                steps: 2,
            },
        }
    }

    /// Elements worker `w` sends in an all-reduce of `elements` over `n`
    /// workers (`w == n`: the parameter server), from the algorithm's
    /// rule, not from a run.
    ///
    /// - ring: every chunk but its own in reduce-scatter and every chunk
    ///   but its successor's in all-gather: 2E − |c_w| − |c_{w+1}|, which is
    ///   2(N−1)/N·E when N divides E;
    /// - tree: E up (not the root), E to each child on the way down;
    /// - halving-doubling: an extra worker sends E once; an active one sends
    ///   half its window at each halving step and its window at each
    ///   doubling step (2(p−1)/p·E when p divides E), and E more if it has a
    ///   partner to hand the sum back to;
    /// - parameter server: E per worker, N·E from the server.
    pub fn elements_sent(self, n: usize, elements: usize, w: usize) -> u64 {
        let e = elements as u64;
        let len = |c: usize, parts: usize| chunk_range(c % parts, parts, elements).len() as u64;
        match self {
            Self::Ring => 2 * e - len(w, n) - len(w + 1, n),
            Self::Tree => {
                let up = if w == 0 { 0 } else { e };
                let children = (0..ceil_log2(n))
                    .filter(|k| w.is_multiple_of(2usize << k) && w + (1 << k) < n)
                    .count() as u64;
                up + children * e
            }
            Self::HalvingDoubling => {
                let (p, r) = fold(n);
                if w < 2 * r && w % 2 == 1 {
                    return e;
                }
                let a = if w < 2 * r { w / 2 } else { w - r };
                let blocks = |lo: usize, hi: usize| {
                    (chunk_range(hi - 1, p, elements).end - chunk_range(lo, p, elements).start)
                        as u64
                };
                let mut sent = 0;
                let mut d = p / 2;
                while d >= 1 {
                    let base = a & !(2 * d - 1);
                    sent += if a & d == 0 {
                        blocks(base + d, base + 2 * d)
                    } else {
                        blocks(base, base + d)
                    };
                    d /= 2;
                }
                let mut d = 1;
                while d < p {
                    let base = a & !(d - 1);
                    sent += blocks(base, base + d);
                    d *= 2;
                }
                sent + if a < r { e } else { 0 }
            }
            Self::ParameterServer => {
                if w == n {
                    n as u64 * e
                } else {
                    e
                }
            }
        }
    }

    /// Elements all nodes send together: 2(N−1)·E for the ring and the
    /// tree, 2(p−1)·E + 2r·E for halving-doubling, 2N·E for a server.
    pub fn total_elements_sent(self, n: usize, elements: usize) -> u64 {
        let (e, n64) = (elements as u64, n as u64);
        match self {
            Self::Ring | Self::Tree => 2 * (n64 - 1) * e,
            Self::HalvingDoubling => {
                let (p, r) = fold(n);
                2 * (p as u64 - 1) * e + 2 * r as u64 * e
            }
            Self::ParameterServer => 2 * n64 * e,
        }
    }
}

/// The message size in bytes at which `a` and `b` take equally long on
/// `link` for `n` workers, when there is one (below it the one with fewer
/// latency terms wins, above it the one with fewer bandwidth terms).
pub fn crossover_bytes(a: Algorithm, b: Algorithm, n: usize, link: Link) -> Option<f64> {
    let (ca, cb) = (a.cost(n), b.cost(n));
    let dl = (cb.latency_terms - ca.latency_terms) * link.alpha_s;
    let db = (ca.bandwidth_terms - cb.bandwidth_terms) / link.bytes_per_s;
    let s = dl / db;
    (db != 0.0 && s.is_finite() && s > 0.0).then_some(s)
}

/// Throughput of `n` synchronous workers relative to one, when each
/// computes for `compute_s` and then communicates for `comm_s` with
/// nothing overlapped: n·T_compute / (T_compute + T_comm).
pub fn speedup(n: usize, compute_s: f64, comm_s: f64) -> f64 {
    let step = compute_s + comm_s;
    if step > 0.0 {
        n as f64 * compute_s / step
    } else {
        n as f64
    }
}

/// A synchronous step: everyone waits for the slowest worker's compute,
/// then all-reduces.
pub fn sync_step(computes_s: &[f64], comm_s: f64) -> f64 {
    computes_s.iter().copied().fold(0.0, f64::max) + comm_s
}

/// A step whose gradients are all-reduced while backward still runs: at
/// best the communication hides behind backward entirely, so the step is
/// forward + max(backward, comm) — overlap hides at most min(backward,
/// comm), never the forward pass's share.
pub fn overlapped_step(forward_s: f64, backward_s: f64, comm_s: f64) -> f64 {
    forward_s + backward_s.max(comm_s)
}

/// The all-reduce's time for `n` workers by the closed form; one worker
/// sends nothing.
pub fn comm_time(algorithm: Algorithm, n: usize, bytes: f64, link: Link) -> f64 {
    if n <= 1 {
        0.0
    } else {
        algorithm.cost(n).time(bytes, link)
    }
}
