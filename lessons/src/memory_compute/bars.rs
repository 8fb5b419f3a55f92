//! Stacked bars of bytes per component, on one scale, and the table that is
//! their legend (and what a screen reader reads: the bars are drawn).

use dlsys_core::names::Named as _;
use dlsys_core::memory::{Component, Components, show_bytes};
use dlsys_core::text::Lang;
use egui::{Color32, Rect, Sense, Stroke, Vec2};

use super::TEXT;
use crate::kit::theme;

/// One bar: its name, bytes per component, and the components it does
/// not know (shown as "—", not as 0).
pub struct Bar {
    pub label: String,
    pub parts: Components,
    pub unknown: &'static [Component],
}

/// The component's colour: each its own, stable across bars and themes.
pub fn color(visuals: &egui::Visuals, c: Component) -> Color32 {
    let index = Component::ALL.iter().position(|k| *k == c).unwrap_or(0);
    theme::series(visuals, index)
}

/// The bars, longest = the width available, then the legend table with a
/// column per bar. Components that are zero in every bar are left out.
pub fn stacked(ui: &mut egui::Ui, id: &str, bars: &[Bar], lang: Lang) {
    let visuals = ui.visuals().clone();
    let most = bars.iter().map(|b| b.parts.total()).max().unwrap_or(0).max(1);
    let label_width = 110.0;
    for bar in bars {
        ui.horizontal(|ui| {
            ui.add_sized(
                [label_width, 20.0],
                egui::Label::new(egui::RichText::new(&bar.label).strong()).truncate(),
            );
            let width = (ui.available_width() - 80.0).max(60.0);
            let (rect, response) = ui.allocate_exact_size(Vec2::new(width, 20.0), Sense::hover());
            let painter = ui.painter_at(rect);
            painter.rect_stroke(
                rect,
                2.0,
                Stroke::new(1.0, visuals.weak_text_color()),
                egui::StrokeKind::Inside,
            );
            let mut x = rect.left();
            let mut hovered = None;
            for (c, bytes) in bar.parts.nonzero() {
                let w = width * bytes as f32 / most as f32;
                let part = Rect::from_min_size(egui::pos2(x, rect.top()), Vec2::new(w, rect.height()));
                painter.rect_filled(part, 0.0, color(&visuals, c));
                if response.hover_pos().is_some_and(|p| part.contains(p)) {
                    hovered = Some((c, bytes));
                }
                x += w;
            }
            if let Some((c, bytes)) = hovered {
                response.on_hover_text(format!("{}: {}", c.name(lang), show_bytes(bytes)));
            }
            ui.label(show_bytes(bar.parts.total()));
        });
    }
    ui.add_space(4.0);
    let shown: Vec<(String, Color32)> = Component::ALL
        .into_iter()
        .filter(|c| bars.iter().any(|b| b.parts.get(*c) != 0))
        .map(|c| (c.name(lang), color(&visuals, c)))
        .collect();
    crate::kit::figure::record(ui.ctx(), id, shown.iter().map(|(n, c)| (n.as_str(), *c)));
    theme::sideways(ui, id, |ui| {
        egui::Grid::new(id).striped(true).show(ui, |ui| {
            ui.label("");
            ui.strong(TEXT.get(lang, "bars.component"));
            for bar in bars {
                ui.strong(&bar.label);
            }
            ui.end_row();
            for c in Component::ALL {
                if bars.iter().all(|b| b.parts.get(c) == 0) {
                    continue;
                }
                let (swatch, _) = ui.allocate_exact_size(Vec2::splat(12.0), Sense::hover());
                ui.painter().rect_filled(swatch, 2.0, color(&visuals, c));
                ui.label(c.name(lang))
                    .on_hover_text(TEXT.get(lang, &format!("component.{}.tip", c.key())));
                for bar in bars {
                    if bar.unknown.contains(&c) {
                        ui.label("—").on_hover_text(TEXT.get(lang, "bars.unknown"));
                    } else {
                        ui.label(show_bytes(bar.parts.get(c)));
                    }
                }
                ui.end_row();
            }
            ui.label("");
            ui.strong(TEXT.get(lang, "bars.total"));
            for bar in bars {
                ui.strong(show_bytes(bar.parts.total()));
            }
            ui.end_row();
        });
    });
}
