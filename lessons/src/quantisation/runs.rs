//! The trained MLP (trained once, by the engine, when the page first needs
//! it), the table of cells and the outlier demonstration as background
//! jobs with progress, and what they found.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dlsys_core::errors::Localized as _;
use dlsys_core::names::Named as _;
use dlsys_core::quant::{Calibration, QuantError};
use dlsys_core::quant::ptq::{
    self, ActScales, Cell, GranularityKind, OutlierReport, OutlierSettings, PtqSettings, Trained,
};
use dlsys_core::text::Lang;

use super::{Settings, TEXT, t};
use crate::kit::background::Background;
use crate::kit::theme;

/// The model every view uses: the engine's MLP on the digits, as
/// `dlsys-lab quant` trains it by default.
pub fn ptq_settings() -> PtqSettings {
    PtqSettings::default()
}

/// A finished table: its group size, its clip and its cells.
type Table = (usize, Calibration, Result<Vec<Cell>, QuantError>);

#[derive(Default)]
pub struct Runs {
    trained: Option<Result<Arc<Trained>, QuantError>>,
    table: Background<Table>,
    table_done: Option<Table>,
    progress: Arc<AtomicUsize>,
    progress_total: usize,
    outlier: Background<(f64, Result<OutlierReport, QuantError>)>,
    outlier_done: Option<(f64, Result<OutlierReport, QuantError>)>,
    self_test: bool,
}

impl Runs {
    /// The trained model (trained on first use: about a tenth of a second).
    pub fn trained(&mut self) -> Result<Arc<Trained>, QuantError> {
        self.trained
            .get_or_insert_with(|| ptq::train(&ptq_settings()).map(Arc::new))
            .clone()
    }

    pub fn logic(&mut self, ctx: &egui::Context) {
        if let Some(done) = self.table.take(ctx) {
            self.table_done = Some(done);
        }
        if let Some(done) = self.outlier.take(ctx) {
            self.outlier_done = Some(done);
        }
    }

    pub fn is_running(&self) -> bool {
        self.table.is_running() || self.outlier.is_running()
    }

    pub fn start_table(&mut self, s: &Settings, self_test: bool) {
        self.self_test = self_test;
        let trained = match self.trained() {
            Ok(t) => t,
            Err(e) => {
                self.table_done = Some((s.group, s.table_calibration, Err(e)));
                return;
            }
        };
        let (group, calibration) = (s.group, s.table_calibration);
        self.progress = Arc::new(AtomicUsize::new(0));
        self.progress_total = ptq::grid_cells(group).len();
        let progress = self.progress.clone();
        self.table_done = None;
        self.table.start(move || {
            let cells = ptq::grid(&trained, group, calibration, &mut |done, _| {
                progress.store(done, Ordering::Relaxed);
            });
            (group, calibration, cells)
        });
    }

    pub fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        if !self.self_test || self.table.is_running() {
            return None;
        }
        Some(match &self.table_done {
            Some((_, _, Ok(cells))) if cells.len() == self.progress_total && cells.iter().all(|c| c.accuracy.is_finite()) => {
                Ok(format!("{} cells measured", cells.len()))
            }
            Some((_, _, Ok(cells))) => Err(crate::SelfTestFailure(format!("{} cells measured", cells.len()))),
            Some((_, _, Err(e))) => Err(crate::SelfTestFailure(e.to_string())),
            None => Err(crate::SelfTestFailure("the table stopped without a result".to_owned())),
        })
    }

    /// The table: its button, its progress, and its cells.
    pub fn table_ui(&mut self, ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
        ui.label(TEXT.fill(lang, "table.intro", &[("calibration", &ptq::CALIBRATION_EXAMPLES)]));
        ui.horizontal_wrapped(|ui| {
            crate::kit::number_field(ui, t(lang, "table.group"), &mut s.group, 1..=128, 1.0);
            calibration_combo(ui, s, lang);
            let running = self.table.is_running();
            if ui.add_enabled(!running, egui::Button::new(t(lang, "table.run"))).clicked() {
                self.start_table(s, false);
            }
            if running {
                ui.spinner();
                let done = self.progress.load(Ordering::Relaxed);
                ui.label(TEXT.fill(lang, "table.progress", &[("done", &done), ("total", &self.progress_total)]));
            }
        });
        let fp32 = match self.trained() {
            Ok(trained) => trained.fp32_accuracy,
            Err(e) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
                return;
            }
        };
        ui.label(TEXT.fill(lang, "table.fp32", &[("acc", &pct(fp32)), ("epochs", &ptq_settings().epochs)]));
        let Some((group, calibration, result)) = &self.table_done else {
            return;
        };
        let cells = match result {
            Ok(cells) => cells,
            Err(e) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
                return;
            }
        };
        ui.label(TEXT.fill(lang, "table.clipped_by", &[("calibration", &calibration.name(lang))]));
        let kinds = [GranularityKind::Tensor, GranularityKind::Channel, GranularityKind::Group(*group)];
        theme::sideways(ui, "quant_table", |ui| {
            egui::Grid::new("quant_table_grid").striped(true).show(ui, |ui| {
                crate::kit::column_header(ui, &TEXT, lang, "table.col_weights");
                for k in kinds {
                    ui.strong(k.words().say(lang));
                }
                ui.end_row();
                for bits in ptq::GRID_BITS {
                    ui.label(TEXT.fill(lang, "table.row_weights", &[("bits", &bits)]));
                    for k in kinds {
                        cell_ui(ui, cells.iter().find(|c| c.bits == bits && c.granularity == k && c.activations.is_none()));
                    }
                    ui.end_row();
                }
                for (key, acts) in [("table.row_w8a8", ActScales::PerTensor), ("table.row_w8a8_static", ActScales::StaticTensor)] {
                    ui.label(t(lang, key));
                    for k in kinds {
                        cell_ui(ui, cells.iter().find(|c| c.bits == 8 && c.granularity == k && c.activations == Some(acts)));
                    }
                    ui.end_row();
                }
            });
        });
        let series: Vec<super::bits_plot::Series> = kinds
            .iter()
            .map(|k| {
                let points = ptq::GRID_BITS
                    .iter()
                    .rev()
                    .filter_map(|&bits| {
                        cells
                            .iter()
                            .find(|c| c.bits == bits && c.granularity == *k && c.activations.is_none())
                            .map(|c| [f64::from(bits), 100.0 * c.accuracy])
                    })
                    .collect();
                (k.words().say(lang), points)
            })
            .collect();
        super::bits_plot::ui(
            ui,
            "quant_table_plot",
            t(lang, "plot.bits"),
            t(lang, "plot.accuracy"),
            &series,
            (t(lang, "plot.fp32"), 100.0 * fp32),
        );
        if let Ok(trained) = self.trained() {
            let images = trained.test.len();
            let step = format!("{:.2}", 100.0 / images.max(1) as f64);
            ui.small(TEXT.fill(lang, "table.note", &[("images", &images), ("step", &step)]));
        }
    }

    pub fn start_outlier(&mut self, s: &Settings) {
        let trained = match self.trained() {
            Ok(t) => t,
            Err(e) => {
                self.outlier_done = Some((s.outlier, Err(e)));
                return;
            }
        };
        let magnitude = s.outlier;
        self.outlier_done = None;
        self.outlier.start(move || {
            (magnitude, ptq::outlier(&trained, &OutlierSettings { channel: None, magnitude }))
        });
    }

    /// The outlier demonstration: the magnitude, its button, its rows.
    pub fn outlier_ui(&mut self, ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
        ui.label(t(lang, "outlier.intro"));
        ui.horizontal_wrapped(|ui| {
            let label = ui.label(t(lang, "outlier.magnitude"));
            ui.add(egui::Slider::new(&mut s.outlier, 1.0..=1000.0).logarithmic(true))
                .labelled_by(label.id);
            let running = self.outlier.is_running();
            if ui.add_enabled(!running, egui::Button::new(t(lang, "outlier.run"))).clicked() {
                self.start_outlier(s);
            }
            if running {
                ui.spinner();
            }
        });
        let Some((magnitude, result)) = &self.outlier_done else {
            return;
        };
        let report = match result {
            Ok(r) => r,
            Err(e) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
                return;
            }
        };
        ui.label(TEXT.fill(
            lang,
            "outlier.setup",
            &[
                ("channel", &report.channel),
                ("m", &magnitude),
                ("amax", &dlsys_core::float::show_sig(report.outlier_amax, 4)),
                ("others", &dlsys_core::float::show_sig(report.others_amax, 4)),
                ("fp32", &pct(report.planted_fp32_accuracy)),
            ],
        ));
        theme::sideways(ui, "quant_outlier", |ui| {
            egui::Grid::new("quant_outlier_grid").striped(true).show(ui, |ui| {
                crate::kit::column_header(ui, &TEXT, lang, "outlier.col_weights");
                crate::kit::column_header(ui, &TEXT, lang, "outlier.col_acts");
                crate::kit::column_header(ui, &TEXT, lang, "outlier.col_accuracy");
                crate::kit::column_header(ui, &TEXT, lang, "outlier.col_gemm");
                ui.end_row();
                for row in &report.rows {
                    match row.smooth_alpha {
                        Some(alpha) => ui.label(TEXT.fill(
                            lang,
                            "outlier.smoothed",
                            &[("alpha", &alpha), ("weights", &row.weights.words().say(lang))],
                        )),
                        None => ui.label(row.weights.words().say(lang)),
                    };
                    ui.label(row.activations.name(lang));
                    let drop = report.planted_fp32_accuracy - row.accuracy;
                    ui.colored_label(tone(ui.visuals(), drop), pct(row.accuracy));
                    ui.label(t(lang, if row.integer_gemm { "outlier.gemm_yes" } else { "outlier.gemm_no" }));
                    ui.end_row();
                }
            });
        });
        ui.label(TEXT.fill(lang, "outlier.lesson", &[("calibration", &report.calibration_examples)]));
    }
}

/// The tables' clip: min–max, a percentile, the MSE-searched or the KL one.
pub fn calibration_combo(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    let name = |c: &dlsys_core::quant::Calibration| match c {
        dlsys_core::quant::Calibration::Percentile { pct } => format!("{} ({pct})", c.name(lang)),
        _ => c.name(lang),
    };
    let label = t(lang, "table.calibration");
    crate::kit::choice(ui, "quant_table_calibration", label, &mut s.table_calibration, super::TABLE_CALIBRATIONS, name);
}

fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}

/// Colour of an accuracy that dropped by `drop` from fp32's.
fn tone(visuals: &egui::Visuals, drop: f64) -> egui::Color32 {
    if drop > 0.1 {
        theme::bad(visuals)
    } else if drop > 0.01 {
        theme::warn(visuals)
    } else {
        theme::good(visuals)
    }
}

fn cell_ui(ui: &mut egui::Ui, cell: Option<&Cell>) {
    match cell {
        Some(c) => {
            ui.colored_label(tone(ui.visuals(), -c.delta), format!("{} ({:+.1})", pct(c.accuracy), 100.0 * c.delta));
        }
        None => {
            ui.label("–");
        }
    }
}
