//! The smoke sequence behind `index.html?selftest` (and `Startup::selftest`):
//! open every lesson, convert a float, run one gradient check, then every
//! lesson's main action through the same code as its button
//! ([`Lesson::self_test_start`]: the GPU lesson's whole default race, a
//! training epoch on MNIST, a mixed-precision scenario, a learner-kernel
//! check), on whatever backend is there, and report the outcome as JSON. It
//! advances a little every frame, so the page keeps rendering meanwhile; a
//! lesson added to the registry with a main action is tested with no change
//! here.

use dlsys_core::autograd::{Band, Check};
use dlsys_core::float::{Format, Rounding};
use dlsys_lessons::{Env, GpuStatus, Lesson};
use serde::Serialize;

/// How long one lesson's action may take before the self-test gives up.
const ACTION_BUDGET: web_time::Duration = web_time::Duration::from_secs(200);

/// One finished check.
#[derive(Clone, Debug, Serialize)]
pub struct CheckResult {
    pub name: String,
    pub ok: bool,
    pub detail: String,
    /// How long it took, start to outcome.
    pub seconds: f64,
}

/// What the self-test reports.
#[derive(Clone, Debug, Serialize)]
pub struct SelfTestReport {
    pub ok: bool,
    /// `webgpu`, `vulkan`, … when the kernels run on a GPU; `cpu` otherwise.
    pub backend: String,
    pub adapter: String,
    pub lessons: Vec<String>,
    pub checks: Vec<CheckResult>,
    /// The language the page was drawn in at the end (`zh` only once the
    /// Chinese font arrived and was installed).
    pub lang: String,
    /// What a learner reads in that language: the first lesson's heading
    /// after the welcome page and its first exercise's prompt (seed 1).
    pub heading: String,
    pub prompt: String,
}

enum Stage {
    Lessons {
        index: usize,
        frames: u32,
    },
    Float,
    Gradcheck,
    /// The lessons' main actions, one after another.
    Action {
        index: usize,
        started: Option<web_time::Instant>,
    },
    Done,
}

pub struct SelfTest {
    stage: Stage,
    checks: Vec<CheckResult>,
    lessons: Vec<String>,
    /// Checks the report must hold: float, gradcheck, one per lesson action.
    expected: usize,
    pub report: Option<SelfTestReport>,
}

impl SelfTest {
    pub fn new(lessons: Vec<String>) -> Self {
        Self {
            stage: Stage::Lessons {
                index: 0,
                frames: 0,
            },
            checks: Vec::new(),
            lessons,
            expected: 2,
            report: None,
        }
    }

    fn check(&mut self, name: &str, ok: bool, detail: String, took: web_time::Duration) {
        self.checks.push(CheckResult {
            name: name.to_owned(),
            ok,
            detail,
            seconds: took.as_secs_f64(),
        });
    }

    /// Advances one step. Returns the lesson to show this frame, if any.
    pub fn step(&mut self, lessons: &mut [Box<dyn Lesson>], env: &Env<'_>) -> Option<String> {
        match &mut self.stage {
            Stage::Lessons { index, frames } => {
                let Some(id) = self.lessons.get(*index).cloned() else {
                    self.stage = Stage::Float;
                    return None;
                };
                *frames += 1;
                if *frames >= 3 {
                    *index += 1;
                    *frames = 0;
                }
                return Some(id);
            }
            Stage::Float => {
                let fp16 = Format::fp16();
                let overflow = fp16.encode_f64(65520.0, Rounding::NearestEven);
                let tenth = fp16.describe(
                    &dlsys_core::float::Exact::from_f64(0.1),
                    Rounding::NearestEven,
                );
                let ok = overflow == 0x7c00 && tenth.hex == "0x2e66";
                self.check(
                    "float",
                    ok,
                    format!("fp16(65520) = {overflow:#06x}, fp16(0.1) = {}", tenth.hex),
                    web_time::Duration::ZERO,
                );
                self.stage = Stage::Gradcheck;
            }
            Stage::Gradcheck => {
                let started = web_time::Instant::now();
                let report = Check::Mlp.run::<f64>(1, None);
                self.check(
                    "gradcheck",
                    report.band == Band::Good,
                    format!("MLP max relative error {:e}", report.max_rel_error),
                    started.elapsed(),
                );
                self.stage = Stage::Action {
                    index: 0,
                    started: None,
                };
            }
            Stage::Action { index, started } => {
                let Some(lesson) = lessons.get_mut(*index) else {
                    self.stage = Stage::Done;
                    return None;
                };
                let id = lesson.id().to_owned();
                let Some(since) = *started else {
                    if lesson.self_test_start(env) {
                        *started = Some(web_time::Instant::now());
                        self.expected += 1;
                        #[cfg(target_arch = "wasm32")]
                        crate::web::mark_stage(&format!("lesson:{id}"));
                    } else {
                        *index += 1;
                    }
                    return Some(id);
                };
                let outcome = (!lesson.is_busy())
                    .then(|| lesson.self_test_outcome())
                    .flatten();
                let finished = match outcome {
                    Some(outcome) => Some(outcome),
                    None if since.elapsed() > ACTION_BUDGET => {
                        Some(Err(dlsys_lessons::SelfTestFailure(format!(
                            "did not finish within {} s",
                            ACTION_BUDGET.as_secs()
                        ))))
                    }
                    None => None,
                };
                if let Some(outcome) = finished {
                    *index += 1;
                    *started = None;
                    let (ok, detail) = match outcome {
                        Ok(detail) => (true, detail),
                        Err(failure) => (false, failure.0),
                    };
                    self.check(&format!("lesson:{id}"), ok, detail, since.elapsed());
                    #[cfg(target_arch = "wasm32")]
                    crate::web::mark_stage("between");
                }
                return Some(id);
            }
            Stage::Done => {
                if self.report.is_none() {
                    let (backend, adapter) = match env.gpu {
                        GpuStatus::Compute(gpu) => (
                            gpu.adapter_info.backend.to_string().to_lowercase(),
                            gpu.adapter_info.name.clone(),
                        ),
                        GpuStatus::RenderOnly { .. } | GpuStatus::Unavailable { .. } => {
                            ("cpu".to_owned(), String::new())
                        }
                    };
                    let first = lessons.iter().find(|l| !l.exercises().is_empty());
                    let heading = first.map(|l| l.title(env.lang)).unwrap_or_default();
                    let prompt = first
                        .and_then(|l| {
                            l.exercises()
                                .first()
                                .map(|e| (e.generate)(1, env.lang).prompt)
                        })
                        .unwrap_or_default();
                    self.report = Some(SelfTestReport {
                        ok: self.checks.iter().all(|c| c.ok) && self.checks.len() == self.expected,
                        backend,
                        adapter,
                        lessons: self.lessons.clone(),
                        checks: self.checks.clone(),
                        lang: env.lang.id().to_owned(),
                        heading,
                        prompt,
                    });
                }
            }
        }
        None
    }

    pub fn is_done(&self) -> bool {
        self.report.is_some()
    }
}
