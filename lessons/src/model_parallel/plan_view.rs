//! The 3D planner (`parallel::plan`): a model preset on a cluster preset,
//! every TP × PP × DP factorisation, the fitting ones in a table term by
//! term, the best one's arithmetic written out, and every other one with
//! its reason.

use dlsys_core::errors::Localized as _;
use dlsys_core::memory::{Preset, Zero, show_bytes, show_seconds};
use dlsys_core::parallel::plan::{Cluster, MAX_GPUS, Plan, PlanError, PlanReport, PlanSettings, plan};
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};

use super::{TEXT, number, t};
use crate::kit::memo::Memo;
use crate::kit::theme;

/// A report, kept until its settings change.
pub type Runs = Memo<PlanSettings, Result<PlanReport, PlanError>>;

/// The fitting plans the table shows.
const SHOWN: usize = 8;

/// What the learner chose; survives restarts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Choices {
    pub preset: Preset,
    /// An index into `Cluster::ALL`.
    pub cluster: usize,
    pub gpus: u64,
    pub global_batch: u64,
    pub seq: u64,
    pub micro_batch: u64,
    pub recompute: bool,
    pub sequence_parallel: bool,
    pub zero: u64,
    pub efficiency: f64,
    pub overlap: bool,
}

impl Default for Choices {
    fn default() -> Self {
        let d = PlanSettings::default();
        Self {
            preset: d.preset,
            cluster: 0,
            gpus: d.gpus,
            global_batch: d.global_batch,
            seq: d.seq,
            micro_batch: d.micro_batch,
            recompute: d.recompute,
            sequence_parallel: d.sequence_parallel,
            zero: d.zero.stage(),
            efficiency: d.efficiency,
            overlap: d.overlap,
        }
    }
}

impl Choices {
    /// Within the ranges the view takes (a saved file may hold anything).
    pub fn clamped(&mut self) {
        self.cluster = self.cluster.min(Cluster::ALL.len() - 1);
        self.gpus = self.gpus.clamp(1, MAX_GPUS);
        self.global_batch = self.global_batch.clamp(1, 1 << 24);
        self.seq = self.seq.clamp(1, 1 << 20);
        self.micro_batch = self.micro_batch.clamp(1, self.global_batch);
        self.zero = self.zero.min(3);
        if !(self.efficiency.is_finite() && self.efficiency > 0.0) {
            self.efficiency = PlanSettings::default().efficiency;
        }
        self.efficiency = self.efficiency.clamp(0.01, 1.0);
    }

    fn settings(&self) -> PlanSettings {
        PlanSettings {
            preset: self.preset,
            gpus: self.gpus,
            cluster: Cluster::ALL[self.cluster.min(Cluster::ALL.len() - 1)],
            global_batch: self.global_batch,
            seq: self.seq,
            micro_batch: self.micro_batch,
            recompute: self.recompute,
            sequence_parallel: self.sequence_parallel,
            zero: Zero::from_stage(self.zero).unwrap_or_default(),
            efficiency: self.efficiency,
            overlap: self.overlap,
            ..PlanSettings::default()
        }
    }
}

pub fn ui(ui: &mut egui::Ui, c: &mut Choices, runs: &mut Runs, lang: Lang) {
    ui.label(t(lang, "plan.explain"));
    ui.horizontal_wrapped(|ui| {
        crate::kit::choice(ui, "mp_plan_model", t(lang, "plan.model"), &mut c.preset, Preset::ALL, |&p| p.name());
        let cluster = |&i: &usize| Cluster::ALL.get(i).map_or("", |c| c.key);
        crate::kit::choice(ui, "mp_plan_cluster", t(lang, "plan.cluster"), &mut c.cluster, 0..Cluster::ALL.len(), cluster);
        number(ui, t(lang, "plan.gpus"), &mut c.gpus, 1..=MAX_GPUS, 1.0);
        number(ui, t(lang, "plan.zero"), &mut c.zero, 0..=3, 0.05);
    });
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "plan.batch"), &mut c.global_batch, 1..=1 << 24, 4.0);
        number(ui, t(lang, "plan.seq"), &mut c.seq, 1..=1 << 20, 16.0);
        number(ui, t(lang, "plan.micro"), &mut c.micro_batch, 1..=c.global_batch, 0.05);
        number(ui, t(lang, "plan.efficiency"), &mut c.efficiency, 0.01..=1.0, 0.005);
    });
    ui.horizontal_wrapped(|ui| {
        ui.checkbox(&mut c.recompute, t(lang, "plan.recompute"));
        ui.checkbox(&mut c.sequence_parallel, t(lang, "plan.sp"));
        ui.checkbox(&mut c.overlap, t(lang, "plan.overlap"));
    });
    match runs.get(&c.settings(), plan) {
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
        }
        Ok(report) => show(ui, report, lang),
    }
}

fn show(ui: &mut egui::Ui, r: &PlanReport, lang: Lang) {
    let fitting: Vec<&Plan> = r.plans.iter().filter(|p| p.fits()).collect();
    ui.label(TEXT.fill(
        lang,
        "plan.count",
        &[("fit", &fitting.len()), ("all", &r.plans.len()), ("shown", &fitting.len().min(SHOWN))],
    ));
    if !fitting.is_empty() {
        table(ui, &fitting[..fitting.len().min(SHOWN)], lang);
    }
    if let Some(best) = fitting.first() {
        arithmetic(ui, r, best, lang);
    }
    let refused: Vec<&Plan> = r.plans.iter().filter(|p| !p.fits()).collect();
    if !refused.is_empty() {
        egui::CollapsingHeader::new(TEXT.fill(lang, "plan.refused", &[("n", &refused.len())]))
            .id_salt("mp_plan_refused")
            .show(ui, |ui| {
                for p in refused {
                    let why = p.refusal.as_ref().map(|w| w.message(lang)).unwrap_or_default();
                    ui.label(TEXT.fill(lang, "plan.refused_row", &[("tp", &p.tp), ("pp", &p.pp), ("dp", &p.dp), ("why", &why)]));
                }
            });
    }
}

const COLUMNS: [&str; 10] = [
    "col.plan_m",
    "col.plan_memory",
    "col.plan_step",
    "col.plan_compute",
    "col.plan_bubble",
    "col.plan_tp",
    "col.plan_pp",
    "col.plan_dp",
    "col.plan_tokens",
    "col.plan_mfu",
];

fn table(ui: &mut egui::Ui, plans: &[&Plan], lang: Lang) {
    crate::kit::table::pinned(
        ui,
        "mp_plan_table",
        plans.len() + 1,
        crate::kit::table::Look::default(),
        |ui, r| {
            if r == 0 {
                crate::kit::column_header(ui, &TEXT, lang, "col.plan");
            } else {
                let p = plans[r - 1];
                ui.label(format!("{} × {} × {}", p.tp, p.pp, p.dp));
            }
        },
        |ui, r| {
            if r == 0 {
                for key in COLUMNS {
                    crate::kit::column_header(ui, &TEXT, lang, key);
                }
                return;
            }
            let p = plans[r - 1];
            let Some(e) = p.estimate else { return };
            let time = e.time;
            ui.label(p.micro_batches.to_string());
            ui.label(show_bytes(e.memory.total));
            ui.label(show_seconds(time.step));
            ui.label(show_seconds(time.compute));
            ui.label(show_seconds(time.bubble));
            ui.label(show_seconds(time.tp));
            ui.label(show_seconds(time.pp));
            ui.label(show_seconds(time.dp_exposed));
            ui.label(format!("{:.0}", e.tokens_per_s));
            ui.label(format!("{:.1} %", 100.0 * e.mfu));
        },
    );
}

/// The best plan's figures with the arithmetic behind them.
fn arithmetic(ui: &mut egui::Ui, r: &PlanReport, p: &Plan, lang: Lang) {
    let Some(e) = p.estimate else { return };
    let s = &r.settings;
    let tokens = s.global_batch * s.seq;
    ui.label(TEXT.fill(
        lang,
        "plan.best",
        &[
            ("tp", &p.tp),
            ("pp", &p.pp),
            ("dp", &p.dp),
            ("flops", &if s.recompute { 8 } else { 6 }),
            ("n", &format!("{:.2e}", r.parameters as f64)),
            ("tokens", &tokens),
            ("gpus", &s.gpus),
            ("peak", &(s.cluster.peak_flops / 1e12)),
            ("eff", &format!("{:.0}", 100.0 * s.efficiency)),
            ("compute", &show_seconds(e.time.compute)),
            ("m", &p.micro_batches),
            ("bubble", &show_seconds(e.time.bubble)),
            ("step", &show_seconds(e.time.step)),
            ("mfu", &format!("{:.1}", 100.0 * e.mfu)),
            ("weights", &show_bytes(e.memory.weights)),
            ("grads", &show_bytes(e.memory.gradients)),
            ("optimizer", &show_bytes(e.memory.optimizer)),
            ("activations", &show_bytes(e.memory.activations)),
        ],
    ));
}
