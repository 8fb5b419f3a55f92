//! A training step's memory three ways, from the one allocation trace the
//! engine writes while it runs the step: what the step holds at most
//! (max-live), an arena planned ahead of time ([`super::plan`]), and what
//! PyTorch's caching allocator would hold ([`super::allocator`]); beside
//! them, the sum of all buffers (no reuse). Also the case every interview
//! asks about: out of memory while more than the request is free.

use serde::Serialize;

use super::allocator::{CachingAllocator, Oom, Replay, replay};
use super::expandable::ExpandableAllocator;
use super::plan::{Plan, lifetimes, plan};
use crate::memory::MemoryError;
use crate::memory::measure::measure_step;
use crate::memory::mlp::MlpSettings;
use crate::memory::models::{measure_char_step, measure_cnn_step};
use crate::memory::trace::Event;

/// Which of the engine's models is traced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum StepModel {
    /// The MLP of [`StepSettings::mlp`].
    #[default]
    Mlp,
    /// The small CNN on seeded images.
    Cnn,
    /// The character-level transformer on windows of the shipped text.
    Transformer,
}

impl StepModel {
    pub const ALL: [Self; 3] = [Self::Mlp, Self::Cnn, Self::Transformer];

    pub fn key(self) -> &'static str {
        match self {
            Self::Mlp => "mlp",
            Self::Cnn => "cnn",
            Self::Transformer => "transformer",
        }
    }
}

impl crate::names::Named for StepModel {
    fn name_key(&self) -> String {
        format!("compile.model.{}", self.key())
    }
}

/// The step to trace and the device the allocator runs on.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct StepSettings {
    pub model: StepModel,
    /// The MLP's shape and, for every model, the batch.
    pub mlp: MlpSettings,
    /// The device's memory for the allocator, MiB.
    pub device_mib: u64,
}

impl Default for StepSettings {
    fn default() -> Self {
        Self {
            model: StepModel::Mlp,
            mlp: MlpSettings::default(),
            device_mib: 80 * 1024,
        }
    }
}

/// The seed of the CNN's and the transformer's data and weights.
pub const MODEL_SEED: u64 = 1;

/// The largest device the allocator models, MiB (1 TiB).
pub const MAX_DEVICE_MIB: u64 = 1 << 20;

/// What the step's memory comes to.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepMemory {
    /// Points of the step's trace (the op index of the planning picture).
    pub points: u32,
    pub buffers: usize,
    /// The planned arena, max-live and no reuse.
    pub plan: Plan,
    /// The trace through the caching allocator.
    pub allocator: Replay,
    /// The device the allocator ran on, bytes.
    pub device: u64,
}

impl StepMemory {
    /// The arena over the most live at once (≥ 1).
    pub fn arena_ratio(&self) -> f64 {
        self.plan.arena as f64 / self.plan.max_live.max(1) as f64
    }

    /// The caching allocator's peak reserved over the most live at once.
    pub fn reserved_ratio(&self) -> f64 {
        self.allocator.stats.peak_reserved as f64 / self.plan.max_live.max(1) as f64
    }
}

/// One training step's allocation trace.
#[derive(Clone, Debug, PartialEq)]
pub struct StepTrace {
    pub events: Vec<Event>,
    /// Points of the trace.
    pub points: u32,
}

/// Traces one training step of `model` on the engine (the MLP shaped by
/// `mlp`; every model at `mlp.batch`).
pub fn trace_step(model: StepModel, mlp: &MlpSettings) -> Result<StepTrace, MemoryError> {
    let measured = match model {
        StepModel::Mlp => measure_step(&mlp.shape()?)?,
        StepModel::Cnn => measure_cnn_step(mlp.batch, MODEL_SEED)?,
        StepModel::Transformer => measure_char_step(mlp.batch, MODEL_SEED)?,
    };
    Ok(StepTrace {
        points: measured.timeline.len() as u32,
        events: measured.events,
    })
}

/// A traced step's memory three ways, the allocator on a device of
/// `device_mib` MiB.
pub fn memory_of(trace: &StepTrace, device_mib: u64) -> Result<StepMemory, MemoryError> {
    check_device(device_mib)?;
    let buffers = lifetimes(&trace.events, trace.points);
    let device = device_mib << 20;
    Ok(StepMemory {
        points: trace.points,
        buffers: buffers.len(),
        plan: plan(&buffers),
        allocator: replay(&trace.events, device),
        device,
    })
}

fn check_device(device_mib: u64) -> Result<(), MemoryError> {
    if (1..=MAX_DEVICE_MIB).contains(&device_mib) {
        Ok(())
    } else {
        Err(MemoryError::DeviceMib {
            value: device_mib,
            max: MAX_DEVICE_MIB,
        })
    }
}

/// Traces one training step of `s.model` on the engine and works out its
/// memory three ways.
pub fn step_memory(s: &StepSettings) -> Result<StepMemory, MemoryError> {
    check_device(s.device_mib)?;
    memory_of(&trace_step(s.model, &s.mlp)?, s.device_mib)
}

/// Out of memory with memory free, built step by step: a device of
/// `segments` large segments, each filled with three tensors of `tensor`
/// bytes; the middle tensor of each freed; then a request larger than any
/// free block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Fragmented {
    pub device: u64,
    pub segments: u64,
    pub tensor: u64,
    /// Cached and free when the request comes (reserved − allocated).
    pub cached_free: u64,
    /// The request and why it failed.
    pub oom: Oom,
}

/// The case of [`Fragmented`] on a 60 MiB device with 6 MiB tensors and an
/// 8 MiB request; `None` only if the allocator served it (a bug the tests
/// catch).
pub fn fragmented() -> Option<Fragmented> {
    const MIB: u64 = 1 << 20;
    let (device, tensor, request) = (60 * MIB, 6 * MIB, 8 * MIB);
    let mut alloc = CachingAllocator::new(device);
    let mut held = Vec::new();
    while let Ok(h) = alloc.malloc(tensor) {
        held.push(h);
    }
    for h in held.iter().skip(1).step_by(3) {
        alloc.free(*h);
    }
    let cached_free = alloc.reserved() - alloc.allocated();
    let oom = alloc.malloc(request).err()?;
    Some(Fragmented {
        device,
        segments: alloc.segments().count() as u64,
        tensor,
        cached_free,
        oom,
    })
}

/// What the two allocators share here.
trait Allocate {
    fn malloc(&mut self, bytes: u64) -> Result<super::allocator::Handle, Oom>;
    fn free(&mut self, h: super::allocator::Handle) -> bool;
    fn totals(&self) -> (u64, u64);
}

impl Allocate for CachingAllocator {
    fn malloc(&mut self, bytes: u64) -> Result<super::allocator::Handle, Oom> {
        CachingAllocator::malloc(self, bytes)
    }
    fn free(&mut self, h: super::allocator::Handle) -> bool {
        CachingAllocator::free(self, h)
    }
    fn totals(&self) -> (u64, u64) {
        (self.allocated(), self.reserved())
    }
}

impl Allocate for ExpandableAllocator {
    fn malloc(&mut self, bytes: u64) -> Result<super::allocator::Handle, Oom> {
        ExpandableAllocator::malloc(self, bytes)
    }
    fn free(&mut self, h: super::allocator::Handle) -> bool {
        ExpandableAllocator::free(self, h)
    }
    fn totals(&self) -> (u64, u64) {
        (self.allocated(), self.reserved())
    }
}

/// Tensor sizes that change from one step to the next, under the plain
/// allocator and with expandable segments: three tensors of `first` bytes
/// made and freed, then three of `second` kept, then a `request`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Growing {
    pub device: u64,
    pub first: u64,
    pub second: u64,
    pub request: u64,
    /// Plain segments: why the request failed (if it did) and the bytes
    /// cached free beside the kept tensors when it came.
    pub plain: Option<Oom>,
    pub plain_free: u64,
    /// Expandable segments: why it failed (if it did) and what is reserved
    /// after it.
    pub expandable: Option<Oom>,
    pub expandable_reserved: u64,
}

/// The case of [`Growing`] on a 100 MiB device: 30 MiB tensors, then
/// 25 MiB ones, then 20 MiB.
pub fn growing() -> Growing {
    const MIB: u64 = 1 << 20;
    let (device, first, second, request) = (100 * MIB, 30 * MIB, 25 * MIB, 20 * MIB);
    fn run(alloc: &mut impl Allocate, first: u64, second: u64, request: u64) -> (Option<Oom>, u64) {
        let made: Vec<_> = (0..3).filter_map(|_| alloc.malloc(first).ok()).collect();
        for h in made {
            alloc.free(h);
        }
        for _ in 0..3 {
            let _ = alloc.malloc(second);
        }
        let (allocated, reserved) = alloc.totals();
        (alloc.malloc(request).err(), reserved - allocated)
    }
    let (plain, plain_free) = run(&mut CachingAllocator::new(device), first, second, request);
    let mut expandable = ExpandableAllocator::new(device);
    let (grown, _) = run(&mut expandable, first, second, request);
    Growing {
        device,
        first,
        second,
        request,
        plain,
        plain_free,
        expandable: grown,
        expandable_reserved: expandable.reserved(),
    }
}
