//! The engine's one allocation trace: every buffer a training step holds,
//! allocated and freed, with its size, its role and the point of the step
//! (an op index: the end of forward, each node of backward, the optimizer
//! step) — whatever runs the step: the MLP's trainer, the CNN, the
//! character model, a worker or a stage on its own thread.
//!
//! The trace is made from what is held at each point: a [`Held`] lists its
//! buffers, each under a stable [`BufKey`]; [`Trace::record`] compares it
//! with the point before and writes an alloc for each buffer that appeared
//! (or changed size) and a free for each that went. Replaying the events
//! gives back what was held at every point — the [`super::measure::Meter`]'s
//! figures are computed that way, so they are the trace's.

use std::collections::BTreeMap;

use serde::Serialize;

use super::measure::{Held, Phase};
use super::precision::Component;

/// Which buffer: stable from one point of a step to the next, so the same
/// buffer is recognised while it lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum BufKey {
    /// A graph's node (`graph` tells graphs apart), and which of its
    /// buffers (its value, what it keeps besides, its gradient), in the
    /// order the graph lists them.
    Node {
        graph: u64,
        node: u32,
        part: u8,
    },
    /// A parameter tensor the trainer holds (the model's), by index.
    Param(u32),
    /// An fp32 master copy of a parameter tensor, by index.
    Master(u32),
    /// The gradients the optimizer reads (the accumulation buffer).
    Gradients,
    /// An optimizer state tensor, by index.
    State(u32),
    /// Decoded optimizer state, while the optimizer works a block at a time.
    StateScratch,
    /// The batch's labels the trainer keeps.
    Labels,
    /// A checkpointed pass's kept tensors: activations, parameter values
    /// and collected gradients, by position.
    Kept(u32),
    Value(u32),
    Grad(u32),
    /// Gradient contributions backward has computed and not yet passed on.
    InFlight,
}

/// One buffer held at a point: its key, role, and bytes (those of its format,
/// and the emulation's extra bytes on top).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Live {
    pub key: BufKey,
    pub role: Component,
    pub format: u64,
    pub overhead: u64,
}

/// An allocation or a free.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EventKind {
    Alloc,
    Free,
}

/// One event of the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    /// The point of the step (an index into [`Trace::points`]).
    pub op: u32,
    pub kind: EventKind,
    /// The buffer's id, unique in the trace (a buffer freed and made again
    /// gets a new one).
    pub buffer: u64,
    /// Real bytes: the format's and the emulation's.
    pub bytes: u64,
    /// The format's bytes alone.
    pub format_bytes: u64,
    pub role: Component,
}

/// The trace of a step (or several).
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub events: Vec<Event>,
    /// The phase of each point, in order.
    pub points: Vec<Phase>,
    /// What is live after the last point: key (and its occurrence at that
    /// point) → (id, the buffer).
    live: BTreeMap<(BufKey, u32), (u64, Live)>,
    next_id: u64,
}

impl Trace {
    /// Records the point `held` describes: an alloc for every buffer new
    /// since the last point (or resized), a free for every one gone.
    pub fn record(&mut self, phase: Phase, held: &Held) {
        let op = self.points.len() as u32;
        self.points.push(phase);
        let mut now: BTreeMap<(BufKey, u32), Live> = BTreeMap::new();
        for live in held.buffers() {
            let mut occurrence = 0;
            while now.contains_key(&(live.key, occurrence)) {
                occurrence += 1;
            }
            now.insert((live.key, occurrence), *live);
        }
        let event = |kind, buffer, live: &Live| Event {
            op,
            kind,
            buffer,
            bytes: live.format + live.overhead,
            format_bytes: live.format,
            role: live.role,
        };
        let gone: Vec<(BufKey, u32)> = self
            .live
            .iter()
            .filter(|(key, (_, old))| now.get(key) != Some(old))
            .map(|(key, _)| *key)
            .collect();
        for key in gone {
            if let Some((id, old)) = self.live.remove(&key) {
                self.events.push(event(EventKind::Free, id, &old));
            }
        }
        for (key, live) in now {
            if !self.live.contains_key(&key) {
                let id = self.next_id;
                self.next_id += 1;
                self.events.push(event(EventKind::Alloc, id, &live));
                self.live.insert(key, (id, live));
            }
        }
    }

    /// What was held at each point, from the events alone: (phase, bytes of
    /// the formats and of the emulation, by role).
    pub fn replay(&self) -> Vec<(Phase, Held)> {
        let mut live: BTreeMap<u64, Event> = BTreeMap::new();
        let mut events = self.events.iter().peekable();
        self.points
            .iter()
            .enumerate()
            .map(|(op, phase)| {
                while let Some(e) = events.next_if(|e| e.op as usize == op) {
                    match e.kind {
                        EventKind::Alloc => {
                            live.insert(e.buffer, *e);
                        }
                        EventKind::Free => {
                            live.remove(&e.buffer);
                        }
                    }
                }
                let mut held = Held::default();
                for e in live.values() {
                    held.add_bytes(e.role, e.format_bytes, e.bytes - e.format_bytes);
                }
                (*phase, held)
            })
            .collect()
    }

    /// The most bytes live at once.
    pub fn peak(&self) -> u64 {
        self.replay()
            .iter()
            .map(|(_, held)| held.total())
            .max()
            .unwrap_or(0)
    }
}
