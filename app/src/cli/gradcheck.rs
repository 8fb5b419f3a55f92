//! `dlsys-lab gradcheck`: every autograd op (the MLP's and the layers')
//! and a whole MLP against numerical gradients.

use dlsys_core::names::Named;
use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::autograd::{Band, Check, GradcheckReport, PlantedBug};

use super::CliError;
use super::choice::{choice, name_of};
use super::lang::pad;
use super::output::{Report, emit, line};
use super::{t, tf};

#[derive(Clone, Debug, clap::Args)]
pub struct GradcheckArgs {
    #[arg(long)]
    pub json: bool,
    #[arg(
        long,
        default_value = dlsys_core::autograd::checks::PRECISIONS[0],
        value_parser = name_of(&dlsys_core::autograd::checks::PRECISIONS, |p| *p),
    )]
    pub precision: String,
    #[arg(long, value_name = "BUG", value_parser = choice(&PlantedBug::EVERY, bug_id))]
    pub bug: Option<PlantedBug>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The CLI's name for a planted bug.
fn bug_id(bug: &PlantedBug) -> &'static str {
    match bug {
        PlantedBug::BiasNotSummedOverBatch => "bias-not-summed",
        PlantedBug::SoftmaxMissingCoupling => "softmax-no-coupling",
        PlantedBug::CrossEntropyNotAveraged => "ce-not-averaged",
        PlantedBug::LayerNormMissingMean => "layernorm-no-mean",
        PlantedBug::BatchNormStatsAsConstants => "batchnorm-stats-constant",
        PlantedBug::MaxPoolToEveryInput => "maxpool-to-every-input",
    }
}

#[derive(serde::Serialize)]
struct GradcheckOut {
    precision: String,
    /// What the planted bug does, if one was planted.
    planted_bug: Option<&'static str>,
    #[serde(skip)]
    bug: Option<PlantedBug>,
    checks: Vec<CheckRow>,
    outside_good_band: usize,
}

#[derive(serde::Serialize)]
struct CheckRow {
    check: String,
    #[serde(skip)]
    kind: Check,
    precision: &'static str,
    max_rel_error: f64,
    band: &'static str,
    #[serde(skip)]
    band_kind: Band,
    tensors: Vec<TensorRow>,
}

#[derive(serde::Serialize)]
struct TensorRow {
    name: String,
    shape: Vec<usize>,
    max_rel_error: f64,
}

pub fn run(args: &GradcheckArgs) -> Result<ExitCode, CliError> {
    let reports: Vec<(Check, GradcheckReport)> = Check::every()
        .map(|check| {
            check
                .run_in(&args.precision, args.seed, args.bug)
                .map(|report| (check, report))
        })
        .collect::<Result<_, _>>()
        .map_err(|e| super::say(&e))?;
    let report = GradcheckOut {
        precision: args.precision.clone(),
        planted_bug: args.bug.map(PlantedBug::describe),
        bug: args.bug,
        outside_good_band: reports.iter().filter(|(_, r)| r.band != Band::Good).count(),
        checks: reports
            .into_iter()
            .map(|(kind, r)| CheckRow {
                check: r.name,
                kind,
                precision: r.precision,
                max_rel_error: r.max_rel_error,
                band: r.band.name(),
                band_kind: r.band,
                tensors: r
                    .tensors
                    .into_iter()
                    .map(|t| TensorRow {
                        name: t.name,
                        shape: t.shape,
                        max_rel_error: t.max_rel_error,
                    })
                    .collect(),
            })
            .collect(),
    };
    emit(&report, args.json)
}

impl Report for GradcheckOut {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        if let Some(bug) = self.bug.map(|b| b.name(super::lang())) {
            line(out, "grad.planted", &[("bug", &bug)])?;
        }
        let lang = super::lang();
        // The widest check's name sets the first column.
        let width = self
            .checks
            .iter()
            .map(|r| super::lang::columns(&Named::name(&r.kind, lang)))
            .max()
            .unwrap_or(0)
            .max(24);
        writeln!(
            out,
            "{} {}  {}",
            pad(&tf("grad.check", &[("precision", &self.precision)]), width),
            super::lang::pad_left(t("grad.max_rel"), 12),
            t("grad.band")
        )?;
        for r in &self.checks {
            writeln!(
                out,
                "{} {:>12.3e}  {}",
                pad(&Named::name(&r.kind, lang), width),
                r.max_rel_error,
                Named::name(&r.band_kind, super::lang())
            )?;
            for t in r
                .tensors
                .iter()
                .filter(|t| Band::of(t.max_rel_error) != Band::Good)
            {
                writeln!(
                    out,
                    "{} {:>12.3e}  ({} {:?})",
                    pad("", width),
                    t.max_rel_error,
                    t.name,
                    t.shape
                )?;
            }
        }
        line(
            out,
            "grad.total",
            &[
                ("checks", &self.checks.len()),
                ("outside", &self.outside_good_band),
            ],
        )
    }

    fn ok(&self) -> bool {
        self.outside_good_band == 0
    }
}
