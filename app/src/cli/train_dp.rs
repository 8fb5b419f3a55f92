//! `dlsys-lab train --workers N`: synchronous data-parallel training, one
//! line per epoch with the all-reduce's bytes and the virtual clock.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::collective::{Algorithm, DpSettings, DpTrainer, Link};
use dlsys_core::memory::{show_bytes, show_seconds};
use dlsys_core::nn::settings::parse_hidden;
use dlsys_core::nn::{Activation, OptimizerKind, data, evaluate};

use super::output::{Report, emit_line, emit_text};
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
    };
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
        let algorithm = Algorithm::ALL
            .iter()
            .find(|a| a.id() == self.algorithm)
            .copied()
            .unwrap_or(Algorithm::Ring);
        writeln!(
            out,
            "{}",
            tf(
                "train.dp_setup",
                &[
                    ("dataset", &self.dataset),
                    ("workers", &self.workers),
                    ("shard", &self.shard),
                    ("global", &self.global_batch),
                    (
                        "algo",
                        &dlsys_lessons::data_parallel::algorithm_name(algorithm, super::lang())
                    ),
                    ("parameters", &self.parameters),
                    ("bytes", &show_bytes(self.gradient_bytes)),
                    ("steps", &self.steps_per_epoch),
                    (
                        "threads",
                        &t(if self.threads {
                            "train.dp_threads"
                        } else {
                            "train.dp_one_thread"
                        })
                    ),
                ],
            )
        )
    }
}

impl Report for Epoch {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            tf(
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
        )
    }
}

impl Report for Finished {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "{}",
            tf(
                "train.dp_final",
                &[
                    (
                        "accuracy",
                        &format!("{:.2}", 100.0 * self.final_test_accuracy)
                    ),
                    (
                        "identical",
                        &t(if self.replicas_identical {
                            "train.dp_same"
                        } else {
                            "train.dp_differ"
                        })
                    ),
                    ("wall", &show_seconds(self.wall_s)),
                ],
            )
        )
    }

    fn ok(&self) -> bool {
        self.replicas_identical
    }
}
