//! Write-your-own WGSL kernels: the exercises, their harness and checker.
//!
//! Each exercise fixes the bindings and the dispatch (stated in its template
//! under `shaders/wgsl/exercises/`); the learner writes the kernel. A check
//! goes: validate with naga (diagnostics carry their line), compile on the
//! device inside an error scope (a validation error never reaches wgpu's
//! panicking handler), then run on adversarial inputs against the CPU
//! reference in `dlsys-core`, reporting the first mismatching index with
//! expected vs got. Work is submitted without blocking and polled; a kernel
//! that does not finish within the time budget is abandoned with its device
//! ([`Checker::recover`] makes a fresh one), so an endless loop cannot freeze
//! the app.

use std::sync::{Arc, Mutex, mpsc};

use dlsys_core::kernels::{
    Kernel, ReduceKind, ReduceOp, SoftmaxKind, reduce_reference, softmax_reference,
};
use rand::{RngExt as _, SeedableRng as _, rngs::StdRng};
use wgpu::util::DeviceExt as _;

use crate::Gpu;

/// How the harness lays out data and dispatches work for an exercise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One workgroup of 256 sums all of x into y[0].
    Sum,
    /// One workgroup of 256 per row; y[row] = max of the row.
    RowMax,
    /// One workgroup of 256 per row; y = softmax of each row.
    RowSoftmax,
    /// ceil(n / 256) workgroups; y = max(x + bias[col], 0).
    BiasRelu,
    /// 16 × 16 tiles; y (cols × rows) = xᵀ.
    Transpose,
}

impl Layout {
    pub fn workgroup_size(self) -> [u32; 3] {
        match self {
            Self::Transpose => [16, 16, 1],
            _ => [256, 1, 1],
        }
    }
}

/// A known-wrong kernel and what the checker's message must mention.
#[derive(Clone, Copy, Debug)]
pub struct Wrong {
    pub name: &'static str,
    pub source: &'static str,
    pub expect: &'static str,
}

/// One kernel to write.
#[derive(Clone, Copy, Debug)]
pub struct KernelExercise {
    pub id: &'static str,
    pub title: &'static str,
    pub layout: Layout,
    pub template: &'static str,
    pub reference: &'static str,
    pub wrong: &'static [Wrong],
}

macro_rules! wgsl {
    ($name:literal) => {
        include_str!(concat!("../wgsl/exercises/", $name))
    };
}

/// The exercises, in order.
pub const EXERCISES: [KernelExercise; 6] = [
    KernelExercise {
        id: "sum_reduction",
        title: "Sum reduction",
        layout: Layout::Sum,
        template: wgsl!("sum_reduction.wgsl"),
        reference: wgsl!("sum_reduction.reference.wgsl"),
        wrong: &[Wrong {
            name: "no grid-stride loop",
            source: wgsl!("sum_reduction.wrong.wgsl"),
            expect: "more values than the workgroup has invocations",
        }],
    },
    KernelExercise {
        id: "row_max",
        title: "Row max",
        layout: Layout::RowMax,
        template: wgsl!("row_max.wgsl"),
        reference: wgsl!("row_max.reference.wgsl"),
        wrong: &[Wrong {
            name: "max starts at 0",
            source: wgsl!("row_max.wrong.wgsl"),
            expect: "start the max at −inf",
        }],
    },
    KernelExercise {
        id: "safe_softmax",
        title: "Safe softmax",
        layout: Layout::RowSoftmax,
        template: wgsl!("safe_softmax.wgsl"),
        reference: wgsl!("safe_softmax.reference.wgsl"),
        wrong: &[Wrong {
            name: "no max subtracted",
            source: wgsl!("safe_softmax.wrong.wgsl"),
            expect: "subtract the row max",
        }],
    },
    KernelExercise {
        id: "online_softmax",
        title: "Online softmax",
        layout: Layout::RowSoftmax,
        template: wgsl!("online_softmax.wgsl"),
        reference: wgsl!("online_softmax.reference.wgsl"),
        wrong: &[Wrong {
            name: "merge without rescaling",
            source: wgsl!("online_softmax.wrong.wgsl"),
            expect: "do not sum to 1",
        }],
    },
    KernelExercise {
        id: "bias_relu",
        title: "Fused bias + ReLU",
        layout: Layout::BiasRelu,
        template: wgsl!("bias_relu.wgsl"),
        reference: wgsl!("bias_relu.reference.wgsl"),
        wrong: &[Wrong {
            name: "bias[i] instead of bias[i % cols]",
            source: wgsl!("bias_relu.wrong.wgsl"),
            expect: "bias",
        }],
    },
    KernelExercise {
        id: "transpose",
        title: "Transpose through workgroup memory",
        layout: Layout::Transpose,
        template: wgsl!("transpose.wgsl"),
        reference: wgsl!("transpose.reference.wgsl"),
        wrong: &[Wrong {
            name: "copied, not transposed",
            source: wgsl!("transpose.wrong.wgsl"),
            expect: "is the input's element",
        }],
    },
];

/// The exercise called `id`.
pub fn exercise(id: &str) -> Option<&'static KernelExercise> {
    EXERCISES.iter().find(|e| e.id == id)
}

/// A problem the learner's kernel must get right.
#[derive(Clone, Debug)]
pub struct Case {
    /// What makes it hard, shown when it fails.
    pub name: String,
    pub rows: u32,
    pub cols: u32,
    pub x: Vec<f32>,
    pub bias: Vec<f32>,
}

impl Case {
    fn new(name: impl Into<String>, rows: u32, cols: u32, x: Vec<f32>) -> Self {
        Self {
            name: name.into(),
            rows,
            cols,
            x,
            bias: Vec::new(),
        }
    }
}

fn uniform(rng: &mut StdRng, len: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(lo..hi)).collect()
}

impl KernelExercise {
    /// The adversarial inputs: sizes 1, 2^k ± 1, larger than a workgroup,
    /// ±inf, huge logits, masked (−inf) entries.
    pub fn cases(&self) -> Vec<Case> {
        let mut rng = StdRng::seed_from_u64(7);
        let mut cases = Vec::new();
        match self.layout {
            Layout::Sum => {
                for n in [1u32, 2, 255, 256] {
                    let x = uniform(&mut rng, n as usize, 0.0, 1.0);
                    cases.push(Case::new(format!("n = {n}"), 1, n, x));
                }
                for n in [257u32, 1023, 1025, 100_000] {
                    let x = uniform(&mut rng, n as usize, 0.0, 1.0);
                    cases.push(Case::new(
                        format!("n = {n}: more values than the workgroup has invocations"),
                        1,
                        n,
                        x,
                    ));
                }
                let mut x = uniform(&mut rng, 1000, -1.0, 1.0);
                x[999] = f32::INFINITY;
                cases.push(Case::new("n = 1000, the last value +inf", 1, 1000, x));
            }
            Layout::RowMax => {
                for cols in [1u32, 2, 255, 257, 1000, 4097] {
                    let x = uniform(&mut rng, 3 * cols as usize, -5.0, 5.0);
                    cases.push(Case::new(format!("3 rows of {cols}"), 3, cols, x));
                }
                let x = uniform(&mut rng, 2 * 300, -9.0, -1.0);
                cases.push(Case::new("2 rows of 300, only negative values", 2, 300, x));
                let mut x = uniform(&mut rng, 3 * 64, -3.0, 3.0);
                x[5] = f32::INFINITY;
                x[64..128].fill(f32::NEG_INFINITY);
                x[130] = f32::NEG_INFINITY;
                cases.push(Case::new(
                    "3 rows of 64: +inf in the first, the second all −inf, −inf in the third",
                    3,
                    64,
                    x,
                ));
            }
            Layout::RowSoftmax => {
                for cols in [1u32, 2, 255, 257, 1000, 4097] {
                    let x = uniform(&mut rng, 3 * cols as usize, -4.0, 4.0);
                    cases.push(Case::new(format!("3 rows of {cols}"), 3, cols, x));
                }
                let x = uniform(&mut rng, 2 * 500, -1e4, 1e4);
                cases.push(Case::new(
                    "2 rows of 500 logits in ±10000: exp overflows unless you subtract the row max",
                    2,
                    500,
                    x,
                ));
                let mut x = uniform(&mut rng, 2 * 300, -4.0, 4.0);
                for i in (0..600).step_by(7) {
                    x[i] = f32::NEG_INFINITY;
                }
                cases.push(Case::new(
                    "2 rows of 300 with −inf (masked) entries",
                    2,
                    300,
                    x,
                ));
            }
            Layout::BiasRelu => {
                for (rows, cols) in [(1u32, 1u32), (1, 257), (7, 3), (300, 257), (4000, 1)] {
                    let n = (rows * cols) as usize;
                    let mut case = Case::new(
                        format!("{rows} × {cols} (n = {n})"),
                        rows,
                        cols,
                        uniform(&mut rng, n, -2.0, 2.0),
                    );
                    case.bias = uniform(&mut rng, cols as usize, -1.0, 1.0);
                    cases.push(case);
                }
                let mut x = uniform(&mut rng, 5 * 9, -2.0, 2.0);
                x[3] = f32::INFINITY;
                x[10] = f32::NEG_INFINITY;
                let mut case = Case::new("5 × 9 with +inf and −inf", 5, 9, x);
                case.bias = uniform(&mut rng, 9, -1.0, 1.0);
                cases.push(case);
            }
            Layout::Transpose => {
                for (rows, cols) in [
                    (1u32, 1u32),
                    (1, 17),
                    (17, 1),
                    (16, 16),
                    (33, 47),
                    (100, 257),
                ] {
                    let x = uniform(&mut rng, (rows * cols) as usize, -100.0, 100.0);
                    cases.push(Case::new(format!("{rows} × {cols}"), rows, cols, x));
                }
            }
        }
        cases
    }

    /// The CPU reference's answer (f64 inside where it matters).
    pub fn expected(&self, case: &Case) -> Vec<f32> {
        let (rows, cols) = (case.rows as usize, case.cols as usize);
        match self.layout {
            Layout::Sum => vec![reduce_reference(&case.x, ReduceOp::Sum) as f32],
            Layout::RowMax => case
                .x
                .chunks(cols)
                .map(|row| reduce_reference(row, ReduceOp::Max) as f32)
                .collect(),
            Layout::RowSoftmax => softmax_reference(&case.x, rows, cols),
            Layout::BiasRelu => case
                .x
                .iter()
                .enumerate()
                .map(|(i, v)| (v + case.bias[i % cols]).max(0.0))
                .collect(),
            Layout::Transpose => {
                let mut y = vec![0.0; rows * cols];
                for r in 0..rows {
                    for c in 0..cols {
                        y[c * rows + r] = case.x[r * cols + c];
                    }
                }
                y
            }
        }
    }

    fn output_len(&self, case: &Case) -> usize {
        match self.layout {
            Layout::Sum => 1,
            Layout::RowMax => case.rows as usize,
            _ => case.x.len(),
        }
    }

    fn workgroups(&self, case: &Case) -> (u32, u32, u32) {
        match self.layout {
            Layout::Sum => (1, 1, 1),
            Layout::RowMax | Layout::RowSoftmax => (case.rows, 1, 1),
            Layout::BiasRelu => ((case.rows * case.cols).div_ceil(256), 1, 1),
            Layout::Transpose => (case.cols.div_ceil(16), case.rows.div_ceil(16), 1),
        }
    }

    /// Whether `got` is close enough to `want` at one element.
    fn agrees(&self, case: &Case, got: f32, want: f32) -> bool {
        if want.is_nan() || got.is_nan() {
            return want.is_nan() && got.is_nan();
        }
        if !want.is_finite() || !got.is_finite() {
            return got == want;
        }
        let (g, w) = (f64::from(got), f64::from(want));
        match self.layout {
            // f32 accumulation in any order: a bound scaled by Σ|x|.
            Layout::Sum => {
                let scale: f64 = case.x.iter().map(|v| f64::from(v.abs())).sum();
                (g - w).abs() <= 2e-5 * scale.max(1.0)
            }
            // exp on a GPU is a few ulp off; relative, with a floor for tiny outputs.
            Layout::RowSoftmax => (g - w).abs() <= 1e-4 * w.abs() + 1e-9,
            _ => g == w,
        }
    }

    /// The first element that disagrees, explained.
    fn judge(&self, case: &Case, got: &[f32]) -> Result<(), Mismatch> {
        let want = self.expected(case);
        let first = want
            .iter()
            .zip(got)
            .position(|(w, g)| !self.agrees(case, *g, *w));
        let Some(index) = first else {
            return Ok(());
        };
        let (expected, got_value) = (want[index], got[index]);
        let note = match self.layout {
            _ if got_value.to_bits() == UNWRITTEN.to_bits() => {
                "no invocation wrote this element".to_owned()
            }
            Layout::RowMax if got_value == 0.0 && expected < 0.0 => {
                "0 is larger than every value of this row: start the max at −inf (params.neg_inf), not 0"
                    .to_owned()
            }
            Layout::RowSoftmax if !got_value.is_finite() => {
                "inf or NaN: exp overflowed; subtract the row max before exp".to_owned()
            }
            Layout::RowSoftmax => {
                let row = index / case.cols as usize;
                let cols = case.cols as usize;
                let total: f64 = got[row * cols..(row + 1) * cols]
                    .iter()
                    .map(|v| f64::from(*v))
                    .sum();
                if (total - 1.0).abs() > 1e-3 {
                    format!(
                        "row {row}'s outputs do not sum to 1 (they sum to {total:.6}): check the sum of exp"
                    )
                } else {
                    "not this row's softmax".to_owned()
                }
            }
            Layout::Transpose => {
                let source = case.x.get(index).copied();
                if source == Some(got_value) && got_value != expected {
                    format!(
                        "y[{index}] is the input's element x[{index}]: the tile went out untransposed"
                    )
                } else {
                    String::new()
                }
            }
            Layout::BiasRelu => {
                let cols = case.cols as usize;
                format!(
                    "y[i] = max(x[i] + bias[i % cols], 0); element {index} is row {}, column {}, so it takes bias[{}]",
                    index / cols,
                    index % cols,
                    index % cols
                )
            }
            _ => String::new(),
        };
        Err(Mismatch {
            case: case.name.clone(),
            index,
            expected,
            got: got_value,
            note,
        })
    }
}

/// Where a diagnostic points.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// 1-based, when known.
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "line {l}, column {c}: {}", self.message),
            (Some(l), None) => write!(f, "line {l}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

/// The first element that disagrees with the reference.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Mismatch {
    pub case: String,
    pub index: usize,
    pub expected: f32,
    pub got: f32,
    /// What the mistake probably is (may be empty).
    pub note: String,
}

/// What a check came to.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum Verdict {
    /// Rejected by naga or by the device's validation.
    Invalid(Diagnostic),
    Mismatch(Mismatch),
    /// Did not finish within the budget; the device was abandoned.
    TimedOut {
        case: String,
        budget_ms: u64,
    },
    /// Something else went wrong (no device, device lost, readback failed).
    Failed(String),
    Passed {
        cases: usize,
    },
}

impl Verdict {
    pub fn passed(&self) -> bool {
        matches!(self, Self::Passed { .. })
    }

    /// One paragraph for the learner.
    pub fn message(&self) -> String {
        match self {
            Self::Invalid(d) => format!("does not compile: {d}"),
            Self::Mismatch(m) => {
                let mut text = format!(
                    "wrong on \"{}\": at index {} expected {:e}, got {:e}",
                    m.case, m.index, m.expected, m.got
                );
                if !m.note.is_empty() {
                    text.push_str(" — ");
                    text.push_str(&m.note);
                }
                text
            }
            Self::TimedOut { case, budget_ms } => format!(
                "did not finish within {budget_ms} ms on \"{case}\" (an endless loop?). {}",
                if cfg!(target_arch = "wasm32") {
                    "The kernel was abandoned; reload the page to get a fresh GPU device."
                } else {
                    "The kernel was abandoned and a fresh GPU device is used from now on."
                }
            ),
            Self::Failed(why) => format!("could not run: {why}"),
            Self::Passed { cases } => format!("passes all {cases} cases"),
        }
    }
}

fn location(loc: Option<naga::SourceLocation>) -> (Option<u32>, Option<u32>) {
    loc.map_or((None, None), |l| {
        (Some(l.line_number), Some(l.line_position))
    })
}

/// Parses and validates with naga, then checks the entry point the harness
/// calls: `main`, a compute shader with the exercise's workgroup size.
pub fn validate(exercise: &KernelExercise, source: &str) -> Result<(), Diagnostic> {
    let module = naga::front::wgsl::parse_str(source).map_err(|err| {
        let (line, column) = location(err.location(source));
        Diagnostic {
            line,
            column,
            message: err.message().to_owned(),
        }
    })?;
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|err| {
        let (line, column) = location(err.location(source));
        let mut message = err.as_inner().to_string();
        let mut source_err = std::error::Error::source(err.as_inner());
        while let Some(inner) = source_err {
            message.push_str(": ");
            message.push_str(&inner.to_string());
            source_err = inner.source();
        }
        Diagnostic {
            line,
            column,
            message,
        }
    })?;
    let want = exercise.layout.workgroup_size();
    let entry = module
        .entry_points
        .iter()
        .find(|e| e.name == "main" && e.stage == naga::ShaderStage::Compute)
        .ok_or_else(|| Diagnostic {
            line: None,
            column: None,
            message: "the harness calls a compute entry point named `main`; there is none"
                .to_owned(),
        })?;
    if entry.workgroup_size != want {
        let shown = match want {
            [x, 1, 1] => format!("{x}"),
            [x, y, _] => format!("{x}, {y}"),
        };
        return Err(Diagnostic {
            line: None,
            column: None,
            message: format!(
                "the harness dispatches @workgroup_size({shown}); `main` has {:?}",
                entry.workgroup_size
            ),
        });
    }
    Ok(())
}

/// Devices abandoned with a kernel still running on them. Dropping one would
/// wait for that kernel (forever); they are kept here until the process ends.
#[cfg(not(target_arch = "wasm32"))]
static ABANDONED: Mutex<Vec<Gpu>> = Mutex::new(Vec::new());

/// Runs checks on a device of its own (never the one that draws the UI, so a
/// runaway kernel cannot stall the frame).
pub struct Checker {
    gpu: Option<Gpu>,
    /// Per case.
    pub budget: web_time::Duration,
    /// Set when a kernel timed out: the device must be replaced.
    poisoned: bool,
}

impl Checker {
    pub fn new(gpu: Gpu) -> Self {
        Self {
            gpu: Some(gpu),
            budget: web_time::Duration::from_secs(3),
            poisoned: false,
        }
    }

    /// A checker on a fresh device (native only: the web cannot block).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn request_blocking() -> Result<Self, String> {
        Gpu::request_blocking()
            .map(Self::new)
            .map_err(|e| e.to_string())
    }

    pub fn gpu(&self) -> Option<&Gpu> {
        self.gpu.as_ref()
    }

    /// Whether the last check left the device unusable.
    pub fn needs_recovery(&self) -> bool {
        self.poisoned || self.gpu.is_none()
    }

    /// Abandons the device a runaway kernel still occupies and makes a new one.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn recover(&mut self) -> Result<(), String> {
        self.abandon();
        let gpu = Gpu::request_blocking().map_err(|e| e.to_string())?;
        self.gpu = Some(gpu);
        self.poisoned = false;
        Ok(())
    }

    /// Starts checking `source`; poll the job until it answers.
    pub fn start(&mut self, exercise: &'static KernelExercise, source: &str) -> CheckJob {
        let mut job = CheckJob {
            exercise,
            state: State::Done(None),
            cases: exercise.cases(),
            next: 0,
            budget: self.budget,
            lost: false,
        };
        if let Err(d) = validate(exercise, source) {
            job.state = State::Done(Some(Verdict::Invalid(d)));
            return job;
        }
        let Some(gpu) = self.gpu.clone().filter(|_| !self.poisoned) else {
            job.state = State::Done(Some(Verdict::Failed(
                "no usable GPU device: the last one was abandoned to a kernel that did not finish"
                    .to_owned(),
            )));
            return job;
        };
        let (pipeline, compiled) = compile(&gpu, exercise.layout, source);
        job.state = State::Ready {
            gpu,
            pipeline,
            compiled,
            since: web_time::Instant::now(),
        };
        job
    }

    /// [`Self::start`], then waits (native: CLI and tests). Recovers the
    /// device itself after a timeout.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn check_blocking(&mut self, exercise: &'static KernelExercise, source: &str) -> Verdict {
        let mut job = self.start(exercise, source);
        let verdict = loop {
            if let Some(v) = job.poll() {
                break v;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        if job.abandons_device() {
            self.poisoned = true;
            if let Err(err) = self.recover() {
                log::error!("recreating the GPU device failed: {err}");
            }
        }
        verdict
    }

    /// Tells the checker that a job it started timed out or lost its device
    /// (the app polls jobs itself, then calls this and [`Self::recover`]).
    pub fn mark_poisoned(&mut self) {
        self.poisoned = true;
    }

    /// Gives up the device without making a new one (a kernel still runs on
    /// it: dropping it would wait for that kernel).
    pub fn abandon(&mut self) {
        self.poisoned = true;
        // On the web dropping does not wait (and the device is the app's).
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(old) = self.gpu.take()
            && let Ok(mut graveyard) = ABANDONED.lock()
        {
            graveyard.push(old);
        }
        #[cfg(target_arch = "wasm32")]
        drop(self.gpu.take());
    }
}

struct Pipeline {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

/// What an error scope caught, once known: at once on native, later on the
/// web (the browser answers asynchronously). `None` inside: not known yet.
#[derive(Clone, Default)]
struct Pending(Arc<Mutex<Option<Option<String>>>>);

impl Pending {
    #[cfg(not(target_arch = "wasm32"))]
    fn known(error: Option<String>) -> Self {
        Self(Arc::new(Mutex::new(Some(error))))
    }

    /// `None` while unknown; `Some(None)` when nothing went wrong.
    fn get(&self) -> Option<Option<String>> {
        self.0.lock().ok().and_then(|g| g.clone())
    }
}

/// Validation, out-of-memory and internal errors are all caught, so none
/// reaches wgpu's default handler (which panics).
const FILTERS: [wgpu::ErrorFilter; 3] = [
    wgpu::ErrorFilter::Validation,
    wgpu::ErrorFilter::OutOfMemory,
    wgpu::ErrorFilter::Internal,
];

fn push_scopes(device: &wgpu::Device) -> Vec<wgpu::ErrorScopeGuard> {
    FILTERS
        .iter()
        .map(|f| device.push_error_scope(*f))
        .collect()
}

/// Pops the scopes (innermost first) right away; the first error caught is
/// the answer.
fn pop_scopes(scopes: Vec<wgpu::ErrorScopeGuard>) -> Pending {
    let futures: Vec<_> = scopes.into_iter().rev().map(|g| g.pop()).collect();
    #[cfg(not(target_arch = "wasm32"))]
    {
        let first = futures
            .into_iter()
            .filter_map(pollster::block_on)
            .map(|e| e.to_string())
            .next();
        Pending::known(first)
    }
    #[cfg(target_arch = "wasm32")]
    {
        let pending = Pending::default();
        let cell = pending.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let mut first = None;
            for future in futures {
                if let Some(err) = future.await {
                    first.get_or_insert(err.to_string());
                }
            }
            if let Ok(mut slot) = cell.0.lock() {
                *slot = Some(first);
            }
        });
        pending
    }
}

fn compile(gpu: &Gpu, layout: Layout, source: &str) -> (Arc<Pipeline>, Pending) {
    let device = &gpu.device;
    let storage = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    let mut entries = vec![
        wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        },
        storage(1, true),
        storage(2, false),
    ];
    if layout == Layout::BiasRelu {
        entries.push(storage(3, true));
    }
    let scopes = push_scopes(device);
    let bind_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("exercise bindings"),
        entries: &entries,
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("exercise"),
        bind_group_layouts: &[Some(&bind_layout)],
        immediate_size: 0,
    });
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("your kernel"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("your kernel"),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let pending = pop_scopes(scopes);
    (
        Arc::new(Pipeline {
            pipeline,
            layout: bind_layout,
        }),
        pending,
    )
}

fn rejected(error: &str) -> Verdict {
    Verdict::Invalid(Diagnostic {
        line: None,
        column: None,
        message: format!("the device rejected it: {error}"),
    })
}

/// A case's buffers, bound to the learner's pipeline.
struct Bound {
    group: wgpu::BindGroup,
    y: wgpu::Buffer,
    out_len: usize,
    workgroups: (u32, u32, u32),
}

impl KernelExercise {
    /// Uploads `case` and binds it. The output starts as the [`UNWRITTEN`]
    /// marker everywhere.
    fn bind(&self, gpu: &Gpu, pipeline: &Pipeline, case: &Case) -> Bound {
        let device = &gpu.device;
        let words = [
            case.rows,
            case.cols,
            case.x.len() as u32,
            f32::NEG_INFINITY.to_bits(),
        ];
        let init = |label: &str, contents: &[u8], usage: wgpu::BufferUsages| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            })
        };
        let params = init(
            "params",
            bytemuck::cast_slice(&words),
            wgpu::BufferUsages::UNIFORM,
        );
        let x = init(
            "x",
            bytemuck::cast_slice(&case.x),
            wgpu::BufferUsages::STORAGE,
        );
        let out_len = self.output_len(case);
        let y = init(
            "y",
            bytemuck::cast_slice(&vec![UNWRITTEN; out_len]),
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        );
        let bias_values = if case.bias.is_empty() {
            vec![0.0f32]
        } else {
            case.bias.clone()
        };
        let bias = init(
            "bias",
            bytemuck::cast_slice(&bias_values),
            wgpu::BufferUsages::STORAGE,
        );
        let mut entries = vec![
            wgpu::BindGroupEntry {
                binding: 0,
                resource: params.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: x.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 2,
                resource: y.as_entire_binding(),
            },
        ];
        if self.layout == Layout::BiasRelu {
            entries.push(wgpu::BindGroupEntry {
                binding: 3,
                resource: bias.as_entire_binding(),
            });
        }
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("exercise"),
            layout: &pipeline.layout,
            entries: &entries,
        });
        Bound {
            group,
            y,
            out_len,
            workgroups: self.workgroups(case),
        }
    }
}

/// Records one dispatch of the learner's kernel.
fn dispatch(
    encoder: &mut wgpu::CommandEncoder,
    pipeline: &Pipeline,
    bound: &Bound,
    timestamps: Option<&wgpu::QuerySet>,
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("your kernel"),
        timestamp_writes: timestamps.map(|set| wgpu::ComputePassTimestampWrites {
            query_set: set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        }),
    });
    pass.set_pipeline(&pipeline.pipeline);
    pass.set_bind_group(0, &bound.group, &[]);
    let (x, y, z) = bound.workgroups;
    pass.dispatch_workgroups(x, y, z);
}

enum State {
    Ready {
        gpu: Gpu,
        pipeline: Arc<Pipeline>,
        /// Whether the device accepted the pipeline.
        compiled: Pending,
        since: web_time::Instant,
    },
    Running {
        gpu: Gpu,
        pipeline: Arc<Pipeline>,
        compiled: Pending,
        readback: wgpu::Buffer,
        receiver: Receiver,
        /// Whether the device accepted the run.
        errors: Pending,
        started: web_time::Instant,
    },
    Done(Option<Verdict>),
}

/// A check in flight: one case at a time, never blocking.
pub struct CheckJob {
    exercise: &'static KernelExercise,
    state: State,
    cases: Vec<Case>,
    next: usize,
    budget: web_time::Duration,
    /// The device stopped answering (lost, or its mapping failed).
    lost: bool,
}

impl CheckJob {
    /// Which case is running, of how many (for a progress bar).
    pub fn progress(&self) -> (usize, usize) {
        (self.next, self.cases.len())
    }

    /// Whether the job timed out or lost its device: either way the device
    /// must not be used again.
    pub fn abandons_device(&self) -> bool {
        self.lost || matches!(self.state, State::Done(Some(Verdict::TimedOut { .. })))
    }

    fn timed_out(&self) -> Verdict {
        Verdict::TimedOut {
            case: self
                .cases
                .get(self.next)
                .map_or_else(String::new, |c| c.name.clone()),
            budget_ms: self.budget.as_millis() as u64,
        }
    }

    /// Advances without blocking; the verdict once there is one.
    pub fn poll(&mut self) -> Option<Verdict> {
        loop {
            match std::mem::replace(&mut self.state, State::Done(None)) {
                State::Done(verdict) => {
                    self.state = State::Done(verdict.clone());
                    return verdict;
                }
                State::Ready {
                    gpu,
                    pipeline,
                    compiled,
                    since,
                } => match compiled.get() {
                    None if since.elapsed() > self.budget => {
                        self.state = State::Done(Some(self.timed_out()));
                    }
                    None => {
                        self.state = State::Ready {
                            gpu,
                            pipeline,
                            compiled,
                            since,
                        };
                        return None;
                    }
                    Some(Some(error)) => self.state = State::Done(Some(rejected(&error))),
                    Some(None) if self.next == self.cases.len() => {
                        self.state = State::Done(Some(Verdict::Passed {
                            cases: self.cases.len(),
                        }));
                    }
                    Some(None) => {
                        let (readback, receiver, errors) = self.submit(&gpu, &pipeline);
                        self.state = State::Running {
                            gpu,
                            pipeline,
                            compiled,
                            readback,
                            receiver,
                            errors,
                            started: web_time::Instant::now(),
                        };
                    }
                },
                State::Running {
                    gpu,
                    pipeline,
                    compiled,
                    readback,
                    receiver,
                    errors,
                    started,
                } => {
                    let _ = gpu.device.poll(wgpu::PollType::Poll);
                    let mapped = match receiver.try_recv() {
                        Ok(result) => Some(result),
                        Err(mpsc::TryRecvError::Empty) => None,
                        Err(mpsc::TryRecvError::Disconnected) => {
                            self.lost = true;
                            self.state = State::Done(Some(Verdict::Failed(
                                "the GPU device was lost".to_owned(),
                            )));
                            continue;
                        }
                    };
                    match (mapped, errors.get()) {
                        // The device refused the run: that, not the output, is the answer.
                        (_, Some(Some(error))) => {
                            self.state = State::Done(Some(Verdict::Failed(format!(
                                "the device rejected the run: {error}"
                            ))));
                        }
                        (Some(Err(err)), _) => {
                            self.lost = true;
                            self.state = State::Done(Some(Verdict::Failed(format!(
                                "reading the output back failed: {err}"
                            ))));
                        }
                        (Some(Ok(())), Some(None)) => {
                            let case = &self.cases[self.next];
                            let got = read_f32(&readback);
                            self.next += 1;
                            match got.and_then(|got| {
                                self.exercise.judge(case, &got).map_err(Verdict::Mismatch)
                            }) {
                                Ok(()) => {
                                    self.state = State::Ready {
                                        gpu,
                                        pipeline,
                                        compiled,
                                        since: web_time::Instant::now(),
                                    };
                                }
                                Err(verdict) => self.state = State::Done(Some(verdict)),
                            }
                        }
                        _ if started.elapsed() > self.budget => {
                            self.state = State::Done(Some(self.timed_out()));
                        }
                        _ => {
                            self.state = State::Running {
                                gpu,
                                pipeline,
                                compiled,
                                readback,
                                receiver,
                                errors,
                                started,
                            };
                            return None;
                        }
                    }
                }
            }
        }
    }

    /// Uploads the next case, dispatches, and asks for the output back.
    fn submit(&self, gpu: &Gpu, pipeline: &Pipeline) -> (wgpu::Buffer, Receiver, Pending) {
        let case = &self.cases[self.next];
        let device = &gpu.device;
        let scopes = push_scopes(device);
        let bound = self.exercise.bind(gpu, pipeline, case);
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("y readback"),
            size: (bound.out_len * 4) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("your kernel"),
        });
        dispatch(&mut encoder, pipeline, &bound, None);
        encoder.copy_buffer_to_buffer(&bound.y, 0, &readback, 0, None);
        gpu.queue.submit([encoder.finish()]);
        let (sender, receiver) = mpsc::channel();
        readback.map_async(wgpu::MapMode::Read, .., move |result| {
            let _ = sender.send(result);
        });
        let errors = pop_scopes(scopes);
        (readback, receiver, errors)
    }
}

type Receiver = mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>;

/// What an output element holds if no invocation wrote it (a NaN pattern no
/// arithmetic produces).
const UNWRITTEN: f32 = f32::from_bits(0x7fc0_0bad);

fn read_f32(buffer: &wgpu::Buffer) -> Result<Vec<f32>, Verdict> {
    let view = buffer
        .get_mapped_range(..)
        .map_err(|e| Verdict::Failed(e.to_string()))?;
    let values = bytemuck::cast_slice::<u8, f32>(&view).to_vec();
    drop(view);
    buffer.unmap();
    Ok(values)
}

/// A sum-reduction kernel that runs for about 8 s on llvmpipe (a few times
/// any checker's budget), for tests and demonstrations of the time budget. A
/// truly endless `loop {}` cannot be had there: llvmpipe stops a shader after
/// 65,535 loop iterations. So the loop runs to that cap, each iteration a long
/// chain of transcendental functions no compiler can fold. On a hardware GPU
/// an endless loop either overruns the budget the same way or, first, trips
/// the driver's watchdog, which resets the device: the checker reports the
/// device lost and replaces it (a reset may also hit the app's own device,
/// which the checker cannot prevent).
pub fn runaway_kernel() -> String {
    let body = "        v = sin(v) * 0.75 + cos(v * 1.5) + exp(-v * v);\n".repeat(150);
    format!(
        "struct Params {{ rows: u32, cols: u32, n: u32, neg_inf: f32 }}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32) {{
    var v = x[0] + f32(tid);
    loop {{
{body}        if (v > 1e30) {{
            break;
        }}
    }}
    y[0] = v;
}}
"
    )
}

/// One line of a race: a kernel and its median time on the bench problem.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Lap {
    /// `yours`, or the built-in kernel's id.
    pub kernel: String,
    pub median_ns: f64,
    /// Bytes each kernel must at least move (input read once, output written
    /// once) ÷ median time.
    pub gb_per_s: f64,
    /// How it was timed.
    pub timer: String,
}

/// The learner's kernel against the built-in ladder on one bench problem.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Race {
    pub problem: String,
    pub trials: u32,
    /// How the learner's kernel was timed (the ladder's laps say theirs).
    pub timer: String,
    /// Fastest first.
    pub laps: Vec<Lap>,
}

impl Race {
    /// 1-based place of the learner's kernel.
    pub fn rank(&self) -> usize {
        self.laps
            .iter()
            .position(|l| l.kernel == "yours")
            .map_or(0, |i| i + 1)
    }
}

impl KernelExercise {
    /// The problem kernels race on: 1024 × 1024 values (4 MiB).
    pub fn bench_case(&self) -> Case {
        let mut rng = StdRng::seed_from_u64(11);
        let (rows, cols) = (1024u32, 1024u32);
        let mut case = Case::new(
            format!("{rows} × {cols}"),
            rows,
            cols,
            uniform(&mut rng, (rows * cols) as usize, -4.0, 4.0),
        );
        if self.layout == Layout::BiasRelu {
            case.bias = uniform(&mut rng, cols as usize, -1.0, 1.0);
        }
        case
    }

    /// The built-in kernels that do the same job (always with the copy
    /// kernel, the bandwidth ceiling).
    pub fn ladder(&self) -> Vec<Kernel> {
        let mut kernels = vec![Kernel::Copy];
        match self.layout {
            Layout::Sum => {
                kernels.extend(ReduceKind::ALL.map(|k| Kernel::Reduce(k, ReduceOp::Sum)));
            }
            // The ladder reduces the whole array; the bytes are the same.
            Layout::RowMax => {
                kernels.extend(ReduceKind::ALL.map(|k| Kernel::Reduce(k, ReduceOp::Max)));
            }
            Layout::RowSoftmax => kernels.extend(SoftmaxKind::ALL.map(Kernel::Softmax)),
            Layout::BiasRelu | Layout::Transpose => {}
        }
        kernels
    }

    /// Bytes the kernel must at least move on `case`.
    pub fn min_bytes(&self, case: &Case) -> u64 {
        let input = case.x.len() + case.bias.len();
        (4 * (input + self.output_len(case))) as u64
    }
}

/// Why a race did not finish.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RaceError {
    pub message: String,
    /// The learner's kernel is still running on the device (it overran the
    /// budget), or the device is gone: do not use it again.
    pub abandon_device: bool,
}

impl std::fmt::Display for RaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl RaceError {
    #[cfg(not(target_arch = "wasm32"))]
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            abandon_device: false,
        }
    }
}

/// Times the learner's (already checked) kernel and the ladder on the same
/// device and problem, with the timer the ladder uses there: GPU timestamps
/// around the dispatch on a GPU, or the CPU clock from submission to
/// completion on a CPU adapter (whose timestamps proved unreliable). The
/// input is uploaded once; each trial is one dispatch in its own submission,
/// after one warm-up. Blocking: run it off the UI thread.
#[cfg(not(target_arch = "wasm32"))]
pub fn race_blocking(
    gpu: &Gpu,
    exercise: &'static KernelExercise,
    source: &str,
    trials: u32,
    budget: web_time::Duration,
) -> Result<Race, RaceError> {
    let device = &gpu.device;
    let (pipeline, compiled) = compile(gpu, exercise.layout, source);
    if let Some(Some(error)) = compiled.get() {
        return Err(RaceError::new(rejected(&error).message()));
    }
    let case = exercise.bench_case();
    let bound = exercise.bind(gpu, &pipeline, &case);
    let is_cpu = gpu.adapter_info.device_type == wgpu::DeviceType::Cpu;
    let timer = if gpu.features().contains(wgpu::Features::TIMESTAMP_QUERY) && !is_cpu {
        crate::Timer::Timestamps {
            period_ns: gpu.queue.get_timestamp_period(),
        }
    } else {
        crate::Timer::WallPerTrial
    };
    let stamps = matches!(timer, crate::Timer::Timestamps { .. }).then(|| {
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("your kernel's timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timestamps"),
            size: 16,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let read = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timestamps readback"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        (set, resolve, read)
    });
    let wait = |index: wgpu::SubmissionIndex| {
        device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: Some(budget),
            })
            .map(|_| ())
            .map_err(|err| match err {
                wgpu::PollError::Timeout => RaceError {
                    message: format!(
                        "your kernel took over {} ms on the {} problem",
                        budget.as_millis(),
                        case.name
                    ),
                    abandon_device: true,
                },
                other => RaceError {
                    message: other.to_string(),
                    abandon_device: true,
                },
            })
    };
    let mut times = Vec::new();
    for trial in 0..=trials {
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("your kernel, timed"),
        });
        dispatch(
            &mut encoder,
            &pipeline,
            &bound,
            stamps.as_ref().map(|(set, ..)| set),
        );
        if let Some((set, resolve, read)) = &stamps {
            encoder.resolve_query_set(set, 0..2, resolve, 0);
            encoder.copy_buffer_to_buffer(resolve, 0, read, 0, None);
        }
        let commands = encoder.finish();
        let submitted = std::time::Instant::now();
        let index = gpu.queue.submit([commands]);
        wait(index)?;
        let elapsed = submitted.elapsed().as_nanos() as f64;
        let ns = match (&stamps, timer) {
            (Some((_, _, read)), crate::Timer::Timestamps { period_ns }) => {
                let (sender, receiver) = mpsc::channel();
                read.map_async(wgpu::MapMode::Read, .., move |r| {
                    let _ = sender.send(r);
                });
                wait(gpu.queue.submit([]))?;
                receiver
                    .recv()
                    .map_err(|e| RaceError::new(e.to_string()))?
                    .map_err(|e| RaceError::new(e.to_string()))?;
                let view = read
                    .get_mapped_range(..)
                    .map_err(|e| RaceError::new(e.to_string()))?;
                let ticks: Vec<u64> = bytemuck::cast_slice::<u8, u64>(&view).to_vec();
                drop(view);
                read.unmap();
                ticks[1].saturating_sub(ticks[0]) as f64 * f64::from(period_ns)
            }
            _ => elapsed,
        };
        if trial > 0 {
            times.push(ns);
        }
    }
    let bytes = exercise.min_bytes(&case) as f64;
    let yours = crate::run::median(&times);
    let mut laps = vec![Lap {
        kernel: "yours".to_owned(),
        median_ns: yours,
        gb_per_s: bytes / yours,
        timer: timer.label(),
    }];
    let mut runner = crate::KernelRunner::new(gpu.clone());
    let problem = dlsys_core::kernels::Problem {
        rows: case.rows,
        cols: case.cols,
    };
    for kernel in exercise.ladder() {
        if runner.supports(kernel).is_err() {
            continue;
        }
        let spec = crate::RunSpec {
            kernel,
            problem,
            warmup: 1,
            trials,
            instrumented: false,
        };
        let output = runner
            .start(spec, &case.x)
            .and_then(crate::Job::wait)
            .map_err(RaceError::new)?;
        let ns = output.median_ns();
        let min_bytes = match kernel {
            Kernel::Reduce(..) => 4 * (case.x.len() + 1),
            _ => 8 * case.x.len(),
        } as f64;
        laps.push(Lap {
            kernel: kernel.id(),
            median_ns: ns,
            gb_per_s: min_bytes / ns,
            timer: output.timer.label(),
        });
    }
    laps.sort_by(|a, b| a.median_ns.total_cmp(&b.median_ns));
    Ok(Race {
        problem: case.name,
        trials,
        timer: timer.label(),
        laps,
    })
}
