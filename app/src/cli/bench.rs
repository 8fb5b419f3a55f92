//! `dlsys-lab bench kernels`: the GPU lesson's kernel ladder on the default
//! adapter, through the same `Ladder` the lesson polls — same order, inputs,
//! seeds, warm-up and references.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Subcommand;
use dlsys_core::kernels::{Data, Kernel, Problem, ReduceKind, ReduceOp, SoftmaxKind};
use dlsys_shaders::ladder::{LadderSettings, MAX_ELEMENTS, MAX_TRIALS};
use dlsys_shaders::report::Row;
use dlsys_shaders::{Ladder, Outcome};

use super::CliError;
use super::choice::{choice, list};
use super::kernel::{REDUCE_OPS, kernel_runner};
use super::lang::{pad, pad_left};
use super::output::{Report, emit};
use super::{t, tf};

#[derive(Clone, Debug, Subcommand)]
pub enum BenchWhat {
    /// Every softmax and reduction variant and the copy kernel on the default
    /// adapter: time, bytes moved, GB/s against copy, error against the reference.
    #[command(after_help = variants_help())]
    Kernels(KernelsArgs),
}

#[derive(Clone, Debug, clap::Args)]
pub struct KernelsArgs {
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
    /// Reduction ops to run (repeatable; default: both).
    #[arg(long = "op", value_name = "OP", value_parser = choice(&REDUCE_OPS, |op| op.id()))]
    pub ops: Vec<ReduceOp>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the softmax input (f32, little-endian) here, for comparing
    /// with another implementation on the same data.
    #[arg(long, value_name = "FILE")]
    pub dump_input: Option<std::path::PathBuf>,
}

impl KernelsArgs {
    /// The ladder these arguments ask for: every variant, the chosen ops.
    pub fn ladder(&self) -> LadderSettings {
        let mut settings = LadderSettings::everything(
            Problem {
                rows: self.rows,
                cols: self.cols,
            },
            self.data,
            self.trials,
        );
        if !self.ops.is_empty() {
            settings.ops.clone_from(&self.ops);
        }
        settings
    }
}

/// What `bench kernels --help` says it runs: the real lists.
fn variants_help() -> String {
    format!(
        "Softmax variants: {}.\nReduction variants: {} (each with the ops {}).",
        list(&SoftmaxKind::ALL, |k| k.id()),
        list(&ReduceKind::ALL, |k| k.id()),
        list(&REDUCE_OPS, |op| op.id()),
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
    rows: u32,
    cols: u32,
    trials: u32,
    warmup: u32,
    results: Vec<Row>,
    skipped: Vec<String>,
    summary: Summary,
    failed: usize,
}

#[derive(serde::Serialize)]
struct Summary {
    best_softmax: Option<String>,
    best_softmax_fraction_of_copy: Option<f64>,
    best_softmax_ms: Option<f64>,
    best_sum: Option<String>,
    best_sum_fraction_of_copy: Option<f64>,
    best_vs_three_pass_speedup: Option<f64>,
    copy_gb_per_s: Option<f64>,
}

pub fn kernels(args: &KernelsArgs) -> Result<ExitCode, CliError> {
    let settings = args.ladder();
    // Sizes are checked before a GPU is asked for, then against its buffers,
    // before anything is allocated.
    settings.check(MAX_ELEMENTS).map_err(|e| super::say(&e))?;
    let mut runner = kernel_runner()?;
    let ladder = Ladder::new(&settings, runner.max_elements()).map_err(|e| super::say(&e))?;
    if let Some(path) = &args.dump_input {
        std::fs::write(
            path,
            bytemuck::cast_slice::<f32, u8>(&ladder.inputs().softmax),
        )
        .map_err(|err| {
            tf(
                "bench.cannot_write",
                &[("path", &path.display()), ("error", &err)],
            )
        })?;
    }
    let timer = runner.timer().label();
    let mut results = Vec::new();
    let mut skipped = Vec::new();
    for outcome in ladder.run_blocking(&mut runner) {
        match outcome {
            Outcome::Ran(row) => results.push(row),
            Outcome::Skipped { kernel, why } => skipped.push(format!("{}: {why}", kernel.id())),
            Outcome::Cpu(_) => {}
        }
    }
    let best = |family: fn(Kernel) -> bool| {
        results
            .iter()
            .filter(|r| r.ok && family(r.kernel) && !r.kernel.expected_to_overflow())
            .min_by(|a, b| a.median_ms.total_cmp(&b.median_ms))
    };
    let best_softmax = best(|k| matches!(k, Kernel::Softmax(_)));
    let best_sum = best(|k| matches!(k, Kernel::Reduce(_, ReduceOp::Sum)));
    let three_pass = results
        .iter()
        .find(|r| r.kernel == Kernel::Softmax(SoftmaxKind::ThreePass))
        .map(|r| r.median_ms);
    let summary = Summary {
        best_softmax: best_softmax.map(|r| r.kernel.id()),
        best_softmax_fraction_of_copy: best_softmax.and_then(|r| r.fraction_of_copy),
        best_softmax_ms: best_softmax.map(|r| r.median_ms),
        best_sum: best_sum.map(|r| r.kernel.id()),
        best_sum_fraction_of_copy: best_sum.and_then(|r| r.fraction_of_copy),
        best_vs_three_pass_speedup: best_softmax.zip(three_pass).map(|(b, t)| t / b.median_ms),
        copy_gb_per_s: results
            .iter()
            .find(|r| r.kernel == Kernel::Copy)
            .map(|r| r.gb_per_s),
    };
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
        rows: args.rows,
        cols: args.cols,
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
                (
                    "timer",
                    &dlsys_lessons::gpu_kernels::timer_text(self.timer_kind, super::lang(), false),
                ),
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
        writeln!(out, "{problem}\n")?;
        let right = |key, width| pad_left(t(key), width);
        writeln!(
            out,
            "{} {} {} {} {:>7} {:>8} {} {} {}",
            pad(t("bench.kernel"), 28),
            right("bench.median", 9),
            right("bench.min", 9),
            right("bench.max", 9),
            "MB",
            "GB/s",
            right("bench.copy", 7),
            right("bench.error", 10),
            t("bench.ok")
        )?;
        for r in &self.results {
            writeln!(
                out,
                "{:<28} {:>9.3} {:>9.3} {:>9.3} {:>7.1} {:>8.2} {:>7} {:>10.2e} {}",
                r.kernel.id(),
                r.median_ms,
                r.min_ms,
                r.max_ms,
                r.bytes as f64 / 1e6,
                r.gb_per_s,
                r.fraction_of_copy
                    .map_or("—".to_owned(), |f| format!("{f:.2}")),
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
        Ok(())
    }

    fn ok(&self) -> bool {
        self.failed == 0
    }
}
