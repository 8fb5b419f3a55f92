//! What the lesson and `dlsys-lab compile --capture` show of capture: the
//! MLP's step captured (its kernels, forward and backward, with shapes),
//! its arena against max-live and no reuse, the fusion pass's groups and
//! decisions, the compile cache fed a few batches (capture, reuse, guard
//! failure and a symbolic recapture, reuse), the same model with a
//! data-dependent branch behind its own cache, and the overhead of eager vs replayed steps at a tiny and a
//! large size. The step is the plain fp32 one, whatever the MLP's
//! precision setting.

use serde::Serialize;

use super::cache::{CacheEvent, Compiled, Model};
use super::capture::{CaptureError, Ir, capture};
use super::fuse::{Fusion, fuse};
use super::overhead::{self, Overhead, batch};
use super::replay::{Replayed, layout, run};
use super::step::{MODEL_SEED, StepModel};
use crate::memory::MemoryError;
use crate::memory::mlp::MlpSettings;
use crate::nn::models::Cnn;
use crate::nn::{Activation, Mlp, TapeStep};

/// One kernel of the captured step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelRow {
    pub key: &'static str,
    pub backward: bool,
    pub shape: Vec<usize>,
    /// Its inputs, by row.
    pub inputs: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Captured {
    pub model: StepModel,
    /// The MLP's layer sizes (empty for the CNN).
    pub sizes: Vec<usize>,
    pub batch: usize,
    /// Every node: the inputs copied in, then the kernels.
    pub kernels: Vec<KernelRow>,
    pub launches: usize,
    /// Whether the replay gave the eager step's loss and every gradient,
    /// bit for bit.
    pub bit_exact: bool,
    /// Of the compile cache's calls, how many gave the eager step's loss
    /// and gradients bit for bit.
    pub calls_exact: usize,
    /// The arena planned for the batch, with its bounds, bytes.
    pub arena: u64,
    pub max_live: u64,
    pub no_reuse: u64,
    /// Kernels the plan runs in place, over their dying running operand.
    pub in_place: usize,
    /// The fusion pass on the captured step.
    pub fusion: Fusion,
    /// The step's matmuls, in the order it runs them (what dispatch selects for).
    pub calls: Vec<super::dispatch::Call>,
    /// The batches fed to the compile cache, and what it did.
    pub batches: Vec<usize>,
    pub events: Vec<CacheEvent>,
    pub captures: usize,
    /// The same model with a data-dependent branch (ReLU when the batch's
    /// mean is above [`BRANCH_THRESHOLD`], tanh otherwise) behind its own
    /// cache: each batch's mean, what the cache did, the graphs captured,
    /// and how many calls equal their eager step bit for bit.
    pub branch_means: Vec<f64>,
    pub branch_events: Vec<CacheEvent>,
    pub branch_captures: usize,
    pub branch_exact: usize,
    /// The overhead at [`overhead::CASES`] (empty when not timed).
    pub overhead: Vec<Overhead>,
    /// Each fused group's generated kernels, fused and op by op, on the
    /// step's own values: what the page times on the GPU.
    #[serde(skip)]
    pub timed: Vec<super::fused_run::Timed>,
}

/// The branching model's threshold on the batch's mean.
pub const BRANCH_THRESHOLD: f32 = 0.5;

/// Why the capture view cannot be made.
#[derive(Clone, Debug, PartialEq)]
pub enum CapturedError {
    Memory(MemoryError),
    Capture(CaptureError),
}

impl crate::errors::Localized for CapturedError {
    fn key(&self) -> &'static str {
        match self {
            Self::Memory(e) => e.key(),
            Self::Capture(e) => e.key(),
        }
    }

    fn args(&self, lang: crate::text::Lang) -> Vec<(&'static str, String)> {
        match self {
            Self::Memory(e) => e.args(lang),
            Self::Capture(e) => e.args(lang),
        }
    }
}

impl std::fmt::Display for CapturedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Memory(e) => e.fmt(f),
            Self::Capture(e) => e.fmt(f),
        }
    }
}

impl From<MemoryError> for CapturedError {
    fn from(e: MemoryError) -> Self {
        Self::Memory(e)
    }
}

impl From<CaptureError> for CapturedError {
    fn from(e: CaptureError) -> Self {
        Self::Capture(e)
    }
}

/// A model's training step captured, with what it was captured on and
/// the eager step's loss and gradients (the tape's).
pub struct StepCapture {
    /// The MLP's layer sizes (empty for the CNN).
    pub sizes: Vec<usize>,
    pub model: Model,
    pub x: Vec<f32>,
    pub y: Vec<usize>,
    pub ir: Ir,
    pub eager: Replayed,
}

impl StepCapture {
    /// The inputs in slot order: the parameters, then the data.
    pub fn inputs(&self) -> Vec<(&[f32], &[usize])> {
        let shapes = &self.ir.guards.shapes;
        self.model
            .params()
            .into_iter()
            .map(|p| (p.data.as_slice(), p.shape.as_slice()))
            .chain([(self.x.as_slice(), shapes[shapes.len() - 1].as_slice())])
            .collect()
    }
}

/// Captures `model`'s step (the MLP of `mlp`, or the CNN at its batch) on
/// seeded data.
pub fn capture_step(model: StepModel, mlp: &MlpSettings) -> Result<StepCapture, CapturedError> {
    let (sizes, cached) = match model {
        StepModel::Mlp => {
            let sizes = mlp.shape()?.sizes;
            let m = Mlp::<f32>::new(&sizes, Activation::Relu, 1)
                .map_err(|e| CapturedError::Memory(MemoryError::from(e)))?;
            (sizes, Model::Mlp(m))
        }
        // The CNN takes the batch alone (the MLP's sizes say nothing of it).
        StepModel::Cnn => {
            crate::memory::models::check(mlp.batch)?;
            (Vec::new(), Model::Cnn(Box::new(Cnn::new(MODEL_SEED))))
        }
        StepModel::Transformer => return Err(CaptureError::Model.into()),
    };
    let (x, y) = data(&cached, &sizes, mlp.batch, 0);
    let step = cached.step(&x, &y, None);
    let ir = capture(&step.graph, step.loss, &step.params, step.data, false)?;
    Ok(StepCapture {
        sizes,
        eager: eager(&step),
        model: cached,
        x,
        y,
        ir,
    })
}

/// The capture view of `model`'s step ([`capture_step`]); the overhead
/// timed `runs` times each way (none when 0; the MLP's only, as the
/// branching model).
pub fn captured(
    model: StepModel,
    mlp: &MlpSettings,
    runs: usize,
) -> Result<Captured, CapturedError> {
    let step = capture_step(model, mlp)?;
    let (ir, rows) = (&step.ir, step.y.len());
    let inputs = step.inputs();
    let refs: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
    let plan = layout(ir, &refs);
    let bit_exact = same(
        &run(ir, &plan, &inputs, &step.y, &mut Vec::new(), false)?,
        &step.eager,
    );
    let fusion = fuse(ir, &plan.shapes);
    let timed = super::fused_run::timed_kernels(ir, &inputs, &step.y)?;
    let calls = super::dispatch::calls(ir, &plan.shapes);
    let (cached, sizes) = (&step.model, &step.sizes);
    let kernels = ir
        .nodes
        .iter()
        .zip(&plan.shapes)
        .map(|(k, s)| KernelRow {
            key: k.key(),
            backward: k.is_backward(),
            shape: s.clone(),
            inputs: k.inputs(),
        })
        .collect();
    // The batch twice, then another (a guard fails; the batch turns
    // symbolic, unless it is 1), then twice the first.
    let other = if rows > 2 { rows / 2 } else { rows + 1 };
    let batches = vec![rows, rows, other, rows * 2];
    let mut cache = Compiled::of(cached.clone());
    let eager_on = |x: &[f32], y: &[usize], a| eager(&cached.step(x, y, a));
    let mut calls_exact = 0;
    for (i, b) in batches.iter().enumerate() {
        let (x, y) = data(cached, sizes, *b, i as u64 + 1);
        let replayed = cache.step(&x, &y)?;
        calls_exact += usize::from(same(&replayed, &eager_on(&x, &y, None)));
    }
    let (mut branch_means, mut branch_exact) = (Vec::new(), 0);
    let (mut branch_captures, mut branch_events, mut overhead) = (0, Vec::new(), Vec::new());
    if let Model::Mlp(m) = cached {
        // The branching model: batches whose means fall above, above,
        // below, above and below the threshold.
        let (features, classes) = (sizes[0], sizes[sizes.len() - 1]);
        let mut branching = Compiled::branching(m.clone(), BRANCH_THRESHOLD);
        for (i, above) in [true, true, false, true, false].into_iter().enumerate() {
            let (mut x, y) = batch(rows, features, classes, 10 + i as u64);
            let shift = if above { 0.5 } else { 0.0 };
            x.iter_mut().for_each(|v| *v = shift + 0.5 * *v);
            branch_means.push(super::capture::Branch::of(&x, BRANCH_THRESHOLD).0);
            let replayed = branching.step(&x, &y)?;
            let eager = eager_on(&x, &y, Some(branching.activation_for(&x)));
            branch_exact += usize::from(same(&replayed, &eager));
        }
        branch_captures = branching.captures();
        branch_events = branching.log;
        if runs > 0 {
            overhead = overhead::CASES
                .iter()
                .map(|(rows, width)| overhead::measure(*rows, *width, runs))
                .collect::<Result<_, _>>()?;
        }
    }
    Ok(Captured {
        model,
        sizes: sizes.clone(),
        batch: rows,
        launches: ir.launches(),
        bit_exact,
        calls_exact,
        fusion,
        calls,
        kernels,
        arena: 4 * plan.arena as u64,
        max_live: 4 * plan.max_live as u64,
        no_reuse: 4 * plan.no_reuse as u64,
        in_place: plan.in_place,
        batches,
        captures: cache.captures(),
        events: cache.log,
        branch_means,
        branch_captures,
        branch_events,
        branch_exact,
        overhead,
        timed,
    })
}

impl Captured {
    /// Nodes that copy an input in.
    pub fn inputs(&self) -> usize {
        self.kernels.iter().filter(|k| k.key == "copy_in").count()
    }

    pub fn backward(&self) -> usize {
        self.kernels.iter().filter(|k| k.backward).count()
    }

    pub fn forward(&self) -> usize {
        self.launches - self.backward()
    }
}

/// `rows` seeded examples for `model` (the MLP's of `sizes`).
fn data(model: &Model, sizes: &[usize], rows: usize, seed: u64) -> (Vec<f32>, Vec<usize>) {
    match model {
        Model::Mlp(_) => batch(rows, sizes[0], sizes[sizes.len() - 1], seed),
        Model::Cnn(_) => crate::memory::models::cnn_batch(rows, seed),
    }
}

/// Whether a capture of `a` is one of `b`: the same model, and the MLP's
/// settings for the MLP, the batch for the CNN.
pub fn same_step(a: (StepModel, &MlpSettings), b: (StepModel, &MlpSettings)) -> bool {
    a.0 == b.0
        && match a.0 {
            StepModel::Mlp => a.1 == b.1,
            _ => a.1.batch == b.1.batch,
        }
}

/// The tape's loss and gradients after `step`'s backward, as a replay
/// gives them.
fn eager(step: &TapeStep<f32>) -> Replayed {
    Replayed {
        loss: step.graph.value(step.loss).data[0],
        grads: step
            .params
            .iter()
            .map(|p| {
                step.graph
                    .grad(*p)
                    .map(|g| g.data.clone())
                    .unwrap_or_default()
            })
            .collect(),
        math_seconds: 0.0,
        launches: 0,
    }
}

/// Whether a replay gave the eager step's loss and every gradient, bit
/// for bit.
fn same(replayed: &Replayed, eager: &Replayed) -> bool {
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    replayed.loss.to_bits() == eager.loss.to_bits()
        && replayed.grads.len() == eager.grads.len()
        && replayed
            .grads
            .iter()
            .zip(&eager.grads)
            .all(|(a, b)| bits(a) == bits(b))
}
