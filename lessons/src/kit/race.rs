//! What the GPU lessons share around the one `Ladder`: a device to run it
//! on (or the CPU path, said so), the race polled each frame without
//! blocking, its progress and a Stop, the line that says which adapter and
//! timer the numbers come from, and the self-test's verdict on a race.

use dlsys_core::errors::Localized as _;
use dlsys_core::text::{Catalog, Lang};
use dlsys_shaders::ladder::CPU_MAX_ELEMENTS;
use dlsys_shaders::{KernelRunner, Ladder, LadderSettings, Outcome, TimerKind};

use crate::kit::theme;
use crate::{Env, GpuStatus};

fn text() -> &'static Catalog {
    crate::kit::text()
}

/// A ladder in flight, and what it has produced.
#[derive(Default)]
pub struct Race {
    runner: Option<KernelRunner>,
    ladder: Option<Ladder>,
    pub results: Vec<Outcome>,
    pub error: Option<String>,
}

impl Race {
    fn ensure_runner(&mut self, gpu: &GpuStatus) -> Option<&mut KernelRunner> {
        if self.runner.is_none()
            && let GpuStatus::Compute(gpu) = gpu
        {
            self.runner = Some(KernelRunner::new((**gpu).clone()));
        }
        self.runner.as_mut()
    }

    /// The device's limits, for what a lesson shows before a run (the
    /// largest K of each GEMM rung, say); typical limits on the CPU path.
    pub fn device(&mut self, gpu: &GpuStatus) -> dlsys_core::kernels::DeviceLimits {
        self.ensure_runner(gpu)
            .map_or(dlsys_core::kernels::DeviceLimits::TYPICAL, |r| r.device())
    }

    /// Whether this device runs `kernel` (a subgroup rung needs
    /// subgroups, say); nothing runs without a compute GPU.
    pub fn supports(&mut self, gpu: &GpuStatus, kernel: dlsys_core::kernels::Kernel) -> bool {
        self.ensure_runner(gpu)
            .is_some_and(|r| r.supports(kernel).is_ok())
    }

    /// The device's runner, where there is a compute GPU (for what a
    /// lesson checks against the device before a race).
    pub fn runner(&mut self, gpu: &GpuStatus) -> Option<&KernelRunner> {
        self.ensure_runner(gpu).map(|r| &*r)
    }

    /// The most values one buffer holds on this device (the CPU path's cap
    /// without one): what limits a GEMM's M and N.
    pub fn max_elements(&mut self, gpu: &GpuStatus) -> u64 {
        self.ensure_runner(gpu)
            .map_or(CPU_MAX_ELEMENTS, |runner| runner.max_elements())
    }

    /// Starts `settings`' ladder on the GPU, or times it on the CPU at once
    /// when there is no compute GPU; a refused size becomes `error`.
    pub fn start(&mut self, settings: &LadderSettings, env: &Env<'_>) {
        self.start_with(settings, Vec::new(), env);
    }

    /// [`Self::start`], with `programs` (generated kernels) raced after the
    /// ladder's own kernels — on a GPU only: the CPU path times built-in
    /// kernels alone.
    pub fn start_with(
        &mut self,
        settings: &LadderSettings,
        programs: Vec<dlsys_shaders::Program>,
        env: &Env<'_>,
    ) {
        self.results.clear();
        self.error = None;
        let max_elements = self.max_elements(env.gpu);
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
        self.ladder = Some(ladder.with_programs(programs));
    }

    /// Advances the race (never waiting for the GPU, except on a CPU
    /// adapter, where one poll times one trial).
    pub fn poll(&mut self, ctx: &egui::Context) {
        let (Some(runner), Some(ladder)) = (self.runner.as_mut(), self.ladder.as_mut()) else {
            return;
        };
        let done = ladder.poll(runner);
        self.results = ladder.outcomes().to_vec();
        if done {
            self.ladder = None;
        } else {
            ctx.request_repaint();
        }
    }

    pub fn is_busy(&self) -> bool {
        self.ladder.is_some()
    }

    /// Stop and a progress bar naming the kernel running, while busy;
    /// `true` when there was one to show.
    pub fn progress_ui(&mut self, ui: &mut egui::Ui, lang: Lang) -> bool {
        let Some(ladder) = &self.ladder else {
            return false;
        };
        let (done, total, current) = ladder.progress();
        let mut stop = false;
        ui.horizontal_wrapped(|ui| {
            stop = ui.button(text().get(lang, "race.cancel")).clicked();
            let current = current.unwrap_or_default();
            let label = text().fill(
                lang,
                "race.running",
                &[("current", &current), ("done", &done), ("total", &total)],
            );
            // Wide enough for the longest kernel name and the count.
            let width = ui.available_width().clamp(160.0, 420.0);
            ui.add(
                egui::ProgressBar::new(done as f32 / total.max(1) as f32)
                    .desired_width(width)
                    .text(label),
            );
        });
        if stop {
            self.ladder = None;
        }
        true
    }

    /// How the race ended, for the self-test: `None` while it runs.
    pub fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        if self.ladder.is_some() {
            return None;
        }
        if let Some(err) = &self.error {
            return Some(Err(crate::SelfTestFailure(err.clone())));
        }
        (!self.results.is_empty()).then(|| judge(&self.results))
    }
}

/// The adapter and timer the numbers come from, or why the CPU path runs.
pub fn device_ui(ui: &mut egui::Ui, env: &Env<'_>) {
    let lang = env.lang;
    match env.gpu {
        GpuStatus::Compute(gpu) => {
            let info = gpu.info();
            // The timer the runs really use (the CPU clock on a CPU adapter).
            let timer = TimerKind::for_gpu(gpu).short_name(lang);
            ui.weak(text().fill(
                lang,
                "race.device",
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
                text().fill(lang, "race.cpu_path", &[("reason", &reason.message(lang))]),
            );
        }
    }
}

/// Every rung ran (on the GPU, or timed on the CPU path) and every GPU
/// result matches its reference; rungs the adapter cannot run (no
/// subgroups, or a subgroup size that varies) are listed, not failed.
pub fn judge(outcomes: &[Outcome]) -> crate::SelfTestResult {
    let mut ran = 0;
    let mut cpu = 0;
    let mut wrong = Vec::new();
    let mut skipped = Vec::new();
    for outcome in outcomes {
        match outcome {
            Outcome::Ran(r) => {
                ran += 1;
                if !r.ok && !r.kernel.expected_to_overflow() {
                    wrong.push(format!(
                        "{} (max rel error {:e})",
                        r.kernel.id(),
                        r.max_rel_error
                    ));
                }
            }
            Outcome::Cpu(_) => cpu += 1,
            Outcome::Program(Ok(row)) => {
                ran += 1;
                if !row.check.ok {
                    wrong.push(format!("{} ({} mismatches)", row.id, row.check.mismatches));
                }
            }
            Outcome::Program(Err((id, why))) => wrong.push(format!("{id}: {why}")),
            Outcome::Skipped { kernel, why } => {
                let not_offered = matches!(why, dlsys_shaders::KernelError::NeedsSubgroups { .. })
                    || matches!(
                        why,
                        dlsys_shaders::KernelError::Plan {
                            reason: dlsys_core::kernels::PlanError::SubgroupSizeVaries { .. }
                        }
                    );
                if not_offered {
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
