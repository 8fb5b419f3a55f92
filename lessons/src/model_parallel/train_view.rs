//! The schedule run on real data: the engine's MLP cut into the page's
//! stages, one step trained through the pipeline (each stage on a thread
//! natively, one after another on the web), timed from its counted FLOPs
//! and the link, its gradients compared bit for bit with gradient
//! accumulation on the unsplit model.

use dlsys_core::errors::Localized as _;
use dlsys_core::names::Named as _;
use dlsys_core::parallel::stages::{
    MAX_LAYERS, MAX_ROWS, MAX_WIDTH, PipeSettings, PipeTraining, train_pipeline,
};
use dlsys_core::parallel::schedule::PipelineError;
use dlsys_core::text::Lang;

use super::{Settings, TEXT, number, pipeline_view, t};
use crate::kit::memo::Memo;
use crate::kit::theme;

/// A run, kept until the settings change.
pub type Runs = Memo<PipeSettings, Result<PipeTraining, PipelineError>>;

/// Whether the stages run on OS threads here (not on the web).
pub const THREADS: bool = !cfg!(target_arch = "wasm32");

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, runs: &mut Runs, lang: Lang) {
    ui.label(t(lang, "train.explain"));
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "train.layers"), &mut s.layers, 1..=MAX_LAYERS, 0.1);
        number(ui, t(lang, "train.width"), &mut s.width, 1..=MAX_WIDTH, 1.0);
        number(ui, t(lang, "train.rows"), &mut s.rows, 1..=MAX_ROWS, 0.2);
    });
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "train.gflops"), &mut s.gflops, 0.01..=1e6, 0.05);
        number(ui, t(lang, "train.alpha"), &mut s.alpha_us, 0.0..=1e6, 0.1);
        number(ui, t(lang, "train.gbps"), &mut s.gbps, 0.01..=1e4, 0.1);
        ui.checkbox(&mut s.ideal, t(lang, "train.ideal"))
            .on_hover_text(t(lang, "train.ideal.tip"));
    });
    let settings = s.pipe();
    match runs.get(&settings, |p| train_pipeline(p, THREADS)) {
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
        }
        Ok(run) => show(ui, run, lang),
    }
}

fn show(ui: &mut egui::Ui, t: &PipeTraining, lang: Lang) {
    let s = &t.settings;
    let sizes: Vec<String> = s.sizes().iter().map(ToString::to_string).collect();
    ui.label(TEXT.fill(
        lang,
        "train.model",
        &[
            ("layers", &s.layers),
            ("sizes", &sizes.join("–")),
            ("positions", &(s.stages * s.kind.chunks())),
            ("schedule", &s.kind.name(lang)),
            ("how", &TEXT.get(lang, if t.threads { "train.threads" } else { "train.in_turn" })),
        ],
    ));
    pipeline_view::timeline(ui, &t.run, lang);
    pipeline_view::table(ui, &t.run, Some(&t.held), lang);
    let same = t.differing == 0 && t.losses == t.reference_losses;
    let verdict = TEXT.fill(
        lang,
        if same { "train.same" } else { "train.differ" },
        &[
            ("differing", &t.differing),
            ("count", &t.elements),
            ("max", &format!("{:e}", t.max_difference)),
        ],
    );
    let color = if same { theme::good(ui.visuals()) } else { theme::bad(ui.visuals()) };
    ui.colored_label(color, verdict);
}

/// The self-test's run: the default settings, as the page shows them.
pub fn self_test() -> crate::SelfTestResult {
    let run = train_pipeline(&Settings::default().pipe(), THREADS)
        .map_err(|e| crate::SelfTestFailure(e.to_string()))?;
    if run.differing != 0 || run.losses != run.reference_losses {
        return Err(crate::SelfTestFailure(format!(
            "{} of {} gradient elements differ from the unsplit accumulation",
            run.differing, run.elements
        )));
    }
    Ok(format!(
        "{} stages, {} micro-batches: {} gradient elements equal to the unsplit accumulation bit for bit",
        run.settings.stages, run.settings.micro, run.elements
    ))
}
