//! `dlsys-lab compile`: one training step of one of the engine's models
//! (the MLP, the small CNN, the character-level transformer) traced, its
//! buffers planned ahead of time into one arena against max-live and no
//! reuse, the same trace through the model of PyTorch's caching allocator,
//! and out of memory while memory is free — the values the frameworks
//! lesson draws.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::compile::cache::CacheEvent;
use dlsys_core::compile::captured::{Captured, captured};
use dlsys_core::compile::dispatch::Mode;
use dlsys_core::compile::step::{
    Fragmented, Growing, StepMemory, StepModel, StepSettings, fragmented, growing, step_memory,
};
use dlsys_core::memory::mlp::MlpSettings;
use dlsys_core::memory::precision::Precision;
use dlsys_core::memory::{show_bytes, show_seconds};
use dlsys_core::names::Named as _;
use dlsys_core::nn::OptimizerKind;
use dlsys_shaders::codegen::validated;

use super::choice::{choice, name_of};
use super::output::{Report, emit, line};
use super::{CliError, say};

#[derive(Clone, Debug, clap::Args)]
pub struct CompileArgs {
    #[arg(long, default_value = "mlp", value_parser = choice(&StepModel::ALL, |m| m.key()))]
    model: StepModel,
    /// Default: the lesson's MLP.
    #[arg(long, value_name = "SIZES")]
    mlp: Option<String>,
    #[arg(long, default_value_t = StepSettings::default().mlp.batch)]
    batch: usize,
    #[arg(long, ignore_case = true, value_parser = name_of(&OptimizerKind::NAMES, |o| *o))]
    optimizer: Option<String>,
    #[arg(long, value_parser = choice(&Precision::ALL, |p| p.name()))]
    precision: Option<Precision>,
    #[arg(long, default_value_t = StepSettings::default().device_mib)]
    device_mib: u64,
    /// Also capture the model's fp32 step (MLP or CNN): its kernels, the compile cache
    /// fed a few batches, and the overhead of eager vs replayed steps.
    #[arg(long)]
    capture: bool,
    /// Runs timed each way for the overhead (0: not timed).
    #[arg(long, default_value_t = 5, requires = "capture")]
    runs: usize,
    /// Also run the fusion pass on the captured step: its groups, each
    /// edge's decision, launches and bytes before and after, the WGSL
    /// generated for the longest group.
    #[arg(long)]
    fuse: bool,
    /// Also dispatch the captured step's matmuls through the op registry:
    /// every candidate timed per shape and the fastest cached (bench), or
    /// picked by a rule (heuristic); the dispatch chain; the crossover.
    #[arg(long, value_parser = choice(&Mode::ALL, |m| m.key()))]
    select: Option<Mode>,
    /// Of the memory sections, the plan (with --allocator, both; with
    /// neither, both).
    #[arg(long)]
    plan: bool,
    /// Of the memory sections, the caching allocator's: its peaks, out of
    /// memory while memory is free, expandable segments.
    #[arg(long)]
    allocator: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &CompileArgs) -> Result<ExitCode, CliError> {
    // The MLP's own flags say nothing about the other models (the capture
    // takes the MLP and the CNN; the transformer is refused there).
    let mlp_flags = [
        ("--mlp", a.mlp.is_some()),
        ("--optimizer", a.optimizer.is_some()),
        ("--precision", a.precision.is_some()),
    ];
    if a.model != StepModel::Mlp {
        super::given::refuse_any(&mlp_flags, "train.model_only", &[("model", &"mlp")])?;
    }
    let defaults = StepSettings::default();
    let settings = StepSettings {
        model: a.model,
        mlp: MlpSettings {
            sizes: a.mlp.clone().unwrap_or(defaults.mlp.sizes),
            batch: a.batch,
            optimizer: a.optimizer.clone().unwrap_or(defaults.mlp.optimizer),
            precision: a.precision.unwrap_or(defaults.mlp.precision),
            ..defaults.mlp
        },
        device_mib: a.device_mib,
    };
    let memory = step_memory(&settings).map_err(|e| say(&e))?;
    let captured = if a.capture || a.fuse || a.select.is_some() {
        let runs = if a.capture { a.runs.min(MAX_RUNS) } else { 0 };
        Some(captured(settings.model, &settings.mlp, runs).map_err(|e| say(&e))?)
    } else {
        None
    };
    // The fused step on this machine's adapter, with --fuse.
    let fused_gpu = captured
        .as_ref()
        .filter(|_| a.fuse)
        .map(|c| super::compile_fused::fused(settings.model, &settings.mlp, c));
    let dispatch = a
        .select
        .zip(captured.as_ref())
        .map(|(mode, c)| super::compile_select::dispatch(&c.calls, mode));
    emit(
        &CompileReport {
            settings,
            memory,
            fragmented: fragmented(),
            growing: growing(),
            captured,
            fused_gpu,
            dispatch,
            show: Show {
                capture: a.capture,
                fuse: a.fuse,
                // Neither memory flag: both memory sections.
                plan: a.plan || !a.allocator,
                allocator: a.allocator || !a.plan,
            },
        },
        a.json,
    )
}

#[derive(serde::Serialize)]
struct CompileReport {
    settings: StepSettings,
    memory: StepMemory,
    fragmented: Option<Fragmented>,
    growing: Growing,
    #[serde(skip_serializing_if = "Option::is_none")]
    captured: Option<Captured>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fused_gpu: Option<super::compile_fused::FusedGpu>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dispatch: Option<super::compile_select::Dispatch>,
    /// Which sections the text shows (the JSON has them all).
    #[serde(skip)]
    show: Show,
}

#[derive(Clone, Copy)]
struct Show {
    capture: bool,
    fuse: bool,
    plan: bool,
    allocator: bool,
}

/// The most timed runs each way (the large case takes tens of milliseconds a step).
const MAX_RUNS: usize = 50;

impl Report for CompileReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let (s, m) = (&self.settings, &self.memory);
        let p = &m.plan;
        let over = |bytes: u64| format!("{:.2}", bytes as f64 / p.max_live.max(1) as f64);
        match s.model {
            StepModel::Mlp => line(
                out,
                "compile.step",
                &[
                    ("sizes", &s.mlp.sizes),
                    ("batch", &s.mlp.batch),
                    ("precision", &s.mlp.precision.name()),
                    ("buffers", &m.buffers),
                    ("points", &m.points),
                ],
            )?,
            model => line(
                out,
                "compile.step_model",
                &[
                    ("model", &model.name(super::lang())),
                    ("batch", &s.mlp.batch),
                    ("buffers", &m.buffers),
                    ("points", &m.points),
                ],
            )?,
        }
        if self.show.plan {
            line(
                out,
                "compile.plan",
                &[
                    ("max_live", &show_bytes(p.max_live)),
                    ("arena", &show_bytes(p.arena)),
                    ("ratio", &over(p.arena)),
                    ("no_reuse", &show_bytes(p.no_reuse)),
                    ("nratio", &over(p.no_reuse)),
                ],
            )?;
        }
        if self.show.allocator {
            self.allocator_text(out)?;
        }
        if let Some(c) = &self.captured {
            if self.show.capture {
                captured_text(c, out)?;
            }
            if self.show.fuse {
                fusion_text(c, out)?;
            }
        }
        if let Some(f) = &self.fused_gpu {
            super::compile_fused::text(f, out)?;
        }
        if let Some(d) = &self.dispatch {
            super::compile_select::text(d, out)?;
        }
        Ok(())
    }
}

impl CompileReport {
    /// The caching allocator's sections: its peaks on the step, out of
    /// memory there, out of memory while memory is free, expandable
    /// segments.
    fn allocator_text(&self, out: &mut dyn Write) -> io::Result<()> {
        let m = &self.memory;
        let (p, stats) = (&m.plan, &m.allocator.stats);
        let over = |bytes: u64| format!("{:.2}", bytes as f64 / p.max_live.max(1) as f64);
        line(
            out,
            "compile.allocator",
            &[
                ("device", &show_bytes(m.device)),
                ("allocated", &show_bytes(stats.peak_allocated)),
                ("reserved", &show_bytes(stats.peak_reserved)),
                ("rratio", &over(stats.peak_reserved)),
                ("segments", &stats.segments_made),
                ("splits", &stats.splits),
                ("merges", &stats.merges),
                ("flushes", &stats.flushes),
            ],
        )?;
        if let Some((event, oom)) = &m.allocator.oom {
            line(
                out,
                "compile.oom",
                &[
                    ("event", &(event + 1)),
                    ("request", &show_bytes(oom.requested)),
                    ("segment", &show_bytes(oom.segment)),
                    ("reserved", &show_bytes(oom.reserved)),
                    ("device", &show_bytes(oom.capacity)),
                ],
            )?;
        }
        if let Some(f) = &self.fragmented {
            line(
                out,
                "compile.fragmented",
                &[
                    ("device", &show_bytes(f.device)),
                    ("segments", &f.segments),
                    ("tensor", &show_bytes(f.tensor)),
                    ("free", &show_bytes(f.cached_free)),
                    ("request", &show_bytes(f.oom.requested)),
                    ("largest", &show_bytes(f.oom.largest_free)),
                ],
            )?;
        }
        let g = &self.growing;
        line(
            out,
            "compile.growing",
            &[
                ("device", &show_bytes(g.device)),
                ("first", &show_bytes(g.first)),
                ("second", &show_bytes(g.second)),
                ("request", &show_bytes(g.request)),
                (
                    "plain",
                    &super::t(if g.plain.is_some() {
                        "compile.fails"
                    } else {
                        "compile.fits"
                    }),
                ),
                ("free", &show_bytes(g.plain_free)),
                (
                    "expandable",
                    &super::t(if g.expandable.is_some() {
                        "compile.fails"
                    } else {
                        "compile.fits"
                    }),
                ),
                ("reserved", &show_bytes(g.expandable_reserved)),
            ],
        )
    }
}

/// The capture section: the kernels, the replay's arena, the compile
/// cache's decisions, the overhead.
fn captured_text(c: &Captured, out: &mut dyn Write) -> io::Result<()> {
    let sizes: Vec<String> = c.sizes.iter().map(usize::to_string).collect();
    let model = match c.model {
        StepModel::Mlp => super::tf("compile.capture_mlp", &[("sizes", &sizes.join("-"))]),
        model => model.name(super::lang()),
    };
    line(
        out,
        "compile.capture",
        &[
            ("model", &model),
            ("batch", &c.batch),
            ("inputs", &c.inputs()),
            ("forward", &c.forward()),
            ("backward", &c.backward()),
        ],
    )?;
    for (i, k) in c.kernels.iter().enumerate() {
        let phase = match (k.key, k.backward) {
            ("copy_in", _) => "compile.phase.input",
            (_, false) => "compile.phase.forward",
            (_, true) => "compile.phase.backward",
        };
        let from: Vec<String> = k.inputs.iter().map(|j| format!("%{j}")).collect();
        writeln!(
            out,
            "  %{i:<3} {:<9} {:<18} {:?} {}",
            super::t(phase),
            k.key,
            k.shape,
            if from.is_empty() {
                String::new()
            } else {
                format!("← {}", from.join(", "))
            }
        )?;
    }
    line(
        out,
        "compile.replay_arena",
        &[
            ("arena", &show_bytes(c.arena)),
            ("max_live", &show_bytes(c.max_live)),
            ("no_reuse", &show_bytes(c.no_reuse)),
            ("in_place", &c.in_place),
        ],
    )?;
    events_text(&c.events, out)?;
    line(
        out,
        "compile.captures",
        &[
            ("captures", &c.captures),
            ("calls", &c.batches.len()),
            ("exact", &c.calls_exact),
        ],
    )?;
    if c.branch_means.is_empty() {
        // The branch and the overhead are the MLP's.
        return line(out, "compile.mlp_only", &[]);
    }
    let means: Vec<String> = c.branch_means.iter().map(|m| format!("{m:.3}")).collect();
    line(
        out,
        "compile.branch",
        &[
            (
                "threshold",
                &dlsys_core::compile::captured::BRANCH_THRESHOLD,
            ),
            ("means", &means.join(", ")),
        ],
    )?;
    events_text(&c.branch_events, out)?;
    line(
        out,
        "compile.branch_captures",
        &[
            ("captures", &c.branch_captures),
            ("calls", &c.branch_means.len()),
            ("exact", &c.branch_exact),
        ],
    )?;
    for o in &c.overhead {
        line(
            out,
            "compile.overhead",
            &[
                ("batch", &o.batch),
                ("width", &o.width),
                ("eager", &show_seconds(o.eager_seconds)),
                ("eshare", &format!("{:.0}", 100.0 * o.eager_share)),
                ("replay", &show_seconds(o.replay_seconds)),
                ("rshare", &format!("{:.0}", 100.0 * o.replay_share)),
                ("speedup", &format!("{:.2}", o.speedup())),
                ("launches", &o.launches),
                ("runs", &o.runs),
                ("reps_e", &o.reps_eager),
                ("reps_r", &o.reps_replay),
            ],
        )?;
    }
    Ok(())
}

/// The compile cache's log, a line a call.
fn events_text(events: &[CacheEvent], out: &mut dyn Write) -> io::Result<()> {
    for e in events {
        match e {
            CacheEvent::Captured {
                batch,
                capture,
                symbolic,
            } => line(
                out,
                if *capture == 0 {
                    "compile.event.first"
                } else {
                    "compile.event.captured"
                },
                &[
                    ("batch", batch),
                    ("graph", &(capture + 1)),
                    (
                        "shapes",
                        &super::t(if *symbolic {
                            "compile.shapes.symbolic"
                        } else {
                            "compile.shapes.static"
                        }),
                    ),
                ],
            )?,
            CacheEvent::Reused { batch, capture } => line(
                out,
                "compile.event.reused",
                &[("batch", batch), ("graph", &(capture + 1))],
            )?,
            CacheEvent::GuardFailed {
                batch,
                capture,
                error,
            } => line(
                out,
                "compile.event.guard",
                &[
                    ("batch", batch),
                    ("graph", &(capture + 1)),
                    ("error", &say(error)),
                ],
            )?,
        }
    }
    Ok(())
}

/// The fusion section: each group, each edge's decision, the totals, and
/// the WGSL generated for the longest group.
fn fusion_text(c: &Captured, out: &mut dyn Write) -> io::Result<()> {
    let f = &c.fusion;
    line(
        out,
        "compile.fuse",
        &[
            ("groups", &f.groups.len()),
            ("before", &f.launches_before),
            ("after", &f.launches_after),
            ("bbefore", &show_bytes(f.bytes_before)),
            ("bafter", &show_bytes(f.bytes_after)),
        ],
    )?;
    for (i, g) in f.groups.iter().enumerate() {
        let nodes: Vec<String> = g.nodes.iter().map(|n| format!("%{n}")).collect();
        let ops: Vec<&str> = g.chain.ops.iter().map(|o| o.key()).collect();
        line(
            out,
            "compile.group",
            &[
                ("group", &(i + 1)),
                ("nodes", &nodes.join(", ")),
                ("ops", &ops.join(" → ")),
                ("n", &g.n),
            ],
        )?;
    }
    for e in &f.edges {
        writeln!(
            out,
            "  %{} → %{}: {}",
            e.from,
            e.to,
            e.verdict.name(super::lang())
        )?;
    }
    if let Some((i, g)) = f.longest() {
        line(out, "compile.wgsl", &[("group", &(i + 1))])?;
        match validated(&g.chain, g.n, g.cols, false) {
            Ok(text) => out.write_all(text.as_bytes())?,
            // A generator bug: said as it is.
            Err(e) => writeln!(out, "{e:?}")?,
        }
    }
    Ok(())
}
