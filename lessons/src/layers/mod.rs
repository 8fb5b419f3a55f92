//! "Layers: norms, convolution, attention": LayerNorm and BatchNorm on one
//! batch and the train/eval bug on a real CNN, convolution as im2col + GEMM,
//! strides and NCHW/NHWC as views, attention weights of a tiny transformer
//! trained here, its cost and the KV cache, and the gradient checks of
//! every layer — all computed by the core's engine.

mod attention;
mod conv;
mod exercises;
mod jobs;
mod norms;
mod strides;

use serde::{Deserialize, Serialize};

use crate::kit::check_panel::{self as check_view, CheckCache, CheckSettings, LAYER_CHECKS};
use crate::{Env, Lesson};

pub use exercises::EXERCISES;

crate::lesson_text!("layers");

/// What the learner set up; survives restarts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub norms: norms::NormSettings,
    pub conv: conv::ConvSettings,
    pub strides: strides::StrideSettings,
    pub check: CheckSettings,
}

pub struct Layers {
    settings: Settings,
    cnn: jobs::CnnJob,
    text: jobs::TextJob,
    checks: CheckCache,
}

impl Default for Layers {
    fn default() -> Self {
        Self {
            settings: Settings::default(),
            cnn: jobs::CnnJob::default(),
            text: jobs::TextJob::default(),
            checks: CheckCache::new(LAYER_CHECKS),
        }
    }
}

impl Lesson for Layers {
    crate::lesson_identity!(exercises: EXERCISES);

    fn logic(&mut self, ctx: &egui::Context, _env: &Env<'_>) {
        self.cnn.logic(ctx);
        self.text.logic(ctx);
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(8.0);
        let Self {
            settings,
            cnn,
            text,
            checks,
        } = self;
        use crate::kit::section;
        section(ui, &TEXT, lang, "norms", |ui| {
            norms::norms_ui(ui, &mut settings.norms, lang);
            ui.add_space(6.0);
            jobs::cnn_ui(ui, cnn, lang);
        });
        section(ui, &TEXT, lang, "conv", |ui| conv::conv_ui(ui, &mut settings.conv, lang));
        section(ui, &TEXT, lang, "strides", |ui| {
            strides::strides_ui(ui, &mut settings.strides, lang);
        });
        section(ui, &TEXT, lang, "attn", |ui| attention::attention_ui(ui, text, lang));
        section(ui, &TEXT, lang, "check", |ui| {
            check_view::check_ui(ui, &mut settings.check, checks, lang);
        });
    }

    fn is_busy(&self) -> bool {
        self.cnn.is_running() || self.text.is_running()
    }

    crate::persist_field!(settings);

    /// The CNN on a few hundred images and twenty transformer steps, through
    /// their buttons' paths.
    fn self_test_start(&mut self, _env: &Env<'_>) -> bool {
        self.cnn.start_quick();
        self.text.start_quick();
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        let (cnn, text) = (self.cnn.outcome()?, self.text.outcome()?);
        let failed = cnn.is_err() || text.is_err();
        let detail = format!("{}; {}", cnn.unwrap_or_else(|e| e.0), text.unwrap_or_else(|e| e.0));
        Some(if failed { Err(crate::SelfTestFailure(detail)) } else { Ok(detail) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip() {
        let mut lesson = Layers::default();
        lesson.settings.conv.stride = 2;
        lesson.settings.strides.nhwc = true;
        assert_eq!(crate::reloaded(&lesson, "(not ron").settings, lesson.settings);
    }
}
