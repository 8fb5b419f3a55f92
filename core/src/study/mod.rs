//! The learner's study record summed up: per lesson, exercises solved,
//! the last visit, the mock test's accuracy on its questions and the
//! questions due for review; a suggested next step; the study days. Every
//! figure is computed here from the saved progress and the mock test's
//! papers (nothing is stored twice), for the "Progress" page and
//! `dlsys-lab progress` alike.

mod day;

pub use day::Day;

use std::collections::BTreeMap;

use crate::exercise::Progress;
use crate::exercise::quiz::{Attempt, Listed, Review};

/// The mock test's part of the record: its review boxes and past papers.
#[derive(Clone, Copy, Debug, Default)]
pub struct QuizRecord<'a> {
    pub review: Option<&'a Review>,
    pub attempts: &'a [Attempt],
}

/// When a lesson was last opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visit {
    Never,
    /// Opened, or worked on, before dates were kept.
    Undated,
    On(Day),
}

/// One lesson's line of the overview.
#[derive(Clone, Debug, PartialEq)]
pub struct LessonRow {
    pub id: &'static str,
    pub solved: usize,
    pub total: usize,
    /// Solved exercises whose day is not known (solved before dates were kept).
    pub solved_undated: usize,
    pub visit: Visit,
    /// Mock-test questions from this lesson answered right, of those marked.
    pub quiz_right: usize,
    pub quiz_total: usize,
    /// Its exercises due in the mock test's review.
    pub due: usize,
}

impl LessonRow {
    /// Exercises not solved yet.
    pub fn unsolved(&self) -> usize {
        self.total - self.solved
    }
}

/// What to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suggestion {
    /// Review the lesson with the most questions due (the mock test's review).
    Review { lesson: &'static str, due: usize },
    /// Go on with the first lesson, in order from the one last visited, that
    /// has exercises left.
    Continue {
        lesson: &'static str,
        unsolved: usize,
    },
    /// Every exercise solved and nothing due.
    AllDone,
}

/// The whole overview.
#[derive(Clone, Debug, PartialEq)]
pub struct Overview {
    pub rows: Vec<LessonRow>,
    pub suggestion: Suggestion,
    /// Each study day with the exercises solved that day, oldest first.
    pub days: Vec<(Day, usize)>,
    /// Since when dates are kept (`None`: nothing dated yet).
    pub dated_since: Option<Day>,
    /// Mock tests taken, and how many of the papers kept were not dated.
    pub tests: usize,
    pub tests_undated: usize,
}

impl Overview {
    /// The overview of `progress` and `quiz` over the lessons that have
    /// exercises, in the registry's order.
    pub fn of(lessons: &[Listed], progress: &Progress, quiz: QuizRecord<'_>) -> Self {
        let mut marked: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for paper in quiz.attempts.iter().filter_map(|a| a.paper.as_ref()) {
            let Some(verdicts) = &paper.marked else {
                continue;
            };
            for (question, right) in paper.questions.iter().zip(verdicts) {
                let entry = marked.entry(question.lesson.as_str()).or_default();
                entry.0 += usize::from(*right);
                entry.1 += 1;
            }
        }
        let due = quiz.review.map(Review::due).unwrap_or_default();
        let rows: Vec<LessonRow> = lessons
            .iter()
            .filter(|l| !l.exercises.is_empty())
            .map(|lesson| {
                let states: Vec<_> = lesson
                    .exercises
                    .iter()
                    .filter_map(|e| progress.get(lesson.id, e.id))
                    .collect();
                let solved = states.iter().filter(|p| p.solved).count();
                // A page makes an entry when it shows an exercise: opened.
                let opened = !states.is_empty();
                let visit = match progress.visits.get(lesson.id) {
                    Some(day) => Visit::On(*day),
                    None if opened => Visit::Undated,
                    None => Visit::Never,
                };
                let (quiz_right, quiz_total) = marked.get(lesson.id).copied().unwrap_or_default();
                LessonRow {
                    id: lesson.id,
                    solved,
                    total: lesson.exercises.len(),
                    solved_undated: states
                        .iter()
                        .filter(|p| p.solved && p.solved_on.is_none())
                        .count(),
                    visit,
                    quiz_right,
                    quiz_total,
                    due: due.iter().filter(|(l, _)| l == lesson.id).count(),
                }
            })
            .collect();
        let suggestion = suggest(&rows, progress);
        let mut solves: BTreeMap<Day, usize> = progress.days.iter().map(|d| (*d, 0)).collect();
        for day in progress
            .exercises
            .values()
            .filter(|p| p.solved)
            .filter_map(|p| p.solved_on)
        {
            *solves.entry(day).or_default() += 1;
        }
        for day in quiz.attempts.iter().filter_map(|a| a.day) {
            solves.entry(day).or_default();
        }
        Self {
            rows,
            suggestion,
            days: solves.into_iter().collect(),
            dated_since: progress.dated_since,
            // Every test taken: the papers kept are the last few only.
            tests: quiz
                .review
                .map_or(0, |r| r.tests as usize)
                .max(quiz.attempts.len()),
            tests_undated: quiz.attempts.iter().filter(|a| a.day.is_none()).count(),
        }
    }

    /// The lesson's row, if it has exercises.
    pub fn row(&self, id: &str) -> Option<&LessonRow> {
        self.rows.iter().find(|r| r.id == id)
    }

    /// Exercises solved and in all.
    pub fn totals(&self) -> (usize, usize) {
        self.rows
            .iter()
            .fold((0, 0), |(s, t), r| (s + r.solved, t + r.total))
    }

    /// Study days in the `weeks` weeks up to `today` (today's week
    /// included, weeks starting on Monday): each day with its solves, `None`
    /// where nothing was studied, Monday first; the last week stops at today.
    pub fn calendar(&self, today: Day, weeks: u32) -> Vec<(Day, Option<usize>)> {
        let first = today.minus(today.weekday() + 7 * weeks.saturating_sub(1));
        let studied: BTreeMap<Day, usize> = self.days.iter().copied().collect();
        (first.0..=today.0)
            .map(Day)
            .map(|d| (d, studied.get(&d).copied()))
            .collect()
    }
}

/// What importing a progress file would change, shown before it is applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportPreview {
    /// The day the file was written (`None`: not said).
    pub exported_on: Option<Day>,
    pub solved_here: usize,
    pub solved_in_file: usize,
    /// Solved after a merge (the union; a replace leaves the file's).
    pub solved_after_merge: usize,
    pub study_days_in_file: usize,
    /// Pages whose own state (a mock test's papers, a kernel you wrote) the file holds.
    pub pages_in_file: usize,
}

impl ImportPreview {
    pub fn of(
        here: &Progress,
        file: &Progress,
        exported_on: Option<Day>,
        pages_in_file: usize,
    ) -> Self {
        let solved = |p: &Progress| p.exercises.values().filter(|e| e.solved).count();
        let mut merged = here.clone();
        merged.merge(file);
        Self {
            exported_on,
            solved_here: solved(here),
            solved_in_file: solved(file),
            solved_after_merge: solved(&merged),
            study_days_in_file: file.days.len(),
            pages_in_file,
        }
    }
}

/// Review first (the lesson with the most due, the first such in order);
/// else the first lesson with exercises left, from the one last visited on.
fn suggest(rows: &[LessonRow], progress: &Progress) -> Suggestion {
    let most_due = rows
        .iter()
        .rev()
        .max_by_key(|r| r.due)
        .filter(|r| r.due > 0);
    if let Some(row) = most_due {
        return Suggestion::Review {
            lesson: row.id,
            due: row.due,
        };
    }
    let last = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| progress.visits.get(r.id).map(|d| (*d, i)))
        .max()
        .map_or(0, |(_, i)| i);
    (0..rows.len())
        .map(|k| &rows[(last + k) % rows.len()])
        .find(|r| r.unsolved() > 0)
        .map_or(Suggestion::AllDone, |row| Suggestion::Continue {
            lesson: row.id,
            unsolved: row.unsolved(),
        })
}

#[cfg(test)]
mod tests;
