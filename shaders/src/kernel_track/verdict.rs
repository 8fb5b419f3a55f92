//! What a check of a learner's kernel came to, in words for the learner
//! (from `assets/errors.ron`, in either language).

use dlsys_core::errors::Localized;
use dlsys_core::text::Lang;

/// Where a diagnostic points.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// 1-based, when known.
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub message: String,
}

/// English, from the same catalog entries as [`Diagnostic::localized`].
impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.localized(Lang::En))
    }
}

/// The first element that disagrees with the reference.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Mismatch {
    pub case: dlsys_core::names::Words,
    pub index: usize,
    pub expected: f32,
    pub got: f32,
    /// What the mistake probably is, when the checker can tell.
    pub note: Option<dlsys_core::names::Words>,
}

/// What a check came to.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum KernelVerdict {
    /// Rejected by naga or by the device's validation.
    Invalid(Diagnostic),
    Mismatch(Mismatch),
    /// A loop ran past the guard's limit: it does not end.
    EndlessLoop {
        case: dlsys_core::names::Words,
        line: u32,
        limit: u32,
    },
    /// Did not finish within the budget; the device was abandoned.
    TimedOut {
        case: dlsys_core::names::Words,
        budget_ms: u64,
    },
    /// Something else went wrong (no device, device lost, readback failed).
    Failed(#[serde(serialize_with = "crate::error::as_text")] crate::KernelError),
    Passed {
        cases: usize,
    },
}

impl KernelVerdict {
    pub fn passed(&self) -> bool {
        matches!(self, Self::Passed { .. })
    }
}

/// A catalog entry's text (for the parts of a verdict that are phrases).
fn phrase(lang: Lang, key: &str) -> String {
    dlsys_core::errors::catalog().get(lang, key).to_owned()
}

impl Diagnostic {
    /// The diagnostic with its position, in `lang` (naga's own words stay English).
    pub fn localized(&self, lang: Lang) -> String {
        let text = dlsys_core::errors::catalog();
        let message: &dyn std::fmt::Display = &self.message;
        match (self.line, self.column) {
            (Some(l), Some(c)) => text.fill(
                lang,
                "verdict.at_line_column",
                &[("line", &l), ("column", &c), ("message", message)],
            ),
            (Some(l), None) => text.fill(
                lang,
                "verdict.at_line",
                &[("line", &l), ("message", message)],
            ),
            _ => self.message.clone(),
        }
    }
}

/// One paragraph for the learner, in their language (`Display`: English).
impl Localized for KernelVerdict {
    fn key(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "verdict.invalid",
            Self::Mismatch(_) => "verdict.mismatch",
            Self::EndlessLoop { .. } => "verdict.endless_loop",
            Self::TimedOut { .. } => "verdict.timed_out",
            Self::Failed(_) => "verdict.failed",
            Self::Passed { .. } => "verdict.passed",
        }
    }

    fn args(&self, lang: Lang) -> Vec<(&'static str, String)> {
        match self {
            Self::Invalid(d) => vec![("diagnostic", d.localized(lang))],
            Self::Mismatch(m) => vec![
                ("case", m.case.say(lang)),
                ("index", m.index.to_string()),
                // Decimals where they read well (1, not 1e0), scientific beyond.
                ("expected", dlsys_core::float::show_f32(m.expected)),
                ("got", dlsys_core::float::show_f32(m.got)),
                (
                    "note",
                    m.note
                        .as_ref()
                        .map_or(String::new(), |note| format!(" — {}", note.say(lang))),
                ),
            ],
            Self::EndlessLoop { case, line, limit } => vec![
                ("case", case.say(lang)),
                ("line", line.to_string()),
                ("limit", limit.to_string()),
            ],
            Self::TimedOut { case, budget_ms } => vec![
                ("case", case.say(lang)),
                ("budget_ms", budget_ms.to_string()),
                (
                    "after",
                    phrase(
                        lang,
                        if cfg!(target_arch = "wasm32") {
                            "verdict.abandoned_web"
                        } else {
                            "verdict.abandoned_native"
                        },
                    ),
                ),
            ],
            Self::Failed(why) => vec![("why", why.message(lang))],
            Self::Passed { cases } => vec![("cases", cases.to_string())],
        }
    }
}

impl std::fmt::Display for KernelVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&Localized::message(self, Lang::En))
    }
}
