//! The smoke sequence behind `index.html?selftest` (and `Startup::selftest`):
//! open every lesson, convert a float, run one gradient check, the GPU
//! lesson's whole default race (every rung the adapter supports, through the
//! same `Ladder` as its "Race them all" button) and one WGSL exercise check (the checker on the reference kernel, a
//! broken one rejected with its line) on whatever backend is there, and
//! report the outcome as JSON. It
//! advances a little every frame, so the page keeps rendering meanwhile.

use dlsys_core::autograd::{Band, Check};
use dlsys_core::float::{Format, Rounding};
use dlsys_lessons::GpuStatus;
use dlsys_shaders::kernel_track::{CheckJob, KernelChecker, KernelVerdict, exercise, validate};
use dlsys_shaders::{KernelRunner, Ladder, Outcome};
use serde::Serialize;

/// One finished check.
#[derive(Clone, Debug, Serialize)]
pub struct CheckResult {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

/// What the self-test reports.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub ok: bool,
    /// `webgpu`, `vulkan`, … when the kernel ran on a GPU; `cpu` otherwise.
    pub backend: String,
    pub adapter: String,
    pub lessons: Vec<String>,
    pub checks: Vec<CheckResult>,
}

enum Stage {
    Lessons { index: usize, frames: u32 },
    Float,
    Gradcheck,
    StartKernel,
    Race(Box<(KernelRunner, Ladder)>),
    StartWgsl,
    Wgsl(Box<(KernelChecker, CheckJob)>),
    Done,
}

pub struct SelfTest {
    stage: Stage,
    checks: Vec<CheckResult>,
    lessons: Vec<String>,
    backend: String,
    adapter: String,
    pub report: Option<Report>,
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
            backend: "cpu".to_owned(),
            adapter: String::new(),
            report: None,
        }
    }

    fn check(&mut self, name: &str, ok: bool, detail: String) {
        self.checks.push(CheckResult {
            name: name.to_owned(),
            ok,
            detail,
        });
    }

    /// Advances one step. Returns the lesson to show this frame, if any.
    pub fn step(&mut self, gpu: &GpuStatus) -> Option<String> {
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
                );
                self.stage = Stage::Gradcheck;
            }
            Stage::Gradcheck => {
                let report = Check::Mlp.run::<f64>(1, None);
                self.check(
                    "gradcheck",
                    report.band == Band::Good,
                    format!("MLP max relative error {:e}", report.max_rel_error),
                );
                self.stage = Stage::StartKernel;
            }
            Stage::StartKernel => {
                // The lesson's own default race ("Race them all").
                let settings = dlsys_lessons::gpu_kernels::Settings::default().ladder(true);
                let ladder = match Ladder::new(&settings, dlsys_shaders::ladder::CPU_MAX_ELEMENTS) {
                    Ok(ladder) => ladder,
                    Err(err) => {
                        self.check("kernel_race", false, err.to_string());
                        self.stage = Stage::StartWgsl;
                        return None;
                    }
                };
                match gpu {
                    GpuStatus::Compute(gpu) => {
                        self.backend = gpu.adapter_info.backend.to_string();
                        self.adapter = gpu.adapter_info.name.clone();
                        let runner = KernelRunner::new((**gpu).clone());
                        self.stage = Stage::Race(Box::new((runner, ladder)));
                    }
                    GpuStatus::RenderOnly { reason, .. } | GpuStatus::Unavailable { reason } => {
                        let outcomes = ladder.run_on_cpu();
                        let (ok, detail) = judge_race(&outcomes);
                        self.check(
                            "kernel_race",
                            ok,
                            format!("CPU path (no compute GPU: {reason}): {detail}"),
                        );
                        self.stage = Stage::StartWgsl;
                    }
                }
            }
            Stage::Race(boxed) => {
                let (runner, ladder) = &mut **boxed;
                if ladder.poll(runner) {
                    let (ok, detail) = judge_race(ladder.outcomes());
                    self.check("kernel_race", ok, detail);
                    self.stage = Stage::StartWgsl;
                }
            }
            Stage::StartWgsl => {
                let Some(ex) = exercise("sum_reduction") else {
                    self.check(
                        "wgsl_exercise",
                        false,
                        "no sum_reduction exercise".to_owned(),
                    );
                    self.stage = Stage::Done;
                    return None;
                };
                // naga alone: the reference validates, a type error is found at its line.
                let broken = ex
                    .reference()
                    .replace("var total = 0.0;", "var total = 0u;");
                let naga_ok = validate(ex, &ex.reference()).is_ok()
                    && validate(ex, &broken).is_err_and(|d| d.line.is_some());
                match gpu {
                    GpuStatus::Compute(gpu) if naga_ok => {
                        let mut checker = KernelChecker::new((**gpu).clone());
                        let job = checker.start(ex, &ex.reference());
                        self.stage = Stage::Wgsl(Box::new((checker, job)));
                    }
                    _ => {
                        self.check(
                            "wgsl_exercise",
                            naga_ok,
                            "naga validation only (no compute GPU to run it)".to_owned(),
                        );
                        self.stage = Stage::Done;
                    }
                }
            }
            Stage::Wgsl(boxed) => {
                let (_, job) = &mut **boxed;
                if let Some(verdict) = job.poll() {
                    let ok = matches!(verdict, KernelVerdict::Passed { .. });
                    self.check("wgsl_exercise", ok, verdict.message());
                    self.stage = Stage::Done;
                }
            }
            Stage::Done => {
                if self.report.is_none() {
                    self.report = Some(Report {
                        ok: self.checks.iter().all(|c| c.ok) && self.checks.len() == 4,
                        backend: self.backend.to_lowercase(),
                        adapter: self.adapter.clone(),
                        lessons: self.lessons.clone(),
                        checks: self.checks.clone(),
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

/// Every rung ran (or, on the CPU path, was timed) and every GPU result
/// matches its reference; rungs the adapter cannot run (no subgroups) are
/// listed, not failed.
fn judge_race(outcomes: &[Outcome]) -> (bool, String) {
    let mut ran = 0;
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
            Outcome::Cpu(_) => ran += 1,
            Outcome::Skipped { kernel, why } => {
                let unsupported = matches!(why, dlsys_shaders::KernelError::NeedsSubgroups { .. });
                if unsupported {
                    skipped.push(kernel.id());
                } else {
                    wrong.push(format!("{}: {why}", kernel.id()));
                }
            }
        }
    }
    let ok = wrong.is_empty() && ran > 0;
    let mut detail = format!("{ran} of {} rungs ran", outcomes.len());
    if !skipped.is_empty() {
        detail.push_str(&format!("; not offered here: {}", skipped.join(", ")));
    }
    if !wrong.is_empty() {
        detail.push_str(&format!("; failed: {}", wrong.join("; ")));
    }
    (ok, detail)
}
