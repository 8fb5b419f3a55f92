//! What the app saves, under a versioned key, and how it survives a save it
//! cannot read: every field that reads is kept, the rest start from their
//! defaults, the learner is told once, and the unreadable text is kept aside.
//! Natively the save file itself is [`save_file::SaveFile`]: it never writes
//! over a file it could not read, and says when a write fails.

pub mod exchange;
mod fields;
#[cfg(not(target_arch = "wasm32"))]
pub mod save_file;

use std::collections::BTreeMap;

use dlsys_core::exercise::Progress;
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};

/// Where the app's state is kept: the native [`save_file::SaveFile`], or any
/// eframe storage (the browser's local storage, the tests' in-memory one).
pub trait Store {
    fn get_string(&self, key: &str) -> Option<String>;
    fn set_string(&mut self, key: &str, value: String);
    /// Writes what was set; a failure is kept for [`Store::take_failure`].
    fn flush(&mut self);
    /// A failed write the learner has not been told about yet.
    fn take_failure(&mut self) -> Option<crate::notice::Notice> {
        None
    }
}

impl<S: eframe::Storage + ?Sized> Store for S {
    fn get_string(&self, key: &str) -> Option<String> {
        eframe::Storage::get_string(self, key)
    }

    fn set_string(&mut self, key: &str, value: String) {
        eframe::Storage::set_string(self, key, value);
    }

    fn flush(&mut self) {
        eframe::Storage::flush(self);
    }
}

/// The storage key of this version's state. A newer app writes a newer key,
/// so an older app never overwrites what it cannot read. Version 2 dates
/// every attempt, solve and visit.
pub const STORAGE_KEY: &str = "dlsys-lab/v2";

/// The keys older versions wrote, newest first: read when this version's
/// is absent (their dates are unknown), and left as they were.
pub const OLDER_KEYS: [&str; 1] = ["dlsys-lab/v1"];

/// Keys a newer dlsys-lab would use; found ones are left untouched.
pub fn newer_keys() -> impl Iterator<Item = String> {
    (3..=9).map(|version| format!("dlsys-lab/v{version}"))
}

/// The saved text: this version's key, else the newest older one (with
/// the key it came from).
pub fn saved_text(get: impl Fn(&str) -> Option<String>) -> Option<(String, &'static str)> {
    std::iter::once(STORAGE_KEY)
        .chain(OLDER_KEYS)
        .find_map(|key| get(key).map(|text| (text, key)))
}

/// Everything the app persists.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SavedState {
    /// The open lesson's id.
    pub lesson: String,
    pub theme: egui::ThemePreference,
    pub zoom: f32,
    pub lang: Lang,
    /// Whether the list of lessons is shown (hidden: the page has the width).
    pub sidebar: bool,
    /// The web's read-aloud of focused controls (egui's `screen_reader`).
    pub speak: bool,
    pub progress: Progress,
    /// Each lesson's own state, as RON, keyed by lesson id.
    pub lesson_states: BTreeMap<String, String>,
    /// Saved data that could not be read, kept so it is never silently lost.
    pub unreadable: BTreeMap<String, String>,
}

impl Default for SavedState {
    fn default() -> Self {
        Self {
            lesson: String::new(),
            theme: egui::ThemePreference::System,
            zoom: 1.0,
            lang: Lang::En,
            sidebar: true,
            speak: false,
            progress: Progress::default(),
            lesson_states: BTreeMap::new(),
            unreadable: BTreeMap::new(),
        }
    }
}

impl SavedState {
    pub fn to_ron(&self) -> Result<String, ron::Error> {
        ron::to_string(self)
    }
}

/// `base`, or `base-2`, `base-3`… : the first key `kept` does not hold yet
/// (two things kept aside in one second must not overwrite each other).
pub fn free_key(kept: &BTreeMap<String, String>, base: &str) -> String {
    (1..)
        .map(|n| {
            if n == 1 {
                base.to_owned()
            } else {
                format!("{base}-{n}")
            }
        })
        .find(|key| !kept.contains_key(key))
        .unwrap_or_else(|| base.to_owned())
}

/// Keeps `text` aside in `kept` under `base` (or the first free key after
/// it, see [`free_key`]), unless the same text is kept already.
pub fn set_aside(kept: &mut BTreeMap<String, String>, base: &str, text: &str) {
    if !kept.values().any(|k| k == text) {
        let key = free_key(kept, base);
        kept.insert(key, text.to_owned());
    }
}

/// The outcome of reading the saved state.
pub struct Loaded {
    pub state: SavedState,
    /// What to tell the user (once), if anything went wrong.
    pub notice: Option<crate::notice::Notice>,
    /// The raw text that could not be read, to keep aside under this key.
    pub set_aside: Option<(String, String)>,
}

/// Reads the state saved under [`STORAGE_KEY`]; `now_secs` names the key the
/// unreadable text is kept under.
pub fn load(saved: Option<&str>, now_secs: u64) -> Loaded {
    let Some(text) = saved else {
        return Loaded {
            state: SavedState::default(),
            notice: None,
            set_aside: None,
        };
    };
    let aside_key = format!("unreadable-{now_secs}");
    let (mut state, notice) = match ron::from_str::<SavedState>(text) {
        Ok(state) => (state, None),
        Err(err) => match field_by_field(text) {
            // Some fields did not read (a newer save, a hand edit): keep the rest.
            Some((state, failed)) => (
                state,
                Some(crate::notice::Notice::FieldsUnreadable {
                    fields: failed.join(", "),
                    error: err.to_string(),
                    aside: aside_key.clone(),
                }),
            ),
            None => (
                SavedState::default(),
                Some(crate::notice::Notice::SaveUnreadable {
                    error: err.to_string(),
                    aside: aside_key.clone(),
                }),
            ),
        },
    };
    if !state.zoom.is_finite() || !(0.25..=4.0).contains(&state.zoom) {
        state.zoom = 1.0;
    }
    Loaded {
        set_aside: notice.is_some().then(|| (aside_key, text.to_owned())),
        state,
        notice,
    }
}

/// Reads each field of a saved state on its own; `None` when the text is
/// not a field list at all. Also returns the fields that did not read.
fn field_by_field(text: &str) -> Option<(SavedState, Vec<String>)> {
    let mut state = SavedState::default();
    let mut failed = Vec::new();
    fn read<T: serde::de::DeserializeOwned>(value: &str, slot: &mut T) -> bool {
        ron::from_str(value).map(|v| *slot = v).is_ok()
    }
    for (name, value) in fields::split_fields(text)? {
        let ok = match name.as_str() {
            "lesson" => read(&value, &mut state.lesson),
            "theme" => read(&value, &mut state.theme),
            "zoom" => read(&value, &mut state.zoom),
            "lang" => read(&value, &mut state.lang),
            "progress" => read(&value, &mut state.progress),
            "lesson_states" => read(&value, &mut state.lesson_states),
            "unreadable" => read(&value, &mut state.unreadable),
            // A field a newer dlsys-lab added: nothing here uses it.
            _ => true,
        };
        if !ok {
            failed.push(name);
        }
    }
    Some((state, failed))
}

/// Where the native app keeps its save file: `$DLSYS_LAB_DATA_DIR/app.ron`,
/// else eframe's per-user data directory.
#[cfg(not(target_arch = "wasm32"))]
pub fn save_file_path() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("DLSYS_LAB_DATA_DIR")
        .filter(|d| !d.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| eframe::storage_dir(crate::APP_ID))?;
    Some(dir.join("app.ron"))
}

pub use dlsys_lessons::kit::now_secs;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reads_old_partial_state() {
        let mut state = SavedState {
            lesson: "welcome".into(),
            zoom: 1.5,
            ..Default::default()
        };
        state.progress.entry("float", "max").solved = true;
        let text = state.to_ron().unwrap();
        let loaded = load(Some(&text), 0);
        assert_eq!(loaded.state, state);
        assert!(loaded.notice.is_none());
        // A save from before a field existed still loads (serde default).
        let old = load(Some("(lesson: \"welcome\")"), 0);
        assert_eq!(old.state.lesson, "welcome");
        assert!(old.notice.is_none());
        assert_eq!(old.state.zoom, 1.0);
    }

    #[test]
    fn corrupt_state_gives_defaults_a_notice_and_keeps_the_text() {
        let loaded = load(Some("(lesson: \"welc"), 42);
        assert_eq!(loaded.state, SavedState::default());
        assert!(
            loaded
                .notice
                .is_some_and(|n| n.to_string().contains("unreadable-42"))
        );
        assert_eq!(
            loaded.set_aside,
            Some(("unreadable-42".to_owned(), "(lesson: \"welc".to_owned()))
        );
    }

    #[test]
    fn absurd_zoom_is_reset() {
        assert_eq!(load(Some("(zoom: 1000.0)"), 0).state.zoom, 1.0);
    }

    #[test]
    fn a_newer_save_keeps_every_field_that_reads() {
        let mut state = SavedState {
            lesson: "gpu_kernels".into(),
            zoom: 1.25,
            theme: egui::ThemePreference::Dark,
            ..Default::default()
        };
        state.progress.entry("float", "max").solved = true;
        let text = state.to_ron().unwrap();
        // A language this build lacks, and a field it has never heard of.
        let newer = text
            .replace("lang:En", "lang:Fr")
            .replacen('(', "(future:[1,2],", 1);
        assert_ne!(newer, text);
        let loaded = load(Some(&newer), 9);
        assert_eq!(loaded.state.lesson, "gpu_kernels");
        assert_eq!(loaded.state.zoom, 1.25);
        assert_eq!(loaded.state.theme, egui::ThemePreference::Dark);
        assert!(
            loaded
                .state
                .progress
                .get("float", "max")
                .is_some_and(|p| p.solved)
        );
        assert_eq!(loaded.state.lang, Lang::En);
        let notice = loaded.notice.map(|n| n.to_string()).unwrap_or_default();
        assert!(
            notice.contains("lang") && notice.contains("everything else was kept"),
            "{notice}"
        );
        assert_eq!(loaded.set_aside.map(|(_, t)| t), Some(newer));
    }
}
