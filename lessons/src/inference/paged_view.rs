//! The paged KV cache against contiguous reservation: one seeded stream
//! run through both (recomputed when a setting changes), the memory each
//! reserved and used over the decode iterations, and what each achieved.

use dlsys_core::errors::Localized as _;
use dlsys_core::inference::InferError;
use dlsys_core::inference::paged::{MAX_MEMORY_TOKENS, SchemeRun, StreamReport, StreamSettings, run_stream};
use dlsys_core::text::Lang;

use super::{TEXT, t};
use crate::kit::memo::Memo;
use crate::kit::table::{Header, headed};
use crate::kit::theme;
use crate::kit::theme::ReadableAxes as _;

/// The last stream run, for the settings it ran with.
#[derive(Default)]
pub struct Cache {
    memo: Memo<StreamSettings, Result<StreamReport, InferError>>,
}

impl Cache {
    /// Runs the stream unless these settings already ran.
    pub fn compute(&mut self, s: &StreamSettings) -> &Result<StreamReport, InferError> {
        self.memo.get(s, run_stream)
    }

    /// For the self-test: the two schemes' waste, or the error.
    pub fn outcome(&self) -> Option<crate::SelfTestResult> {
        Some(match self.memo.last()? {
            Ok(r) => {
                let detail = format!(
                    "paged waste {:.1} % vs contiguous {:.1} %",
                    100.0 * r.paged.waste(),
                    100.0 * r.contiguous.waste()
                );
                if r.paged.waste() < r.contiguous.waste() { Ok(detail) } else { Err(crate::SelfTestFailure(detail)) }
            }
            Err(e) => Err(crate::SelfTestFailure(e.to_string())),
        })
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, s: &mut StreamSettings, lang: Lang) {
        ui.label(t(lang, "paged.explain"));
        ui.horizontal_wrapped(|ui| {
            crate::kit::number_field(ui, t(lang, "paged.memory"), &mut s.memory_tokens, s.reserve..=MAX_MEMORY_TOKENS, 64.0);
            crate::kit::number_field(ui, t(lang, "paged.block"), &mut s.block_tokens, 1..=256, 0.2);
            crate::kit::number_field(ui, t(lang, "paged.requests"), &mut s.requests, 1..=1000, 1.0);
            crate::kit::number_field(ui, t(lang, "paged.seed"), &mut s.seed, 0..=u64::from(u32::MAX), 0.2);
        });
        ui.label(TEXT.fill(
            lang,
            "paged.stream",
            &[
                ("plo", &s.prompt.0),
                ("phi", &s.prompt.1),
                ("olo", &s.output.0),
                ("ohi", &s.output.1),
                ("reserve", &s.reserve),
            ],
        ));
        let settings = *s;
        // Borrowed, not cloned: a long stream's records are large, and this
        // runs every frame.
        let report = match self.compute(&settings) {
            Ok(r) => r,
            Err(e) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
                return;
            }
        };
        memory_plot(ui, report, lang);
        results_table(ui, report, lang);
        for run in [&report.contiguous, &report.paged] {
            if !run.complete() {
                ui.colored_label(
                    theme::warn(ui.visuals()),
                    TEXT.fill(lang, "paged.unfinished", &[("finished", &run.finished), ("requests", &run.requests), ("steps", &run.steps)]),
                );
            }
        }
        ui.label(TEXT.fill(
            lang,
            "paged.why",
            &[
                ("contiguous", &format!("{:.1}", 100.0 * report.contiguous.waste())),
                ("paged", &format!("{:.1}", 100.0 * report.paged.waste())),
                ("block", &settings.block_tokens),
                ("ratio", &format!("{:.1}", report.concurrency_ratio())),
                ("csteps", &report.contiguous.steps),
                ("psteps", &report.paged.steps),
            ],
        ));
    }
}

fn memory_plot(ui: &mut egui::Ui, r: &StreamReport, lang: Lang) {
    use egui_plot::{Line, PlotPoints};
    let visuals = ui.visuals().clone();
    let series = |values: &[u64]| -> Vec<[f64; 2]> {
        values.iter().enumerate().map(|(i, v)| [i as f64, *v as f64]).collect()
    };
    let lines = [
        (t(lang, "plot.contiguous_reserved"), series(&r.contiguous.reserved), 0, true),
        (t(lang, "plot.contiguous_used"), series(&r.contiguous.used), 2, false),
        (t(lang, "plot.paged_reserved"), series(&r.paged.reserved), 1, true),
        (t(lang, "plot.paged_used"), series(&r.paged.used), 3, false),
    ];
    let keys: Vec<_> = lines
        .iter()
        .map(|(name, _, colour, _)| crate::kit::figure::Key::line(*name, theme::series(&visuals, *colour)))
        .collect();
    ui.label(t(lang, "plot.memory_heading"));
    crate::kit::figure::plot("infer_paged_plot", 220.0, t(lang, "axis.step"), t(lang, "axis.tokens"))
        .readable_x()
        .readable_y()
        .include_y(0.0)
        .show(ui, |plot| {
            for (name, points, colour, reserved) in lines {
                let mut line = Line::new(name, PlotPoints::from(points)).color(theme::series(&visuals, colour));
                if !reserved {
                    line = line.style(egui_plot::LineStyle::dashed_loose());
                }
                plot.line(line);
            }
        });
    crate::kit::figure::legend(ui, "infer_paged_plot", &keys);
}

fn results_table(ui: &mut egui::Ui, r: &StreamReport, lang: Lang) {
    let rows: [(&str, &SchemeRun); 2] = [(t(lang, "scheme.contiguous"), &r.contiguous), (t(lang, "scheme.paged"), &r.paged)];
    let keys = ["col.scheme", "col.waste", "col.mean_running", "col.peak_running", "col.finished", "col.steps", "col.preempted"];
    headed(
        ui,
        "infer_paged_table",
        &rows,
        Header { text: &TEXT, lang, keys: &keys },
        |ui, (name, _)| {
            ui.label(*name);
        },
        |ui, (_, run)| {
            ui.monospace(format!("{:.1} %", 100.0 * run.waste()));
            ui.monospace(format!("{:.1}", run.mean_running()));
            ui.monospace(run.peak_running().to_string());
            ui.monospace(format!("{} / {}", run.finished, run.requests));
            ui.monospace(run.steps.to_string());
            ui.monospace(run.preempted.to_string());
        },
    );
}
