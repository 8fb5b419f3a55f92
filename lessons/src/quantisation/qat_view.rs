//! Quantisation-aware training on the page: the trained MLP fine-tuned
//! with fake-quantised weights (a background job with progress and a
//! Stop), the quantised model's test accuracy after each epoch against
//! fp32 and against post-training quantisation at the same settings.

use std::sync::Arc;

use dlsys_core::errors::Localized as _;
use dlsys_core::quant::QuantError;
use dlsys_core::quant::ptq::{GranularityKind, Trained};
use dlsys_core::quant::qat::{self, MAX_QAT_EPOCHS, QatReport, QatSettings};
use dlsys_core::text::Lang;

use super::{Settings, TEXT, t};
use crate::kit::background::Stoppable;
use crate::kit::theme::{self, ReadableAxes as _};

#[derive(Default)]
pub struct QatRun {
    job: Stoppable<Result<QatReport, QuantError>>,
}

impl QatRun {
    pub fn logic(&mut self, ctx: &egui::Context) {
        self.job.logic(ctx);
    }

    pub fn is_running(&self) -> bool {
        self.job.is_running()
    }

    fn start(&mut self, trained: Arc<Trained>, s: &Settings) {
        let settings = QatSettings {
            bits: s.qat_bits,
            granularity: GranularityKind::Tensor,
            epochs: s.qat_epochs,
            ..QatSettings::default()
        };
        let ptq = super::runs::ptq_settings();
        self.job.start(move |step| qat::fine_tune(&trained, &ptq, &settings, &mut |_, _| step()));
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, s: &mut Settings, trained: &Result<Arc<Trained>, QuantError>, lang: Lang) {
        ui.label(t(lang, "qat.intro"));
        ui.horizontal_wrapped(|ui| {
            crate::kit::number_field(ui, t(lang, "qat.bits"), &mut s.qat_bits, 2..=8, 0.1);
            crate::kit::number_field(ui, t(lang, "qat.epochs"), &mut s.qat_epochs, 1..=20, 0.1);
            let total = s.qat_epochs;
            let progress = |done: u64| TEXT.fill(lang, "qat.progress", &[("done", &done), ("total", &total)]);
            if self.job.controls_ui(ui, lang, t(lang, "qat.run"), progress) {
                match trained {
                    Ok(trained) => self.start(trained.clone(), s),
                    Err(e) => self.job.last = Some(Err(e.clone())),
                }
            }
        });
        match &self.job.last {
            Some(Ok(report)) => results(ui, report, lang),
            Some(Err(e)) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            }
            None => {}
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}

fn results(ui: &mut egui::Ui, r: &QatReport, lang: Lang) {
    use egui_plot::{HLine, Line, PlotPoints};
    let visuals = ui.visuals().clone();
    ui.label(TEXT.fill(
        lang,
        "qat.result",
        &[
            ("bits", &r.settings.bits),
            ("fp32", &pct(r.fp32_accuracy)),
            ("ptq", &pct(r.ptq_accuracy)),
            ("epochs", &r.accuracy.len()),
            ("qat", &pct(r.final_accuracy())),
        ],
    ));
    let points: PlotPoints<'static> = std::iter::once([0.0, 100.0 * r.ptq_accuracy])
        .chain(r.accuracy.iter().enumerate().map(|(i, a)| [i as f64 + 1.0, 100.0 * a]))
        .collect::<Vec<_>>()
        .into();
    let (qat_name, fp32_name) = (t(lang, "qat.series_qat").to_owned(), t(lang, "qat.series_fp32").to_owned());
    let (qat_colour, fp32_colour) = (theme::series(&visuals, 0), theme::series(&visuals, 1));
    crate::kit::figure::plot("quant_qat", 180.0, t(lang, "qat.axis_epoch"), t(lang, "qat.axis_accuracy"))
        .readable_x()
        .readable_y()
        .show(ui, |plot| {
            plot.hline(HLine::new(fp32_name.clone(), 100.0 * r.fp32_accuracy).color(fp32_colour));
            plot.line(Line::new(qat_name.clone(), points).color(qat_colour));
        });
    crate::kit::figure::legend(
        ui,
        "quant_qat",
        &[
            crate::kit::figure::Key::line(qat_name, qat_colour),
            crate::kit::figure::Key::rule(fp32_name, fp32_colour),
        ],
    );
    ui.small(TEXT.fill(lang, "qat.note", &[("max", &MAX_QAT_EPOCHS)]));
}
