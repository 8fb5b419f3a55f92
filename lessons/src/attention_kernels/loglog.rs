//! One log-log line plot for the lesson's two curves against N (extra
//! memory from the models, time from the sweep), its legend under it.

use dlsys_core::float::show_sig;
use egui::Color32;
use egui_plot::{GridMark, Line, PlotPoints, Points};

use crate::kit::figure::{self, Key};
use crate::kit::theme;

/// `bytes` at a decade in decimal units (1 kB, 10 MB), as the axis marks them.
pub fn decimal_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 999.5 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{} {}", show_sig(value, 3), UNITS[unit])
}

/// A named series of (x, y) points, both positive.
pub struct Series {
    pub name: String,
    pub color: Color32,
    pub points: Vec<(f64, f64)>,
}

/// `y_unit` writes a y value (bytes, milliseconds) at each decade.
pub fn plot(
    ui: &mut egui::Ui,
    id: &str,
    (x_label, y_label): (&str, &str),
    y_unit: fn(f64) -> String,
    series: &[Series],
) {
    let at_decades = |unit: fn(f64) -> String| {
        move |mark: GridMark, _: &std::ops::RangeInclusive<f64>| {
            if mark.value.fract() == 0.0 && mark.value.abs() < 300.0 {
                unit(10f64.powf(mark.value))
            } else {
                String::new()
            }
        }
    };
    let plain: fn(f64) -> String = |x| show_sig(x, 3);
    crate::kit::figure::plot(id, 240.0, x_label, y_label)
        .x_axis_formatter(at_decades(plain))
        .y_axis_formatter(at_decades(y_unit))
        .x_grid_spacer(theme::decade_grid())
        .y_grid_spacer(theme::decade_grid())
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
