//! `dlsys-lab wgsl-exercise`: list the WGSL exercises, print a template, or
//! check a kernel (and race it against the built-in ones).

use dlsys_core::names::Named as _;
use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_shaders::kernel_track::{
    self as kernel_exercises, KernelChecker, KernelRace, KernelVerdict, RaceError,
};

use super::CliError;
use super::output::{Report, emit, line};
use super::{t, tf};

#[derive(Clone, Debug, clap::Args)]
pub struct WgslExerciseArgs {
    pub id: Option<String>,
    pub file: Option<std::path::PathBuf>,
    #[arg(long)]
    pub json: bool,
    #[arg(long)]
    pub no_race: bool,
}

/// Without an id: every exercise (JSON: an array).
#[derive(serde::Serialize)]
#[serde(transparent)]
struct Listing(Vec<Listed>);

#[derive(serde::Serialize)]
struct Listed {
    id: &'static str,
    title: String,
}

/// With an id and no file: the template to start from.
#[derive(serde::Serialize)]
struct Template {
    exercise: &'static str,
    template: String,
}

/// With an id and a file: the checker's verdict and, after a pass, the race.
#[derive(serde::Serialize)]
struct Checked {
    exercise: &'static str,
    passed: bool,
    message: String,
    verdict: KernelVerdict,
    race: Option<Result<KernelRace, RaceError>>,
}

pub fn run(args: &WgslExerciseArgs) -> Result<ExitCode, CliError> {
    let Some(id) = args.id.as_deref() else {
        let listing = kernel_exercises::EXERCISES
            .iter()
            .map(|ex| Listed {
                id: ex.id,
                title: ex.name(super::lang()),
            })
            .collect();
        return emit(&Listing(listing), args.json);
    };
    let ex = kernel_exercises::exercise(id).ok_or_else(|| {
        let ids: Vec<&str> = kernel_exercises::EXERCISES.iter().map(|e| e.id).collect();
        tf("wgsl.unknown", &[("id", &id), ("ids", &ids.join(", "))])
    })?;
    let Some(file) = args.file.as_deref() else {
        let template = Template {
            exercise: ex.id,
            template: ex.template(super::lang()),
        };
        return emit(&template, args.json);
    };
    let source = if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| tf("io.stdin", &[("error", &e)]))?;
        text
    } else {
        std::fs::read_to_string(file)
            .map_err(|e| tf("io.file", &[("file", &file.display()), ("error", &e)]))?
    };
    let (verdict, race) = check(ex, &source, !args.no_race)?;
    let report = Checked {
        exercise: ex.id,
        passed: verdict.passed(),
        message: super::say(&verdict),
        verdict,
        race,
    };
    emit(&report, args.json)
}

/// The verdict on `source` and, when it passed and `race` is asked for, the race.
fn check(
    ex: &'static kernel_exercises::KernelExercise,
    source: &str,
    race: bool,
) -> Result<(KernelVerdict, Option<Result<KernelRace, RaceError>>), String> {
    // naga's diagnostics need no GPU.
    if let Err(diagnostic) = kernel_exercises::validate(ex, source) {
        return Ok((KernelVerdict::Invalid(diagnostic), None));
    }
    let mut checker = KernelChecker::request_blocking()
        .map_err(|e| tf("wgsl.needs_gpu", &[("error", &super::say(&e))]))?;
    let verdict = checker.check_blocking(ex, source);
    let raced = match checker.gpu() {
        Some(gpu) if race && verdict.passed() => Some(kernel_exercises::race_blocking(
            gpu,
            ex,
            source,
            5,
            checker.budget,
        )),
        _ => None,
    };
    if raced
        .as_ref()
        .is_some_and(|r| r.as_ref().is_err_and(|e| e.abandon_device))
    {
        // A kernel still runs there: dropping the device would wait for it.
        checker.abandon();
    }
    Ok((verdict, raced))
}

impl Report for Listing {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        for ex in &self.0 {
            writeln!(out, "{} {}", super::lang::pad(ex.id, 16), ex.title)?;
        }
        Ok(())
    }
}

impl Report for Template {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        write!(out, "{}", self.template)
    }
}

impl Report for Checked {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}: {}", self.exercise, self.message)?;
        match &self.race {
            Some(Ok(race)) => {
                let lang = super::lang();
                line(
                    out,
                    "wgsl.race",
                    &[
                        ("problem", &race.problem.say(lang)),
                        ("trials", &race.trials),
                        ("timer", &race.timer_kind.name(lang)),
                    ],
                )?;
                for (i, lap) in race.laps.iter().enumerate() {
                    let name = if lap.kernel == "yours" {
                        t("wgsl.yours")
                    } else {
                        &lap.kernel
                    };
                    writeln!(
                        out,
                        "  {:>2}. {} {:>9.3} ms {:>8.2} GB/s",
                        i + 1,
                        super::lang::pad(name, 26),
                        lap.median_ns / 1e6,
                        lap.gb_per_s
                    )?;
                }
                line(
                    out,
                    "wgsl.rank",
                    &[("rank", &race.rank()), ("count", &race.laps.len())],
                )
            }
            Some(Err(err)) => line(out, "wgsl.timing_failed", &[("error", err)]),
            None => Ok(()),
        }
    }

    fn ok(&self) -> bool {
        self.passed
    }
}
