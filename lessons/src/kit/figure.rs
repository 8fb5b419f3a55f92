//! What every plot shares: its legend, drawn under the plot as ordinary
//! widgets (never over the data, readable by a screen reader, each entry
//! with an optional tooltip), and the record of every plot's series that
//! the app tests read (`tests/lab/common`'s `plot_colours_are_distinct`: no two
//! series of one plot share a colour).

use egui::{Color32, Id, Sense, Ui};
use std::collections::BTreeMap;

/// How a series is drawn, so its swatch looks like it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Line,
    Points,
    /// A shaded band or a bar: a filled square.
    Fill,
    /// A reference line (a roof, a bound): a thin line.
    Rule,
}

/// One legend entry.
#[derive(Clone, Debug)]
pub struct Key {
    pub name: String,
    pub color: Color32,
    pub mark: Mark,
    pub hint: Option<String>,
}

impl Key {
    pub fn new(name: impl Into<String>, color: Color32, mark: Mark) -> Self {
        Self {
            name: name.into(),
            color,
            mark,
            hint: None,
        }
    }

    pub fn line(name: impl Into<String>, color: Color32) -> Self {
        Self::new(name, color, Mark::Line)
    }

    pub fn points(name: impl Into<String>, color: Color32) -> Self {
        Self::new(name, color, Mark::Points)
    }

    pub fn fill(name: impl Into<String>, color: Color32) -> Self {
        Self::new(name, color, Mark::Fill)
    }

    pub fn rule(name: impl Into<String>, color: Color32) -> Self {
        Self::new(name, color, Mark::Rule)
    }

    /// A tooltip on the entry: what the series or band means.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// A plot as the pages draw one: `height` points tall, its axes labelled,
/// and the mouse wheel left to scroll the page (not to zoom the plot).
pub fn plot(
    id: impl egui::AsIdSalt,
    height: f32,
    x: impl Into<egui::WidgetText>,
    y: impl Into<egui::WidgetText>,
) -> egui_plot::Plot<'static> {
    egui_plot::Plot::new(id)
        .height(height)
        .x_axis_label(x)
        .y_axis_label(y)
        .allow_scroll(false)
}

/// Every plot drawn so far in this context: its id and its legend's
/// (name, colour) pairs, the latest frame's.
#[derive(Clone, Debug, Default)]
pub struct Recorded(pub BTreeMap<String, Vec<(String, Color32)>>);

fn record_id() -> Id {
    Id::unique("dlsys_figure_keys")
}

/// What [`legend`] recorded (for tests).
pub fn recorded(ctx: &egui::Context) -> Recorded {
    ctx.data(|d| d.get_temp::<Recorded>(record_id()))
        .unwrap_or_default()
}

/// Records the series of a figure that draws its own key (a table, say),
/// for the colour test.
pub fn record<'a>(
    ctx: &egui::Context,
    plot_id: &str,
    keys: impl IntoIterator<Item = (&'a str, Color32)>,
) {
    let keys: Vec<(String, Color32)> = keys.into_iter().map(|(n, c)| (n.to_owned(), c)).collect();
    ctx.data_mut(|d| {
        d.get_temp_mut_or_default::<Recorded>(record_id())
            .0
            .insert(plot_id.to_owned(), keys);
    });
}

/// The legend of plot `plot_id`: its entries in a row that wraps, each a
/// swatch shaped like the series and its name, under the plot.
pub fn legend(ui: &mut Ui, plot_id: &str, keys: &[Key]) {
    record(
        ui.ctx(),
        plot_id,
        keys.iter().map(|k| (k.name.as_str(), k.color)),
    );
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 12.0;
        for key in keys {
            entry(ui, key);
        }
    });
}

/// One legend entry, a swatch and its name, allocated as one piece so the
/// row wraps between entries, never inside one (and never past the page).
fn entry(ui: &mut Ui, key: &Key) {
    let swatch_w = 16.0;
    let gap = 4.0;
    let galley = egui::WidgetText::from(key.name.as_str()).into_galley(
        ui,
        Some(egui::TextWrapMode::Extend),
        f32::INFINITY,
        egui::TextStyle::Body,
    );
    let height = galley
        .size()
        .y
        .max(ui.text_style_height(&egui::TextStyle::Body));
    let size = egui::vec2(swatch_w + gap + galley.size().x, height);
    let (rect, response) = ui.allocate_exact_size(size, Sense::hover());
    let name = key.name.clone();
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, &name));
    if ui.is_rect_visible(rect) {
        let swatch = egui::Rect::from_min_size(rect.min, egui::vec2(swatch_w, height));
        paint_swatch(ui, swatch, key);
        let text_pos = egui::pos2(rect.left() + swatch_w + gap, rect.top());
        ui.painter()
            .galley(text_pos, galley, ui.visuals().text_color());
    }
    if let Some(hint) = &key.hint {
        response.on_hover_text(hint);
    }
}

fn paint_swatch(ui: &Ui, rect: egui::Rect, key: &Key) {
    let painter = ui.painter();
    let c = rect.center();
    match key.mark {
        Mark::Line => {
            painter.line_segment(
                [egui::pos2(rect.left(), c.y), egui::pos2(rect.right(), c.y)],
                egui::Stroke::new(2.5, key.color),
            );
        }
        Mark::Rule => {
            painter.line_segment(
                [egui::pos2(rect.left(), c.y), egui::pos2(rect.right(), c.y)],
                egui::Stroke::new(1.0, key.color),
            );
        }
        Mark::Points => {
            painter.circle_filled(c, 4.0, key.color);
        }
        Mark::Fill => {
            painter.rect_filled(
                egui::Rect::from_center_size(c, egui::vec2(12.0, 10.0)),
                1.0,
                key.color,
            );
        }
    }
}

/// Colours for `n` series that are all different: the theme's series
/// palette while it lasts, then the same hues moved further toward the
/// text colour each round (distinct for the first 48; no plot has a fifth
/// of that).
pub fn distinct(visuals: &egui::Visuals, n: usize) -> Vec<Color32> {
    (0..n).map(|i| nth(visuals, i)).collect()
}

/// The `i`-th of [`distinct`]'s colours.
pub fn nth(visuals: &egui::Visuals, i: usize) -> Color32 {
    let base = crate::kit::theme::series(visuals, i);
    let round = i / crate::kit::theme::SERIES;
    if round == 0 {
        return base;
    }
    // Round r moves 1 − 0.75^r of the way to the text colour: every round
    // lands somewhere new.
    let t = 1.0 - 0.75f32.powi(round as i32);
    lerp(base, visuals.text_color(), t)
}

fn lerp(a: Color32, b: Color32, t: f32) -> Color32 {
    let mix = |x: u8, y: u8| (f32::from(x) + (f32::from(y) - f32::from(x)) * t).round() as u8;
    Color32::from_rgb(mix(a.r(), b.r()), mix(a.g(), b.g()), mix(a.b(), b.b()))
}

/// The first pair of entries of one plot that share a colour, if any.
pub fn repeated(keys: &[(String, Color32)]) -> Option<(&str, &str)> {
    for (i, (a, ca)) in keys.iter().enumerate() {
        for (b, cb) in &keys[i + 1..] {
            if ca == cb {
                return Some((a, b));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_colours_never_repeat_in_either_theme() {
        for visuals in [egui::Visuals::light(), egui::Visuals::dark()] {
            let colours = distinct(&visuals, 48);
            let keys: Vec<(String, Color32)> = colours
                .iter()
                .enumerate()
                .map(|(i, c)| (i.to_string(), *c))
                .collect();
            assert_eq!(repeated(&keys), None);
        }
    }

    #[test]
    fn a_repeat_is_named() {
        let c = Color32::RED;
        let keys = vec![
            ("a".to_owned(), c),
            ("b".to_owned(), Color32::BLUE),
            ("c".to_owned(), c),
        ];
        assert_eq!(repeated(&keys), Some(("a", "c")));
    }
}
