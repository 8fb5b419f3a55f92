//! `dlsys-lab train --model cnn|transformer`: the layers' models. The CNN
//! trains on MNIST 10k (8,000 / 2,000) one line per epoch, and ends with
//! what the classic BatchNorm bugs would have scored; the transformer
//! trains on the shipped text, a line every 50 steps, and ends with a
//! greedy continuation of a prompt.

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Instant;

use dlsys_core::nn::models::char_model::{self, CharModel, Corpus};
use dlsys_core::nn::models::cnn::{self, BnStats, Cnn};
use dlsys_core::nn::{DataLoader, data};

use super::CliError;
use super::output::{Report, emit_line, emit_text};
use super::tf;
use super::train::{MODELS, TrainArgs};

/// Evaluation batches.
const EVAL_BATCH: usize = 250;
/// The bug of evaluating in training mode, one image at a time: each image
/// normalised by its own statistics.
const TRAINING_MODE_BATCH: usize = 1;

pub fn run(args: &TrainArgs) -> Result<ExitCode, CliError> {
    if let Some(flag) = args.mlp_only_flags().first() {
        return Err(CliError::from(tf(
            "train.model_only",
            &[("flag", flag), ("model", &MODELS[0])],
        )));
    }
    let positive = [
        ("--lr", args.lr.is_some_and(|v| !(v.is_finite() && v > 0.0))),
        ("--batch", args.batch == Some(0)),
        ("--epochs", args.epochs == Some(0)),
        ("--steps", args.steps == Some(0)),
    ];
    if let Some((flag, _)) = positive.iter().find(|(_, bad)| *bad) {
        return Err(CliError::from(tf("train.positive", &[("flag", flag)])));
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
        ];
        if let Some((flag, _)) = flags.iter().find(|(_, given)| *given) {
            return Err(CliError::from(tf(
                "train.model_not",
                &[("flag", flag), ("model", &MODELS[2])],
            )));
        }
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
struct CnnEpoch {
    epoch: u64,
    #[serde(skip)]
    epochs: u64,
    train_loss: f64,
    train_accuracy: f64,
    test_loss: f64,
    test_accuracy: f64,
    /// The epoch's training steps alone.
    train_seconds: f64,
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

fn train_cnn(args: &TrainArgs) -> Result<ExitCode, CliError> {
    let name = args.dataset.as_deref().unwrap_or("mnist");
    if !name.eq_ignore_ascii_case("mnist") {
        return Err(CliError::from(tf("train.cnn_mnist", &[("dataset", &name)])));
    }
    let (train, test) = data::load_split("mnist", args.seed).map_err(|e| super::say(&e))?;
    let (lr, batch, epochs) = (
        args.lr.unwrap_or(3e-3),
        args.batch.unwrap_or(16),
        args.epochs.unwrap_or(3),
    );
    let mut model = Cnn::new(args.seed);
    let mut optimizer = cnn::optimizer(lr);
    if !args.json {
        emit_text(&CnnSetup {
            train: train.len(),
            test: test.len(),
            parameters: model.parameter_count(),
            batch,
            lr,
        })?;
    }
    let loader = DataLoader {
        len: train.len(),
        batch_size: batch,
        shuffle: true,
        drop_last: false,
        seed: args.seed,
    };
    let started = Instant::now();
    let mut last = f64::NAN;
    // The learning rate follows a cosine from --lr down to 0 over the run.
    let total = epochs * train.len().div_ceil(batch) as u64;
    let mut step_number = 0;
    for epoch in 1..=epochs {
        let (mut loss, mut correct) = (0.0, 0);
        let epoch_started = Instant::now();
        for indices in loader.batches(epoch) {
            optimizer.lr = cnn::cosine_lr(lr, step_number, total);
            step_number += 1;
            let (x, y) = train.gather(&indices);
            let step = model.train_step(&mut optimizer, &x, &y);
            if !step.loss.is_finite() {
                return Err(CliError::from(tf(
                    "train.dp_diverged",
                    &[("epoch", &epoch)],
                )));
            }
            loss += f64::from(step.loss) * y.len() as f64;
            correct += step.correct;
        }
        let train_seconds = epoch_started.elapsed().as_secs_f64();
        let (test_loss, test_accuracy) = model.evaluate(&test, BnStats::Running, EVAL_BATCH);
        last = test_accuracy;
        emit_line(
            &CnnEpoch {
                epoch,
                epochs,
                train_loss: loss / train.len() as f64,
                train_accuracy: correct as f64 / train.len() as f64,
                test_loss,
                test_accuracy,
                train_seconds,
                seconds: started.elapsed().as_secs_f64(),
            },
            args.json,
        )?;
    }
    emit_line(
        &CnnFinished {
            final_test_accuracy: last,
            batch_statistics_accuracy: model.accuracy(&test, BnStats::Batch, TRAINING_MODE_BATCH),
            initial_statistics_accuracy: model.accuracy(&test, BnStats::Initial, EVAL_BATCH),
        },
        args.json,
    )?;
    Ok(ExitCode::SUCCESS)
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

/// Windows of the held-out text scored at every report: fixed, so the
/// numbers compare.
const HELD_OUT: usize = 32;
/// The share of the text held out.
const HELD_OUT_FRACTION: f64 = 0.1;

fn train_transformer(args: &TrainArgs) -> Result<ExitCode, CliError> {
    let corpus = Corpus::shipped();
    let config = char_model::shipped_config(&corpus);
    let (lr, batch, steps) = (
        args.lr.unwrap_or(1e-2),
        args.batch.unwrap_or(8),
        args.steps.unwrap_or(1000),
    );
    let mut model = CharModel::new(config, args.seed);
    let mut optimizer = char_model::optimizer(lr);
    if !args.json {
        emit_text(&TextSetup {
            characters: corpus.ids.len(),
            vocab: config.vocab,
            parameters: model.parameter_count(),
            ln_vocab: (config.vocab as f64).ln(),
        })?;
    }
    // The last tenth of the text is never trained on.
    let (train, held) = corpus.split(HELD_OUT_FRACTION);
    let held_out = held.windows(HELD_OUT, config.context, args.seed ^ 0x5eed);
    let started = Instant::now();
    let mut recent = Vec::new();
    let mut last = f64::from(model.loss(&held_out));
    let probe = train.windows(HELD_OUT, config.context, args.seed ^ 0x9e37);
    emit_line(
        &TextStep {
            step: 0,
            steps,
            train_loss: f64::from(model.loss(&probe)),
            held_out_loss: last,
            seconds: 0.0,
        },
        args.json,
    )?;
    for step in 1..=steps {
        let windows = train.windows(
            batch,
            config.context,
            args.seed.wrapping_mul(1_000_003).wrapping_add(step),
        );
        let loss = model.train_step(&mut optimizer, &windows);
        if !loss.is_finite() {
            return Err(CliError::from(tf(
                "train.text_diverged",
                &[("step", &step)],
            )));
        }
        recent.push(f64::from(loss));
        if step % 50 == 0 || step == steps {
            last = f64::from(model.loss(&held_out));
            emit_line(
                &TextStep {
                    step,
                    steps,
                    train_loss: recent.iter().sum::<f64>() / recent.len() as f64,
                    held_out_loss: last,
                    seconds: started.elapsed().as_secs_f64(),
                },
                args.json,
            )?;
            recent.clear();
        }
    }
    let prompt = "Attention ";
    let ids: Vec<usize> = prompt
        .chars()
        .filter_map(|c| corpus.vocab.binary_search(&c).ok())
        .collect();
    let generated = model.generate(&ids, 80);
    emit_line(
        &TextFinished {
            final_loss: last,
            prompt: prompt.to_owned(),
            continuation: corpus.decode(&generated[ids.len()..]),
        },
        args.json,
    )?;
    Ok(ExitCode::SUCCESS)
}

impl Report for CnnSetup {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let line = tf(
            "train.cnn_setup",
            &[
                ("train", &self.train),
                ("test", &self.test),
                ("parameters", &self.parameters),
                ("batch", &self.batch),
                ("lr", &self.lr),
            ],
        );
        writeln!(out, "{line}")
    }
}

impl Report for CnnEpoch {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let line = tf(
            "train.epoch",
            &[
                ("epoch", &format!("{:>3}", self.epoch)),
                ("epochs", &self.epochs),
                ("train_loss", &format!("{:.4}", self.train_loss)),
                ("train_acc", &format!("{:6.2}", 100.0 * self.train_accuracy)),
                ("test_loss", &format!("{:.4}", self.test_loss)),
                ("test_acc", &format!("{:6.2}", 100.0 * self.test_accuracy)),
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
        writeln!(
            out,
            "{}",
            tf(
                "train.final",
                &[("accuracy", &pct(self.final_test_accuracy))]
            )
        )?;
        let bugs = tf(
            "train.cnn_bugs",
            &[
                ("batch", &pct(self.batch_statistics_accuracy)),
                ("initial", &pct(self.initial_statistics_accuracy)),
            ],
        );
        writeln!(out, "{bugs}")
    }
}

impl Report for TextSetup {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let line = tf(
            "train.text_setup",
            &[
                ("characters", &self.characters),
                ("vocab", &self.vocab),
                ("parameters", &self.parameters),
                ("ln_vocab", &format!("{:.3}", self.ln_vocab)),
            ],
        );
        writeln!(out, "{line}")
    }
}

impl Report for TextStep {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let line = tf(
            "train.text_step",
            &[
                ("step", &format!("{:>5}", self.step)),
                ("steps", &self.steps),
                ("train_loss", &format!("{:.3}", self.train_loss)),
                ("held_out", &format!("{:.3}", self.held_out_loss)),
                ("seconds", &format!("{:.1}", self.seconds)),
            ],
        );
        writeln!(out, "{line}")
    }
}

impl Report for TextFinished {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let line = tf(
            "train.text_final",
            &[
                ("loss", &format!("{:.3}", self.final_loss)),
                ("prompt", &self.prompt),
                ("continuation", &self.continuation),
            ],
        );
        writeln!(out, "{line}")
    }
}
