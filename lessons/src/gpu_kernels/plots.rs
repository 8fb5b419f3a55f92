//! The GPU lesson's plots: bandwidth per kernel against the copy kernel, and
//! the roofline, each point at its own run's problem size. Every bar and
//! every point carries its kernel's name or number; colours mark the family.

use dlsys_core::float::show_sig;
use dlsys_core::kernels::Kernel;
use dlsys_core::text::Lang;
use dlsys_shaders::report::Measured;
use egui::Color32;
use egui_plot::{Bar, BarChart, GridMark, Line, Plot, PlotPoint, PlotPoints, Points, Text};

use super::TEXT;
use crate::figure::{self, Key};
use crate::theme;

/// (kernel id, arithmetic intensity, Gop/s) for each run that has a roofline point.
#[cfg(test)]
pub(super) fn roofline_points(ran: &[Measured]) -> Vec<(String, f64, f64)> {
    ran.iter()
        .filter_map(|r| r.roofline.map(|(ai, gops)| (r.kernel.id(), ai, gops)))
        .collect()
}

/// The families the plots colour by, in legend order.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Copy,
    Softmax,
    Reduce,
}

impl Family {
    const ALL: [Self; 3] = [Self::Copy, Self::Softmax, Self::Reduce];

    fn of(kernel: Kernel) -> Self {
        match kernel {
            Kernel::Copy => Self::Copy,
            Kernel::Softmax(_) => Self::Softmax,
            Kernel::Reduce(..) => Self::Reduce,
        }
    }

    fn key(self) -> &'static str {
        match self {
            Self::Copy => "plot.family.copy",
            Self::Softmax => "plot.family.softmax",
            Self::Reduce => "plot.family.reduce",
        }
    }

    fn color(self, visuals: &egui::Visuals) -> Color32 {
        let i = Self::ALL.iter().position(|f| *f == self).unwrap_or(0);
        figure::nth(visuals, i)
    }
}

/// The legend entries of the families present in `ran`.
fn family_keys(ran: &[Measured], visuals: &egui::Visuals, lang: Lang) -> Vec<Key> {
    Family::ALL
        .into_iter()
        .filter(|f| ran.iter().any(|r| Family::of(r.kernel) == *f))
        .map(|f| Key::fill(TEXT.get(lang, f.key()), f.color(visuals)))
        .collect()
}

/// The bandwidth bars and the roofline of `ran` (GPU runs, or the CPU
/// path's reference timings, which the plots then label as such).
pub(super) fn show(ui: &mut egui::Ui, lang: Lang, ran: &[Measured]) {
    let t = |key| TEXT.get(lang, key);
    let visuals = ui.visuals().clone();
    if ran.is_empty() {
        return;
    }
    if ran.iter().any(|r| r.on_cpu) {
        ui.colored_label(theme::warn(&visuals), t("plot.cpu_note"));
    }
    let copy = ran
        .iter()
        .find(|r| r.kernel == Kernel::Copy)
        .map(|r| r.gb_per_s);
    let wide = ui.available_width() >= 900.0;
    let draw = |ui: &mut egui::Ui, which: usize| {
        if which == 0 {
            bandwidth(ui, lang, ran, copy, &visuals);
        } else {
            roofline(ui, lang, ran, copy, &visuals);
        }
    };
    if wide {
        ui.columns(2, |cols| {
            draw(&mut cols[0], 0);
            draw(&mut cols[1], 1);
        });
    } else {
        draw(ui, 0);
        draw(ui, 1);
    }
}

/// Horizontal bars, one per kernel, its name on the axis beside it and its
/// GB/s at its end; the copy kernel's bandwidth as a line.
fn bandwidth(
    ui: &mut egui::Ui,
    lang: Lang,
    ran: &[Measured],
    copy: Option<f64>,
    visuals: &egui::Visuals,
) {
    let t = |key| TEXT.get(lang, key);
    ui.label(t("plot.bandwidth"));
    let n = ran.len();
    // The first kernel on top: bar i sits at y = n − 1 − i.
    let y_of = move |i: usize| (n - 1 - i) as f64;
    let bars: Vec<Bar> = ran
        .iter()
        .enumerate()
        .map(|(i, r)| {
            Bar::new(y_of(i), r.gb_per_s)
                .name(r.kernel.id())
                .fill(Family::of(r.kernel).color(visuals))
                .width(0.7)
        })
        .collect();
    let names: Vec<String> = ran.iter().rev().map(|r| r.kernel.id()).collect();
    let widest = ran.iter().map(|r| r.gb_per_s).fold(0.0f64, f64::max);
    let labels: Vec<(f64, f64, String)> = ran
        .iter()
        .enumerate()
        .map(|(i, r)| (y_of(i), r.gb_per_s, show_sig(r.gb_per_s, 3)))
        .collect();
    let text_color = visuals.text_color();
    Plot::new("gpu_bandwidth")
        .height(22.0 * n as f32 + 48.0)
        .x_axis_label("GB/s")
        .y_axis_formatter(move |mark, _| {
            names
                .get(mark.value.round() as usize)
                .filter(|_| mark.value.fract() == 0.0)
                .cloned()
                .unwrap_or_default()
        })
        .y_grid_spacer(theme::integer_grid())
        .include_x(0.0)
        .include_x(widest * 1.25)
        .show_grid([true, false])
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .show(ui, |plot| {
            plot.bar_chart(BarChart::new("GB/s", bars).horizontal());
            for (y, x, text) in labels {
                plot.text(
                    Text::new("", PlotPoint::new(x, y), format!(" {text}"))
                        .anchor(egui::Align2::LEFT_CENTER)
                        .color(text_color),
                );
            }
            if let Some(c) = copy {
                plot.vline(
                    egui_plot::VLine::new(t("plot.copy"), c)
                        .color(visuals.weak_text_color())
                        .width(1.0),
                );
            }
        });
    let mut keys = family_keys(ran, visuals, lang);
    if copy.is_some() {
        keys.push(Key::rule(t("plot.copy_line"), visuals.weak_text_color()));
    }
    figure::legend(ui, "gpu_bandwidth", &keys);
}

/// Log-log roofline: each kernel a numbered point, coloured by family, the
/// numbers named under the plot; the memory roof from the copy kernel.
fn roofline(
    ui: &mut egui::Ui,
    lang: Lang,
    ran: &[Measured],
    copy: Option<f64>,
    visuals: &egui::Visuals,
) {
    let t = |key| TEXT.get(lang, key);
    ui.label(t("plot.roofline"));
    let points: Vec<(usize, &Measured, f64, f64)> = ran
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let (ai, gops) = r.roofline?;
            (ai > 0.0 && gops > 0.0).then_some((i + 1, r, ai.log10(), gops.log10()))
        })
        .collect();
    let (mut lo_x, mut hi_x) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut lo_y, mut hi_y) = (f64::INFINITY, f64::NEG_INFINITY);
    for (_, _, x, y) in &points {
        lo_x = lo_x.min(*x);
        hi_x = hi_x.max(*x);
        lo_y = lo_y.min(*y);
        hi_y = hi_y.max(*y);
    }
    if points.is_empty() {
        (lo_x, hi_x, lo_y, hi_y) = (-1.0, 1.0, -1.0, 1.0);
    }
    let text_color = visuals.text_color();
    let power_of_ten = |mark: GridMark, _: &std::ops::RangeInclusive<f64>| {
        if mark.value.fract() == 0.0 {
            show_sig(10f64.powf(mark.value), 3)
        } else {
            String::new()
        }
    };
    let decades = |input: egui_plot::GridInput| {
        // Only the decades inside the plot: a label outside it would be
        // drawn over the title or the legend.
        let (lo, hi) = input.bounds;
        (lo.ceil() as i64..=hi.floor() as i64)
            .map(|v| GridMark {
                value: v as f64,
                step_size: 1.0,
            })
            .collect()
    };
    Plot::new("gpu_roofline")
        .height(260.0)
        .x_axis_label(t("plot.intensity"))
        .y_axis_label(t("plot.throughput"))
        .x_axis_formatter(power_of_ten)
        .y_axis_formatter(power_of_ten)
        .x_grid_spacer(decades)
        .y_grid_spacer(decades)
        .include_x(lo_x - 0.5)
        .include_x(hi_x + 0.5)
        .include_y(lo_y - 0.5)
        .include_y(hi_y + 0.5)
        .allow_scroll(false)
        .show(ui, |plot| {
            if let Some(c) = copy.filter(|c| *c > 0.0) {
                // Gop/s = GB/s × op/byte: a line of slope 1 in log-log.
                let (a, b) = (lo_x - 1.0, hi_x + 1.0);
                let roof = vec![[a, c.log10() + a], [b, c.log10() + b]];
                plot.line(
                    Line::new(t("plot.memory_roof"), PlotPoints::from(roof))
                        .color(visuals.weak_text_color())
                        .width(1.0),
                );
            }
            for (number, r, x, y) in &points {
                plot.points(
                    Points::new(r.kernel.id(), PlotPoints::from(vec![[*x, *y]]))
                        .radius(4.0)
                        .color(Family::of(r.kernel).color(visuals)),
                );
                plot.text(
                    Text::new("", PlotPoint::new(*x, *y), format!(" {number}"))
                        .anchor(egui::Align2::LEFT_BOTTOM)
                        .color(text_color),
                );
            }
        });
    let plotted: Vec<Measured> = points.iter().map(|(_, r, _, _)| (*r).clone()).collect();
    let mut keys = family_keys(&plotted, visuals, lang);
    if copy.is_some() {
        keys.push(Key::rule(t("plot.memory_roof"), visuals.weak_text_color()));
    }
    figure::legend(ui, "gpu_roofline", &keys);
    let numbered: Vec<String> = points
        .iter()
        .map(|(number, r, _, _)| format!("{number} {}", r.kernel.id()))
        .collect();
    ui.horizontal_wrapped(|ui| {
        ui.weak(t("plot.numbers"));
        for item in numbered {
            ui.weak(item);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_have_distinct_colours() {
        for visuals in [egui::Visuals::light(), egui::Visuals::dark()] {
            let keys: Vec<(String, Color32)> = Family::ALL
                .iter()
                .map(|f| (f.key().to_owned(), f.color(&visuals)))
                .collect();
            assert_eq!(figure::repeated(&keys), None);
        }
    }
}
