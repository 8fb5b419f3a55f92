//! `dlsys-lab quiz`: the mock test's draw for a seed, as text — the
//! questions (and their options), then the answers with explanations.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::exercise::AnswerKind;
use dlsys_core::exercise::quiz::{MAX_QUESTIONS, MAX_SEED, draw, tasks};

use super::output::{Report, emit, line};
use super::{CliError, t};

#[derive(Clone, Debug, clap::Args)]
pub struct QuizArgs {
    #[arg(long, default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=MAX_QUESTIONS as u64))]
    n: u64,
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_SEED))]
    seed: u64,
    #[arg(long)]
    pub json: bool,
}

/// The figures `quiz --help` names.
pub(super) fn help_values() -> Vec<(&'static str, String)> {
    vec![("questions", MAX_QUESTIONS.to_string())]
}

#[derive(serde::Serialize)]
struct QuizQuestion {
    lesson: String,
    exercise: String,
    variant_seed: u64,
    lesson_title: String,
    title: String,
    prompt: String,
    options: Vec<String>,
    answer: String,
    explanation: String,
}

#[derive(serde::Serialize)]
struct QuizReport {
    seed: u64,
    questions: Vec<QuizQuestion>,
}

pub fn run(args: &QuizArgs) -> Result<ExitCode, CliError> {
    let lang = super::lang();
    let lessons = dlsys_lessons::listed();
    let drawn = draw(&lessons, args.n as usize, args.seed);
    let questions = tasks(&lessons, &drawn, lang)
        .into_iter()
        .zip(drawn)
        .filter_map(|(found, q)| {
            let (task, lesson_title, title) = found?;
            let options = match &task.kind {
                AnswerKind::Choice { options } => options.clone(),
                _ => Vec::new(),
            };
            Some(QuizQuestion {
                lesson: q.lesson,
                exercise: q.exercise,
                variant_seed: q.seed,
                lesson_title,
                title,
                prompt: task.prompt,
                options,
                answer: task.reference,
                explanation: task.explanation,
            })
        })
        .collect();
    emit(
        &QuizReport {
            seed: args.seed,
            questions,
        },
        args.json,
    )
}

impl Report for QuizReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "quiz.heading",
            &[("n", &self.questions.len()), ("seed", &self.seed)],
        )?;
        for (i, q) in self.questions.iter().enumerate() {
            writeln!(out)?;
            writeln!(out, "{}. {} — {}", i + 1, q.lesson_title, q.title)?;
            writeln!(out, "{}", q.prompt)?;
            for (k, option) in q.options.iter().enumerate() {
                writeln!(out, "   {}) {option}", k + 1)?;
            }
        }
        writeln!(out)?;
        writeln!(out, "{}", t("quiz.answers"))?;
        for (i, q) in self.questions.iter().enumerate() {
            writeln!(out, "{}. {} — {}", i + 1, q.answer, q.explanation)?;
        }
        Ok(())
    }
}
