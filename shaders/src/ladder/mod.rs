//! The kernel ladder: one definition of what a benchmark of the kernels runs
//! — the order (the copy kernel first, the bandwidth ceiling), the inputs and
//! their seeds, the warm-up, the trials, the references and the CPU fallback
//! — used by the GPU lesson (polled each frame), `dlsys-lab bench kernels`
//! (waited on) and the write-a-kernel race. The app and the command line
//! therefore measure the same thing by construction.

use std::sync::Arc;

use dlsys_core::kernels::{
    self, AccessKind, Data, DeviceLimits, Family, FusionKind, GemmKind, Kernel, Problem,
    ReduceKind, ReduceOp, SoftmaxKind, plan,
};
use serde::Serialize;

use crate::error::as_text;
use crate::report::{Reference, Row, kernel_id, row};
use crate::run::program::{Program, ProgramRow};
use crate::{Job, KernelError, KernelRunner, RunSpec};

/// One rung of a ladder: a built-in kernel, planned by the core, or a
/// program given as data (its WGSL, typed named buffers and dispatches).
#[derive(Clone, Debug)]
pub enum Rung {
    Kernel(Kernel),
    Program(Arc<Program>),
}

impl Rung {
    /// Its id, as results show it.
    pub fn id(&self) -> String {
        match self {
            Self::Kernel(k) => k.id(),
            Self::Program(p) => p.id.clone(),
        }
    }
}

dlsys_core::catalog_error! {
    /// Why a ladder refuses its settings.
    pub enum LadderError {
        Empty = "ladder.empty",
        TooLarge { rows: u32, cols: u32, elements: u64, max: u64 } = "ladder.too_large",
        GemmTooLarge { m: u32, n: u32, k: u32, elements: u64, max: u64 } = "ladder.gemm_too_large",
    }
}

/// Untimed runs before the timed trials, for every kernel.
pub const WARMUP: u32 = 2;
/// The most trials a ladder times per kernel.
pub const MAX_TRIALS: u32 = 50;
/// Seeds of the generated inputs.
pub const SOFTMAX_SEED: u64 = 1;
pub const REDUCE_SEED: u64 = 2;
pub const COPY_SEED: u64 = 3;
pub const GEMM_SEED: u64 = 4;
pub const ACCESS_SEED: u64 = 5;
/// The GEMM shape a ladder runs unless told otherwise.
pub const GEMM_SHAPE: Problem = Problem::gemm(512, 512, 512);
/// The largest problem a ladder accepts anywhere: what one storage buffer
/// can index. A device's own buffers may hold less
/// ([`KernelRunner::max_elements`]).
pub const MAX_ELEMENTS: u64 = (u32::MAX / 4) as u64;
/// The largest problem the CPU path (no compute GPU) takes: 256 MiB of f32.
pub const CPU_MAX_ELEMENTS: u64 = 1 << 26;

/// What to race.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LadderSettings {
    /// Softmax, fusion and transposes run on `rows × cols`; reductions, the
    /// copy, the strided reads, the channel sums and the FMA roof on as many
    /// values.
    pub problem: Problem,
    pub data: Data,
    pub trials: u32,
    pub softmax: Vec<SoftmaxKind>,
    pub reduce: Vec<ReduceKind>,
    /// Each reduction variant runs once per op.
    pub ops: Vec<ReduceOp>,
    pub gemm: Vec<GemmKind>,
    /// The GEMM's M × N by K ([`Problem::gemm`]).
    pub gemm_shape: Problem,
    pub fusion: Vec<FusionKind>,
    pub access: Vec<AccessKind>,
    /// The FMA-chain kernel: the compute roof.
    pub fma: bool,
}

impl LadderSettings {
    /// Every softmax and reduction variant, both reduction ops (the GPU
    /// lesson's memory-bound ladder).
    pub fn everything(problem: Problem, data: Data, trials: u32) -> Self {
        Self::families(&[Family::Softmax, Family::Reduce], problem, data, trials)
    }

    /// Every variant of the families named (the copy always runs first).
    pub fn families(families: &[Family], problem: Problem, data: Data, trials: u32) -> Self {
        let has = |f| families.contains(&f);
        Self {
            problem,
            data,
            trials,
            softmax: if has(Family::Softmax) {
                SoftmaxKind::ALL.to_vec()
            } else {
                Vec::new()
            },
            reduce: if has(Family::Reduce) {
                ReduceKind::ALL.to_vec()
            } else {
                Vec::new()
            },
            ops: vec![ReduceOp::Sum, ReduceOp::Max],
            gemm: if has(Family::Gemm) {
                GemmKind::ALL.to_vec()
            } else {
                Vec::new()
            },
            gemm_shape: GEMM_SHAPE,
            fusion: if has(Family::Fusion) {
                FusionKind::ALL.to_vec()
            } else {
                Vec::new()
            },
            access: if has(Family::Access) {
                AccessKind::all()
            } else {
                Vec::new()
            },
            fma: has(Family::Compute),
        }
    }

    /// Refuses an empty problem, or one larger than `max_elements` values (or
    /// than [`MAX_ELEMENTS`]), without allocating anything.
    pub fn check(&self, max_elements: u64) -> Result<(), LadderError> {
        let p = self.problem;
        if p.rows == 0 || p.cols == 0 {
            return Err(LadderError::Empty);
        }
        let max = max_elements.min(MAX_ELEMENTS);
        if p.elements() > max {
            return Err(LadderError::TooLarge {
                rows: p.rows,
                cols: p.cols,
                elements: p.elements(),
                max,
            });
        }
        if !self.gemm.is_empty() {
            let g = self.gemm_shape;
            if g.rows == 0 || g.cols == 0 || g.k == 0 {
                return Err(LadderError::Empty);
            }
            let kernel = Kernel::Gemm(GemmKind::Naive);
            let elements = kernel.input_len(g).max(kernel.output_len(g));
            if elements > max {
                return Err(LadderError::GemmTooLarge {
                    m: g.rows,
                    n: g.cols,
                    k: g.k,
                    elements,
                    max,
                });
            }
        }
        Ok(())
    }

    /// The kernels in the order they run: copy, softmax, reductions per op,
    /// the FMA roof, GEMM, fusion, access patterns.
    pub fn kernels(&self) -> Vec<Kernel> {
        let mut kernels = vec![Kernel::Copy];
        kernels.extend(
            SoftmaxKind::ALL
                .into_iter()
                .filter(|k| self.softmax.contains(k))
                .map(Kernel::Softmax),
        );
        for op in [ReduceOp::Sum, ReduceOp::Max] {
            if self.ops.contains(&op) {
                kernels.extend(
                    ReduceKind::ALL
                        .into_iter()
                        .filter(|k| self.reduce.contains(k))
                        .map(|k| Kernel::Reduce(k, op)),
                );
            }
        }
        if self.fma {
            kernels.push(Kernel::Fma);
        }
        kernels.extend(
            GemmKind::EVERY
                .into_iter()
                .filter(|k| self.gemm.contains(k))
                .map(Kernel::Gemm),
        );
        kernels.extend(
            FusionKind::ALL
                .into_iter()
                .filter(|k| self.fusion.contains(k))
                .map(Kernel::Fusion),
        );
        kernels.extend(
            AccessKind::all()
                .into_iter()
                .filter(|k| self.access.contains(k))
                .map(Kernel::Access),
        );
        kernels
    }
}

/// The inputs of one ladder run (shared, so the race can give one array to all).
#[derive(Clone, Debug)]
pub struct Inputs {
    /// Softmax, fusion and the transposes: `rows × cols` of the chosen data.
    pub softmax: Arc<Vec<f32>>,
    pub reduce: Arc<Vec<f32>>,
    pub copy: Arc<Vec<f32>>,
    /// A then B, as [`kernels::gemm_inputs`] lays them out.
    pub gemm: Arc<Vec<f32>>,
    pub strided: Arc<Vec<f32>>,
    /// Non-negative, like the reductions' (sums stay well conditioned).
    pub channel: Arc<Vec<f32>>,
}

impl Inputs {
    /// The seeded inputs for `problem` filled with `data`, and for a GEMM of
    /// `gemm_shape` (none when `None`).
    pub fn generate(problem: Problem, data: Data, gemm_shape: Option<Problem>) -> Self {
        let n = problem.elements() as usize;
        let len = |k: Kernel| k.problem_for(problem).elements() as usize;
        let copy = len(Kernel::Copy);
        let strided = len(Kernel::Access(AccessKind::Strided(1)));
        let channel = len(Kernel::Access(AccessKind::ChannelNchw));
        Self {
            softmax: Arc::new(data.generate(
                problem.rows as usize,
                problem.cols as usize,
                SOFTMAX_SEED,
                false,
            )),
            reduce: Arc::new(data.generate(1, n, REDUCE_SEED, true)),
            copy: Arc::new(Data::Random.generate(1, copy, COPY_SEED, false)),
            gemm: Arc::new(gemm_shape.map_or_else(Vec::new, |g| {
                kernels::gemm_inputs(g, GEMM_SEED, data == Data::Specials)
            })),
            strided: Arc::new(Data::Random.generate(1, strided, ACCESS_SEED, false)),
            channel: Arc::new(Data::Random.generate(1, channel, ACCESS_SEED, true)),
        }
    }

    /// The same values for every kernel (the race's one problem).
    pub fn shared(values: Vec<f32>) -> Self {
        let values = Arc::new(values);
        Self {
            softmax: values.clone(),
            reduce: values.clone(),
            copy: values.clone(),
            gemm: values.clone(),
            strided: values.clone(),
            channel: values,
        }
    }

    pub fn for_kernel(&self, kernel: Kernel) -> &[f32] {
        match kernel {
            Kernel::Copy => &self.copy,
            Kernel::Softmax(_) | Kernel::Fusion(_) => &self.softmax,
            Kernel::Access(AccessKind::TransposeNaive | AccessKind::TransposeTiled) => {
                &self.softmax
            }
            Kernel::Access(AccessKind::Strided(_)) => &self.strided,
            Kernel::Access(AccessKind::ChannelNchw | AccessKind::ChannelNhwc) => &self.channel,
            Kernel::Reduce(..) => &self.reduce,
            Kernel::Gemm(_) => &self.gemm,
            // The FMA roof reads nothing; its one value is never used.
            Kernel::Fma => &FMA_INPUT,
        }
    }

    /// A fingerprint of the input each kernel gets (FNV-1a over the bits),
    /// so two ladders can be shown to feed their kernels the same data.
    pub fn fingerprint(&self, kernel: Kernel) -> u64 {
        self.for_kernel(kernel)
            .iter()
            .fold(0xcbf2_9ce4_8422_2325, |h: u64, v| {
                (h ^ u64::from(v.to_bits())).wrapping_mul(0x0100_0000_01b3)
            })
    }
}

/// The CPU path's line: the reference implementation timed on the CPU, and
/// the bytes the kernel's plan would move.
#[derive(Clone, Debug, Serialize)]
pub struct CpuRow {
    #[serde(serialize_with = "kernel_id")]
    pub kernel: Kernel,
    pub problem: Problem,
    pub ms: f64,
    pub bytes: u64,
    pub passes: u32,
}

/// One line of a ladder's results.
#[derive(Clone, Debug, Serialize)]
pub enum Outcome {
    Ran(Row),
    Skipped {
        #[serde(serialize_with = "kernel_id")]
        kernel: Kernel,
        #[serde(serialize_with = "as_text")]
        why: KernelError,
    },
    Cpu(CpuRow),
    /// A program's run, or why it could not run.
    Program(#[serde(serialize_with = "program_result")] Result<ProgramRow, (String, KernelError)>),
}

fn program_result<S: serde::Serializer>(
    result: &Result<ProgramRow, (String, KernelError)>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match result {
        Ok(row) => row.serialize(s),
        Err((id, why)) => {
            use serde::ser::SerializeStruct as _;
            let mut st = s.serialize_struct("Skipped", 2)?;
            st.serialize_field("program", id)?;
            st.serialize_field("why", &why.to_string())?;
            st.end()
        }
    }
}

impl Outcome {
    /// The GPU result, if the kernel ran on the GPU.
    pub fn ran(&self) -> Option<&Row> {
        match self {
            Self::Ran(row) => Some(row),
            Self::Skipped { .. } | Self::Cpu(_) | Self::Program(_) => None,
        }
    }

    /// The program's result, if this rung was a program that ran.
    pub fn program(&self) -> Option<&ProgramRow> {
        match self {
            Self::Program(Ok(row)) => Some(row),
            _ => None,
        }
    }

    /// Its bandwidth and roofline point, for the plots (skipped: none).
    pub fn measured(&self) -> Option<crate::report::Measured> {
        use crate::report::{Measured, roofline_point};
        match self {
            Self::Ran(r) => Some(Measured {
                kernel: Some(r.kernel),
                id: r.kernel.id(),
                family: r.kernel.family(),
                gb_per_s: r.gb_per_s,
                roofline: r.roofline_point(),
                on_cpu: false,
            }),
            Self::Cpu(c) => Some(Measured {
                kernel: Some(c.kernel),
                id: c.kernel.id(),
                family: c.kernel.family(),
                gb_per_s: c.bytes as f64 / (c.ms * 1e6),
                roofline: roofline_point(c.kernel, c.problem, c.bytes, c.ms),
                on_cpu: true,
            }),
            Self::Program(Ok(row)) => Some(Measured {
                kernel: None,
                id: row.id.clone(),
                family: row.family,
                gb_per_s: row.gb_per_s,
                roofline: row.roofline_point(),
                on_cpu: false,
            }),
            Self::Skipped { .. } | Self::Program(Err(_)) => None,
        }
    }

    /// The id of what ran (a kernel's or a program's).
    pub fn id(&self) -> String {
        match self {
            Self::Program(Ok(row)) => row.id.clone(),
            Self::Program(Err((id, _))) => id.clone(),
            other => other.kernel().map(Kernel::id).unwrap_or_default(),
        }
    }

    /// The built-in kernel of this outcome (`None` for a program).
    pub fn kernel(&self) -> Option<Kernel> {
        match self {
            Self::Ran(r) => Some(r.kernel),
            Self::Skipped { kernel, .. } => Some(*kernel),
            Self::Cpu(c) => Some(c.kernel),
            Self::Program(_) => None,
        }
    }
}

static FMA_INPUT: [f32; 1] = [0.0];

/// A ladder run: polled each frame by the app, waited on by the CLI.
pub struct Ladder {
    problem: Problem,
    gemm_shape: Problem,
    trials: u32,
    rungs: Vec<Rung>,
    next: usize,
    /// The rung running (its index) and its job.
    current: Option<(usize, Job)>,
    inputs: Inputs,
    softmax_reference: Option<Reference>,
    gemm_reference: Option<Reference>,
    copy_gb_per_s: Option<f64>,
    outcomes: Vec<Outcome>,
}

impl Ladder {
    /// A ladder over `settings` for a device whose buffers hold at most
    /// `max_elements` values ([`KernelRunner::max_elements`], or
    /// [`CPU_MAX_ELEMENTS`] on the CPU path); refuses larger sizes before
    /// allocating anything.
    pub fn new(settings: &LadderSettings, max_elements: u64) -> Result<Self, LadderError> {
        settings.check(max_elements)?;
        let p = settings.problem;
        let gemm = (!settings.gemm.is_empty()).then_some(settings.gemm_shape);
        let mut ladder = Self::with_inputs(
            settings.kernels(),
            p,
            Inputs::generate(p, settings.data, gemm),
            settings.trials,
        );
        ladder.gemm_shape = settings.gemm_shape;
        Ok(ladder)
    }

    /// A ladder over given kernels and inputs (the write-a-kernel race).
    pub fn with_inputs(
        kernels: Vec<Kernel>,
        problem: Problem,
        inputs: Inputs,
        trials: u32,
    ) -> Self {
        Self {
            problem,
            gemm_shape: GEMM_SHAPE,
            trials: trials.clamp(1, MAX_TRIALS),
            rungs: kernels.into_iter().map(Rung::Kernel).collect(),
            next: 0,
            current: None,
            inputs,
            softmax_reference: None,
            gemm_reference: None,
            copy_gb_per_s: None,
            outcomes: Vec::new(),
        }
    }

    /// The same ladder with its GEMMs on `shape` (their inputs must fit it).
    pub fn with_gemm_shape(mut self, shape: Problem) -> Self {
        self.gemm_shape = shape;
        self
    }

    /// The same ladder with `programs` run after its built-in kernels.
    pub fn with_programs(mut self, programs: impl IntoIterator<Item = Program>) -> Self {
        self.rungs
            .extend(programs.into_iter().map(|p| Rung::Program(Arc::new(p))));
        self
    }

    /// What each built-in kernel will run: kernel, problem, warm-up and trials.
    pub fn specs(&self) -> Vec<RunSpec> {
        self.rungs
            .iter()
            .filter_map(|rung| match rung {
                Rung::Kernel(kernel) => Some(self.spec(*kernel)),
                Rung::Program(_) => None,
            })
            .collect()
    }

    fn spec(&self, kernel: Kernel) -> RunSpec {
        RunSpec {
            kernel,
            problem: self.problem_of(kernel),
            warmup: WARMUP,
            trials: self.trials,
            instrumented: false,
        }
    }

    /// The problem `kernel` runs in this ladder.
    pub fn problem_of(&self, kernel: Kernel) -> Problem {
        match kernel {
            Kernel::Gemm(_) => self.gemm_shape,
            _ => kernel.problem_for(self.problem),
        }
    }

    pub fn inputs(&self) -> &Inputs {
        &self.inputs
    }

    pub fn problem(&self) -> Problem {
        self.problem
    }

    /// The results so far, in ladder order.
    pub fn outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }

    pub fn into_outcomes(self) -> Vec<Outcome> {
        self.outcomes
    }

    /// (rungs finished, rungs in all, the id of the one running).
    pub fn progress(&self) -> (usize, usize, Option<String>) {
        let running = self.current.as_ref().map(|(i, _)| self.rungs[*i].id());
        (
            self.next - usize::from(running.is_some()),
            self.rungs.len(),
            running,
        )
    }

    pub fn is_done(&self) -> bool {
        self.current.is_none() && self.next >= self.rungs.len()
    }

    /// Advances; `true` once every kernel has its outcome. It never waits for
    /// the GPU, except on the CPU clock, where a poll times one trial (see
    /// [`Job::poll`]).
    pub fn poll(&mut self, runner: &mut KernelRunner) -> bool {
        if let Some((index, job)) = self.current.as_mut() {
            let Some(result) = job.poll() else {
                return false;
            };
            let index = *index;
            self.current = None;
            self.finish(index, result);
        }
        while self.current.is_none() {
            let Some(rung) = self.rungs.get(self.next).cloned() else {
                return true;
            };
            let index = self.next;
            self.next += 1;
            let started = match &rung {
                Rung::Kernel(kernel) => {
                    let spec = self.spec(*kernel);
                    runner.start(spec, self.inputs.for_kernel(spec.kernel))
                }
                Rung::Program(program) => runner.start_program(program, WARMUP, self.trials, false),
            };
            match (started, rung) {
                (Ok(job), _) => self.current = Some((index, job)),
                (Err(why), Rung::Kernel(kernel)) => {
                    self.outcomes.push(Outcome::Skipped { kernel, why });
                }
                (Err(why), Rung::Program(program)) => {
                    self.outcomes
                        .push(Outcome::Program(Err((program.id.clone(), why))));
                }
            }
        }
        false
    }

    /// Runs every kernel to the end (native: the CLI, tests, the race thread).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn run_blocking(mut self, runner: &mut KernelRunner) -> Vec<Outcome> {
        while !self.poll(runner) {
            let _ = runner
                .gpu()
                .device
                .poll(wgpu::PollType::wait_indefinitely());
        }
        self.outcomes
    }

    fn finish(&mut self, index: usize, result: Result<crate::RunOutput, KernelError>) {
        let kernel = match &self.rungs[index] {
            Rung::Kernel(kernel) => *kernel,
            Rung::Program(program) => {
                let row = result
                    .map(|out| ProgramRow::of(program, &out))
                    .map_err(|why| (program.id.clone(), why));
                self.outcomes.push(Outcome::Program(row));
                return;
            }
        };
        match result {
            Ok(out) => {
                let reference = self.reference(kernel);
                let r = row(&out, &reference, self.copy_gb_per_s);
                if kernel == Kernel::Copy {
                    self.copy_gb_per_s = Some(r.gb_per_s);
                }
                self.outcomes.push(Outcome::Ran(r));
            }
            Err(why) => self.outcomes.push(Outcome::Skipped { kernel, why }),
        }
    }

    fn reference(&mut self, kernel: Kernel) -> Reference {
        let input = self.inputs.for_kernel(kernel);
        match kernel {
            Kernel::Softmax(_) => {
                let problem = self.problem;
                self.softmax_reference
                    .get_or_insert_with(|| Reference::compute(kernel, input, problem))
                    .clone()
            }
            Kernel::Gemm(_) => {
                let problem = self.gemm_shape;
                self.gemm_reference
                    .get_or_insert_with(|| Reference::compute(kernel, input, problem))
                    .clone()
            }
            _ => Reference::compute(kernel, input, kernel.problem_for(self.problem)),
        }
    }

    /// Without a compute GPU: every built-in kernel's CPU reference, timed,
    /// with the bytes its plan would move on a typical device (programs have
    /// no CPU path of their own: their callers time their references).
    pub fn run_on_cpu(mut self) -> Vec<Outcome> {
        let device = DeviceLimits::TYPICAL;
        let time = |f: &mut dyn FnMut()| {
            let start = web_time::Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        };
        for spec in self.specs() {
            let kernel = spec.kernel;
            let (_, traffic) = match plan(kernel, spec.problem, device) {
                Ok(planned) => planned,
                Err(reason) => {
                    self.outcomes.push(Outcome::Skipped {
                        kernel,
                        why: reason.into(),
                    });
                    continue;
                }
            };
            let input = self.inputs.for_kernel(kernel);
            let ms = match kernel {
                Kernel::Copy => time(&mut || drop(std::hint::black_box(input.to_vec()))),
                Kernel::Reduce(_, op) => time(&mut || {
                    std::hint::black_box(kernels::reduce_reference(input, op));
                }),
                // Every other family: its f64 reference, as the check computes it.
                _ => time(&mut || {
                    std::hint::black_box(Reference::compute(kernel, input, spec.problem));
                }),
            };
            self.outcomes.push(Outcome::Cpu(CpuRow {
                kernel,
                problem: spec.problem,
                ms,
                bytes: traffic.bytes(),
                passes: traffic.input_passes,
            }));
        }
        self.outcomes
    }
}

#[cfg(test)]
mod tests;
