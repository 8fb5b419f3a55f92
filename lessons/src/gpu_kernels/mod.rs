//! "GPU softmax & reductions": the softmax and reduction ladders run as real
//! WGSL kernels, one after another without blocking a frame, with their time,
//! bytes moved and bandwidth against the copy kernel.

mod exercises;
mod plots;
mod ui;

use std::collections::BTreeSet;

use dlsys_core::errors::Localized as _;
use dlsys_core::kernels::{Data, Kernel, Problem, ReduceKind, ReduceOp, SoftmaxKind};
use dlsys_shaders::ladder::CPU_MAX_ELEMENTS;
use dlsys_shaders::{KernelRunner, Ladder, LadderSettings, Outcome, TimerKind};
use egui::RichText;
use serde::{Deserialize, Serialize};

use crate::{Env, GpuStatus, Lesson, theme};

pub use exercises::EXERCISES;

crate::lesson_text!("gpu_kernels");

/// How runs are timed, in `lang`: the long form for reports, `short` for headers.
pub fn timer_text(timer: TimerKind, lang: dlsys_core::text::Lang, short: bool) -> String {
    let (key, tick) = match timer {
        TimerKind::Timestamps { period_ns } if short => ("timer.timestamps_short", period_ns),
        TimerKind::Timestamps { period_ns } => ("timer.timestamps", period_ns),
        TimerKind::WallPerTrial if short => ("timer.cpu_short", 0.0),
        TimerKind::WallPerTrial => ("timer.cpu", 0.0),
    };
    TEXT.fill(lang, key, &[("tick", &tick)])
}

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
    runner: Option<KernelRunner>,
    ladder: Option<Ladder>,
    results: Vec<Outcome>,
    error: Option<String>,
}

impl Settings {
    /// The ladder these settings ask for: the selected variants (`all`:
    /// every one) with the chosen reduction op.
    pub fn ladder(&self, all: bool) -> LadderSettings {
        let chosen = |kernel: Kernel| all || self.selected.contains(&kernel.id());
        LadderSettings {
            problem: Problem {
                rows: self.rows,
                cols: self.cols,
            },
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
        }
    }
}

impl GpuKernels {
    fn ensure_runner(&mut self, gpu: &GpuStatus) -> Option<&mut KernelRunner> {
        if self.runner.is_none()
            && let GpuStatus::Compute(gpu) = gpu
        {
            self.runner = Some(KernelRunner::new((**gpu).clone()));
        }
        self.runner.as_mut()
    }

    /// "Run selected" (`all` false) and "Race them all" (`all` true).
    fn start(&mut self, env: &Env<'_>, all: bool) {
        let settings = self.settings.ladder(all);
        self.start_ladder(&settings, env);
    }

    fn start_ladder(&mut self, settings: &LadderSettings, env: &Env<'_>) {
        self.results.clear();
        self.error = None;
        let max_elements = self
            .ensure_runner(env.gpu)
            .map_or(CPU_MAX_ELEMENTS, |runner| runner.max_elements());
        let ladder = match Ladder::new(settings, max_elements) {
            Ok(ladder) => ladder,
            Err(err) => {
                self.error = Some(err.message(env.lang));
                return;
            }
        };
        if self.runner.is_none() {
            self.results = ladder.run_on_cpu();
            return;
        }
        self.ladder = Some(ladder);
    }

    fn poll_ladder(&mut self, ctx: &egui::Context) {
        let (Some(runner), Some(ladder)) = (self.runner.as_mut(), self.ladder.as_mut()) else {
            return;
        };
        // On a CPU adapter one poll times one trial (the frame waits for it).
        let done = ladder.poll(runner);
        self.results = ladder.outcomes().to_vec();
        if done {
            self.ladder = None;
        } else {
            ctx.request_repaint();
        }
    }

}

impl Lesson for GpuKernels {
    crate::lesson_identity!(exercises: EXERCISES);

    fn logic(&mut self, ctx: &egui::Context, _env: &Env<'_>) {
        if self.ladder.is_some() {
            self.poll_ladder(ctx);
        }
    }

    fn is_busy(&self) -> bool {
        self.ladder.is_some()
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        let t = |key| TEXT.get(lang, key);
        crate::header_ui(ui, &TEXT, lang);
        ui.add_space(6.0);
        match env.gpu {
            GpuStatus::Compute(gpu) => {
                let info = gpu.info();
                // The timer the runs really use (the CPU clock on a CPU adapter).
                let timer = timer_text(TimerKind::for_gpu(gpu), lang, true);
                ui.weak(TEXT.fill(
                    lang,
                    "device",
                    &[
                        ("adapter", &crate::adapter_label(&info, lang)),
                        ("backend", &info.backend),
                        ("timer", &timer),
                    ],
                ));
            }
            GpuStatus::RenderOnly { reason, .. } | GpuStatus::Unavailable { reason } => {
                ui.colored_label(
                    theme::warn(ui.visuals()),
                    TEXT.fill(lang, "cpu_path", &[("reason", &reason.message(lang))]),
                );
            }
        }
        self.controls_ui(ui, env);
        if let Some(err) = &self.error {
            ui.colored_label(theme::bad(ui.visuals()), err);
        }
        self.results_ui(ui, lang);
        egui::CollapsingHeader::new(RichText::new(t("explain.heading")).strong())
            .default_open(false)
            .show(ui, |ui| {
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
                    ui.label(format!("• {}", TEXT.get(lang, &key)));
                }
            });
    }

    crate::persist_field!(settings);

    /// "Race them all": every rung, as the button races them, on a problem
    /// small enough for a software GPU in a browser (not the learner's).
    fn self_test_start(&mut self, env: &Env<'_>) -> bool {
        let quick = Settings {
            rows: 64,
            cols: 256,
            trials: 2,
            ..Settings::default()
        };
        self.start_ladder(&quick.ladder(true), env);
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        if self.ladder.is_some() {
            return None;
        }
        if let Some(err) = &self.error {
            return Some(Err(crate::SelfTestFailure(err.clone())));
        }
        (!self.results.is_empty()).then(|| judge_race(&self.results))
    }
}

/// Every rung ran (on the GPU, or timed on the CPU path) and every GPU
/// result matches its reference; rungs the adapter cannot run (no
/// subgroups) are listed, not failed.
fn judge_race(outcomes: &[Outcome]) -> crate::SelfTestResult {
    let mut ran = 0;
    let mut cpu = 0;
    let mut wrong = Vec::new();
    let mut skipped = Vec::new();
    for outcome in outcomes {
        match outcome {
            Outcome::Ran(r) => {
                ran += 1;
                if !r.ok && !r.kernel.expected_to_overflow() {
                    wrong.push(format!("{} (max rel error {:e})", r.kernel.id(), r.max_rel_error));
                }
            }
            Outcome::Cpu(_) => cpu += 1,
            Outcome::Skipped { kernel, why } => {
                if matches!(why, dlsys_shaders::KernelError::NeedsSubgroups { .. }) {
                    skipped.push(kernel.id());
                } else {
                    wrong.push(format!("{}: {why}", kernel.id()));
                }
            }
        }
    }
    let mut detail = if cpu > 0 {
        format!("CPU path: {cpu} of {} rungs timed", outcomes.len())
    } else {
        format!("{ran} of {} rungs ran on the GPU", outcomes.len())
    };
    if !skipped.is_empty() {
        detail.push_str(&format!("; not offered here: {}", skipped.join(", ")));
    }
    if !wrong.is_empty() || ran + cpu == 0 {
        detail.push_str(&format!("; failed: {}", wrong.join("; ")));
        return Err(crate::SelfTestFailure(detail));
    }
    Ok(detail)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert!(lesson.ladder.is_none());
        let cpu = lesson
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
            let ran: Vec<_> = lesson.results.iter().filter_map(Outcome::measured).collect();
            plots::roofline_points(&ran)
        };
        let before = points(&lesson);
        assert_eq!(before.len(), 1, "{:?}", lesson.results);
        let Some(Outcome::Ran(online)) = lesson
            .results
            .iter()
            .find(|o| o.kernel() == Kernel::Softmax(SoftmaxKind::Online))
        else {
            panic!("online softmax did not run: {:?}", lesson.results)
        };
        let want_ai = 9.0 * 32.0 * 64.0 / online.bytes as f64;
        assert!((before[0].1 - want_ai).abs() < 1e-12 * want_ai);
        lesson.settings.rows = 4096;
        lesson.settings.cols = 7;
        assert_eq!(points(&lesson), before);
    }
}
