//! The OCP MX block formats on the trained MLP: each element type (FP8,
//! FP6, FP4, INT8 with a shared E8M0 scale per block of 32) beside int8 and
//! int4 per group of 32 with fp16 scales — bits per weight, test accuracy,
//! SQNR and the values the spec's scale makes saturate — from
//! `dlsys_core::quant::mx`, computed off the UI thread on click.

use std::sync::Arc;

use dlsys_core::errors::Localized as _;
use dlsys_core::names::Named as _;
use dlsys_core::quant::QuantError;
use dlsys_core::quant::mx::{self, MxReport};
use dlsys_core::quant::ptq::Trained;
use dlsys_core::text::Lang;

use super::{TEXT, t};
use crate::kit::background::Background;
use crate::kit::theme;

#[derive(Default)]
pub struct MxRuns {
    job: Background<Result<MxReport, QuantError>>,
    last: Option<Result<MxReport, QuantError>>,
}

impl MxRuns {
    pub fn logic(&mut self, ctx: &egui::Context) {
        if let Some(done) = self.job.take(ctx) {
            self.last = Some(done);
        }
    }

    pub fn is_running(&self) -> bool {
        self.job.is_running()
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, trained: &Result<Arc<Trained>, QuantError>, lang: Lang) {
        crate::kit::prose(ui, t(lang, "mx.intro"));
        ui.horizontal_wrapped(|ui| {
            let running = self.job.is_running();
            if ui.add_enabled(!running, egui::Button::new(t(lang, "mx.run"))).clicked() {
                match trained {
                    Ok(trained) => {
                        let trained = trained.clone();
                        self.last = None;
                        self.job.start(move || mx::mlp_table(&trained));
                    }
                    Err(e) => self.last = Some(Err(e.clone())),
                }
            }
            if running {
                ui.spinner();
            }
        });
        match &self.last {
            Some(Ok(report)) => table_ui(ui, report, lang),
            Some(Err(e)) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            }
            None => {}
        }
    }
}

fn table_ui(ui: &mut egui::Ui, report: &MxReport, lang: Lang) {
    let pct = |x: f64| format!("{:.1} % ({:+.1})", 100.0 * x, 100.0 * (x - report.fp32_accuracy));
    theme::sideways(ui, "quant_mx", |ui| {
        egui::Grid::new("quant_mx_grid").striped(true).show(ui, |ui| {
            for key in ["mx.col_format", "mx.col_bits", "mx.col_accuracy", "mx.col_sqnr", "mx.col_saturated"] {
                crate::kit::column_header(ui, &TEXT, lang, key);
            }
            ui.end_row();
            for r in &report.rows {
                ui.label(r.element.name(lang));
                ui.label(format!("{:.3}", r.bits_per_value));
                ui.label(pct(r.accuracy));
                ui.label(r.error.sqnr_db.map_or_else(|| "∞".to_owned(), |d| format!("{d:.1} dB")));
                ui.label(r.saturated.to_string());
                ui.end_row();
            }
            for (cell, bits) in &report.baselines {
                ui.label(TEXT.fill(lang, "mx.baseline", &[("bits", &cell.bits)]));
                ui.label(format!("{bits:.3}"));
                ui.label(pct(cell.accuracy));
                let sqnr = cell.weight_error.sqnr_db;
                ui.label(sqnr.map_or_else(|| "∞".to_owned(), |d| format!("{d:.1} dB")));
                ui.label(cell.weight_error.clipped.to_string());
                ui.end_row();
            }
        });
    });
    crate::kit::prose(ui, t(lang, "mx.note"));
}
