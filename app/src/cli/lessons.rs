//! `dlsys-lab lessons`: the lesson registry.

use std::io::{self, Write};
use std::process::ExitCode;

use super::CliError;
use super::output::{Report, emit, line};

#[derive(Clone, Debug, clap::Args)]
pub struct LessonsArgs {
    #[arg(long)]
    pub json: bool,
}

/// Every lesson, in the registry's order (JSON: an array).
#[derive(serde::Serialize)]
#[serde(transparent)]
struct LessonsReport(Vec<LessonRow>);

#[derive(serde::Serialize)]
struct LessonRow {
    id: &'static str,
    title: String,
    exercises: Vec<&'static str>,
}

pub fn run(args: &LessonsArgs) -> Result<ExitCode, CliError> {
    let lang = super::lang();
    let report = LessonsReport(
        dlsys_lessons::all()
            .iter()
            .map(|lesson| LessonRow {
                id: lesson.id(),
                title: lesson.title(lang),
                exercises: lesson.exercises().iter().map(|e| e.id).collect(),
            })
            .collect(),
    );
    emit(&report, args.json)
}

impl Report for LessonsReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        for lesson in &self.0 {
            line(
                out,
                "lessons.row",
                &[
                    ("id", &super::lang::pad(lesson.id, 16)),
                    ("title", &lesson.title),
                    ("count", &lesson.exercises.len()),
                ],
            )?;
        }
        Ok(())
    }
}
