//! The "Progress" page: the learner's record summed up by
//! [`dlsys_core::study::Overview`] — what next, each lesson's solved
//! exercises, last visit, mock-test accuracy and questions due, the study
//! days — and the record taken elsewhere: export, import (shown before it
//! is applied) and reset (asked first, with an export offered). The record
//! is the shell's: the page reads it through [`Lesson::see_record`] and
//! asks for changes through [`Lesson::take_record_request`].

mod view;

use dlsys_core::exercise::Progress;
use dlsys_core::study::{Day, ImportPreview, Overview, QuizRecord};

use crate::kit::record::{Record, RecordRequest};
use crate::{Env, Lesson, Listed};

crate::lesson_text!("progress");

/// Weeks the calendar shows.
const WEEKS: u32 = 12;

/// The page (see the module's docs).
#[derive(Default)]
pub struct ProgressPage {
    lessons: Vec<Listed>,
    /// The overview of the record last seen, with the import waiting and today.
    seen: Option<(Overview, Option<ImportPreview>, Day)>,
    /// The file field (desktop).
    path: String,
    /// Saved states the shell keeps aside.
    kept_aside: usize,
    /// "Reset my progress…" was clicked: ask before doing it.
    confirm_reset: bool,
    request: Option<RecordRequest>,
    open: Option<String>,
}

impl ProgressPage {
    /// A lesson's title in `lang` (its id where the registry lacks it).
    fn title(&self, id: &str, lang: dlsys_core::text::Lang) -> String {
        self.lessons
            .iter()
            .find(|l| l.id == id)
            .map_or_else(|| id.to_owned(), |l| l.catalog.get(lang, "title").to_owned())
    }

    /// The overview of `progress` and `quiz` over the registry's lessons.
    pub fn overview(&self, progress: &Progress, quiz: QuizRecord<'_>) -> Overview {
        Overview::of(&self.lessons, progress, quiz)
    }
}

impl Lesson for ProgressPage {
    crate::lesson_identity!();

    fn see_registry(&mut self, lessons: &[Listed]) {
        self.lessons = lessons.to_vec();
    }

    fn see_record(&mut self, record: &Record<'_>) {
        let overview = self.overview(record.progress, record.quiz);
        self.seen = Some((overview, record.import.cloned(), record.today));
        self.kept_aside = record.kept_aside;
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        view::ui(self, ui, env.lang);
    }

    fn take_open_request(&mut self) -> Option<String> {
        self.open.take()
    }

    fn take_record_request(&mut self) -> Option<RecordRequest> {
        self.request.take()
    }
}
