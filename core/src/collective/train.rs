//! Synchronous data-parallel training: N replicas of the engine's MLP, each
//! on its shard of every batch, their gradients summed by a collective and
//! averaged, one optimizer step each.
//!
//! The workers compute on OS threads natively (one per worker) and one
//! after another where there are no threads (the web); the collective then
//! runs its schedule on the gradients in one fixed order, so both give
//! bit-identical weights. Time is on the virtual clock: a worker's compute
//! is its counted FLOPs ÷ its rate (a straggler's is lower), the all-reduce
//! is its schedule simulated on the α-β links, and a synchronous step lasts
//! the slowest worker's compute plus the all-reduce. The real threads' wall
//! time is reported apart.

use rand::SeedableRng as _;
use rand::seq::SliceRandom as _;
use serde::Serialize;

use super::clock::{Link, simulate};
use super::compress::{Compression, compressed_sum};
use super::cost::sync_step;
use super::exec::{Element, run};
use super::schedule::Schedule;
use super::{Algorithm, CollectiveError, Op};
use crate::autograd::{Real, Tensor};
use crate::memory::{MlpShape, Precision, estimate_mlp};
use crate::nn::{Activation, Dataset, Mlp, Optimizer, OptimizerKind};

/// A slower worker: its compute rate divided by `slowdown` (≥ 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Straggler {
    pub worker: usize,
    pub slowdown: f64,
}

/// The most steps a data-parallel run takes: its batches are drawn up
/// front (a million global batches of a few examples hold tens of MB).
pub const MAX_STEPS: usize = 1_000_000;

/// What a data-parallel run trains and how.
#[derive(Clone, Debug, PartialEq)]
pub struct DpSettings {
    /// Hidden layer sizes (the input and output come from the data).
    pub hidden: Vec<usize>,
    pub activation: Activation,
    pub optimizer: OptimizerKind,
    pub lr: f64,
    pub workers: usize,
    /// Examples per worker per step (the global batch is N × this).
    pub shard: usize,
    pub algorithm: Algorithm,
    pub steps: usize,
    pub seed: u64,
    pub link: Link,
    /// Each worker's compute rate, FLOP/s.
    pub flops_per_s: f64,
    pub straggler: Option<Straggler>,
    /// What the workers send in place of their f32 gradients.
    pub compression: Compression,
}

/// One synchronous step on the virtual clock.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DpStep {
    /// Mean loss over the global batch (the mean of the shards' means).
    pub loss: f64,
    /// Each worker's compute time.
    pub compute_s: Vec<f64>,
    pub comm_s: f64,
    /// The slowest compute plus the all-reduce.
    pub step_s: f64,
}

/// A finished run.
#[derive(Clone, Debug, PartialEq)]
pub struct DpRun<T> {
    pub steps: Vec<DpStep>,
    /// Worker 0's parameters at the end (weight, bias per layer).
    pub weights: Vec<Tensor<T>>,
    /// Whether every replica ended with the same bits as worker 0.
    pub replicas_identical: bool,
    /// Bytes all nodes sent per all-reduce.
    pub bytes_per_step: u64,
    /// Whether the workers ran on OS threads.
    pub threads: bool,
    /// Real time of the whole run on this machine.
    pub wall_s: f64,
}

/// The global batches of `rows` examples, `global` at a time, drop-last,
/// reshuffled (seeded) every epoch, `steps` of them.
pub(super) fn batches(rows: usize, global: usize, steps: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut out = Vec::with_capacity(steps);
    let mut epoch = 0u64;
    while out.len() < steps {
        let mut order: Vec<usize> = (0..rows).collect();
        order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed ^ (epoch << 32)));
        for chunk in order.chunks_exact(global) {
            if out.len() < steps {
                out.push(chunk.to_vec());
            }
        }
        epoch += 1;
    }
    out
}

/// The loss and the flat gradient (every parameter in order) of `model`
/// on the examples `indices` of `data`.
pub(super) fn gradient<T: Real>(
    model: &Mlp<T>,
    data: &Dataset,
    indices: &[usize],
) -> (f64, Vec<T>) {
    let (x, y) = data.gather(indices);
    model.gradient(&x, &y)
}

/// Each job's loss and flat gradient (a model and the examples it takes),
/// each on its own thread when `threads`, one after another otherwise:
/// the same bits either way.
pub(super) fn gradients<T: Real>(
    jobs: &[(&Mlp<T>, &[usize])],
    data: &Dataset,
    threads: bool,
) -> Result<Vec<(f64, Vec<T>)>, CollectiveError> {
    if !threads || jobs.len() < 2 {
        return Ok(jobs
            .iter()
            .map(|(model, indices)| gradient(model, data, indices))
            .collect());
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|&(model, indices)| scope.spawn(move || gradient(model, data, indices)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| CollectiveError::WorkerFailed))
            .collect()
    })
}

impl DpSettings {
    pub(super) fn sizes(&self, data: &Dataset) -> Vec<usize> {
        std::iter::once(data.features)
            .chain(self.hidden.iter().copied())
            .chain(std::iter::once(data.classes))
            .collect()
    }

    pub(super) fn check(&self, data: &Dataset) -> Result<(), CollectiveError> {
        Schedule::new(self.algorithm, Op::AllReduce, self.workers, 1)?;
        let global = self.workers.saturating_mul(self.shard);
        if self.shard == 0 || global > data.len() {
            return Err(CollectiveError::Batch {
                global: global as u64,
                rows: data.len() as u64,
            });
        }
        if self.steps > MAX_STEPS {
            return Err(CollectiveError::Steps {
                steps: self.steps as u64,
                max: MAX_STEPS as u64,
            });
        }
        let rate_ok = self.flops_per_s.is_finite() && self.flops_per_s > 0.0;
        let straggler_ok = self
            .straggler
            .is_none_or(|s| s.worker < self.workers && s.slowdown.is_finite() && s.slowdown >= 1.0);
        if !rate_ok || !straggler_ok {
            return Err(CollectiveError::Rate);
        }
        Ok(())
    }

    /// Each worker's compute time for one shard: forward and backward
    /// matmul FLOPs (the memory lesson's count) ÷ its rate.
    pub(super) fn compute_times(&self, sizes: &[usize]) -> Result<Vec<f64>, CollectiveError> {
        let shape = MlpShape {
            sizes: sizes.to_vec(),
            batch: self.shard,
            optimizer: self.optimizer,
            precision: Precision::Fp32,
            checkpoint: 0,
        };
        let estimate = estimate_mlp(&shape).map_err(|e| CollectiveError::Model {
            reason: e.to_string(),
        })?;
        let flops = (estimate.flops_forward + estimate.flops_backward) as f64;
        Ok((0..self.workers)
            .map(|w| {
                let slow = self
                    .straggler
                    .filter(|s| s.worker == w)
                    .map_or(1.0, |s| s.slowdown);
                flops * slow / self.flops_per_s
            })
            .collect())
    }
}

/// The collective's time on the virtual clock: the algorithm's all-reduce
/// of `element_bytes` values, of 2-byte values for fp16 and bf16, or top-k's
/// all-gather of k (index, value) pairs from every worker.
fn comm_time(
    settings: &DpSettings,
    schedule: &Schedule,
    element_bytes: u64,
) -> Result<f64, CollectiveError> {
    Ok(match settings.compression {
        Compression::None => simulate(schedule, element_bytes, settings.link).end_s,
        Compression::Fp16 | Compression::Bf16 => simulate(schedule, 2, settings.link).end_s,
        Compression::TopK { fraction, .. } => {
            let n = settings.workers;
            let k = Compression::kept(fraction, schedule.elements);
            let gather = Schedule::new(Algorithm::Ring, Op::AllGather, n, n * 2 * k)?;
            simulate(&gather, 4, settings.link).end_s
        }
    })
}

/// A synchronous data-parallel run in progress, one step at a time (the
/// lesson runs a few per frame; the CLI reports per epoch).
pub struct DpTrainer<T> {
    settings: DpSettings,
    data: Dataset,
    threads: bool,
    replicas: Vec<Mlp<T>>,
    optimizers: Vec<Optimizer<T>>,
    /// Each worker's top-k residual (error feedback).
    residuals: Vec<Vec<T>>,
    schedule: Schedule,
    comm_s: f64,
    compute_s: Vec<f64>,
    batches: Vec<Vec<usize>>,
    pub steps: Vec<DpStep>,
    pub bytes_per_step: u64,
    started: web_time::Instant,
}

impl<T: Real + Element> DpTrainer<T> {
    /// The replicas (one seeded model, copied), their optimizers and the
    /// batches of `settings.steps` steps; the workers compute on threads
    /// when `threads`.
    pub fn new(
        settings: &DpSettings,
        data: &Dataset,
        threads: bool,
    ) -> Result<Self, CollectiveError> {
        settings.check(data)?;
        let sizes = settings.sizes(data);
        let n = settings.workers;
        let model = Mlp::<T>::new(&sizes, settings.activation, settings.seed).map_err(|e| {
            CollectiveError::Model {
                reason: e.to_string(),
            }
        })?;
        let schedule = Schedule::new(
            settings.algorithm,
            Op::AllReduce,
            n,
            model.parameter_count(),
        )?;
        Ok(Self {
            comm_s: comm_time(settings, &schedule, std::mem::size_of::<T>() as u64)?,
            residuals: vec![Vec::new(); n],
            compute_s: settings.compute_times(&sizes)?,
            replicas: vec![model; n],
            optimizers: (0..n)
                .map(|_| Optimizer::new(settings.optimizer, settings.lr, 0.0))
                .collect(),
            batches: batches(
                data.len(),
                n * settings.shard,
                settings.steps,
                settings.seed,
            ),
            schedule,
            settings: settings.clone(),
            data: data.clone(),
            threads,
            steps: Vec::with_capacity(settings.steps),
            bytes_per_step: 0,
            started: web_time::Instant::now(),
        })
    }

    /// Whether every step has run (or the loss stopped being finite).
    pub fn done(&self) -> bool {
        self.steps.len() >= self.batches.len()
            || self.steps.last().is_some_and(|s| !s.loss.is_finite())
    }

    /// Worker 0's model.
    pub fn model(&self) -> &Mlp<T> {
        &self.replicas[0]
    }

    /// Steps per epoch (the global batches that fit, drop-last).
    pub fn steps_per_epoch(&self) -> usize {
        self.data.len() / (self.settings.workers * self.settings.shard)
    }

    /// One synchronous step: every worker's gradient on its shard, the
    /// all-reduce, the mean, each replica's optimizer step.
    pub fn step(&mut self) -> Result<(), CollectiveError> {
        if self.done() {
            return Ok(());
        }
        let n = self.settings.workers;
        let batch = &self.batches[self.steps.len()];
        let shards: Vec<&[usize]> = batch.chunks_exact(self.settings.shard).collect();
        let jobs: Vec<(&Mlp<T>, &[usize])> = self.replicas.iter().zip(shards).collect();
        let results = gradients(&jobs, &self.data, self.threads)?;
        let loss = results.iter().map(|(l, _)| l).sum::<f64>() / n as f64;
        let mut buffers: Vec<Vec<T>> = results.into_iter().map(|(_, g)| g).collect();
        if self.settings.compression == Compression::None {
            if self.schedule.nodes > n {
                buffers.push(vec![T::ZERO; self.schedule.elements]); // the server's
            }
            self.bytes_per_step = run(&self.schedule, &mut buffers)?.total_sent();
        } else {
            let (sums, sent) = compressed_sum(
                self.settings.compression,
                self.settings.algorithm,
                &buffers,
                &mut self.residuals,
            )?;
            self.bytes_per_step = sent;
            buffers = sums;
        }
        let scale = T::from_f64(1.0 / n as f64);
        for ((model, optimizer), summed) in self
            .replicas
            .iter_mut()
            .zip(&mut self.optimizers)
            .zip(&buffers)
        {
            let mean: Vec<T> = summed.iter().map(|g| *g * scale).collect();
            let grads = model.unflatten(&mean);
            optimizer.step(&mut model.params_mut(), &grads);
        }
        self.steps.push(DpStep {
            loss,
            comm_s: self.comm_s,
            step_s: sync_step(&self.compute_s, self.comm_s),
            compute_s: self.compute_s.clone(),
        });
        Ok(())
    }

    /// The run so far, with worker 0's weights and whether every replica
    /// holds the same bits.
    pub fn finish(self) -> DpRun<T> {
        let weights: Vec<Tensor<T>> = self.replicas[0].params().into_iter().cloned().collect();
        let replicas_identical = self
            .replicas
            .iter()
            .all(|r| r.params().into_iter().zip(&weights).all(|(a, b)| a == b));
        DpRun {
            steps: self.steps,
            weights,
            replicas_identical,
            bytes_per_step: self.bytes_per_step,
            threads: self.threads,
            wall_s: self.started.elapsed().as_secs_f64(),
        }
    }
}

/// Trains `settings.workers` replicas synchronously on `data` for
/// `settings.steps` steps, the workers on threads when `threads`.
pub fn train_sync<T: Real + Element>(
    settings: &DpSettings,
    data: &Dataset,
    threads: bool,
) -> Result<DpRun<T>, CollectiveError> {
    let mut trainer = DpTrainer::<T>::new(settings, data, threads)?;
    while !trainer.done() {
        trainer.step()?;
    }
    Ok(trainer.finish())
}

/// The same run on one worker whose batch is the whole global batch: the
/// losses data-parallel training must reproduce.
pub fn train_single<T: Real>(
    settings: &DpSettings,
    data: &Dataset,
) -> Result<(Vec<f64>, Vec<Tensor<T>>), CollectiveError> {
    settings.check(data)?;
    let sizes = settings.sizes(data);
    let mut model = Mlp::<T>::new(&sizes, settings.activation, settings.seed).map_err(|e| {
        CollectiveError::Model {
            reason: e.to_string(),
        }
    })?;
    let mut optimizer = Optimizer::new(settings.optimizer, settings.lr, 0.0);
    let mut losses = Vec::with_capacity(settings.steps);
    for batch in batches(
        data.len(),
        settings.workers * settings.shard,
        settings.steps,
        settings.seed,
    ) {
        let (loss, flat) = gradient(&model, data, &batch);
        let grads = model.unflatten(&flat);
        optimizer.step(&mut model.params_mut(), &grads);
        losses.push(loss);
    }
    Ok((losses, model.params().into_iter().cloned().collect()))
}
