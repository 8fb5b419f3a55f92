//! What the shell tells the learner once — a save it could not read or
//! write, a route to no lesson, an export — kept as a reason and its
//! values, and said in the language shown when it is drawn (the shell's
//! catalog, `assets/lessons/shell.ron`, `notice.*`).

use dlsys_core::text::Lang;

/// One thing to tell the learner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// Some fields of the saved state did not read; the rest was kept.
    FieldsUnreadable {
        fields: String,
        error: String,
        aside: String,
    },
    /// The saved state did not read at all.
    SaveUnreadable {
        error: String,
        aside: String,
    },
    /// A newer dlsys-lab's save, left untouched.
    NewerSave {
        key: String,
    },
    /// A lesson's own saved state did not read.
    LessonState {
        id: String,
        error: String,
    },
    /// A route named no lesson.
    NoLesson {
        id: String,
        known: String,
    },
    Exported {
        file: String,
    },
    ExportFailed {
        error: String,
    },
    /// The save file could not be read: this session is saved beside it.
    FileUnreadable {
        path: String,
        error: String,
        session: String,
    },
    /// The save file did not parse and was moved aside.
    FileMovedAside {
        aside: String,
    },
    /// The save file did not parse and could not be moved aside.
    FileStuck {
        path: String,
        error: String,
        session: String,
    },
    /// A progress file was refused; nothing changed.
    ImportRefused {
        why: crate::persist::exchange::ImportError,
    },
    /// A progress file was taken in, merged or replacing.
    Imported {
        file: String,
        replaced: bool,
    },
    ProgressExported {
        file: String,
    },
    ProgressExportFailed {
        error: String,
    },
    /// The progress was reset (the old one kept aside).
    ProgressReset,
    /// A write of the progress failed (it is kept in memory and tried again).
    SaveFailed {
        path: String,
        error: String,
    },
}

impl Notice {
    /// The notice in `lang`.
    pub fn message(&self, lang: Lang) -> String {
        let text = dlsys_lessons::kit::text();
        let fill = |key: &str, args: &[(&str, &String)]| {
            let args: Vec<(&str, &dyn std::fmt::Display)> = args
                .iter()
                .map(|(k, v)| -> (&str, &dyn std::fmt::Display) { (k, *v) })
                .collect();
            text.fill(lang, key, &args)
        };
        match self {
            Self::FieldsUnreadable {
                fields,
                error,
                aside,
            } => fill(
                "notice.fields_unreadable",
                &[("fields", fields), ("error", error), ("aside", aside)],
            ),
            Self::SaveUnreadable { error, aside } => fill(
                "notice.save_unreadable",
                &[("error", error), ("aside", aside)],
            ),
            Self::NewerSave { key } => fill("notice.newer_save", &[("key", key)]),
            Self::LessonState { id, error } => {
                fill("notice.lesson_state", &[("id", id), ("error", error)])
            }
            Self::NoLesson { id, known } => {
                fill("notice.no_lesson", &[("id", id), ("known", known)])
            }
            Self::Exported { file } => fill("app.exported", &[("file", file)]),
            Self::ExportFailed { error } => fill("notice.export_failed", &[("error", error)]),
            Self::FileUnreadable {
                path,
                error,
                session,
            } => fill(
                "notice.file_unreadable",
                &[("path", path), ("error", error), ("session", session)],
            ),
            Self::FileMovedAside { aside } => fill("notice.file_moved_aside", &[("aside", aside)]),
            Self::FileStuck {
                path,
                error,
                session,
            } => fill(
                "notice.file_stuck",
                &[("path", path), ("error", error), ("session", session)],
            ),
            Self::SaveFailed { path, error } => {
                fill("notice.save_failed", &[("path", path), ("error", error)])
            }
            Self::ImportRefused { why } => {
                fill("notice.import_refused", &[("why", &why.message(lang))])
            }
            Self::Imported { file, replaced } => {
                let key = if *replaced {
                    "notice.imported_replace"
                } else {
                    "notice.imported_merge"
                };
                fill(key, &[("file", file)])
            }
            Self::ProgressExported { file } => fill("notice.progress_exported", &[("file", file)]),
            Self::ProgressExportFailed { error } => {
                fill("notice.progress_export_failed", &[("error", error)])
            }
            Self::ProgressReset => text.get(lang, "notice.progress_reset").to_owned(),
        }
    }
}

/// English (logs, stderr).
impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message(Lang::En))
    }
}
