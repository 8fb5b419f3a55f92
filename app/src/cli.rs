//! The command-line face: the same cores as the app, headless.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dlsys_core::autograd::{Band, Check, GradcheckReport, PlantedBug};
use dlsys_core::exercise::{SelfCheck, self_check};
use dlsys_core::float::{self, Exact, Format, Rounding, StochasticRounder};
use dlsys_core::nn::{Activation, OptimizerKind, Status, TrainConfig, Trainer};
use dlsys_lessons::exercise_panel::{FIRST_SEED, next_seed};
use dlsys_shaders::Gpu;
use dlsys_shaders::exercises::{self as kernel_exercises, Checker};

#[derive(Debug, Parser)]
#[command(
    name = "dlsys-lab",
    version,
    about = "An interactive workbench for deep-learning-systems topics. \
             Without a subcommand it opens the app."
)]
pub struct Cli {
    /// Open this lesson (its id, e.g. `welcome`; a leading `#` is allowed).
    #[arg(long, value_name = "ID")]
    pub lesson: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Clone, Debug, Subcommand)]
pub enum Command {
    /// Print the GPU adapter dlsys-lab would use and its optional features.
    GpuInfo {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Self-check every exercise: each checker must accept its reference
    /// answer and reject its listed wrong answers.
    Check {
        #[arg(long)]
        json: bool,
        /// How many seeded variants of each exercise to check.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
        seeds: u32,
    },
    /// Show a value in every float format — bits, value, class, rounding
    /// error, ulp, neighbours — or, with `--batch --to F`, round fp32 patterns
    /// read from stdin (hex, one per line) into F.
    Float {
        /// 0.1, -6.1e-5, 0x1.8p-3, 2^-24, inf, -0, nan, a bit pattern of
        /// `--bits-of` (0x3c00, 0b…), or FORMAT:PATTERN (fp16:0x3c00).
        #[arg(allow_hyphen_values = true)]
        value: Option<String>,
        /// Formats to show (repeatable): fp32 fp16 bf16 tf32 fp8-e4m3 fp8-e5m2,
        /// or eXmY for a custom one. Default: all built-ins.
        #[arg(long = "format", short = 'f', value_name = "F")]
        formats: Vec<String>,
        /// Rounding mode: rne rna rtz up down stochastic.
        #[arg(long, default_value = "rne", value_name = "MODE")]
        round: String,
        /// Seed for stochastic rounding.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The format a bare bit pattern (0x…, 0b…) belongs to.
        #[arg(long, default_value = "fp32", value_name = "F")]
        bits_of: String,
        #[arg(long)]
        json: bool,
        /// Read fp32 patterns from stdin, write rounded patterns of `--to`.
        #[arg(long, requires = "to", conflicts_with = "value")]
        batch: bool,
        /// The target format of `--batch`.
        #[arg(long, value_name = "F")]
        to: Option<String>,
    },
    /// Check every autograd op and a whole MLP against numerical gradients;
    /// exits non-zero if any is outside the good band.
    Gradcheck {
        #[arg(long)]
        json: bool,
        /// Arithmetic to check in: f64 (the real check), or f32, tf32, bf16,
        /// fp16 (emulated) to see why gradient checks need f64.
        #[arg(long, default_value = "f64", value_parser = dlsys_core::autograd::checks::PRECISIONS)]
        precision: String,
        /// Plant a wrong backward rule to see the check catch it:
        /// bias-not-summed, softmax-no-coupling, ce-not-averaged.
        #[arg(long, value_name = "BUG")]
        bug: Option<String>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Train an MLP and print per-epoch loss and train/test accuracy (and,
    /// under a reduced precision, the loss scale, skipped steps and the
    /// fraction of gradient values that underflowed).
    Train(TrainArgs),
    /// Benchmarks (they print numbers; they are not tests).
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// Run one GPU kernel on your own data: f32 little-endian on stdin.
    #[command(name = "kernel")]
    RunKernel {
        #[command(subcommand)]
        which: KernelCommand,
    },
    /// List the lessons (their ids are the routes: `--lesson ID`, `#ID`).
    Lessons {
        #[arg(long)]
        json: bool,
    },
    /// The WGSL kernel exercises: without ID, list them; with ID, print its
    /// template; with ID and FILE (or - for stdin), check your kernel.
    WgslExercise {
        id: Option<String>,
        file: Option<std::path::PathBuf>,
        #[arg(long)]
        json: bool,
        /// After a pass, skip timing your kernel against the built-in ladder.
        #[arg(long)]
        no_race: bool,
    },
    /// Your progress on the Rust exercise track (exercises/learn/): runs
    /// `cargo test -p dlsys-exercises` and shows which pass and what is next.
    Exercises {
        #[arg(long)]
        json: bool,
        /// The dlsys-lab source checkout (default: found from here).
        #[arg(long, value_name = "DIR")]
        root: Option<std::path::PathBuf>,
    },
}

#[derive(Clone, Debug, clap::Args)]
pub struct TrainArgs {
    /// mnist, digits, spirals, moons, circles or xor.
    #[arg(long, default_value = "digits")]
    dataset: String,
    /// Hidden layer sizes, comma-separated (e.g. 128,64).
    #[arg(long, default_value = "128")]
    hidden: String,
    /// relu, tanh or sigmoid.
    #[arg(long, default_value = "relu")]
    activation: String,
    /// sgd, momentum, nesterov or adam.
    #[arg(long, default_value = "momentum")]
    optimizer: String,
    #[arg(long, default_value_t = 0.05, allow_hyphen_values = true)]
    lr: f64,
    #[arg(long, default_value_t = 64)]
    batch: usize,
    #[arg(long, default_value_t = 10)]
    epochs: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Compute (op outputs and gradients) in fp32, tf32, bf16, fp16, fp8-e4m3, fp8-e5m2 or eXmY.
    #[arg(long, default_value = "fp32", value_name = "F")]
    precision: String,
    /// dynamic (2^16, ×2 after 200 clean steps, ×½ and skip on inf/NaN), none, or a fixed value.
    #[arg(
        long,
        default_value = "none",
        value_name = "S",
        allow_hyphen_values = true
    )]
    loss_scale: String,
    /// fp32 (a master copy; the forward pass sees rounded weights) or same (weights stored in --precision).
    #[arg(long, default_value = "fp32", value_parser = ["fp32", "same"])]
    master_weights: String,
    /// Format of the optimizer state (momentum, Adam's moments).
    #[arg(long, default_value = "fp32", value_name = "F")]
    optimizer_state: String,
    /// Format of the gradient-accumulation buffer.
    #[arg(long, default_value = "fp32", value_name = "F")]
    accumulate_in: String,
    /// Batches accumulated per optimizer step.
    #[arg(long, default_value_t = 1)]
    micro_batches: u32,
    /// Multiply the loss by this before backward (e.g. 2^-16: smaller gradients).
    #[arg(
        long,
        default_value = "1",
        value_name = "W",
        allow_hyphen_values = true
    )]
    loss_weight: String,
    /// One of the mixed-precision lesson's scenarios (sets everything but --json):
    /// fp32, fp16-no-scaling, fp16-dynamic, bf16-no-scaling, accumulate-fp32,
    /// accumulate-fp16, adam-fp32-moments, adam-fp16-moments.
    #[arg(long)]
    scenario: Option<String>,
    #[arg(long)]
    json: bool,
}

impl TrainArgs {
    /// The data set and configuration these arguments ask for.
    fn config(&self) -> Result<(String, TrainConfig), String> {
        use dlsys_core::mixed::{LossScale, MasterWeights, Policy};
        use dlsys_core::nn::scenarios::Scenario;
        if let Some(id) = &self.scenario {
            let scenario = Scenario::ALL
                .into_iter()
                .find(|s| s.id() == id)
                .ok_or_else(|| {
                    let ids: Vec<&str> = Scenario::ALL.iter().map(|s| s.id()).collect();
                    format!("unknown --scenario `{id}`; use one of {}", ids.join(", "))
                })?;
            return Ok(("digits".to_owned(), scenario.config()));
        }
        let hidden = self
            .hidden
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                s.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("--hidden: `{s}` is not a layer size"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let master = if self.master_weights == "same" {
            MasterWeights::Same
        } else {
            MasterWeights::Fp32
        };
        let policy = Policy {
            optimizer_state: self.optimizer_state.clone(),
            accumulation: self.accumulate_in.clone(),
            ..Policy::uniform(
                &self.precision,
                LossScale::by_name(&self.loss_scale)?,
                master,
            )
        };
        let loss_weight = dlsys_core::exercise::parse_number(&self.loss_weight)
            .map_err(|err| format!("--loss-weight: {err}"))? as f32;
        let config = TrainConfig {
            hidden,
            activation: Activation::by_name(&self.activation)?,
            optimizer: OptimizerKind::by_name(&self.optimizer)?,
            lr: self.lr,
            batch_size: self.batch,
            epochs: self.epochs,
            seed: self.seed,
            policy,
            micro_batches: self.micro_batches,
            loss_weight,
            ..Default::default()
        };
        Ok((self.dataset.clone(), config))
    }
}

#[derive(Clone, Debug, Subcommand)]
pub enum BenchWhat {
    /// Every softmax and reduction variant and the copy kernel on the default
    /// adapter: time, bytes moved, GB/s against copy, error against the reference.
    Kernels {
        #[arg(long, default_value_t = 4096)]
        rows: u32,
        #[arg(long, default_value_t = 1024)]
        cols: u32,
        #[arg(long, default_value_t = 10)]
        trials: u32,
        #[arg(long)]
        json: bool,
        /// Also write the softmax input (f32, little-endian) here, for comparing
        /// with another implementation on the same data.
        #[arg(long, value_name = "FILE")]
        dump_input: Option<std::path::PathBuf>,
    },
}

#[derive(Clone, Debug, Subcommand)]
pub enum KernelCommand {
    /// Row-wise softmax of stdin (rows of `--cols` f32), written to stdout the same way.
    Softmax {
        /// naive, three-pass, workgroup, online or subgroup.
        #[arg(long, default_value = "online")]
        variant: String,
        #[arg(long)]
        cols: u32,
    },
    /// Reduce the f32 values on stdin; prints the result.
    Reduce {
        /// divergent, strided, sequential, first-add, unrolled, grid-stride or subgroup.
        #[arg(long, default_value = "grid-stride")]
        variant: String,
        #[arg(long, default_value = "sum")]
        op: String,
    },
}

/// Runs a subcommand; an error is one line for stderr.
pub fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::GpuInfo { json } => gpu_info(json),
        Command::Check { json, seeds } => check(json, seeds),
        Command::Lessons { json } => lessons(json),
        Command::WgslExercise {
            id,
            file,
            json,
            no_race,
        } => wgsl_exercise(id.as_deref(), file.as_deref(), json, !no_race),
        Command::Exercises { json, root } => crate::track::run(json, root.as_deref()),
        Command::Bench {
            what:
                BenchWhat::Kernels {
                    rows,
                    cols,
                    trials,
                    json,
                    dump_input,
                },
        } => bench_kernels(rows, cols, trials, json, dump_input.as_deref()),
        Command::RunKernel { which } => run_kernel(&which),
        Command::Gradcheck {
            json,
            precision,
            bug,
            seed,
        } => gradcheck(json, &precision, bug.as_deref(), seed),
        Command::Train(args) => {
            let (dataset, config) = args.config()?;
            train(&dataset, config, args.json)
        }
        Command::Float {
            value,
            formats,
            round,
            seed,
            bits_of,
            json,
            batch,
            to,
        } => {
            let rounding = Rounding::by_name(&round)?;
            if batch {
                let target = Format::by_name(to.as_deref().unwrap_or_default())?;
                return float_batch(&target, rounding, seed);
            }
            let value =
                value.ok_or("give a value (e.g. `dlsys-lab float 0.1`) or --batch --to F")?;
            let formats = if formats.is_empty() {
                Format::builtins()
            } else {
                formats
                    .iter()
                    .map(|f| Format::by_name(f))
                    .collect::<Result<_, _>>()?
            };
            float_value(
                &value,
                &formats,
                rounding,
                seed,
                &Format::by_name(&bits_of)?,
                json,
            )
        }
    }
}

fn to_json(value: &impl serde::Serialize) -> Result<String, String> {
    serde_json::to_string_pretty(value).map_err(|err| format!("could not write JSON: {err}"))
}

fn gpu_info(json: bool) -> Result<ExitCode, String> {
    match Gpu::request_blocking() {
        Ok(gpu) => {
            let info = gpu.info();
            if json {
                #[derive(serde::Serialize)]
                struct Report<'a> {
                    available: bool,
                    #[serde(flatten)]
                    info: &'a dlsys_shaders::GpuInfo,
                }
                println!(
                    "{}",
                    to_json(&Report {
                        available: true,
                        info: &info
                    })?
                );
            } else {
                println!("adapter:      {}", info.adapter);
                println!("backend:      {}", info.backend);
                println!("device type:  {}", info.device_type);
                println!("driver:       {} {}", info.driver, info.driver_info);
                println!(
                    "compute:      {}",
                    if info.compute {
                        "yes"
                    } else {
                        "no (lessons use the CPU path)"
                    }
                );
                println!("timestamp period: {} ns", info.timestamp_period_ns);
                println!(
                    "subgroup sizes:   {}–{}",
                    info.subgroup_min_size, info.subgroup_max_size
                );
                println!(
                    "limits: {} invocations/workgroup, {} B workgroup storage, {} B storage binding",
                    info.max_compute_invocations_per_workgroup,
                    info.max_compute_workgroup_storage_bytes,
                    info.max_storage_buffer_binding_bytes
                );
                println!("optional features:");
                for (name, enabled) in info.feature_flags() {
                    println!(
                        "  {name:<32} {}",
                        if enabled { "enabled" } else { "not offered" }
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            if json {
                println!(
                    "{}",
                    to_json(&serde_json::json!({
                        "available": false,
                        "reason": err.to_string(),
                        "path": "cpu",
                    }))?
                );
            } else {
                println!("no GPU: {err}");
                println!("GPU lessons run on the CPU path.");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Every exercise of every lesson over `seeds` seeded variants.
pub fn self_check_all(seeds: u32) -> Vec<(String, SelfCheck)> {
    let mut results = Vec::new();
    for lesson in dlsys_lessons::all() {
        for exercise in lesson.exercises() {
            let mut seed = FIRST_SEED;
            for _ in 0..seeds {
                results.push((lesson.id().to_owned(), self_check(exercise, seed)));
                seed = next_seed(seed);
            }
        }
    }
    results
}

/// One checker of the code-writing tracks run on one solution.
#[derive(serde::Serialize)]
pub struct CodeCheck {
    pub track: &'static str,
    pub exercise: &'static str,
    /// "reference" or the known mistake.
    pub solution: &'static str,
    /// For a known-wrong solution: what the checker's message must mention.
    pub expect: Option<&'static str>,
    pub message: Option<String>,
    pub ok: bool,
}

/// The code tracks' checkers, each on its reference (must pass) and its
/// known-wrong solutions (must fail, naming the mistake): the Rust track
/// always, the WGSL track when there is a GPU adapter (else the reason is
/// returned and nothing is counted for it).
pub fn code_exercise_checks() -> (Vec<CodeCheck>, Option<String>) {
    let mut rows: Vec<CodeCheck> = dlsys_exercises::cases()
        .iter()
        .map(|case| {
            let result = case.run();
            CodeCheck {
                track: "rust",
                exercise: case.exercise,
                solution: case.solution,
                expect: case.expect,
                message: result.message,
                ok: result.ok,
            }
        })
        .collect();
    let mut checker = match Checker::request_blocking() {
        Ok(checker) => checker,
        Err(err) => {
            return (
                rows,
                Some(format!(
                    "WGSL exercises not checked: no GPU adapter ({err})"
                )),
            );
        }
    };
    for ex in &kernel_exercises::EXERCISES {
        let verdict = checker.check_blocking(ex, ex.reference);
        rows.push(CodeCheck {
            track: "wgsl",
            exercise: ex.id,
            solution: "reference",
            expect: None,
            ok: verdict.passed(),
            message: (!verdict.passed()).then(|| verdict.message()),
        });
        for wrong in ex.wrong {
            let verdict = checker.check_blocking(ex, wrong.source);
            let message = verdict.message();
            rows.push(CodeCheck {
                track: "wgsl",
                exercise: ex.id,
                solution: wrong.name,
                expect: Some(wrong.expect),
                ok: !verdict.passed() && message.contains(wrong.expect),
                message: Some(message),
            });
        }
    }
    (rows, None)
}

fn wgsl_exercise(
    id: Option<&str>,
    file: Option<&std::path::Path>,
    json: bool,
    race: bool,
) -> Result<ExitCode, String> {
    let Some(id) = id else {
        for ex in &kernel_exercises::EXERCISES {
            println!("{:<16} {}", ex.id, ex.title);
        }
        return Ok(ExitCode::SUCCESS);
    };
    let ex = kernel_exercises::exercise(id).ok_or_else(|| {
        let ids: Vec<&str> = kernel_exercises::EXERCISES.iter().map(|e| e.id).collect();
        format!("no WGSL exercise `{id}`; there are: {}", ids.join(", "))
    })?;
    let Some(file) = file else {
        print!("{}", ex.template);
        return Ok(ExitCode::SUCCESS);
    };
    let source = if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| format!("reading stdin: {e}"))?;
        text
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?
    };
    // naga's diagnostics need no GPU.
    let verdict =
        match kernel_exercises::validate(ex, &source) {
            Err(diagnostic) => kernel_exercises::Verdict::Invalid(diagnostic),
            Ok(()) => {
                let mut checker = Checker::request_blocking()
                    .map_err(|e| format!("running a kernel needs a GPU adapter: {e}"))?;
                let verdict = checker.check_blocking(ex, &source);
                let raced =
                    match checker.gpu() {
                        Some(gpu) if race && verdict.passed() => Some(
                            kernel_exercises::race_blocking(gpu, ex, &source, 5, checker.budget),
                        ),
                        _ => None,
                    };
                if raced
                    .as_ref()
                    .is_some_and(|r| r.as_ref().is_err_and(|e| e.abandon_device))
                {
                    // A kernel still runs there: dropping the device would wait for it.
                    checker.abandon();
                }
                return report_kernel(ex, &verdict, raced.as_ref(), json);
            }
        };
    report_kernel(ex, &verdict, None, json)
}

fn report_kernel(
    ex: &kernel_exercises::KernelExercise,
    verdict: &kernel_exercises::Verdict,
    raced: Option<&Result<kernel_exercises::Race, kernel_exercises::RaceError>>,
    json: bool,
) -> Result<ExitCode, String> {
    if json {
        println!(
            "{}",
            to_json(&serde_json::json!({
                "exercise": ex.id,
                "passed": verdict.passed(),
                "message": verdict.message(),
                "verdict": verdict,
                "race": raced,
            }))?
        );
    } else {
        println!("{}: {}", ex.id, verdict.message());
        match raced {
            Some(Ok(race)) => {
                println!(
                    "against the built-in kernels on {} (median of {} trials; yours timed by {}):",
                    race.problem, race.trials, race.timer
                );
                for (i, lap) in race.laps.iter().enumerate() {
                    println!(
                        "  {:>2}. {:<26} {:>9.3} ms {:>8.2} GB/s",
                        i + 1,
                        lap.kernel,
                        lap.median_ns / 1e6,
                        lap.gb_per_s
                    );
                }
                println!("yours ranks {} of {}", race.rank(), race.laps.len());
            }
            Some(Err(err)) => println!("timing failed: {err}"),
            None => {}
        }
    }
    Ok(if verdict.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn check(json: bool, seeds: u32) -> Result<ExitCode, String> {
    let results = self_check_all(seeds);
    let (code, code_skipped) = code_exercise_checks();
    let failed =
        results.iter().filter(|(_, r)| !r.ok()).count() + code.iter().filter(|r| !r.ok).count();
    let checked = results.len() + code.len();
    if json {
        #[derive(serde::Serialize)]
        struct Row<'a> {
            lesson: &'a str,
            #[serde(flatten)]
            result: &'a SelfCheck,
            ok: bool,
        }
        let rows: Vec<Row<'_>> = results
            .iter()
            .map(|(lesson, result)| Row {
                lesson,
                result,
                ok: result.ok(),
            })
            .collect();
        println!(
            "{}",
            to_json(&serde_json::json!({
                "checked": checked,
                "failed": failed,
                "results": rows,
                "code_exercises": code,
                "code_not_checked": code_skipped,
            }))?
        );
    } else {
        for (lesson, result) in &results {
            let status = if result.ok() { "ok  " } else { "FAIL" };
            println!(
                "{status} {lesson}/{} seed {}",
                result.exercise_id, result.seed
            );
            for problem in &result.problems {
                println!("       {problem}");
            }
        }
        for row in &code {
            let status = if row.ok { "ok  " } else { "FAIL" };
            println!("{status} {}/{} {}", row.track, row.exercise, row.solution);
            if !row.ok
                && let Some(message) = &row.message
            {
                println!("       {message}");
            }
        }
        if let Some(why) = &code_skipped {
            println!("note: {why}");
        }
        println!("{checked} checked, {failed} failed");
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn lessons(json: bool) -> Result<ExitCode, String> {
    let lang = dlsys_core::text::Lang::En;
    let all = dlsys_lessons::all();
    if json {
        let rows: Vec<_> = all
            .iter()
            .map(|l| {
                serde_json::json!({
                    "id": l.id(),
                    "title": l.title(lang),
                    "exercises": l.exercises().iter().map(|e| e.id).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", to_json(&rows)?);
    } else {
        for lesson in &all {
            println!(
                "{:<16} {} ({} exercises)",
                lesson.id(),
                lesson.title(lang),
                lesson.exercises().len()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn float_value(
    text: &str,
    formats: &[Format],
    rounding: Rounding,
    seed: u64,
    bits_of: &Format,
    json: bool,
) -> Result<ExitCode, String> {
    let parsed = float::parse_input(text, bits_of)?;
    let input = parsed.exact.to_f64();
    let mut stochastic = StochasticRounder::new(seed);
    let mut encode = |format: &Format, exact: &Exact| {
        if rounding == Rounding::Stochastic {
            stochastic.encode(format, exact)
        } else {
            format.encode(exact, rounding)
        }
    };
    let rows: Vec<(float::Described, float::RangeTable)> = formats
        .iter()
        .map(|format| {
            let bits = encode(format, &parsed.exact);
            (format.describe_bits(bits, input), format.range())
        })
        .collect();
    if json {
        #[derive(serde::Serialize)]
        struct Row<'a> {
            #[serde(flatten)]
            described: &'a float::Described,
            range: &'a float::RangeTable,
        }
        let out = serde_json::json!({
            "input": text,
            "input_kind": format!("{:?}", parsed.kind),
            "input_value": input,
            "rounding": rounding.short_name(),
            "seed": seed,
            "formats": rows.iter().map(|(d, r)| Row { described: d, range: r }).collect::<Vec<_>>(),
        });
        println!("{}", to_json(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("input     {text}  →  {}", float::show(input));
    println!(
        "rounding  {} ({})",
        rounding.short_name(),
        rounding.long_name()
    );
    for (d, r) in &rows {
        println!();
        println!("{:<9} {}  {}", d.format, d.binary, d.hex);
        println!("          value {}  ({})", float::show(d.value), d.class);
        if d.abs_error.is_finite() {
            println!(
                "          error {}  (relative {})",
                float::show_sig(d.abs_error, 6),
                float::show_sig(d.rel_error, 4)
            );
        }
        if let Some(ulp) = d.ulp {
            println!("          ulp   {}", float::show(ulp));
        }
        let side = |v: Option<f64>| v.map_or("none".to_owned(), float::show);
        println!(
            "          below {}   above {}",
            side(d.below),
            side(d.above)
        );
        println!(
            "          range max {}, min normal {}, min subnormal {}, eps {}",
            float::show(r.max_finite),
            float::show(r.min_normal),
            float::show(r.min_subnormal),
            float::show(r.epsilon)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn float_batch(target: &Format, rounding: Rounding, seed: u64) -> Result<ExitCode, String> {
    let stdin = std::io::stdin().lock();
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let report = float::batch::convert_batch(stdin, stdout, target, rounding, seed)
        .map_err(|err| format!("batch conversion: {err}"))?;
    for (line, message) in &report.errors {
        eprintln!("line {line}: {message}");
    }
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn planted_bug(name: &str) -> Result<PlantedBug, String> {
    match name {
        "bias-not-summed" => Ok(PlantedBug::BiasNotSummedOverBatch),
        "softmax-no-coupling" => Ok(PlantedBug::SoftmaxMissingCoupling),
        "ce-not-averaged" => Ok(PlantedBug::CrossEntropyNotAveraged),
        other => Err(format!(
            "unknown --bug `{other}`; use bias-not-summed, softmax-no-coupling or ce-not-averaged"
        )),
    }
}

fn gradcheck(
    json: bool,
    precision: &str,
    bug: Option<&str>,
    seed: u64,
) -> Result<ExitCode, String> {
    let bug = bug.map(planted_bug).transpose()?;
    let reports: Vec<GradcheckReport> = Check::ALL
        .iter()
        .map(|check| check.run_in(precision, seed, bug))
        .collect::<Result<_, _>>()?;
    let failed = reports.iter().filter(|r| r.band != Band::Good).count();
    if json {
        let rows: Vec<_> = reports
            .iter()
            .map(|r| {
                serde_json::json!({
                    "check": r.name,
                    "precision": r.precision,
                    "max_rel_error": r.max_rel_error,
                    "band": r.band.name(),
                    "tensors": r.tensors.iter().map(|t| serde_json::json!({
                        "name": t.name, "shape": t.shape, "max_rel_error": t.max_rel_error,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!(
            "{}",
            to_json(&serde_json::json!({
                "precision": precision,
                "planted_bug": bug.map(PlantedBug::describe),
                "checks": rows,
                "outside_good_band": failed,
            }))?
        );
    } else {
        if let Some(bug) = bug {
            println!("planted bug: {}", bug.describe());
        }
        println!(
            "{:<24} {:>12}  band",
            format!("check ({precision})"),
            "max rel err"
        );
        for r in &reports {
            println!(
                "{:<24} {:>12.3e}  {}",
                r.name,
                r.max_rel_error,
                r.band.name()
            );
            for t in r
                .tensors
                .iter()
                .filter(|t| Band::of(t.max_rel_error) != Band::Good)
            {
                println!(
                    "{:<24} {:>12.3e}  ({} {:?})",
                    "", t.max_rel_error, t.name, t.shape
                );
            }
        }
        println!(
            "{} checks, {failed} outside the good band (< 1e-7)",
            reports.len()
        );
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn train(dataset: &str, config: TrainConfig, json: bool) -> Result<ExitCode, String> {
    let data = dlsys_lessons::datasets::load(dataset, config.seed)?;
    let (train_set, test_set) = data.split(dlsys_lessons::datasets::TEST_FRACTION, config.seed);
    let epochs = config.epochs;
    let mut trainer = Trainer::new(config, train_set, test_set)?;
    if !json {
        if !trainer.config.policy.is_fp32() {
            println!("precision policy: {}", trainer.config.policy.describe());
        }
        println!(
            "{}: {} train / {} test, {} features, {} classes; MLP {} parameters",
            data.name,
            trainer.train.len(),
            trainer.test.len(),
            data.features,
            data.classes,
            trainer.model.parameter_count()
        );
    }
    let mut reported = 0;
    while trainer.status == Status::Running {
        trainer.step();
        for stats in &trainer.history[reported..] {
            if json {
                println!(
                    "{}",
                    serde_json::to_string(stats).map_err(|e| e.to_string())?
                );
            } else {
                let mixed = stats.mixed.as_ref().map_or(String::new(), |m| {
                    format!(
                        "  scale {}  skipped {}  underflowed {:.2}%  accumulation overflows {}",
                        m.loss_scale,
                        m.skipped_steps,
                        100.0 * m.underflow_fraction,
                        m.accumulation_overflows
                    )
                });
                println!(
                    "epoch {:>3}/{epochs}  train loss {:.4}  train acc {:6.2}%  test loss {:.4}  test acc {:6.2}%{mixed}",
                    stats.epoch,
                    stats.train_loss,
                    100.0 * stats.train_accuracy,
                    stats.test_loss,
                    100.0 * stats.test_accuracy
                );
            }
        }
        reported = trainer.history.len();
    }
    match &trainer.status {
        Status::Diverged { epoch, step, loss } => Err(format!(
            "training diverged at step {step} (epoch {}): the loss became {loss}; try a smaller learning rate",
            epoch + 1
        )),
        _ => {
            let accuracy = trainer.history.last().map_or(f64::NAN, |s| s.test_accuracy);
            if json {
                println!("{}", serde_json::json!({ "final_test_accuracy": accuracy }));
            } else {
                println!("final test accuracy {:.2}%", 100.0 * accuracy);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn kernel_runner() -> Result<dlsys_shaders::KernelRunner, String> {
    let gpu = Gpu::request_blocking().map_err(|err| err.to_string())?;
    if !gpu.supports_compute() {
        return Err(format!(
            "{} cannot run compute shaders",
            gpu.adapter_info.name
        ));
    }
    Ok(dlsys_shaders::KernelRunner::new(gpu))
}

fn bench_kernels(
    rows: u32,
    cols: u32,
    trials: u32,
    json: bool,
    dump: Option<&std::path::Path>,
) -> Result<ExitCode, String> {
    use dlsys_core::kernels::{Data, Kernel, Problem, ReduceKind, ReduceOp, SoftmaxKind};
    use dlsys_shaders::report::{Reference, Row, row};
    let mut runner = kernel_runner()?;
    let problem = Problem { rows, cols };
    let elements = problem.elements() as usize;
    if elements == 0 {
        return Err("--rows and --cols must be at least 1".to_owned());
    }
    let mut run = |kernel: Kernel, problem: Problem, input: &[f32]| {
        let spec = dlsys_shaders::RunSpec {
            kernel,
            problem,
            warmup: 3,
            trials,
            instrumented: false,
        };
        runner.start(spec, input).and_then(dlsys_shaders::Job::wait)
    };
    // The ceiling first: the copy kernel on the same number of bytes.
    let copy_n = (elements / 4 * 4).max(4);
    let copy_input = Data::Random.generate(1, copy_n, 1, false);
    let copy = run(
        Kernel::Copy,
        Problem {
            rows: 1,
            cols: copy_n as u32,
        },
        &copy_input,
    )?;
    let copy_row = row(&copy, &Reference::Values(copy_input.clone()), None);
    let copy_gb = copy_row.gb_per_s;
    let softmax_input = Data::Random.generate(rows as usize, cols as usize, 2, false);
    if let Some(path) = dump {
        std::fs::write(path, bytemuck::cast_slice::<f32, u8>(&softmax_input))
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    }
    let reduce_input = Data::Random.generate(1, elements, 3, true);
    let softmax_reference = Reference::compute(
        Kernel::Softmax(SoftmaxKind::Online),
        &softmax_input,
        problem,
    );
    let mut rows_out: Vec<Row> = vec![copy_row];
    let mut skipped = Vec::new();
    for kind in SoftmaxKind::ALL {
        match run(Kernel::Softmax(kind), problem, &softmax_input) {
            Ok(out) => rows_out.push(row(&out, &softmax_reference, Some(copy_gb))),
            Err(err) => skipped.push(format!("softmax/{}: {err}", kind.id())),
        }
    }
    for op in [ReduceOp::Sum, ReduceOp::Max] {
        let reference = Reference::Scalar(dlsys_core::kernels::reduce_reference(&reduce_input, op));
        for kind in ReduceKind::ALL {
            let kernel = Kernel::Reduce(kind, op);
            match run(
                kernel,
                Problem {
                    rows: 1,
                    cols: elements as u32,
                },
                &reduce_input,
            ) {
                Ok(out) => rows_out.push(row(&out, &reference, Some(copy_gb))),
                Err(err) => skipped.push(format!("{}: {err}", kernel.id())),
            }
        }
    }
    let best = |prefix: &str| {
        rows_out
            .iter()
            .filter(|r| r.kernel.starts_with(prefix) && r.ok && !r.kernel.ends_with("/naive"))
            .min_by(|a, b| a.median_ms.total_cmp(&b.median_ms))
            .cloned()
    };
    let three_pass = rows_out
        .iter()
        .find(|r| r.kernel == "softmax/three-pass")
        .map(|r| r.median_ms);
    let best_softmax = best("softmax/");
    let best_sum = best("reduce-sum/");
    let info = runner.gpu().info();
    let failed = rows_out
        .iter()
        .filter(|r| !r.ok && r.kernel != "softmax/naive")
        .count();
    if json {
        let summary = serde_json::json!({
            "best_softmax": best_softmax.as_ref().map(|r| &r.kernel),
            "best_softmax_fraction_of_copy": best_softmax.as_ref().and_then(|r| r.fraction_of_copy),
            "best_softmax_ms": best_softmax.as_ref().map(|r| r.median_ms),
            "best_sum": best_sum.as_ref().map(|r| &r.kernel),
            "best_sum_fraction_of_copy": best_sum.as_ref().and_then(|r| r.fraction_of_copy),
            "best_vs_three_pass_speedup": best_softmax.as_ref().zip(three_pass).map(|(b, t)| t / b.median_ms),
            "copy_gb_per_s": copy_gb,
        });
        println!(
            "{}",
            to_json(&serde_json::json!({
                "adapter": info.adapter,
                "backend": info.backend,
                "timer": rows_out[0].timer,
                "timestamp_period_ns": info.timestamp_period_ns,
                "rows": rows,
                "cols": cols,
                "trials": trials,
                "results": rows_out,
                "skipped": skipped,
                "summary": summary,
                "failed": failed,
            }))?
        );
    } else {
        println!(
            "adapter {} ({}), timer: {}",
            info.adapter, info.backend, rows_out[0].timer
        );
        println!(
            "softmax {rows}×{cols} f32; reductions and copy over {elements} f32; median of {trials} trials\n"
        );
        println!(
            "{:<28} {:>9} {:>9} {:>9} {:>7} {:>8} {:>7} {:>10} ok",
            "kernel", "median ms", "min", "max", "MB", "GB/s", "× copy", "max rel err"
        );
        for r in &rows_out {
            println!(
                "{:<28} {:>9.3} {:>9.3} {:>9.3} {:>7.1} {:>8.2} {:>7} {:>10.2e} {}",
                r.kernel,
                r.median_ms,
                r.min_ms,
                r.max_ms,
                r.bytes as f64 / 1e6,
                r.gb_per_s,
                r.fraction_of_copy
                    .map_or("—".to_owned(), |f| format!("{f:.2}")),
                r.max_rel_error,
                if r.ok {
                    "yes"
                } else if r.kernel == "softmax/naive" {
                    "overflows"
                } else {
                    "NO"
                }
            );
        }
        for s in &skipped {
            println!("skipped {s}");
        }
        println!();
        if let Some(b) = &best_softmax {
            println!(
                "best softmax: {} at {:.2}× copy bandwidth",
                b.kernel,
                b.fraction_of_copy.unwrap_or(f64::NAN)
            );
            if let Some(t) = three_pass {
                println!(
                    "best softmax vs three-pass safe softmax: {:.2}× faster",
                    t / b.median_ms
                );
            }
        }
        if let Some(b) = &best_sum {
            println!(
                "best sum reduction: {} at {:.2}× copy bandwidth",
                b.kernel,
                b.fraction_of_copy.unwrap_or(f64::NAN)
            );
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn read_stdin_f32() -> Result<Vec<f32>, String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|err| format!("reading stdin: {err}"))?;
    if bytes.len() % 4 != 0 {
        return Err(format!(
            "stdin has {} bytes, not a whole number of f32 values",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

fn run_kernel(which: &KernelCommand) -> Result<ExitCode, String> {
    use dlsys_core::kernels::{Kernel, Problem, ReduceKind, ReduceOp, SoftmaxKind};
    let (kernel, problem, input) = match which {
        KernelCommand::Softmax { variant, cols } => {
            let kind = SoftmaxKind::ALL.into_iter().find(|k| k.id() == variant).ok_or_else(|| {
                format!("unknown softmax variant `{variant}`; use naive, three-pass, workgroup, online or subgroup")
            })?;
            if *cols == 0 {
                return Err("--cols must be at least 1".to_owned());
            }
            let input = read_stdin_f32()?;
            if input.is_empty() || input.len() % *cols as usize != 0 {
                return Err(format!(
                    "{} values on stdin are not whole rows of {cols}",
                    input.len()
                ));
            }
            let rows = (input.len() / *cols as usize) as u32;
            (Kernel::Softmax(kind), Problem { rows, cols: *cols }, input)
        }
        KernelCommand::Reduce { variant, op } => {
            let kind = ReduceKind::ALL.into_iter().find(|k| k.id() == variant).ok_or_else(|| {
                format!("unknown reduction `{variant}`; use divergent, strided, sequential, first-add, unrolled, grid-stride or subgroup")
            })?;
            let op = ReduceOp::by_name(op)?;
            let input = read_stdin_f32()?;
            if input.is_empty() {
                return Err("no values on stdin".to_owned());
            }
            let n =
                u32::try_from(input.len()).map_err(|_| "too many values on stdin".to_owned())?;
            (
                Kernel::Reduce(kind, op),
                Problem { rows: 1, cols: n },
                input,
            )
        }
    };
    let mut runner = kernel_runner()?;
    let spec = dlsys_shaders::RunSpec {
        kernel,
        problem,
        warmup: 0,
        trials: 1,
        instrumented: false,
    };
    let out = runner
        .start(spec, &input)
        .and_then(dlsys_shaders::Job::wait)?;
    match which {
        KernelCommand::Softmax { .. } => {
            use std::io::Write as _;
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(bytemuck::cast_slice(&out.output))
                .and_then(|()| stdout.flush())
                .map_err(|err| format!("writing stdout: {err}"))?;
        }
        KernelCommand::Reduce { .. } => {
            println!("{}", out.output.first().copied().unwrap_or(f32::NAN));
        }
    }
    Ok(ExitCode::SUCCESS)
}
