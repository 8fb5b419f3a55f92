//! The command-line face: the same cores as the app, headless.
//!
//! One file per subcommand: each parses its arguments (fixed sets through
//! [`choice`], so `--help` lists the real ones), computes one typed report
//! and prints it with [`output::emit`], as text or as JSON from the same value.

mod allreduce;
mod bench;
mod bench_attention;
mod bench_search;
mod check;
mod choice;
mod compile;
mod compile_fused;
mod compile_select;
mod float;
mod given;
mod gpu_info;
mod gradcheck;
mod infer;
mod infer_roofline;
mod infer_spec;
mod kernel;
mod kernel_attention;
mod lang;
mod lessons;
mod memory;
pub mod output;
mod parallel;
mod parallel_plan;
mod parse_error;
mod pipeline;
mod progress;
mod quant;
mod quant_fp8;
mod quant_models;
mod quiz;
mod train;
mod train_dp;
mod train_models;
mod wgsl_exercise;

use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use dlsys_core::text::Lang;

pub use allreduce::AllreduceArgs;
pub use bench::{BenchWhat, KernelsArgs};
pub use check::{CheckArgs, CodeCheck, code_exercise_checks, self_check_all};
pub use compile::CompileArgs;
pub use float::FloatArgs;
pub use gpu_info::GpuInfoArgs;
pub use gradcheck::GradcheckArgs;
pub use infer::InferCommand;
pub use kernel::KernelCommand;
pub use lang::{identifiers, lang, t, tf};
pub use lessons::LessonsArgs;
pub use memory::MemoryArgs;
pub use parallel::ParallelCommand;
pub use pipeline::PipelineArgs;
pub use progress::ProgressCommand;
pub use quant::QuantArgs;
pub use quiz::QuizArgs;
pub use train::TrainArgs;
pub use wgsl_exercise::WgslExerciseArgs;

#[derive(Debug, Parser)]
// Every help text (the commands', the arguments', the headings) comes from
// `assets/cli.ron` in the run's language: see `lang::localize`.
#[command(name = "dlsys-lab", version)]
pub struct Cli {
    #[arg(long, value_name = "ID")]
    pub lesson: Option<String>,

    #[arg(
        long,
        global = true,
        value_name = "LANG",
        value_parser = choice::choice(&Lang::ALL, |l| l.id()),
    )]
    pub lang: Option<Lang>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Clone, Debug, Subcommand)]
pub enum Command {
    GpuInfo(GpuInfoArgs),
    Check(CheckArgs),
    Float(FloatArgs),
    Gradcheck(GradcheckArgs),
    Train(Box<TrainArgs>),
    Memory(MemoryArgs),
    Allreduce(AllreduceArgs),
    Pipeline(PipelineArgs),
    Quant(Box<QuantArgs>),
    Compile(CompileArgs),
    Infer {
        #[command(subcommand)]
        what: InferCommand,
    },
    Parallel {
        #[command(subcommand)]
        what: ParallelCommand,
    },
    Quiz(QuizArgs),
    Progress {
        #[command(subcommand)]
        what: ProgressCommand,
    },
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    #[command(name = "kernel")]
    RunKernel {
        #[command(subcommand)]
        which: KernelCommand,
    },
    Lessons(LessonsArgs),
    WgslExercise(WgslExerciseArgs),
    Exercises {
        #[arg(long)]
        json: bool,
        #[arg(long, value_name = "DIR")]
        root: Option<std::path::PathBuf>,
    },
}

impl Command {
    /// Whether the command was asked for JSON (its errors are then JSON too).
    pub fn json(&self) -> bool {
        match self {
            Self::GpuInfo(args) => args.json,
            Self::Check(args) => args.json,
            Self::Float(args) => args.json,
            Self::Gradcheck(args) => args.json,
            Self::Train(args) => args.json,
            Self::Memory(args) => args.json,
            Self::Allreduce(args) => args.json,
            Self::Pipeline(args) => args.json,
            Self::Quant(args) => args.json,
            Self::Compile(args) => args.json,
            Self::Infer { what } => what.json(),
            Self::Parallel { what } => what.json(),
            Self::Quiz(args) => args.json,
            Self::Progress { what } => what.json(),
            Self::Bench {
                what: BenchWhat::Kernels(args),
            } => args.json,
            Self::Bench {
                what: BenchWhat::Search(args),
            } => args.json(),
            Self::RunKernel { .. } => false,
            Self::Lessons(args) => args.json,
            Self::WgslExercise(args) => args.json,
            Self::Exercises { json, .. } => *json,
        }
    }
}

/// Why a subcommand stopped early.
#[derive(Debug)]
pub enum CliError {
    /// One line for stderr (and, under `--json`, `{"error": …}` on stdout).
    Message(String),
    /// Whoever read stdout went away (`… | head`): stop quietly.
    ClosedPipe,
}

impl From<String> for CliError {
    fn from(message: String) -> Self {
        Self::Message(message)
    }
}

impl From<&str> for CliError {
    fn from(message: &str) -> Self {
        Self::Message(message.to_owned())
    }
}

impl From<std::io::Error> for CliError {
    fn from(err: std::io::Error) -> Self {
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            Self::ClosedPipe
        } else {
            Self::Message(tf("io.write", &[("error", &err)]))
        }
    }
}

/// An error's message in this run's language.
pub fn say(err: &(impl dlsys_core::errors::Localized + ?Sized)) -> String {
    err.message(lang())
}

/// Runs a subcommand; an error is one line for stderr.
pub fn run(command: Command) -> Result<ExitCode, CliError> {
    match command {
        Command::GpuInfo(args) => gpu_info::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Float(args) => float::run(&args),
        Command::Gradcheck(args) => gradcheck::run(&args),
        Command::Train(args) => train::run(&args),
        Command::Memory(args) => memory::run(&args),
        Command::Allreduce(args) => allreduce::run_args(&args),
        Command::Pipeline(args) => pipeline::run(&args),
        Command::Quant(args) => quant::run(&args),
        Command::Compile(args) => compile::run(&args),
        Command::Infer { what } => infer::run(&what),
        Command::Parallel { what } => parallel::run(&what),
        Command::Quiz(args) => quiz::run(&args),
        Command::Progress { what } => progress::run(&what),
        Command::Bench {
            what: BenchWhat::Kernels(args),
        } => bench::kernels(&args),
        Command::Bench {
            what: BenchWhat::Search(args),
        } => bench_search::run(&args),
        Command::RunKernel { which } => kernel::run(&which),
        Command::Lessons(args) => lessons::run(&args),
        Command::WgslExercise(args) => wgsl_exercise::run(&args),
        Command::Exercises { json, root } => crate::track::run(json, root.as_deref()),
    }
}

/// Parses the command line. Help and version print and exit as usual; a bad
/// command line is one line on stderr (and, under `--json`, `{"error": …}`
/// on stdout), like every other error of the CLI.
pub fn parse() -> Result<Cli, ExitCode> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let lang = lang::choose(&args);
    let command = lang::localize(Cli::command(), lang);
    let parsed = command
        .try_get_matches_from(&args)
        .and_then(|matches| Cli::from_arg_matches(&matches));
    // `--lesson` opens the app, so it cannot go with a subcommand (clap's
    // `args_conflicts_with_subcommands` would refuse the global `--lang` too).
    let parsed = parsed.and_then(|cli| match (&cli.lesson, &cli.command) {
        (Some(_), Some(_)) => Err(clap::Error::raw(
            clap::error::ErrorKind::ArgumentConflict,
            format!("{}\n", t("lesson_with_subcommand")),
        )),
        _ => Ok(cli),
    });
    parsed.map_err(|err| {
        use clap::error::ErrorKind;
        if !err.use_stderr() || err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            err.exit();
        }
        let json = std::env::args_os().any(|arg| arg == "--json");
        report_error(&parse_error::message(&err), json);
        ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2))
    })
}

/// Prints an error: one line on stderr, and under `--json` also as JSON on stdout.
pub fn report_error(message: &str, json: bool) {
    if json {
        println!("{}", output::error_json(message));
    }
    eprintln!("{}", tf("cli.error", &[("message", &message)]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
