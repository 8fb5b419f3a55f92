//! `dlsys-lab train --model cnn|transformer`: the layers' models. The CNN
//! trains on MNIST 10k (8,000 / 2,000) one line per epoch, and ends with
//! what the classic BatchNorm bugs would have scored; the transformer
//! trains on the shipped text, a line every 50 steps, and ends with a
//! greedy continuation of a prompt.

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Instant;

use dlsys_core::nn::data;
use dlsys_core::nn::models::cnn_run::{CnnEpoch, CnnEvent, CnnRun, CnnSettings};
use dlsys_core::nn::models::text_run::{TextEvent, TextRun, TextSettings};

use super::CliError;
use super::output::{Report, emit_line, emit_text, line};
use super::tf;
use super::train::{MODELS, TrainArgs};

pub fn run(args: &TrainArgs) -> Result<ExitCode, CliError> {
    if let Some(flag) = args.mlp_only_flags().first() {
        return Err(CliError::from(tf(
            "train.model_only",
            &[("flag", flag), ("model", &MODELS[0])],
        )));
    }
    if args.model == MODELS[1] {
        if args.steps.is_some() {
            return Err(CliError::from(tf(
                "train.model_only",
                &[("flag", &"--steps"), ("model", &MODELS[2])],
            )));
        }
        train_cnn(args)
    } else {
        let flags = [
            ("--dataset", args.dataset.is_some()),
            ("--epochs", args.epochs.is_some()),
            ("--images", args.images.is_some()),
        ];
        super::given::refuse_any(&flags, "train.model_not", &[("model", &MODELS[2])])?;
        train_transformer(args)
    }
}

#[derive(serde::Serialize)]
struct CnnSetup {
    train: usize,
    test: usize,
    parameters: usize,
    batch: usize,
    lr: f64,
}

#[derive(serde::Serialize)]
struct CnnEpochLine {
    #[serde(flatten)]
    epoch: CnnEpoch,
    #[serde(skip)]
    epochs: u64,
    /// Since the start, evaluations included.
    seconds: f64,
}

#[derive(serde::Serialize)]
struct CnnFinished {
    final_test_accuracy: f64,
    /// Evaluated one image at a time with its own statistics (left in training mode).
    batch_statistics_accuracy: f64,
    /// Evaluated with running statistics never updated (mean 0, variance 1).
    initial_statistics_accuracy: f64,
}

/// The CNN on all of MNIST's training images: the lesson's run, longer.
fn train_cnn(args: &TrainArgs) -> Result<ExitCode, CliError> {
    let name = args.dataset.as_deref().unwrap_or("mnist");
    if !name.eq_ignore_ascii_case("mnist") {
        return Err(CliError::from(tf("train.cnn_mnist", &[("dataset", &name)])));
    }
    let defaults = CnnSettings::default();
    let settings = CnnSettings {
        images: args.images,
        epochs: args.epochs.unwrap_or(super::train::CNN_EPOCHS),
        batch: args.batch.unwrap_or(defaults.batch),
        lr: args.lr.unwrap_or(defaults.lr),
        seed: args.seed,
    };
    settings.validate().map_err(|e| super::say(&e))?;
    let (train, test) = data::load_split("mnist", args.seed).map_err(|e| super::say(&e))?;
    let mut run = CnnRun::new(settings, train, test).map_err(|e| super::say(&e))?;
    if !args.json {
        emit_text(&CnnSetup {
            train: run.images(),
            test: run.test_len(),
            parameters: run.model().parameter_count(),
            batch: settings.batch,
            lr: settings.lr,
        })?;
    }
    let started = Instant::now();
    loop {
        match run.step().map_err(|e| super::say(&e))? {
            None => {}
            Some(CnnEvent::Epoch(epoch)) => {
                let line = CnnEpochLine {
                    epoch,
                    epochs: settings.epochs,
                    seconds: started.elapsed().as_secs_f64(),
                };
                emit_line(&line, args.json)?;
            }
            Some(CnnEvent::Finished(result)) => {
                emit_line(
                    &CnnFinished {
                        final_test_accuracy: result.accuracy[0],
                        batch_statistics_accuracy: result.accuracy[1],
                        initial_statistics_accuracy: result.accuracy[2],
                    },
                    args.json,
                )?;
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
}

#[derive(serde::Serialize)]
struct TextSetup {
    characters: usize,
    vocab: usize,
    parameters: usize,
    ln_vocab: f64,
}

#[derive(serde::Serialize)]
struct TextStep {
    step: u64,
    #[serde(skip)]
    steps: u64,
    train_loss: f64,
    held_out_loss: f64,
    seconds: f64,
}

#[derive(serde::Serialize)]
struct TextFinished {
    final_loss: f64,
    prompt: String,
    continuation: String,
}

/// The transformer on the shipped text: the lesson's run, longer.
fn train_transformer(args: &TrainArgs) -> Result<ExitCode, CliError> {
    let defaults = TextSettings::default();
    let settings = TextSettings {
        steps: args.steps.unwrap_or(super::train::TEXT_STEPS),
        batch: args.batch.unwrap_or(defaults.batch),
        lr: args.lr.unwrap_or(defaults.lr),
        seed: args.seed,
        ..defaults
    };
    let mut run = TextRun::new(settings).map_err(|e| super::say(&e))?;
    let config = run.model().config;
    if !args.json {
        emit_text(&TextSetup {
            characters: run.corpus().ids.len(),
            vocab: config.vocab,
            parameters: run.model().parameter_count(),
            ln_vocab: (config.vocab as f64).ln(),
        })?;
    }
    let line = |step, train_loss, held_out_loss, seconds| TextStep {
        step,
        steps: settings.steps,
        train_loss,
        held_out_loss,
        seconds,
    };
    emit_line(
        &line(0, run.start_loss(), run.held_out_loss(), 0.0),
        args.json,
    )?;
    let started = Instant::now();
    loop {
        match run.step().map_err(|e| super::say(&e))? {
            None => {}
            Some(TextEvent::Report(r)) => {
                let seconds = started.elapsed().as_secs_f64();
                emit_line(
                    &line(r.step, r.train_loss, r.held_out_loss, seconds),
                    args.json,
                )?;
            }
            Some(TextEvent::Finished(result)) => {
                let (r, seconds) = (result.report, started.elapsed().as_secs_f64());
                emit_line(
                    &line(r.step, r.train_loss, r.held_out_loss, seconds),
                    args.json,
                )?;
                emit_line(
                    &TextFinished {
                        final_loss: result.held_out_loss,
                        prompt: result.prompt,
                        continuation: result.continuation,
                    },
                    args.json,
                )?;
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
}

impl Report for CnnSetup {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "train.cnn_setup",
            &[
                ("train", &self.train),
                ("test", &self.test),
                ("parameters", &self.parameters),
                ("batch", &self.batch),
                ("lr", &self.lr),
            ],
        )
    }
}

impl Report for CnnEpochLine {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let e = &self.epoch;
        let line = tf(
            "train.epoch",
            &[
                ("epoch", &format!("{:>3}", e.epoch)),
                ("epochs", &self.epochs),
                ("train_loss", &format!("{:.4}", e.train_loss)),
                ("train_acc", &format!("{:6.2}", 100.0 * e.train_accuracy)),
                ("test_loss", &format!("{:.4}", e.test_loss)),
                ("test_acc", &format!("{:6.2}", 100.0 * e.test_accuracy)),
            ],
        );
        let time = tf(
            "train.elapsed",
            &[("seconds", &format!("{:.1}", self.seconds))],
        );
        writeln!(out, "{line}  {time}")
    }
}

impl Report for CnnFinished {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let pct = |v: f64| format!("{:.2}", 100.0 * v);
        line(
            out,
            "train.final",
            &[("accuracy", &pct(self.final_test_accuracy))],
        )?;
        line(
            out,
            "train.cnn_bugs",
            &[
                ("batch", &pct(self.batch_statistics_accuracy)),
                ("initial", &pct(self.initial_statistics_accuracy)),
            ],
        )
    }
}

impl Report for TextSetup {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "train.text_setup",
            &[
                ("characters", &self.characters),
                ("vocab", &self.vocab),
                ("parameters", &self.parameters),
                ("ln_vocab", &format!("{:.3}", self.ln_vocab)),
            ],
        )
    }
}

impl Report for TextStep {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "train.text_step",
            &[
                ("step", &format!("{:>5}", self.step)),
                ("steps", &self.steps),
                ("train_loss", &format!("{:.3}", self.train_loss)),
                ("held_out", &format!("{:.3}", self.held_out_loss)),
                ("seconds", &format!("{:.1}", self.seconds)),
            ],
        )
    }
}

impl Report for TextFinished {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "train.text_final",
            &[
                ("loss", &format!("{:.3}", self.final_loss)),
                ("prompt", &self.prompt),
                ("continuation", &self.continuation),
            ],
        )
    }
}
