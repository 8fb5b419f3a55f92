//! Fully sharded data parallelism (ZeRO-3 / FSDP) on threads: the engine's
//! MLP trained by N workers, each holding only its shard (chunk w of every
//! layer's flattened weight and bias) of the parameters, the gradients and
//! the momentum.
//!
//! Per step, layer by layer: the layer's full weights are all-gathered
//! before its forward and dropped after it (FSDP's default, resharding);
//! gathered again before its backward; the layer's gradient reduce-scattered
//! so each worker keeps the sum of its own chunk; then every worker steps
//! its shards (SGD with momentum on the mean gradient). The collectives are
//! the collective engine's ring schedules, run on the workers' real
//! buffers, their bytes counted as they run: 3·(N − 1)·Ψ over all workers
//! per step (Ψ the model's bytes), against data parallelism's 2·(N − 1)·Ψ.
//!
//! The same step is run as plain data parallelism (every worker the whole
//! model, each layer's gradient all-reduced as a bucket of its own on the
//! ring): a ring all-reduce is a reduce-scatter and an all-gather, so each
//! sum is added in the same order, and the two trainings agree bit for bit
//! — losses and weights. (Against one process on the whole batch they
//! differ by the order of the gradient's additions.)
//!
//! Memory: each worker records what it holds at every point of the step —
//! its shards, the gathered layers, the kept layer inputs, the gradients in
//! flight — in the allocation trace ([`crate::memory::trace`]); the values
//! inside one layer's graph are the engine's and not counted. The peak is
//! held to the calculator's [`crate::memory::sharded::fsdp_peak`].
//!
//! Time is the virtual clock's: compute streams at the worker's rate, the
//! collectives on a stream of their own, each taking the ring's time on the
//! link; with prefetch the next layer's gather is issued as the current
//! layer's compute starts (FSDP's forward and backward prefetch), without
//! it only once the compute is done.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use rand::SeedableRng as _;
use serde::Serialize;

use crate::autograd::{Graph, Tensor};
use crate::collective::{Link, Op, chunk_range};
use crate::memory::measure::{Held, Phase};
use crate::memory::precision::Component;
use crate::memory::trace::{BufKey, Trace};
use crate::nn::layers::layer;
use crate::nn::{Activation, Mlp};

mod clock;
#[cfg(test)]
mod tests;

use clock::clock;
pub use clock::{Activity, Span};

/// The largest run here: rows per worker, widths, layers, steps.
pub const MAX_ROWS: usize = 256;
pub const MAX_WIDTH: usize = 1024;
pub const MAX_LAYERS: usize = 64;
pub const MAX_STEPS: usize = 20;

crate::catalog_error! {
    /// Why a sharded run cannot be set up.
    pub enum ShardError {
        /// Sizes past what a run here takes, or workers outside 2..=16.
        Size { workers: u64, rows: u64, width: u64, layers: u64, steps: u64 } = "parallel.fsdp_size",
        /// A worker's thread or a collective failed.
        WorkerFailed = "parallel.worker_failed",
    }
}

/// One sharded training run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FsdpSettings {
    pub workers: usize,
    /// Examples per worker per step.
    pub rows: usize,
    /// The MLP: inputs, `layers` linear layers of `width`, `classes` outputs.
    pub inputs: usize,
    pub width: usize,
    pub layers: usize,
    pub classes: usize,
    pub steps: usize,
    /// Gather the next layer while the current one computes.
    pub prefetch: bool,
    /// Each worker's rate, GFLOP/s, and the link between workers.
    pub gflops: f64,
    pub link: Link,
    pub learning_rate: f32,
    pub momentum: f32,
    pub seed: u64,
}

impl Default for FsdpSettings {
    fn default() -> Self {
        Self {
            workers: 4,
            rows: 8,
            inputs: 16,
            width: 16,
            layers: 8,
            classes: 4,
            steps: 3,
            prefetch: true,
            gflops: 1.0,
            link: Link {
                alpha_s: 5e-6,
                bytes_per_s: 25e9,
            },
            learning_rate: 0.05,
            momentum: 0.9,
            seed: 11,
        }
    }
}

impl FsdpSettings {
    pub fn validate(&self) -> Result<(), ShardError> {
        let workers = crate::collective::MIN_WORKERS..=crate::collective::MAX_WORKERS;
        let sizes = [self.inputs, self.width, self.classes, self.rows];
        let ok = workers.contains(&self.workers)
            && self.rows <= MAX_ROWS
            && (1..=MAX_LAYERS).contains(&self.layers)
            && (1..=MAX_STEPS).contains(&self.steps)
            && sizes.iter().all(|x| (1..=MAX_WIDTH).contains(x))
            && self.gflops.is_finite()
            && self.gflops > 0.0;
        if ok {
            Ok(())
        } else {
            Err(ShardError::Size {
                workers: crate::collective::MAX_WORKERS as u64,
                rows: MAX_ROWS as u64,
                width: MAX_WIDTH as u64,
                layers: MAX_LAYERS as u64,
                steps: MAX_STEPS as u64,
            })
        }
    }

    /// The MLP's sizes: inputs, `layers − 1` hidden widths, classes.
    pub fn sizes(&self) -> Vec<usize> {
        let mut sizes = vec![self.inputs];
        sizes.extend(std::iter::repeat_n(self.width, self.layers - 1));
        sizes.push(self.classes);
        sizes
    }

    /// Parameters of layer `l`: weight and bias.
    fn params(&self, sizes: &[usize], l: usize) -> usize {
        sizes[l] * sizes[l + 1] + sizes[l + 1]
    }
}

/// A sharded run, beside plain data parallelism on the same data.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FsdpRun {
    pub settings: FsdpSettings,
    pub parameters: usize,
    /// Each step's loss: the workers' mean.
    pub losses: Vec<f64>,
    pub dp_losses: Vec<f64>,
    /// Weights after the last step that differ in their bits from data
    /// parallelism's, and the largest difference.
    pub differing: usize,
    pub max_difference: f32,
    /// Bytes each worker sent in one step, counted by the collective runs;
    /// data parallelism's, the same way.
    pub sent: Vec<u64>,
    pub dp_sent: Vec<u64>,
    /// Each worker's peak bytes, from its allocation trace; the calculator's
    /// figure for the same shapes.
    pub peak: Vec<u64>,
    pub estimate: Vec<u64>,
    /// A step on the virtual clock, with and without prefetch.
    pub timeline: Vec<Span>,
    pub step_s: f64,
    pub other_step_s: f64,
    pub threads: bool,
}

impl FsdpRun {
    /// Ψ: the model's bytes (f32).
    pub fn model_bytes(&self) -> u64 {
        4 * self.parameters as u64
    }
}

/// A worker: its shards, what it keeps during the step, its trace.
struct Worker {
    params: Vec<Vec<f32>>,
    grads: Vec<Vec<f32>>,
    momentum: Vec<Vec<f32>>,
    /// The inputs of the layers run so far (layer 0's the batch).
    kept: Vec<Tensor<f32>>,
    trace: Trace,
}

impl Worker {
    /// Records a point: the shards, `gathered` layers, the kept inputs and
    /// the buffers in flight.
    fn record(&mut self, phase: Phase, gathered: &[(usize, usize)], flight: &[usize]) {
        let mut held = Held::default();
        for (l, shard) in self.params.iter().enumerate() {
            let l32 = l as u32;
            held.f32s(BufKey::Param(l32), Component::Parameters, shard.len(), 4);
            held.f32s(BufKey::Grad(l32), Component::Gradients, shard.len(), 4);
            held.f32s(
                BufKey::State(l32),
                Component::OptimizerState,
                shard.len(),
                4,
            );
        }
        for (l, len) in gathered {
            held.f32s(BufKey::Value(*l as u32), Component::Parameters, *len, 4);
        }
        for (l, t) in self.kept.iter().enumerate() {
            let role = if l == 0 {
                Component::Inputs
            } else {
                Component::Activations
            };
            held.f32s(BufKey::Kept(l as u32), role, t.numel(), 4);
        }
        for len in flight {
            held.f32s(BufKey::InFlight, Component::Temporaries, *len, 4);
        }
        self.trace.record(phase, &held);
    }
}

/// `f` for every worker (on threads when `threads`).
fn each<T: Send>(
    threads: bool,
    workers: usize,
    f: impl Fn(usize) -> T + Sync,
) -> Result<Vec<T>, ShardError> {
    super::workers::each(threads, workers, f).ok_or(ShardError::WorkerFailed)
}

/// A ring collective over the workers' buffers, its bytes added to `sent`.
fn collective(op: Op, buffers: &mut [Vec<f32>], sent: &mut [u64]) -> Result<(), ShardError> {
    super::workers::ring(op, buffers, sent).ok_or(ShardError::WorkerFailed)
}

/// The seeded data: per step, per worker, `rows` examples uniform in
/// [−1, 1) and labels uniform over the classes.
fn batches(s: &FsdpSettings) -> Vec<Vec<(Tensor<f32>, Vec<usize>)>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(s.seed ^ 0x5a4d);
    (0..s.steps)
        .map(|_| {
            (0..s.workers)
                .map(|_| {
                    let (x, y) =
                        super::workers::random_batch(&mut rng, s.rows, s.inputs, s.classes);
                    (Tensor::new(x, &[s.rows, s.inputs]), y)
                })
                .collect()
        })
        .collect()
}

/// The layer's weight and bias from its flattened values.
fn unflatten(flat: &[f32], inputs: usize, outputs: usize) -> (Tensor<f32>, Tensor<f32>) {
    let (w, b) = flat.split_at(inputs * outputs);
    (
        Tensor::new(w.to_vec(), &[inputs, outputs]),
        Tensor::new(b.to_vec(), &[outputs]),
    )
}

/// One layer's forward on the gathered weights: its output and, for the
/// last layer, the loss.
fn forward(
    full: &[f32],
    input: &Tensor<f32>,
    outputs: usize,
    last: bool,
    y: &[usize],
) -> (Tensor<f32>, Option<f64>) {
    let mut g = Graph::new();
    let x = g.input(input.clone());
    let (w, b) = unflatten(full, input.shape[1], outputs);
    let (w, b) = (g.param(w), g.param(b));
    let h = layer(&mut g, x, w, b, (!last).then_some(Activation::Relu));
    let loss = last.then(|| g.softmax_cross_entropy(h, y));
    let out = g.value(h).into_owned();
    (out, loss.map(|l| f64::from(g.value(l).data[0])))
}

/// One layer's backward on the gathered weights, from its kept input (the
/// graph built again, as the engine does not keep graphs across the
/// collectives): the gradient of its output (the loss's, for the last
/// layer), its flattened weight and bias gradient, and its input's gradient
/// but for layer 0.
fn backward(
    full: &[f32],
    input: &Tensor<f32>,
    outputs: usize,
    seed: Option<&Tensor<f32>>,
    y: &[usize],
    first: bool,
) -> (usize, Vec<f32>, Option<Tensor<f32>>) {
    let mut g = Graph::new();
    let x = if first {
        g.input(input.clone())
    } else {
        g.param(input.clone())
    };
    let (w, b) = unflatten(full, input.shape[1], outputs);
    let (w, b) = (g.param(w), g.param(b));
    let last = seed.is_none();
    let h = layer(&mut g, x, w, b, (!last).then_some(Activation::Relu));
    match seed {
        Some(seed) => {
            g.backward_from(h, seed.clone(), &mut |_, _| {});
        }
        None => {
            let loss = g.softmax_cross_entropy(h, y);
            g.backward(loss);
        }
    }
    let output_grad = g.grad(h).map_or(0, |t| t.numel());
    let flat = g
        .grads_or_zeros(&[w, b])
        .into_iter()
        .flat_map(|t| t.data)
        .collect();
    let input_grad = (!first)
        .then(|| g.grad(x).map(|t| t.into_owned()))
        .flatten();
    (output_grad, flat, input_grad)
}

/// SGD with momentum on the mean of `sum` over `workers`: the one update
/// both trainings run.
fn update(params: &mut [f32], momentum: &mut [f32], sum: &[f32], s: &FsdpSettings) {
    let n = s.workers as f32;
    for ((p, v), g) in params.iter_mut().zip(momentum.iter_mut()).zip(sum) {
        *v = s.momentum * *v + g / n;
        *p -= s.learning_rate * *v;
    }
}

/// Trains `s.steps` steps sharded (the workers on threads when `threads`)
/// and as plain data parallelism on the same data.
pub fn train_fsdp(s: &FsdpSettings, threads: bool) -> Result<FsdpRun, ShardError> {
    s.validate()?;
    let sizes = s.sizes();
    let n = s.workers;
    let mlp = Mlp::<f32>::new(&sizes, Activation::Relu, s.seed).map_err(|_| size_error())?;
    let full: Vec<Vec<f32>> = mlp
        .layers
        .iter()
        .map(|l| l.weight.data.iter().chain(&l.bias.data).copied().collect())
        .collect();
    let mut workers: Vec<Worker> = (0..n)
        .map(|w| {
            let params: Vec<Vec<f32>> = full
                .iter()
                .map(|p| p[chunk_range(w, n, p.len())].to_vec())
                .collect();
            let zeros: Vec<Vec<f32>> = params.iter().map(|p| vec![0.0; p.len()]).collect();
            Worker {
                params,
                grads: zeros.clone(),
                momentum: zeros,
                kept: Vec::new(),
                trace: Trace::default(),
            }
        })
        .collect();
    let data = batches(s);
    let mut losses = Vec::with_capacity(s.steps);
    let mut sent = vec![0u64; n];
    for (step, batch) in data.iter().enumerate() {
        let mut later = vec![0u64; n];
        let counted = if step == 0 { &mut sent } else { &mut later };
        let loss = sharded_step(s, &sizes, &mut workers, batch, counted, threads)?;
        losses.push(loss);
    }
    let DataParallel {
        losses: dp_losses,
        weights: dp_weights,
        sent: dp_sent,
    } = data_parallel(s, &mlp, &data, threads)?;
    let mut differing = 0;
    let mut max_difference = 0.0f32;
    for (l, reference) in dp_weights.iter().enumerate() {
        let weights = workers.iter().flat_map(|w| w.params[l].iter());
        for (a, b) in weights.zip(reference) {
            differing += usize::from(a.to_bits() != b.to_bits());
            max_difference = max_difference.max((a - b).abs());
        }
    }
    let peak = workers.iter().map(|w| w.trace.peak()).collect();
    let estimate = (0..n)
        .map(|w| crate::memory::sharded::fsdp_peak(&sizes, s.rows, n, w, s.prefetch))
        .collect();
    let (timeline, step_s) = clock(s, &sizes, s.prefetch)?;
    let (_, other_step_s) = clock(s, &sizes, !s.prefetch)?;
    Ok(FsdpRun {
        settings: s.clone(),
        parameters: mlp.parameter_count(),
        losses,
        dp_losses,
        differing,
        max_difference,
        sent,
        dp_sent,
        peak,
        estimate,
        timeline,
        step_s,
        other_step_s,
        threads,
    })
}

fn size_error() -> ShardError {
    ShardError::Size {
        workers: crate::collective::MAX_WORKERS as u64,
        rows: MAX_ROWS as u64,
        width: MAX_WIDTH as u64,
        layers: MAX_LAYERS as u64,
        steps: MAX_STEPS as u64,
    }
}

/// Each worker's full copy of layer `l`, all-gathered from the shards.
fn gather(
    workers: &[Worker],
    l: usize,
    size: usize,
    sent: &mut [u64],
) -> Result<Vec<Vec<f32>>, ShardError> {
    let n = workers.len();
    let mut buffers: Vec<Vec<f32>> = workers
        .iter()
        .enumerate()
        .map(|(w, worker)| {
            let mut buffer = vec![0.0; size];
            buffer[chunk_range(w, n, size)].copy_from_slice(&worker.params[l]);
            buffer
        })
        .collect();
    collective(Op::AllGather, &mut buffers, sent)?;
    Ok(buffers)
}

/// The layers gathered now: each worker's full copy.
type Gathered = BTreeMap<usize, Vec<Vec<f32>>>;

/// Gathers each of `layers` not gathered already (layer l of `size(l)`
/// values).
fn fetch(
    gathered: &mut Gathered,
    workers: &[Worker],
    layers: impl IntoIterator<Item = usize>,
    size: impl Fn(usize) -> usize,
    sent: &mut [u64],
) -> Result<(), ShardError> {
    for l in layers {
        if let Entry::Vacant(entry) = gathered.entry(l) {
            entry.insert(gather(workers, l, size(l), sent)?);
        }
    }
    Ok(())
}

/// One sharded step: forward and backward layer by layer, then the shards'
/// update. Returns the workers' mean loss.
fn sharded_step(
    s: &FsdpSettings,
    sizes: &[usize],
    workers: &mut [Worker],
    batch: &[(Tensor<f32>, Vec<usize>)],
    sent: &mut [u64],
    threads: bool,
) -> Result<f64, ShardError> {
    let (n, layers) = (s.workers, s.layers);
    let mut gathered = Gathered::new();
    let held = |gathered: &Gathered, w: usize| {
        gathered
            .iter()
            .map(|(l, v)| (*l, v[w].len()))
            .collect::<Vec<_>>()
    };
    for (worker, (x, _)) in workers.iter_mut().zip(batch) {
        worker.kept = vec![x.clone()];
    }
    let mut loss = vec![0.0f64; n];
    for l in 0..layers {
        let next = (s.prefetch && l + 1 < layers).then_some(l + 1);
        let size = |l: usize| s.params(sizes, l);
        fetch(
            &mut gathered,
            workers,
            std::iter::once(l).chain(next),
            size,
            sent,
        )?;
        let full = &gathered[&l];
        let last = l + 1 == layers;
        let ran = each(threads, n, |w| {
            forward(
                &full[w],
                &workers[w].kept[l],
                sizes[l + 1],
                last,
                &batch[w].1,
            )
        })?;
        for (w, (out, step_loss)) in ran.into_iter().enumerate() {
            workers[w].record(Phase::Forward, &held(&gathered, w), &[out.numel()]);
            if let Some(value) = step_loss {
                loss[w] = value;
            }
            if !last {
                workers[w].kept.push(out);
            }
        }
        gathered.remove(&l);
    }
    let mut seeds: Vec<Option<Tensor<f32>>> = vec![None; n];
    for l in (0..layers).rev() {
        let size = s.params(sizes, l);
        let below = (s.prefetch && l > 0).then(|| l - 1);
        let size_of = |l: usize| s.params(sizes, l);
        fetch(
            &mut gathered,
            workers,
            std::iter::once(l).chain(below),
            size_of,
            sent,
        )?;
        let full = &gathered[&l];
        let ran = each(threads, n, |w| {
            let kept = &workers[w].kept[l];
            backward(
                &full[w],
                kept,
                sizes[l + 1],
                seeds[w].as_ref(),
                &batch[w].1,
                l == 0,
            )
        })?;
        let mut sums = Vec::with_capacity(n);
        for (w, (output_grad, flat, input_grad)) in ran.into_iter().enumerate() {
            let mut flight = vec![output_grad, flat.len()];
            flight.extend(input_grad.as_ref().map(Tensor::numel));
            workers[w].record(Phase::Backward, &held(&gathered, w), &flight);
            workers[w].kept.truncate(l);
            seeds[w] = input_grad;
            sums.push(flat);
        }
        gathered.remove(&l);
        collective(Op::ReduceScatter, &mut sums, sent)?;
        for (w, (worker, sum)) in workers.iter_mut().zip(&sums).enumerate() {
            worker.grads[l] = sum[chunk_range(w, n, size)].to_vec();
        }
    }
    for worker in workers.iter_mut() {
        let Worker {
            params,
            grads,
            momentum,
            ..
        } = worker;
        for ((p, v), g) in params.iter_mut().zip(momentum.iter_mut()).zip(grads.iter()) {
            update(p, v, g, s);
        }
        worker.record(Phase::Optimizer, &[], &[]);
    }
    Ok(loss.iter().sum::<f64>() / n as f64)
}

/// Data parallelism's run: each step's mean loss, the final weights per
/// layer (flattened), the bytes each worker sent in the first step.
struct DataParallel {
    losses: Vec<f64>,
    weights: Vec<Vec<f32>>,
    sent: Vec<u64>,
}

/// Plain data parallelism on the same data: every worker the whole model,
/// each layer's gradient all-reduced on the ring as a bucket of its own,
/// the same update.
fn data_parallel(
    s: &FsdpSettings,
    mlp: &Mlp<f32>,
    data: &[Vec<(Tensor<f32>, Vec<usize>)>],
    threads: bool,
) -> Result<DataParallel, ShardError> {
    let n = s.workers;
    let mut model = mlp.clone();
    let mut momentum: Vec<Vec<f32>> = model
        .layers
        .iter()
        .map(|l| vec![0.0; l.weight.numel() + l.bias.numel()])
        .collect();
    let mut losses = Vec::with_capacity(data.len());
    let mut sent = vec![0u64; n];
    for (step, batch) in data.iter().enumerate() {
        let ran = each(threads, n, |w| {
            model.gradient(&batch[w].0.data, &batch[w].1)
        })?;
        losses.push(ran.iter().map(|(loss, _)| loss).sum::<f64>() / n as f64);
        let mut later = vec![0u64; n];
        let counted = if step == 0 { &mut sent } else { &mut later };
        let mut offset = 0;
        for (layer, v) in model.layers.iter_mut().zip(momentum.iter_mut()) {
            let size = v.len();
            let mut buffers: Vec<Vec<f32>> = ran
                .iter()
                .map(|(_, g)| g[offset..offset + size].to_vec())
                .collect();
            offset += size;
            collective(Op::AllReduce, &mut buffers, counted)?;
            let mut flat: Vec<f32> = layer
                .weight
                .data
                .iter()
                .chain(&layer.bias.data)
                .copied()
                .collect();
            update(&mut flat, v, &buffers[0], s);
            let (w, b) = flat.split_at(layer.weight.numel());
            layer.weight.data.copy_from_slice(w);
            layer.bias.data.copy_from_slice(b);
        }
    }
    let weights = model
        .layers
        .iter()
        .map(|l| l.weight.data.iter().chain(&l.bias.data).copied().collect())
        .collect();
    Ok(DataParallel {
        losses,
        weights,
        sent,
    })
}
