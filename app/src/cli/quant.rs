//! `dlsys-lab quant`: one value quantised into a range (`--value 0.37
//! --range -1,1 --bits 8`), or the engine's MLP trained and quantised —
//! accuracy before and after, the weights' bytes and error — with the
//! outlier demonstration (`--outlier`) or the whole table (`--grid`).

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::float::{Rounding, parse_number, show_sig};
use dlsys_core::names::Named as _;
use dlsys_core::nn::models::cnn_run::CnnSettings;
use dlsys_core::nn::models::text_run::TextSettings;
use dlsys_core::quant::mx::MxReport;
use dlsys_core::quant::ptq::{
    self, ActScales, Cell, GranularityKind, OutlierReport, OutlierSettings, PtqSettings,
};
use dlsys_core::quant::qat::{self, QatReport, QatSettings};
use dlsys_core::quant::{
    Calibration, ErrorStats, IntFormat, Mapping, OneValue, QuantBytes, QuantError, QuantSettings,
    quantise_value,
};

use super::choice;
use super::output::{Report, emit, line};
use super::{CliError, lang, say, t, tf};

const MODELS: [&str; 3] = ["mlp", "cnn", "transformer"];

#[derive(Clone, Debug, clap::Args)]
pub struct QuantArgs {
    #[arg(long, default_value = "mlp", value_parser = choice::name_of(&MODELS, |m| m))]
    pub(super) model: String,
    #[arg(long, value_name = "X", allow_hyphen_values = true)]
    value: Option<String>,
    #[arg(
        long,
        value_name = "LO,HI",
        default_value = "-1,1",
        allow_hyphen_values = true
    )]
    range: String,
    #[arg(long, default_value_t = 8)]
    pub(super) bits: u32,
    #[arg(long)]
    pub(super) unsigned: bool,
    #[arg(long, default_value = "tensor")]
    pub(super) granularity: String,
    #[arg(long, default_value = "symmetric", value_parser = choice::choice(&Mapping::ALL, |m| m.id()))]
    pub(super) mapping: Mapping,
    #[arg(long, default_value = "minmax")]
    pub(super) calibrate: String,
    #[arg(long, default_value = "rne", value_parser = choice::choice(&Rounding::ALL, |r| r.short_name()))]
    pub(super) rounding: Rounding,
    #[arg(long)]
    pub(super) activations: bool,
    #[arg(long, conflicts_with = "activations")]
    pub(super) static_activations: bool,
    #[arg(long, value_name = "M")]
    pub(super) outlier: Option<f64>,
    #[arg(long)]
    pub(super) grid: bool,
    #[arg(long)]
    pub(super) mx: bool,
    #[arg(long, default_value_t = 32)]
    pub(super) group: usize,
    #[arg(long, value_name = "EPOCHS")]
    pub(super) qat: Option<u64>,
    #[arg(long)]
    pub(super) fp8_train: bool,
    #[arg(long)]
    pub(super) qat_lr: Option<f64>,
    #[arg(long)]
    pub(super) dataset: Option<String>,
    #[arg(long)]
    pub(super) hidden: Option<String>,
    #[arg(long)]
    pub(super) epochs: Option<u64>,
    #[arg(long, value_name = "N")]
    pub(super) images: Option<usize>,
    #[arg(long, value_name = "N")]
    pub(super) steps: Option<u64>,
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    #[arg(long)]
    pub json: bool,
}

/// The MLP's data set, hidden sizes and QAT learning rate when not given.
const MLP_DATASET: &str = "digits";
const MLP_HIDDEN: &str = "128";
const QAT_LR: f64 = 0.01;

impl QuantArgs {
    /// The MLP's data set: `--dataset`, else [`MLP_DATASET`].
    pub(super) fn mlp_dataset(&self) -> String {
        self.dataset
            .clone()
            .unwrap_or_else(|| MLP_DATASET.to_owned())
    }
}

/// The figures `quant --help` names.
pub(super) fn help_values() -> Vec<(&'static str, String)> {
    vec![
        ("quant_dataset", MLP_DATASET.to_owned()),
        ("quant_hidden", MLP_HIDDEN.to_owned()),
        ("quant_qat_lr", QAT_LR.to_string()),
        ("quant_min_bits", dlsys_core::quant::MIN_BITS.to_string()),
        ("quant_max_bits", dlsys_core::quant::MAX_BITS.to_string()),
        ("quant_mlp_epochs", MLP_EPOCHS.to_string()),
        ("quant_calibration", ptq::CALIBRATION_EXAMPLES.to_string()),
        (
            "quant_cnn_epochs",
            CnnSettings::default().epochs.to_string(),
        ),
        (
            "quant_cnn_images",
            CnnSettings::default().images.unwrap_or(0).to_string(),
        ),
        (
            "quant_text_steps",
            TextSettings::default().steps.to_string(),
        ),
    ]
}

pub(super) fn calibration(text: &str) -> Result<Calibration, CliError> {
    let text = text.trim();
    match text {
        "minmax" => Ok(Calibration::MinMax),
        "mse" => Ok(Calibration::Mse),
        "kl" => Ok(Calibration::Entropy),
        _ => match text.strip_prefix("percentile:").map(parse_number) {
            Some(Ok(pct)) => Ok(Calibration::Percentile { pct }),
            Some(Err(e)) => Err(CliError::from(say(&e))),
            None => Err(CliError::from(tf(
                "quant.bad_calibrate",
                &[("value", &text)],
            ))),
        },
    }
}

fn granularity(text: &str) -> Result<GranularityKind, CliError> {
    GranularityKind::parse(text)
        .ok_or_else(|| CliError::from(tf("quant.bad_granularity", &[("value", &text.trim())])))
}

pub(super) fn fail(e: &QuantError) -> CliError {
    CliError::from(say(e))
}

/// The MLP's epochs before quantising, unless told.
pub(super) const MLP_EPOCHS: u64 = 10;

pub fn run(args: &QuantArgs) -> Result<ExitCode, CliError> {
    let kind = granularity(&args.granularity)?;
    let settings = QuantSettings {
        format: IntFormat {
            bits: args.bits,
            signed: !args.unsigned,
        },
        mapping: args.mapping,
        granularity: ptq::weight_granularity(kind),
        calibration: calibration(&args.calibrate)?,
        rounding: args.rounding,
        seed: args.seed,
    };
    settings.validate().map_err(|e| fail(&e))?;
    if let Some(text) = &args.value {
        let model_flags = [
            ("--model", args.model != "mlp"),
            ("--dataset", args.dataset.is_some()),
            ("--hidden", args.hidden.is_some()),
            ("--epochs", args.epochs.is_some()),
            ("--images", args.images.is_some()),
            ("--steps", args.steps.is_some()),
            ("--qat", args.qat.is_some()),
            ("--qat-lr", args.qat_lr.is_some()),
            ("--fp8-train", args.fp8_train),
            ("--grid", args.grid),
            ("--mx", args.mx),
            ("--outlier", args.outlier.is_some()),
            ("--activations", args.activations),
            ("--static-activations", args.static_activations),
        ];
        super::given::refuse_any(&model_flags, "quant.value_only", &[])?;
        let value = parse_number(text).map_err(|e| CliError::from(say(&e)))?;
        let (lo, hi) = args
            .range
            .split_once(',')
            .ok_or_else(|| CliError::from(tf("quant.bad_range", &[("value", &args.range)])))?;
        let lo = parse_number(lo).map_err(|e| CliError::from(say(&e)))?;
        let hi = parse_number(hi).map_err(|e| CliError::from(say(&e)))?;
        let one = quantise_value(value, lo, hi, &settings).map_err(|e| fail(&e))?;
        return emit(
            &ValueReport {
                mapping: args.mapping,
                one,
            },
            args.json,
        );
    }
    if args.model != "mlp" {
        return super::quant_models::run(args, &settings, kind);
    }
    for (flag, given) in [
        ("--images", args.images.is_some()),
        ("--steps", args.steps.is_some()),
    ] {
        if given {
            return Err(CliError::from(tf(
                "quant.not_for_model",
                &[("flag", &flag), ("model", &args.model)],
            )));
        }
    }
    // A flag that would be passed over is refused by name, with the
    // message that says why.
    if args.qat.is_none() {
        let flags = [("--qat-lr", args.qat_lr.is_some())];
        super::given::refuse_any(&flags, "quant.only_with", &[("other", &"--qat")])?;
    }
    if args.fp8_train {
        let flags = [
            ("--hidden", args.hidden.is_some()),
            ("--qat", args.qat.is_some()),
        ];
        super::given::refuse_any(&flags, "quant.not_with", &[("other", &"--fp8-train")])?;
    }
    if args.fp8_train {
        return super::quant_fp8::run(args);
    }
    if let Some(m) = args.outlier
        && !(m.is_finite() && (1.0..=ptq::MAX_OUTLIER).contains(&m))
    {
        return Err(fail(&QuantError::OutlierScale {
            value: m,
            max: ptq::MAX_OUTLIER,
        }));
    }
    if args.grid && args.group == 0 {
        return Err(fail(&QuantError::GroupSize));
    }
    let ptq_settings = PtqSettings {
        dataset: args.mlp_dataset(),
        hidden: args.hidden.clone().unwrap_or_else(|| MLP_HIDDEN.to_owned()),
        epochs: args.epochs.unwrap_or(MLP_EPOCHS),
        seed: args.seed,
    };
    let trained = ptq::train(&ptq_settings).map_err(|e| fail(&e))?;
    let acts = if args.static_activations {
        Some(ActScales::StaticTensor)
    } else {
        args.activations.then_some(ActScales::PerTensor)
    };
    let cell = ptq::measure(&trained, &settings, kind, acts).map_err(|e| fail(&e))?;
    let bytes = ptq::model_bytes(&trained.model, &settings).map_err(|e| fail(&e))?;
    let outlier = match args.outlier {
        Some(magnitude) => Some(
            ptq::outlier(
                &trained,
                &OutlierSettings {
                    channel: None,
                    magnitude,
                },
            )
            .map_err(|e| fail(&e))?,
        ),
        None => None,
    };
    let qat = match args.qat {
        Some(epochs) => {
            let qat_settings = QatSettings {
                bits: args.bits,
                granularity: kind,
                epochs,
                lr: args.qat_lr.unwrap_or(QAT_LR),
                ..QatSettings::default()
            };
            let report =
                qat::fine_tune(&trained, &ptq_settings, &qat_settings, &mut |epoch, of| {
                    eprintln!(
                        "{}",
                        tf("quant.qat.progress", &[("epoch", &epoch), ("of", &of)])
                    );
                    true
                });
            Some(report.map_err(|e| fail(&e))?)
        }
        None => None,
    };
    let grid = if args.grid {
        Some(
            ptq::grid(&trained, args.group, settings.calibration, &mut |_, _| {})
                .map_err(|e| fail(&e))?,
        )
    } else {
        None
    };
    let mx = if args.mx {
        Some(dlsys_core::quant::mx::mlp_table(&trained).map_err(|e| fail(&e))?)
    } else {
        None
    };
    let report = ModelReport {
        model: args.model.clone(),
        settings: ptq_settings,
        format: settings.format.name(),
        mapping: args.mapping,
        granularity: kind,
        calibration: settings.calibration,
        activations: acts,
        fp32_accuracy: trained.fp32_accuracy,
        accuracy: cell.accuracy,
        weight_error: cell.weight_error,
        fp32_bytes: bytes.params * 4,
        bytes,
        outlier,
        qat,
        grid,
        mx,
    };
    emit(&report, args.json)
}

#[derive(serde::Serialize)]
struct ValueReport {
    #[serde(skip)]
    mapping: Mapping,
    #[serde(flatten)]
    one: OneValue,
}

impl Report for ValueReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let o = &self.one;
        let p = &o.params;
        line(
            out,
            "quant.value.params",
            &[
                ("format", &o.format),
                ("mapping", &self.mapping.name(lang())),
                ("lo", &show_sig(o.lo, 6)),
                ("hi", &show_sig(o.hi, 6)),
                ("scale", &show_sig(p.scale, 6)),
                ("zero", &p.zero_point),
                ("qmin", &p.qmin),
                ("qmax", &p.qmax),
            ],
        )?;
        line(
            out,
            "quant.value.result",
            &[
                ("x", &show_sig(o.value, 9)),
                ("code", &o.code),
                ("back", &show_sig(o.restored, 9)),
                ("error", &show_sig(o.error, 3)),
                ("bound", &show_sig(o.bound, 3)),
            ],
        )?;
        if o.clipped {
            writeln!(out, "{}", t("quant.value.clipped"))?;
        }
        Ok(())
    }
}

#[derive(serde::Serialize)]
struct ModelReport {
    model: String,
    settings: PtqSettings,
    format: String,
    mapping: Mapping,
    granularity: GranularityKind,
    calibration: Calibration,
    /// int8 activations, per tensor and dynamic (W8A8), when set.
    activations: Option<ActScales>,
    fp32_accuracy: f64,
    accuracy: f64,
    weight_error: ErrorStats,
    fp32_bytes: u64,
    bytes: QuantBytes,
    #[serde(skip_serializing_if = "Option::is_none")]
    outlier: Option<OutlierReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    qat: Option<QatReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    grid: Option<Vec<Cell>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mx: Option<MxReport>,
}

/// The quantisation scheme in one line: the weights' format, mapping,
/// granularity and calibration, and what the activations are.
pub(super) fn scheme_line(
    format: &str,
    mapping: Mapping,
    granularity: GranularityKind,
    calibration: Calibration,
    acts: &str,
) -> String {
    tf(
        "quant.model.scheme",
        &[
            ("format", &format),
            ("mapping", &mapping.name(lang())),
            ("granularity", &granularity.words().say(lang())),
            ("calibration", &calibration.name(lang())),
            ("acts", &acts),
        ],
    )
}

/// The weights' bytes quantised beside fp32's.
pub(super) fn bytes_line(b: &QuantBytes) -> String {
    tf(
        "quant.model.bytes",
        &[
            ("params", &b.params),
            ("fp32", &(b.params * 4)),
            ("total", &b.total_bytes),
            ("payload", &b.payload_bytes),
            ("scales", &b.scales_bytes),
            ("zeros", &b.zero_points_bytes),
            ("bpp", &format!("{:.3}", b.bits_per_param)),
        ],
    )
}

/// Activations quantised to int8, in words: how, and (for the per-batch
/// scales) that they are dynamic.
fn acts_words(a: ActScales) -> String {
    let key = if a == ActScales::StaticTensor {
        "quant.model.acts_int8_static"
    } else {
        "quant.model.acts_int8"
    };
    tf(key, &[("how", &a.name(lang()))])
}

pub(super) fn pct(x: f64) -> String {
    format!("{:.2} %", 100.0 * x)
}

pub(super) fn error_line(e: &ErrorStats) -> String {
    tf(
        "quant.model.error",
        &[
            ("max", &show_sig(e.max_abs_error, 3)),
            ("rms", &show_sig(e.rms_error, 3)),
            (
                "sqnr",
                &e.sqnr_db
                    .map_or_else(|| "∞".to_owned(), |d| format!("{d:.1}")),
            ),
            ("clipped", &e.clipped),
            ("count", &e.count),
        ],
    )
}

impl Report for ModelReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let s = &self.settings;
        line(
            out,
            "quant.model.setup",
            &[
                ("dataset", &s.dataset),
                ("hidden", &s.hidden),
                ("epochs", &s.epochs),
                ("seed", &s.seed),
            ],
        )?;
        let acts = match self.activations {
            Some(a) => acts_words(a),
            None => t("quant.model.acts_fp32").to_owned(),
        };
        let scheme = scheme_line(
            &self.format,
            self.mapping,
            self.granularity,
            self.calibration,
            &acts,
        );
        writeln!(out, "{scheme}")?;
        line(
            out,
            "quant.model.accuracy",
            &[
                ("before", &pct(self.fp32_accuracy)),
                ("after", &pct(self.accuracy)),
                (
                    "delta",
                    &format!("{:+.2}", 100.0 * (self.accuracy - self.fp32_accuracy)),
                ),
            ],
        )?;
        writeln!(out, "{}", error_line(&self.weight_error))?;
        writeln!(out, "{}", bytes_line(&self.bytes))?;
        if let Some(o) = &self.outlier {
            line(
                out,
                "quant.outlier.setup",
                &[
                    ("channel", &o.channel),
                    ("m", &o.magnitude),
                    ("amax", &show_sig(o.outlier_amax, 4)),
                    ("others", &show_sig(o.others_amax, 4)),
                    ("fp32", &pct(o.planted_fp32_accuracy)),
                ],
            )?;
            for r in &o.rows {
                let gemm = t(if r.integer_gemm {
                    "quant.outlier.gemm_yes"
                } else {
                    "quant.outlier.gemm_no"
                });
                let (key, alpha) = match r.smooth_alpha {
                    Some(a) => ("quant.outlier.smooth_row", a),
                    None => ("quant.outlier.row", 0.0),
                };
                line(
                    out,
                    key,
                    &[
                        ("weights", &r.weights.words().say(lang())),
                        ("acts", &r.activations.name(lang())),
                        ("accuracy", &pct(r.accuracy)),
                        ("gemm", &gemm),
                        ("alpha", &alpha),
                    ],
                )?;
            }
        }
        if let Some(q) = &self.qat {
            line(
                out,
                "quant.qat.heading",
                &[
                    ("epochs", &q.accuracy.len()),
                    ("lr", &q.settings.lr),
                    ("ptq", &pct(q.ptq_accuracy)),
                ],
            )?;
            for (i, (acc, loss)) in q.accuracy.iter().zip(&q.loss).enumerate() {
                line(
                    out,
                    "quant.qat.row",
                    &[
                        ("epoch", &(i + 1)),
                        ("loss", &format!("{loss:.4}")),
                        ("accuracy", &pct(*acc)),
                        ("delta", &format!("{:+.2}", 100.0 * (acc - q.fp32_accuracy))),
                    ],
                )?;
            }
        }
        if let Some(cells) = &self.grid {
            writeln!(out, "{}", t("quant.grid.heading"))?;
            for c in cells {
                let acts = match c.activations {
                    Some(a) => acts_words(a),
                    None => t("quant.model.acts_fp32").to_owned(),
                };
                line(
                    out,
                    "quant.grid.row",
                    &[
                        ("bits", &c.bits),
                        ("granularity", &c.granularity.words().say(lang())),
                        ("acts", &acts),
                        ("accuracy", &pct(c.accuracy)),
                        ("delta", &format!("{:+.2}", 100.0 * c.delta)),
                        ("rms", &show_sig(c.weight_error.rms_error, 3)),
                    ],
                )?;
            }
        }
        if let Some(mx) = &self.mx {
            mx_lines(out, mx)?;
        }
        Ok(())
    }
}

/// The MX table: each element type, then the integer baselines.
fn mx_lines(out: &mut dyn Write, mx: &MxReport) -> io::Result<()> {
    writeln!(out, "{}", t("quant.mx.heading"))?;
    for r in &mx.rows {
        let sqnr = r
            .error
            .sqnr_db
            .map_or_else(|| "∞".to_owned(), |d| format!("{d:.1}"));
        line(
            out,
            "quant.mx.row",
            &[
                ("format", &r.element.name(lang())),
                ("bits", &format!("{:.3}", r.bits_per_value)),
                ("accuracy", &pct(r.accuracy)),
                ("delta", &format!("{:+.2}", 100.0 * r.delta)),
                ("sqnr", &sqnr),
                ("saturated", &r.saturated),
            ],
        )?;
    }
    for (cell, bits) in &mx.baselines {
        line(
            out,
            "quant.mx.baseline",
            &[
                ("int", &cell.bits),
                ("bits", &format!("{bits:.3}")),
                ("accuracy", &pct(cell.accuracy)),
                ("delta", &format!("{:+.2}", 100.0 * cell.delta)),
            ],
        )?;
    }
    Ok(())
}
