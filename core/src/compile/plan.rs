//! Memory planning ahead of time, as graph compilers do it (XLA's heap
//! simulator, TFLite's and TVM's static planners): every buffer of a step
//! gets an offset in one arena, and two buffers may share bytes only when
//! their lifetimes do not overlap. The lifetimes are those of the engine's
//! allocation trace of the step (each buffer from the point it is made to
//! the point it is freed); the algorithm is greedy by size with best fit:
//! buffers in order of decreasing size (ties: the earlier first use), each
//! at the start of the smallest gap that holds it among the buffers already
//! placed that are live at the same time, else past the last of them. No
//! alignment is added. A point of the trace is what is held after an op,
//! so a buffer freed at a point and one made there may share bytes, as if
//! the op wrote its output over its dying input — which an elementwise op
//! can do and a matmul cannot. The trace does not say which op made which
//! buffer, so the planner allows it for all, just as the engine's meter
//! counts the peak as the most held after any op.
//!
//! The arena lies between two bounds: the most bytes live at once
//! (max-live: no plan can do with less) and the sum of all buffers (no
//! reuse at all).

use serde::Serialize;

use crate::memory::trace::{Event, EventKind};

/// A buffer and its lifetime: live at the trace's points `first..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Buffer {
    pub id: u64,
    pub bytes: u64,
    pub first: u32,
    pub end: u32,
}

impl Buffer {
    /// Whether the two are live at some point together.
    pub fn overlaps(&self, other: &Self) -> bool {
        self.first < other.end && other.first < self.end
    }
}

/// The buffers of a trace of `points` points: each from its alloc to its
/// free (one never freed lives to the end).
pub fn lifetimes(events: &[Event], points: u32) -> Vec<Buffer> {
    let mut buffers: Vec<Buffer> = Vec::new();
    let mut open: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    for e in events {
        match e.kind {
            EventKind::Alloc => {
                open.insert(e.buffer, buffers.len());
                buffers.push(Buffer {
                    id: e.buffer,
                    bytes: e.bytes,
                    first: e.op,
                    end: points,
                });
            }
            EventKind::Free => {
                if let Some(i) = open.remove(&e.buffer) {
                    buffers[i].end = e.op;
                }
            }
        }
    }
    buffers
}

/// The most bytes live at any one point.
pub fn max_live(buffers: &[Buffer]) -> u64 {
    // +bytes where a buffer starts, −bytes where it ends; ends first at a
    // point, as a freed buffer is not held there.
    let mut edges: Vec<(u32, i8, u64)> = Vec::with_capacity(2 * buffers.len());
    for b in buffers.iter().filter(|b| b.first < b.end) {
        edges.push((b.first, 1, b.bytes));
        edges.push((b.end, 0, b.bytes));
    }
    edges.sort_unstable();
    let (mut live, mut most) = (0u64, 0u64);
    for (_, starts, bytes) in edges {
        if starts == 1 {
            live += bytes;
            most = most.max(live);
        } else {
            live -= bytes;
        }
    }
    most
}

/// A buffer and its place in the arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Placed {
    pub buffer: Buffer,
    pub offset: u64,
}

impl Placed {
    pub fn end(&self) -> u64 {
        self.offset + self.buffer.bytes
    }
}

/// A planned arena and its bounds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// Every buffer, in the order placed (largest first).
    pub placed: Vec<Placed>,
    pub arena: u64,
    pub max_live: u64,
    pub no_reuse: u64,
}

/// The placed buffers by the points they live at: a segment tree over the
/// points, each buffer listed at the O(log points) nodes its lifetime
/// covers whole (`here`) and at every node on the way to them (`below`), so
/// the buffers live beside a new one are found without a pass over all of
/// them (a step of the transformer has tens of thousands of buffers, some
/// live through the whole step).
struct LiveIndex {
    size: usize,
    here: Vec<Vec<u32>>,
    below: Vec<Vec<u32>>,
}

impl LiveIndex {
    fn new(points: usize) -> Self {
        let size = points.max(1).next_power_of_two();
        Self {
            size,
            here: vec![Vec::new(); 2 * size],
            below: vec![Vec::new(); 2 * size],
        }
    }

    /// Lists `id` as live at points `lo..hi`.
    fn insert(&mut self, id: u32, lo: usize, hi: usize) {
        self.insert_at(1, 0, self.size, id, lo, hi);
    }

    fn insert_at(&mut self, node: usize, from: usize, to: usize, id: u32, lo: usize, hi: usize) {
        if hi <= from || to <= lo {
            return;
        }
        self.below[node].push(id);
        if lo <= from && to <= hi {
            self.here[node].push(id);
            return;
        }
        let mid = from.midpoint(to);
        self.insert_at(2 * node, from, mid, id, lo, hi);
        self.insert_at(2 * node + 1, mid, to, id, lo, hi);
    }

    /// Every id live at some point of `lo..hi` (maybe more than once).
    fn overlapping(&self, lo: usize, hi: usize, out: &mut Vec<u32>) {
        self.query_at(1, 0, self.size, lo, hi, out);
    }

    fn query_at(
        &self,
        node: usize,
        from: usize,
        to: usize,
        lo: usize,
        hi: usize,
        out: &mut Vec<u32>,
    ) {
        if hi <= from || to <= lo {
            return;
        }
        if lo <= from && to <= hi {
            out.extend_from_slice(&self.below[node]);
            return;
        }
        out.extend_from_slice(&self.here[node]);
        let mid = from.midpoint(to);
        self.query_at(2 * node, from, mid, lo, hi, out);
        self.query_at(2 * node + 1, mid, to, lo, hi, out);
    }
}

/// Greedy by size, best fit (the module's header says how).
pub fn plan(buffers: &[Buffer]) -> Plan {
    let mut order: Vec<&Buffer> = buffers.iter().filter(|b| b.first < b.end).collect();
    order.sort_by_key(|b| (std::cmp::Reverse(b.bytes), b.first, b.id));
    let points = order.iter().map(|b| b.end).max().unwrap_or(0) as usize;
    let mut index = LiveIndex::new(points);
    let mut placed: Vec<Placed> = Vec::with_capacity(order.len());
    let mut ids: Vec<u32> = Vec::new();
    for b in order {
        ids.clear();
        index.overlapping(b.first as usize, b.end as usize, &mut ids);
        ids.sort_unstable();
        ids.dedup();
        let mut taken: Vec<(u64, u64)> = ids
            .iter()
            .map(|&i| {
                let p = &placed[i as usize];
                (p.offset, p.end())
            })
            .collect();
        taken.sort_unstable();
        let (mut cursor, mut best): (u64, Option<(u64, u64)>) = (0, None);
        for (start, end) in taken {
            if start > cursor {
                let gap = start - cursor;
                if gap >= b.bytes && best.is_none_or(|(_, g)| gap < g) {
                    best = Some((cursor, gap));
                }
            }
            cursor = cursor.max(end);
        }
        let offset = best.map_or(cursor, |(at, _)| at);
        index.insert(placed.len() as u32, b.first as usize, b.end as usize);
        placed.push(Placed { buffer: *b, offset });
    }
    Plan {
        arena: placed.iter().map(Placed::end).max().unwrap_or(0),
        max_live: max_live(buffers),
        no_reuse: buffers
            .iter()
            .filter(|b| b.first < b.end)
            .map(|b| b.bytes)
            .sum(),
        placed,
    }
}
