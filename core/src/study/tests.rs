use super::*;
use crate::exercise::quiz::{Question, Test};
use crate::exercise::{AnswerChecker, AnswerKind, Exercise, Task};
use crate::text::{Catalog, Lang};

fn task(_seed: u64, _lang: Lang) -> Task {
    Task {
        prompt: "2 + 2?".into(),
        kind: AnswerKind::Number,
        checker: AnswerChecker::Number {
            expected: 4.0,
            abs_tol: 0.0,
            rel_tol: 0.0,
        },
        hints: Vec::new(),
        explanation: String::new(),
        reference: "4".into(),
        mistakes: Vec::new(),
    }
}

fn title(_: Lang) -> String {
    String::new()
}

const THREE: &[Exercise] = &[
    Exercise {
        id: "a",
        title,
        generate: task,
    },
    Exercise {
        id: "b",
        title,
        generate: task,
    },
    Exercise {
        id: "c",
        title,
        generate: task,
    },
];

fn lessons() -> Vec<Listed> {
    let catalog: &'static Catalog = Box::leak(Box::default());
    ["one", "two", "three"]
        .into_iter()
        .map(|id| Listed {
            id,
            catalog,
            exercises: THREE,
        })
        .chain(std::iter::once(Listed {
            id: "pages",
            catalog,
            exercises: &[],
        }))
        .collect()
}

fn question(lesson: &str, exercise: &str) -> Question {
    Question {
        lesson: lesson.into(),
        exercise: exercise.into(),
        seed: 1,
    }
}

/// A marked paper of `results` ((lesson, exercise), right).
fn paper(results: &[((&str, &str), bool)], day: Option<Day>) -> Attempt {
    let questions: Vec<Question> = results.iter().map(|((l, e), _)| question(l, e)).collect();
    let marked: Vec<bool> = results.iter().map(|(_, r)| *r).collect();
    Attempt {
        right: marked.iter().filter(|r| **r).count(),
        total: marked.len(),
        day,
        paper: Some(Test {
            questions,
            marked: Some(marked),
            ..Test::default()
        }),
        ..Attempt::default()
    }
}

#[test]
fn every_figure_comes_from_the_record() {
    let lessons = lessons();
    let mut progress = Progress::default();
    let t = task(1, Lang::En);
    // An old save: solved before dates were kept.
    progress.entry("two", "a").solved = true;
    progress.submit("one", "a", &t, "4", Day(100));
    progress.submit("one", "b", &t, "5", Day(100));
    progress.submit("one", "b", &t, "4", Day(102));
    progress.visit("one", Day(102));
    let attempts = [
        paper(
            &[(("one", "a"), true), (("three", "c"), false)],
            Some(Day(102)),
        ),
        paper(&[(("one", "c"), false), (("three", "a"), true)], None),
    ];
    let mut review = Review::default();
    review.record(&[
        (question("three", "c"), false),
        (question("one", "a"), true),
    ]);
    let quiz = QuizRecord {
        review: Some(&review),
        attempts: &attempts,
    };
    let overview = Overview::of(&lessons, &progress, quiz);
    // Lessons without exercises have no row.
    assert_eq!(overview.rows.len(), 3);
    let one = overview.row("one").cloned();
    let one = one.expect("row");
    assert_eq!((one.solved, one.total, one.solved_undated), (2, 3, 0));
    assert_eq!(one.visit, Visit::On(Day(102)));
    assert_eq!((one.quiz_right, one.quiz_total), (1, 2));
    let two = overview.row("two").cloned().expect("row");
    assert_eq!(
        (two.solved, two.solved_undated, two.visit),
        (1, 1, Visit::Undated)
    );
    let three = overview.row("three").cloned().expect("row");
    assert_eq!(
        (three.visit, three.quiz_right, three.quiz_total, three.due),
        (Visit::Never, 1, 2, 1)
    );
    assert_eq!(overview.totals(), (3, 9));
    // One question due (box 0): review it first.
    assert_eq!(
        overview.suggestion,
        Suggestion::Review {
            lesson: "three",
            due: 1
        }
    );
    assert_eq!(overview.days, [(Day(100), 1), (Day(102), 1)]);
    // Tests taken: the review's count, never fewer than the papers kept.
    assert_eq!((overview.tests, overview.tests_undated), (2, 1));
    assert_eq!(overview.dated_since, Some(Day(100)));
}

#[test]
fn the_suggestion_goes_on_from_the_last_visit_and_ends_when_all_is_done() {
    let lessons = lessons();
    let t = task(1, Lang::En);
    let mut progress = Progress::default();
    let suggestion = |p: &Progress| Overview::of(&lessons, p, QuizRecord::default()).suggestion;
    assert_eq!(
        suggestion(&progress),
        Suggestion::Continue {
            lesson: "one",
            unsolved: 3
        }
    );
    progress.visit("two", Day(5));
    progress.visit("one", Day(4));
    assert_eq!(
        suggestion(&progress),
        Suggestion::Continue {
            lesson: "two",
            unsolved: 3
        }
    );
    for e in ["a", "b", "c"] {
        progress.submit("two", e, &t, "4", Day(6));
    }
    // From the last visited on, wrapping round.
    assert_eq!(
        suggestion(&progress),
        Suggestion::Continue {
            lesson: "three",
            unsolved: 3
        }
    );
    for (l, e) in [
        ("one", "a"),
        ("one", "b"),
        ("one", "c"),
        ("three", "a"),
        ("three", "b"),
        ("three", "c"),
    ] {
        progress.submit(l, e, &t, "4", Day(6));
    }
    assert_eq!(suggestion(&progress), Suggestion::AllDone);
}

#[test]
fn the_calendar_runs_monday_to_today() {
    let mut progress = Progress::default();
    progress.studied(Day(20_000));
    let overview = Overview::of(&lessons(), &progress, QuizRecord::default());
    let today = Day(20_002);
    let days = overview.calendar(today, 2);
    assert_eq!(days.first().map(|d| d.0.weekday()), Some(0));
    assert_eq!(days.last().map(|d| d.0), Some(today));
    assert_eq!(days.len() as u32, 7 + today.weekday() + 1);
    assert_eq!(days.iter().filter(|d| d.1.is_some()).count(), 1);
}
