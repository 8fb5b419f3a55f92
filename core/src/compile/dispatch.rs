//! Dispatch: what happens between `y = x @ w` and a GEMM kernel. A call
//! passes a front end (the shapes checked, the output allocated), an op
//! registry looked up by (op, device, element type), the choice of one
//! kernel among the candidates registered there, and the kernel itself.
//!
//! The registry is real: the CPU candidates are kernels in this module
//! (a textbook triple loop, the same loop reordered to stream rows, and
//! `matrixmultiply`'s sgemm, which the engine's matmul calls), the GPU
//! candidates the WGSL GEMM rungs (timed by the ladder in `shaders`).
//! Algorithm selection works as cuDNN's benchmark mode: the first call of
//! a shape (and layout) times every candidate that accepts it once and
//! caches the fastest; later calls of that shape look the winner up. The
//! heuristic mode picks by a rule, timing nothing ([`heuristic`]).

use std::collections::{BTreeMap, HashMap};

use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;

use crate::autograd::tensor::Real as _;
use crate::kernels::GemmKind;

/// Where a kernel runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Device {
    Cpu,
    Gpu,
}

/// The registry's key: which op, on which device, of which element type
/// (only f32 matmuls are registered; the key says what else would be).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct OpKey {
    pub op: &'static str,
    pub device: Device,
    pub dtype: &'static str,
}

impl OpKey {
    pub const fn matmul(device: Device) -> Self {
        Self {
            op: "matmul",
            device,
            dtype: "f32",
        }
    }
}

/// The CPU kernels registered for matmul.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum CpuGemm {
    /// `c[i][j] = Σ a[i][p]·b[p][j]`, one dot product at a time: `b` read down a column.
    Naive,
    /// The loops reordered (i, p, j): a row of `b` scaled into a row of `c`, both read in order.
    Reordered,
    /// `matrixmultiply::sgemm`, packed and blocked for the cache: the engine's matmul.
    Sgemm,
}

/// A kernel registered for matmul.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Candidate {
    Cpu(CpuGemm),
    Gpu(GemmKind),
}

impl Candidate {
    pub fn device(self) -> Device {
        match self {
            Self::Cpu(_) => Device::Cpu,
            Self::Gpu(_) => Device::Gpu,
        }
    }

    /// Its name in tables: `cpu/sgemm`, `gpu/tiled-16`.
    pub fn id(self) -> String {
        match self {
            Self::Cpu(CpuGemm::Naive) => "cpu/naive".to_owned(),
            Self::Cpu(CpuGemm::Reordered) => "cpu/reordered".to_owned(),
            Self::Cpu(CpuGemm::Sgemm) => "cpu/sgemm".to_owned(),
            Self::Gpu(kind) => format!("gpu/{}", kind.id()),
        }
    }

    /// Whether it takes `call`: the WGSL rungs read A and B untransposed,
    /// so a transposed operand (as backward's matmuls have) is refused.
    pub fn accepts(self, call: &Call) -> bool {
        match self {
            Self::Cpu(_) => true,
            Self::Gpu(_) => !call.a_t && !call.b_t,
        }
    }
}

/// The op registry: candidates under each key, in the order registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registry {
    table: HashMap<OpKey, Vec<Candidate>>,
}

impl Registry {
    /// The three CPU kernels, and `gpu`'s rungs when there is a GPU to run them.
    pub fn new(gpu: &[GemmKind]) -> Self {
        let mut table = HashMap::new();
        let cpu = [CpuGemm::Naive, CpuGemm::Reordered, CpuGemm::Sgemm];
        table.insert(OpKey::matmul(Device::Cpu), cpu.map(Candidate::Cpu).to_vec());
        if !gpu.is_empty() {
            table.insert(
                OpKey::matmul(Device::Gpu),
                gpu.iter().map(|k| Candidate::Gpu(*k)).collect(),
            );
        }
        Self { table }
    }

    /// What is registered under `key` (nothing for a key never registered).
    pub fn lookup(&self, key: OpKey) -> &[Candidate] {
        self.table.get(&key).map_or(&[], Vec::as_slice)
    }

    /// Every matmul candidate, CPU first.
    pub fn matmul(&self) -> Vec<Candidate> {
        [Device::Cpu, Device::Gpu]
            .iter()
            .flat_map(|d| self.lookup(OpKey::matmul(*d)).iter().copied())
            .collect()
    }
}

/// One matmul call as the selection cache keys it: `m × k` by `k × n`,
/// with which operand is read transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Call {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a_t: bool,
    pub b_t: bool,
}

impl Call {
    pub const fn new(m: usize, n: usize, k: usize) -> Self {
        Self {
            m,
            n,
            k,
            a_t: false,
            b_t: false,
        }
    }

    pub fn flops(&self) -> f64 {
        2.0 * (self.m * self.n * self.k) as f64
    }

    /// `NN`, `TN`, `NT`: which operand is read transposed, as BLAS says it.
    pub fn layout(&self) -> &'static str {
        match (self.a_t, self.b_t) {
            (false, false) => "NN",
            (true, false) => "TN",
            (false, true) => "NT",
            (true, true) => "TT",
        }
    }

    /// The front end's work: `a` and `b` of these shapes checked against
    /// each other (the inner dimensions agree) into a call, or `None`.
    pub fn of(a: [usize; 2], a_t: bool, b: [usize; 2], b_t: bool) -> Option<Self> {
        let (m, k) = if a_t { (a[1], a[0]) } else { (a[0], a[1]) };
        let (k2, n) = if b_t { (b[1], b[0]) } else { (b[0], b[1]) };
        (k == k2).then_some(Self { m, n, k, a_t, b_t })
    }

    /// Whether the candidate would take too long to time (the slow CPU
    /// loops past [`MAX_SLOW_FLOPS`]).
    pub fn too_slow_for(self, candidate: Candidate) -> bool {
        matches!(
            candidate,
            Candidate::Cpu(CpuGemm::Naive | CpuGemm::Reordered)
        ) && self.flops() > MAX_SLOW_FLOPS
    }

    /// The strides of `a` and `b`, row-major as stored.
    fn strides(&self) -> ((usize, usize), (usize, usize)) {
        let a = if self.a_t { (1, self.m) } else { (self.k, 1) };
        let b = if self.b_t { (1, self.k) } else { (self.n, 1) };
        (a, b)
    }
}

/// `m×k·k×n`, as the tables write a call.
impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}×{}·{}×{}", self.m, self.k, self.k, self.n)
    }
}

/// Past this many flops the textbook loops are not timed: they run at a
/// few hundred MFLOP/s, so a second or more a call.
pub const MAX_SLOW_FLOPS: f64 = (1u64 << 30) as f64;

/// `c = a·b` by `kernel`, `a` and `b` stored as `call` says.
pub fn cpu_gemm(kernel: CpuGemm, call: &Call, a: &[f32], b: &[f32], c: &mut [f32]) {
    let Call { m, n, k, .. } = *call;
    let ((ra, ca), (rb, cb)) = call.strides();
    match kernel {
        CpuGemm::Naive => {
            for i in 0..m {
                for j in 0..n {
                    let mut sum = 0.0f32;
                    for p in 0..k {
                        sum += a[i * ra + p * ca] * b[p * rb + j * cb];
                    }
                    c[i * n + j] = sum;
                }
            }
        }
        CpuGemm::Reordered => {
            c[..m * n].fill(0.0);
            for i in 0..m {
                let row = &mut c[i * n..(i + 1) * n];
                for p in 0..k {
                    let x = a[i * ra + p * ca];
                    for (j, out) in row.iter_mut().enumerate() {
                        *out += x * b[p * rb + j * cb];
                    }
                }
            }
        }
        CpuGemm::Sgemm => f32::gemm_strided(m, k, n, a, (ra, ca), b, (rb, cb), 0.0, c),
    }
}

/// Seeded operands for `call`: `a` then `b`, values in [−1, 1).
pub fn operands(call: &Call, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut values = |n: usize| (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    (values(call.m * call.k), values(call.k * call.n))
}

/// Seconds a timed block of calls takes at least, and the most calls in one.
const BLOCK: f64 = 0.002;
const MAX_REPS: usize = 10_000;

/// Median seconds of `f`, in `rounds` blocks of enough calls to take
/// [`BLOCK`]: the block is sized by doubling from one call until it takes
/// that long (so a coarse clock that reads one call as 0 s does not size
/// it), at most [`MAX_REPS`] calls.
pub fn time_block(rounds: usize, mut f: impl FnMut()) -> f64 {
    let mut block = |reps: usize| {
        let start = web_time::Instant::now();
        for _ in 0..reps {
            f();
        }
        start.elapsed().as_secs_f64()
    };
    let mut reps = 1;
    while reps < MAX_REPS && block(reps) < BLOCK {
        reps = (reps * 2).min(MAX_REPS);
    }
    let times: Vec<f64> = (0..rounds.max(1))
        .map(|_| block(reps) / reps as f64)
        .collect();
    super::overhead::median(times)
}

/// Blocks timed per CPU kernel: natively the median of 3; on the web,
/// where the work runs between frames, one.
const ROUNDS: usize = if cfg!(target_arch = "wasm32") { 1 } else { 3 };

/// Seconds `kernel` takes on `call` (the median of [`ROUNDS`] blocks).
pub fn time_cpu(kernel: CpuGemm, call: &Call) -> f64 {
    let (a, b) = operands(call, 5);
    let mut c = vec![0.0; call.m * call.n];
    time_block(ROUNDS, || {
        cpu_gemm(kernel, call, std::hint::black_box(&a), &b, &mut c);
        std::hint::black_box(&c);
    })
}

/// How a kernel is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Mode {
    /// Every candidate timed once per shape, the fastest cached (cuDNN's benchmark mode).
    Bench,
    /// A rule, nothing timed ([`heuristic`]).
    Heuristic,
}

impl Mode {
    pub const ALL: [Self; 2] = [Self::Bench, Self::Heuristic];

    pub fn key(self) -> &'static str {
        match self {
            Self::Bench => "bench",
            Self::Heuristic => "heuristic",
        }
    }
}

/// Below this many flops (2²⁴) the heuristic keeps a matmul on the CPU:
/// a GPU launch, its synchronisation and the copies cost tens of
/// microseconds to milliseconds, what sgemm spends on millions of flops.
pub const GPU_MIN_FLOPS: f64 = (1u64 << 24) as f64;

/// The heuristic's rule: the last GPU rung registered (the most
/// advanced) for a call it accepts of at least [`GPU_MIN_FLOPS`];
/// otherwise sgemm on the CPU.
pub fn heuristic(candidates: &[Candidate], call: &Call) -> Candidate {
    candidates
        .iter()
        .rev()
        .find(|c| c.device() == Device::Gpu && c.accepts(call))
        .filter(|_| call.flops() >= GPU_MIN_FLOPS)
        .copied()
        .unwrap_or(Candidate::Cpu(CpuGemm::Sgemm))
}

/// What one candidate measured for a call.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Timing {
    Seconds(f64),
    /// It does not take the call's layout.
    Refused,
    /// Not timed: a textbook loop on a call past [`MAX_SLOW_FLOPS`].
    TooSlow,
    /// It could not run the call (its runner said why).
    Failed,
    /// The heuristic times nothing.
    NotTimed,
}

/// One entry of the selection cache.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Selection {
    pub mode: Mode,
    pub winner: Candidate,
    /// Every candidate, as tried (bench) or not (heuristic).
    pub timings: Vec<(Candidate, Timing)>,
}

impl Selection {
    pub fn winner_seconds(&self) -> Option<f64> {
        self.timings.iter().find_map(|(c, t)| match t {
            Timing::Seconds(s) if *c == self.winner => Some(*s),
            _ => None,
        })
    }
}

/// The selection cache: a winner per call, with how many calls it answered.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Selector {
    #[serde(skip)]
    cache: BTreeMap<Call, Selection>,
    pub hits: usize,
    pub misses: usize,
}

impl Selector {
    /// The kernel for `call`: from the cache, or chosen now by `mode`
    /// among `candidates`, `time` measuring a candidate (seconds, or
    /// `None` when it could not run). `true` with it when it was cached.
    pub fn select(
        &mut self,
        mode: Mode,
        candidates: &[Candidate],
        call: Call,
        mut time: impl FnMut(Candidate, &Call) -> Option<f64>,
    ) -> (&Selection, bool) {
        let hit = self.cache.contains_key(&call);
        if hit {
            self.hits += 1;
        } else {
            self.misses += 1;
            let selection = match mode {
                Mode::Heuristic => Selection {
                    mode,
                    winner: heuristic(candidates, &call),
                    timings: candidates.iter().map(|c| (*c, Timing::NotTimed)).collect(),
                },
                Mode::Bench => {
                    let timings: Vec<(Candidate, Timing)> = candidates
                        .iter()
                        .map(|c| {
                            let t = if !c.accepts(&call) {
                                Timing::Refused
                            } else if call.too_slow_for(*c) {
                                Timing::TooSlow
                            } else {
                                time(*c, &call).map_or(Timing::Failed, Timing::Seconds)
                            };
                            (*c, t)
                        })
                        .collect();
                    let fastest = timings
                        .iter()
                        .filter_map(|(c, t)| match t {
                            Timing::Seconds(s) => Some((*c, *s)),
                            _ => None,
                        })
                        .min_by(|a, b| a.1.total_cmp(&b.1));
                    Selection {
                        mode,
                        winner: fastest.map_or(Candidate::Cpu(CpuGemm::Sgemm), |(c, _)| c),
                        timings,
                    }
                }
            };
            self.cache.insert(call, selection);
        }
        (&self.cache[&call], hit)
    }

    /// The cached winner for `call`, if any (what a dispatch looks up).
    pub fn cached(&self, call: &Call) -> Option<&Selection> {
        self.cache.get(call)
    }

    /// Every entry, by call.
    pub fn entries(&self) -> impl Iterator<Item = (&Call, &Selection)> {
        self.cache.iter()
    }
}

/// One matmul call's time through each layer of the dispatch chain.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Chain {
    /// The shapes checked and the output allocated.
    pub front_end: f64,
    /// The registry looked up by (op, device, element type).
    pub lookup: f64,
    /// The selection cache's winner looked up.
    pub choice: f64,
    /// The kernel: its time when it was selected.
    pub kernel: f64,
}

impl Chain {
    /// The four layers, with their keys in the lesson's catalog.
    pub fn layers(&self) -> [(&'static str, f64); 4] {
        [
            ("front_end", self.front_end),
            ("lookup", self.lookup),
            ("choice", self.choice),
            ("kernel", self.kernel),
        ]
    }

    pub fn total(&self) -> f64 {
        self.layers().iter().map(|(_, s)| s).sum()
    }
}

/// The dispatch chain of `call` once `selector` holds its winner: the
/// first three layers timed here (medians of blocks of repeats), the
/// kernel's time from its selection, or by `time` when the heuristic
/// chose it untimed (`None` without a selection or a time).
pub fn chain(
    registry: &Registry,
    selector: &Selector,
    call: &Call,
    mut time: impl FnMut(Candidate, &Call) -> Option<f64>,
) -> Option<Chain> {
    let selection = selector.cached(call)?;
    let kernel = selection
        .winner_seconds()
        .or_else(|| time(selection.winner, call))?;
    let key = OpKey::matmul(selection.winner.device());
    let (a, b) = ([call.m, call.k], [call.k, call.n]);
    let (a, b) = (
        if call.a_t { [a[1], a[0]] } else { a },
        if call.b_t { [b[1], b[0]] } else { b },
    );
    let front_end = time_block(5, || {
        let c = Call::of(std::hint::black_box(a), call.a_t, b, call.b_t);
        let out = vec![0.0f32; c.map_or(0, |c| c.m * c.n)];
        std::hint::black_box(out);
    });
    let lookup = time_block(5, || {
        std::hint::black_box(registry.lookup(std::hint::black_box(key)).len());
    });
    let choice = time_block(5, || {
        std::hint::black_box(
            selector
                .cached(std::hint::black_box(call))
                .map(|s| s.winner),
        );
    });
    Some(Chain {
        front_end,
        lookup,
        choice,
        kernel,
    })
}

/// The matmuls of a captured step, in the order it runs them, its nodes
/// of `node_shapes`.
pub fn calls(ir: &super::capture::Ir, node_shapes: &[Vec<usize>]) -> Vec<Call> {
    let dims = |i: usize| super::capture::rows_cols(&node_shapes[i]);
    ir.nodes
        .iter()
        .filter_map(|node| match *node {
            super::capture::Kernel::MatMul { a, b, a_t, b_t } => {
                let (a, b) = (dims(a), dims(b));
                Call::of([a.0, a.1], a_t, [b.0, b.1], b_t)
            }
            _ => None,
        })
        .collect()
}

/// Square sizes the crossover sweep times, CPU sgemm against the GPU
/// (to 256 on the web, where the CPU's side runs between frames).
#[cfg(not(target_arch = "wasm32"))]
pub const CROSSOVER: [usize; 6] = [16, 32, 64, 128, 256, 512];
#[cfg(target_arch = "wasm32")]
pub const CROSSOVER: [usize; 5] = [16, 32, 64, 128, 256];

/// Whether the GPU won a size: it ran, in less time than the CPU.
pub fn gpu_wins(cpu: f64, gpu: Option<f64>) -> bool {
    gpu.is_some_and(|g| g < cpu)
}

/// The smallest square n×n·n×n the heuristic sends to the GPU
/// ([`GPU_MIN_FLOPS`] = 2n³).
pub fn smallest_gpu_square() -> usize {
    (GPU_MIN_FLOPS / 2.0).cbrt().ceil() as usize
}

/// Where the GPU starts winning, from a sweep's (size, cpu seconds, gpu
/// seconds) rows in increasing size: the smallest size from which the GPU
/// won at every size swept (a lone early win is noise, not a crossover).
pub fn crossover(rows: &[(usize, f64, Option<f64>)]) -> Option<usize> {
    let wins = |r: &(usize, f64, Option<f64>)| gpu_wins(r.1, r.2);
    let from = rows.iter().rposition(|r| !wins(r)).map_or(0, |i| i + 1);
    rows.get(from).map(|r| r.0)
}
