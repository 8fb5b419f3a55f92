//! fp8 training on the page: the MLP trained under fp32, bf16 and TE's
//! HYBRID fp8 with current and delayed scaling (a background job, the
//! loss curves side by side, what the casts did), and a stale delayed
//! scale on one grown tensor, cast saturating and not.

use dlsys_core::errors::Localized as _;
use dlsys_core::float::Format;
use dlsys_core::quant::QuantError;
use dlsys_core::quant::fp8::{Fp8Scaling, stale_scale};
use dlsys_core::quant::fp8_train::{self, Fp8Run, Fp8TrainSettings, Recipe};
use dlsys_core::text::Lang;

use super::{Settings, TEXT, t};
use crate::kit::background::Stoppable;
use crate::kit::theme::{self, ReadableAxes as _};

const RECIPES: [Recipe; 4] = [
    Recipe::Fp32,
    Recipe::Bf16,
    Recipe::Hybrid(Fp8Scaling::Current),
    Recipe::Hybrid(Fp8Scaling::Delayed { history: 16 }),
];

#[derive(Default)]
pub struct Fp8Runs {
    /// Steps are epochs, over all recipes.
    job: Stoppable<Result<Vec<Fp8Run>, QuantError>>,
}

impl Fp8Runs {
    pub fn logic(&mut self, ctx: &egui::Context) {
        self.job.logic(ctx);
    }

    pub fn is_running(&self) -> bool {
        self.job.is_running()
    }

    fn start(&mut self, epochs: u64) {
        self.job.start(move |step| {
            RECIPES
                .iter()
                .map(|&recipe| {
                    let settings = Fp8TrainSettings {
                        recipe,
                        epochs,
                        ..Fp8TrainSettings::default()
                    };
                    fp8_train::train(&settings, &mut |_, _| step())
                })
                .collect()
        });
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
        ui.label(t(lang, "fp8.intro"));
        stale_ui(ui, lang);
        ui.horizontal_wrapped(|ui| {
            crate::kit::number_field(ui, t(lang, "fp8.epochs"), &mut s.fp8_epochs, 1..=30, 0.1);
            let total = s.fp8_epochs * RECIPES.len() as u64;
            let progress = |done: u64| TEXT.fill(lang, "fp8.progress", &[("done", &done), ("total", &total)]);
            if self.job.controls_ui(ui, lang, t(lang, "fp8.run"), progress) {
                self.start(s.fp8_epochs);
            }
        });
        match &self.job.last {
            Some(Ok(runs)) => results(ui, runs, lang),
            Some(Err(e)) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            }
            None => {}
        }
    }
}

/// The delayed-scaling hazard, from the core on one grown tensor.
fn stale_ui(ui: &mut egui::Ui, lang: Lang) {
    let grown: Vec<f32> = (1..=16).map(|i| i as f32 / 4.0).collect();
    for format in [Format::fp8_e4m3(), Format::fp8_e5m2()] {
        let s = stale_scale(&grown, 1.0, &format, 0);
        ui.label(TEXT.fill(
            lang,
            "fp8.stale",
            &[
                ("format", &s.format),
                ("scale", &s.saturating.scale),
                ("history", &s.history_amax),
                ("amax", &s.saturating.amax),
                ("count", &s.saturating.values),
                ("saturated", &s.saturating.saturated),
                ("overflowed", &s.overflowing.overflowed),
            ],
        ));
    }
}

fn results(ui: &mut egui::Ui, runs: &[Fp8Run], lang: Lang) {
    use egui_plot::{Line, PlotPoints};
    let visuals = ui.visuals().clone();
    let keys: Vec<(String, egui::Color32)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.recipe.id(), theme::series(&visuals, i)))
        .collect();
    // The curves lie within a percent of each other: drawn as each one's
    // distance from fp32's, epoch by epoch, fp32 itself the zero line.
    let fp32 = runs.iter().find(|r| r.recipe == Recipe::Fp32).map(|r| r.loss.clone()).unwrap_or_default();
    crate::kit::figure::plot("quant_fp8", 200.0, t(lang, "fp8.axis_epoch"), t(lang, "fp8.axis_loss"))
        .readable_x()
        .readable_y()
        .show(ui, |plot| {
            for (r, (name, colour)) in runs.iter().zip(&keys) {
                let points: PlotPoints<'static> = (r.loss.iter().zip(&fp32).enumerate())
                    .map(|(i, (l, f))| [i as f64 + 1.0, 100.0 * (l / f - 1.0)])
                    .collect::<Vec<_>>()
                    .into();
                plot.line(Line::new(name.clone(), points).color(*colour));
            }
        });
    let legend: Vec<_> = keys.iter().map(|(n, c)| crate::kit::figure::Key::line(n.clone(), *c)).collect();
    crate::kit::figure::legend(ui, "quant_fp8", &legend);
    for r in runs {
        ui.label(TEXT.fill(
            lang,
            "fp8.row",
            &[
                ("recipe", &r.recipe.id()),
                ("loss", &format!("{:.4}", r.loss.last().copied().unwrap_or(f64::NAN))),
                ("accuracy", &format!("{:.2} %", 100.0 * r.accuracy.last().copied().unwrap_or(f64::NAN))),
                ("saturated", &(r.forward.saturated + r.backward.saturated)),
                ("underflowed", &(r.forward.underflowed + r.backward.underflowed)),
            ],
        ));
    }
}
