//! The lesson's timelines drawn one way: a row per node or stream, a bar
//! per thing it does on the virtual clock, both ends of the time axis
//! labelled, and the summary as what a screen reader says.

use dlsys_core::memory::show_seconds;
use egui::{Color32, Sense, Vec2};

/// One interval on a row.
pub struct Bar {
    pub start_s: f64,
    pub end_s: f64,
    pub color: Color32,
}

pub struct Row {
    pub label: String,
    pub bars: Vec<Bar>,
}

/// Draws `rows` from `from_s` to `end_s` (bars outside are clipped) and the
/// summary under them; returns the drawing's response and the (row, bar)
/// under the pointer, for the caller's tooltip.
pub fn draw(
    ui: &mut egui::Ui,
    rows: &[Row],
    (from_s, end_s): (f64, f64),
    summary: &str,
) -> (egui::Response, Option<(usize, usize)>) {
    let visuals = ui.visuals().clone();
    let font = egui::FontId::proportional(12.0);
    let row = 16.0;
    // As wide as the longest label, in either language.
    let label_width = rows
        .iter()
        .map(|r| {
            ui.painter()
                .layout_no_wrap(r.label.clone(), font.clone(), visuals.text_color())
                .size()
                .x
        })
        .fold(0.0f32, f32::max)
        + 8.0;
    let width = ui.available_width().max(200.0);
    let (rect, response) = ui.allocate_exact_size(
        Vec2::new(width, row * rows.len() as f32 + 18.0),
        Sense::hover(),
    );
    let painter = ui.painter_at(rect);
    let left = rect.left() + label_width;
    let span = (rect.width() - label_width - 8.0).max(10.0);
    let width = (end_s - from_s).max(1e-12);
    let end = from_s + width;
    let x = |time: f64| left + span * ((time.clamp(from_s, end) - from_s) / width) as f32;
    let mut hovered = None;
    for (r, content) in rows.iter().enumerate() {
        let y = rect.top() + row * r as f32;
        painter.text(
            egui::pos2(rect.left(), y + row / 2.0),
            egui::Align2::LEFT_CENTER,
            &content.label,
            font.clone(),
            visuals.text_color(),
        );
        for (b, bar) in content
            .bars
            .iter()
            .enumerate()
            .filter(|(_, bar)| bar.end_s >= from_s && bar.start_s <= end)
        {
            // A pixel's gap at each end keeps back-to-back bars apart.
            let (from, to) = (x(bar.start_s), x(bar.end_s));
            let gap = if to - from > 4.0 { 1.0 } else { 0.0 };
            let shape = egui::Rect::from_min_max(
                egui::pos2(from + gap, y + 2.0),
                egui::pos2(to.max(from + 1.0) - gap, y + row - 2.0),
            );
            painter.rect_filled(shape, 1.0, bar.color);
            if response.hover_pos().is_some_and(|p| shape.contains(p)) {
                hovered = Some((r, b));
            }
        }
    }
    let axis_y = rect.top() + row * rows.len() as f32 + 2.0;
    for (time, align) in [
        (from_s, egui::Align2::LEFT_TOP),
        (end, egui::Align2::RIGHT_TOP),
    ] {
        painter.text(
            egui::pos2(x(time), axis_y),
            align,
            show_seconds(time),
            font.clone(),
            visuals.weak_text_color(),
        );
    }
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, summary));
    ui.label(summary);
    (response, hovered)
}

/// A colour key: a square of each colour and its name (the figure
/// legend, recorded under `id` for the colour test).
pub fn legend(ui: &mut egui::Ui, id: &str, entries: &[(Color32, &str)]) {
    let keys: Vec<crate::kit::figure::Key> = entries
        .iter()
        .map(|(color, name)| crate::kit::figure::Key::fill(*name, *color))
        .collect();
    crate::kit::figure::legend(ui, id, &keys);
}
