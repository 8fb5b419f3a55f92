//! "Frameworks & compilers": how a framework turns a training step into
//! kernels and memory. So far: the MLP's or the CNN's step captured into a
//! static graph and replayed alone (guards, recaptures; the MLP's branch
//! guard and overhead eager vs replayed);
//! its matmuls dispatched through an op registry that times or picks a
//! kernel per shape; its elementwise chains fused into generated WGSL;
//! one step of the engine's models traced, its buffers planned ahead of
//! time into one arena (the lifetime picture), and the same trace run
//! through a model of PyTorch's caching allocator (allocated against
//! reserved), with the interview's "out of memory while memory is free".

mod allocator_view;
mod capture_view;
mod dispatch_view;
mod exercises;
mod fusion_time;
mod fusion_view;
mod plan_view;
mod traced;

use dlsys_core::compile::step::{MAX_DEVICE_MIB, StepModel, StepSettings};

use crate::{Env, Lesson};

pub use exercises::EXERCISES;

crate::lesson_text!("frameworks");

#[derive(Default)]
pub struct Frameworks {
    settings: StepSettings,
    traced: traced::Traced,
    capture: capture_view::Capture,
    dispatch: dispatch_view::Dispatch,
    time: fusion_time::ChainRace,
    /// The self-test is running (it dispatches once the capture is done).
    self_testing: bool,
}

impl Lesson for Frameworks {
    crate::lesson_identity!(exercises: EXERCISES);

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        self.settings.device_mib = self.settings.device_mib.clamp(1, MAX_DEVICE_MIB);
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(8.0);
        let (s, traced, capture) = (&mut self.settings, &mut self.traced, &mut self.capture);
        crate::kit::section(ui, &TEXT, lang, "capture", |ui| capture.ui(ui, &s.mlp, lang));
        let calls = capture.result().map(|c| c.calls.as_slice());
        let dispatch = &mut self.dispatch;
        crate::kit::section(ui, &TEXT, lang, "dispatch", |ui| dispatch.ui(ui, calls, env));
        let time = &mut self.time;
        crate::kit::section(ui, &TEXT, lang, "fusion", |ui| fusion_view::ui(ui, capture, time, env));
        crate::kit::section(ui, &TEXT, lang, "plan", |ui| {
            traced.controls(ui, s, lang);
            plan_view::ui(ui, traced, s, lang);
        });
        crate::kit::section(ui, &TEXT, lang, "allocator", |ui| allocator_view::ui(ui, traced, s, lang));
    }

    fn logic(&mut self, ctx: &egui::Context, env: &Env<'_>) {
        self.traced.logic(ctx, &self.settings);
        self.capture.logic(ctx);
        // The self-test dispatches the step it captured, once captured
        // (on the web the capture is done when it starts).
        if self.self_testing && !self.capture.is_running() {
            self.self_testing = false;
            if let Some(c) = self.capture.result() {
                self.dispatch.self_test_start(&c.calls);
                self.time.start(c, true, env);
            }
        }
        self.dispatch.logic(ctx, env);
        self.time.logic(ctx);
    }

    fn is_busy(&self) -> bool {
        self.traced.is_running()
            || self.capture.is_running()
            || self.dispatch.is_running()
            || self.time.is_busy()
    }

    crate::persist_field!(settings);

    /// One step traced at the default settings, as the page first does,
    /// and captured (not timed); once captured, its matmuls dispatched and
    /// its chains timed on the GPU (the CPU path, said so, without one).
    fn self_test_start(&mut self, _env: &Env<'_>) -> bool {
        let s = StepSettings::default();
        self.self_testing = true;
        self.capture.start(StepModel::Mlp, &s.mlp, 0);
        self.traced.start((s.model, s.mlp));
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        if self.self_testing {
            return None;
        }
        match (
            self.capture.self_test_outcome()?,
            self.traced.self_test_outcome()?,
            self.dispatch.self_test_outcome()?,
            self.time.self_test_outcome()?,
        ) {
            (Ok(a), Ok(b), Ok(c), Ok(d)) => Some(Ok(format!("{a}; {b}; {c}; {d}"))),
            (Err(e), ..) | (_, Err(e), ..) | (_, _, Err(e), _) | (.., Err(e)) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_garbage_is_refused() {
        let mut lesson = Frameworks::default();
        lesson.settings.device_mib = 4096;
        lesson.settings.mlp.batch = 32;
        assert_eq!(crate::reloaded(&lesson, "(device_mib: \"x\")").settings, lesson.settings);
    }
}
