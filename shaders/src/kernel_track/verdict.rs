//! What a check of a learner's kernel came to, in words for the learner.

/// Where a diagnostic points.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// 1-based, when known.
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "line {l}, column {c}: {}", self.message),
            (Some(l), None) => write!(f, "line {l}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

/// The first element that disagrees with the reference.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Mismatch {
    pub case: String,
    pub index: usize,
    pub expected: f32,
    pub got: f32,
    /// What the mistake probably is (may be empty).
    pub note: String,
}

/// What a check came to.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum KernelVerdict {
    /// Rejected by naga or by the device's validation.
    Invalid(Diagnostic),
    Mismatch(Mismatch),
    /// A loop ran past the guard's limit: it does not end.
    EndlessLoop {
        case: String,
        line: u32,
        limit: u32,
    },
    /// Did not finish within the budget; the device was abandoned.
    TimedOut {
        case: String,
        budget_ms: u64,
    },
    /// Something else went wrong (no device, device lost, readback failed).
    Failed(String),
    Passed {
        cases: usize,
    },
}

impl KernelVerdict {
    pub fn passed(&self) -> bool {
        matches!(self, Self::Passed { .. })
    }

    /// One paragraph for the learner.
    pub fn message(&self) -> String {
        match self {
            Self::Invalid(d) => format!("does not compile: {d}"),
            Self::Mismatch(m) => {
                let mut text = format!(
                    "wrong on \"{}\": at index {} expected {:e}, got {:e}",
                    m.case, m.index, m.expected, m.got
                );
                if !m.note.is_empty() {
                    text.push_str(" — ");
                    text.push_str(&m.note);
                }
                text
            }
            Self::EndlessLoop { case, line, limit } => format!(
                "the loop at line {line} does not end: on \"{case}\" one invocation ran its loops \
                 more than {limit} times. Check its condition, and that its index changes on \
                 every iteration."
            ),
            Self::TimedOut { case, budget_ms } => format!(
                "did not finish within {budget_ms} ms on \"{case}\" (an endless loop?). {}",
                if cfg!(target_arch = "wasm32") {
                    "The kernel was abandoned; reload the page to get a fresh GPU device."
                } else {
                    "The kernel was abandoned and a fresh GPU device is used from now on."
                }
            ),
            Self::Failed(why) => format!("could not run: {why}"),
            Self::Passed { cases } => format!("passes all {cases} cases"),
        }
    }
}
