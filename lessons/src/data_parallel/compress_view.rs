//! Gradient compression measured: the page's run (workers, shard, steps)
//! trained once per compression on the two-moons data
//! (`collective::compare_compressions`), the bytes each sends per step
//! against the loss it ends at and its test accuracy.

use dlsys_core::collective::{CollectiveError, CompressionRow, DpSettings, compare_compressions};
use dlsys_core::errors::Localized as _;
use dlsys_core::memory::show_bytes;
use dlsys_core::nn::data;
use dlsys_core::text::Lang;

use super::{Settings, TEXT, t};
use crate::kit::background::Background;
use crate::kit::theme;

type Outcome = (DpSettings, Result<Vec<CompressionRow>, CollectiveError>);

/// The comparison in flight and the last one made.
#[derive(Default)]
pub struct Comparison {
    job: Background<Outcome>,
    last: Option<Outcome>,
}

impl Comparison {
    pub fn logic(&mut self, ctx: &egui::Context) {
        if let Some(outcome) = self.job.take(ctx) {
            self.last = Some(outcome);
        }
    }

    pub fn is_running(&self) -> bool {
        self.job.is_running()
    }
}

fn compare(settings: DpSettings) -> Outcome {
    let result = (|| {
        let moons = data::load("moons", 7).map_err(|e| CollectiveError::Model { reason: e.to_string() })?;
        let (train, test) = moons.split(data::TEST_FRACTION, 7);
        compare_compressions(&settings, &train, &test, cfg!(not(target_arch = "wasm32")))
    })();
    (settings, result)
}

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, comparison: &mut Comparison, lang: Lang) {
    crate::kit::prose(ui, t(lang, "compress.explain"));
    let wanted = super::train_view::dp_settings(s);
    ui.horizontal_wrapped(|ui| {
        let running = comparison.is_running();
        if ui.add_enabled(!running, egui::Button::new(t(lang, "compress.run"))).clicked() {
            let settings = wanted.clone();
            comparison.job.start(move || compare(settings));
            ui.ctx().request_repaint();
        }
        if running {
            ui.spinner();
            ui.label(t(lang, "train.running"));
        }
    });
    let Some((ran, result)) = &comparison.last else {
        return;
    };
    if *ran != wanted {
        ui.weak(t(lang, "train.stale"));
    }
    match result {
        Ok(rows) => table(ui, ran, rows, lang),
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
        }
    }
}

fn table(ui: &mut egui::Ui, ran: &DpSettings, rows: &[CompressionRow], lang: Lang) {
    ui.label(TEXT.fill(lang, "compress.ran", &[("n", &ran.workers), ("b", &ran.shard), ("steps", &ran.steps)]));
    let full = rows.first().map_or(1, |r| r.bytes_per_step).max(1);
    crate::kit::table::pinned(
        ui,
        "dp_compress_table",
        rows.len() + 1,
        crate::kit::table::Look::default(),
        |ui, r| {
            if r == 0 {
                crate::kit::column_header(ui, &TEXT, lang, "col.compression");
            } else {
                ui.label(rows[r - 1].compression.words().say(lang));
            }
        },
        |ui, r| {
            if r == 0 {
                for key in ["col.bytes", "col.fewer", "col.final_loss", "col.test_accuracy"] {
                    crate::kit::column_header(ui, &TEXT, lang, key);
                }
                return;
            }
            let row = &rows[r - 1];
            ui.label(show_bytes(row.bytes_per_step));
            ui.label(format!("{:.1}×", full as f64 / row.bytes_per_step.max(1) as f64));
            ui.label(format!("{:.4}", row.final_loss));
            ui.label(format!("{:.1} %", 100.0 * row.test_accuracy));
        },
    );
    if rows.iter().any(|r| !r.replicas_identical) {
        ui.colored_label(theme::bad(ui.visuals()), t(lang, "train.not_identical"));
    }
}
