//! What the lessons' exercise generators share: a value picked from a list
//! with the task's seeded generator, a number written as the reference a
//! learner would type, and a multiple-choice task whose right option moves
//! with the seed.

use dlsys_core::exercise::{AnswerChecker, AnswerKind, Mistake, Task};
use dlsys_core::float::show_sig;
use rand::{RngExt as _, SeedableRng as _};

/// A task's seeded generator: `seed` mixed with the lesson's `salt`, so two
/// lessons' exercises draw different numbers for the same seed.
pub fn rng(seed: u64, salt: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed ^ salt)
}

/// One of `from`, drawn with `rng`.
pub fn pick<T: Copy>(rng: &mut rand::rngs::StdRng, from: &[T]) -> T {
    from[rng.random_range(0..from.len())]
}

/// Four significant digits, as the reference a learner would type.
pub fn show(x: f64) -> String {
    show_sig(x, 4)
}

/// [`choice_task`] written in `text`'s keys `ex.<id>.*`: the prompt, each
/// option `ex.<id>.<option>` (`options[0]` the right one), `hint1`, the
/// explanation and the feedback `wrong`, each filled with `args`.
pub fn catalog_choice(
    text: &dlsys_core::text::Catalog,
    lang: dlsys_core::text::Lang,
    id: &str,
    seed: u64,
    options: &[&str],
    args: &[(&str, &dyn std::fmt::Display)],
) -> Task {
    let fill = |key: &str| text.fill(lang, &format!("ex.{id}.{key}"), args);
    choice_task(
        seed,
        fill("prompt"),
        options.iter().map(|o| fill(o)).collect(),
        vec![fill("hint1")],
        fill("explain"),
        &fill("wrong"),
    )
}

/// A multiple-choice task: `options[0]` is the right one; it moves to
/// position `seed % n` (the others keep their order), and every other
/// option answers with `wrong`.
pub fn choice_task(
    seed: u64,
    prompt: String,
    mut options: Vec<String>,
    hints: Vec<String>,
    explanation: String,
    wrong: &str,
) -> Task {
    let n = options.len().max(1);
    let at = (seed % n as u64) as usize;
    if at < options.len() {
        options.swap(0, at);
    }
    let mistakes = (0..options.len())
        .filter(|i| *i != at)
        .map(|i| Mistake {
            answer: (i + 1).to_string(),
            feedback: wrong.to_owned(),
        })
        .collect();
    Task {
        prompt,
        kind: AnswerKind::Choice { options },
        checker: AnswerChecker::Choice { correct: at },
        hints,
        explanation,
        reference: (at + 1).to_string(),
        mistakes,
    }
}
