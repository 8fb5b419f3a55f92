//! The learner's whole record as the shell hands it to the page that sums
//! it up (the "Progress" page), and what that page may ask of the shell:
//! the save is the shell's, so exporting, importing and resetting it are
//! requests, not something a page does.

use dlsys_core::exercise::Progress;
use dlsys_core::study::{Day, ImportPreview, QuizRecord};

/// What the shell shows the open page (see [`crate::Lesson::see_record`]).
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    pub progress: &'a Progress,
    /// The mock test's review boxes and papers.
    pub quiz: QuizRecord<'a>,
    /// A file read and waiting to be imported, with what it would change.
    pub import: Option<&'a ImportPreview>,
    /// Saved states kept aside (unreadable ones, those a reset or a replace
    /// took the place of).
    pub kept_aside: usize,
    pub today: Day,
}

/// An action on the whole record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordRequest {
    /// Write the progress file: to `path` on the desktop, a download in the browser.
    Export { path: Option<String> },
    /// Read a progress file (from `path`; in the browser, one the learner
    /// picks) and show what importing it would change.
    Inspect { path: Option<String> },
    /// Import the file inspected: replacing the progress, or merged into it.
    Apply { replace: bool },
    /// Forget the file inspected.
    Cancel,
    /// Write the states kept aside to a file.
    ExportKeptAside,
    /// Start again (the old progress kept aside).
    Reset,
}
