//! "Mixed precision": the float emulator and the autograd engine joined — an
//! MLP trained under an emulated fp16 / bf16 / tf32 / fp8 policy next to its
//! fp32 twin, with loss scaling, gradient histograms against the format's
//! range, and the gradient check in every precision.

mod autocast;
mod check_view;
mod exercises;
mod results;
mod runs;

use dlsys_core::float::{Format, show_sig};
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};

use crate::{Env, Lesson};

pub use exercises::EXERCISES;
pub use results::Zones;
pub use runs::CustomPolicy;

crate::lesson_text!("mixed_precision");

/// A precision policy in words, in `lang` (the core's `describe` is the
/// English for logs and JSON).
pub fn policy_text(policy: &dlsys_core::mixed::Policy, lang: Lang) -> String {
    use dlsys_core::mixed::{LossScale, MasterWeights};
    let master = match policy.master_weights {
        MasterWeights::Fp32 => "fp32".to_owned(),
        _ => TEXT.get(lang, "policy.same").to_owned(),
    };
    let scale = match policy.loss_scale {
        LossScale::None => TEXT.get(lang, "policy.scale_none").to_owned(),
        LossScale::Static(s) => TEXT.fill(lang, "policy.scale_static", &[("scale", &s)]),
        LossScale::Dynamic { .. } => TEXT.get(lang, "policy.scale_dynamic").to_owned(),
    };
    TEXT.fill(
        lang,
        "policy.describe",
        &[
            ("compute", &policy.compute),
            ("grads", &policy.grads),
            ("state", &policy.optimizer_state),
            ("accumulation", &policy.accumulation),
            ("master", &master),
            ("scale", &scale),
        ],
    )
}

/// Everything the learner set up; survives restarts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub custom: CustomPolicy,
}

#[derive(Default)]
pub struct MixedPrecision {
    settings: Settings,
    run: runs::PairRun,
    checks: check_view::CheckCache,
}

impl Lesson for MixedPrecision {
    crate::lesson_identity!(exercises: EXERCISES);

    fn logic(&mut self, ctx: &egui::Context, _env: &Env<'_>) {
        self.run.logic(ctx);
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        crate::kit::header_ui(ui, &TEXT, lang);
        ranges_note(ui, lang);
        ui.add_space(8.0);
        crate::kit::section(ui, &TEXT, lang, "train", |ui| {
            runs::controls_ui(ui, &mut self.settings.custom, &mut self.run, lang);
            results::results_ui(ui, &self.run, lang);
        });
        crate::kit::section_opened(ui, &TEXT, lang, "autocast", false, |ui| {
            autocast::autocast_ui(ui, lang);
        });
        crate::kit::section_opened(ui, &TEXT, lang, "check", false, |ui| {
            check_view::check_ui(ui, &mut self.checks, lang);
        });
    }

    fn is_busy(&self) -> bool {
        self.run.is_running()
    }

    crate::persist_field!(settings);

    /// The first scenario button, as the learner presses it.
    fn self_test_start(&mut self, env: &Env<'_>) -> bool {
        // Two epochs of the first scenario and its baseline: the same code
        // as the button, in seconds.
        self.run.start_scenario_for(runs::BUTTONS[0], 2, env.lang);
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        self.run.outcome()
    }
}

/// fp16's and bf16's ranges in one line each, from the emulator.
fn ranges_note(ui: &mut egui::Ui, lang: Lang) {
    for format in [Format::fp16(), Format::bf16()] {
        let zones = Zones::of(&format);
        let r = format.range();
        ui.weak(TEXT.fill(
            lang,
            "ranges",
            &[
                ("format", &format.name),
                ("max", &show_sig(r.max_finite, 5)),
                ("normal", &show_sig(r.min_normal, 3)),
                ("normal_log", &zones.normal),
                ("sub", &show_sig(r.min_subnormal, 3)),
                ("flush", &zones.flush),
                ("flush_value", &show_sig(2f64.powf(zones.flush), 3)),
            ],
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_garbage_is_an_error() {
        let mut lesson = MixedPrecision::default();
        lesson.settings.custom.compute = "bf16".to_owned();
        assert_eq!(crate::reloaded(&lesson, "(custom: (compute: 7))").settings, lesson.settings);
    }
}
