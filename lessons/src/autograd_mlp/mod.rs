//! "Autograd & MLP": a computation graph stepped backward node by node, the
//! gradient checks of every op, and an MLP trained live.

mod exercises;
mod graph_view;
mod trainer_view;

use serde::{Deserialize, Serialize};

use crate::kit::{check_panel, section};
use crate::{Env, Lesson};

pub use exercises::EXERCISES;

crate::lesson_text!("autograd_mlp");

/// Everything the learner set up; survives restarts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub graph: graph_view::GraphSettings,
    pub check: check_panel::CheckSettings,
    pub train: trainer_view::TrainSettings,
}

#[derive(Default)]
pub struct AutogradMlp {
    settings: Settings,
    checks: check_panel::CheckCache,
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
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(8.0);
        section(ui, &TEXT, lang, "graph", |ui| {
            graph_view::graph_ui(ui, &mut settings.graph, lang);
        });
        section(ui, &TEXT, lang, "check", |ui| {
            check_panel::check_ui(ui, &mut settings.check, checks, lang);
        });
        section(ui, &TEXT, lang, "train", |ui| {
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
        assert_eq!(crate::reloaded(&lesson, "(not ron").settings, lesson.settings);
    }
}
