//! `dlsys-lab bench kernels`: the GPU lesson's kernel ladder on the default
//! adapter, through the same `Ladder` the lesson polls — same order, inputs,
//! seeds, warm-up and references.

use dlsys_core::names::Named as _;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::Subcommand;
use dlsys_core::kernels::{
    AccessKind, Block, Data, Family, FusionKind, GemmKind, Kernel, Problem, ReduceKind, ReduceOp,
    SoftmaxKind, Tile,
};
use dlsys_shaders::ladder::{LadderSettings, MAX_ELEMENTS, MAX_TRIALS};
use dlsys_shaders::report::Row;
use dlsys_shaders::{Ladder, Outcome, Summary};

use super::CliError;
use super::choice::{choice, list};
use super::kernel::{REDUCE_OPS, kernel_runner};
use super::lang::{pad, pad_left};
use super::output::{Report, emit};
use super::{t, tf};

#[derive(Clone, Debug, Subcommand)]
pub enum BenchWhat {
    /// A family of kernels (default: every softmax and reduction variant) and
    /// the copy kernel on the default adapter: time, bytes moved, GB/s
    /// against copy, GFLOP/s, error against the reference.
    #[command(after_help = variants_help())]
    Kernels(KernelsArgs),
}

/// Which kernels `bench kernels` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// Copy, softmax and reductions: the memory-bound ladder.
    Memory,
    /// The GEMM ladder with the FMA compute roof.
    Gemm,
    Fusion,
    Access,
    All,
}

impl Which {
    pub const ALL: [Self; 5] = [
        Self::Memory,
        Self::Gemm,
        Self::Fusion,
        Self::Access,
        Self::All,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Gemm => "gemm",
            Self::Fusion => "fusion",
            Self::Access => "access",
            Self::All => "all",
        }
    }

    fn families(self) -> Vec<Family> {
        match self {
            Self::Memory => vec![Family::Softmax, Family::Reduce],
            Self::Gemm => vec![Family::Compute, Family::Gemm],
            Self::Fusion => vec![Family::Fusion],
            Self::Access => vec![Family::Access],
            Self::All => Family::ALL.to_vec(),
        }
    }
}

#[derive(Clone, Debug, clap::Args)]
pub struct KernelsArgs {
    /// Which kernels: the copy kernel always runs first (the bandwidth ceiling).
    #[arg(long, default_value = Which::Memory.id(), value_parser = choice(&Which::ALL, |w| w.id()))]
    pub family: Which,
    #[arg(long, default_value_t = 4096)]
    pub rows: u32,
    #[arg(long, default_value_t = 1024)]
    pub cols: u32,
    /// Timed trials per kernel (after the ladder's warm-up).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_TRIALS)))]
    pub trials: u32,
    /// The input data (as the lesson's Data menu).
    #[arg(long, default_value = Data::Random.id(), value_parser = choice(&Data::ALL, |d| d.id()))]
    pub data: Data,
    /// The GEMM's M (rows of A and C).
    #[arg(long, default_value_t = 1024)]
    pub m: u32,
    /// The GEMM's N (columns of B and C).
    #[arg(long, default_value_t = 1024)]
    pub n: u32,
    /// The GEMM's K (columns of A, rows of B).
    #[arg(long, default_value_t = 1024)]
    pub k: u32,
    /// The tiled GEMM's tile edge (repeatable; default: every size).
    #[arg(long = "tile", value_name = "EDGE", value_parser = choice(&Tile::ALL, |t| t.id()))]
    pub tiles: Vec<Tile>,
    /// The register-blocked GEMMs' block (repeatable; default: every size).
    #[arg(long = "block", value_name = "BLOCK", value_parser = choice(&Block::ALL, |b| b.id()))]
    pub blocks: Vec<Block>,
    /// Reduction ops to run (repeatable; default: both).
    #[arg(long = "op", value_name = "OP", value_parser = choice(&REDUCE_OPS, |op| op.id()))]
    pub ops: Vec<ReduceOp>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the input (f32, little-endian) here, for comparing with
    /// another implementation on the same data: the GEMM's A, zeros up to a
    /// multiple of 4 values, then B, when GEMMs run; else the softmax input.
    #[arg(long, value_name = "FILE")]
    pub dump_input: Option<std::path::PathBuf>,
}

impl KernelsArgs {
    /// The ladder these arguments ask for: every variant, the chosen ops.
    pub fn ladder(&self) -> LadderSettings {
        let mut settings = LadderSettings::families(
            &self.family.families(),
            Problem::new(self.rows, self.cols),
            self.data,
            self.trials,
        );
        settings.gemm_shape = Problem::gemm(self.m, self.n, self.k);
        if !settings.gemm.is_empty() {
            settings.gemm = GemmKind::EVERY
                .into_iter()
                .filter(|k| k.sized_in(&self.tiles, &self.blocks))
                .collect();
        }
        if !self.ops.is_empty() {
            settings.ops.clone_from(&self.ops);
        }
        settings
    }
}

/// What `bench kernels --help` says it runs: the real lists.
fn variants_help() -> String {
    let access: Vec<String> = AccessKind::all().into_iter().map(AccessKind::id).collect();
    format!(
        "Softmax variants: {}.\nReduction variants: {} (each with the ops {}).\nGEMM rungs (--family gemm, with the fma roof): {}.\nFusion (--family fusion): {}.\nAccess patterns (--family access): {}.",
        list(&SoftmaxKind::ALL, |k| k.id()),
        list(&ReduceKind::ALL, |k| k.id()),
        list(&REDUCE_OPS, |op| op.id()),
        list(&GemmKind::EVERY, |k| k.id()),
        list(&FusionKind::ALL, |k| k.id()),
        access.join(", "),
    )
}

#[derive(serde::Serialize)]
struct BenchReport {
    adapter: String,
    backend: String,
    timer: String,
    #[serde(skip)]
    timer_kind: dlsys_shaders::TimerKind,
    timestamp_period_ns: f32,
    family: &'static str,
    rows: u32,
    cols: u32,
    gemm: Option<(u32, u32, u32)>,
    trials: u32,
    warmup: u32,
    results: Vec<Row>,
    skipped: Vec<String>,
    summary: Summary,
    failed: usize,
}

pub fn kernels(args: &KernelsArgs) -> Result<ExitCode, CliError> {
    let settings = args.ladder();
    // Sizes are checked before a GPU is asked for, then against its buffers,
    // before anything is allocated.
    settings.check(MAX_ELEMENTS).map_err(|e| super::say(&e))?;
    let mut runner = kernel_runner()?;
    let ladder = Ladder::new(&settings, runner.max_elements()).map_err(|e| super::say(&e))?;
    if let Some(path) = &args.dump_input {
        // The GEMM's A, zeros up to a whole vec4, then B, when GEMMs run;
        // otherwise the softmax input.
        let inputs = ladder.inputs();
        let values = if settings.gemm.is_empty() {
            &inputs.softmax
        } else {
            &inputs.gemm
        };
        std::fs::write(path, bytemuck::cast_slice::<f32, u8>(values)).map_err(|err| {
            tf(
                "bench.cannot_write",
                &[("path", &path.display()), ("error", &err)],
            )
        })?;
    }
    let timer = runner.timer().label();
    let outcomes = ladder.run_blocking(&mut runner);
    let summary = Summary::of(&outcomes);
    let mut results = Vec::new();
    let mut skipped = Vec::new();
    for outcome in outcomes {
        match outcome {
            Outcome::Ran(row) => results.push(row),
            Outcome::Skipped { kernel, why } => skipped.push(format!("{}: {why}", kernel.id())),
            Outcome::Cpu(_) | Outcome::Program(_) => {}
        }
    }
    let failed = results
        .iter()
        .filter(|r| !r.ok && !r.kernel.expected_to_overflow())
        .count();
    let info = runner.gpu().info();
    let report = BenchReport {
        adapter: info.adapter,
        backend: info.backend,
        timer,
        timer_kind: runner.timer(),
        timestamp_period_ns: info.timestamp_period_ns,
        family: args.family.id(),
        rows: args.rows,
        cols: args.cols,
        gemm: settings
            .kernels()
            .iter()
            .any(|k| matches!(k, Kernel::Gemm(_)))
            .then_some((args.m, args.n, args.k)),
        trials: args.trials,
        warmup: dlsys_shaders::ladder::WARMUP,
        results,
        skipped,
        summary,
        failed,
    };
    emit(&report, args.json)
}

impl Report for BenchReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let (rows, cols) = (self.rows, self.cols);
        let elements = u64::from(rows) * u64::from(cols);
        let adapter = tf(
            "bench.adapter",
            &[
                ("adapter", &self.adapter),
                ("backend", &self.backend),
                ("timer", &self.timer_kind.name(super::lang())),
            ],
        );
        writeln!(out, "{adapter}")?;
        let problem = tf(
            "bench.problem",
            &[
                ("rows", &rows),
                ("cols", &cols),
                ("elements", &elements),
                ("trials", &self.trials),
                ("warmup", &self.warmup),
            ],
        );
        writeln!(out, "{problem}")?;
        if let Some((m, n, k)) = self.gemm {
            writeln!(
                out,
                "{}",
                tf("bench.gemm_problem", &[("m", &m), ("n", &n), ("k", &k)])
            )?;
        }
        writeln!(out)?;
        let right = |key, width| pad_left(t(key), width);
        writeln!(
            out,
            "{} {} {} {} {:>7} {:>8} {} {:>9} {} {}",
            pad(t("bench.kernel"), 28),
            right("bench.median", 9),
            right("bench.min", 9),
            right("bench.max", 9),
            "MB",
            "GB/s",
            right("bench.copy", 7),
            "GFLOP/s",
            right("bench.error", 10),
            t("bench.ok")
        )?;
        for r in &self.results {
            writeln!(
                out,
                "{:<28} {:>9.3} {:>9.3} {:>9.3} {:>7.1} {:>8.2} {:>7} {:>9} {:>10.2e} {}",
                r.kernel.id(),
                r.median_ms,
                r.min_ms,
                r.max_ms,
                r.bytes as f64 / 1e6,
                r.gb_per_s,
                r.fraction_of_copy
                    .map_or("—".to_owned(), |f| format!("{f:.2}")),
                r.gflops().map_or("—".to_owned(), |g| format!("{g:.2}")),
                r.max_rel_error,
                t(if r.ok {
                    "bench.yes"
                } else if r.kernel.expected_to_overflow() {
                    "bench.overflows"
                } else {
                    "bench.no"
                })
            )?;
        }
        for s in &self.skipped {
            writeln!(out, "{}", tf("bench.skipped", &[("what", s)]))?;
        }
        writeln!(out)?;
        let s = &self.summary;
        if let Some(best) = &s.best_softmax {
            let fraction = format!("{:.2}", s.best_softmax_fraction_of_copy.unwrap_or(f64::NAN));
            let line = tf(
                "bench.best_softmax",
                &[("best", best), ("fraction", &fraction)],
            );
            writeln!(out, "{line}")?;
            if let Some(speedup) = s.best_vs_three_pass_speedup {
                let speedup = format!("{speedup:.2}");
                writeln!(
                    out,
                    "{}",
                    tf("bench.vs_three_pass", &[("speedup", &speedup)])
                )?;
            }
        }
        if let Some(best) = &s.best_sum {
            let fraction = format!("{:.2}", s.best_sum_fraction_of_copy.unwrap_or(f64::NAN));
            let line = tf("bench.best_sum", &[("best", best), ("fraction", &fraction)]);
            writeln!(out, "{line}")?;
        }
        let two = |v: Option<f64>| format!("{:.2}", v.unwrap_or(f64::NAN));
        if let Some(roof) = s.compute_roof_gflops {
            writeln!(out, "{}", tf("bench.roof", &[("gflops", &two(Some(roof)))]))?;
        }
        if let Some(best) = &s.best_gemm {
            let line = tf(
                "bench.best_gemm",
                &[
                    ("best", best),
                    ("gflops", &two(s.best_gemm_gflops)),
                    ("ratio", &two(s.best_gemm_vs_naive)),
                ],
            );
            writeln!(out, "{line}")?;
        }
        for (key, time, bytes) in [
            ("bench.gelu", s.gelu_fused_speedup, s.gelu_bytes_ratio),
            (
                "bench.layernorm",
                s.layernorm_fused_speedup,
                s.layernorm_bytes_ratio,
            ),
        ] {
            if time.is_some() {
                writeln!(
                    out,
                    "{}",
                    tf(key, &[("speedup", &two(time)), ("bytes", &two(bytes))])
                )?;
            }
        }
        if s.nhwc_vs_nchw.is_some() {
            writeln!(
                out,
                "{}",
                tf("bench.layout", &[("ratio", &two(s.nhwc_vs_nchw))])
            )?;
        }
        Ok(())
    }

    fn ok(&self) -> bool {
        self.failed == 0
    }
}
