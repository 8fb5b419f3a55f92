//! One pipeline schedule run on the virtual clock: a row per stage, a bar
//! per forward, backward (B) and weight gradient (W), and per stage its
//! busy time, bubble and activations in flight against the closed form.

use dlsys_core::errors::Localized as _;
use dlsys_core::memory::show_seconds;
use dlsys_core::names::Named as _;
use dlsys_core::parallel::schedule::{Kind, Pass, PipelineRun, pipeline};
use dlsys_core::text::Lang;

use super::{Settings, TEXT, number, schedule_combo, t};
use crate::kit::{gantt, theme};

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.label(t(lang, "pipeline.explain"));
    ui.horizontal_wrapped(|ui| {
        schedule_combo(ui, s, lang);
        number(ui, t(lang, "pipeline.stages"), &mut s.stages, 1..=super::VIEW_STAGES, 0.1);
        number(ui, t(lang, "pipeline.micro"), &mut s.micro, 1..=super::VIEW_MICRO, 0.2);
        if matches!(s.schedule, Kind::Interleaved { .. }) {
            number(ui, t(lang, "pipeline.chunks"), &mut s.chunks, 1..=dlsys_core::parallel::schedule::MAX_CHUNKS, 0.05);
        }
    });
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "pipeline.forward"), &mut s.forward_ms, 0.0..=1e4, 0.05);
        number(ui, t(lang, "pipeline.backward"), &mut s.backward_ms, 0.0..=1e4, 0.05);
        number(ui, t(lang, "pipeline.weight"), &mut s.weight_ms, 0.0..=s.backward_ms, 0.05);
        number(ui, t(lang, "pipeline.transfer"), &mut s.transfer_ms, 0.0..=1e4, 0.05);
    });
    s.schedule = s.schedule.with_chunks(s.chunks);
    let run = match pipeline(s.schedule, s.stages, s.micro, s.times()) {
        Ok(run) => run,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    timeline(ui, &run, lang);
    ui.label(t(
        lang,
        match run.kind {
            Kind::ZeroBubble => "pipeline.formula_zb",
            Kind::Interleaved { .. } => "pipeline.formula_interleaved",
            Kind::GPipe | Kind::OneFOneB => "pipeline.formula",
        },
    ));
    table(ui, &run, None, lang);
}

/// A pass's colour in the timeline.
fn pass_color(visuals: &egui::Visuals, pass: Pass) -> egui::Color32 {
    let index = Pass::ALL.iter().position(|p| *p == pass).unwrap_or(0);
    theme::series(visuals, index)
}

/// The run's timeline, its legend and its summary.
pub(super) fn timeline(ui: &mut egui::Ui, run: &PipelineRun, lang: Lang) {
    let visuals = ui.visuals().clone();
    let passes: Vec<Pass> = Pass::ALL
        .into_iter()
        .filter(|p| *p != Pass::Weight || run.kind.splits_backward())
        .collect();
    let names: Vec<(egui::Color32, String)> = passes.iter().map(|p| (pass_color(&visuals, *p), p.name_in(run.kind, lang))).collect();
    gantt::legend(ui, "mp_gantt", &names.iter().map(|(c, n)| (*c, n.as_str())).collect::<Vec<_>>());
    let rows: Vec<gantt::Row> = run
        .timeline
        .stages
        .iter()
        .enumerate()
        .map(|(stage, ops)| gantt::Row {
            label: TEXT.fill(lang, "pipeline.stage", &[("s", &stage)]),
            bars: ops
                .iter()
                .map(|(op, start, end)| gantt::Bar {
                    start_s: *start,
                    end_s: *end,
                    color: pass_color(&visuals, op.pass),
                })
                .collect(),
        })
        .collect();
    let measured = run.rows.first().map_or(0.0, |r| r.bubble);
    let summary = TEXT.fill(
        lang,
        "pipeline.summary",
        &[
            ("schedule", &run.kind.name(lang)),
            ("total", &show_seconds(run.timeline.makespan)),
            ("measured", &format!("{:.1}", 100.0 * measured)),
            ("formula", &format!("{:.1}", 100.0 * run.formula)),
        ],
    );
    let (response, hovered) = gantt::draw(ui, &rows, (0.0, run.timeline.makespan), &summary);
    if let Some((stage, bar)) = hovered {
        let (op, start, end) = run.timeline.stages[stage][bar];
        response.on_hover_text(TEXT.fill(
            lang,
            "pipeline.bar",
            &[
                ("pass", &op.pass.name_in(run.kind, lang)),
                ("micro", &op.micro),
                ("chunk", &op.chunk),
                ("stage", &stage),
                ("start", &show_seconds(start)),
                ("end", &show_seconds(end)),
            ],
        ));
    }
}

/// Per stage: busy, bubble, in flight by the clock, and, for a run on real
/// data, what the running stage held.
pub(super) fn table(ui: &mut egui::Ui, run: &PipelineRun, held: Option<&[usize]>, lang: Lang) {
    let mut headers = vec!["col.stage", "col.busy", "col.bubble", "col.in_flight"];
    if held.is_some() {
        headers.push("col.held");
    }
    crate::kit::table::pinned(
        ui,
        "mp_stage_table",
        run.rows.len() + 1,
        crate::kit::table::Look::default(),
        |ui, r| {
            if r == 0 {
                crate::kit::column_header(ui, &TEXT, lang, headers[0]);
            } else {
                ui.label(TEXT.fill(lang, "pipeline.stage", &[("s", &(r - 1))]));
            }
        },
        |ui, r| {
            if r == 0 {
                for key in &headers[1..] {
                    crate::kit::column_header(ui, &TEXT, lang, key);
                }
                return;
            }
            let row = &run.rows[r - 1];
            ui.label(show_seconds(row.busy));
            ui.label(format!("{:.1} %", 100.0 * row.bubble));
            ui.label(row.peak_in_flight.to_string());
            if let Some(held) = held {
                ui.label(held[r - 1].to_string());
            }
        },
    );
}
