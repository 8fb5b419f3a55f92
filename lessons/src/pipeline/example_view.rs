//! The worked example interviews use — an epoch of images whose loading
//! alone outlasts the compute, with 1 and k workers — from the model, and
//! the same arithmetic checked on the run above.

use dlsys_core::memory::show_seconds;
use dlsys_core::pipeline::{epoch_seconds, predict};
use dlsys_core::text::Lang;

use super::run_view::Runs;
use super::{Settings, TEXT, cores, number, t};

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, runs: &mut Runs, lang: Lang) {
    ui.label(t(lang, "example.explain"));
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "example.images"), &mut s.images, 1.0..=1e10, 1000.0);
        number(ui, t(lang, "example.image_ms"), &mut s.image_ms, 0.0..=1e4, 0.05);
        number(ui, t(lang, "example.compute_ms"), &mut s.compute_ms, 0.0..=1e4, 0.05);
        number(ui, t(lang, "example.workers"), &mut s.example_workers, 1..=1024, 0.1);
    });
    let (data, compute) = (s.image_ms * 1e-3, s.compute_ms * 1e-3);
    let one = epoch_seconds(s.images, data, compute, 1);
    let k = epoch_seconds(s.images, data, compute, s.example_workers);
    ui.label(TEXT.fill(
        lang,
        "example.result",
        &[
            ("images", &format!("{}", s.images)),
            ("ms", &s.image_ms),
            ("compute", &s.compute_ms),
            ("k", &s.example_workers),
            ("epoch", &show_seconds(k)),
            ("one", &show_seconds(one)),
            ("speedup", &format!("{:.2}", one / k.max(f64::MIN_POSITIVE))),
        ],
    ));
    // The same arithmetic on the real run: an epoch of this data set.
    let Some(Ok(finished)) = &runs.last else {
        return;
    };
    let run = finished.main();
    let examples = finished.examples;
    let p = predict(finished.costs(), run.settings.workers, cores(), run.settings.threads);
    let measured = run.samples_per_s();
    if examples == 0 || measured <= 0.0 {
        return;
    }
    ui.label(TEXT.fill(
        lang,
        "example.real",
        &[
            ("examples", &examples),
            ("k", &run.settings.workers),
            ("predicted", &show_seconds(examples as f64 / p.samples_per_s(run.settings.batch).max(f64::MIN_POSITIVE))),
            ("measured", &show_seconds(examples as f64 / measured)),
        ],
    ));
}
