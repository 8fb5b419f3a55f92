//! What lesson pages share: the theme, plots and their legends, the Gantt
//! painter, the exercise panel and what exercise generators share, work
//! longer than a frame, the GPU race and its plots, the gradient-check
//! panel, fonts, data sets, and the page's own pieces (header, sections,
//! number fields, column headers). `kit` imports no lesson, and no lesson
//! imports another: `scripts/check-layering.sh` holds both.

pub mod background;
pub mod check_panel;
pub mod code_editor;
pub mod datasets;
pub mod exercise_kit;
pub mod exercise_panel;
pub mod figure;
pub mod fonts;
pub mod frame_budget;
pub mod gantt;
mod gpu_status;
pub mod kernel_plots;
pub mod memo;
mod page;
pub mod race;
pub mod record;
pub mod table;
pub mod theme;
pub mod wgsl_features;

use std::sync::LazyLock;

use dlsys_core::text::Catalog;

pub use gpu_status::{GpuStatus, NoGpu, adapter_label};
pub use page::{
    anchor, choice, choice_of_names, choice_tipped, column_header, header_ui, lesson_link,
    number_field, prose, request_scroll, scroll_missed, scroll_wanted, section, section_opened,
    sections_seen,
};

static TEXT: LazyLock<Catalog> = LazyLock::new(|| {
    Catalog::embedded(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/lessons/shell.ron"
    )))
});

/// The shell's and the kit's own prose (`assets/lessons/shell.ron`): the
/// exercise panel, the race, the check panel, the app's labels.
pub fn text() -> &'static Catalog {
    &TEXT
}

/// Items joined into one list, with the language's separator.
pub fn join(lang: dlsys_core::text::Lang, items: &[String]) -> String {
    items.join(TEXT.get(lang, "list.sep"))
}

/// A day fixed in place of the clock's (0: none), so that pictures and
/// tests of dated pages do not change with the date.
static FIXED_DAY: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Makes [`today`] answer `day` from now on (the tests' and snapshots' clock).
pub fn fix_today(day: dlsys_core::study::Day) {
    FIXED_DAY.store(day.0, std::sync::atomic::Ordering::Relaxed);
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn now_secs() -> u64 {
    web_time::SystemTime::now()
        .duration_since(web_time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Today, by the machine's clock (UTC): the day attempts, solves and
/// visits are dated with.
pub fn today() -> dlsys_core::study::Day {
    let fixed = FIXED_DAY.load(std::sync::atomic::Ordering::Relaxed);
    if fixed != 0 {
        return dlsys_core::study::Day(fixed);
    }
    dlsys_core::study::Day::from_unix_secs(now_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_catalog_parses() {
        assert!(Catalog::parse(include_str!("../../../assets/lessons/shell.ron")).is_ok());
        for key in [
            "panel.heading",
            "panel.check",
            "panel.reveal",
            "panel.reroll",
        ] {
            assert!(text().contains(key), "{key}");
        }
    }
}
