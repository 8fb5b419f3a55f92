//! The virtual clock: a schedule's messages timed on links under the α-β
//! model, as an event simulation.
//!
//! A message of m bytes occupies its sender's send port and its receiver's
//! receive port for α + m/β. It starts when (1) its sender has received
//! every message addressed to it in earlier steps (what it sends may be
//! built from them), (2) the sender's send port is free and (3) the
//! receiver's receive port is free. Messages are placed in schedule order,
//! so a port serves them first come, first served: the N pushes into a
//! parameter server queue one behind another. Nothing here reads a real
//! clock: the same schedule gives the same timeline everywhere.

use serde::Serialize;

use super::CollectiveError;
use super::schedule::{Schedule, StepKind};

/// Every link's latency α (seconds) and bandwidth β (bytes per second).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Link {
    pub alpha_s: f64,
    pub bytes_per_s: f64,
}

impl Link {
    /// A link from the units people quote: µs and GB/s (10⁹ bytes).
    pub fn new(alpha_us: f64, gb_per_s: f64) -> Result<Self, CollectiveError> {
        let ok = alpha_us.is_finite() && alpha_us >= 0.0 && gb_per_s.is_finite() && gb_per_s > 0.0;
        if !ok {
            return Err(CollectiveError::Link);
        }
        Ok(Self {
            alpha_s: alpha_us * 1e-6,
            bytes_per_s: gb_per_s * 1e9,
        })
    }

    /// α + bytes/β.
    pub fn message_time(&self, bytes: f64) -> f64 {
        self.alpha_s + bytes / self.bytes_per_s
    }
}

/// The links between the nodes: every one alike, or with one node's links
/// (every message into or out of it) slower — the worker on a shared or
/// degraded link.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Network {
    pub link: Link,
    pub slow: Option<SlowLinks>,
}

/// Node `node`'s links are `link` instead.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SlowLinks {
    pub node: usize,
    pub link: Link,
}

impl Network {
    pub fn uniform(link: Link) -> Self {
        Self { link, slow: None }
    }

    /// `node`'s links `factor` times slower in bandwidth (same latency).
    pub fn with_slow_node(link: Link, node: usize, factor: f64) -> Result<Self, CollectiveError> {
        if !(factor.is_finite() && factor >= 1.0) {
            return Err(CollectiveError::SlowLink);
        }
        let slow = Link {
            alpha_s: link.alpha_s,
            bytes_per_s: link.bytes_per_s / factor,
        };
        Ok(Self {
            link,
            slow: Some(SlowLinks { node, link: slow }),
        })
    }

    /// The link a message from `from` to `to` travels on.
    pub fn between(&self, from: usize, to: usize) -> Link {
        match self.slow {
            Some(s) if s.node == from || s.node == to => s.link,
            _ => self.link,
        }
    }
}

/// One message on the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Transfer {
    pub from: usize,
    pub to: usize,
    pub bytes: u64,
    pub step: usize,
    pub kind: StepKind,
    pub start_s: f64,
    pub end_s: f64,
}

/// Every message's start and end; `end_s` is when the last one landed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Timeline {
    pub transfers: Vec<Transfer>,
    pub end_s: f64,
}

/// Times `schedule` with elements of `element_bytes` bytes, every link
/// `link`.
pub fn simulate(schedule: &Schedule, element_bytes: u64, link: Link) -> Timeline {
    simulate_on(schedule, element_bytes, &Network::uniform(link))
}

/// Times `schedule` on `network`, each message on the link between its
/// two nodes.
pub fn simulate_on(schedule: &Schedule, element_bytes: u64, network: &Network) -> Timeline {
    let nodes = schedule.nodes;
    let mut send_free = vec![0.0f64; nodes];
    let mut recv_free = vec![0.0f64; nodes];
    // When everything node w was sent in the steps before the current one
    // had arrived; `arrived` collects the current step's arrivals.
    let mut ready = vec![0.0f64; nodes];
    let mut arrived = vec![0.0f64; nodes];
    let mut transfers = Vec::new();
    for (index, step) in schedule.steps.iter().enumerate() {
        for m in &step.messages {
            let bytes = m.len as u64 * element_bytes;
            let start = ready[m.from].max(send_free[m.from]).max(recv_free[m.to]);
            let end = start + network.between(m.from, m.to).message_time(bytes as f64);
            send_free[m.from] = end;
            recv_free[m.to] = end;
            arrived[m.to] = arrived[m.to].max(end);
            transfers.push(Transfer {
                from: m.from,
                to: m.to,
                bytes,
                step: index,
                kind: step.kind,
                start_s: start,
                end_s: end,
            });
        }
        for (r, a) in ready.iter_mut().zip(&arrived) {
            *r = r.max(*a);
        }
    }
    let end_s = transfers.iter().map(|t| t.end_s).fold(0.0, f64::max);
    Timeline { transfers, end_s }
}
