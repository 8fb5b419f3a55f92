//! The GPU lessons' plots: bandwidth per kernel against the copy kernel, and
//! one roofline for every family — memory-bound softmax and reductions
//! beside the compute-bound GEMMs, under the copy kernel's memory roof and
//! the FMA chain's compute roof — each point at its own run's problem size.
//! Every bar and every point carries its kernel's name or number; colours
//! mark the family.

use dlsys_core::float::show_sig;
use dlsys_core::kernels::{Family, Kernel};
use dlsys_core::text::{Catalog, Lang};
use dlsys_shaders::report::Measured;
use egui::Color32;
use egui_plot::{Bar, BarChart, GridMark, HLine, Line, Plot, PlotPoint, PlotPoints, Points, Text};

use crate::kit::figure::{self, Key};
use crate::kit::theme;
use crate::kit::theme::ReadableAxes as _;

fn text() -> &'static Catalog {
    crate::kit::text()
}

/// (kernel id, arithmetic intensity, Gop/s) for each run that has a roofline point.
pub fn roofline_points(ran: &[Measured]) -> Vec<(String, f64, f64)> {
    ran.iter()
        .filter_map(|r| r.roofline.map(|(ai, gops)| (r.id.clone(), ai, gops)))
        .collect()
}

/// A family's colour, the same in every plot (by its place in `Family::ALL`).
pub fn family_color(family: Family, visuals: &egui::Visuals) -> Color32 {
    let i = Family::ALL.iter().position(|f| *f == family).unwrap_or(0);
    figure::nth(visuals, i)
}

/// The legend entries of the families present among `families`.
fn family_keys(families: &[Family], visuals: &egui::Visuals, lang: Lang) -> Vec<Key> {
    Family::ALL
        .into_iter()
        .filter(|f| families.contains(f))
        .map(|f| {
            Key::fill(
                text().get(lang, &format!("kplot.family.{}", f.id())),
                family_color(f, visuals),
            )
        })
        .collect()
}

/// The bandwidth bars and the roofline of `ran` (GPU runs, or the CPU
/// path's reference timings, which the plots then label as such).
pub fn show(ui: &mut egui::Ui, lang: Lang, ran: &[Measured]) {
    if ran.is_empty() {
        return;
    }
    cpu_note(ui, lang, ran);
    let copy = ran
        .iter()
        .find(|r| r.kernel == Some(Kernel::Copy))
        .map(|r| r.gb_per_s);
    let items: Vec<BarItem> = ran
        .iter()
        .filter_map(|r| {
            Some(BarItem {
                kernel: r.kernel?,
                value: r.gb_per_s,
                label: show_sig(r.gb_per_s, 3),
            })
        })
        .collect();
    let rule = copy.map(|c| (text().get(lang, "kplot.copy_line").to_owned(), c));
    let wide = ui.available_width() >= 900.0;
    let bandwidth = |ui: &mut egui::Ui| {
        ui.label(text().get(lang, "kplot.bandwidth"));
        bars(ui, lang, "gpu_bandwidth", "GB/s", &items, rule.clone());
    };
    if wide {
        ui.columns(2, |cols| {
            bandwidth(&mut cols[0]);
            roofline(&mut cols[1], lang, ran);
        });
    } else {
        bandwidth(ui);
        roofline(ui, lang, ran);
    }
}

/// Says, once, that CPU timings stand in for a GPU's.
pub fn cpu_note(ui: &mut egui::Ui, lang: Lang, ran: &[Measured]) {
    if ran.iter().any(|r| r.on_cpu) {
        ui.colored_label(
            theme::warn(ui.visuals()),
            text().get(lang, "kplot.cpu_note"),
        );
    }
}

/// One bar of [`bars`]: its kernel (name and colour), length and label.
#[derive(Clone, Debug)]
pub struct BarItem {
    pub kernel: Kernel,
    pub value: f64,
    pub label: String,
}

/// Horizontal bars, one per kernel, its name on the axis beside it and its
/// label at its end; `rule` (name, value) as a line across them. `id`
/// names the plot (and its legend, for the colour test).
pub fn bars(
    ui: &mut egui::Ui,
    lang: Lang,
    id: &str,
    axis: &str,
    items: &[BarItem],
    rule: Option<(String, f64)>,
) {
    let visuals = ui.visuals().clone();
    let n = items.len();
    if n == 0 {
        return;
    }
    // The first kernel on top: bar i sits at y = n − 1 − i.
    let y_of = move |i: usize| (n - 1 - i) as f64;
    let chart: Vec<Bar> = items
        .iter()
        .enumerate()
        .map(|(i, b)| {
            Bar::new(y_of(i), b.value)
                .name(b.kernel.id())
                .fill(family_color(b.kernel.family(), &visuals))
                .width(0.7)
        })
        .collect();
    let names: Vec<String> = items.iter().rev().map(|b| b.kernel.id()).collect();
    let widest = items
        .iter()
        .map(|b| b.value)
        .chain(rule.iter().map(|r| r.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let labels: Vec<(f64, f64, String)> = items
        .iter()
        .enumerate()
        .map(|(i, b)| (y_of(i), b.value, b.label.clone()))
        .collect();
    let text_color = visuals.text_color();
    let rule_color = visuals.weak_text_color();
    let drawn_rule = rule.clone();
    Plot::new(id)
        .height(26.0 * n as f32 + 48.0)
        .x_axis_label(axis)
        .readable_x()
        .y_axis_formatter(theme::row_names(names))
        .y_grid_spacer(theme::integer_grid())
        .include_x(0.0)
        .include_x(widest.max(1e-9) * 1.3)
        .show_grid([true, false])
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .show(ui, |plot| {
            plot.bar_chart(BarChart::new(axis, chart).horizontal());
            for (y, x, label) in labels {
                plot.text(
                    Text::new("", PlotPoint::new(x, y), format!(" {label}"))
                        .anchor(egui::Align2::LEFT_CENTER)
                        .color(text_color),
                );
            }
            if let Some((name, value)) = drawn_rule {
                plot.vline(
                    egui_plot::VLine::new(name, value)
                        .color(rule_color)
                        .width(1.0),
                );
            }
        });
    let all: Vec<Family> = items.iter().map(|b| b.kernel.family()).collect();
    let mut keys = family_keys(&all, &visuals, lang);
    if let Some((name, _)) = rule {
        keys.push(Key::rule(name, rule_color));
    }
    figure::legend(ui, id, &keys);
}

/// Log-log roofline: each kernel a numbered point, coloured by family, the
/// numbers named under the plot; the memory roof from the copy kernel, the
/// compute roof from the FMA chains (where they ran).
pub fn roofline(ui: &mut egui::Ui, lang: Lang, ran: &[Measured]) {
    let visuals = &ui.visuals().clone();
    let copy = ran
        .iter()
        .find(|r| r.kernel == Some(Kernel::Copy))
        .map(|r| r.gb_per_s);
    let roof = ran
        .iter()
        .find(|r| r.kernel == Some(Kernel::Fma))
        .and_then(|r| r.roofline.map(|(_, gops)| gops));
    let t = |key: &str| text().get(lang, key).to_owned();
    ui.label(t("kplot.roofline"));
    // The FMA chains define the compute roof; they are not a point of their own.
    let plotted: Vec<&Measured> = ran
        .iter()
        .filter(|r| r.kernel != Some(Kernel::Fma))
        .filter(|r| {
            r.roofline.is_some_and(|(ai, gops)| {
                ai > 0.0 && gops > 0.0 && ai.is_finite() && gops.is_finite()
            })
        })
        .collect();
    let points: Vec<(usize, &Measured, f64, f64)> = plotted
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let (ai, gops) = r.roofline?;
            Some((i + 1, *r, ai.log10(), gops.log10()))
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
    if let Some(r) = roof.filter(|r| *r > 0.0) {
        lo_y = lo_y.min(r.log10());
        hi_y = hi_y.max(r.log10());
    }
    if !lo_x.is_finite() || !lo_y.is_finite() {
        (lo_x, hi_x, lo_y, hi_y) = (-1.0, 1.0, -1.0, 1.0);
    }
    // A label takes the first spot beside its point that overlaps no label
    // already placed — at the point, a row above or below, a width to the
    // right (a width of about 0.16 decades holds " 12") — and only then
    // moves further right, a width at a time.
    const WIDTH: f64 = 0.16;
    const HEIGHT: f64 = 0.12;
    const NEAR: [(f64, f64); 9] = [
        (0.0, 0.0),
        (0.0, 1.0),
        (0.0, -1.0),
        (1.0, 0.0),
        (1.0, 1.0),
        (1.0, -1.0),
        (0.0, 2.0),
        (0.0, -2.0),
        (2.0, 0.0),
    ];
    // Points that sit on one another share a label ("3,5").
    let mut clusters: Vec<(f64, f64, Vec<usize>)> = Vec::new();
    for (number, _, x, y) in &points {
        match clusters
            .iter_mut()
            .find(|(cx, cy, _)| (cx - x).abs() < WIDTH / 2.0 && (cy - y).abs() < HEIGHT / 2.0)
        {
            Some((_, _, numbers)) => numbers.push(*number),
            None => clusters.push((*x, *y, vec![*number])),
        }
    }
    // Each placed label's left end, height and width.
    let mut placed: Vec<(f64, f64, f64)> = Vec::new();
    let labels: Vec<(f64, f64, String)> = clusters
        .iter()
        .map(|(x, y, numbers)| {
            let names: Vec<String> = numbers.iter().map(usize::to_string).collect();
            let width = WIDTH * (0.5 + 0.5 * names.len() as f64);
            // Two labels overlap when their spans along x meet at one height.
            let free = |(at, ay): (f64, f64)| {
                !placed.iter().any(|(px, py, pw)| {
                    at < px + pw && *px < at + width && (py - ay).abs() < HEIGHT
                })
            };
            let spot = NEAR
                .iter()
                .map(|(dx, dy)| (x + dx * WIDTH, y + dy * HEIGHT))
                .find(|s| free(*s))
                .unwrap_or_else(|| {
                    let mut at = x + 3.0 * WIDTH;
                    while !free((at, *y)) {
                        at += WIDTH;
                    }
                    (at, *y)
                });
            placed.push((spot.0, spot.1, width));
            (spot.0, spot.1, format!(" {}", names.join(",")))
        })
        .collect();
    let hi_x = labels.iter().map(|l| l.0).fold(hi_x, f64::max);
    let text_color = visuals.text_color();
    let decade = |mark: GridMark, _: &std::ops::RangeInclusive<f64>| {
        if mark.value.fract() == 0.0 && mark.value.abs() < 300.0 {
            show_sig(10f64.powf(mark.value), 3)
        } else {
            String::new()
        }
    };
    let (memory_name, compute_name) = (t("kplot.memory_roof"), t("kplot.compute_roof"));
    crate::kit::figure::plot(
        "gpu_roofline",
        280.0,
        t("kplot.intensity"),
        t("kplot.throughput"),
    )
    .x_axis_formatter(decade)
    .y_axis_formatter(decade)
    .x_grid_spacer(theme::decade_grid())
    .y_grid_spacer(theme::decade_grid())
    .include_x(lo_x - 0.5)
    .include_x(hi_x + 0.7)
    .include_y(lo_y - 0.5)
    .include_y(hi_y + 0.5)
    .allow_zoom(false)
    .allow_drag(false)
    .show(ui, |plot| {
        let (a, b) = (lo_x - 1.0, hi_x + 1.5);
        if let Some(c) = copy.filter(|c| *c > 0.0) {
            // Gop/s = GB/s × op/byte: a line of slope 1 in log-log,
            // up to the compute roof where there is one.
            let b = roof.map_or(b, |r| (r.log10() - c.log10()).clamp(a, b));
            let line = vec![[a, c.log10() + a], [b, c.log10() + b]];
            plot.line(
                Line::new(memory_name.clone(), PlotPoints::from(line))
                    .color(visuals.weak_text_color())
                    .width(1.0),
            );
        }
        if let Some(r) = roof.filter(|r| *r > 0.0) {
            plot.hline(
                HLine::new(compute_name.clone(), r.log10())
                    .color(family_color(Family::Compute, visuals))
                    .width(1.5),
            );
        }
        for (_, r, x, y) in &points {
            plot.points(
                Points::new(r.id.clone(), PlotPoints::from(vec![[*x, *y]]))
                    .radius(4.0)
                    .color(family_color(r.family, visuals)),
            );
        }
        for (x, y, label) in labels {
            plot.text(
                Text::new("", PlotPoint::new(x, y), label)
                    .anchor(egui::Align2::LEFT_BOTTOM)
                    .color(text_color),
            );
        }
    });
    let families: Vec<Family> = plotted.iter().map(|r| r.family).collect();
    let mut keys = family_keys(&families, visuals, lang);
    if copy.is_some() {
        keys.push(Key::rule(memory_name, visuals.weak_text_color()));
    }
    if roof.is_some() {
        keys.push(Key::rule(
            compute_name,
            family_color(Family::Compute, visuals),
        ));
    }
    figure::legend(ui, "gpu_roofline", &keys);
    ui.horizontal_wrapped(|ui| {
        ui.weak(t("kplot.numbers"));
        for (number, r, _, _) in &points {
            // One piece each, so a row wraps between entries, never inside one.
            ui.add(
                egui::Label::new(egui::RichText::new(format!("{number} {}", r.id)).weak())
                    .wrap_mode(egui::TextWrapMode::Extend),
            );
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
                .map(|f| (f.id().to_owned(), family_color(*f, &visuals)))
                .collect();
            assert_eq!(figure::repeated(&keys), None);
        }
    }
}
