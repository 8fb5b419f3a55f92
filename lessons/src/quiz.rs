//! The mock test's draw and its review boxes, over the registered lessons'
//! own exercise generators (no second bank of questions): the app's "Mock
//! test" page and `dlsys-lab quiz` draw the same questions for a seed.

use std::collections::BTreeMap;

use dlsys_core::exercise::{Exercise, Task};
use dlsys_core::text::Lang;
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

/// Every registered exercise with its lesson's id and titles (English,
/// Chinese), in the registry's order.
pub fn pool() -> Vec<(&'static str, String, String, Exercise)> {
    crate::registered()
        .iter()
        .flat_map(|lesson| {
            let (id, en, zh) = (lesson.id(), lesson.title(Lang::En), lesson.title(Lang::Zh));
            lesson
                .exercises()
                .iter()
                .map(move |e| (id, en.clone(), zh.clone(), *e))
        })
        .collect()
}

/// `n` questions (at most [`MAX_QUESTIONS`], at most one per exercise)
/// drawn across every lesson, seeded: a shuffle of the pool, each with its
/// own variant seed.
pub fn draw(n: usize, seed: u64) -> Vec<Question> {
    let pool = pool();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x0071_7a11);
    let mut order: Vec<usize> = (0..pool.len()).collect();
    order.shuffle(&mut rng);
    order
        .into_iter()
        .take(n.min(MAX_QUESTIONS))
        .map(|i| Question {
            lesson: pool[i].0.to_owned(),
            exercise: pool[i].3.id.to_owned(),
            seed: rng.random_range(1..u64::MAX),
        })
        .collect()
}

/// Each question's task with its lesson's and exercise's titles, `None`
/// where the registry no longer has the exercise (a saved test from an
/// older version); the pool is built once.
pub fn tasks(questions: &[Question], lang: Lang) -> Vec<Option<(Task, String, String)>> {
    let pool = pool();
    questions
        .iter()
        .map(|q| {
            pool.iter()
                .find(|p| p.0 == q.lesson && p.3.id == q.exercise)
                .map(|(_, en, zh, e)| {
                    let title = if lang == Lang::Zh {
                        zh.clone()
                    } else {
                        en.clone()
                    };
                    ((e.generate)(q.seed, lang), title, (e.title)(lang))
                })
        })
        .collect()
}

/// One question's task (see [`tasks`]).
pub fn task(q: &Question, lang: Lang) -> Option<(Task, String, String)> {
    tasks(std::slice::from_ref(q), lang).pop().flatten()
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
    pub fn prune(&mut self) {
        let known: std::collections::BTreeSet<String> = pool()
            .iter()
            .map(|p| format!("{}/{}", p.0, p.3.id))
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
    fn a_draw_is_seeded_spans_the_lessons_and_never_repeats_an_exercise() {
        let a = draw(12, 7);
        assert_eq!(a, draw(12, 7));
        assert_ne!(a, draw(12, 8));
        assert_eq!(a.len(), 12);
        let ids: std::collections::BTreeSet<_> = a.iter().map(key).collect();
        assert_eq!(ids.len(), 12);
        let lessons: std::collections::BTreeSet<_> =
            draw(20, 3).into_iter().map(|q| q.lesson).collect();
        assert!(lessons.len() >= 4, "{lessons:?}");
        for q in &a {
            assert!(task(q, Lang::Zh).is_some(), "{q:?}");
        }
        assert_eq!(draw(1000, 1).len(), MAX_QUESTIONS.min(pool().len()));
        assert!(
            task(
                &Question {
                    lesson: "gone".into(),
                    exercise: "x".into(),
                    seed: 1
                },
                Lang::En
            )
            .is_none()
        );
    }

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
