//! `dlsys-lab parallel`: model parallelism. So far `pp`: a pipeline
//! schedule (GPipe, 1F1B, interleaved 1F1B, ZB-H1) run on the virtual
//! timeline — by default the engine's MLP trained one step on real data,
//! its stages on threads, timed from counted FLOPs and the α-β link and its
//! gradients held to the unsplit accumulation; with `--forward-ms` and the
//! other times, the schedule alone — each stage's busy time, bubble and
//! activations in flight, against the closed-form bubble. `tp`: one
//! transformer layer split Megatron's way over T workers on threads,
//! against the unsplit layer, its all-reduces' bytes counted. `fsdp`: the
//! MLP trained ZeRO-3 / FSDP style on threads, against data parallelism,
//! its bytes counted and each worker's peak memory against the calculator.
//! `plan`: the 3D planner, in `parallel_plan`.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::collective::Link;
use dlsys_core::memory::{show_bytes, show_seconds};
use dlsys_core::names::Named as _;
use dlsys_core::parallel::schedule::{
    Kind, MAX_CHUNKS, MAX_MICRO, MAX_STAGES, PipelineRun, Times, pipeline,
};
use dlsys_core::parallel::sequence::{SpRun, run_sp};
use dlsys_core::parallel::sharded::{self, FsdpRun, FsdpSettings, train_fsdp};
use dlsys_core::parallel::stages::{
    MAX_LAYERS, MAX_ROWS, MAX_RUN_MICRO, MAX_WIDTH, PipeSettings, PipeTraining, train_pipeline,
};
use dlsys_core::parallel::tensor::{TpRun, TpSettings, run_tp};

use super::choice::choice;
use super::output::{Report, emit, line};
use super::{CliError, say};

#[derive(Clone, Debug, clap::Subcommand)]
pub enum ParallelCommand {
    Pp(PpArgs),
    Tp(TpArgs),
    Fsdp(FsdpArgs),
    Plan(super::parallel_plan::PlanArgs),
}

impl ParallelCommand {
    pub fn json(&self) -> bool {
        match self {
            Self::Pp(a) => a.json,
            Self::Tp(a) => a.json,
            Self::Fsdp(a) => a.json,
            Self::Plan(a) => a.json,
        }
    }
}

#[derive(Clone, Debug, clap::Args)]
pub struct TpArgs {
    #[arg(long, default_value_t = TpSettings::default().workers)]
    workers: usize,
    #[arg(long, default_value_t = TpSettings::default().tokens)]
    tokens: usize,
    #[arg(long, default_value_t = TpSettings::default().hidden)]
    hidden: usize,
    #[arg(long, default_value_t = TpSettings::default().heads)]
    heads: usize,
    /// Also run the MLP block with sequence parallelism.
    #[arg(long)]
    sp: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Debug, clap::Args)]
pub struct FsdpArgs {
    #[arg(long, default_value_t = FsdpSettings::default().workers)]
    workers: usize,
    #[arg(long)]
    prefetch: bool,
    #[arg(long, default_value_t = FsdpSettings::default().layers)]
    layers: usize,
    #[arg(long, default_value_t = FsdpSettings::default().width)]
    width: usize,
    #[arg(long, default_value_t = FsdpSettings::default().rows)]
    rows: usize,
    #[arg(long, default_value_t = FsdpSettings::default().steps)]
    steps: usize,
    #[arg(long, default_value_t = FsdpSettings::default().gflops)]
    gflops: f64,
    #[arg(long, default_value_t = 5.0)]
    alpha_us: f64,
    #[arg(long, default_value_t = 25.0)]
    gbps: f64,
    #[arg(long)]
    pub json: bool,
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
    /// Times of the schedule alone (any of them: no model runs; the
    /// others default to 1, 2, 1 and 0 ms).
    #[arg(long)]
    forward_ms: Option<f64>,
    #[arg(long)]
    backward_ms: Option<f64>,
    #[arg(long)]
    weight_ms: Option<f64>,
    #[arg(long)]
    transfer_ms: Option<f64>,
    /// The model run on real data: its layers, width and rows per
    /// micro-batch, each stage's rate and the link between stages.
    #[arg(long, default_value_t = PipeSettings::default().layers)]
    layers: usize,
    #[arg(long, default_value_t = PipeSettings::default().width)]
    width: usize,
    #[arg(long, default_value_t = PipeSettings::default().rows)]
    rows: usize,
    #[arg(long, default_value_t = PipeSettings::default().gflops)]
    gflops: f64,
    #[arg(long, default_value_t = 5.0)]
    alpha_us: f64,
    #[arg(long, default_value_t = 25.0)]
    gbps: f64,
    /// Equal stages and free transfers: the closed form's assumptions.
    #[arg(long)]
    ideal: bool,
    #[arg(long)]
    pub json: bool,
}

/// The figures `parallel pp --help` names.
pub(super) fn help_values() -> Vec<(&'static str, String)> {
    vec![
        ("pp_stages", MAX_STAGES.to_string()),
        ("pp_micro", MAX_MICRO.to_string()),
        ("pp_chunks", MAX_CHUNKS.to_string()),
        ("pp_run_micro", MAX_RUN_MICRO.to_string()),
        ("pp_rows", MAX_ROWS.to_string()),
        ("pp_width", MAX_WIDTH.to_string()),
        ("pp_layers", MAX_LAYERS.to_string()),
        ("fsdp_rows", sharded::MAX_ROWS.to_string()),
        ("fsdp_width", sharded::MAX_WIDTH.to_string()),
        ("fsdp_layers", sharded::MAX_LAYERS.to_string()),
        ("fsdp_steps", sharded::MAX_STEPS.to_string()),
    ]
}

pub fn run(what: &ParallelCommand) -> Result<ExitCode, CliError> {
    match what {
        ParallelCommand::Pp(a) => pp(a),
        ParallelCommand::Tp(a) => tp(a),
        ParallelCommand::Fsdp(a) => fsdp(a),
        ParallelCommand::Plan(a) => super::parallel_plan::run(a),
    }
}

fn fsdp(a: &FsdpArgs) -> Result<ExitCode, CliError> {
    let settings = FsdpSettings {
        workers: a.workers,
        prefetch: a.prefetch,
        layers: a.layers,
        width: a.width,
        rows: a.rows,
        steps: a.steps,
        gflops: a.gflops,
        link: Link::new(a.alpha_us, a.gbps).map_err(|e| say(&e))?,
        ..FsdpSettings::default()
    };
    let run = train_fsdp(&settings, true).map_err(|e| say(&e))?;
    emit(&FsdpReport { run }, a.json)
}

#[derive(serde::Serialize)]
struct FsdpReport {
    run: FsdpRun,
}

impl Report for FsdpReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let r = &self.run;
        let s = &r.settings;
        let n = s.workers as u64;
        let sizes: Vec<String> = s.sizes().iter().map(ToString::to_string).collect();
        let psi = r.model_bytes();
        line(
            out,
            "parallel.fsdp",
            &[
                ("workers", &s.workers),
                ("layers", &s.layers),
                ("sizes", &sizes.join("-")),
                ("params", &r.parameters),
                ("psi", &show_bytes(psi)),
                ("rows", &s.rows),
                ("steps", &s.steps),
            ],
        )?;
        let losses: Vec<String> = r.losses.iter().map(|l| format!("{l:.4}")).collect();
        line(
            out,
            "parallel.fsdp.bits",
            &[
                ("differing", &r.differing),
                ("count", &r.parameters),
                ("steps", &s.steps),
                ("losses", &losses.join(", ")),
                (
                    "same",
                    &super::t(if r.losses == r.dp_losses {
                        "parallel.fsdp.losses_equal"
                    } else {
                        "parallel.fsdp.losses_differ"
                    }),
                ),
            ],
        )?;
        let spread = |sent: &[u64]| {
            let total: u64 = sent.iter().sum();
            let low = sent.iter().min().copied().unwrap_or(0);
            let high = sent.iter().max().copied().unwrap_or(0);
            (total, show_bytes(low), show_bytes(high))
        };
        let (total, low, high) = spread(&r.sent);
        let (dp_total, dp_low, dp_high) = spread(&r.dp_sent);
        line(
            out,
            "parallel.fsdp.bytes",
            &[
                ("total", &show_bytes(total)),
                ("low", &low),
                ("high", &high),
                ("formula", &show_bytes(3 * (n - 1) * psi)),
                ("dp_total", &show_bytes(dp_total)),
                ("dp_low", &dp_low),
                ("dp_high", &dp_high),
                ("dp_formula", &show_bytes(2 * (n - 1) * psi)),
            ],
        )?;
        // Workers with the same figures share a line.
        let mut groups: Vec<((u64, u64), Vec<String>)> = Vec::new();
        for (w, figures) in r.peak.iter().zip(&r.estimate).enumerate() {
            let figures = (*figures.0, *figures.1);
            match groups.iter_mut().find(|(f, _)| *f == figures) {
                Some((_, workers)) => workers.push(w.to_string()),
                None => groups.push((figures, vec![w.to_string()])),
            }
        }
        for ((peak, estimate), workers) in groups {
            let who = super::tf(
                if workers.len() == 1 {
                    "parallel.fsdp.worker"
                } else {
                    "parallel.fsdp.workers"
                },
                &[("list", &workers.join(", "))],
            );
            line(
                out,
                "parallel.fsdp.memory",
                &[
                    ("who", &who),
                    ("peak", &show_bytes(peak)),
                    ("estimate", &show_bytes(estimate)),
                    ("whole", &show_bytes(3 * psi)),
                ],
            )?;
        }
        let (with, without) = if s.prefetch {
            (r.step_s, r.other_step_s)
        } else {
            (r.other_step_s, r.step_s)
        };
        line(
            out,
            "parallel.fsdp.time",
            &[
                ("with", &show_seconds(with)),
                ("without", &show_seconds(without)),
                ("gflops", &s.gflops),
                (
                    "link",
                    &format!(
                        "α {} µs, β {} GB/s",
                        s.link.alpha_s * 1e6,
                        s.link.bytes_per_s / 1e9
                    ),
                ),
            ],
        )
    }
}

fn tp(a: &TpArgs) -> Result<ExitCode, CliError> {
    let settings = TpSettings {
        workers: a.workers,
        tokens: a.tokens,
        hidden: a.hidden,
        heads: a.heads,
        ..TpSettings::default()
    };
    let run = run_tp(&settings, true).map_err(|e| say(&e))?;
    let sequence = if a.sp {
        Some(run_sp(&settings, true).map_err(|e| say(&e))?)
    } else {
        None
    };
    emit(&TpReport { run, sequence }, a.json)
}

#[derive(serde::Serialize)]
struct TpReport {
    run: TpRun,
    /// The MLP block under sequence parallelism, when asked.
    sequence: Option<SpRun>,
}

impl Report for TpReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let r = &self.run;
        let s = &r.settings;
        line(
            out,
            "parallel.tp",
            &[
                ("workers", &s.workers),
                ("hidden", &s.hidden),
                ("heads", &s.heads),
                ("tokens", &s.tokens),
                ("ffn", &(4 * s.hidden)),
            ],
        )?;
        let yes = |b: bool| super::t(if b { "parallel.yes" } else { "parallel.no" });
        for sub in &r.sublayers {
            line(
                out,
                "parallel.tp.sublayer",
                &[
                    ("name", &sub.sublayer.name(super::lang())),
                    ("shapes", &sub.shapes_text()),
                    ("activations", &yes(sub.activations_bitwise)),
                    ("weights", &yes(sub.weight_grads_bitwise)),
                ],
            )?;
            line(
                out,
                "parallel.tp.sums",
                &[
                    ("out", &format!("{:.2e}", sub.output_max_difference)),
                    ("out_ratio", &format!("{:.3}", sub.output_over_bound)),
                    ("input", &format!("{:.2e}", sub.input_grad_max_difference)),
                    ("in_ratio", &format!("{:.3}", sub.input_grad_over_bound)),
                    ("f64", &yes(sub.both_within_f64_bound)),
                ],
            )?;
            line(
                out,
                "parallel.tp.bytes",
                &[
                    ("forward", &show_bytes(sub.sent_forward[0])),
                    ("backward", &show_bytes(sub.sent_backward[0])),
                    ("formula", &show_bytes(sub.formula_bytes)),
                    ("t", &s.workers),
                    ("elements", &(s.tokens * s.hidden)),
                ],
            )?;
        }
        line(
            out,
            "parallel.tp.layer",
            &[
                ("count", &r.all_reduces),
                ("bytes", &show_bytes(r.layer_bytes)),
            ],
        )?;
        let Some(sp) = &self.sequence else {
            return Ok(());
        };
        line(
            out,
            "parallel.sp",
            &[
                ("per", &(s.tokens / s.workers)),
                ("tokens", &s.tokens),
                ("output", &yes(sp.output_bitwise)),
                ("input", &yes(sp.input_grad_bitwise)),
                ("norm", &format!("{:.2e}", sp.norm_grad_max_difference)),
            ],
        )?;
        line(
            out,
            "parallel.sp.bytes",
            &[
                ("sp", &show_bytes(sp.sp_sent[0])),
                ("tp", &show_bytes(sp.tp_sent[0])),
                ("norm", &show_bytes(sp.sp_norm_sent[0])),
                ("sp_kept", &sp.sp_kept),
                ("tp_kept", &sp.tp_kept),
            ],
        )
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
    let given = [a.forward_ms, a.backward_ms, a.weight_ms, a.transfer_ms];
    if given.iter().any(Option::is_some) {
        let ms = |x: Option<f64>, default: f64| x.unwrap_or(default) / 1e3;
        let mut times = Times {
            forward: ms(a.forward_ms, 1.0),
            backward: ms(a.backward_ms, 2.0),
            // W is part of the backward: 1 ms unless the backward is shorter.
            weight: ms(a.weight_ms, a.backward_ms.unwrap_or(2.0).clamp(0.0, 1.0)),
            transfer: ms(a.transfer_ms, 0.0),
        };
        if a.ideal {
            times.transfer = 0.0;
        }
        let run = pipeline(kind, a.stages, a.micro_batches, times).map_err(|e| say(&e))?;
        return emit(
            &PpReport {
                run,
                training: None,
            },
            a.json,
        );
    }
    let settings = PipeSettings {
        kind,
        stages: a.stages,
        micro: a.micro_batches,
        rows: a.rows,
        width: a.width,
        layers: a.layers,
        gflops: a.gflops,
        link: Link::new(a.alpha_us, a.gbps).map_err(|e| say(&e))?,
        ideal: a.ideal,
        ..PipeSettings::default()
    };
    let training = train_pipeline(&settings, true).map_err(|e| say(&e))?;
    emit(
        &PpReport {
            run: training.run.clone(),
            training: Some(training),
        },
        a.json,
    )
}

#[derive(serde::Serialize)]
struct PpReport {
    run: PipelineRun,
    /// The model's step on real data, when one ran.
    training: Option<PipeTraining>,
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
        if let Some(t) = &self.training {
            let s = &t.settings;
            let sizes: Vec<String> = s.sizes().iter().map(ToString::to_string).collect();
            line(
                out,
                "parallel.pp.train",
                &[
                    ("layers", &s.layers),
                    ("sizes", &sizes.join("-")),
                    ("positions", &(s.stages * v)),
                    ("rows", &s.rows),
                    ("gflops", &s.gflops),
                    (
                        "threads",
                        &super::t(if t.threads {
                            "parallel.pp.threads"
                        } else {
                            "parallel.pp.in_turn"
                        }),
                    ),
                ],
            )?;
            line(
                out,
                "parallel.pp.bits",
                &[
                    ("differing", &t.differing),
                    ("count", &t.elements),
                    ("max", &format!("{:e}", t.max_difference)),
                    (
                        "losses",
                        &super::t(if t.losses == t.reference_losses {
                            "parallel.pp.losses_equal"
                        } else {
                            "parallel.pp.losses_differ"
                        }),
                    ),
                ],
            )?;
        }
        for (s, row) in r.rows.iter().enumerate() {
            let held = self.training.as_ref().map(|t| t.held[s]);
            line(
                out,
                if held.is_some() {
                    "parallel.pp.stage_held"
                } else {
                    "parallel.pp.stage"
                },
                &[
                    ("stage", &s),
                    ("busy", &show_seconds(row.busy)),
                    ("bubble", &format!("{:.1}", 100.0 * row.bubble)),
                    ("peak", &row.peak_in_flight),
                    ("held", &held.unwrap_or(0)),
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
