//! The end of a lesson page: "← previous" and "next →", each named by its
//! lesson's title (the welcome page has no previous, the last page no next).

use dlsys_core::text::Lang;
use dlsys_lessons::Lesson;
use dlsys_lessons::kit::text as shell_text;

/// Draws the two links below lesson `index`; the route of the one clicked.
pub fn ui(
    ui: &mut egui::Ui,
    lessons: &[Box<dyn Lesson>],
    index: usize,
    lang: Lang,
) -> Option<String> {
    let previous = index.checked_sub(1).and_then(|i| lessons.get(i));
    let next = lessons.get(index + 1);
    if previous.is_none() && next.is_none() {
        return None;
    }
    ui.add_space(12.0);
    ui.separator();
    let text = shell_text();
    let mut open = None;
    ui.horizontal_wrapped(|ui| {
        if let Some(previous) = previous {
            let label = text.fill(
                lang,
                "app.previous_lesson",
                &[("title", &previous.title(lang))],
            );
            if ui.button(label).clicked() {
                open = Some(previous.id().to_owned());
            }
        }
        if let Some(next) = next {
            let label = text.fill(lang, "app.next_lesson", &[("title", &next.title(lang))]);
            // At the right edge where it fits, the reading direction's "on".
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if ui.button(label).clicked() {
                    open = Some(next.id().to_owned());
                }
            });
        }
    });
    open
}
