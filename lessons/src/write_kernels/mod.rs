//! "Write a kernel": the learner writes WGSL kernels in an editor and the
//! checker in `dlsys_shaders::kernel_track` judges them — naga diagnostics at
//! their line, the device's validation inside an error scope, adversarial
//! cases against the CPU reference — on a GPU device of its own, polled
//! without blocking a frame, with a time budget for runaway kernels.

use std::collections::{BTreeMap, BTreeSet};

use dlsys_core::errors::Localized as _;
use dlsys_core::names::Named as _;
use dlsys_core::text::Lang;
use dlsys_shaders::kernel_track::{
    CheckJob, EXERCISES, KernelChecker, KernelExercise, KernelRace, KernelVerdict, RaceError,
    validate,
};
use serde::{Deserialize, Serialize};

use dlsys_shaders::GpuError;

use crate::kit::background::Background;
use crate::kit::{code_editor, theme};
use crate::{Env, GpuStatus, Lesson, NoGpu};

mod help;

crate::lesson_text!("write_kernels");

/// What survives a restart: the learner's code per exercise, which pass.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Saved {
    pub selected: String,
    pub code: BTreeMap<String, String>,
    pub passed: BTreeSet<String>,
}

/// The checker's device: made off the UI thread (native), replaced after a
/// runaway kernel.
enum CheckerState {
    Idle,
    #[cfg(not(target_arch = "wasm32"))]
    Starting(Box<Background<Result<KernelChecker, GpuError>>>),
    Ready(Box<KernelChecker>),
    Unavailable(NoDevice),
}

/// Why kernels cannot run here, said in the learner's language when shown.
#[derive(Clone, Debug)]
enum NoDevice {
    Gpu(NoGpu),
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    Request(GpuError),
    /// The thread making the device stopped without one.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    ThreadStopped,
}

impl NoDevice {
    fn message(&self, lang: Lang) -> String {
        match self {
            Self::Gpu(reason) => reason.message(lang),
            Self::Request(err) => err.message(lang),
            Self::ThreadStopped => TEXT.get(lang, "status.thread_stopped").to_owned(),
        }
    }
}

/// What the result panel shows.
#[derive(Clone, Debug)]
enum Shown {
    KernelVerdict(KernelVerdict),
    /// Valid WGSL, but no device to run it on.
    ValidNoGpu(NoDevice),
}

/// A verdict and the source it is about (the editor may have moved on).
#[derive(Clone, Debug)]
struct Checked {
    shown: Shown,
    source: String,
}

/// Timing the learner's kernel and the ladder (off the UI thread).
enum RaceState {
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    Running(Background<Result<KernelRace, RaceError>>),
    Done(Result<KernelRace, RaceError>),
}

pub struct WriteKernels {
    saved: Saved,
    device: CheckerState,
    job: Option<(&'static KernelExercise, CheckJob, String)>,
    /// The last passing kernel timed against the built-in ladder.
    race: Option<(&'static str, RaceState)>,
    /// A check asked for while the device was starting.
    /// A check waiting for the device: the exercise and the code to check.
    queued: Option<(&'static KernelExercise, String)>,
    shown: Option<(&'static str, Checked)>,
    /// Failed checks per exercise this session (the reference unlocks after
    /// [`help::REVEAL_AFTER`]).
    failed_checks: BTreeMap<&'static str, u32>,
    /// Hints shown per exercise.
    hints_shown: BTreeMap<&'static str, usize>,
    /// Exercises whose reference kernel is shown, read-only, under the editor
    /// (the learner's code is never touched by it).
    revealed: BTreeSet<&'static str>,
    confirm_reset: bool,
    /// Set when the learner's code changed or an exercise passed; the shell
    /// saves soon after (so an edit survives a crash).
    save_requested: Option<web_time::Instant>,
    /// Whether the running check is already the one retry after a lost
    /// device (a loss can be transient: a driver reset, a browser's GPU
    /// process restarted under load).
    retried_lost: bool,
}

impl Default for WriteKernels {
    fn default() -> Self {
        Self {
            saved: Saved::default(),
            device: CheckerState::Idle,
            job: None,
            race: None,
            queued: None,
            shown: None,
            failed_checks: BTreeMap::new(),
            hints_shown: BTreeMap::new(),
            revealed: BTreeSet::new(),
            confirm_reset: false,
            save_requested: None,
            retried_lost: false,
        }
    }
}

impl WriteKernels {
    fn exercise(&self) -> &'static KernelExercise {
        EXERCISES
            .iter()
            .find(|e| e.id == self.saved.selected)
            .unwrap_or(&EXERCISES[0])
    }

    /// The learner's code for `ex`; the template in `lang` until they have some.
    fn code_mut(&mut self, ex: &'static KernelExercise, lang: Lang) -> &mut String {
        self.saved
            .code
            .entry(ex.id.to_owned())
            .or_insert_with(|| ex.template(lang))
    }

    fn solved_line(&self, lang: Lang) -> String {
        let solved = EXERCISES
            .iter()
            .filter(|e| self.saved.passed.contains(e.id))
            .count();
        TEXT.fill(
            lang,
            "solved",
            &[("solved", &solved), ("total", &EXERCISES.len())],
        )
    }

    /// Starts making the checker's device, if there is none yet.
    fn ensure_device(&mut self, env: &Env<'_>) {
        if !matches!(self.device, CheckerState::Idle) {
            return;
        }
        let GpuStatus::Compute(gpu) = env.gpu else {
            let reason = match env.gpu {
                GpuStatus::RenderOnly { reason, .. } | GpuStatus::Unavailable { reason } => {
                    reason.clone()
                }
                GpuStatus::Compute(_) => NoGpu::NotWgpu,
            };
            self.device = CheckerState::Unavailable(NoDevice::Gpu(reason));
            return;
        };
        // Native: a device of its own, so a runaway kernel cannot stall the
        // frames the app's device draws. The web shares the app's device.
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = gpu;
            let mut job = Background::default();
            job.start(KernelChecker::request_blocking);
            self.device = CheckerState::Starting(Box::new(job));
        }
        #[cfg(target_arch = "wasm32")]
        {
            self.device = CheckerState::Ready(Box::new(KernelChecker::new((**gpu).clone())));
        }
    }

    /// The Check button: the code in the editor.
    fn start_check(&mut self, ex: &'static KernelExercise, env: &Env<'_>) {
        let source = self.code_mut(ex, env.lang).clone();
        self.retried_lost = false;
        self.check(ex, source, env);
    }

    fn check(&mut self, ex: &'static KernelExercise, source: String, env: &Env<'_>) {
        // A new check makes the last race stale.
        self.race = None;
        if let Err(diagnostic) = validate(ex, &source) {
            self.show(
                ex,
                Shown::KernelVerdict(KernelVerdict::Invalid(diagnostic)),
                source,
            );
            self.saved.passed.remove(ex.id);
            self.record_failure(ex);
            return;
        }
        self.ensure_device(env);
        match &mut self.device {
            CheckerState::Ready(checker) => {
                self.job = Some((ex, checker.start(ex, &source), source));
                self.shown = None;
            }
            CheckerState::Unavailable(reason) => {
                let reason = reason.clone();
                self.show(ex, Shown::ValidNoGpu(reason), source);
            }
            #[cfg(not(target_arch = "wasm32"))]
            CheckerState::Starting(_) => self.queued = Some((ex, source)),
            CheckerState::Idle => {}
        }
    }

    fn show(&mut self, ex: &'static KernelExercise, shown: Shown, source: String) {
        self.shown = Some((ex.id, Checked { shown, source }));
    }

    fn finish(
        &mut self,
        ex: &'static KernelExercise,
        verdict: KernelVerdict,
        source: String,
        abandon_device: bool,
    ) {
        // The verdict counts for the code in the editor only if it is still
        // the code that was checked.
        let current = self.saved.code.get(ex.id) == Some(&source);
        if verdict.passed() && current {
            self.start_race(ex, source.clone());
            if self.saved.passed.insert(ex.id.to_owned()) {
                self.save_requested = Some(web_time::Instant::now());
            }
        } else if current {
            self.saved.passed.remove(ex.id);
        }
        if !verdict.passed() {
            self.record_failure(ex);
        }
        if abandon_device {
            self.abandon_device();
        }
        self.show(ex, Shown::KernelVerdict(verdict), source);
    }

    /// The device holds a kernel that will not finish, or is lost: give it
    /// up and start a fresh one.
    fn abandon_device(&mut self) {
        if let CheckerState::Ready(checker) = &mut self.device {
            checker.mark_poisoned();
        }
        self.recover();
    }

    /// Times a passing kernel against the built-in kernels on its own thread
    /// (native; the web has no thread to wait on).
    fn start_race(&mut self, ex: &'static KernelExercise, source: String) {
        #[cfg(not(target_arch = "wasm32"))]
        if let CheckerState::Ready(checker) = &self.device
            && let Some(gpu) = checker.gpu().cloned()
        {
            let budget = checker.budget;
            let mut job = Background::default();
            job.start(move || dlsys_shaders::kernel_track::race_blocking(&gpu, ex, &source, 5, budget));
            self.race = Some((ex.id, RaceState::Running(job)));
        }
        #[cfg(target_arch = "wasm32")]
        {
            let _ = (ex, source);
        }
    }

    fn race_ui(&self, ui: &mut egui::Ui, lang: Lang, ex: &KernelExercise) {
        let Some((id, state)) = &self.race else {
            return;
        };
        if *id != ex.id {
            return;
        }
        let t = |key| TEXT.get(lang, key);
        match state {
            RaceState::Running(_) => {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.label(t("timing.running"));
                });
            }
            RaceState::Done(Err(error)) => {
                ui.colored_label(
                    theme::warn(ui.visuals()),
                    TEXT.fill(lang, "timing.error", &[("error", &error.reason.message(lang))]),
                );
            }
            RaceState::Done(Ok(race)) => {
                crate::kit::anchor(&ui.strong(TEXT.fill(lang, "timing.heading", &[("problem", &race.problem.say(lang))])), "timing");
                egui::Grid::new("kernel_race")
                    .striped(true)
                    .num_columns(4)
                    .show(ui, |ui| {
                        ui.strong("#");
                        ui.strong(t("timing.kernel"));
                        ui.strong(t("timing.median"));
                        ui.strong(t("timing.bandwidth"));
                        ui.end_row();
                        for (i, lap) in race.laps.iter().enumerate() {
                            let mine = lap.kernel == "yours";
                            let name = if mine {
                                t("timing.yours").to_owned()
                            } else {
                                lap.kernel.clone()
                            };
                            let good = theme::good(ui.visuals());
                            let text = |s: String| {
                                let r = egui::RichText::new(s);
                                if mine { r.strong().color(good) } else { r }
                            };
                            ui.label(text(format!("{}", i + 1)));
                            ui.label(text(name));
                            ui.label(text(format!("{:.3} ms", lap.median_ns / 1e6)));
                            ui.label(text(format!("{:.2} GB/s", lap.gb_per_s)));
                            ui.end_row();
                        }
                    });
                ui.weak(TEXT.fill(
                    lang,
                    "timing.rank",
                    &[
                        ("rank", &race.rank()),
                        ("count", &race.laps.len()),
                        ("trials", &race.trials),
                        ("timer", &race.timer),
                    ],
                ));
            }
        }
    }

    /// Abandons the device a runaway kernel holds and starts a fresh one.
    /// The web shares the app's device: the next check makes a checker on it
    /// again (a lost device there is the app's too, and the next check says so).
    fn recover(&mut self) {
        #[cfg(target_arch = "wasm32")]
        if matches!(self.device, CheckerState::Ready(_)) {
            self.device = CheckerState::Idle;
        }
        #[cfg(not(target_arch = "wasm32"))]
        if let CheckerState::Ready(checker) =
            std::mem::replace(&mut self.device, CheckerState::Idle)
        {
            let mut job = Background::default();
            job.start(move || {
                let mut checker = *checker;
                checker.recover().map(|()| checker)
            });
            self.device = CheckerState::Starting(Box::new(job));
        }
    }

    fn status_ui(&self, ui: &mut egui::Ui, lang: Lang) {
        if let Some((_, job, _)) = &self.job {
            let (case, cases) = job.progress();
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label(TEXT.fill(
                    lang,
                    "status.running",
                    &[
                        ("case", &(case + 1).min(cases).to_string()),
                        ("cases", &cases.to_string()),
                    ],
                ));
            });
            return;
        }
        #[cfg(not(target_arch = "wasm32"))]
        if matches!(self.device, CheckerState::Starting(_)) {
            ui.horizontal(|ui| {
                ui.spinner();
                let recovering = matches!(
                    &self.shown,
                    Some((
                        _,
                        Checked {
                            shown: Shown::KernelVerdict(KernelVerdict::TimedOut { .. }),
                            ..
                        }
                    ))
                );
                ui.label(TEXT.get(
                    lang,
                    if recovering {
                        "status.recovering"
                    } else {
                        "status.starting"
                    },
                ));
            });
        }
        if let CheckerState::Unavailable(reason) = &self.device {
            ui.colored_label(
                theme::warn(ui.visuals()),
                TEXT.fill(lang, "status.no_gpu", &[("reason", &reason.message(lang))]),
            );
        }
    }

    /// The last verdict for `ex`; cleared (a note says why) once the code in
    /// the editor, `code`, is no longer the code it was for.
    fn result_ui(&self, ui: &mut egui::Ui, lang: Lang, ex: &KernelExercise, code: &str) {
        let Some((id, Checked { shown, source })) = &self.shown else {
            return;
        };
        if *id != ex.id {
            return;
        }
        if self.verdict_is_stale(ex, code) {
            ui.weak(TEXT.get(lang, "result.stale"));
            return;
        }
        match shown {
            Shown::ValidNoGpu(reason) => {
                ui.colored_label(
                    theme::warn(ui.visuals()),
                    TEXT.fill(lang, "status.valid_no_gpu", &[("reason", &reason.message(lang))]),
                );
            }
            Shown::KernelVerdict(verdict) => {
                let (color, head) = if verdict.passed() {
                    (theme::good(ui.visuals()), TEXT.get(lang, "status.passed"))
                } else {
                    (theme::bad(ui.visuals()), TEXT.get(lang, "status.failed"))
                };
                ui.colored_label(color, format!("{head}: {}", dlsys_core::errors::Localized::message(verdict, lang)));
                if let KernelVerdict::Invalid(d) = verdict
                    && let Some(line) = d.line
                    && let Some(text) = (line as usize)
                        .checked_sub(1)
                        .and_then(|i| source.lines().nth(i))
                {
                    ui.monospace(TEXT.fill(
                        lang,
                        "line",
                        &[("line", &line.to_string()), ("text", &text.trim())],
                    ));
                }
            }
        }
    }
}

impl Lesson for WriteKernels {
    crate::lesson_identity!();

    fn logic(&mut self, ctx: &egui::Context, env: &Env<'_>) {
        if self.save_requested.is_some() {
            ctx.request_repaint_after(web_time::Duration::from_millis(1100));
        }
        #[cfg(not(target_arch = "wasm32"))]
        if let CheckerState::Starting(job) = &mut self.device {
            match job.take(ctx) {
                Some(Ok(checker)) => self.device = CheckerState::Ready(Box::new(checker)),
                Some(Err(err)) => self.device = CheckerState::Unavailable(NoDevice::Request(err)),
                None if job.take_lost() => {
                    self.device = CheckerState::Unavailable(NoDevice::ThreadStopped);
                }
                None => {}
            }
            if !matches!(self.device, CheckerState::Starting(_))
                && let Some((ex, source)) = self.queued.take()
            {
                self.check(ex, source, env);
            }
        }
        if let Some((_, RaceState::Running(job))) = &mut self.race {
            let result = match job.take(ctx) {
                Some(result) => Some(result),
                None if job.take_lost() => Some(Err(RaceError::thread_stopped())),
                None => None,
            };
            if let Some(result) = result {
                let abandon = result.as_ref().is_err_and(|e| e.abandon_device);
                if let Some((_, state)) = &mut self.race {
                    *state = RaceState::Done(result);
                }
                if abandon {
                    self.abandon_device();
                }
            }
        }
        if let Some((ex, job, _)) = &mut self.job {
            let ex = *ex;
            match job.poll() {
                Some(verdict) => {
                    let abandon = job.abandons_device();
                    let source = self.job.take().map(|(_, _, s)| s).unwrap_or_default();
                    // The device stopped answering (its channel closed, or
                    // the readback failed), not a kernel that overran.
                    let lost = abandon && !matches!(verdict, KernelVerdict::TimedOut { .. });
                    if lost && !self.retried_lost {
                        // Once, on a fresh device, before the learner is told.
                        log::warn!("the checker's device was lost; checking again on a new one");
                        self.retried_lost = true;
                        self.abandon_device();
                        self.check(ex, source, env);
                    } else {
                        self.finish(ex, verdict, source, abandon);
                    }
                    ctx.request_repaint();
                }
                None => ctx.request_repaint(),
            }
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        let t = |key| TEXT.get(lang, key);
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(6.0);
        ui.horizontal_wrapped(|ui| {
            ui.label(t("exercise"));
            for ex in &EXERCISES {
                let mark = if self.saved.passed.contains(ex.id) {
                    "✓ "
                } else {
                    ""
                };
                let selected = self.exercise().id == ex.id;
                if ui
                    .selectable_label(selected, format!("{mark}{}", ex.name(lang)))
                    .clicked()
                {
                    self.saved.selected = ex.id.to_owned();
                    self.save_requested = Some(web_time::Instant::now());
                }
            }
        });
        ui.weak(self.solved_line(lang));
        let ex = self.exercise();
        let busy = self.is_busy();
        let check_key = ui.input_mut(|i| i.consume_key(egui::Modifiers::COMMAND, egui::Key::Enter));
        ui.horizontal(|ui| {
            let check = ui
                .add_enabled(!busy, egui::Button::new(t("check")))
                .on_hover_text(t("check.hint"));
            if (check.clicked() || check_key) && !busy {
                self.start_check(ex, env);
            }
            if ui.button(t("reset")).clicked() {
                self.confirm_reset = true;
            }
        });
        self.status_ui(ui, lang);
        let code = self.code_mut(ex, lang).clone();
        self.result_ui(ui, lang, ex, &code);
        self.race_ui(ui, lang, ex);
        self.help_ui(ui, lang, ex);
        ui.add_space(4.0);
        let mut code = code;
        let label = TEXT.fill(lang, "editor.label", &[("exercise", &ex.name(lang))]);
        // Mark the diagnostic's line while the code is still what was checked.
        let error_line = match &self.shown {
            Some((
                id,
                Checked {
                    shown: Shown::KernelVerdict(KernelVerdict::Invalid(d)),
                    source,
                },
            )) if *id == ex.id && *source == code => d.line,
            _ => None,
        };
        let response = code_editor::show(
            ui,
            &format!("wgsl-editor-{}", ex.id),
            &mut code,
            &label,
            error_line,
        );
        if response.changed() {
            *self.code_mut(ex, lang) = code;
            self.save_requested = Some(web_time::Instant::now());
        }
        self.reference_ui(ui, lang, ex);
        if self.confirm_reset {
            let modal = egui::Modal::new(egui::Id::unique("reset-kernel")).show(ui.ctx(), |ui| {
                ui.label(TEXT.fill(lang, "reset.question", &[("exercise", &ex.name(lang))]));
                ui.horizontal(|ui| {
                    if ui.button(t("reset.yes")).clicked() {
                        self.saved.code.insert(ex.id.to_owned(), ex.template(lang));
                        self.saved.passed.remove(ex.id);
                        self.shown = None;
                        self.race = None;
                        self.save_requested = Some(web_time::Instant::now());
                        self.confirm_reset = false;
                    }
                    if ui.button(t("reset.no")).clicked() {
                        self.confirm_reset = false;
                    }
                });
            });
            if modal.should_close() {
                self.confirm_reset = false;
            }
        }
    }

    fn progress_note(&self, lang: Lang) -> Option<String> {
        Some(self.solved_line(lang))
    }

    fn is_busy(&self) -> bool {
        #[cfg(not(target_arch = "wasm32"))]
        let starting = matches!(self.device, CheckerState::Starting(_));
        #[cfg(target_arch = "wasm32")]
        let starting = false;
        starting
            || self.job.is_some()
            || self.queued.is_some()
            || matches!(self.race, Some((_, RaceState::Running(_))))
    }

    fn take_save_request(&mut self) -> bool {
        // Edits are saved at most once a second, and at the latest a second
        // after the last keystroke.
        match self.save_requested {
            Some(at) if at.elapsed() >= web_time::Duration::from_secs(1) => {
                self.save_requested = None;
                true
            }
            _ => false,
        }
    }

    crate::persist_field!(saved);

    /// A check of the first exercise's reference kernel, through the Check
    /// button's path; the learner's code and progress stay as they are.
    fn self_test_start(&mut self, env: &Env<'_>) -> bool {
        let ex = &EXERCISES[0];
        self.retried_lost = false;
        self.check(ex, ex.reference(), env);
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        let (id, Checked { shown, .. }) = self.shown.as_ref()?;
        Some(match shown {
            Shown::KernelVerdict(verdict) if verdict.passed() => Ok(format!("{id}: {verdict}")),
            Shown::KernelVerdict(verdict) => Err(crate::SelfTestFailure(format!("{id}: {verdict}"))),
            // No compute GPU: naga's validation is all a check can do.
            Shown::ValidNoGpu(reason) => Ok(format!("{id}: naga validation only ({})", reason.message(Lang::En))),
        })
    }
}


#[cfg(test)]
mod tests;
