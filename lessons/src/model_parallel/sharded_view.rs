//! Fully sharded training (ZeRO-3 / FSDP) run for real: the engine's MLP
//! trained over N workers on threads (`parallel::sharded`), against data
//! parallelism bit for bit, its step on two streams of the virtual clock,
//! its bytes and each worker's peak memory against the calculator; then
//! what the same three collectives send at a real model's size
//! (`parallel::cost`).

use dlsys_core::collective::Link;
use dlsys_core::errors::Localized as _;
use dlsys_core::memory::{show_bytes, show_seconds};
use dlsys_core::names::Named as _;
use dlsys_core::parallel::cost::sharded_traffic;
use dlsys_core::parallel::sharded::{Activity, FsdpRun, FsdpSettings, ShardError, train_fsdp};
use dlsys_core::text::Lang;

use super::{Settings, TEXT, number, t};
use crate::kit::memo::Memo;
use crate::kit::{gantt, theme};

/// Weights and gradients in bf16 at scale.
const ELEMENT_BYTES: u64 = 2;

/// The most workers the page runs (each a thread).
pub const VIEW_WORKERS: usize = 8;

/// A run, kept until its settings change.
pub type Runs = Memo<FsdpSettings, Result<FsdpRun, ShardError>>;

/// The run the page's settings describe.
pub fn settings(s: &Settings) -> FsdpSettings {
    FsdpSettings {
        workers: s.fsdp_run_workers,
        prefetch: s.prefetch,
        link: Link::new(5.0, s.fsdp_gbps).unwrap_or(FsdpSettings::default().link),
        ..FsdpSettings::default()
    }
}

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, runs: &mut Runs, lang: Lang) {
    ui.label(t(lang, "traffic.fsdp_explain"));
    ui.label(t(lang, "sharded.explain"));
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "sharded.workers"), &mut s.fsdp_run_workers, 2..=VIEW_WORKERS, 0.05);
        number(ui, t(lang, "sharded.gbps"), &mut s.fsdp_gbps, 0.01..=1e4, 0.1);
        ui.checkbox(&mut s.prefetch, t(lang, "sharded.prefetch"));
    });
    match runs.get(&settings(s), |k| train_fsdp(k, super::train_view::THREADS)) {
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
        }
        Ok(run) => show(ui, run, lang),
    }
    ui.add_space(6.0);
    scale(ui, s, lang);
}

fn activity_color(visuals: &egui::Visuals, a: Activity) -> egui::Color32 {
    let index = Activity::ALL.iter().position(|x| *x == a).unwrap_or(0);
    theme::series(visuals, index)
}

fn show(ui: &mut egui::Ui, run: &FsdpRun, lang: Lang) {
    let s = &run.settings;
    let visuals = ui.visuals().clone();
    let names: Vec<(egui::Color32, String)> = Activity::ALL.iter().map(|a| (activity_color(&visuals, *a), a.name(lang))).collect();
    gantt::legend(ui, "mp_fsdp_gantt", &names.iter().map(|(c, n)| (*c, n.as_str())).collect::<Vec<_>>());
    let lanes = [false, true];
    let rows: Vec<gantt::Row> = lanes
        .iter()
        .map(|comm| gantt::Row {
            label: t(lang, if *comm { "sharded.lane.comm" } else { "sharded.lane.compute" }).to_owned(),
            bars: run
                .timeline
                .iter()
                .filter(|span| span.activity.communicates() == *comm)
                .map(|span| gantt::Bar {
                    start_s: span.start_s,
                    end_s: span.end_s,
                    color: activity_color(&visuals, span.activity),
                })
                .collect(),
        })
        .collect();
    let (with, without) = if s.prefetch { (run.step_s, run.other_step_s) } else { (run.other_step_s, run.step_s) };
    let summary = TEXT.fill(
        lang,
        "sharded.summary",
        &[("with", &show_seconds(with)), ("without", &show_seconds(without)), ("gflops", &s.gflops)],
    );
    let (response, hovered) = gantt::draw(ui, &rows, (0.0, run.step_s), &summary);
    if let Some((lane, bar)) = hovered {
        let comm = lanes[lane];
        if let Some(span) = run.timeline.iter().filter(|x| x.activity.communicates() == comm).nth(bar) {
            response.on_hover_text(TEXT.fill(
                lang,
                "sharded.bar",
                &[
                    ("activity", &span.activity.name(lang)),
                    ("layer", &span.layer),
                    ("start", &show_seconds(span.start_s)),
                    ("end", &show_seconds(span.end_s)),
                ],
            ));
        }
    }
    let same = run.differing == 0 && run.losses == run.dp_losses;
    ui.colored_label(
        if same { theme::good(&visuals) } else { theme::bad(&visuals) },
        TEXT.fill(
            lang,
            if same { "sharded.same" } else { "sharded.differ" },
            &[
                ("steps", &s.steps),
                ("count", &run.parameters),
                ("differing", &run.differing),
                ("max", &format!("{:.1e}", run.max_difference)),
            ],
        ),
    );
    let n = s.workers as u64;
    let psi = run.model_bytes();
    ui.label(TEXT.fill(
        lang,
        "sharded.bytes",
        &[
            ("total", &show_bytes(run.sent.iter().sum())),
            ("n", &n),
            ("psi", &show_bytes(psi)),
            ("formula", &show_bytes(3 * (n - 1) * psi)),
            ("dp", &show_bytes(run.dp_sent.iter().sum())),
        ],
    ));
    let peak = run.peak.iter().copied().max().unwrap_or(0);
    let estimate = run.estimate.iter().copied().max().unwrap_or(0);
    let held = run.peak == run.estimate;
    let text = TEXT.fill(
        lang,
        if held { "sharded.memory" } else { "sharded.memory_differ" },
        &[("peak", &show_bytes(peak)), ("estimate", &show_bytes(estimate)), ("whole", &show_bytes(3 * psi))],
    );
    if held {
        ui.label(text);
    } else {
        ui.colored_label(theme::bad(&visuals), text);
    }
}

/// The same collectives at a real model's size, from the formula the run
/// above counted.
fn scale(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.label(t(lang, "sharded.scale"));
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "traffic.fsdp_workers"), &mut s.fsdp_workers, 2..=1024, 0.2);
        number(ui, t(lang, "traffic.params"), &mut s.params_m, 1e-3..=1e7, 10.0);
    });
    let params = (s.params_m * 1e6).round() as u64;
    let sharded = sharded_traffic(s.fsdp_workers, params, ELEMENT_BYTES);
    ui.label(TEXT.fill(
        lang,
        "traffic.fsdp_line",
        &[
            ("n", &s.fsdp_workers),
            ("psi", &show_bytes(params * ELEMENT_BYTES)),
            ("fsdp", &show_bytes(sharded.fsdp)),
            ("dp", &show_bytes(sharded.data_parallel)),
            ("ratio", &format!("{:.2}", sharded.fsdp as f64 / sharded.data_parallel.max(1) as f64)),
        ],
    ));
}
