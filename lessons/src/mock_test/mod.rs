//! "Mock test": N questions drawn (seeded) from every lesson's own exercise
//! generators, as a written test — timed, no hints — then the score, each
//! question's verdict, answer and explanation, and a way back to its lesson.
//! Questions answered wrong come back sooner (Leitner boxes, in
//! `dlsys_core::exercise::quiz`); past attempts are kept.

mod view;

use dlsys_core::exercise::Task;
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};
use web_time::Instant;

use dlsys_core::exercise::quiz::{self, Attempt, Listed, Question, Review, Test};
use crate::{Env, Lesson};

crate::lesson_text!("mock_test");

/// Attempts kept.
const KEEP_ATTEMPTS: usize = 20;

/// The clock is saved to the nearest 10 s, so a running test does not
/// rewrite the save file every frame.
const SAVED_CLOCK_S: f64 = 10.0;

/// What survives a restart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Saved {
    pub questions: usize,
    pub seed: u64,
    pub minutes: u32,
    pub review: Review,
    pub attempts: Vec<Attempt>,
    pub current: Option<Test>,
}

impl Default for Saved {
    fn default() -> Self {
        Self {
            questions: 10,
            seed: 1,
            minutes: 15,
            review: Review::default(),
            attempts: Vec::new(),
            current: None,
        }
    }
}

/// The current test's tasks, generated once per test and language.
struct Tasks {
    lang: Lang,
    questions: Vec<Question>,
    /// Task, lesson title, exercise title (`None`: no longer registered).
    tasks: Vec<Option<(Task, String, String)>>,
}

#[derive(Default)]
pub struct MockTest {
    /// The registry's lessons, whose exercises the tests draw from.
    lessons: Vec<Listed>,
    saved: Saved,
    tasks: Option<Tasks>,
    /// When the clock last started for the current test.
    running_since: Option<Instant>,
    open_request: Option<String>,
    save_request: bool,
    /// Abandon was clicked once: ask before throwing the paper away.
    confirm_abandon: bool,
    /// Submit was clicked with blank answers: ask before marking them wrong.
    confirm_blank: bool,
    /// The paper was just marked: scroll its score into view (Submit sits
    /// at the bottom of a long page).
    show_score: bool,
    /// The self-test's verdict: a drawn paper's reference answers, marked.
    self_test: Option<crate::SelfTestResult>,
}

impl MockTest {
    /// Seconds on the current test's clock.
    fn elapsed(&self) -> f64 {
        let before = self.saved.current.as_ref().map_or(0.0, |t| t.elapsed_s);
        before + self.running_since.map_or(0.0, |s| s.elapsed().as_secs_f64())
    }

    fn start(&mut self, questions: Vec<Question>, review: bool) {
        let n = questions.len();
        if n == 0 {
            return;
        }
        self.saved.current = Some(Test {
            questions,
            answers: vec![String::new(); n],
            review,
            seed: self.saved.seed,
            elapsed_s: 0.0,
            limit_s: f64::from(self.saved.minutes) * 60.0,
            marked: None,
        });
        self.running_since = Some(Instant::now());
        self.save_request = true;
        self.confirm_abandon = false;
        self.confirm_blank = false;
    }

    /// The tasks of the current test in `lang`, generated if need be.
    fn tasks(&mut self, lang: Lang) -> &[Option<(Task, String, String)>] {
        let questions = self.saved.current.as_ref().map(|t| t.questions.clone()).unwrap_or_default();
        let stale = self.tasks.as_ref().is_none_or(|c| c.lang != lang || c.questions != questions);
        if stale {
            let tasks = quiz::tasks(&self.lessons, &questions, lang);
            self.tasks = Some(Tasks { lang, questions, tasks });
        }
        self.tasks.as_ref().map_or(&[], |c| c.tasks.as_slice())
    }

    /// Opens attempt `index`'s marked paper again (not while a test is being
    /// answered: that paper would be lost).
    fn reopen(&mut self, index: usize) {
        if self.saved.current.as_ref().is_some_and(|t| t.marked.is_none()) {
            return;
        }
        if let Some(paper) = self.saved.attempts.get(index).and_then(|a| a.paper.clone()) {
            self.saved.current = Some(paper);
            self.save_request = true;
        }
    }

    /// Marks the current test, records it in the review boxes and the
    /// history, and stops its clock.
    fn submit(&mut self, lang: Lang) {
        let elapsed = self.elapsed();
        // `None`: an exercise no longer registered, neither right nor wrong.
        let verdicts: Vec<Option<bool>> = {
            let answers = self.saved.current.as_ref().map(|t| t.answers.clone()).unwrap_or_default();
            self.tasks(lang)
                .iter()
                .zip(&answers)
                .map(|(task, answer)| task.as_ref().map(|(t, _, _)| t.check(answer).is_correct()))
                .collect()
        };
        let Some(test) = self.saved.current.as_mut() else {
            return;
        };
        test.elapsed_s = elapsed;
        self.running_since = None;
        self.confirm_blank = false;
        let results: Vec<(Question, bool)> =
            test.questions.iter().cloned().zip(&verdicts).filter_map(|(q, v)| v.map(|v| (q, v))).collect();
        self.saved.review.record(&results);
        let verdicts: Vec<bool> = verdicts.into_iter().map(|v| v.unwrap_or(false)).collect();
        let right = verdicts.iter().filter(|v| **v).count();
        let total = verdicts.len();
        test.marked = Some(verdicts);
        self.saved.attempts.push(Attempt {
            seed: test.seed,
            review: test.review,
            right,
            total,
            seconds: elapsed,
            day: Some(crate::kit::today()),
            paper: Some(test.clone()),
        });
        let excess = self.saved.attempts.len().saturating_sub(KEEP_ATTEMPTS);
        self.saved.attempts.drain(..excess);
        self.save_request = true;
    }
}

impl Lesson for MockTest {
    crate::lesson_identity!();

    fn see_registry(&mut self, lessons: &[Listed]) {
        self.lessons = lessons.to_vec();
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        view::ui(self, ui, env.lang);
    }

    fn logic(&mut self, ctx: &egui::Context, env: &Env<'_>) {
        let Some(test) = &self.saved.current else {
            return;
        };
        if test.marked.is_some() {
            return;
        }
        if self.running_since.is_none() {
            // A test restored from the save file: its clock goes on.
            self.running_since = Some(Instant::now());
        }
        if test.limit_s > 0.0 && self.elapsed() >= test.limit_s {
            self.submit(env.lang);
        }
        // The clock on screen ticks once a second.
        ctx.request_repaint_after(web_time::Duration::from_secs(1));
    }

    fn quiz_record(&self) -> Option<dlsys_core::study::QuizRecord<'_>> {
        Some(dlsys_core::study::QuizRecord { review: Some(&self.saved.review), attempts: &self.saved.attempts })
    }

    fn progress_note(&self, lang: Lang) -> Option<String> {
        Some(TEXT.fill(
            lang,
            "note",
            &[("due", &self.saved.review.due().len()), ("tests", &self.saved.review.tests)],
        ))
    }

    /// A seeded paper of ten drawn and generated in both languages, each
    /// question's reference answer marked by its own checker; the learner's
    /// paper, history and review boxes are not touched.
    fn self_test_start(&mut self, _env: &Env<'_>) -> bool {
        let questions = quiz::draw(&self.lessons, 10, 1);
        let mut wrong = Vec::new();
        for lang in [Lang::En, Lang::Zh] {
            for (question, task) in questions.iter().zip(quiz::tasks(&self.lessons, &questions, lang)) {
                match task {
                    Some((task, _, _)) if task.check(&task.reference).is_correct() => {}
                    _ => wrong.push(format!("{}/{} seed {} ({})", question.lesson, question.exercise, question.seed, lang.id())),
                }
            }
        }
        let detail = format!("{} questions marked in 2 languages", questions.len());
        self.self_test = Some(if questions.is_empty() || !wrong.is_empty() {
            Err(crate::SelfTestFailure(format!("{detail}; reference answers marked wrong: {}", wrong.join(", "))))
        } else {
            Ok(detail)
        });
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        self.self_test.clone()
    }

    fn take_open_request(&mut self) -> Option<String> {
        self.open_request.take()
    }

    fn take_save_request(&mut self) -> bool {
        std::mem::take(&mut self.save_request)
    }

    fn save_state(&self) -> Option<String> {
        let mut saved = self.saved.clone();
        if let Some(test) = saved.current.as_mut() {
            test.elapsed_s = if test.marked.is_some() {
                test.elapsed_s
            } else {
                (self.elapsed() / SAVED_CLOCK_S).floor() * SAVED_CLOCK_S
            };
        }
        ron::to_string(&saved).ok()
    }

    fn load_state(&mut self, ron_text: &str) -> Result<(), ron::error::SpannedError> {
        self.saved = ron::from_str(ron_text)?;
        self.saved.questions = self.saved.questions.clamp(1, quiz::MAX_QUESTIONS);
        self.saved.seed = self.saved.seed.clamp(1, quiz::MAX_SEED);
        self.saved.review.prune(&self.lessons);
        if let Some(test) = self.saved.current.as_mut() {
            // One answer per question, whatever the file held.
            test.answers.resize(test.questions.len(), String::new());
            if test.marked.as_ref().is_some_and(|m| m.len() != test.questions.len()) {
                test.marked = None;
            }
        }
        if self.saved.current.as_ref().is_some_and(|t| t.questions.is_empty()) {
            self.saved.current = None;
        }
        self.running_since = None;
        self.tasks = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mock() -> MockTest {
        let mut m = MockTest::default();
        m.see_registry(&crate::listed());
        m
    }

    #[test]
    fn a_test_is_marked_recorded_and_kept_across_a_restart() {
        let mut m = mock();
        let questions = quiz::draw(&m.lessons, 5, 11);
        m.start(questions.clone(), false);
        // The first answered right (its reference), the rest left blank.
        let reference = m.tasks(Lang::En)[0].as_ref().map(|(t, _, _)| t.reference.clone()).unwrap_or_default();
        if let Some(test) = m.saved.current.as_mut() {
            test.answers[0] = reference;
        }
        m.submit(Lang::En);
        assert_eq!(m.saved.current.as_ref().and_then(|t| t.marked.clone()), Some(vec![true, false, false, false, false]));
        assert_eq!(m.saved.attempts.len(), 1);
        assert_eq!(m.saved.attempts[0].right, 1);
        // The four wrong ones are due at the next test.
        assert_eq!(m.saved.review.due().len(), 4);
        let text = m.save_state().unwrap_or_default();
        let mut other = mock();
        assert!(other.load_state(&text).is_ok());
        assert_eq!(other.saved, m.saved);
        assert!(other.load_state("(questions: \"many\")").is_err());
        // The same seed draws what `dlsys-lab quiz --seed 11 --n 5` prints.
        assert_eq!(quiz::draw(&m.lessons, 5, 11), questions);
        // The marked paper opens again from the history, after a restart too.
        let marked = other.saved.current.clone();
        other.saved.current = None;
        other.reopen(0);
        assert_eq!(other.saved.current, marked);
        // Not over a paper being answered: that one stays.
        other.start(quiz::draw(&other.lessons.clone(), 3, 12), false);
        let answering = other.saved.current.clone();
        other.reopen(0);
        assert_eq!(other.saved.current, answering);
        // Reviews recorded once: reopening marks nothing again.
        assert_eq!(other.saved.review.due().len(), 4);
    }

    #[test]
    fn a_draw_is_seeded_spans_the_lessons_and_never_repeats_an_exercise() {
        let lessons = crate::listed();
        let pool: usize = lessons.iter().map(|l| l.exercises.len()).sum();
        let a = quiz::draw(&lessons, 12, 7);
        assert_eq!(a, quiz::draw(&lessons, 12, 7));
        assert_ne!(a, quiz::draw(&lessons, 12, 8));
        assert_eq!(a.len(), 12);
        let ids: std::collections::BTreeSet<_> = a.iter().map(|q| format!("{}/{}", q.lesson, q.exercise)).collect();
        assert_eq!(ids.len(), 12);
        let spanned: std::collections::BTreeSet<_> =
            quiz::draw(&lessons, 20, 3).into_iter().map(|q| q.lesson).collect();
        assert!(spanned.len() >= 4, "{spanned:?}");
        for q in &a {
            assert!(quiz::tasks(&lessons, std::slice::from_ref(q), Lang::Zh)[0].is_some(), "{q:?}");
        }
        assert_eq!(quiz::draw(&lessons, 1000, 1).len(), quiz::MAX_QUESTIONS.min(pool));
        assert!(
            quiz::tasks(
                &lessons,
                &[Question {
                    lesson: "gone".into(),
                    exercise: "x".into(),
                    seed: 1
                }],
                Lang::En
            )[0]
            .is_none()
        );
    }

}
