//! "Data parallel & all-reduce": the collectives of `dlsys_core::collective`
//! run step by step on a small gradient, timed on the α-β model against
//! their closed forms, and the speedup N workers get from them.

mod compress_view;
mod exercises;
mod overlap_view;
mod scaling_view;
mod step_view;
mod train_view;
mod wire_view;

use dlsys_core::names::Named as _;
use dlsys_core::collective::{Algorithm, Link, MAX_WORKERS, MIN_WORKERS};
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};

use crate::{Env, Lesson};
/// The lesson's views take their number fields from here.
use crate::kit::number_field as number;

pub use exercises::EXERCISES;

crate::lesson_text!("data_parallel");

/// The most elements the step-by-step view shows.
pub const VIEW_ELEMENTS: usize = 16;
/// The largest gradient the wire view takes, in MiB (2²⁶ f32 elements).
pub const MAX_MIB: f64 = 256.0;

/// Everything the learner set up; survives restarts (and is clamped to
/// what the views take when read back).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub algorithm: Algorithm,
    pub workers: usize,
    /// Elements of the step-by-step view's gradient.
    pub elements: usize,
    /// The step shown (0: before the first).
    pub step: usize,
    pub alpha_us: f64,
    pub gbps: f64,
    /// The gradient of the wire and scaling views.
    pub mib: f64,
    pub compute_ms: f64,
    /// Training: examples per worker per step, steps, each worker's rate
    /// (GFLOP/s) and whether the last worker straggles, by how much.
    pub shard: usize,
    pub steps: usize,
    pub gflops: f64,
    pub straggler: bool,
    pub slowdown: f64,
    /// The one-all-reduce timeline: whether the last worker's links are
    /// slower, by how much.
    pub slow_link: bool,
    pub slow_factor: f64,
    /// The overlap view: the model's layers and DDP's bucket size.
    pub layers: usize,
    pub bucket_mib: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            algorithm: Algorithm::Ring,
            workers: 4,
            elements: 8,
            step: 0,
            alpha_us: 5.0,
            gbps: 25.0,
            mib: 100.0,
            compute_ms: 60.0,
            shard: 16,
            steps: 60,
            gflops: 1.0,
            straggler: false,
            slowdown: 2.0,
            slow_link: false,
            slow_factor: 4.0,
            layers: 12,
            bucket_mib: 25.0,
        }
    }
}

impl Settings {
    /// The settings within the ranges the views take (a saved file may
    /// hold anything).
    fn clamped(&mut self) {
        self.workers = self.workers.clamp(MIN_WORKERS, MAX_WORKERS);
        self.elements = self.elements.clamp(1, VIEW_ELEMENTS);
        let finite = |x: f64, lo: f64, hi: f64, fallback: f64| if x.is_finite() { x.clamp(lo, hi) } else { fallback };
        let d = Self::default();
        self.alpha_us = finite(self.alpha_us, 0.0, 1e6, d.alpha_us);
        self.gbps = finite(self.gbps, 0.01, 1e4, d.gbps);
        self.mib = finite(self.mib, 1e-3, MAX_MIB, d.mib);
        self.compute_ms = finite(self.compute_ms, 0.01, 1e5, d.compute_ms);
        self.shard = self.shard.clamp(1, 64);
        self.steps = self.steps.clamp(1, 200);
        self.gflops = finite(self.gflops, 0.01, 1e4, d.gflops);
        self.slowdown = finite(self.slowdown, 1.0, 10.0, d.slowdown);
        self.slow_factor = finite(self.slow_factor, 1.0, 100.0, d.slow_factor);
        self.layers = self.layers.clamp(1, overlap_view::MAX_VIEW_LAYERS);
        self.bucket_mib = finite(self.bucket_mib, 1e-3, MAX_MIB, d.bucket_mib);
    }

    /// The link the settings describe (always valid once clamped).
    fn link(&self) -> Link {
        Link::new(self.alpha_us, self.gbps).unwrap_or(Link {
            alpha_s: 5e-6,
            bytes_per_s: 25e9,
        })
    }

    /// The wire view's gradient: whole f32 elements, at least one.
    fn gradient_elements(&self) -> usize {
        ((self.mib * f64::from(1u32 << 20) / 4.0).round() as usize)
            .clamp(1, dlsys_core::collective::MAX_ELEMENTS)
    }
}

/// A section of the page: it draws from and into the settings.
type View = fn(&mut egui::Ui, &mut Settings, Lang);

#[derive(Default)]
pub struct DataParallel {
    settings: Settings,
    training: train_view::Training,
    comparison: compress_view::Comparison,
}

impl Lesson for DataParallel {
    crate::lesson_identity!(exercises: EXERCISES);

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        self.settings.clamped();
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(8.0);
        let s = &mut self.settings;
        let sections: [(&str, View); 5] = [
            ("step", step_view::ui),
            ("wire", wire_view::ui),
            ("gantt", wire_view::gantt_ui),
            ("scale", scaling_view::ui),
            ("overlap", overlap_view::ui),
        ];
        for (id, body) in sections {
            crate::kit::section(ui, &TEXT, lang, id, |ui| body(ui, s, lang));
        }
        let training = &mut self.training;
        crate::kit::section(ui, &TEXT, lang, "train", |ui| {
            train_view::ui(ui, s, training, lang);
        });
        let comparison = &mut self.comparison;
        crate::kit::section(ui, &TEXT, lang, "compress", |ui| {
            compress_view::ui(ui, s, comparison, lang);
        });
    }

    fn logic(&mut self, ctx: &egui::Context, _env: &Env<'_>) {
        self.training.logic(ctx);
        self.comparison.logic(ctx);
    }

    fn is_busy(&self) -> bool {
        self.training.is_running() || self.comparison.is_running()
    }

    crate::persist_field!(settings);

    /// Trains the default run, as the Train button does.
    fn self_test_start(&mut self, _env: &Env<'_>) -> bool {
        self.training.start_self_test();
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        self.training.self_test_outcome()
    }
}

/// The algorithm picker, each algorithm described in its tooltip.
fn algorithm_combo(ui: &mut egui::Ui, id: &str, value: &mut Algorithm, lang: Lang) {
    let tip = |a: &Algorithm| Some(TEXT.get(lang, &format!("algo.{}.tip", a.id())).to_owned());
    crate::kit::choice_tipped(ui, id, t(lang, "algo.label"), value, Algorithm::ALL, |a| a.name(lang), tip);
}


/// An algorithm's series colour, the same in every plot of the lesson.
fn color(visuals: &egui::Visuals, a: Algorithm) -> egui::Color32 {
    let index = Algorithm::ALL.iter().position(|x| *x == a).unwrap_or(0);
    crate::kit::theme::series(visuals, index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_garbage_is_clamped_or_an_error() {
        let mut lesson = DataParallel::default();
        lesson.settings.workers = 7;
        lesson.settings.algorithm = Algorithm::HalvingDoubling;
        assert_eq!(crate::reloaded(&lesson, "(workers: \"x\")").settings, lesson.settings);
        let mut wild = Settings {
            workers: 1000,
            elements: 0,
            alpha_us: f64::NAN,
            gbps: -3.0,
            mib: 1e12,
            ..Settings::default()
        };
        wild.clamped();
        assert_eq!((wild.workers, wild.elements), (MAX_WORKERS, 1));
        assert_eq!(wild.alpha_us, Settings::default().alpha_us);
        assert!(Link::new(wild.alpha_us, wild.gbps).is_ok());
        assert!(wild.gradient_elements() <= dlsys_core::collective::MAX_ELEMENTS);
    }

    #[test]
    fn every_algorithm_and_step_kind_has_a_name_in_both_languages() {
        for lang in Lang::ALL {
            for a in Algorithm::ALL {
                assert!(!a.name(lang).starts_with("algo."), "{a:?}");
            }
            for k in dlsys_core::collective::StepKind::ALL {
                let key = format!("kind.{}", k.key());
                assert!(TEXT.get(lang, &key) != key, "{key}");
            }
        }
    }
}
