//! "Autograd & MLP": a computation graph stepped backward node by node, the
//! gradient checks of every op, and an MLP trained live.

pub(crate) mod check_view;
mod exercises;
mod graph_view;
mod trainer_view;

use serde::{Deserialize, Serialize};

use crate::{Env, Lesson};

pub use exercises::EXERCISES;

crate::lesson_text!("autograd_mlp");

/// A gradient-check band's name in `lang` (`band.<Variant>`; the CLI and
/// the mixed-precision lesson use it too).
pub fn band_name(band: dlsys_core::autograd::Band, lang: dlsys_core::text::Lang) -> String {
    TEXT.get(lang, &format!("band.{band:?}")).to_owned()
}

/// What a gradient-check band means, for its tooltip (`band.hint.<Band>`).
pub fn band_hint(band: dlsys_core::autograd::Band, lang: dlsys_core::text::Lang) -> String {
    TEXT.get(lang, &format!("band.hint.{band:?}")).to_owned()
}

/// What a planted bug does, in `lang` (`bug.<Variant>`).
pub fn bug_text(bug: dlsys_core::autograd::PlantedBug, lang: dlsys_core::text::Lang) -> String {
    TEXT.get(lang, &format!("bug.{bug:?}")).to_owned()
}

/// Everything the learner set up; survives restarts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub graph: graph_view::GraphSettings,
    pub check: check_view::CheckSettings,
    pub train: trainer_view::TrainSettings,
}

#[derive(Default)]
pub struct AutogradMlp {
    settings: Settings,
    checks: check_view::CheckCache,
    run: trainer_view::TrainRun,
}

impl Lesson for AutogradMlp {
    crate::lesson_identity!(exercises: EXERCISES);

    fn logic(&mut self, ctx: &egui::Context, _env: &Env<'_>) {
        self.run.logic(ctx);
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        let Self {
            settings,
            checks,
            run,
        } = self;
        crate::header_ui(ui, &TEXT, lang);
        ui.add_space(8.0);
        egui::CollapsingHeader::new(egui::RichText::new(TEXT.get(lang, "graph.heading")).strong())
            .default_open(true)
            .show(ui, |ui| graph_view::graph_ui(ui, &mut settings.graph, lang));
        egui::CollapsingHeader::new(egui::RichText::new(TEXT.get(lang, "check.heading")).strong())
            .default_open(true)
            .show(ui, |ui| {
                check_view::check_ui(ui, &mut settings.check, checks, lang);
            });
        egui::CollapsingHeader::new(egui::RichText::new(TEXT.get(lang, "train.heading")).strong())
            .default_open(true)
            .show(ui, |ui| {
                trainer_view::trainer_ui(ui, &mut settings.train, run, lang);
            });
    }

    fn is_busy(&self) -> bool {
        self.run.is_running()
    }

    crate::persist_field!(settings);

    fn self_test_start(&mut self, _env: &Env<'_>) -> bool {
        self.run.self_test_start();
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        self.run.outcome()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip() {
        let mut lesson = AutogradMlp::default();
        lesson.settings.train.hidden = "32".to_owned();
        let saved = lesson.save_state().unwrap_or_default();
        let mut other = AutogradMlp::default();
        assert!(other.load_state(&saved).is_ok());
        assert_eq!(other.settings, lesson.settings);
    }
}
