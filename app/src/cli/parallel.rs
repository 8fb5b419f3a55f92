//! `dlsys-lab parallel`: model parallelism. So far `pp`: a pipeline
//! schedule (GPipe, 1F1B, interleaved 1F1B, ZB-H1) timed on the virtual timeline
//! — each stage's busy time, bubble and activations in flight, against the
//! closed-form bubble.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::memory::show_seconds;
use dlsys_core::parallel::schedule::{
    Kind, MAX_CHUNKS, MAX_MICRO, MAX_STAGES, PipelineRun, Times, pipeline,
};

use super::choice::choice;
use super::output::{Report, emit, line};
use super::{CliError, say};

#[derive(Clone, Debug, clap::Subcommand)]
pub enum ParallelCommand {
    Pp(PpArgs),
}

impl ParallelCommand {
    pub fn json(&self) -> bool {
        match self {
            Self::Pp(a) => a.json,
        }
    }
}

#[derive(Clone, Debug, clap::Args)]
pub struct PpArgs {
    #[arg(long, default_value = "1f1b", value_parser = choice(&Kind::ALL, |k| k.key()))]
    schedule: Kind,
    #[arg(long, default_value_t = 4)]
    stages: usize,
    #[arg(long, default_value_t = 8)]
    micro_batches: usize,
    /// Chunks per stage, interleaved only.
    #[arg(long = "virtual")]
    chunks: Option<usize>,
    #[arg(long, default_value_t = 1.0)]
    forward_ms: f64,
    #[arg(long, default_value_t = 2.0)]
    backward_ms: f64,
    /// The backward's weight-gradient part (ZB-H1 runs it on its own).
    #[arg(long, default_value_t = 1.0)]
    weight_ms: f64,
    #[arg(long, default_value_t = 0.0)]
    transfer_ms: f64,
    #[arg(long)]
    pub json: bool,
}

/// The figures `parallel pp --help` names.
pub(super) fn help_values() -> Vec<(&'static str, String)> {
    vec![
        ("pp_stages", MAX_STAGES.to_string()),
        ("pp_micro", MAX_MICRO.to_string()),
        ("pp_chunks", MAX_CHUNKS.to_string()),
    ]
}

pub fn run(what: &ParallelCommand) -> Result<ExitCode, CliError> {
    match what {
        ParallelCommand::Pp(a) => pp(a),
    }
}

fn pp(a: &PpArgs) -> Result<ExitCode, CliError> {
    let kind = match (a.schedule, a.chunks) {
        (Kind::Interleaved { .. }, v) => Kind::Interleaved { v: v.unwrap_or(2) },
        (kind, None) => kind,
        (_, Some(_)) => {
            return Err(CliError::from(super::tf(
                "parallel.virtual_only",
                &[("schedule", &a.schedule.key())],
            )));
        }
    };
    let times = Times {
        forward: a.forward_ms / 1e3,
        backward: a.backward_ms / 1e3,
        weight: a.weight_ms / 1e3,
        transfer: a.transfer_ms / 1e3,
    };
    let run = pipeline(kind, a.stages, a.micro_batches, times).map_err(|e| say(&e))?;
    emit(&PpReport { run }, a.json)
}

#[derive(serde::Serialize)]
struct PpReport {
    run: PipelineRun,
}

impl Report for PpReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let r = &self.run;
        let v = r.kind.chunks();
        let (head, formula) = match r.kind {
            Kind::Interleaved { .. } => {
                ("parallel.pp.interleaved", "parallel.pp.formula_interleaved")
            }
            Kind::ZeroBubble => ("parallel.pp.zb", "parallel.pp.formula_zb"),
            Kind::GPipe | Kind::OneFOneB => ("parallel.pp", "parallel.pp.formula"),
        };
        line(
            out,
            head,
            &[
                ("schedule", &r.kind.key()),
                ("stages", &r.stages),
                ("micro", &r.micro),
                ("v", &v),
                ("forward", &show_seconds(r.times.forward)),
                ("backward", &show_seconds(r.times.backward)),
                ("weight", &show_seconds(r.times.weight)),
                ("transfer", &show_seconds(r.times.transfer)),
                ("total", &show_seconds(r.timeline.makespan)),
            ],
        )?;
        for (s, row) in r.rows.iter().enumerate() {
            line(
                out,
                "parallel.pp.stage",
                &[
                    ("stage", &s),
                    ("busy", &show_seconds(row.busy)),
                    ("bubble", &format!("{:.1}", 100.0 * row.bubble)),
                    ("peak", &row.peak_in_flight),
                ],
            )?;
        }
        let measured = r.rows.first().map_or(0.0, |row| row.bubble);
        line(
            out,
            formula,
            &[
                ("measured", &format!("{:.1}", 100.0 * measured)),
                ("formula", &format!("{:.1}", 100.0 * r.formula)),
            ],
        )
    }
}
