//! `dlsys-lab train --workers N`: synchronous data-parallel training, one
//! line per epoch with the all-reduce's bytes and the virtual clock.

use dlsys_core::names::Named as _;
use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::collective::{Algorithm, Compression, DpSettings, DpTrainer, Link, train_async};
use dlsys_core::memory::{show_bytes, show_seconds};
use dlsys_core::nn::settings::parse_hidden;
use dlsys_core::nn::{Activation, OptimizerKind, data, evaluate};

use super::output::{Report, emit_line, emit_text, line};
use super::{CliError, say, t, tf};

/// The data-parallel part of `train`'s flags.
pub struct DpFlags<'a> {
    pub dataset: &'a str,
    pub hidden: &'a str,
    pub activation: &'a str,
    pub optimizer: &'a str,
    pub lr: f64,
    pub batch: usize,
    pub epochs: u64,
    pub seed: u64,
    pub workers: usize,
    pub algorithm: Algorithm,
    pub asynchronous: bool,
    pub compression: Compression,
    pub alpha_us: f64,
    pub gbps: f64,
    pub gflops: f64,
    pub json: bool,
}

#[derive(serde::Serialize)]
struct Setup {
    dataset: String,
    workers: usize,
    shard: usize,
    global_batch: usize,
    algorithm: &'static str,
    #[serde(skip)]
    kind: Algorithm,
    parameters: usize,
    gradient_bytes: u64,
    steps_per_epoch: usize,
    threads: bool,
}

#[derive(serde::Serialize)]
struct Epoch {
    epoch: u64,
    epochs: u64,
    train_loss: f64,
    test_accuracy: f64,
    /// Bytes all nodes sent in this epoch's all-reduces.
    comm_bytes: u64,
    /// The epoch on the virtual clock: compute, and the all-reduces.
    compute_s: f64,
    comm_s: f64,
}

#[derive(serde::Serialize)]
struct Finished {
    final_test_accuracy: f64,
    replicas_identical: bool,
    /// Real time on this machine, the workers on threads.
    wall_s: f64,
}

pub fn run(f: &DpFlags<'_>) -> Result<ExitCode, CliError> {
    dlsys_core::nn::config::check_epochs(f.epochs).map_err(|e| say(&e))?;
    let whole = data::load(f.dataset, f.seed).map_err(|e| say(&e))?;
    let (train, test) = whole.split(data::TEST_FRACTION, f.seed);
    let hidden = parse_hidden(f.hidden).map_err(|e| say(&e))?;
    let link = Link::new(f.alpha_us, f.gbps).map_err(|e| say(&e))?;
    let per_epoch = train.len() / f.workers.saturating_mul(f.batch).max(1);
    let settings = DpSettings {
        hidden,
        activation: Activation::by_name(f.activation).map_err(|e| say(&e))?,
        optimizer: OptimizerKind::by_name(f.optimizer).map_err(|e| say(&e))?,
        lr: f.lr,
        workers: f.workers,
        shard: f.batch,
        algorithm: f.algorithm,
        steps: per_epoch.saturating_mul(f.epochs as usize),
        seed: f.seed,
        link,
        flops_per_s: f.gflops * 1e9,
        straggler: None,
        compression: f.compression,
    };
    if f.asynchronous {
        return run_async(f, &settings, &whole.name, &train, &test);
    }
    let threads = true;
    let mut trainer = DpTrainer::<f32>::new(&settings, &train, threads).map_err(|e| say(&e))?;
    let parameters = trainer.model().parameter_count();
    if !f.json {
        emit_text(&Setup {
            dataset: whole.name.clone(),
            workers: f.workers,
            shard: f.batch,
            global_batch: f.workers * f.batch,
            algorithm: f.algorithm.id(),
            kind: f.algorithm,
            parameters,
            gradient_bytes: 4 * parameters as u64,
            steps_per_epoch: per_epoch,
            threads,
        })?;
    }
    for epoch in 1..=f.epochs {
        let first = trainer.steps.len();
        for _ in 0..per_epoch {
            trainer.step().map_err(|e| say(&e))?;
        }
        let steps = &trainer.steps[first..];
        let train_loss = steps.iter().map(|s| s.loss).sum::<f64>() / steps.len().max(1) as f64;
        if !train_loss.is_finite() {
            return Err(CliError::from(tf(
                "train.dp_diverged",
                &[("epoch", &epoch)],
            )));
        }
        let compute_s: f64 = steps
            .iter()
            .map(|s| s.compute_s.iter().copied().fold(0.0, f64::max))
            .sum();
        let comm_s: f64 = steps.iter().map(|s| s.comm_s).sum();
        emit_line(
            &Epoch {
                epoch,
                epochs: f.epochs,
                train_loss,
                test_accuracy: evaluate(trainer.model(), &test).1,
                comm_bytes: trainer.bytes_per_step * steps.len() as u64,
                compute_s,
                comm_s,
            },
            f.json,
        )?;
    }
    let final_test_accuracy = evaluate(trainer.model(), &test).1;
    let run = trainer.finish();
    emit_line(
        &Finished {
            final_test_accuracy,
            replicas_identical: run.replicas_identical,
            wall_s: run.wall_s,
        },
        f.json,
    )
}

impl Report for Setup {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let algorithm = self.kind;
        line(
            out,
            "train.dp_setup",
            &[
                ("dataset", &self.dataset),
                ("workers", &self.workers),
                ("shard", &self.shard),
                ("global", &self.global_batch),
                ("algo", &algorithm.name(super::lang())),
                ("parameters", &self.parameters),
                ("bytes", &show_bytes(self.gradient_bytes)),
                ("steps", &self.steps_per_epoch),
                (
                    "threads",
                    &t(if self.threads {
                        "train.dp_threads"
                    } else {
                        "train.dp_one_thread"
                    }),
                ),
            ],
        )
    }
}

impl Report for Epoch {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "train.dp_epoch",
            &[
                ("epoch", &format!("{:>3}", self.epoch)),
                ("epochs", &self.epochs),
                ("train_loss", &format!("{:.4}", self.train_loss)),
                ("test_acc", &format!("{:6.2}", 100.0 * self.test_accuracy)),
                ("bytes", &show_bytes(self.comm_bytes)),
                ("compute", &show_seconds(self.compute_s)),
                ("comm", &show_seconds(self.comm_s)),
            ],
        )
    }
}

impl Report for Finished {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "train.dp_final",
            &[
                (
                    "accuracy",
                    &format!("{:.2}", 100.0 * self.final_test_accuracy),
                ),
                (
                    "identical",
                    &t(if self.replicas_identical {
                        "train.dp_same"
                    } else {
                        "train.dp_differ"
                    }),
                ),
                ("wall", &show_seconds(self.wall_s)),
            ],
        )
    }

    fn ok(&self) -> bool {
        self.replicas_identical
    }
}

/// One epoch of asynchronous SGD: the server's updates in it.
#[derive(serde::Serialize)]
struct AsyncEpoch {
    epoch: u64,
    epochs: u64,
    train_loss: f64,
    updates: usize,
    mean_staleness: f64,
    max_staleness: u64,
    /// Bytes through the server (pushes in, pulls out) in this epoch.
    server_bytes: u64,
    /// When the epoch's last update landed, on the virtual clock.
    virtual_end_s: f64,
}

#[derive(serde::Serialize)]
struct AsyncSetup {
    dataset: String,
    workers: usize,
    batch: usize,
    parameters: usize,
    updates_per_epoch: usize,
    optimizer: String,
    /// Whether the optimizer keeps a momentum (stale gradients add to it).
    momentum: bool,
}

/// `--async`: an epoch is as many server updates as batches of --batch fit
/// the training set; the run is one pass of the virtual clock, reported
/// per epoch, and tested at the end.
fn run_async(
    f: &DpFlags<'_>,
    settings: &DpSettings,
    name: &str,
    train: &dlsys_core::nn::Dataset,
    test: &dlsys_core::nn::Dataset,
) -> Result<ExitCode, CliError> {
    let per_epoch = train.len() / f.batch.max(1);
    let settings = DpSettings {
        steps: per_epoch.saturating_mul(f.epochs as usize),
        ..settings.clone()
    };
    let run = train_async::<f32>(&settings, train, true).map_err(|e| say(&e))?;
    let sizes: Vec<usize> = std::iter::once(train.features)
        .chain(settings.hidden.iter().copied())
        .chain(std::iter::once(train.classes))
        .collect();
    let mut model = dlsys_core::nn::Mlp::<f32>::new(&sizes, settings.activation, settings.seed)
        .map_err(|e| say(&e))?;
    if !f.json {
        emit_text(&AsyncSetup {
            dataset: name.to_owned(),
            workers: f.workers,
            batch: f.batch,
            parameters: model.parameter_count(),
            updates_per_epoch: per_epoch,
            optimizer: f.optimizer.to_owned(),
            momentum: !matches!(settings.optimizer, OptimizerKind::Sgd),
        })?;
    }
    for (epoch, updates) in (1..=f.epochs).zip(run.updates.chunks(per_epoch.max(1))) {
        let count = updates.len().max(1) as f64;
        let train_loss = updates.iter().map(|u| u.loss).sum::<f64>() / count;
        if !train_loss.is_finite() {
            return Err(CliError::from(
                if matches!(settings.optimizer, OptimizerKind::Sgd) {
                    tf("train.dp_diverged", &[("epoch", &epoch)])
                } else {
                    tf(
                        "train.async_diverged",
                        &[("epoch", &epoch), ("optimizer", &f.optimizer)],
                    )
                },
            ));
        }
        emit_line(
            &AsyncEpoch {
                epoch,
                epochs: f.epochs,
                train_loss,
                updates: updates.len(),
                mean_staleness: updates.iter().map(|u| u.staleness as f64).sum::<f64>() / count,
                max_staleness: updates.iter().map(|u| u.staleness).max().unwrap_or(0),
                server_bytes: run.bytes_per_update * updates.len() as u64,
                virtual_end_s: updates.last().map_or(0.0, |u| u.applied_s),
            },
            f.json,
        )?;
    }
    for (p, w) in model.params_mut().into_iter().zip(&run.weights) {
        *p = w.clone();
    }
    emit_line(
        &super::train::Finished {
            final_test_accuracy: evaluate(&model, test).1,
        },
        f.json,
    )
}

impl Report for AsyncSetup {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "train.async_setup",
            &[
                ("dataset", &self.dataset),
                ("workers", &self.workers),
                ("batch", &self.batch),
                ("parameters", &self.parameters),
                ("updates", &self.updates_per_epoch),
            ],
        )?;
        if self.momentum {
            line(
                out,
                "train.async_momentum",
                &[("optimizer", &self.optimizer)],
            )?;
        }
        Ok(())
    }
}

impl Report for AsyncEpoch {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "train.async_epoch",
            &[
                ("epoch", &format!("{:>3}", self.epoch)),
                ("epochs", &self.epochs),
                ("train_loss", &format!("{:.4}", self.train_loss)),
                ("mean", &format!("{:.2}", self.mean_staleness)),
                ("max", &self.max_staleness),
                ("bytes", &show_bytes(self.server_bytes)),
                ("end", &show_seconds(self.virtual_end_s)),
            ],
        )
    }
}
