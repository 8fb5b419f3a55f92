//! The learner's record from the shell's side: the day's visit, the record
//! handed to the open page, and what the "Progress" page asks for —
//! export, import (read, shown, then applied) and reset. A refused file
//! changes nothing; a replace or a reset keeps the old state aside.

use dlsys_core::study::{ImportPreview, QuizRecord};
use dlsys_lessons::kit::record::{Record, RecordRequest};

use super::DlsysApp;
use crate::notice::Notice;
use crate::persist::exchange::{self, ImportError, ProgressFile};
use crate::persist::{self, SavedState};

/// A progress file read and shown, waiting for the learner's choice.
pub struct PendingImport {
    file: ProgressFile,
    preview: ImportPreview,
    /// Its name, for the notice.
    name: String,
}

impl DlsysApp {
    /// Dates today's visit to the open lesson (a change only once a day):
    /// a lesson with exercises, not a page that only shows (the welcome, the
    /// glossary, this record), so opening the app is not a study day.
    pub(super) fn record_visit(&mut self) {
        let Some(index) = self.lesson_index(&self.state.lesson) else {
            return;
        };
        if !self.lessons[index].exercises().is_empty() {
            let today = dlsys_lessons::kit::today();
            self.state.progress.visit(&self.state.lesson, today);
        }
    }

    /// The record summed up, as the "Progress" page shows it.
    pub fn overview(&self) -> dlsys_core::study::Overview {
        let quiz = self
            .lessons
            .iter()
            .find_map(|l| l.quiz_record())
            .unwrap_or_default();
        dlsys_core::study::Overview::of(&dlsys_lessons::listed(), &self.state.progress, quiz)
    }

    /// Hands lesson `index` the record before it is drawn: the progress,
    /// the mock test's part (another lesson's, read here, so no lesson
    /// reads another) and the import waiting.
    pub(super) fn show_record(&mut self, index: usize) {
        let quiz_at = self.lessons.iter().position(|l| l.quiz_record().is_some());
        let today = dlsys_lessons::kit::today();
        let import = self.import.as_ref().map(|i| &i.preview);
        let progress = &self.state.progress;
        let kept_aside = self.state.unreadable.len();
        let record = |quiz| Record {
            progress,
            quiz,
            import,
            kept_aside,
            today,
        };
        match quiz_at {
            Some(q) if q != index => {
                let (low, high) = self.lessons.split_at_mut(index.max(q));
                let (page, quiz) = if index < q {
                    (&mut low[index], &high[0])
                } else {
                    (&mut high[0], &low[q])
                };
                page.see_record(&record(quiz.quiz_record().unwrap_or_default()));
            }
            _ => self.lessons[index].see_record(&record(QuizRecord::default())),
        }
    }

    /// Does what the pages asked of the record this frame; `true` when the
    /// state changed (save it now).
    pub(super) fn record_requests(&mut self, ctx: &egui::Context) -> bool {
        let requests: Vec<RecordRequest> = self
            .lessons
            .iter_mut()
            .filter_map(|l| l.take_record_request())
            .collect();
        let mut changed = false;
        for request in requests {
            match request {
                RecordRequest::Export { path } => {
                    let notice = self.export_progress(path.as_deref());
                    self.notices.push(notice);
                }
                RecordRequest::Inspect { path } => self.inspect(ctx, path.as_deref()),
                RecordRequest::Apply { replace } => changed |= self.apply_import(ctx, replace),
                RecordRequest::Cancel => self.import = None,
                RecordRequest::ExportKeptAside => {
                    let notice = self.export_unreadable().unwrap_or_else(|err| err);
                    self.notices.push(notice);
                }
                RecordRequest::Reset => {
                    self.import = None;
                    let fresh = SavedState {
                        lesson: self.state.lesson.clone(),
                        theme: self.state.theme,
                        zoom: self.state.zoom,
                        lang: self.state.lang,
                        sidebar: self.state.sidebar,
                        speak: self.state.speak,
                        ..SavedState::default()
                    };
                    self.keep_aside("reset");
                    self.replace_state(ctx, fresh);
                    self.notices.push(Notice::ProgressReset);
                    changed = true;
                }
            }
        }
        #[cfg(target_arch = "wasm32")]
        if let Some(picked) = crate::web::take_picked() {
            self.import_read(
                picked.and_then(|(name, bytes)| exchange::read(&bytes).map(|file| (name, file))),
            );
        }
        changed
    }

    /// The browser self-test's end: the progress exported (a download) and
    /// the page's file input made ready for the test to hand the file back.
    #[cfg(target_arch = "wasm32")]
    pub(super) fn self_test_export(&mut self, ctx: &egui::Context) {
        let notice = self.export_progress(None);
        self.notices.push(notice);
        crate::web::ready_import(ctx, exchange::MAX_BYTES);
    }

    /// Writes the progress file: to `path` (or beside the save file) on the
    /// desktop, a download in the browser.
    fn export_progress(&self, path: Option<&str>) -> Notice {
        let today = dlsys_lessons::kit::today();
        let text = match exchange::export(&self.saved_state(), today) {
            Ok(text) => text,
            Err(err) => {
                return Notice::ProgressExportFailed {
                    error: err.to_string(),
                };
            }
        };
        let name = exchange::file_name(today);
        #[cfg(target_arch = "wasm32")]
        {
            let _ = path;
            match crate::web::download(&name, &text) {
                Ok(()) => Notice::ProgressExported { file: name },
                Err(error) => Notice::ProgressExportFailed { error },
            }
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            use std::io::Write as _;
            // A path typed is refused if taken; the default name takes the
            // first free `-2`, `-3`… (a second export on the same day).
            let path = path.map_or_else(|| free_path(&name), std::path::PathBuf::from);
            // Never over a file that is there (a backup about to be imported).
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .and_then(|mut file| file.write_all(text.as_bytes()));
            match written {
                Ok(()) => Notice::ProgressExported {
                    file: path.display().to_string(),
                },
                Err(err) => Notice::ProgressExportFailed {
                    error: format!("{}: {err}", path.display()),
                },
            }
        }
    }

    /// Reads a progress file and shows what it would change; a refused one
    /// is said why, and nothing changes.
    fn inspect(&mut self, ctx: &egui::Context, path: Option<&str>) {
        #[cfg(target_arch = "wasm32")]
        {
            let _ = path;
            if let Err(error) = crate::web::pick_file(ctx, exchange::MAX_BYTES) {
                self.import_read(Err(ImportError::Read { error }));
            }
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = ctx;
            let Some(path) = path else {
                return;
            };
            let read =
                exchange::read_path(std::path::Path::new(path)).map(|file| (path.to_owned(), file));
            self.import_read(read);
        }
    }

    fn import_read(&mut self, read: Result<(String, ProgressFile), ImportError>) {
        // What was read, for the browser self-test's round trip.
        #[cfg(target_arch = "wasm32")]
        crate::web::mark_import(&match &read {
            Ok((_, file)) => format!(
                "pages={} solved={}",
                file.state.lesson_states.len(),
                file.state
                    .progress
                    .exercises
                    .values()
                    .filter(|e| e.solved)
                    .count()
            ),
            Err(why) => format!("refused: {why}"),
        });
        match read {
            Ok((name, file)) => {
                let fresh = exchange::fresh_page_states();
                let preview = exchange::preview(&self.saved_state(), &file, &fresh);
                self.import = Some(PendingImport {
                    file,
                    preview,
                    name,
                });
            }
            Err(why) => {
                self.import = None;
                self.notices.push(Notice::ImportRefused { why });
            }
        }
    }

    fn apply_import(&mut self, ctx: &egui::Context, replace: bool) -> bool {
        let Some(pending) = self.import.take() else {
            return false;
        };
        let fresh = exchange::fresh_page_states();
        let state = exchange::apply(
            &self.saved_state(),
            pending.file,
            replace,
            &fresh,
            persist::now_secs(),
        );
        self.replace_state(ctx, state);
        self.notices.push(Notice::Imported {
            file: pending.name,
            replaced: replace,
        });
        true
    }

    /// Keeps the current state aside in the save (as `<why>-<secs>`).
    fn keep_aside(&mut self, why: &str) {
        let state = SavedState {
            unreadable: Default::default(),
            ..self.saved_state()
        };
        if let Ok(text) = state.to_ron() {
            let key = persist::free_key(
                &self.state.unreadable,
                &format!("{why}-{}", persist::now_secs()),
            );
            self.state.unreadable.insert(key, text);
        }
    }

    /// Takes `state` as the app's, the open page staying open: its
    /// settings in effect at once, fresh lessons each given its saved state.
    fn replace_state(&mut self, ctx: &egui::Context, state: SavedState) {
        let lesson = std::mem::take(&mut self.state.lesson);
        let unreadable = std::mem::take(&mut self.state.unreadable);
        self.state = state;
        self.state.lesson = lesson;
        // What was kept aside before stays kept (a replace adds to it).
        for (key, text) in unreadable {
            persist::set_aside(&mut self.state.unreadable, &key, &text);
        }
        ctx.set_theme(self.state.theme);
        ctx.set_zoom_factor(self.state.zoom);
        let speak = self.state.speak;
        ctx.options_mut(|o| o.screen_reader = speak);
        self.lessons = dlsys_lessons::all();
        self.restore_lesson_states();
    }

    /// Writes every unreadable saved text into one file: a download in the
    /// browser, a file beside the save file natively.
    pub(super) fn export_unreadable(&self) -> Result<Notice, Notice> {
        let failed = |error: String| Notice::ExportFailed { error };
        let text = ron::ser::to_string_pretty(&self.state.unreadable, Default::default())
            .map_err(|err| failed(err.to_string()))?;
        let name = format!("dlsys-lab-unreadable-{}.ron", persist::now_secs());
        #[cfg(target_arch = "wasm32")]
        {
            crate::web::download(&name, &text).map_err(failed)?;
            Ok(Notice::Exported { file: name })
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            let path = beside_the_save(&name);
            std::fs::write(&path, text)
                .map_err(|err| failed(format!("{}: {err}", path.display())))?;
            Ok(Notice::Exported {
                file: path.display().to_string(),
            })
        }
    }
}

/// `name` beside the save file, or `<stem>-2.<ext>`, `-3`… where taken.
#[cfg(not(target_arch = "wasm32"))]
fn free_path(name: &str) -> std::path::PathBuf {
    let first = beside_the_save(name);
    if !first.exists() {
        return first;
    }
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, "json"));
    (2..1000)
        .map(|n| beside_the_save(&format!("{stem}-{n}.{ext}")))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

/// `name` in the save file's folder (the temporary folder without one).
#[cfg(not(target_arch = "wasm32"))]
fn beside_the_save(name: &str) -> std::path::PathBuf {
    persist::save_file_path()
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir)
        .join(name)
}
