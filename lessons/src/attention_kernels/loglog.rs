//! One log-log line plot for the lesson's two curves against N (extra
//! memory from the models, time from the sweep), its legend under it.

use dlsys_core::float::show_sig;
use egui::Color32;
use egui_plot::{GridMark, Line, Plot, PlotPoints, Points};

use crate::kit::figure::{self, Key};
use crate::kit::theme;

/// A named series of (x, y) points, both positive.
pub struct Series {
    pub name: String,
    pub color: Color32,
    pub points: Vec<(f64, f64)>,
}

pub fn plot(ui: &mut egui::Ui, id: &str, x_label: &str, y_label: &str, series: &[Series]) {
    let decade = |mark: GridMark, _: &std::ops::RangeInclusive<f64>| {
        if mark.value.fract() == 0.0 && mark.value.abs() < 300.0 {
            show_sig(10f64.powf(mark.value), 3)
        } else {
            String::new()
        }
    };
    Plot::new(id)
        .height(240.0)
        .x_axis_label(x_label)
        .y_axis_label(y_label)
        .x_axis_formatter(decade)
        .y_axis_formatter(decade)
        .x_grid_spacer(theme::decade_grid())
        .y_grid_spacer(theme::decade_grid())
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .show(ui, |plot| {
            for s in series {
                let points: Vec<[f64; 2]> = s
                    .points
                    .iter()
                    .filter(|(x, y)| *x > 0.0 && *y > 0.0)
                    .map(|(x, y)| [x.log10(), y.log10()])
                    .collect();
                plot.line(Line::new(s.name.clone(), PlotPoints::from(points.clone())).color(s.color).width(2.0));
                plot.points(Points::new(s.name.clone(), PlotPoints::from(points)).color(s.color).radius(3.0));
            }
        });
    let keys: Vec<Key> = series.iter().map(|s| Key::line(s.name.clone(), s.color)).collect();
    figure::legend(ui, id, &keys);
}
