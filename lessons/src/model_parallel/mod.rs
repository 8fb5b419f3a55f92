//! "Model parallelism": when the model does not fit one GPU. The pipeline
//! schedules of `dlsys_core::parallel::schedule` (GPipe, 1F1B, interleaved,
//! ZB-H1) timed per stage on the virtual clock, their bubble against the
//! micro-batch count; the schedule trained on real data (`parallel::stages`);
//! tensor parallelism (`parallel::tensor`) and fully sharded training
//! (`parallel::sharded`) run on threads, with what each sends at a real
//! model's size (`parallel::cost`); and the 3D planner (`parallel::plan`).

mod bubble_view;
mod exercises;
mod pipeline_view;
mod plan_view;
mod tensor_view;
mod sharded_view;
mod train_view;

use dlsys_core::collective::Link;
use dlsys_core::names::Named as _;
use dlsys_core::parallel::schedule::{Kind, MAX_CHUNKS, Times};
use dlsys_core::parallel::sharded::FsdpSettings;
use dlsys_core::parallel::stages::{MAX_LAYERS, MAX_ROWS, MAX_WIDTH, PipeSettings};
use dlsys_core::parallel::tensor::{MAX_HEADS, MAX_HIDDEN, MAX_TOKENS, TpSettings};
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};

use crate::{Env, Lesson};
/// The lesson's views take their number fields from here.
use crate::kit::number_field as number;

pub use exercises::EXERCISES;

crate::lesson_text!("model_parallel");

/// The most stages and micro-batches the page draws (the core takes more;
/// past these a timeline's bars are thinner than a pixel).
pub const VIEW_STAGES: usize = 16;
pub const VIEW_MICRO: usize = 64;

/// Everything the learner set up; survives restarts (and is clamped to
/// what the views take when read back).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub schedule: Kind,
    pub stages: usize,
    pub micro: usize,
    /// Chunks per stage when interleaved.
    pub chunks: usize,
    /// Per micro-batch and whole stage, ms: forward, backward (B + W), its
    /// W part, and a transfer between stages.
    pub forward_ms: f64,
    pub backward_ms: f64,
    pub weight_ms: f64,
    pub transfer_ms: f64,
    /// Tensor parallelism: workers; the layer run for real (tokens, width,
    /// heads); tokens (b·s) and width at a real model's size.
    pub tp_workers: usize,
    pub tp_tokens: usize,
    pub tp_hidden: usize,
    pub tp_heads: usize,
    pub tokens: u64,
    pub hidden: u64,
    /// A GPU's achieved TFLOP/s and the link's GB/s for the layer's time.
    pub tp_tflops: f64,
    pub tp_gbps: f64,
    /// Sharded data parallelism: workers and parameters (millions).
    pub fsdp_workers: usize,
    pub params_m: f64,
    /// The sharded run on threads: workers, prefetch, the link's GB/s.
    pub fsdp_run_workers: usize,
    pub prefetch: bool,
    pub fsdp_gbps: f64,
    /// The run on real data: the MLP's layers, width and rows per
    /// micro-batch, each stage's GFLOP/s, the link, equal stages.
    pub layers: usize,
    pub width: usize,
    pub rows: usize,
    pub gflops: f64,
    pub alpha_us: f64,
    pub gbps: f64,
    pub ideal: bool,
    /// The 3D planner's choices.
    pub plan: plan_view::Choices,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            schedule: Kind::OneFOneB,
            stages: 4,
            micro: 8,
            chunks: 2,
            forward_ms: 1.0,
            backward_ms: 2.0,
            weight_ms: 1.0,
            transfer_ms: 0.0,
            tp_workers: 4,
            tp_tokens: TpSettings::default().tokens,
            tp_hidden: TpSettings::default().hidden,
            tp_heads: TpSettings::default().heads,
            tokens: 8 * 2048,
            hidden: 4096,
            tp_tflops: 400.0,
            tp_gbps: 450.0,
            fsdp_workers: 8,
            params_m: 7000.0,
            fsdp_run_workers: FsdpSettings::default().workers,
            prefetch: true,
            fsdp_gbps: 25.0,
            layers: PipeSettings::default().layers,
            width: PipeSettings::default().width,
            rows: PipeSettings::default().rows,
            gflops: PipeSettings::default().gflops,
            alpha_us: 5.0,
            gbps: 25.0,
            ideal: false,
            plan: plan_view::Choices::default(),
        }
    }
}

impl Settings {
    /// The settings within the ranges the views take (a saved file may
    /// hold anything).
    fn clamped(&mut self) {
        let d = Self::default();
        let finite = |x: f64, lo: f64, hi: f64, fallback: f64| {
            if x.is_finite() {
                x.clamp(lo, hi)
            } else {
                fallback
            }
        };
        self.stages = self.stages.clamp(1, VIEW_STAGES);
        self.micro = self.micro.clamp(1, VIEW_MICRO);
        self.chunks = self.chunks.clamp(1, MAX_CHUNKS);
        self.schedule = self.schedule.with_chunks(self.chunks);
        self.forward_ms = finite(self.forward_ms, 0.0, 1e4, d.forward_ms);
        self.backward_ms = finite(self.backward_ms, 0.0, 1e4, d.backward_ms);
        self.weight_ms = finite(self.weight_ms, 0.0, self.backward_ms, d.weight_ms)
            .min(self.backward_ms);
        self.transfer_ms = finite(self.transfer_ms, 0.0, 1e4, d.transfer_ms);
        self.tp_workers = self.tp_workers.clamp(2, 16);
        self.tp_tokens = self.tp_tokens.clamp(1, MAX_TOKENS);
        self.tp_hidden = self.tp_hidden.clamp(1, MAX_HIDDEN);
        self.tp_heads = self.tp_heads.clamp(1, MAX_HEADS);
        self.tokens = self.tokens.clamp(1, 1 << 24);
        self.hidden = self.hidden.clamp(1, 1 << 16);
        self.tp_tflops = finite(self.tp_tflops, 0.01, 1e5, d.tp_tflops);
        self.tp_gbps = finite(self.tp_gbps, 0.01, 1e5, d.tp_gbps);
        self.fsdp_workers = self.fsdp_workers.clamp(2, 1024);
        self.params_m = finite(self.params_m, 1e-3, 1e7, d.params_m);
        self.fsdp_run_workers = self.fsdp_run_workers.clamp(2, sharded_view::VIEW_WORKERS);
        self.fsdp_gbps = finite(self.fsdp_gbps, 0.01, 1e4, d.fsdp_gbps);
        self.layers = self.layers.clamp(1, MAX_LAYERS);
        self.width = self.width.clamp(1, MAX_WIDTH);
        self.rows = self.rows.clamp(1, MAX_ROWS);
        self.gflops = finite(self.gflops, 0.01, 1e6, d.gflops);
        self.alpha_us = finite(self.alpha_us, 0.0, 1e6, d.alpha_us);
        self.gbps = finite(self.gbps, 0.01, 1e4, d.gbps);
        self.plan.clamped();
    }

    /// The run on real data the page's settings describe.
    fn pipe(&self) -> PipeSettings {
        PipeSettings {
            kind: self.schedule,
            stages: self.stages,
            micro: self.micro,
            rows: self.rows,
            width: self.width,
            layers: self.layers,
            gflops: self.gflops,
            link: Link::new(self.alpha_us, self.gbps).unwrap_or(Link {
                alpha_s: 5e-6,
                bytes_per_s: 25e9,
            }),
            ideal: self.ideal,
            ..PipeSettings::default()
        }
    }

    /// The per-micro-batch times in seconds.
    fn times(&self) -> Times {
        Times {
            forward: self.forward_ms * 1e-3,
            backward: self.backward_ms * 1e-3,
            weight: self.weight_ms * 1e-3,
            transfer: self.transfer_ms * 1e-3,
        }
    }
}

#[derive(Default)]
pub struct ModelParallel {
    settings: Settings,
    runs: train_view::Runs,
    tensor_runs: tensor_view::Runs,
    sharded_runs: sharded_view::Runs,
    plans: plan_view::Runs,
    self_test: Option<crate::SelfTestResult>,
}

impl Lesson for ModelParallel {
    crate::lesson_identity!(exercises: EXERCISES);

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        self.settings.clamped();
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(8.0);
        let s = &mut self.settings;
        crate::kit::section(ui, &TEXT, lang, "pipeline", |ui| pipeline_view::ui(ui, s, lang));
        let runs = &mut self.runs;
        crate::kit::section(ui, &TEXT, lang, "train", |ui| {
            train_view::ui(ui, s, runs, lang);
        });
        crate::kit::section(ui, &TEXT, lang, "bubble", |ui| bubble_view::ui(ui, s, lang));
        let tensor_runs = &mut self.tensor_runs;
        crate::kit::section(ui, &TEXT, lang, "tensor", |ui| {
            tensor_view::ui(ui, s, tensor_runs, lang);
        });
        let sharded_runs = &mut self.sharded_runs;
        crate::kit::section(ui, &TEXT, lang, "traffic", |ui| {
            sharded_view::ui(ui, s, sharded_runs, lang);
        });
        let plans = &mut self.plans;
        crate::kit::section(ui, &TEXT, lang, "plan", |ui| {
            plan_view::ui(ui, &mut s.plan, plans, lang);
        });
    }

    crate::persist_field!(settings);

    /// Trains the default step through the pipeline, as the page does.
    fn self_test_start(&mut self, _env: &Env<'_>) -> bool {
        self.self_test = Some(train_view::self_test());
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        self.self_test.clone()
    }
}

/// The schedule picker, each schedule described in its tooltip.
fn schedule_combo(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    let kinds = Kind::ALL.map(|k| k.with_chunks(s.chunks));
    crate::kit::choice_tipped(
        ui,
        "mp_schedule",
        t(lang, "pipeline.schedule"),
        &mut s.schedule,
        kinds,
        |k| k.name(lang),
        |k| k.hint(lang),
    );
}

/// A schedule's series colour, the same in every plot of the lesson.
fn color(visuals: &egui::Visuals, k: Kind) -> egui::Color32 {
    let index = Kind::ALL
        .iter()
        .position(|x| x.key() == k.key())
        .unwrap_or(0);
    crate::kit::theme::series(visuals, index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_garbage_is_clamped_or_an_error() {
        let mut lesson = ModelParallel::default();
        lesson.settings.schedule = Kind::Interleaved { v: 3 };
        lesson.settings.chunks = 3;
        lesson.settings.stages = 6;
        assert_eq!(crate::reloaded(&lesson, "(stages: \"x\")").settings, lesson.settings);
        let mut wild = Settings {
            stages: 1000,
            micro: 0,
            chunks: 99,
            forward_ms: f64::NAN,
            weight_ms: 50.0,
            tokens: 0,
            ..Settings::default()
        };
        wild.clamped();
        assert_eq!((wild.stages, wild.micro), (VIEW_STAGES, 1));
        assert_eq!(wild.schedule.chunks(), 1);
        assert_eq!(wild.forward_ms, Settings::default().forward_ms);
        assert!(wild.weight_ms <= wild.backward_ms);
        assert!(wild.times().valid());
        assert_eq!(wild.tokens, 1);
    }

    #[test]
    fn every_schedule_and_pass_has_a_name_and_a_hint_in_both_languages() {
        use dlsys_core::parallel::schedule::Pass;
        for lang in Lang::ALL {
            for k in Kind::ALL {
                assert!(!k.name(lang).starts_with("pp."), "{k:?}");
                assert!(k.hint(lang).is_some(), "{k:?}");
            }
            for p in Pass::ALL {
                assert!(!p.name(lang).starts_with("pp."), "{p:?}");
            }
        }
    }
}
