//! "Input pipelines": the engine's MLP trained through the real loader of
//! `dlsys_core::pipeline` — k workers, a prefetch queue, per-sample stages
//! — drawn live, its utilisation measured beside the model's, the
//! throughput against the workers, and the interview's worked example.

mod example_view;
mod exercises;
mod run_view;
mod sweep_view;

use dlsys_core::pipeline::{MAX_PREFETCH, MAX_WORKERS, PipelineSettings};
use serde::{Deserialize, Serialize};

use crate::{Env, Lesson};
/// The lesson's views take their number fields from here.
use crate::kit::number_field as number;

pub use exercises::EXERCISES;

crate::lesson_text!("pipeline");

/// Everything the learner set up; survives restarts (and is clamped when
/// read back).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub workers: usize,
    pub prefetch: usize,
    pub batch: usize,
    pub batches: usize,
    pub augment: bool,
    /// Extra per sample, in ms: CPU work and a blocking wait.
    pub decode_ms: f64,
    pub read_ms: f64,
    /// The worked example: images, data ms per image, compute ms per
    /// image, workers.
    pub images: f64,
    pub image_ms: f64,
    pub compute_ms: f64,
    pub example_workers: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            workers: 2,
            prefetch: 2,
            batch: 32,
            batches: 60,
            augment: true,
            decode_ms: 0.0,
            read_ms: 0.05,
            images: 1e6,
            image_ms: 5.0,
            compute_ms: 0.0,
            example_workers: 8,
        }
    }
}

/// The most batches a run takes here (the web runs them in one go).
const MAX_RUN_BATCHES: usize = if cfg!(target_arch = "wasm32") { 60 } else { 400 };

impl Settings {
    fn clamped(&mut self) {
        let finite = |x: f64, lo: f64, hi: f64, fallback: f64| if x.is_finite() { x.clamp(lo, hi) } else { fallback };
        let d = Self::default();
        self.workers = self.workers.clamp(1, MAX_WORKERS);
        self.prefetch = self.prefetch.clamp(1, MAX_PREFETCH);
        self.batch = self.batch.clamp(8, 256);
        self.batches = self.batches.clamp(10, MAX_RUN_BATCHES);
        self.decode_ms = finite(self.decode_ms, 0.0, 5.0, d.decode_ms);
        self.read_ms = finite(self.read_ms, 0.0, 5.0, d.read_ms);
        self.images = finite(self.images, 1.0, 1e10, d.images);
        self.image_ms = finite(self.image_ms, 0.0, 1e4, d.image_ms);
        self.compute_ms = finite(self.compute_ms, 0.0, 1e4, d.compute_ms);
        self.example_workers = self.example_workers.clamp(1, 1024);
        // The web runs one cooperative worker in the page's own thread, all
        // at once: small enough not to freeze it (60 × 64 × 0.4 ms ≈ 1.5 s).
        if cfg!(target_arch = "wasm32") {
            self.workers = 1;
            self.batch = self.batch.min(64);
            self.decode_ms = self.decode_ms.min(0.2);
            self.read_ms = self.read_ms.min(0.2);
        }
    }

    /// Whether `other` asks for the same runs (the worked example aside).
    fn same_run(&self, other: &Self) -> bool {
        (self.workers, self.prefetch, self.batch, self.batches, self.augment)
            == (other.workers, other.prefetch, other.batch, other.batches, other.augment)
            && (self.decode_ms, self.read_ms) == (other.decode_ms, other.read_ms)
    }

    /// The core's settings for a run with `workers` workers.
    fn pipeline(&self, workers: usize) -> PipelineSettings {
        PipelineSettings {
            workers,
            prefetch: self.prefetch,
            batch: self.batch,
            augment: self.augment,
            extra_cpu_us: (self.decode_ms * 1e3).round() as u64,
            extra_io_us: (self.read_ms * 1e3).round() as u64,
            threads: cfg!(not(target_arch = "wasm32")),
            ..PipelineSettings::default()
        }
    }
}

/// The image set the lesson trains on: MNIST where it is compiled in, the
/// 8×8 digits on the web.
fn dataset_name() -> &'static str {
    if dlsys_core::nn::data::needs_fetch("mnist") { "digits" } else { "mnist" }
}

/// The machine's cores, as the model counts them.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}


#[derive(Default)]
pub struct Pipeline {
    settings: Settings,
    runs: run_view::Runs,
}

impl Lesson for Pipeline {
    crate::lesson_identity!(exercises: EXERCISES);

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        self.settings.clamped();
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(8.0);
        let (s, runs) = (&mut self.settings, &mut self.runs);
        crate::kit::section(ui, &TEXT, lang, "run", |ui| run_view::ui(ui, s, runs, lang));
        crate::kit::section(ui, &TEXT, lang, "sweep", |ui| sweep_view::ui(ui, s, runs, lang));
        crate::kit::section(ui, &TEXT, lang, "example", |ui| {
            example_view::ui(ui, s, runs, lang);
        });
    }

    fn logic(&mut self, ctx: &egui::Context, _env: &Env<'_>) {
        self.runs.logic(ctx);
    }

    fn is_busy(&self) -> bool {
        self.runs.is_running()
    }

    crate::persist_field!(settings);

    /// A short run with two workers, as the Run button does.
    fn self_test_start(&mut self, _env: &Env<'_>) -> bool {
        // No simulated read, and batches big enough that the trainer's
        // step outlasts the browser's coarse clock (100 µs): the default's
        // 32-sample steps are often timed as 0 there, and a utilisation of
        // exactly 0 says nothing about the pipeline.
        let s = Settings {
            batches: 20,
            batch: 256,
            read_ms: 0.0,
            ..Settings::default()
        };
        self.runs.start(&s, false);
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        self.runs.self_test_outcome()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_garbage_is_clamped() {
        let mut lesson = Pipeline::default();
        lesson.settings.workers = 3;
        assert_eq!(crate::reloaded(&lesson, "(workers: \"x\")").settings, lesson.settings);
        let mut wild = Settings {
            workers: 99,
            batch: 0,
            read_ms: f64::NAN,
            images: -1.0,
            ..Settings::default()
        };
        wild.clamped();
        assert_eq!((wild.workers, wild.batch), (MAX_WORKERS, 8));
        assert_eq!(wild.read_ms, Settings::default().read_ms);
        assert!(wild.pipeline(wild.workers).check(1000).is_ok());
    }
}
