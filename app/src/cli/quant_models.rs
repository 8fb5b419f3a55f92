//! `dlsys-lab quant --model cnn|transformer`: the engine's CNN (on MNIST)
//! or char transformer trained by its own run, its weight matrices
//! quantised (weight-only) and the model measured again — test accuracy,
//! or held-out loss in nats per character — with the bytes, the weights'
//! error and, with `--grid`, the whole weight-only table.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::float::show_sig;
use dlsys_core::names::Named as _;
use dlsys_core::nn::models::cnn_run::CnnSettings;
use dlsys_core::nn::models::text_run::TextSettings;
use dlsys_core::quant::models::{self, JobPhase, Measured, Metric, ModelCell, ModelJob, ModelRun};
use dlsys_core::quant::ptq::{ActScales, GranularityKind};
use dlsys_core::quant::{Calibration, Mapping, QuantError, QuantSettings};

use super::output::{Report, emit, line};
use super::quant::{QuantArgs, bytes_line, error_line, fail, pct, scheme_line};
use super::{CliError, lang, t, tf};

/// Quantises the CNN or the transformer as `args` asks; the MLP-only
/// options are refused by name.
pub fn run(
    args: &QuantArgs,
    settings: &QuantSettings,
    kind: GranularityKind,
) -> Result<ExitCode, CliError> {
    let mlp_only = [
        ("--static-activations", args.static_activations),
        ("--outlier", args.outlier.is_some()),
        ("--qat", args.qat.is_some()),
        ("--fp8-train", args.fp8_train),
        ("--mx", args.mx),
        ("--dataset", args.dataset.is_some()),
        ("--hidden", args.hidden.is_some()),
        ("--qat-lr", args.qat_lr.is_some()),
    ];
    // Each model's own training length.
    let cnn = args.model == "cnn";
    let elsewhere = [
        ("--images", !cnn && args.images.is_some()),
        ("--epochs", !cnn && args.epochs.is_some()),
        ("--steps", cnn && args.steps.is_some()),
    ];
    let model: [(&str, &dyn std::fmt::Display); 1] = [("model", &args.model)];
    super::given::refuse_any(&elsewhere, "quant.not_for_model", &model)?;
    super::given::refuse_any(&mlp_only, "quant.mlp_only", &model)?;
    let run = if args.model == "cnn" {
        let defaults = CnnSettings::default();
        ModelRun::Cnn(CnnSettings {
            images: args.images.or(defaults.images),
            epochs: args.epochs.unwrap_or(defaults.epochs),
            seed: args.seed,
            ..defaults
        })
    } else {
        ModelRun::Transformer(TextSettings {
            steps: args.steps.unwrap_or(TextSettings::default().steps),
            seed: args.seed,
            ..TextSettings::default()
        })
    };
    let job = ModelJob::new(
        &run,
        None,
        args.grid.then_some(args.group),
        settings.calibration,
    )
    .map_err(|e| fail(&e))?;
    // A line per tenth of training and per cell, on stderr.
    let mut shown = None;
    let job = models::run_to_end(job, &mut |phase| {
        let line = match phase {
            JobPhase::Training { step, steps } => {
                let tenth = (steps / 10).max(1);
                (step % tenth == 0 && step > 0)
                    .then(|| tf("quant.models.progress", &[("step", &step), ("of", &steps)]))
            }
            JobPhase::Measuring { done, total } => Some(tf(
                "quant.models.measuring",
                &[("done", &(done + 1)), ("total", &total)],
            )),
            JobPhase::Done => None,
        };
        if let Some(line) = line
            && shown.as_ref() != Some(&line)
        {
            eprintln!("{line}");
            shown = Some(line);
        }
        true
    })
    .map_err(|e| fail(&e))?
    .ok_or_else(|| fail(&QuantError::Empty))?;
    let trained = job.trained().ok_or_else(|| fail(&QuantError::Empty))?;
    let measured = trained
        .measure_with(settings, kind, args.activations.then_some(8))
        .map_err(|e| fail(&e))?;
    let grid = args.grid.then(|| job.cells().to_vec());
    let report = ModelsReport {
        run,
        metric: trained.metric(),
        format: settings.format.name(),
        mapping: settings.mapping,
        granularity: kind,
        calibration: settings.calibration,
        fp32: trained.fp32,
        int8_activations: args.activations,
        measured,
        grid,
    };
    emit(&report, args.json)
}

/// The activations in words: fp32, or int8 per tensor and dynamic.
fn acts(int8: bool) -> String {
    if int8 {
        tf(
            "quant.model.acts_int8",
            &[("how", &ActScales::PerTensor.name(lang()))],
        )
    } else {
        t("quant.model.acts_fp32").to_owned()
    }
}

#[derive(serde::Serialize)]
struct ModelsReport {
    run: ModelRun,
    metric: Metric,
    format: String,
    mapping: Mapping,
    granularity: GranularityKind,
    calibration: Calibration,
    /// The fp32 model's accuracy (0–1) or loss (nats per character).
    fp32: f64,
    /// Every GEMM's input int8 too, per tensor and dynamic (W8A8).
    int8_activations: bool,
    measured: Measured,
    #[serde(skip_serializing_if = "Option::is_none")]
    grid: Option<Vec<ModelCell>>,
}

impl ModelsReport {
    /// A figure in the metric's unit, and a change in it.
    fn figure(&self, value: f64) -> String {
        match self.metric {
            Metric::Accuracy => pct(value),
            Metric::Loss => format!("{value:.4}"),
        }
    }

    fn change(&self, delta: f64) -> String {
        match self.metric {
            Metric::Accuracy => format!("{:+.2}", 100.0 * delta),
            Metric::Loss => format!("{delta:+.4}"),
        }
    }
}

impl Report for ModelsReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let setup = match self.run {
            ModelRun::Cnn(s) => tf(
                "quant.models.cnn_setup",
                &[
                    (
                        "images",
                        &s.images.map_or_else(
                            || t("quant.models.all_images").to_owned(),
                            |n| n.to_string(),
                        ),
                    ),
                    ("epochs", &s.epochs),
                    ("seed", &s.seed),
                ],
            ),
            ModelRun::Transformer(s) => tf(
                "quant.models.text_setup",
                &[("steps", &s.steps), ("seed", &s.seed)],
            ),
        };
        writeln!(out, "{setup}")?;
        let scheme = scheme_line(
            &self.format,
            self.mapping,
            self.granularity,
            self.calibration,
            &acts(self.int8_activations),
        );
        writeln!(out, "{scheme}")?;
        let key = match self.metric {
            Metric::Accuracy => "quant.model.accuracy",
            Metric::Loss => "quant.models.loss",
        };
        let m = &self.measured;
        line(
            out,
            key,
            &[
                ("before", &self.figure(self.fp32)),
                ("after", &self.figure(m.value)),
                ("delta", &self.change(m.delta)),
            ],
        )?;
        writeln!(out, "{}", error_line(&m.weight_error))?;
        writeln!(out, "{}", bytes_line(&m.bytes))?;
        if let Some(cells) = &self.grid {
            writeln!(out, "{}", t("quant.models.grid_heading"))?;
            for c in cells {
                line(
                    out,
                    "quant.models.grid_row",
                    &[
                        ("bits", &c.bits),
                        ("granularity", &c.granularity.words().say(lang())),
                        ("acts", &acts(c.int8_activations)),
                        ("value", &self.figure(c.measured.value)),
                        ("delta", &self.change(c.measured.delta)),
                        ("rms", &show_sig(c.measured.weight_error.rms_error, 3)),
                    ],
                )?;
            }
        }
        Ok(())
    }
}
