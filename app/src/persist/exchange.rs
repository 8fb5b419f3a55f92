//! The progress file: the whole saved state as one versioned JSON file, to
//! take from the desktop to the browser or to a new machine. Reading one is
//! strict and refuses by name — too large, not text, not JSON (a truncated
//! file), not a progress file, a newer version, a value of the wrong type —
//! before anything is changed. The app's "Progress" page and
//! `dlsys-lab progress export|import` both go through here.

use std::collections::BTreeMap;

use dlsys_core::study::{Day, ImportPreview};
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};

use super::SavedState;

/// What the file says it is.
pub const FORMAT: &str = "dlsys-lab-progress";

/// This build's version of the file (the save format's: 2 dates attempts).
pub const VERSION: u64 = 2;

/// The largest file read: a real one is a few hundred kilobytes at most.
pub const MAX_BYTES: u64 = 10 * 1024 * 1024;

/// The file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgressFile {
    pub format: String,
    pub version: u64,
    /// The day it was written.
    #[serde(default)]
    pub exported_on: Option<Day>,
    pub state: SavedState,
}

/// What a file says it is, read before the rest (any JSON value reads as
/// one; an object without these fields has `None`).
#[derive(Default, Deserialize)]
#[serde(default)]
struct Head {
    format: Option<String>,
    version: Option<u64>,
}

/// Why a file was refused; nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImportError {
    /// The file could not be read at all.
    Read {
        error: String,
    },
    TooLarge {
        bytes: u64,
    },
    NotText,
    /// Not JSON, or cut short.
    NotJson {
        error: String,
    },
    /// JSON, but not a dlsys-lab progress file.
    NotProgress,
    /// Written by a newer dlsys-lab.
    Newer {
        version: u64,
    },
    /// A progress file with a value this build cannot read.
    Schema {
        error: String,
    },
}

impl ImportError {
    /// The reason in `lang` (the shell's catalog, `import.*`).
    pub fn message(&self, lang: Lang) -> String {
        let text = dlsys_lessons::kit::text();
        match self {
            Self::Read { error } => text.fill(lang, "import.read", &[("error", error)]),
            Self::TooLarge { bytes } => text.fill(
                lang,
                "import.too_large",
                &[
                    ("mib", &format!("{:.1}", *bytes as f64 / 1_048_576.0)),
                    ("max", &(MAX_BYTES >> 20)),
                ],
            ),
            Self::NotText => text.get(lang, "import.not_text").to_owned(),
            Self::NotJson { error } => text.fill(lang, "import.not_json", &[("error", error)]),
            Self::NotProgress => text.fill(lang, "import.not_progress", &[("format", &FORMAT)]),
            Self::Newer { version } => text.fill(
                lang,
                "import.newer",
                &[("version", version), ("ours", &VERSION)],
            ),
            Self::Schema { error } => text.fill(lang, "import.schema", &[("error", error)]),
        }
    }
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message(Lang::En))
    }
}

/// `state` as a progress file written on `today`. What could not be read
/// (kept aside in the save) stays out: it is this machine's, and has its
/// own export.
pub fn export(state: &SavedState, today: Day) -> Result<String, serde_json::Error> {
    let file = ProgressFile {
        format: FORMAT.to_owned(),
        version: VERSION,
        exported_on: Some(today),
        state: SavedState {
            unreadable: Default::default(),
            ..state.clone()
        },
    };
    serde_json::to_string_pretty(&file)
}

/// Reads a progress file, refusing it by name (see [`ImportError`]).
pub fn read(bytes: &[u8]) -> Result<ProgressFile, ImportError> {
    let size = bytes.len() as u64;
    if size > MAX_BYTES {
        return Err(ImportError::TooLarge { bytes: size });
    }
    let text = std::str::from_utf8(bytes).map_err(|_| ImportError::NotText)?;
    // The head first (what the file says it is), then the whole: both read
    // straight from the text (no `serde_json::Value` in between, which would
    // build a second reader of every saved type into the web bundle).
    serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|err| ImportError::NotJson {
        error: err.to_string(),
    })?;
    let head: Head = serde_json::from_str(text).map_err(|_| ImportError::NotProgress)?;
    if head.format.as_deref() != Some(FORMAT) {
        return Err(ImportError::NotProgress);
    }
    // The version first: a newer file is refused as newer, whatever it holds.
    match head.version {
        Some(version) if version > VERSION => return Err(ImportError::Newer { version }),
        Some(_) => {}
        None => return Err(ImportError::NotProgress),
    }
    let file: ProgressFile = serde_json::from_str(text).map_err(|err| ImportError::Schema {
        error: err.to_string(),
    })?;
    if !file.state.zoom.is_finite() || !(0.25..=4.0).contains(&file.state.zoom) {
        return Err(ImportError::Schema {
            error: format!("zoom {} is outside 0.25–4", file.state.zoom),
        });
    }
    Ok(file)
}

/// Reads the progress file at `path`: its size is looked at before a byte is read.
#[cfg(not(target_arch = "wasm32"))]
pub fn read_path(path: &std::path::Path) -> Result<ProgressFile, ImportError> {
    let failed = |err: std::io::Error| ImportError::Read {
        error: format!("{}: {err}", path.display()),
    };
    let size = std::fs::metadata(path).map_err(failed)?.len();
    if size > MAX_BYTES {
        return Err(ImportError::TooLarge { bytes: size });
    }
    read(&std::fs::read(path).map_err(failed)?)
}

/// The name an export is offered under: `dlsys-lab-progress-<date>.json`.
pub fn file_name(today: Day) -> String {
    format!("dlsys-lab-progress-{today}.json")
}

/// What importing `file` over `current` would change; the pages counted
/// are those the learner worked on (whose state is not `fresh`'s).
pub fn preview(
    current: &SavedState,
    file: &ProgressFile,
    fresh: &BTreeMap<String, String>,
) -> ImportPreview {
    let worked = file
        .state
        .lesson_states
        .iter()
        .filter(|(page, state)| fresh.get(*page) != Some(*state))
        .count();
    ImportPreview::of(
        &current.progress,
        &file.state.progress,
        file.exported_on,
        worked,
    )
}

/// Each page's state as a fresh page saves it: a page whose state is this
/// has nothing of the learner's yet (a merge takes the file's over it).
pub fn fresh_page_states() -> BTreeMap<String, String> {
    dlsys_lessons::all()
        .iter()
        .filter_map(|l| l.save_state().map(|text| (l.id().to_owned(), text)))
        .collect()
}

/// `current` with `file` taken in. A merge keeps everything here (settings,
/// and each page's own state where this side has worked on it, that is
/// where it differs from `fresh`'s) and adds the file's solves, days and
/// the other pages' states; a replace takes the file's
/// state whole. Either way what could not be read stays kept aside, and a
/// replace keeps the state it replaced aside too (under `replaced-<secs>`),
/// so nothing is lost.
pub fn apply(
    current: &SavedState,
    file: ProgressFile,
    replace: bool,
    fresh: &BTreeMap<String, String>,
    now_secs: u64,
) -> SavedState {
    let mut unreadable = current.unreadable.clone();
    if replace {
        let before = SavedState {
            unreadable: Default::default(),
            ..current.clone()
        };
        if let Ok(before) = before.to_ron() {
            let key = super::free_key(&unreadable, &format!("replaced-{now_secs}"));
            unreadable.insert(key, before);
        }
        return SavedState {
            unreadable,
            ..file.state
        };
    }
    let mut merged = current.clone();
    merged.progress.merge(&file.state.progress);
    for (page, state) in file.state.lesson_states {
        let untouched = merged
            .lesson_states
            .get(&page)
            .is_none_or(|here| fresh.get(&page) == Some(here));
        if untouched {
            merged.lesson_states.insert(page, state);
        }
    }
    merged.unreadable = unreadable;
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> SavedState {
        let mut state = SavedState {
            lesson: "gemm_fusion".into(),
            lang: Lang::Zh,
            ..Default::default()
        };
        let entry = state.progress.entry("float_formats", "max");
        entry.solved = true;
        entry.solved_on = Some(Day(20_000));
        state.progress.studied(Day(20_000));
        state
            .lesson_states
            .insert("mock_test".into(), "(seed: 3)".into());
        state
            .unreadable
            .insert("unreadable-1".into(), "junk".into());
        state
    }

    #[test]
    fn an_export_reads_back_as_the_same_state_less_what_was_unreadable() {
        let state = state();
        let text = export(&state, Day(20_001)).unwrap_or_default();
        let file = read(text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.exported_on, Some(Day(20_001)));
        assert_eq!(file.state.progress, state.progress);
        assert_eq!(file.state.lesson_states, state.lesson_states);
        assert_eq!(file.state.lang, Lang::Zh);
        assert!(file.state.unreadable.is_empty());
        // Into a fresh profile: the same progress, whichever way.
        for replace in [false, true] {
            let fresh = SavedState::default();
            let after = apply(&fresh, file.clone(), replace, &BTreeMap::new(), 7);
            assert_eq!(after.progress, state.progress);
            assert_eq!(after.lesson_states, state.lesson_states);
        }
    }

    #[test]
    fn bad_files_are_refused_by_name() {
        let good = export(&state(), Day(20_001)).unwrap_or_default();
        let refused = |bytes: &[u8]| read(bytes).err().map(|e| std::mem::discriminant(&e));
        let kind = |e: ImportError| Some(std::mem::discriminant(&e));
        let cut = &good.as_bytes()[..good.len() / 2];
        assert_eq!(
            refused(cut),
            kind(ImportError::NotJson {
                error: String::new()
            })
        );
        assert_eq!(refused(b"\xff\xfe{}"), kind(ImportError::NotText));
        assert_eq!(refused(b"{\"a\": 1}"), kind(ImportError::NotProgress));
        assert_eq!(refused(b"[1, 2]"), kind(ImportError::NotProgress));
        let newer = good.replacen("\"version\": 2", "\"version\": 3", 1);
        assert_eq!(
            read(newer.as_bytes()).err(),
            Some(ImportError::Newer { version: 3 })
        );
        let wrong = good.replacen("\"lang\": \"Zh\"", "\"lang\": 7", 1);
        assert_ne!(wrong, good);
        assert_eq!(
            refused(wrong.as_bytes()),
            kind(ImportError::Schema {
                error: String::new()
            })
        );
        let zoom = good.replacen("\"zoom\": 1.0", "\"zoom\": 1000.0", 1);
        assert_ne!(zoom, good);
        assert_eq!(
            refused(zoom.as_bytes()),
            kind(ImportError::Schema {
                error: String::new()
            })
        );
        let big = vec![b' '; MAX_BYTES as usize + 1];
        assert_eq!(
            read(&big).err(),
            Some(ImportError::TooLarge {
                bytes: MAX_BYTES + 1
            })
        );
        // Every reason reads in both languages, with its values.
        let reason = ImportError::Newer { version: 3 };
        assert!(reason.message(Lang::En).contains('3'));
        assert!(reason.message(Lang::Zh).contains('3'));
    }

    #[test]
    fn a_merge_keeps_what_is_here_and_a_replace_keeps_it_aside() {
        let here = {
            let mut s = state();
            s.lang = Lang::En;
            s.progress.entry("float_formats", "min").solved = true;
            s
        };
        let mut theirs = SavedState::default();
        theirs.progress.entry("gemm_fusion", "tiles").solved = true;
        theirs
            .lesson_states
            .insert("mock_test".into(), "(seed: 9)".into());
        theirs
            .lesson_states
            .insert("write_kernels".into(), "(code: \"x\")".into());
        let text = export(&theirs, Day(1)).unwrap_or_default();
        let file = read(text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let p = preview(&here, &file, &BTreeMap::new());
        assert_eq!(
            (
                p.solved_here,
                p.solved_in_file,
                p.solved_after_merge,
                p.pages_in_file
            ),
            (2, 1, 3, 2)
        );
        let merged = apply(&here, file.clone(), false, &BTreeMap::new(), 5);
        assert_eq!(merged.lang, Lang::En);
        assert_eq!(
            merged
                .progress
                .exercises
                .values()
                .filter(|e| e.solved)
                .count(),
            3
        );
        assert_eq!(
            merged.lesson_states.get("mock_test").map(String::as_str),
            Some("(seed: 3)")
        );
        assert!(merged.lesson_states.contains_key("write_kernels"));
        assert!(merged.unreadable.contains_key("unreadable-1"));
        // A page here as a fresh page saves it takes the file's.
        let fresh = BTreeMap::from([("mock_test".to_owned(), "(seed: 3)".to_owned())]);
        let untouched = apply(&here, file.clone(), false, &fresh, 5);
        assert_eq!(
            untouched.lesson_states.get("mock_test").map(String::as_str),
            Some("(seed: 9)")
        );
        // Only pages worked on count: a page as a fresh one saves it does not.
        assert_eq!(preview(&here, &file, &fresh).pages_in_file, 2);
        let fresh_file = BTreeMap::from([("mock_test".to_owned(), "(seed: 9)".to_owned())]);
        assert_eq!(preview(&here, &file, &fresh_file).pages_in_file, 1);
        // Two replaces in one second keep both states they replaced.
        let once = apply(&here, file.clone(), true, &BTreeMap::new(), 5);
        let twice = apply(&once, file.clone(), true, &BTreeMap::new(), 5);
        assert!(
            twice.unreadable.contains_key("replaced-5")
                && twice.unreadable.contains_key("replaced-5-2")
        );
        let replaced = apply(&here, file, true, &BTreeMap::new(), 5);
        assert_eq!(replaced.progress, theirs.progress);
        let kept = replaced
            .unreadable
            .get("replaced-5")
            .map(|t| super::super::load(Some(t), 0).state);
        assert_eq!(kept.map(|s| s.progress), Some(here.progress.clone()));
        assert!(replaced.unreadable.contains_key("unreadable-1"));
    }
}
