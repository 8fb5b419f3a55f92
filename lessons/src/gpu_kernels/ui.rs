//! The GPU lesson's controls and results table.

use std::collections::BTreeSet;

use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::kernels::{Data, Kernel, ReduceKind, ReduceOp, SoftmaxKind};
use dlsys_core::text::Lang;
use dlsys_shaders::Outcome;
use dlsys_shaders::report::Row;

use super::{GpuKernels, TEXT};
use crate::Env;
use crate::kit::theme;

impl GpuKernels {
    pub(super) fn controls_ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        let t = |key| TEXT.get(lang, key);
        let busy = self.race.is_busy();
        ui.add_enabled_ui(!busy, |ui| {
            let s = &mut self.settings;
            ui.horizontal_wrapped(|ui| {
                let label = ui.label(t("controls.rows"));
                ui.add(egui::DragValue::new(&mut s.rows).range(1..=200_000))
                    .labelled_by(label.id);
                let label = ui.label(t("controls.cols"));
                ui.add(egui::DragValue::new(&mut s.cols).range(1..=1_000_000))
                    .labelled_by(label.id);
                let data = |d: &Data| TEXT.get(lang, &format!("data.{}", d.id())).to_owned();
                crate::kit::choice(ui, "gpu_data", t("controls.data"), &mut s.data, Data::ALL, data);
                let label = ui.label(t("controls.trials"));
                ui.add(egui::DragValue::new(&mut s.trials).range(1..=50))
                    .labelled_by(label.id);
                let label = ui.label(t("controls.op"));
                ui.selectable_value(&mut s.op, ReduceOp::Sum, "sum")
                    .labelled_by(label.id);
                ui.selectable_value(&mut s.op, ReduceOp::Max, "max");
            });
            let mb = s.rows as f64 * s.cols as f64 * 4.0 / 1e6;
            ui.weak(TEXT.fill(
                lang,
                "controls.size",
                &[
                    ("rows", &s.rows),
                    ("cols", &s.cols),
                    ("mb", &show_sig(mb, 3)),
                    ("n", &(u64::from(s.rows) * u64::from(s.cols))),
                ],
            ));
            ui.horizontal_wrapped(|ui| {
                ui.strong(t("controls.softmax"));
                for kind in SoftmaxKind::ALL {
                    let id = Kernel::Softmax(kind).id();
                    toggle(ui, &mut s.selected, &id, kind.id());
                }
            });
            ui.horizontal_wrapped(|ui| {
                ui.strong(t("controls.reduce"));
                for kind in ReduceKind::ALL {
                    let id = Kernel::Reduce(kind, ReduceOp::Sum).id();
                    toggle(ui, &mut s.selected, &id, kind.id());
                }
            });
        });
        if !self.race.progress_ui(ui, lang) {
            ui.horizontal(|ui| {
                if ui.button(t("controls.run")).clicked() {
                    self.start(env, false);
                }
                if ui.button(t("controls.race")).clicked() {
                    self.start(env, true);
                }
            });
        }
    }

    pub(super) fn results_ui(&self, ui: &mut egui::Ui, lang: Lang) {
        if self.race.results.is_empty() {
            return;
        }
        let t = |key| TEXT.get(lang, key);
        let visuals = ui.visuals().clone();
        theme::sideways(ui, "gpu_results", |ui| {
                egui::Grid::new("gpu_results_grid")
                    .striped(true)
                    .spacing([12.0, 4.0])
                    .show(ui, |ui| {
                        for key in [
                            "table.kernel",
                            "table.ok",
                            "table.median",
                            "table.spread",
                            "table.bytes",
                            "table.passes",
                            "table.dispatches",
                            "table.gbs",
                            "table.copy",
                            "table.error",
                        ] {
                            crate::kit::column_header(ui, &TEXT, lang, key);
                        }
                        ui.end_row();
                        for outcome in &self.race.results {
                            ui.label(outcome.id());
                            match outcome {
                                Outcome::Ran(r) => {
                                    let (status, color) = if r.ok {
                                        (t("status.ok"), theme::good(&visuals))
                                    } else if r.kernel.expected_to_overflow() {
                                        (t("status.overflow"), theme::warn(&visuals))
                                    } else {
                                        (t("status.wrong"), theme::bad(&visuals))
                                    };
                                    ui.colored_label(color, status);
                                    ui.monospace(show_sig(r.median_ms, 4));
                                    ui.monospace(format!(
                                        "{}–{}",
                                        show_sig(r.min_ms, 3),
                                        show_sig(r.max_ms, 3)
                                    ));
                                    ui.monospace(show_sig(r.bytes as f64 / 1e6, 4));
                                    ui.monospace(r.input_passes.to_string());
                                    ui.monospace(r.dispatches.to_string());
                                    ui.monospace(show_sig(r.gb_per_s, 3));
                                    ui.monospace(
                                        r.fraction_of_copy
                                            .map_or("—".to_owned(), |f| show_sig(f, 2)),
                                    );
                                    if r.special_mismatches > 0 || !r.max_rel_error.is_finite() {
                                        // NaN/inf against a finite reference: not an error of 0.
                                        ui.colored_label(
                                            theme::bad(&visuals),
                                            t("table.error_nonfinite"),
                                        )
                                        .on_hover_text(TEXT.fill(
                                            lang,
                                            "table.error_nonfinite_hint",
                                            &[("count", &r.special_mismatches)],
                                        ));
                                    } else {
                                        ui.monospace(show_sig(r.max_rel_error, 2));
                                    }
                                }
                                // The reason is a sentence: below the table, not in a column.
                                Outcome::Skipped { .. } | Outcome::Program(Err(_)) => {
                                    ui.weak(t("status.skipped_short"));
                                }
                                Outcome::Cpu(c) => {
                                    ui.weak("CPU");
                                    ui.monospace(show_sig(c.ms, 4));
                                    ui.monospace("—");
                                    ui.monospace(show_sig(c.bytes as f64 / 1e6, 4));
                                    ui.monospace(c.passes.to_string());
                                    ui.monospace("—");
                                    let gbs = outcome.measured().map_or(f64::NAN, |m| m.gb_per_s);
                                    ui.monospace(show_sig(gbs, 3));
                                    // Checked against the reference on the GPU path only.
                                    ui.monospace("—");
                                    ui.monospace("—");
                                }
                                // The softmax ladder has no programs.
                                Outcome::Program(Ok(_)) => {}
                            }
                            ui.end_row();
                        }
                    });
            });
        for outcome in &self.race.results {
            if let Outcome::Skipped { why, .. } | Outcome::Program(Err((_, why))) = outcome {
                let why = why.message(lang);
                ui.weak(format!(
                    "{}: {}",
                    outcome.id(),
                    TEXT.fill(lang, "status.skipped", &[("why", &why)])
                ));
            }
        }
        let ran: Vec<&Row> = self.race.results.iter().filter_map(Outcome::ran).collect();
        for r in &ran {
            if r.dispatch_ms.len() > 1 {
                let parts: Vec<String> = r
                    .dispatch_ms
                    .iter()
                    .map(|ms| format!("{} ms", show_sig(*ms, 3)))
                    .collect();
                ui.weak(TEXT.fill(
                    lang,
                    "dispatch.breakdown",
                    &[("kernel", &r.kernel.id()), ("parts", &parts.join(" + "))],
                ));
            }
        }
        let summary = dlsys_shaders::Summary::of(&self.race.results);
        if let (Some(best), Some(ms), Some(speedup)) = (
            &summary.best_softmax,
            summary.best_softmax_ms,
            summary.best_vs_three_pass_speedup,
        ) {
            let fraction = summary.best_softmax_fraction_of_copy;
            ui.label(TEXT.fill(
                lang,
                "summary.best",
                &[
                    ("kernel", best),
                    ("ms", &show_sig(ms, 3)),
                    ("fraction", &fraction.map_or("—".to_owned(), |f| show_sig(f, 2))),
                    ("speedup", &show_sig(speedup, 3)),
                ],
            ));
        }
        if ran.iter().any(|r| r.kernel.expected_to_overflow() && !r.ok) {
            ui.colored_label(theme::warn(&visuals), t("summary.overflow"));
        }
        let measured: Vec<_> = self.race.results.iter().filter_map(Outcome::measured).collect();
        crate::kit::kernel_plots::show(ui, lang, &measured);
    }
}

fn toggle(ui: &mut egui::Ui, selected: &mut BTreeSet<String>, id: &str, label: &str) {
    let mut on = selected.contains(id);
    if ui.checkbox(&mut on, label).changed() {
        if on {
            selected.insert(id.to_owned());
        } else {
            selected.remove(id);
        }
    }
}
