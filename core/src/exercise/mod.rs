//! The exercise model every lesson shares.
//!
//! An [`Exercise`] turns a seed into a [`Task`]: a prompt, the kind of answer
//! it expects, a checker, ordered hints and an explanation. The same seed
//! always gives the same task, so a task can be re-rolled and reproduced.
//! Each task also lists known wrong answers (the classic mistakes) with the
//! feedback they deserve; the self-check runs the checker against the
//! reference answer and every listed mistake, so the checkers are tested as
//! carefully as the cores.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::errors::Localized as _;
use crate::float::parse::{Dialect, ParseError, parse_number, parse_pattern};
use crate::study::Day;
use crate::text::Lang;

/// The first seed of every exercise; re-rolls step from it.
pub const FIRST_SEED: u64 = 1;

/// The seed after `seed`: a fixed step, so variants are reproducible.
pub fn next_seed(seed: u64) -> u64 {
    // splitmix64's increment and finaliser.
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) % 1_000_000
}

/// What the learner types.
#[derive(Clone, Debug, PartialEq)]
pub enum AnswerKind {
    /// A decimal, scientific or hex-float number.
    Number,
    /// A bit pattern of `width` bits, typed as `0x…`, `0b…` or plain binary digits.
    Bits { width: u32 },
    /// One of several options; the learner gives its number (1-based) or text.
    Choice { options: Vec<String> },
    /// Free text or code.
    Text,
}

/// How an answer is judged.
#[derive(Clone)]
pub enum AnswerChecker {
    /// Correct when `|x − expected| ≤ abs_tol + rel_tol·|expected|`.
    /// Infinities and NaN must match exactly.
    Number {
        expected: f64,
        abs_tol: f64,
        rel_tol: f64,
    },
    /// Correct when the bits equal `expected` (only the low `width` bits count).
    Bits { expected: u64, width: u32 },
    /// Correct when the chosen option is `correct` (0-based).
    Choice { correct: usize },
    /// Correct when the text equals one of `accepted` after trimming and
    /// collapsing whitespace (and ignoring case unless `case_sensitive`).
    Text {
        accepted: Vec<String>,
        case_sensitive: bool,
    },
}

impl std::fmt::Debug for AnswerChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number {
                expected,
                abs_tol,
                rel_tol,
            } => f
                .debug_struct("Number")
                .field("expected", expected)
                .field("abs_tol", abs_tol)
                .field("rel_tol", rel_tol)
                .finish(),
            Self::Bits { expected, width } => {
                write!(f, "Bits {{ expected: {expected:#x}, width: {width} }}")
            }
            Self::Choice { correct } => write!(f, "Choice {{ correct: {correct} }}"),
            Self::Text { accepted, .. } => write!(f, "Text {{ accepted: {accepted:?} }}"),
        }
    }
}

crate::catalog_error! {
    /// Why an answer could not be read as the kind of answer asked for.
    #[derive(Serialize, Deserialize)]
    pub enum AnswerError {
        Empty = "answer.empty",
        /// Not a number (or not a bit pattern), and why.
        Unreadable { reason: ParseError } = "answer.unreadable",
        /// An option's number outside 1..=count.
        ChoiceRange { count: usize } = "answer.choice_range",
        /// Text that is neither an option's number nor its text.
        ChoiceUnknown { count: usize } = "answer.choice_unknown",
        /// A verdict saved before verdicts were typed: the reason was not kept.
        NotKept = "answer.not_kept",
    }
}

/// The outcome of checking one answer: a typed reason, never a sentence.
/// A page renders it in the learner's language with [`Task::verdict_text`];
/// a save keeps the reason, so it reads in whatever language is chosen later.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredVerdict")]
pub enum AnswerVerdict {
    Right,
    /// Wrong; `mistake` is the index of the known mistake it matched.
    Wrong {
        mistake: Option<usize>,
    },
    /// Right, but read off the revealed answer: no credit.
    NoCredit,
    /// The input could not be read as the expected kind of answer.
    Unparsable(AnswerError),
}

/// What a save may hold: today's verdicts and those of saves written before
/// verdicts were typed (English sentences, mapped to a reason).
#[derive(Deserialize)]
#[allow(dead_code)] // the old sentences are read and dropped
enum StoredVerdict {
    Right,
    Wrong { mistake: Option<usize> },
    NoCredit,
    Unparsable(AnswerError),
    Correct { feedback: String },
    Incorrect { feedback: String },
    Malformed { message: String },
}

impl From<StoredVerdict> for AnswerVerdict {
    fn from(stored: StoredVerdict) -> Self {
        match stored {
            StoredVerdict::Right | StoredVerdict::Correct { .. } => Self::Right,
            StoredVerdict::Wrong { mistake } => Self::Wrong { mistake },
            StoredVerdict::Incorrect { .. } => Self::Wrong { mistake: None },
            StoredVerdict::NoCredit => Self::NoCredit,
            StoredVerdict::Unparsable(err) => Self::Unparsable(err),
            StoredVerdict::Malformed { .. } => Self::Unparsable(AnswerError::NotKept),
        }
    }
}

impl AnswerVerdict {
    pub fn is_correct(&self) -> bool {
        matches!(self, Self::Right)
    }
}

/// A known wrong answer and the feedback it earns.
#[derive(Clone, Debug)]
pub struct Mistake {
    pub answer: String,
    pub feedback: String,
}

/// One concrete, seeded instance of an exercise.
#[derive(Clone, Debug)]
pub struct Task {
    pub prompt: String,
    pub kind: AnswerKind,
    pub checker: AnswerChecker,
    /// Shown one at a time, in order.
    pub hints: Vec<String>,
    /// Shown after a pass or on request; says why the answer is what it is.
    pub explanation: String,
    /// A correct answer written as a learner would type it.
    pub reference: String,
    /// Known wrong answers; each must be rejected, with its own feedback.
    pub mistakes: Vec<Mistake>,
}

/// An exercise: a stable id and a generator of seeded tasks.
#[derive(Clone, Copy)]
pub struct Exercise {
    /// Stable: it keys saved progress. Unique within a lesson.
    pub id: &'static str,
    pub title: fn(Lang) -> String,
    pub generate: fn(seed: u64, lang: Lang) -> Task,
}

impl std::fmt::Debug for Exercise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exercise")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Task {
    /// Judges what the learner typed.
    pub fn check(&self, input: &str) -> AnswerVerdict {
        let input = input.trim();
        if input.is_empty() {
            return AnswerVerdict::Unparsable(AnswerError::Empty);
        }
        let answer = match parse_answer(&self.kind, input) {
            Ok(answer) => answer,
            Err(err) => return AnswerVerdict::Unparsable(err),
        };
        if matches_checker(&self.checker, &answer) {
            return AnswerVerdict::Right;
        }
        let mistake = self.mistakes.iter().position(|mistake| {
            parse_answer(&self.kind, &mistake.answer)
                .is_ok_and(|known| same_answer(&self.checker, &known, &answer))
        });
        AnswerVerdict::Wrong { mistake }
    }

    /// `verdict` in words, in `lang`: a known mistake's feedback (in the
    /// language the task was generated in), or the verdict's own sentence.
    pub fn verdict_text(&self, verdict: &AnswerVerdict, lang: Lang) -> String {
        let says = |key: &str| crate::names::catalog().get(lang, key).to_owned();
        match verdict {
            AnswerVerdict::Right => says("verdict.right"),
            AnswerVerdict::Wrong { mistake } => mistake
                .and_then(|i| self.mistakes.get(i))
                .map_or_else(|| says("verdict.wrong"), |m| m.feedback.clone()),
            AnswerVerdict::NoCredit => says("verdict.no_credit"),
            AnswerVerdict::Unparsable(err) => err.message(lang),
        }
    }
}

impl AnswerChecker {
    /// A number within `rel_tol` of `expected`, relative (answers people
    /// round to three or four digits: 5e-3).
    pub fn close(expected: f64, rel_tol: f64) -> Self {
        Self::Number {
            expected,
            abs_tol: 0.0,
            rel_tol,
        }
    }
}

impl Task {
    /// A task whose answer is a number: checked within 0.5 % relative,
    /// its reference written to four significant digits, and its
    /// `candidates` (value, feedback) kept as [`number_mistakes`] keeps them.
    pub fn numeric(
        prompt: String,
        answer: f64,
        hints: Vec<String>,
        explanation: String,
        candidates: Vec<(f64, String)>,
    ) -> Self {
        let show = |x: f64| crate::float::show_sig(x, 4);
        Self {
            prompt,
            kind: AnswerKind::Number,
            checker: AnswerChecker::close(answer, 5e-3),
            hints,
            explanation,
            reference: show(answer),
            mistakes: number_mistakes(answer, candidates, show),
        }
    }
}

/// A numeric task's known mistakes, each written by `show`, leaving out
/// any within 1 % of the answer (the checker might accept it) or of an
/// earlier candidate (it would repeat it): seeded numbers can make two
/// classic errors coincide.
pub fn number_mistakes(
    answer: f64,
    candidates: Vec<(f64, String)>,
    show: fn(f64) -> String,
) -> Vec<Mistake> {
    let near = |a: f64, b: f64| (a - b).abs() <= 1e-2 * b.abs().max(a.abs());
    let mut kept: Vec<(f64, String)> = Vec::new();
    for (value, feedback) in candidates {
        if value.is_finite() && !near(value, answer) && !kept.iter().any(|(v, _)| near(*v, value)) {
            kept.push((value, feedback));
        }
    }
    kept.into_iter()
        .map(|(value, feedback)| Mistake {
            answer: show(value),
            feedback,
        })
        .collect()
}

/// An answer read from text.
#[derive(Clone, Debug, PartialEq)]
enum Answer {
    Number(f64),
    Bits(u64),
    Choice(usize),
    Text(String),
}

fn parse_answer(kind: &AnswerKind, input: &str) -> Result<Answer, AnswerError> {
    let unreadable = |reason| AnswerError::Unreadable { reason };
    match kind {
        AnswerKind::Number => parse_number(input).map(Answer::Number).map_err(unreadable),
        AnswerKind::Bits { width } => parse_pattern(input, *width, Dialect::Answer)
            .map(Answer::Bits)
            .map_err(unreadable),
        AnswerKind::Choice { options } => parse_choice(input, options).map(Answer::Choice),
        AnswerKind::Text => Ok(Answer::Text(input.to_owned())),
    }
}

fn parse_choice(input: &str, options: &[String]) -> Result<usize, AnswerError> {
    let count = options.len();
    if let Ok(number) = input.trim_end_matches(['.', ')']).parse::<usize>() {
        if (1..=count).contains(&number) {
            return Ok(number - 1);
        }
        return Err(AnswerError::ChoiceRange { count });
    }
    let wanted = normalize_text(input, false);
    options
        .iter()
        .position(|option| normalize_text(option, false) == wanted)
        .ok_or(AnswerError::ChoiceUnknown { count })
}

fn normalize_text(text: &str, case_sensitive: bool) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if case_sensitive {
        collapsed
    } else {
        collapsed.to_lowercase()
    }
}

fn numbers_match(expected: f64, got: f64, abs_tol: f64, rel_tol: f64) -> bool {
    if expected.is_nan() || got.is_nan() {
        return expected.is_nan() && got.is_nan();
    }
    if expected.is_infinite() || got.is_infinite() {
        return expected == got;
    }
    (got - expected).abs() <= abs_tol + rel_tol * expected.abs()
}

fn matches_checker(checker: &AnswerChecker, answer: &Answer) -> bool {
    match (checker, answer) {
        (
            AnswerChecker::Number {
                expected,
                abs_tol,
                rel_tol,
            },
            Answer::Number(got),
        ) => numbers_match(*expected, *got, *abs_tol, *rel_tol),
        (AnswerChecker::Bits { expected, width }, Answer::Bits(got)) => {
            let mask = if *width >= 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            expected & mask == got & mask
        }
        (AnswerChecker::Choice { correct }, Answer::Choice(got)) => correct == got,
        (
            AnswerChecker::Text {
                accepted,
                case_sensitive,
            },
            Answer::Text(got),
        ) => {
            let got = normalize_text(got, *case_sensitive);
            accepted
                .iter()
                .any(|a| normalize_text(a, *case_sensitive) == got)
        }
        _ => false,
    }
}

/// Whether two answers count as the same under the checker's tolerance
/// (used to recognise a known mistake).
fn same_answer(checker: &AnswerChecker, known: &Answer, got: &Answer) -> bool {
    match (checker, known) {
        (
            AnswerChecker::Number {
                abs_tol, rel_tol, ..
            },
            Answer::Number(value),
        ) => matches_checker(
            &AnswerChecker::Number {
                expected: *value,
                abs_tol: *abs_tol,
                rel_tol: *rel_tol,
            },
            got,
        ),
        (AnswerChecker::Bits { width, .. }, Answer::Bits(value)) => matches_checker(
            &AnswerChecker::Bits {
                expected: *value,
                width: *width,
            },
            got,
        ),
        (AnswerChecker::Choice { .. }, Answer::Choice(value)) => {
            matches_checker(&AnswerChecker::Choice { correct: *value }, got)
        }
        (AnswerChecker::Text { case_sensitive, .. }, Answer::Text(value)) => matches_checker(
            &AnswerChecker::Text {
                accepted: vec![value.clone()],
                case_sensitive: *case_sensitive,
            },
            got,
        ),
        _ => false,
    }
}

/// What the self-check found for one task.
#[derive(Clone, Debug, Serialize)]
pub struct SelfCheck {
    pub exercise_id: String,
    pub seed: u64,
    pub reference_passes: bool,
    /// Mistakes the checker wrongly accepted (or could not read).
    pub accepted_mistakes: Vec<String>,
    /// Whether an obviously malformed answer is reported as malformed.
    pub malformed_rejected: bool,
    pub problems: Vec<String>,
}

impl SelfCheck {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Runs the checker of one seeded task against its reference answer, its
/// listed mistakes and a malformed input.
pub fn self_check(exercise: &Exercise, seed: u64) -> SelfCheck {
    let task = (exercise.generate)(seed, Lang::En);
    let mut problems = Vec::new();
    let reference = task.check(&task.reference);
    let reference_passes = reference.is_correct();
    if !reference_passes {
        problems.push(format!(
            "reference answer `{}` was judged {:?}",
            task.reference, reference
        ));
    }
    let mut accepted_mistakes = Vec::new();
    for mistake in &task.mistakes {
        match task.check(&mistake.answer) {
            AnswerVerdict::Wrong { .. } => {}
            other => {
                accepted_mistakes.push(mistake.answer.clone());
                problems.push(format!("mistake `{}` was judged {other:?}", mistake.answer));
            }
        }
    }
    if task.mistakes.is_empty() {
        problems.push("lists no known wrong answer".to_owned());
    }
    let malformed_rejected = match task.kind {
        AnswerKind::Text => true,
        _ => matches!(task.check("#not an answer#"), AnswerVerdict::Unparsable(_)),
    };
    if !malformed_rejected {
        problems.push("a malformed answer was not reported as malformed".to_owned());
    }
    if task.hints.is_empty() {
        problems.push("has no hints".to_owned());
    }
    if task.explanation.trim().is_empty() {
        problems.push("has no explanation".to_owned());
    }
    let again = (exercise.generate)(seed, Lang::En);
    if again.prompt != task.prompt || again.reference != task.reference {
        problems.push("the same seed gave a different task".to_owned());
    }
    SelfCheck {
        exercise_id: exercise.id.to_owned(),
        seed,
        reference_passes,
        accepted_mistakes,
        malformed_rejected,
        problems,
    }
}

/// A learner's state on one exercise.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExerciseProgress {
    pub seed: u64,
    pub solved: bool,
    pub attempts: u32,
    pub hints_shown: u32,
    pub revealed: bool,
    /// What the learner typed last, kept so nothing is lost.
    pub draft: String,
    pub last_verdict: Option<AnswerVerdict>,
    /// The day of the last marked attempt (`None`: none, or before dates were kept).
    pub last_attempt: Option<Day>,
    /// The day it was solved (`None` for a solve saved before dates were kept).
    pub solved_on: Option<Day>,
}

impl ExerciseProgress {
    /// Nothing done on it yet: no attempt, hint, reveal, solve or draft.
    pub fn is_untouched(&self) -> bool {
        !self.solved
            && self.attempts == 0
            && self.hints_shown == 0
            && !self.revealed
            && self.draft.is_empty()
    }
}

/// Progress over every exercise, keyed by `lesson_id/exercise_id`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Progress {
    pub exercises: BTreeMap<String, ExerciseProgress>,
    /// Each lesson's last visit, by lesson id.
    pub visits: BTreeMap<String, Day>,
    /// The days something was studied: a visit, an attempt or a solve.
    pub days: BTreeSet<Day>,
    /// The first day dates were kept (`None` until then): anything done
    /// earlier is undated, and the overview says so.
    pub dated_since: Option<Day>,
}

impl Progress {
    pub fn key(lesson_id: &str, exercise_id: &str) -> String {
        format!("{lesson_id}/{exercise_id}")
    }

    pub fn get(&self, lesson_id: &str, exercise_id: &str) -> Option<&ExerciseProgress> {
        self.exercises.get(&Self::key(lesson_id, exercise_id))
    }

    pub fn entry(&mut self, lesson_id: &str, exercise_id: &str) -> &mut ExerciseProgress {
        self.exercises
            .entry(Self::key(lesson_id, exercise_id))
            .or_default()
    }

    /// How many of `exercise_ids` in a lesson are solved.
    pub fn solved_count<'a>(
        &self,
        lesson_id: &str,
        exercise_ids: impl IntoIterator<Item = &'a str>,
    ) -> usize {
        exercise_ids
            .into_iter()
            .filter(|id| self.get(lesson_id, id).is_some_and(|p| p.solved))
            .count()
    }

    /// Records an attempt made on `day`; returns the verdict and whether
    /// the exercise became solved now.
    pub fn submit(
        &mut self,
        lesson_id: &str,
        exercise_id: &str,
        task: &Task,
        input: &str,
        day: Day,
    ) -> (AnswerVerdict, bool) {
        let progress = self.entry(lesson_id, exercise_id);
        let verdict = task.check(input);
        progress.draft = input.to_owned();
        let marked = !matches!(verdict, AnswerVerdict::Unparsable(_));
        if marked {
            progress.attempts += 1;
            progress.last_attempt = Some(day);
        }
        let newly_solved = verdict.is_correct() && !progress.solved;
        if verdict.is_correct() {
            progress.solved = true;
        }
        if newly_solved {
            progress.solved_on = Some(day);
        }
        progress.last_verdict = Some(verdict.clone());
        if marked {
            self.studied(day);
        }
        (verdict, newly_solved)
    }

    /// Takes back a solve that did not count (an answer read off the reveal).
    pub fn unsolve(&mut self, lesson_id: &str, exercise_id: &str) {
        let entry = self.entry(lesson_id, exercise_id);
        entry.solved = false;
        entry.solved_on = None;
    }

    /// Notes that `day` was a study day (and that dates are kept from then).
    pub fn studied(&mut self, day: Day) {
        self.dated_since = earlier(self.dated_since, Some(day));
        self.days.insert(day);
    }

    /// Records a visit to lesson `lesson_id` on `day`; `false` when it
    /// changed nothing (already visited that day).
    pub fn visit(&mut self, lesson_id: &str, day: Day) -> bool {
        if self.visits.get(lesson_id) == Some(&day) && self.days.contains(&day) {
            return false;
        }
        self.visits.insert(lesson_id.to_owned(), day);
        self.studied(day);
        true
    }

    /// Takes in `other` (an imported file) without losing anything here:
    /// an exercise is solved if either solved it, counts the more attempts
    /// and hints, keeps the earlier solve and the later attempt; visits keep
    /// the later day, study days are the union. This side's seeds, drafts
    /// and verdicts stay where it has the exercise.
    pub fn merge(&mut self, other: &Progress) {
        for (key, theirs) in &other.exercises {
            let Some(ours) = self.exercises.get_mut(key) else {
                self.exercises.insert(key.clone(), theirs.clone());
                continue;
            };
            // Only shown here (a page creates the entry when it draws it):
            // the file's variant, draft and verdict are worth more.
            if ours.is_untouched() {
                *ours = theirs.clone();
                continue;
            }
            if theirs.solved && !ours.solved {
                // Solved there on another variant: take that variant, so no
                // explanation shows for one never solved here.
                if ours.seed != theirs.seed {
                    let (attempts, last) = (ours.attempts, ours.last_attempt);
                    *ours = theirs.clone();
                    ours.attempts = ours.attempts.max(attempts);
                    ours.last_attempt = ours.last_attempt.max(last);
                    continue;
                }
                ours.solved = true;
                ours.solved_on = theirs.solved_on;
            } else if theirs.solved {
                ours.solved_on = earlier(ours.solved_on, theirs.solved_on);
            }
            ours.attempts = ours.attempts.max(theirs.attempts);
            // Hints and a reveal belong to one variant: the same seed's only.
            if ours.seed == theirs.seed {
                ours.hints_shown = ours.hints_shown.max(theirs.hints_shown);
                ours.revealed |= theirs.revealed;
            }
            ours.last_attempt = ours.last_attempt.max(theirs.last_attempt);
        }
        for (lesson, day) in &other.visits {
            let ours = self.visits.entry(lesson.clone()).or_insert(*day);
            *ours = (*ours).max(*day);
        }
        self.days.extend(other.days.iter().copied());
        self.dated_since = earlier(self.dated_since, other.dated_since);
    }
}

/// The earlier of two days that may be unknown (an unknown one is not earlier).
fn earlier(a: Option<Day>, b: Option<Day>) -> Option<Day> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

pub mod quiz;

#[cfg(test)]
mod tests;
