//! `dlsys-lab check`: every exercise's checker against its reference answer
//! and its known-wrong answers.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::exercise::{FIRST_SEED, next_seed};
use dlsys_core::exercise::{SelfCheck, self_check};
use dlsys_shaders::kernel_track::{self as kernel_exercises, KernelChecker};

use super::CliError;
use super::output::{Report, emit, line};
use super::{t, tf};

#[derive(Clone, Debug, clap::Args)]
pub struct CheckArgs {
    #[arg(long)]
    pub json: bool,
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub seeds: u32,
}

#[derive(serde::Serialize)]
struct CheckReport {
    checked: usize,
    failed: usize,
    results: Vec<LessonCheck>,
    code_exercises: Vec<CodeCheck>,
    /// Why a code track was not checked (no GPU adapter for the WGSL one).
    code_not_checked: Option<String>,
}

/// One lesson exercise on one seed.
#[derive(serde::Serialize)]
struct LessonCheck {
    lesson: String,
    #[serde(flatten)]
    result: SelfCheck,
    ok: bool,
}

pub fn run(args: &CheckArgs) -> Result<ExitCode, CliError> {
    let results: Vec<LessonCheck> = self_check_all(args.seeds)
        .into_iter()
        .map(|(lesson, result)| LessonCheck {
            lesson,
            ok: result.ok(),
            result,
        })
        .collect();
    let (code, code_not_checked) = code_exercise_checks();
    let failed = results.iter().filter(|r| !r.ok).count() + code.iter().filter(|r| !r.ok).count();
    let report = CheckReport {
        checked: results.len() + code.len(),
        failed,
        results,
        code_exercises: code,
        code_not_checked,
    };
    emit(&report, args.json)
}

impl Report for CheckReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        for row in &self.results {
            let status = t(if row.ok { "check.ok" } else { "check.fail" });
            let seed = tf("check.seed", &[("seed", &row.result.seed)]);
            writeln!(
                out,
                "{status} {}/{} {seed}",
                row.lesson, row.result.exercise_id
            )?;
            for problem in &row.result.problems {
                writeln!(out, "       {problem}")?;
            }
        }
        for row in &self.code_exercises {
            let status = t(if row.ok { "check.ok" } else { "check.fail" });
            let solution = super::lang::catalog_text(&format!("check.solution.{}", row.solution));
            writeln!(out, "{status} {}/{} {solution}", row.track, row.exercise)?;
            if !row.ok
                && let Some(message) = &row.message
            {
                writeln!(out, "       {message}")?;
            }
        }
        if let Some(why) = &self.code_not_checked {
            line(out, "check.note", &[("why", why)])?;
        }
        line(
            out,
            "check.total",
            &[("checked", &self.checked), ("failed", &self.failed)],
        )
    }

    fn ok(&self) -> bool {
        self.failed == 0
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
    let mut checker = match KernelChecker::request_blocking() {
        Ok(checker) => checker,
        Err(err) => {
            return (
                rows,
                Some(tf("check.not_checked", &[("error", &super::say(&err))])),
            );
        }
    };
    for ex in &kernel_exercises::EXERCISES {
        let verdict = checker.check_blocking(ex, &ex.reference());
        rows.push(CodeCheck {
            track: "wgsl",
            exercise: ex.id,
            solution: "reference",
            expect: None,
            ok: verdict.passed(),
            message: (!verdict.passed()).then(|| super::say(&verdict)),
        });
        for wrong in ex.wrong {
            let verdict = checker.check_blocking(ex, &ex.wrong_source(wrong));
            let message = super::say(&verdict);
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
