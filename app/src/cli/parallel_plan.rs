//! `dlsys-lab parallel plan`: the 3D planner — every TP × PP × DP
//! factorisation of a cluster's GPUs for a model preset, the fitting ones
//! ranked by throughput with each term of their memory and step time, and
//! every other one with its reason.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::errors::Localized as _;
use dlsys_core::memory::{Preset, Zero, show_bytes, show_seconds};
use dlsys_core::parallel::plan::{Cluster, PlanReport, PlanSettings, plan};

use super::choice::choice;
use super::output::{Report, emit, line};
use super::{CliError, say};

#[derive(Clone, Debug, clap::Args)]
pub struct PlanArgs {
    #[arg(long, default_value = "llama2-70b", value_parser = choice(&Preset::ALL, |p| p.name()))]
    model: Preset,
    #[arg(long, default_value_t = PlanSettings::default().gpus)]
    gpus: u64,
    #[arg(long, default_value = "dgx-h100", value_parser = choice(&Cluster::ALL, |c| c.key))]
    cluster: Cluster,
    #[arg(long, default_value_t = PlanSettings::default().global_batch)]
    global_batch: u64,
    #[arg(long, default_value_t = PlanSettings::default().seq)]
    seq: u64,
    #[arg(long, default_value_t = PlanSettings::default().micro_batch)]
    micro_batch: u64,
    #[arg(long)]
    no_recompute: bool,
    #[arg(long)]
    no_sp: bool,
    #[arg(long, default_value_t = 1)]
    zero: u64,
    #[arg(long, default_value_t = PlanSettings::default().efficiency)]
    efficiency: f64,
    #[arg(long)]
    no_overlap: bool,
    #[arg(long, default_value_t = PlanSettings::default().usable)]
    usable: f64,
    /// The fitting plans shown (all of them in JSON).
    #[arg(long, default_value_t = 5)]
    top: usize,
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &PlanArgs) -> Result<ExitCode, CliError> {
    let settings = PlanSettings {
        preset: a.model,
        gpus: a.gpus,
        cluster: a.cluster,
        global_batch: a.global_batch,
        seq: a.seq,
        micro_batch: a.micro_batch,
        recompute: !a.no_recompute,
        sequence_parallel: !a.no_sp,
        zero: Zero::from_stage(a.zero).map_err(|e| say(&e))?,
        efficiency: a.efficiency,
        overlap: !a.no_overlap,
        usable: a.usable,
    };
    let report = plan(&settings).map_err(|e| say(&e))?;
    emit(&PlanOutput { report, top: a.top }, a.json)
}

#[derive(serde::Serialize)]
struct PlanOutput {
    #[serde(flatten)]
    report: PlanReport,
    #[serde(skip)]
    top: usize,
}

fn percent(x: f64) -> String {
    format!("{:.1}", 100.0 * x)
}

impl Report for PlanOutput {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let r = &self.report;
        let s = &r.settings;
        let c = &s.cluster;
        let yes = |b: bool| super::t(if b { "parallel.yes" } else { "parallel.no" });
        line(
            out,
            "parallel.plan",
            &[
                ("model", &s.preset.name()),
                ("params", &format!("{:.1}", r.parameters as f64 / 1e9)),
                ("gpus", &s.gpus),
                ("cluster", &c.key),
                ("per_node", &c.gpus_per_node),
                ("memory", &show_bytes(c.memory)),
                ("tflops", &(c.peak_flops / 1e12)),
                ("intra", &(c.intra_bytes_per_s / 1e9)),
                ("inter", &(c.inter_bytes_per_s / 1e9)),
                ("batch", &s.global_batch),
                ("seq", &s.seq),
                ("micro", &s.micro_batch),
                ("recompute", &yes(s.recompute)),
                ("sp", &yes(s.sequence_parallel)),
                ("zero", &s.zero.stage()),
                ("efficiency", &percent(s.efficiency)),
                ("usable", &percent(s.usable)),
            ],
        )?;
        let fitting: Vec<_> = r.plans.iter().filter(|p| p.fits()).collect();
        line(
            out,
            "parallel.plan.fitting",
            &[
                ("fit", &fitting.len()),
                ("all", &r.plans.len()),
                ("top", &self.top.min(fitting.len())),
            ],
        )?;
        for p in fitting.iter().take(self.top) {
            let Some(e) = p.estimate else { continue };
            let (m, t) = (e.memory, e.time);
            line(
                out,
                "parallel.plan.row",
                &[
                    ("tp", &p.tp),
                    ("pp", &p.pp),
                    ("dp", &p.dp),
                    ("m", &p.micro_batches),
                    ("memory", &show_bytes(m.total)),
                    ("weights", &show_bytes(m.weights)),
                    ("grads", &show_bytes(m.gradients)),
                    ("optimizer", &show_bytes(m.optimizer)),
                    ("activations", &show_bytes(m.activations)),
                    ("step", &show_seconds(t.step)),
                    ("compute", &show_seconds(t.compute)),
                    ("bubble", &show_seconds(t.bubble)),
                    ("tp_time", &show_seconds(t.tp)),
                    ("pp_time", &show_seconds(t.pp)),
                    ("dp_time", &show_seconds(t.dp_exposed)),
                    ("dp_all", &show_seconds(t.dp)),
                    ("tokens", &format!("{:.0}", e.tokens_per_s)),
                    ("mfu", &percent(e.mfu)),
                    ("hfu", &percent(e.hfu)),
                ],
            )?;
        }
        for p in r.plans.iter().filter(|p| !p.fits()) {
            let Some(why) = &p.refusal else { continue };
            line(
                out,
                "parallel.plan.refused",
                &[
                    ("tp", &p.tp),
                    ("pp", &p.pp),
                    ("dp", &p.dp),
                    ("why", &why.message(super::lang())),
                ],
            )?;
        }
        Ok(())
    }
}
