//! `dlsys-lab bench kernels`: the GPU lesson's kernel ladder on the default
//! adapter, through the same `Ladder` the lesson polls — same order, inputs,
//! seeds, warm-up and references.

use dlsys_core::names::Named as _;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::Subcommand;
use dlsys_core::compile::chain::{Chain, gelu_rung_chain, layernorm_rung_chain};
use dlsys_core::kernels::{
    AccessKind, Block, Data, Family, FusionKind, GemmKind, Kernel, Problem, ReduceKind, ReduceOp,
    SoftmaxKind, Tile,
};
use dlsys_core::quant::gemm::{GemmShape, Int8Kernel, seeded_operands};
use dlsys_shaders::codegen;
use dlsys_shaders::ladder::{LadderSettings, MAX_ELEMENTS, MAX_TRIALS};
use dlsys_shaders::report::Row;
use dlsys_shaders::{Ladder, Outcome, Summary};

use super::CliError;
use super::choice::{choice, list};
use super::kernel::{REDUCE_OPS, kernel_runner};
use super::lang::{pad, pad_left};
use super::output::{Report, emit, line};
use super::{t, tf};

#[derive(Clone, Debug, Subcommand)]
pub enum BenchWhat {
    Kernels(KernelsArgs),
    Search(super::bench_search::SearchArgs),
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
    /// The attention rungs with the FMA compute roof.
    Attention,
    All,
}

impl Which {
    pub const ALL: [Self; 6] = [
        Self::Memory,
        Self::Gemm,
        Self::Fusion,
        Self::Access,
        Self::Attention,
        Self::All,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Gemm => "gemm",
            Self::Fusion => "fusion",
            Self::Access => "access",
            Self::Attention => "attention",
            Self::All => "all",
        }
    }

    fn families(self) -> Vec<Family> {
        match self {
            Self::Memory => vec![Family::Softmax, Family::Reduce],
            Self::Gemm => vec![Family::Compute, Family::Gemm],
            Self::Fusion => vec![Family::Fusion],
            Self::Access => vec![Family::Access],
            Self::Attention => vec![Family::Attention, Family::Compute],
            Self::All => Family::ALL.to_vec(),
        }
    }
}

#[derive(Clone, Debug, clap::Args)]
pub struct KernelsArgs {
    #[arg(long, default_value = Which::Memory.id(), value_parser = choice(&Which::ALL, |w| w.id()))]
    pub family: Which,
    #[arg(long, default_value_t = 4096)]
    pub rows: u32,
    #[arg(long, default_value_t = 1024)]
    pub cols: u32,
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_TRIALS)))]
    pub trials: u32,
    #[arg(long, default_value = Data::Random.id(), value_parser = choice(&Data::ALL, |d| d.id()))]
    pub data: Data,
    #[arg(long)]
    pub m: Option<u32>,
    #[arg(long)]
    pub n: Option<u32>,
    #[arg(long)]
    pub k: Option<u32>,
    #[arg(long = "tile", value_name = "EDGE", value_parser = choice(&Tile::ALL, |t| t.id()))]
    pub tiles: Vec<Tile>,
    #[arg(long = "block", value_name = "BLOCK", value_parser = choice(&Block::ALL, |b| b.id()))]
    pub blocks: Vec<Block>,
    #[arg(long = "op", value_name = "OP", value_parser = choice(&REDUCE_OPS, |op| op.id()))]
    pub ops: Vec<ReduceOp>,
    #[arg(long)]
    pub json: bool,
    #[arg(long, value_name = "FILE")]
    pub dump_input: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub attention: super::bench_attention::AttnBenchArgs,
}

impl KernelsArgs {
    /// The GEMM's M, N and K (1024 each unless given).
    fn gemm_mnk(&self) -> (u32, u32, u32) {
        let size = |v: Option<u32>| v.unwrap_or(GEMM_SIZE);
        (size(self.m), size(self.n), size(self.k))
    }

    /// A flag given that the family asked for does not run, by name.
    fn flag_not_applying(&self) -> Option<&'static str> {
        let families = self.family.families();
        let gemm = families.contains(&Family::Gemm);
        let reduce = families.contains(&Family::Reduce);
        if !families.contains(&Family::Attention)
            && let Some(flag) = self.attention.given()
        {
            return Some(flag);
        }
        [
            ("--m", self.m.is_some() && !gemm),
            ("--n", self.n.is_some() && !gemm),
            ("--k", self.k.is_some() && !gemm),
            ("--tile", !self.tiles.is_empty() && !gemm),
            ("--block", !self.blocks.is_empty() && !gemm),
            ("--op", !self.ops.is_empty() && !reduce),
        ]
        .into_iter()
        .find(|(_, refused)| *refused)
        .map(|(flag, _)| flag)
    }

    /// The ladder these arguments ask for: every variant, the chosen ops.
    pub fn ladder(&self) -> LadderSettings {
        let mut settings = LadderSettings::families(
            &self.family.families(),
            Problem::new(self.rows, self.cols),
            self.data,
            self.trials,
        );
        let (m, n, k) = self.gemm_mnk();
        settings.gemm_shape = Problem::gemm(m, n, k);
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

/// The GEMM's M, N and K when not given.
const GEMM_SIZE: u32 = 1024;

/// What `bench kernels --help` names: the GEMM's default size and the real
/// lists of variants.
pub(super) fn help_values() -> Vec<(&'static str, String)> {
    let access: Vec<String> = AccessKind::all().into_iter().map(AccessKind::id).collect();
    vec![
        ("gemm_size", GEMM_SIZE.to_string()),
        ("softmax", list(&SoftmaxKind::ALL, |k| k.id())),
        ("reduce", list(&ReduceKind::ALL, |k| k.id())),
        ("ops", list(&REDUCE_OPS, |op| op.id())),
        ("gemm", list(&GemmKind::EVERY, |k| k.id())),
        ("fusion", list(&FusionKind::ALL, |k| k.id())),
        ("access", access.join(", ")),
    ]
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
    /// The generator's kernels for `gelu-fused`'s and `layernorm-fused`'s
    /// chains, each raced beside its rung.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    generated: Vec<Generated>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attention: Option<super::bench_attention::AttnRace>,
    failed: usize,
}

/// The hand-written rungs the generator's kernels are raced against, with
/// the chain each computes.
const GENERATED: [(FusionKind, fn() -> Chain); 2] = [
    (FusionKind::GeluFused, gelu_rung_chain),
    (FusionKind::LayerNormFused, layernorm_rung_chain),
];

/// A program raced beside a built-in rung: the generator's kernel against
/// the hand-written rung it stands for, or an int8 GEMM rung against the
/// f32 naive rung on the same shape.
#[derive(serde::Serialize)]
struct Generated {
    #[serde(skip)]
    int8: bool,
    rung: String,
    id: String,
    ms: f64,
    rung_ms: f64,
    /// Generated time ÷ hand-written time.
    ratio: f64,
    /// Bytes by its traffic model and by the rung's (the GPU tests check
    /// the generated kernel's instrumented count against the model).
    bytes: u64,
    rung_bytes: u64,
    ok: bool,
}

impl Generated {
    /// The generated kernel `id`'s row and the hand-written `rung`'s, from
    /// a race.
    fn of(outcomes: &[Outcome], kind: Kernel, id: &str) -> Option<Self> {
        let rung = outcomes.iter().find_map(|o| match o {
            Outcome::Ran(r) if r.kernel == kind => Some(r),
            _ => None,
        })?;
        let row = outcomes.iter().find_map(|o| match o {
            Outcome::Program(Ok(row)) if row.id == id => Some(row),
            _ => None,
        })?;
        Some(Self {
            int8: matches!(kind, Kernel::Gemm(_)),
            // A fusion rung by its own name (`gelu-fused`), as before.
            rung: match kind {
                Kernel::Fusion(f) => f.id().to_owned(),
                other => other.id(),
            },
            id: row.id.clone(),
            ms: row.median_ms,
            rung_ms: rung.median_ms,
            ratio: row.median_ms / rung.median_ms,
            bytes: row.bytes,
            rung_bytes: rung.bytes,
            ok: row.check.ok,
        })
    }
}

pub fn kernels(args: &KernelsArgs) -> Result<ExitCode, CliError> {
    if let Some(flag) = args.flag_not_applying() {
        // The families that do run it: the GEMM's flags, or --op.
        let families = if flag == "--op" {
            [Which::Memory, Which::All]
        } else if args.attention.given() == Some(flag) {
            [Which::Attention, Which::All]
        } else {
            [Which::Gemm, Which::All]
        };
        let families = list(&families, |w| w.id());
        return Err(CliError::from(tf(
            "bench.family_only",
            &[("flag", &flag), ("families", &families)],
        )));
    }
    let settings = args.ladder();
    // Sizes are checked against the adapter's buffers before anything is
    // allocated (the limit named is the one that applies); without an
    // adapter, against the absolute limit before saying there is none.
    let mut runner = kernel_runner().map_err(|no_gpu| {
        settings
            .check(MAX_ELEMENTS)
            .map_or_else(|e| super::say(&e), |()| no_gpu)
    })?;
    if args.attention.sweep {
        return super::bench_attention::sweep(&args.attention, args.trials, args.json, runner);
    }
    let mut ladder = Ladder::new(&settings, runner.max_elements()).map_err(|e| super::say(&e))?;
    // The fusion family races the generator's kernels for gelu-fused's and
    // layernorm-fused's chains beside the hand-written rungs, on the same
    // input.
    let (mut skipped, mut generator_failed, mut raced) = (Vec::new(), 0, Vec::new());
    let elements = u64::from(args.rows) * u64::from(args.cols);
    for (kind, chain) in GENERATED {
        if !settings.fusion.contains(&kind) {
            continue;
        }
        // Sized before the input is copied: a generated kernel takes at
        // most `codegen::MAX_ELEMENTS`.
        if elements > codegen::MAX_ELEMENTS as u64 {
            skipped.push(tf(
                "bench.skip.generated_too_large",
                &[
                    ("kind", &kind.id()),
                    ("elements", &elements),
                    ("max", &codegen::MAX_ELEMENTS),
                ],
            ));
            continue;
        }
        let rung = Kernel::Fusion(kind);
        let x = ladder.inputs().for_kernel(rung).to_vec();
        match codegen::program(&chain(), x, Vec::new(), args.cols as usize) {
            Ok(p) => {
                raced.push((Kernel::Fusion(kind), p.id.clone()));
                ladder = ladder.with_programs([p]);
            }
            // A row longer than a row kernel keeps is refused, said so.
            Err(codegen::CodegenError::RowTooLong { cols, max }) => {
                skipped.push(tf(
                    "bench.skip.row_too_long",
                    &[("kind", &kind.id()), ("cols", &cols), ("max", &max)],
                ));
            }
            // Only a generator bug refuses the chain otherwise.
            Err(e) => {
                skipped.push(tf(
                    "bench.skip.generator_failed",
                    &[("kind", &kind.id()), ("detail", &format!("{e:?}"))],
                ));
                generator_failed += 1;
            }
        }
    }
    // The GEMM family races the two int8 rungs beside the f32 naive rung
    // on the same M, N and K (int8 values of their own, seeded).
    if settings.gemm.contains(&GemmKind::Naive) {
        let (m, n, k) = args.gemm_mnk();
        let programs = GemmShape::new(m, n, k).and_then(|shape| {
            let (a, b) = seeded_operands(shape, dlsys_shaders::ladder::GEMM_SEED);
            dlsys_shaders::int8_gemm::programs(&Int8Kernel::ALL, shape, &a, &b)
        });
        match programs {
            Ok(programs) => {
                for p in programs {
                    raced.push((Kernel::Gemm(GemmKind::Naive), p.id.clone()));
                    ladder = ladder.with_programs([p]);
                }
            }
            Err(e) => {
                skipped.extend(Int8Kernel::ALL.map(|k| format!("{}: {}", k.id(), super::say(&e))));
            }
        }
    }
    // The attention family races its rungs on seeded Q, K, V.
    let mut attention = None;
    if args.family.families().contains(&Family::Attention) {
        let (with, race) =
            super::bench_attention::add(&args.attention, &runner, ladder, &mut skipped)?;
        ladder = with;
        attention = Some(race);
    }
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
    let timer = runner.timer().name(dlsys_core::text::Lang::En);
    let outcomes = ladder.run_blocking(&mut runner);
    let summary = Summary::of(&outcomes);
    if let Some(race) = &mut attention {
        race.read(&outcomes);
    }
    let generated = raced
        .iter()
        .filter_map(|(kind, id)| Generated::of(&outcomes, *kind, id))
        .collect();
    // A generated kernel that ran wrong fails the run, whether or not the
    // rung it stands for ran beside it.
    generator_failed += outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Program(Ok(r)) if !r.check.ok))
        .count();
    let mut results = Vec::new();
    for outcome in outcomes {
        match outcome {
            Outcome::Ran(row) => results.push(row),
            Outcome::Skipped { kernel, why } => {
                skipped.push(format!("{}: {}", kernel.id(), super::say(&why)));
            }
            Outcome::Program(Err((id, why))) => skipped.push(format!("{id}: {}", super::say(&why))),
            Outcome::Cpu(_) | Outcome::Program(Ok(_)) => {}
        }
    }
    let failed = results
        .iter()
        .filter(|r| !r.ok && !r.kernel.expected_to_overflow())
        .count()
        + generator_failed;
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
            .then_some(args.gemm_mnk()),
        trials: args.trials,
        warmup: dlsys_shaders::ladder::WARMUP,
        results,
        skipped,
        summary,
        generated,
        attention,
        failed,
    };
    emit(&report, args.json)
}

impl Report for BenchReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let (rows, cols) = (self.rows, self.cols);
        let elements = u64::from(rows) * u64::from(cols);
        line(
            out,
            "bench.adapter",
            &[
                ("adapter", &self.adapter),
                ("backend", &self.backend),
                ("timer", &self.timer_kind.name(super::lang())),
            ],
        )?;
        line(
            out,
            "bench.problem",
            &[
                ("rows", &rows),
                ("cols", &cols),
                ("elements", &elements),
                ("trials", &self.trials),
                ("warmup", &self.warmup),
            ],
        )?;
        if let Some((m, n, k)) = self.gemm {
            line(
                out,
                "bench.gemm_problem",
                &[("m", &m), ("n", &n), ("k", &k)],
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
        if let Some(race) = &self.attention {
            writeln!(out)?;
            race.text(out)?;
        }
        for s in &self.skipped {
            line(out, "bench.skipped", &[("what", s)])?;
        }
        writeln!(out)?;
        let s = &self.summary;
        if let Some(best) = &s.best_softmax {
            let fraction = format!("{:.2}", s.best_softmax_fraction_of_copy.unwrap_or(f64::NAN));
            line(
                out,
                "bench.best_softmax",
                &[("best", best), ("fraction", &fraction)],
            )?;
            if let Some(speedup) = s.best_vs_three_pass_speedup {
                let speedup = format!("{speedup:.2}");
                line(out, "bench.vs_three_pass", &[("speedup", &speedup)])?;
            }
        }
        if let Some(best) = &s.best_sum {
            let fraction = format!("{:.2}", s.best_sum_fraction_of_copy.unwrap_or(f64::NAN));
            line(
                out,
                "bench.best_sum",
                &[("best", best), ("fraction", &fraction)],
            )?;
        }
        let two = |v: Option<f64>| format!("{:.2}", v.unwrap_or(f64::NAN));
        if let Some(roof) = s.compute_roof_gflops {
            line(out, "bench.roof", &[("gflops", &two(Some(roof)))])?;
        }
        if let Some(best) = &s.best_gemm {
            line(
                out,
                "bench.best_gemm",
                &[
                    ("best", best),
                    ("gflops", &two(s.best_gemm_gflops)),
                    ("ratio", &two(s.best_gemm_vs_naive)),
                ],
            )?;
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
                line(out, key, &[("speedup", &two(time)), ("bytes", &two(bytes))])?;
            }
        }
        for g in &self.generated {
            line(
                out,
                if g.int8 {
                    "bench.int8"
                } else {
                    "bench.generated"
                },
                &[
                    ("rung", &g.rung),
                    ("id", &g.id),
                    ("ms", &format!("{:.3}", g.ms)),
                    ("rung_ms", &format!("{:.3}", g.rung_ms)),
                    ("ratio", &two(Some(g.ratio))),
                    ("bytes", &g.bytes),
                    ("rung_bytes", &g.rung_bytes),
                    ("ok", &t(if g.ok { "bench.yes" } else { "bench.no" })),
                ],
            )?;
        }
        if s.nhwc_vs_nchw.is_some() {
            line(out, "bench.layout", &[("ratio", &two(s.nhwc_vs_nchw))])?;
        }
        Ok(())
    }

    fn ok(&self) -> bool {
        self.failed == 0
    }
}
