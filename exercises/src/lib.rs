//! The Rust exercise track, in the style of rustlings.
//!
//! Your code goes in `exercises/learn/`: twelve files, each a function with a
//! `todo!()` in it and a doc comment stating the task and a hint. Fill one in,
//! then run
//!
//! ```sh
//! cargo test -p dlsys-exercises        # every exercise, with a hint for each failure
//! dlsys-lab exercises                  # progress, and the next exercise to do
//! ```
//!
//! This crate holds the other side: the checkers ([`check`]), which judge an
//! implementation with dlsys-lab's own cores (the autograd engine and its
//! relative-error bands, the bit-exact float emulator, the optimizers, the
//! CPU softmax reference, the memory planner and its liveness analysis, the
//! quantiser); the reference solutions ([`reference`]); and for
//! every exercise a known-wrong solution ([`wrong`]) that makes a classic
//! mistake, which its checker must reject with a message naming the mistake.
//! `dlsys-lab check` runs both sides; `cargo test --workspace` checks the
//! reference solutions (feature `reference`), so the checkers are tested on
//! every CI run and your stubs never break the build.

pub mod check;
mod check_plan;
mod check_quant;
pub mod reference;
pub mod words;
pub mod wrong;

/// Adam's hyper-parameters (exercise 07).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamConfig {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
}

impl Default for AdamConfig {
    fn default() -> Self {
        Self {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
        }
    }
}

/// One exercise of the track.
#[derive(Clone, Copy, Debug)]
pub struct Info {
    /// The function to write, also the test's name.
    pub id: &'static str,
    /// Where the learner writes it, relative to the repository root.
    pub file: &'static str,
}

impl Info {
    /// Its title in `lang` (`assets/track.ron`).
    pub fn title(&self, lang: dlsys_core::text::Lang) -> String {
        words::catalog()
            .get(lang, &format!("{}.title", self.id))
            .to_owned()
    }

    /// Shown when the check fails.
    pub fn hint(&self, lang: dlsys_core::text::Lang) -> String {
        words::catalog()
            .get(lang, &format!("{}.hint", self.id))
            .to_owned()
    }
}

/// The track, in the order to do it.
pub const EXERCISES: [Info; 12] = [
    Info {
        id: "fp16_from_bits",
        file: "exercises/learn/01_fp16_from_bits.rs",
    },
    Info {
        id: "round_to_bf16_rne",
        file: "exercises/learn/02_round_to_bf16_rne.rs",
    },
    Info {
        id: "linear_backward",
        file: "exercises/learn/03_linear_backward.rs",
    },
    Info {
        id: "softmax_backward",
        file: "exercises/learn/04_softmax_backward.rs",
    },
    Info {
        id: "softmax_cross_entropy_backward",
        file: "exercises/learn/05_softmax_cross_entropy_backward.rs",
    },
    Info {
        id: "sgd_momentum_step",
        file: "exercises/learn/06_sgd_momentum_step.rs",
    },
    Info {
        id: "adam_step",
        file: "exercises/learn/07_adam_step.rs",
    },
    Info {
        id: "online_softmax",
        file: "exercises/learn/08_online_softmax.rs",
    },
    Info {
        id: "dataloader_batches",
        file: "exercises/learn/09_dataloader_batches.rs",
    },
    Info {
        id: "plan_arena",
        file: "exercises/learn/10_plan_arena.rs",
    },
    Info {
        id: "liveness",
        file: "exercises/learn/11_liveness.rs",
    },
    Info {
        id: "quantise_per_channel",
        file: "exercises/learn/12_quantise_per_channel.rs",
    },
];

/// The exercise called `id`.
pub fn info(id: &str) -> Option<&'static Info> {
    EXERCISES.iter().find(|e| e.id == id)
}

/// A checker run against one implementation, for `dlsys-lab check`.
pub struct Case {
    pub exercise: &'static str,
    /// "reference" or the known mistake's name.
    pub solution: &'static str,
    /// `None` for the reference; for a known-wrong solution, a fragment the
    /// checker's message must contain (so it names the mistake).
    pub expect: Option<&'static str>,
    pub run: fn() -> Result<(), String>,
}

/// What a case came to: the checker's message, and whether that is right.
pub struct CaseResult {
    pub message: Option<String>,
    pub ok: bool,
}

impl Case {
    /// Runs the case in English: the known mistakes' fragments are English.
    pub fn run(&self) -> CaseResult {
        let english = dlsys_core::text::Lang::En;
        let outcome = words::with_lang(english, self.run);
        match (outcome, self.expect) {
            (Ok(()), None) => CaseResult {
                message: None,
                ok: true,
            },
            (Err(message), None) => CaseResult {
                message: Some(message),
                ok: false,
            },
            (Ok(()), Some(_)) => CaseResult {
                message: Some(words::catalog().get(english, "c.wrong_passed").to_owned()),
                ok: false,
            },
            (Err(message), Some(fragment)) => CaseResult {
                ok: message.contains(fragment),
                message: Some(message),
            },
        }
    }
}

/// Every reference solution and every known-wrong one, each with its checker.
pub fn cases() -> Vec<Case> {
    let mut cases = reference::cases();
    cases.extend(wrong::cases());
    cases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reference_passes_and_every_known_wrong_fails_naming_its_mistake() {
        let mut problems = Vec::new();
        for case in cases() {
            let result = case.run();
            if !result.ok {
                problems.push(format!(
                    "{} / {}: {:?} (wanted {:?})",
                    case.exercise, case.solution, result.message, case.expect
                ));
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn every_exercise_has_a_reference_and_a_known_wrong_solution() {
        let all = cases();
        for info in EXERCISES {
            let of = |wrong: bool| {
                all.iter()
                    .filter(|c| c.exercise == info.id && c.expect.is_some() == wrong)
                    .count()
            };
            assert_eq!(of(false), 1, "{}: one reference", info.id);
            assert!(of(true) >= 1, "{}: a known-wrong solution", info.id);
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join(info.file);
            assert!(path.is_file(), "{} is missing", path.display());
        }
    }
}
