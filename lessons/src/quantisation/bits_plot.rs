//! The tables drawn against bits: one line per granularity, the fp32
//! model's figure as a rule, the legend below (the MLP's table and the
//! CNN's or transformer's share it).

use egui_plot::{HLine, Line, PlotPoints};

use crate::kit::figure::{Key, legend};
use crate::kit::theme::{self, ReadableAxes as _};

/// One line: its name and its `[bits, value]` points.
pub type Series = (String, Vec<[f64; 2]>);

/// Draws `series` against bits (x) with `y_label`, and `fp32` as a rule.
pub fn ui(ui: &mut egui::Ui, id: &str, x_label: &str, y_label: &str, series: &[Series], fp32: (&str, f64)) {
    let visuals = ui.visuals().clone();
    let colours: Vec<egui::Color32> = (0..series.len()).map(|i| theme::series(&visuals, i)).collect();
    let rule = theme::series(&visuals, series.len());
    crate::kit::figure::plot(id, 180.0, x_label, y_label)
        .readable_x()
        .readable_y()
        .show(ui, |plot| {
            plot.hline(HLine::new(fp32.0.to_owned(), fp32.1).color(rule));
            for ((name, points), colour) in series.iter().zip(&colours) {
                let points: PlotPoints<'static> = points.clone().into();
                plot.line(Line::new(name.clone(), points).color(*colour));
            }
        });
    let mut keys: Vec<Key> = series
        .iter()
        .zip(&colours)
        .map(|((name, _), colour)| Key::line(name.clone(), *colour))
        .collect();
    keys.push(Key::rule(fp32.0.to_owned(), rule));
    legend(ui, id, &keys);
}
