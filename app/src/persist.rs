//! What the app saves, under a versioned key, and how it survives a save it
//! cannot read: defaults, one notice, and the unreadable data kept aside.

use std::collections::BTreeMap;

use dlsys_core::exercise::Progress;
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};

/// The storage key of this version's state. A newer app writes a newer key,
/// so an older app never overwrites what it cannot read.
pub const STORAGE_KEY: &str = "dlsys-lab/v1";

/// Keys a newer dlsys-lab would use; found ones are left untouched.
pub fn newer_keys() -> impl Iterator<Item = String> {
    (2..=9).map(|version| format!("dlsys-lab/v{version}"))
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
            progress: Progress::default(),
            lesson_states: BTreeMap::new(),
            unreadable: BTreeMap::new(),
        }
    }
}

impl SavedState {
    pub fn to_ron(&self) -> Result<String, String> {
        ron::to_string(self).map_err(|err| err.to_string())
    }
}

/// The outcome of reading the saved state.
pub struct Loaded {
    pub state: SavedState,
    /// What to tell the user (once), if anything went wrong.
    pub notice: Option<String>,
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
    match ron::from_str::<SavedState>(text) {
        Ok(mut state) => {
            if !state.zoom.is_finite() || !(0.25..=4.0).contains(&state.zoom) {
                state.zoom = 1.0;
            }
            Loaded {
                state,
                notice: None,
                set_aside: None,
            }
        }
        Err(err) => {
            let aside_key = format!("{STORAGE_KEY}/unreadable-{now_secs}");
            Loaded {
                state: SavedState::default(),
                notice: Some(format!(
                    "Your saved progress could not be read ({err}). dlsys-lab started with \
                     defaults and keeps a copy of the unreadable data in the save file, \
                     under `{aside_key}`."
                )),
                set_aside: Some((aside_key, text.to_owned())),
            }
        }
    }
}

/// Checks the storage file before eframe reads it: eframe would silently start
/// empty on a file it cannot parse and then overwrite it. An unreadable file is
/// renamed aside and a notice returned.
#[cfg(not(target_arch = "wasm32"))]
pub fn quarantine_unreadable_file(path: &std::path::Path, now_secs: u64) -> Option<String> {
    let text = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(err) => {
            return Some(format!(
                "The save file {} could not be read ({err}); progress will not be saved over it.",
                path.display()
            ));
        }
    };
    let readable = std::str::from_utf8(&text)
        .ok()
        .is_some_and(|s| ron::from_str::<std::collections::HashMap<String, String>>(s).is_ok());
    if readable {
        return None;
    }
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".unreadable-{now_secs}"));
    let aside = std::path::PathBuf::from(aside);
    match std::fs::rename(path, &aside) {
        Ok(()) => Some(format!(
            "The save file could not be read; dlsys-lab started with defaults and moved it to {}.",
            aside.display()
        )),
        Err(err) => Some(format!(
            "The save file {} could not be read and could not be moved aside ({err}).",
            path.display()
        )),
    }
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

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn now_secs() -> u64 {
    web_time::SystemTime::now()
        .duration_since(web_time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

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
                .is_some_and(|n| n.contains("dlsys-lab/v1/unreadable-42"))
        );
        assert_eq!(
            loaded.set_aside,
            Some((
                "dlsys-lab/v1/unreadable-42".to_owned(),
                "(lesson: \"welc".to_owned()
            ))
        );
    }

    #[test]
    fn absurd_zoom_is_reset() {
        assert_eq!(load(Some("(zoom: 1000.0)"), 0).state.zoom, 1.0);
    }

    #[test]
    fn unreadable_file_is_moved_aside_and_readable_one_kept() {
        let dir = std::env::temp_dir().join(format!("dlsys-persist-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("app.ron");
        std::fs::write(&path, "{ \"dlsys-lab/v1\": \"(lesson: \\\"x\\\")\" }").unwrap();
        assert_eq!(quarantine_unreadable_file(&path, 7), None);
        assert!(path.exists());
        std::fs::write(&path, "garbage {{{").unwrap();
        let notice = quarantine_unreadable_file(&path, 7);
        assert!(notice.is_some());
        assert!(!path.exists());
        assert_eq!(
            std::fs::read_to_string(dir.join("app.ron.unreadable-7")).unwrap(),
            "garbage {{{"
        );
        assert_eq!(
            quarantine_unreadable_file(&dir.join("missing.ron"), 7),
            None
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
