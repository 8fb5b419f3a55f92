//! The mock test's draw and its review boxes, over the registered lessons'
//! own exercise generators (no second bank of questions): the app's "Mock
//! test" page and `dlsys-lab quiz` both call these with the registry's
//! [`Listed`] lessons, so they draw the same questions for a seed.

use std::collections::BTreeMap;

use super::{Exercise, Task};
use crate::study::Day;
use crate::text::{Catalog, Lang};
use rand::seq::SliceRandom as _;
use rand::{RngExt as _, SeedableRng as _};
use serde::{Deserialize, Serialize};

/// The most questions a test draws.
pub const MAX_QUESTIONS: usize = 50;

/// Seeds a draw takes: those `exercise::next_seed` steps through, the same
/// range in the app and `dlsys-lab quiz`.
pub const MAX_SEED: u64 = 999_999;

/// One drawn question: which exercise, and the seed of its variant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    pub lesson: String,
    pub exercise: String,
    pub seed: u64,
}

/// A lesson as the registry lists it: its id, its catalog (whose `title`
/// names it) and its exercises.
#[derive(Clone, Copy, Debug)]
pub struct Listed {
    pub id: &'static str,
    pub catalog: &'static Catalog,
    pub exercises: &'static [Exercise],
}

/// Every exercise of `lessons` with its lesson, in the registry's order.
fn pool(lessons: &[Listed]) -> Vec<(&Listed, Exercise)> {
    lessons
        .iter()
        .flat_map(|lesson| lesson.exercises.iter().map(move |e| (lesson, *e)))
        .collect()
}

/// `n` questions (at most [`MAX_QUESTIONS`], at most one per exercise)
/// drawn across every lesson, seeded: a shuffle of the pool, each with its
/// own variant seed.
pub fn draw(lessons: &[Listed], n: usize, seed: u64) -> Vec<Question> {
    let pool = pool(lessons);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x0071_7a11);
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.shuffle(&mut rng);
    order
        .into_iter()
        .take(n.min(MAX_QUESTIONS))
        .map(|i| Question {
            lesson: pool[i].0.id.to_owned(),
            exercise: pool[i].1.id.to_owned(),
            seed: rng.random_range(1..u64::MAX),
        })
        .collect()
}

/// Each question's task with its lesson's and exercise's titles, `None`
/// where the registry no longer has the exercise (a saved test from an
/// older version); the pool is built once.
pub fn tasks(
    lessons: &[Listed],
    questions: &[Question],
    lang: Lang,
) -> Vec<Option<(Task, String, String)>> {
    let pool = pool(lessons);
    questions
        .iter()
        .map(|q| {
            pool.iter()
                .find(|(l, e)| l.id == q.lesson && e.id == q.exercise)
                .map(|(l, e)| {
                    let title = l.catalog.get(lang, "title").to_owned();
                    ((e.generate)(q.seed, lang), title, (e.title)(lang))
                })
        })
        .collect()
}

/// A test in progress or just marked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Test {
    pub questions: Vec<Question>,
    pub answers: Vec<String>,
    /// A review of due exercises rather than a seeded draw.
    pub review: bool,
    pub seed: u64,
    /// Seconds spent before this session (the clock runs while it is open).
    pub elapsed_s: f64,
    /// The limit in seconds (0: none).
    pub limit_s: f64,
    /// Each answer right or wrong, once marked.
    pub marked: Option<Vec<bool>>,
}

/// A finished test, for the history.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Attempt {
    pub seed: u64,
    pub review: bool,
    pub right: usize,
    pub total: usize,
    pub seconds: f64,
    /// The day it was marked (`None`: marked before dates were kept).
    pub day: Option<Day>,
    /// The marked paper, to open again from the history (older saves have none).
    pub paper: Option<Test>,
}

/// The highest review box: answered right that many times in a row, an
/// exercise comes back every 2⁴ = 16 tests.
pub const TOP_BOX: u8 = 4;

/// Leitner boxes: an exercise answered wrong goes back to box 0 and is due
/// at the next test; answered right it moves up a box and is due again
/// after 2^box tests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Review {
    /// Tests finished so far.
    pub tests: u64,
    /// "lesson/exercise" → (box, the test it was last answered in).
    pub boxes: BTreeMap<String, (u8, u64)>,
}

fn key(q: &Question) -> String {
    format!("{}/{}", q.lesson, q.exercise)
}

impl Review {
    /// Forgets exercises the registry no longer has and clamps the boxes
    /// (a save from another version).
    pub fn prune(&mut self, lessons: &[Listed]) {
        let known: std::collections::BTreeSet<String> = pool(lessons)
            .iter()
            .map(|(l, e)| format!("{}/{}", l.id, e.id))
            .collect();
        self.boxes.retain(|k, _| known.contains(k));
        let tests = self.tests;
        for entry in self.boxes.values_mut() {
            entry.0 = entry.0.min(TOP_BOX);
            entry.1 = entry.1.min(tests);
        }
    }

    /// Records a finished test's answers.
    pub fn record(&mut self, results: &[(Question, bool)]) {
        self.tests += 1;
        for (q, right) in results {
            let entry = self.boxes.entry(key(q)).or_insert((0, self.tests));
            entry.0 = if *right {
                (entry.0 + 1).min(TOP_BOX)
            } else {
                0
            };
            entry.1 = self.tests;
        }
    }

    /// Whether the exercise is due: in box b, 2^b tests after it was last
    /// answered (box 0: at the very next test).
    fn is_due(&self, box_and_test: (u8, u64)) -> bool {
        let (b, last) = box_and_test;
        self.tests.saturating_sub(last) + 1 >= 1u64 << b.min(TOP_BOX)
    }

    /// The exercises due now, by lesson and exercise id.
    pub fn due(&self) -> Vec<(String, String)> {
        self.boxes
            .iter()
            .filter(|(_, v)| self.is_due(**v))
            .filter_map(|(k, _)| k.split_once('/').map(|(l, e)| (l.to_owned(), e.to_owned())))
            .collect()
    }

    /// A review: the due exercises (at most `n`, shuffled), each with a
    /// variant it did not have in the last review.
    pub fn questions(&self, n: usize, seed: u64) -> Vec<Question> {
        // The number of tests taken in the seed: each review, new variants.
        let mix = seed ^ 0x00e7_1e77 ^ self.tests.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut rng = rand::rngs::StdRng::seed_from_u64(mix);
        let mut due = self.due();
        due.shuffle(&mut rng);
        due.into_iter()
            .take(n.min(MAX_QUESTIONS))
            .map(|(lesson, exercise)| Question {
                lesson,
                exercise,
                seed: rng.random_range(1..u64::MAX),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_answers_come_back_sooner() {
        let q = |e: &str| Question {
            lesson: "l".into(),
            exercise: e.into(),
            seed: 1,
        };
        let mut r = Review::default();
        r.record(&[(q("wrong"), false), (q("right"), true)]);
        let due = |r: &Review| r.due().into_iter().map(|(_, e)| e).collect::<Vec<_>>();
        // Box 0 is due at once; box 1 after two tests.
        assert_eq!(due(&r), vec!["wrong"]);
        r.record(&[]);
        assert_eq!(due(&r), vec!["right", "wrong"]);
        r.record(&[(q("right"), true), (q("wrong"), true)]);
        // Box 2 waits four tests, box 1 two.
        assert!(due(&r).is_empty());
        r.record(&[]);
        assert_eq!(due(&r), vec!["wrong"]);
        r.record(&[(q("right"), false)]);
        assert_eq!(due(&r), vec!["right", "wrong"]);
        assert_eq!(r.questions(1, 5).len(), 1);
    }
}
