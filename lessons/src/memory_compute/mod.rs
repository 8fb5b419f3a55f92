//! "Memory & compute": a training step's memory by component and its FLOPs
//! — for the engine's MLP estimated beside measured (the engine counts every
//! buffer it holds), and for decoder-only transformers from their
//! configuration, with ZeRO, the KV cache and checkpointing.

mod bars;
mod exercises;
mod mlp_view;
mod transformer_view;

use serde::{Deserialize, Serialize};

use crate::{Env, Lesson};

pub use exercises::EXERCISES;

crate::lesson_text!("memory_compute");

/// Everything the learner set up; survives restarts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub mlp: mlp_view::MlpSettings,
    pub transformer: transformer_view::TransformerSettings,
}

#[derive(Default)]
pub struct MemoryCompute {
    settings: Settings,
    measuring: mlp_view::Measuring,
    /// The quantisation lesson, when its link was clicked.
    open_request: Option<String>,
}

impl Lesson for MemoryCompute {
    crate::lesson_identity!(exercises: EXERCISES);

    fn logic(&mut self, ctx: &egui::Context, _env: &Env<'_>) {
        self.measuring.logic(ctx, &self.settings.mlp);
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(8.0);
        crate::kit::section(ui, &TEXT, lang, "mlp", |ui| {
            mlp_view::mlp_ui(ui, &mut self.settings.mlp, &mut self.measuring, lang);
        });
        let open_request = &mut self.open_request;
        crate::kit::section(ui, &TEXT, lang, "tf", |ui| {
            transformer_view::transformer_ui(ui, &mut self.settings.transformer, lang);
            crate::kit::lesson_link(ui, TEXT.get(lang, "tf.quantisation"), "quantisation", open_request);
        });
    }

    fn is_busy(&self) -> bool {
        self.measuring.is_running()
    }

    crate::persist_field!(settings);

    fn take_open_request(&mut self) -> Option<String> {
        self.open_request.take()
    }

    /// Measures the default MLP, as the page does when it opens.
    fn self_test_start(&mut self, _env: &Env<'_>) -> bool {
        self.measuring.start_self_test();
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        self.measuring.self_test_outcome()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsys_core::memory::Component;
    use dlsys_core::memory::measure::Phase;
    use dlsys_core::names::Named as _;
    use dlsys_core::text::Lang;

    #[test]
    fn settings_round_trip_and_garbage_is_an_error() {
        let mut lesson = MemoryCompute::default();
        lesson.settings.mlp.batch = 7;
        lesson.settings.transformer.ranks = 16;
        assert_eq!(crate::reloaded(&lesson, "(mlp: (batch: \"x\"))").settings, lesson.settings);
    }

    #[test]
    fn every_component_and_phase_has_a_name_in_both_languages() {
        for lang in Lang::ALL {
            for c in Component::ALL {
                assert!(!c.name(lang).starts_with("component."), "{c:?}");
            }
            for p in Phase::ALL {
                assert!(!p.name(lang).starts_with("phase."), "{p:?}");
            }
        }
    }
}
