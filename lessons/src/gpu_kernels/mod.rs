//! "GPU softmax & reductions": the softmax and reduction ladders run as real
//! WGSL kernels, one after another without blocking a frame, with their time,
//! bytes moved and bandwidth against the copy kernel.

mod exercises;
mod ui;

use std::collections::BTreeSet;

use dlsys_core::kernels::{Data, Kernel, Problem, ReduceKind, ReduceOp, SoftmaxKind};
use dlsys_shaders::LadderSettings;
use serde::{Deserialize, Serialize};

use crate::kit::race::Race;
use crate::{Env, Lesson};

pub use exercises::EXERCISES;

crate::lesson_text!("gpu_kernels");

/// What the learner chose (persisted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub rows: u32,
    pub cols: u32,
    pub data: Data,
    pub trials: u32,
    pub op: ReduceOp,
    /// Kernel ids to run (`softmax/online`, `reduce-sum/sequential`…).
    pub selected: BTreeSet<String>,
}

impl Default for Settings {
    fn default() -> Self {
        let mut selected: BTreeSet<String> = SoftmaxKind::ALL
            .iter()
            .map(|k| Kernel::Softmax(*k).id())
            .collect();
        selected.extend(
            ReduceKind::ALL
                .iter()
                .map(|k| Kernel::Reduce(*k, ReduceOp::Sum).id()),
        );
        Self {
            rows: 1024,
            cols: 1024,
            data: Data::Random,
            trials: 5,
            op: ReduceOp::Sum,
            selected,
        }
    }
}

#[derive(Default)]
pub struct GpuKernels {
    settings: Settings,
    race: Race,
}

impl Settings {
    /// The ladder these settings ask for: the selected variants (`all`:
    /// every one) with the chosen reduction op.
    pub fn ladder(&self, all: bool) -> LadderSettings {
        let chosen = |kernel: Kernel| all || self.selected.contains(&kernel.id());
        LadderSettings {
            problem: Problem::new(self.rows, self.cols),
            data: self.data,
            trials: self.trials,
            softmax: SoftmaxKind::ALL
                .into_iter()
                .filter(|k| chosen(Kernel::Softmax(*k)))
                .collect(),
            reduce: ReduceKind::ALL
                .into_iter()
                .filter(|k| chosen(Kernel::Reduce(*k, ReduceOp::Sum)))
                .collect(),
            ops: vec![self.op],
            ..LadderSettings::families(
                &[],
                Problem::new(self.rows, self.cols),
                self.data,
                self.trials,
            )
        }
    }
}

impl GpuKernels {
    /// "Run selected" (`all` false) and "Race them all" (`all` true).
    fn start(&mut self, env: &Env<'_>, all: bool) {
        let settings = self.settings.ladder(all);
        self.race.start(&settings, env);
    }
}

impl Lesson for GpuKernels {
    crate::lesson_identity!(exercises: EXERCISES);

    fn logic(&mut self, ctx: &egui::Context, _env: &Env<'_>) {
        self.race.poll(ctx);
    }

    fn is_busy(&self) -> bool {
        self.race.is_busy()
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        let _t = |key| TEXT.get(lang, key);
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(6.0);
        crate::kit::race::device_ui(ui, env);
        self.controls_ui(ui, env);
        if let Some(err) = &self.race.error {
            ui.colored_label(crate::kit::theme::bad(ui.visuals()), err);
        }
        self.results_ui(ui, lang);
        crate::kit::section_opened(ui, &TEXT, lang, "explain", false, |ui| {
                let mut keys = vec!["explain.copy".to_owned()];
                keys.extend(
                    SoftmaxKind::ALL
                        .iter()
                        .map(|k| format!("explain.softmax/{}", k.id())),
                );
                keys.extend(
                    ReduceKind::ALL
                        .iter()
                        .map(|k| format!("explain.reduce/{}", k.id())),
                );
                for key in keys {
                    crate::kit::prose(ui, &format!("• {}", TEXT.get(lang, &key)));
                }
            });
    }

    crate::persist_field!(settings);

    /// "Run selected", as the button runs it, on a problem small enough for
    /// a software GPU in a browser (not the learner's).
    fn self_test_start(&mut self, env: &Env<'_>) -> bool {
        // The copy kernel and online softmax through the same path as the
        // buttons, one trial: a software GPU in a browser compiles each
        // kernel in seconds (all of them took 46 s on SwiftShader); the
        // native tests hold every rung to its reference.
        let quick = Settings {
            rows: 64,
            cols: 256,
            trials: 1,
            selected: [Kernel::Softmax(SoftmaxKind::Online).id()].into(),
            ..Settings::default()
        };
        self.race.start(&quick.ladder(false), env);
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        self.race.self_test_outcome()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GpuStatus;
    use dlsys_shaders::Outcome;
    use dlsys_core::text::Lang;

    #[test]
    fn catalog_has_an_explanation_for_every_variant() {
        let catalog = &*TEXT;
        for k in SoftmaxKind::ALL {
            assert!(catalog.contains(&format!("explain.softmax/{}", k.id())));
        }
        for k in ReduceKind::ALL {
            assert!(catalog.contains(&format!("explain.reduce/{}", k.id())));
        }
        for d in Data::ALL {
            assert!(catalog.contains(&format!("data.{}", d.id())));
        }
    }

    #[test]
    fn without_a_gpu_the_cpu_path_reports_bytes_and_cpu_timings() {
        let mut lesson = GpuKernels::default();
        lesson.settings.rows = 64;
        lesson.settings.cols = 64;
        let gpu = GpuStatus::Unavailable {
            reason: crate::NoGpu::NotWgpu,
        };
        lesson.start(
            &Env {
                gpu: &gpu,
                lang: Lang::En,
            },
            true,
        );
        assert!(!lesson.race.is_busy());
        let cpu = lesson
            .race
            .results
            .iter()
            .filter(|o| matches!(o, Outcome::Cpu(_)))
            .count();
        assert_eq!(cpu, 1 + SoftmaxKind::ALL.len() + ReduceKind::ALL.len());
    }

    /// The roofline of a finished run keeps that run's size when the learner
    /// changes rows × cols afterwards.
    #[test]
    fn the_roofline_uses_the_runs_own_size() {
        let gpu = match dlsys_shaders::Gpu::request_blocking() {
            Ok(gpu) => gpu,
            Err(err) if std::env::var("CI").is_ok_and(|v| v == "true") => {
                panic!("no GPU adapter in CI: {err}")
            }
            Err(err) => {
                eprintln!("skipped without a GPU adapter: {err}");
                return;
            }
        };
        let status = GpuStatus::Compute(Box::new(gpu));
        let env = Env {
            gpu: &status,
            lang: Lang::En,
        };
        let mut lesson = GpuKernels::default();
        lesson.settings.rows = 32;
        lesson.settings.cols = 64;
        lesson.settings.trials = 1;
        lesson.settings.selected = [Kernel::Softmax(SoftmaxKind::Online).id()].into();
        lesson.start(&env, false);
        let ctx = egui::Context::default();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while lesson.is_busy() && std::time::Instant::now() < deadline {
            lesson.logic(&ctx, &env);
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let points = |lesson: &GpuKernels| {
            let ran: Vec<_> = lesson.race.results.iter().filter_map(Outcome::measured).collect();
            crate::kit::kernel_plots::roofline_points(&ran)
        };
        let before = points(&lesson);
        assert_eq!(before.len(), 1, "{:?}", lesson.race.results);
        let Some(Outcome::Ran(online)) = lesson
            .race
            .results
            .iter()
            .find(|o| o.kernel() == Some(Kernel::Softmax(SoftmaxKind::Online)))
        else {
            panic!("online softmax did not run: {:?}", lesson.race.results)
        };
        let want_ai = 9.0 * 32.0 * 64.0 / online.bytes as f64;
        assert!((before[0].1 - want_ai).abs() < 1e-12 * want_ai);
        lesson.settings.rows = 4096;
        lesson.settings.cols = 7;
        assert_eq!(points(&lesson), before);
    }
}
