//! `dlsys-lab train`: an MLP, one line per epoch (`--model cnn` and
//! `--model transformer` are in `train_models.rs`).

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::collective::{Algorithm, Compression};
use dlsys_core::mixed::MasterWeights;
use dlsys_core::nn::scenarios::Scenario;
use dlsys_core::nn::settings::RunSettings;
use dlsys_core::nn::{Activation, EpochStats, OptimizerKind, Status, TrainConfig, Trainer, data};

use super::CliError;
use super::choice::{choice, name_of};
use super::output::{Report, emit_line, emit_text, line};
use super::tf;

#[derive(Clone, Debug, clap::Args)]
pub struct TrainArgs {
    #[arg(long, default_value = MODELS[0], value_parser = name_of(&MODELS, |m| *m))]
    pub(super) model: String,
    #[arg(
        long,
        ignore_case = true,
        value_parser = name_of(&data::NAMES, |n| *n),
    )]
    pub(super) dataset: Option<String>,
    #[arg(long, default_value = "128")]
    hidden: String,
    #[arg(
        long,
        default_value = Activation::Relu.name(),
        ignore_case = true,
        value_parser = name_of(&Activation::ALL, |a| a.name()),
    )]
    activation: String,
    #[arg(
        long,
        default_value = "momentum",
        ignore_case = true,
        value_parser = name_of(&OptimizerKind::NAMES, |o| *o),
    )]
    optimizer: String,
    #[arg(long, allow_hyphen_values = true)]
    pub(super) lr: Option<f64>,
    #[arg(long)]
    pub(super) batch: Option<usize>,
    #[arg(long)]
    pub(super) epochs: Option<u64>,
    #[arg(long)]
    pub(super) steps: Option<u64>,
    #[arg(long)]
    pub(super) images: Option<usize>,
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    #[arg(long, default_value = "fp32", value_name = "F")]
    precision: String,
    #[arg(
        long,
        default_value = "none",
        value_name = "S",
        allow_hyphen_values = true
    )]
    loss_scale: String,
    #[arg(
        long,
        default_value = master_weights_id(&MasterWeights::Fp32),
        value_parser = name_of(&MASTER_WEIGHTS, master_weights_id),
    )]
    master_weights: String,
    #[arg(long, default_value = "fp32", value_name = "F")]
    optimizer_state: String,
    #[arg(long, default_value = "fp32", value_name = "F")]
    accumulate_in: String,
    #[arg(long, default_value_t = 1)]
    micro_batches: u32,
    #[arg(
        long,
        default_value = "1",
        value_name = "W",
        allow_hyphen_values = true
    )]
    loss_weight: String,
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=16))]
    workers: u64,
    #[arg(long = "async")]
    asynchronous: bool,
    #[arg(long, value_parser = choice(&Algorithm::ALL, |a| a.id()))]
    allreduce: Option<Algorithm>,
    #[arg(long, value_name = "HOW")]
    compress: Option<String>,
    #[arg(long)]
    alpha_us: Option<f64>,
    #[arg(long)]
    gbps: Option<f64>,
    #[arg(long)]
    gflops: Option<f64>,
    #[arg(long, value_parser = name_of(&Scenario::ALL, |s| s.id()))]
    scenario: Option<String>,
    #[arg(long)]
    pub json: bool,
}

/// The MLP's defaults where a flag is not given (the CNN's and the
/// transformer's are their settings' defaults).
const MLP_LR: f64 = 0.05;
const MLP_BATCH: usize = 64;
const MLP_EPOCHS: u64 = 10;
pub(super) const CNN_EPOCHS: u64 = 3;
pub(super) const TEXT_STEPS: u64 = 1000;
/// The virtual clock's defaults for data-parallel training.
const ALPHA_US: f64 = 5.0;
const GBPS: f64 = 25.0;
const GFLOPS: f64 = 1000.0;

/// The figures `train --help` names.
pub(super) fn help_values() -> Vec<(&'static str, String)> {
    use dlsys_core::nn::models::{cnn_run::CnnSettings, text_run::TextSettings};
    let (cnn, text) = (CnnSettings::default(), TextSettings::default());
    vec![
        ("mlp_lr", MLP_LR.to_string()),
        ("cnn_lr", cnn.lr.to_string()),
        ("text_lr", text.lr.to_string()),
        ("mlp_batch", MLP_BATCH.to_string()),
        ("cnn_batch", cnn.batch.to_string()),
        ("text_batch", text.batch.to_string()),
        ("mlp_epochs", MLP_EPOCHS.to_string()),
        ("cnn_epochs", CNN_EPOCHS.to_string()),
        ("text_steps", TEXT_STEPS.to_string()),
        ("dp_min", dlsys_core::collective::MIN_WORKERS.to_string()),
        ("dp_max", dlsys_core::collective::MAX_WORKERS.to_string()),
        ("alpha", ALPHA_US.to_string()),
        ("gbps", GBPS.to_string()),
        ("gflops", GFLOPS.to_string()),
    ]
}

const MASTER_WEIGHTS: [MasterWeights; 2] = [MasterWeights::Fp32, MasterWeights::Same];

/// The models `--model` names.
pub(super) const MODELS: [&str; 3] = ["mlp", "cnn", "transformer"];

fn master_weights_id(master: &MasterWeights) -> &'static str {
    match master {
        MasterWeights::Fp32 => "fp32",
        MasterWeights::Same => "same",
    }
}

impl TrainArgs {
    fn mlp_dataset(&self) -> &str {
        self.dataset.as_deref().unwrap_or("digits")
    }

    fn mlp_lr(&self) -> f64 {
        self.lr.unwrap_or(MLP_LR)
    }

    fn mlp_batch(&self) -> usize {
        self.batch.unwrap_or(MLP_BATCH)
    }

    fn mlp_epochs(&self) -> u64 {
        self.epochs.unwrap_or(MLP_EPOCHS)
    }

    /// The precision policy's flags, each with whether it was given a
    /// value other than plain fp32 steps (data-parallel training takes none).
    fn policy_flags(&self) -> [(&'static str, bool); 8] {
        [
            ("--precision", self.precision != "fp32"),
            ("--loss-scale", self.loss_scale != "none"),
            ("--master-weights", self.master_weights != "fp32"),
            ("--optimizer-state", self.optimizer_state != "fp32"),
            ("--accumulate-in", self.accumulate_in != "fp32"),
            ("--micro-batches", self.micro_batches != 1),
            ("--loss-weight", self.loss_weight != "1"),
            ("--scenario", self.scenario.is_some()),
        ]
    }

    /// The MLP-only flags given a value other than their default, by name.
    pub(super) fn mlp_only_flags(&self) -> Vec<&'static str> {
        let mut flags = vec![
            ("--hidden", self.hidden != "128"),
            ("--activation", self.activation != Activation::Relu.name()),
            ("--optimizer", self.optimizer != "momentum"),
            ("--workers", self.workers != 1),
            ("--allreduce", self.allreduce.is_some()),
            ("--compress", self.compress.is_some()),
            ("--async", self.asynchronous),
        ];
        flags.extend(self.policy_flags());
        super::given::given(&flags)
    }

    /// The data set and configuration these arguments ask for: the flags
    /// become the core's `RunSettings`, which the lesson fills too.
    fn config(&self) -> Result<(String, TrainConfig), String> {
        RunSettings {
            dataset: self.mlp_dataset().to_owned(),
            hidden: self.hidden.clone(),
            activation: self.activation.clone(),
            optimizer: self.optimizer.clone(),
            lr: self.mlp_lr(),
            batch: self.mlp_batch(),
            epochs: self.mlp_epochs(),
            seed: self.seed,
            precision: self.precision.clone(),
            loss_scale: self.loss_scale.clone(),
            master_weights: self.master_weights.clone(),
            optimizer_state: self.optimizer_state.clone(),
            accumulate_in: self.accumulate_in.clone(),
            micro_batches: self.micro_batches,
            loss_weight: self.loss_weight.clone(),
            scenario: self.scenario.clone(),
        }
        .config()
        .map_err(|e| super::say(&e))
    }
}

/// What is trained on, printed before the epochs (text only: the JSON
/// stream is one line per epoch and a final line).
#[derive(serde::Serialize)]
struct Setup {
    /// The precision policy, when it is not plain fp32.
    policy: Option<String>,
    dataset: String,
    train: usize,
    test: usize,
    features: usize,
    classes: usize,
    parameters: usize,
}

/// One epoch: JSON, the trainer's own numbers.
#[derive(serde::Serialize)]
#[serde(transparent)]
struct Epoch<'a> {
    stats: &'a EpochStats,
    #[serde(skip)]
    epochs: u64,
}

/// The last line of a run: also data-parallel `--async`'s.
#[derive(serde::Serialize)]
pub(super) struct Finished {
    pub(super) final_test_accuracy: f64,
}

pub fn run(args: &TrainArgs) -> Result<ExitCode, CliError> {
    if args.model != MODELS[0] {
        return super::train_models::run(args);
    }
    for (flag, given, model) in [
        ("--steps", args.steps.is_some(), MODELS[2]),
        ("--images", args.images.is_some(), MODELS[1]),
    ] {
        if given {
            return Err(CliError::from(tf(
                "train.model_only",
                &[("flag", &flag), ("model", &model)],
            )));
        }
    }
    if args.workers > 1 {
        return args.data_parallel();
    }
    let dp_only = [
        ("--allreduce", args.allreduce.is_some()),
        ("--compress", args.compress.is_some()),
        ("--async", args.asynchronous),
        ("--alpha-us", args.alpha_us.is_some()),
        ("--gbps", args.gbps.is_some()),
        ("--gflops", args.gflops.is_some()),
    ];
    super::given::refuse_any(&dp_only, "train.dp_needs_workers", &[])?;
    let (dataset, config) = args.config()?;
    train(&dataset, config, args.json)
}

impl TrainArgs {
    /// `--workers N`: the data-parallel path, which trains in fp32 with
    /// plain steps; the flags it does not take are refused by name.
    fn data_parallel(&self) -> Result<ExitCode, CliError> {
        super::given::refuse_any(&self.policy_flags(), "train.dp_unsupported", &[])?;
        if self.asynchronous && self.allreduce.is_some() {
            return Err(CliError::from(super::t("train.async_allreduce")));
        }
        if self.asynchronous && self.compress.is_some() {
            return Err(CliError::from(super::t("train.async_compress")));
        }
        let compression = match &self.compress {
            None => Compression::None,
            Some(text) => Compression::parse(text)
                .ok_or_else(|| CliError::from(tf("train.compress_bad", &[("value", text)])))?,
        };
        super::train_dp::run(&super::train_dp::DpFlags {
            dataset: self.mlp_dataset(),
            hidden: &self.hidden,
            activation: &self.activation,
            optimizer: &self.optimizer,
            lr: self.mlp_lr(),
            batch: self.mlp_batch(),
            epochs: self.mlp_epochs(),
            seed: self.seed,
            workers: self.workers as usize,
            algorithm: self.allreduce.unwrap_or(Algorithm::Ring),
            asynchronous: self.asynchronous,
            compression,
            alpha_us: self.alpha_us.unwrap_or(ALPHA_US),
            gbps: self.gbps.unwrap_or(GBPS),
            gflops: self.gflops.unwrap_or(GFLOPS),
            json: self.json,
        })
    }
}

fn train(dataset: &str, config: TrainConfig, json: bool) -> Result<ExitCode, CliError> {
    let data = data::load(dataset, config.seed).map_err(|e| super::say(&e))?;
    let (train_set, test_set) = data.split(data::TEST_FRACTION, config.seed);
    let epochs = config.epochs;
    let mut trainer = Trainer::new(config, train_set, test_set).map_err(|e| super::say(&e))?;
    if !json {
        emit_text(&Setup {
            policy: (!trainer.config.policy.is_fp32())
                .then(|| dlsys_core::names::Named::name(&trainer.config.policy, super::lang())),
            dataset: data.name.clone(),
            train: trainer.train.len(),
            test: trainer.test.len(),
            features: data.features,
            classes: data.classes,
            parameters: trainer.model.parameter_count(),
        })?;
    }
    let mut reported = 0;
    while trainer.status == Status::Running {
        trainer.step();
        for stats in &trainer.history[reported..] {
            emit_line(&Epoch { stats, epochs }, json)?;
        }
        reported = trainer.history.len();
    }
    match &trainer.status {
        Status::Diverged { epoch, step, loss } => Err(CliError::from(super::say(
            &trainer.config.divergence(*epoch, *step, *loss),
        ))),
        _ => {
            let final_test_accuracy = trainer.history.last().map_or(f64::NAN, |s| s.test_accuracy);
            emit_line(
                &Finished {
                    final_test_accuracy,
                },
                json,
            )
        }
    }
}

impl Report for Setup {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        if let Some(policy) = &self.policy {
            line(out, "train.policy", &[("policy", policy)])?;
        }
        line(
            out,
            "train.setup",
            &[
                ("dataset", &self.dataset),
                ("train", &self.train),
                ("test", &self.test),
                ("features", &self.features),
                ("classes", &self.classes),
                ("parameters", &self.parameters),
            ],
        )
    }
}

impl Report for Epoch<'_> {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let stats = self.stats;
        let mixed = stats.mixed.as_ref().map_or(String::new(), |m| {
            tf(
                "train.mixed",
                &[
                    ("scale", &m.loss_scale),
                    ("skipped", &m.skipped_steps),
                    (
                        "underflowed",
                        &format!("{:.2}", 100.0 * m.underflow_fraction),
                    ),
                    ("overflows", &m.accumulation_overflows),
                ],
            )
        });
        let line = tf(
            "train.epoch",
            &[
                ("epoch", &format!("{:>3}", stats.epoch)),
                ("epochs", &self.epochs),
                ("train_loss", &format!("{:.4}", stats.train_loss)),
                (
                    "train_acc",
                    &format!("{:6.2}", 100.0 * stats.train_accuracy),
                ),
                ("test_loss", &format!("{:.4}", stats.test_loss)),
                ("test_acc", &format!("{:6.2}", 100.0 * stats.test_accuracy)),
            ],
        );
        writeln!(out, "{line}{mixed}")
    }
}

impl Report for Finished {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let accuracy = format!("{:.2}", 100.0 * self.final_test_accuracy);
        line(out, "train.final", &[("accuracy", &accuracy)])
    }
}
