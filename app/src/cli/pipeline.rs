//! `dlsys-lab pipeline`: the engine's MLP trained through the real input
//! pipeline with 1, 2, 4… loader workers — each stage's mean time, the
//! measured throughput and utilisation, and the model's prediction from
//! the stage times of one worker.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;

use dlsys_core::float::show_sig;
use dlsys_core::memory::show_seconds;
use dlsys_core::nn::data;
use dlsys_core::pipeline::{
    ABOVE_MODEL_TOLERANCE, Costs, MAX_EXTRA_US, MAX_WORKERS, PipelineRun, PipelineSettings,
    StageTimes, above_model, predict, train_through,
};

use super::lang::{pad, pad_left};
use super::output::{Report, emit_line, emit_text, line};
use super::{CliError, say, t, tf};

#[derive(Clone, Debug, clap::Args)]
pub struct PipelineArgs {
    #[arg(long, default_value = "1,2,4", value_delimiter = ',')]
    workers: Vec<usize>,
    #[arg(long, default_value_t = 2)]
    prefetch: usize,
    #[arg(long, default_value_t = 32)]
    batch: usize,
    #[arg(long, default_value_t = 50)]
    batches: usize,
    #[arg(long, default_value_t = 0.0)]
    extra_decode_ms: f64,
    #[arg(long, default_value_t = 0.0)]
    extra_read_ms: f64,
    #[arg(long)]
    no_augment: bool,
    #[arg(long, default_value = "mnist")]
    dataset: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    pub json: bool,
}

/// The figures `pipeline --help` names.
pub(super) fn help_values() -> Vec<(&'static str, String)> {
    vec![
        ("pipeline_workers", MAX_WORKERS.to_string()),
        ("prefetch", dlsys_core::pipeline::MAX_PREFETCH.to_string()),
    ]
}

/// What one worker measured: the model's inputs.
#[derive(serde::Serialize)]
struct Setup {
    dataset: String,
    batch: usize,
    batches: usize,
    prefetch: usize,
    augment: bool,
    extra_decode_ms: f64,
    extra_read_ms: f64,
    cores: usize,
    stage_means_s: StageTimes,
    compute_s: f64,
}

/// One worker count: measured beside predicted.
#[derive(serde::Serialize)]
struct Row {
    workers: usize,
    measured_utilisation: f64,
    predicted_utilisation: f64,
    measured_samples_per_s: f64,
    predicted_samples_per_s: f64,
    bound: &'static str,
    /// (measured − predicted) / predicted samples per second.
    relative_difference: f64,
    /// More than the tolerance above the model, which bounds the rate: the
    /// one-worker stage times were taken on a busier machine.
    above_model: bool,
    wall_s: f64,
    mean_wait_s: f64,
}

fn micros(ms: f64, flag: &str) -> Result<u64, CliError> {
    let us = ms * 1e3;
    if !(us.is_finite() && (0.0..=MAX_EXTRA_US as f64).contains(&us)) {
        return Err(CliError::from(tf(
            "pipeline.bad_extra",
            &[("flag", &flag), ("max", &(MAX_EXTRA_US / 1000))],
        )));
    }
    Ok(us.round() as u64)
}

pub fn run(args: &PipelineArgs) -> Result<ExitCode, CliError> {
    let packed = Arc::new(data::load_packed(&args.dataset).map_err(|e| say(&e))?);
    if let Some(bad) = args
        .workers
        .iter()
        .find(|k| !(1..=MAX_WORKERS).contains(*k))
    {
        return Err(CliError::from(tf(
            "pipeline.bad_workers",
            &[("workers", bad), ("max", &MAX_WORKERS)],
        )));
    }
    let settings = PipelineSettings {
        workers: 1,
        prefetch: args.prefetch,
        batch: args.batch,
        augment: !args.no_augment,
        extra_cpu_us: micros(args.extra_decode_ms, "--extra-decode-ms")?,
        extra_io_us: micros(args.extra_read_ms, "--extra-read-ms")?,
        seed: args.seed,
        threads: true,
        ..PipelineSettings::default()
    };
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let train = |workers: usize| -> Result<PipelineRun, CliError> {
        let s = PipelineSettings {
            workers,
            ..settings.clone()
        };
        train_through(
            packed.clone(),
            &s,
            args.batches,
            Default::default(),
            &mut |_| true,
        )
        .map_err(|e| CliError::from(say(&e)))
    };
    let one = train(1)?;
    let costs: Costs = one.costs();
    let setup = Setup {
        dataset: packed.name.clone(),
        batch: args.batch,
        batches: args.batches,
        prefetch: args.prefetch,
        augment: settings.augment,
        extra_decode_ms: args.extra_decode_ms,
        extra_read_ms: args.extra_read_ms,
        cores,
        stage_means_s: one.mean_times(),
        compute_s: costs.compute_s,
    };
    emit_line(&setup, args.json)?;
    if !args.json {
        emit_text(&Header)?;
    }
    let mut counts = args.workers.clone();
    counts.dedup();
    for k in counts {
        let run = if k == 1 { one.clone() } else { train(k)? };
        let p = predict(costs, k, cores, true);
        let predicted = p.samples_per_s(args.batch);
        let measured = run.samples_per_s();
        let waits: f64 = run.records.iter().map(|r| r.waited_s()).sum();
        emit_line(
            &Row {
                workers: k,
                measured_utilisation: run.utilisation(),
                predicted_utilisation: p.utilisation,
                measured_samples_per_s: measured,
                predicted_samples_per_s: predicted,
                bound: p.bound.key(),
                relative_difference: (measured - predicted) / predicted.max(f64::MIN_POSITIVE),
                above_model: above_model(measured, predicted),
                wall_s: run.wall_s,
                mean_wait_s: waits / run.records.len().max(1) as f64,
            },
            args.json,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

impl Report for Setup {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let on_off = t(if self.augment {
            "pipeline.on"
        } else {
            "pipeline.off"
        });
        line(
            out,
            "pipeline.setup",
            &[
                ("dataset", &self.dataset),
                ("batch", &self.batch),
                ("batches", &self.batches),
                ("prefetch", &self.prefetch),
                ("augment", &on_off),
                ("decode", &self.extra_decode_ms),
                ("read", &self.extra_read_ms),
                ("cores", &self.cores),
            ],
        )?;
        let s = &self.stage_means_s;
        line(
            out,
            "pipeline.stages",
            &[
                ("read", &show_seconds(s.read_s)),
                ("decode", &show_seconds(s.decode_s)),
                ("augment", &show_seconds(s.augment_s)),
                ("extra_cpu", &show_seconds(s.extra_cpu_s)),
                ("extra_io", &show_seconds(s.extra_io_s)),
                ("collate", &show_seconds(s.collate_s)),
                ("compute", &show_seconds(self.compute_s)),
            ],
        )
    }
}

/// The table's column names.
#[derive(serde::Serialize)]
struct Header;

const W: usize = 14;

impl Report for Header {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "{}{}{}{}{}{}",
            pad(t("pipeline.col_workers"), 9),
            pad_left(t("pipeline.col_util"), W),
            pad_left(t("pipeline.col_util_model"), W),
            pad_left(t("pipeline.col_rate"), W),
            pad_left(t("pipeline.col_rate_model"), W),
            pad_left(t("pipeline.col_bound"), W),
        )
    }
}

fn bound_key(bound: &str) -> &'static str {
    match bound {
        "compute" => "pipeline.bound_compute",
        "workers" => "pipeline.bound_workers",
        "cores" => "pipeline.bound_cores",
        _ => "pipeline.bound_serial",
    }
}

impl Report for Row {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let percent = |x: f64| format!("{:.1}%", 100.0 * x);
        writeln!(
            out,
            "{}{}{}{}{}{}  ({})",
            pad(&self.workers.to_string(), 9),
            pad_left(&percent(self.measured_utilisation), W),
            pad_left(&percent(self.predicted_utilisation), W),
            pad_left(&show_sig(self.measured_samples_per_s, 4), W),
            pad_left(&show_sig(self.predicted_samples_per_s, 4), W),
            pad_left(t(bound_key(self.bound)), W),
            tf(
                "pipeline.differs",
                &[("rel", &format!("{:+.1}%", 100.0 * self.relative_difference))]
            ),
        )?;
        if self.above_model {
            writeln!(
                out,
                "  {}",
                tf(
                    "pipeline.above_model",
                    &[(
                        "tolerance",
                        &format!("{:.0}%", 100.0 * ABOVE_MODEL_TOLERANCE)
                    )]
                )
            )?;
        }
        Ok(())
    }
}
