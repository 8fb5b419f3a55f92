//! The progress page drawn: what next, the lessons' table, the calendar,
//! and export / import / reset.

use dlsys_core::study::{Day, ImportPreview, Overview, Suggestion, Visit};
use dlsys_core::text::Lang;

use super::{ProgressPage, RecordRequest, TEXT, WEEKS, t};
use crate::kit::{self, theme};

pub fn ui(page: &mut ProgressPage, ui: &mut egui::Ui, lang: Lang) {
    kit::header_ui(ui, &TEXT, lang);
    let Some((overview, import, today)) = page.seen.take() else {
        return;
    };
    kit::section(ui, &TEXT, lang, "next", |ui| next_ui(page, ui, &overview, lang));
    kit::section(ui, &TEXT, lang, "lessons", |ui| lessons_ui(page, ui, &overview, lang));
    kit::section(ui, &TEXT, lang, "calendar", |ui| calendar_ui(ui, &overview, today, lang));
    kit::section(ui, &TEXT, lang, "save", |ui| save_ui(page, ui, import.as_ref(), lang));
    page.seen = Some((overview, import, today));
}

fn next_ui(page: &mut ProgressPage, ui: &mut egui::Ui, overview: &Overview, lang: Lang) {
    match overview.suggestion {
        Suggestion::Review { lesson, due } => {
            let title = page.title(lesson, lang);
            ui.label(TEXT.fill(lang, "next.review", &[("due", &due), ("lesson", &title)]));
            if ui.button(t(lang, "next.review_open")).clicked() {
                page.open = Some("mock_test".to_owned());
            }
        }
        Suggestion::Continue { lesson, unsolved } => {
            let title = page.title(lesson, lang);
            ui.label(TEXT.fill(lang, "next.continue", &[("unsolved", &unsolved), ("lesson", &title)]));
            if ui.button(TEXT.fill(lang, "next.open", &[("lesson", &title)])).clicked() {
                page.open = Some(lesson.to_owned());
            }
        }
        Suggestion::AllDone => {
            ui.label(t(lang, "next.done"));
            if ui.button(t(lang, "next.review_open")).clicked() {
                page.open = Some("mock_test".to_owned());
            }
        }
    }
}

fn lessons_ui(page: &mut ProgressPage, ui: &mut egui::Ui, overview: &Overview, lang: Lang) {
    let rows = &overview.rows;
    let mut open = None;
    let keys = ["lessons.lesson", "lessons.solved", "lessons.visit", "lessons.quiz", "lessons.due"];
    kit::table::headed(
        ui,
        "progress_lessons",
        rows,
        kit::table::Header { text: &TEXT, lang, keys: &keys },
        |ui, row| {
            if ui.link(page.title(row.id, lang)).clicked() {
                open = Some(row.id);
            }
        },
        |ui, row| {
            let solved = format!("{}/{}", row.solved, row.total);
            if row.solved == row.total {
                ui.colored_label(theme::good(ui.visuals()), solved);
            } else {
                ui.label(solved);
            }
            ui.label(match row.visit {
                Visit::Never => t(lang, "visit.never").to_owned(),
                Visit::Undated => t(lang, "visit.undated").to_owned(),
                Visit::On(day) => day.to_string(),
            });
            ui.label(quiz_share(row.quiz_right, row.quiz_total, lang));
            if row.due > 0 {
                ui.colored_label(theme::warn(ui.visuals()), row.due.to_string());
            } else {
                ui.label("0");
            }
        },
    );
    if let Some(id) = open {
        page.open = Some(id.to_owned());
    }
    let (solved, total) = overview.totals();
    ui.label(TEXT.fill(
        lang,
        "lessons.totals",
        &[("solved", &solved), ("total", &total), ("tests", &overview.tests)],
    ));
    let undated: usize = rows.iter().map(|r| r.solved_undated).sum();
    if undated + overview.tests_undated > 0 {
        let since = overview.dated_since.map_or_else(String::new, |d| d.to_string());
        ui.weak(TEXT.fill(
            lang,
            "undated",
            &[("solves", &undated), ("tests", &overview.tests_undated), ("since", &since)],
        ));
    }
}

/// "right/total (p %)", or a dash when none was marked.
fn quiz_share(right: usize, total: usize, lang: Lang) -> String {
    if total == 0 {
        return t(lang, "quiz.none").to_owned();
    }
    let percent = format!("{:.0}", 100.0 * right as f64 / total as f64);
    TEXT.fill(lang, "quiz.share", &[("right", &right), ("total", &total), ("percent", &percent)])
}

fn calendar_ui(ui: &mut egui::Ui, overview: &Overview, today: Day, lang: Lang) {
    let days = overview.calendar(today, WEEKS);
    let studied = days.iter().filter(|d| d.1.is_some()).count();
    let solves: usize = days.iter().filter_map(|d| d.1).sum();
    ui.label(TEXT.fill(
        lang,
        "calendar.summary",
        &[("days", &studied), ("weeks", &WEEKS), ("solves", &solves)],
    ));
    let most = days.iter().filter_map(|d| d.1).max().unwrap_or(0).max(1);
    let cell = 14.0;
    let gap = 3.0;
    let size = egui::vec2(WEEKS as f32 * (cell + gap), 7.0 * (cell + gap));
    let (rect, _) = ui.allocate_exact_size(size, egui::Sense::hover());
    let visuals = ui.visuals().clone();
    let studied_colour = theme::good(&visuals);
    for (i, (day, solved)) in days.iter().enumerate() {
        let (week, weekday) = (i / 7, i % 7);
        let min = rect.min + egui::vec2(week as f32 * (cell + gap), weekday as f32 * (cell + gap));
        let square = egui::Rect::from_min_size(min, egui::vec2(cell, cell));
        let fill = match solved {
            None => visuals.widgets.inactive.weak_bg_fill,
            // At least a third of full strength: a studied day with no solve shows.
            Some(n) => studied_colour.gamma_multiply(0.35 + 0.65 * *n as f32 / most as f32),
        };
        ui.painter().rect_filled(square, 2.0, fill);
        if *day == today {
            ui.painter().rect_stroke(
                square,
                2.0,
                egui::Stroke::new(1.5, visuals.text_color()),
                egui::StrokeKind::Inside,
            );
        }
        let tip = match solved {
            Some(n) => TEXT.fill(lang, "calendar.day", &[("date", day), ("solves", n)]),
            None => TEXT.fill(lang, "calendar.idle", &[("date", day)]),
        };
        let id = egui::Id::unique("calendar_day").with(day.0);
        ui.interact(square, id, egui::Sense::hover()).on_hover_text(tip);
    }
}

/// The file field's path: on the desktop, when one is typed.
fn typed_path(page: &ProgressPage) -> Option<String> {
    let path = page.path.trim();
    (!cfg!(target_arch = "wasm32") && !path.is_empty()).then(|| path.to_owned())
}

fn save_ui(page: &mut ProgressPage, ui: &mut egui::Ui, import: Option<&ImportPreview>, lang: Lang) {
    kit::prose(ui, t(lang, "save.intro"));
    let native = !cfg!(target_arch = "wasm32");
    ui.horizontal_wrapped(|ui| {
        if native {
            let label = ui.label(t(lang, "save.path"));
            ui.add(
                egui::TextEdit::singleline(&mut page.path)
                    .hint_text(t(lang, "save.path_hint"))
                    .desired_width(320.0),
            )
            .labelled_by(label.id);
        }
        let path = typed_path(page);
        if ui.button(t(lang, "save.export")).clicked() {
            page.request = Some(RecordRequest::Export { path: path.clone() });
        }
        // The desktop reads the file named; the browser asks for one.
        let can_import = !native || path.is_some();
        if ui.add_enabled(can_import, egui::Button::new(t(lang, "save.import"))).clicked() {
            page.request = Some(RecordRequest::Inspect { path });
        }
    });
    if let Some(preview) = import {
        ui.group(|ui| {
            let date = preview
                .exported_on
                .map_or_else(|| t(lang, "save.undated_file").to_owned(), |d| d.to_string());
            ui.label(TEXT.fill(
                lang,
                "save.preview",
                &[
                    ("date", &date),
                    ("here", &preview.solved_here),
                    ("file", &preview.solved_in_file),
                    ("merged", &preview.solved_after_merge),
                    ("days", &preview.study_days_in_file),
                    ("pages", &preview.pages_in_file),
                ],
            ));
            ui.horizontal_wrapped(|ui| {
                if ui.button(t(lang, "save.merge")).on_hover_text(t(lang, "save.merge_hint")).clicked() {
                    page.request = Some(RecordRequest::Apply { replace: false });
                }
                if ui.button(t(lang, "save.replace")).on_hover_text(t(lang, "save.replace_hint")).clicked() {
                    page.request = Some(RecordRequest::Apply { replace: true });
                }
                if ui.button(t(lang, "save.cancel")).clicked() {
                    page.request = Some(RecordRequest::Cancel);
                }
            });
        });
    }
    if page.kept_aside > 0 {
        ui.horizontal_wrapped(|ui| {
            ui.weak(TEXT.fill(lang, "save.kept_aside", &[("n", &page.kept_aside)]));
            if ui.button(t(lang, "save.export_kept")).clicked() {
                page.request = Some(RecordRequest::ExportKeptAside);
            }
        });
    }
    ui.add_space(8.0);
    if !page.confirm_reset {
        if ui.button(t(lang, "reset.button")).clicked() {
            page.confirm_reset = true;
        }
        return;
    }
    ui.group(|ui| {
        ui.colored_label(theme::warn(ui.visuals()), t(lang, "reset.ask"));
        ui.horizontal_wrapped(|ui| {
            if ui.button(t(lang, "reset.export_first")).clicked() {
                page.request = Some(RecordRequest::Export { path: typed_path(page) });
            }
            if ui.button(t(lang, "reset.confirm")).clicked() {
                page.request = Some(RecordRequest::Reset);
                page.confirm_reset = false;
            }
            if ui.button(t(lang, "save.cancel")).clicked() {
                page.confirm_reset = false;
            }
        });
    });
}
