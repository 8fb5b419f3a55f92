//! Byte accounting of a real training step: the trainer reports, at each
//! point of the step (the end of forward, every node of backward, the
//! optimizer step), every buffer it and its graph hold, by role; the
//! [`Meter`] keeps the most each role held and the peak of the total.
//!
//! Buffers are f32 (labels `usize`). A value a policy stores in a 2-byte
//! format counts 2 bytes to its role and 2 to the emulation overhead: the
//! totals are what this process really holds, the split says what a real
//! fp16 buffer would.
//!
//! Not counted: the data set itself (it stays in memory across steps), and
//! the scratch one op makes and frees inside itself: a broadcast copy, a
//! contribution added straight into a pending sum, and the f32 copies of
//! packed operands an op decodes to read (a real fp16 kernel reads its
//! operands as they are; one f32 tensor beside its 2-byte original, while
//! the op runs). So the totals are what is held between ops.

use serde::Serialize;

use super::MemoryError;
use super::mlp::MlpShape;
use super::precision::{Component, Components};
use super::trace::{BufKey, Event, Live, Trace};
use crate::autograd::{Buffer, Graph, Stored, Var};
use crate::mixed::Policy;
use crate::nn::{Dataset, Status, TrainConfig, Trainer};

/// A phase of a training step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Phase {
    Forward,
    Backward,
    Optimizer,
}

impl Phase {
    pub const ALL: [Self; 3] = [Self::Forward, Self::Backward, Self::Optimizer];

    pub fn key(self) -> &'static str {
        match self {
            Self::Forward => "forward",
            Self::Backward => "backward",
            Self::Optimizer => "optimizer",
        }
    }
}

/// Bytes per element of each kind of tensor under a policy (what a real
/// buffer in its format would take).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Formats {
    /// Op outputs, the weights the forward pass reads, gradients in flight.
    pub compute: u64,
    /// Whether the graph packs values in the compute format (2 bytes each,
    /// no overhead): fp16 and bf16 (see [`crate::autograd::Half`]).
    pub packs: bool,
    /// The buffer those gradients are summed into, which the optimizer reads.
    pub accumulation: u64,
    pub state: u64,
    /// Whether the optimizer keeps its state packed (fp16 or bf16 state).
    pub state_packs: bool,
}

/// Storage bytes of one element of the format `name`: 1 up to 8 bits, 2 up
/// to 16, else 4 (tf32's 19 bits live in a 32-bit word).
pub fn storage_bytes(name: &str) -> u64 {
    match crate::float::Format::by_name(name) {
        Ok(f) if 1 + f.exp_bits + f.man_bits <= 8 => 1,
        Ok(f) if 1 + f.exp_bits + f.man_bits <= 16 => 2,
        _ => 4,
    }
}

impl Formats {
    /// Everything in f32 (the CNN and the character model train so).
    pub const F32: Self = Self {
        compute: 4,
        packs: false,
        accumulation: 4,
        state: 4,
        state_packs: false,
    };

    pub fn of(policy: &Policy) -> Self {
        Self {
            compute: storage_bytes(&policy.compute),
            packs: crate::autograd::Half::by_name(&policy.compute).is_some(),
            accumulation: storage_bytes(&policy.accumulation),
            state: storage_bytes(&policy.optimizer_state),
            state_packs: crate::autograd::Half::by_name(&policy.optimizer_state).is_some(),
        }
    }

    /// `elements` values in the compute format as the graph keeps them:
    /// (bytes in the format, the emulation's extra bytes).
    pub(crate) fn kept(&self, elements: u64) -> (u64, u64) {
        if self.packs {
            (elements.saturating_mul(2), 0)
        } else {
            f32s(elements, self.compute)
        }
    }
}

/// `elements` values kept in f32 buffers, each `format_bytes` in its
/// format: (bytes in the format, the emulation's extra bytes). The estimate
/// and the measurement count by this one rule.
pub(crate) fn f32s(elements: u64, format_bytes: u64) -> (u64, u64) {
    (
        elements.saturating_mul(format_bytes),
        elements.saturating_mul(4u64.saturating_sub(format_bytes)),
    )
}

/// What is held at one moment: every buffer (the allocation trace's
/// unit), and their bytes in the format and the emulation's extra bytes,
/// by role.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Held {
    pub format: Components,
    pub overhead: Components,
    buffers: Vec<Live>,
}

impl Held {
    /// Buffer `key`: `elements` f32 values of `role`, each `format_bytes` in its format.
    pub fn f32s(&mut self, key: BufKey, role: Component, elements: usize, format_bytes: u64) {
        let (bytes, overhead) = f32s(elements as u64, format_bytes);
        self.buffer(key, role, bytes, overhead);
    }

    /// Buffer `key`, a tensor as the engine keeps it: packed, 2 bytes an
    /// element; else f32 values each `format_bytes` in their format.
    pub fn stored(&mut self, key: BufKey, role: Component, t: &Stored<f32>, format_bytes: u64) {
        if t.is_packed() {
            self.exact(key, role, t.numel(), 2);
        } else {
            self.f32s(key, role, t.numel(), format_bytes);
        }
    }

    /// Buffer `key`: `elements` values stored exactly as they are (`bytes` each).
    pub fn exact(&mut self, key: BufKey, role: Component, elements: usize, bytes: u64) {
        self.buffer(key, role, elements as u64 * bytes, 0);
    }

    /// Buffer `key` of `role`: `format` bytes and `overhead` bytes on top.
    pub fn buffer(&mut self, key: BufKey, role: Component, format: u64, overhead: u64) {
        self.add_bytes(role, format, overhead);
        if format + overhead == 0 {
            return;
        }
        self.buffers.push(Live {
            key,
            role,
            format,
            overhead,
        });
    }

    /// Bytes of `role` without a buffer of their own (a replayed point).
    pub(crate) fn add_bytes(&mut self, role: Component, format: u64, overhead: u64) {
        self.format.add(role, format);
        self.overhead.add(role, overhead);
    }

    /// The buffers held.
    pub fn buffers(&self) -> &[Live] {
        &self.buffers
    }

    pub fn total(&self) -> u64 {
        self.format.total() + self.overhead.total()
    }

    /// As reported: each role's format bytes, the gradients in flight whole
    /// (they are not estimated, so their overhead is not split off), and the
    /// rest of the overhead as its own component.
    pub fn as_reported(&self) -> Components {
        let mut c = self.format;
        let mut overhead = self.overhead;
        c.add(Component::Temporaries, overhead.get(Component::Temporaries));
        overhead.set(Component::Temporaries, 0);
        c.set(Component::EmulationOverhead, overhead.total());
        c
    }

    pub fn plus(mut self, other: &Self) -> Self {
        for c in Component::ALL {
            self.format.add(c, other.format.get(c));
            self.overhead.add(c, other.overhead.get(c));
        }
        self.buffers.extend_from_slice(&other.buffers);
        self
    }

    /// What a graph holds. `inner` lists leaves that are a checkpointed
    /// segment's input (an activation, whose gradient is in flight), not
    /// parameters. `reads` is the format of the weights the graph reads.
    pub fn graph(g: &Graph<f32>, f: &Formats, reads: u64, inner: &[Var]) -> Self {
        let mut held = Self::default();
        let usize_bytes = std::mem::size_of::<usize>() as u64;
        let mut last = (usize::MAX, 0u8);
        g.buffers(|v, kind, n, packed| {
            // Each of a node's buffers, in the order the graph lists them.
            last = if last.0 == v.0 {
                (v.0, last.1 + 1)
            } else {
                (v.0, 0)
            };
            let key = BufKey::Node {
                graph: g.serial(),
                node: v.0 as u32,
                part: last.1,
            };
            let (role, bytes) = match kind {
                Buffer::Parameter if inner.contains(&v) => (Component::Activations, f.compute),
                Buffer::Parameter => (Component::Parameters, reads),
                Buffer::Input => (Component::Inputs, f.compute),
                Buffer::Saved => (Component::Activations, f.compute),
                Buffer::SavedProbabilities => (Component::Activations, 4),
                Buffer::Labels => {
                    held.exact(key, Component::Inputs, n, usize_bytes);
                    return;
                }
                Buffer::ParameterGrad if !inner.contains(&v) => (Component::Gradients, f.compute),
                Buffer::ParameterGrad | Buffer::InnerGrad => (Component::Temporaries, f.compute),
            };
            if packed {
                held.exact(key, role, n, 2);
            } else {
                held.f32s(key, role, n, bytes);
            }
        });
        held
    }
}

/// What a model holds outside its step's graph, in f32: its weights and
/// its optimizer's state.
pub fn held_by(
    params: &[&crate::autograd::Tensor<f32>],
    optimizer: &crate::nn::Optimizer<f32>,
) -> Held {
    let mut held = Held::default();
    for (i, p) in params.iter().enumerate() {
        held.f32s(BufKey::Param(i as u32), Component::Parameters, p.numel(), 4);
    }
    for (i, s) in optimizer.state_tensors().enumerate() {
        held.stored(BufKey::State(i as u32), Component::OptimizerState, s, 4);
    }
    held
}

/// Meters a step of any f32 graph once its forward pass is recorded: the
/// graph and `outside` after forward, then after every node of backward
/// from `loss` (with the gradients in flight). The caller records the
/// optimizer step.
pub fn metered_backward(g: &mut Graph<f32>, loss: Var, outside: &Held, meter: &mut Meter) {
    let f = Formats::F32;
    meter.record(Phase::Forward, &Held::graph(g, &f, 4, &[]).plus(outside));
    let seed = crate::autograd::Tensor::full(g.shape(loss), 1.0);
    g.backward_from(loss, seed, &mut |g, in_flight| {
        let mut held = Held::graph(g, &f, 4, &[]).plus(outside);
        held.f32s(BufKey::InFlight, Component::Temporaries, in_flight, 4);
        meter.record(Phase::Backward, &held);
    });
}

/// Records what a step holds at each point, as the allocation trace.
#[derive(Clone, Debug, Default)]
pub struct Meter {
    pub trace: Trace,
}

impl Meter {
    pub fn record(&mut self, phase: Phase, held: &Held) {
        self.trace.record(phase, held);
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.trace.points.is_empty()
    }
}

/// One phase's peak: the total and its components.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhaseBytes {
    pub phase: Phase,
    pub peak: u64,
    pub components: Components,
}

/// A measured training step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measured {
    /// The most each role held during the step; `emulation_overhead` is the
    /// sum of each role's most overhead, except the gradients in flight,
    /// which count whole under `temporaries` (they are not estimated).
    pub components: Components,
    /// The largest total the step held (real bytes, overhead included).
    pub peak: u64,
    pub phases: Vec<PhaseBytes>,
    /// (phase, total bytes) at every point of the step.
    pub timeline: Vec<(Phase, u64)>,
    /// Median wall time of a step on this machine, over `timed_steps`, seconds.
    pub step_seconds: f64,
    pub timed_steps: usize,
    /// The step's allocation trace (what the figures were computed from).
    #[serde(skip)]
    pub events: Vec<Event>,
}

impl Measured {
    /// The figures of a metered step, computed from its allocation trace:
    /// the most each role held, each phase's peak and what made it up, the
    /// total at every point.
    pub fn from_meter(meter: Meter, step_seconds: f64, timed_steps: usize) -> Self {
        let points = meter.trace.replay();
        let mut most = Held::default();
        let mut peaks: Vec<(Phase, u64, &Held)> = Vec::new();
        for (phase, held) in &points {
            most.format = most.format.max(&held.format);
            most.overhead = most.overhead.max(&held.overhead);
            let total = held.total();
            match peaks.iter_mut().find(|(p, _, _)| p == phase) {
                Some(peak) if peak.1 >= total => {}
                Some(peak) => *peak = (*phase, total, held),
                None => peaks.push((*phase, total, held)),
            }
        }
        let phases = Phase::ALL
            .into_iter()
            .filter_map(|phase| {
                let (_, peak, held) = peaks.iter().find(|(p, _, _)| *p == phase)?;
                Some(PhaseBytes {
                    phase,
                    peak: *peak,
                    components: held.as_reported(),
                })
            })
            .collect();
        Self {
            components: most.as_reported(),
            peak: peaks.iter().map(|p| p.1).max().unwrap_or(0),
            phases,
            timeline: points.iter().map(|(p, held)| (*p, held.total())).collect(),
            step_seconds,
            timed_steps,
            events: meter.trace.events,
        }
    }
}

/// Steps timed (after the metered one) for the median step time.
const TIMED_STEPS: usize = 5;

/// Warm-up steps allowed before the optimizer has stepped once (under
/// dynamic loss scaling the first steps overflow and are skipped).
const MAX_WARM_UP: usize = 40;

/// The most layers a measurement takes: it walks the whole graph after
/// every node of backward, so its cost grows with the square of the depth.
pub const MAX_MEASURED_LAYERS: usize = 64;

/// The most bytes a measurement may hold (the step, its four batches of
/// data and its gradients in flight, as estimated).
pub const MAX_MEASURED_BYTES: u64 = 2 << 30;

/// The most FLOPs a measurement may compute, counting every warm-up step
/// it may need (about two minutes on a 2-core machine).
pub const MAX_MEASURED_FLOPS: u64 = 2_000_000_000_000;

/// Steps a measurement trains at most: warm-up, the metered one, the timed.
pub const MAX_MEASURED_STEPS: u64 = (MAX_WARM_UP + 1 + TIMED_STEPS) as u64;

/// Whether [`measure_step`] takes `shape`: not too deep, not too large, not
/// too long (the estimate says how much it would hold and compute).
pub fn check_measurable(shape: &MlpShape) -> Result<(), MemoryError> {
    let estimate = super::estimate_mlp(shape)?;
    let layers = shape.sizes.len() - 1;
    if layers > MAX_MEASURED_LAYERS {
        return Err(MemoryError::TooDeepToMeasure {
            layers: layers as u64,
            max: MAX_MEASURED_LAYERS as u64,
        });
    }
    // The step with its overhead, the data (four batches of inputs in f32
    // and their labels), and gradients in flight (at most one layer's
    // input, output and weight gradient at once: bounded by the weights
    // and twice the activations).
    let step = estimate.components.total();
    let data = 16 * shape.batch as u64 * shape.sizes[0] as u64;
    let in_flight = 2 * (step - estimate.components.get(Component::OptimizerState));
    let bytes = step.saturating_add(data).saturating_add(in_flight);
    let flops = estimate.flops().saturating_mul(MAX_MEASURED_STEPS);
    if bytes > MAX_MEASURED_BYTES || flops > MAX_MEASURED_FLOPS {
        return Err(MemoryError::TooLargeToMeasure {
            bytes: super::show_bytes(bytes),
            limit: format!(
                "{} / {}",
                super::show_bytes(MAX_MEASURED_BYTES),
                super::show_flops(MAX_MEASURED_FLOPS)
            ),
        });
    }
    Ok(())
}

/// Trains `shape`'s MLP on seeded random data until the optimizer has
/// stepped once (so its state exists, as in any later step), then one
/// metered step, then times [`TIMED_STEPS`] more (unmetered) and reports
/// the median.
pub fn measure_step(shape: &MlpShape) -> Result<Measured, MemoryError> {
    check_measurable(shape)?;
    let config = TrainConfig {
        hidden: shape.sizes[1..shape.sizes.len() - 1].to_vec(),
        optimizer: shape.optimizer,
        lr: 1e-3,
        batch_size: shape.batch,
        // Four batches, cycled: the data stays small whatever the steps.
        epochs: 10_000,
        policy: shape.precision.policy(),
        checkpoint: shape.checkpoint,
        ..TrainConfig::default()
    };
    let train = random_data(
        shape.sizes[0],
        shape.sizes[shape.sizes.len() - 1],
        shape.batch * 4,
    );
    let test = Dataset {
        x: Vec::new(),
        y: Vec::new(),
        ..train.clone()
    };
    let mut trainer = Trainer::new(config, train, test)?;
    for _ in 0..MAX_WARM_UP {
        trainer.step();
        if trainer.optimizer.steps > 0 {
            break;
        }
    }
    if trainer.optimizer.steps == 0 {
        return Err(match trainer.status {
            Status::Diverged { .. } => MemoryError::Diverged,
            _ => MemoryError::NeverStepped {
                steps: MAX_WARM_UP as u64,
            },
        });
    }
    trainer.meter = Some(Meter::default());
    trainer.step();
    let meter = trainer.meter.take().unwrap_or_default();
    if meter.is_empty() || matches!(trainer.status, Status::Diverged { .. }) {
        // The step did not run, or stopped after forward: a non-finite loss.
        return Err(MemoryError::Diverged);
    }
    let mut times = Vec::with_capacity(TIMED_STEPS);
    for _ in 0..TIMED_STEPS {
        let start = web_time::Instant::now();
        trainer.step();
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    Ok(Measured::from_meter(meter, median, TIMED_STEPS))
}

/// `rows` seeded examples of `features` values in [0, 1) and labels below `classes`.
fn random_data(features: usize, classes: usize, rows: usize) -> Dataset {
    use rand::{RngExt as _, SeedableRng as _};
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x6d65_6d6f);
    Dataset {
        name: "random".to_owned(),
        features,
        classes,
        x: (0..rows * features).map(|_| rng.random::<f32>()).collect(),
        y: (0..rows).map(|_| rng.random_range(0..classes)).collect(),
        image: None,
    }
}
