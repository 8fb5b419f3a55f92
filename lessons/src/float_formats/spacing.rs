//! Range against precision: the gap between neighbouring values across the
//! whole range of every format, with the focus format's zones shaded and
//! named in the legend under the plot (each with a tooltip).

use dlsys_core::float::{self, Format};
use dlsys_core::text::Lang;
use egui::Color32;
use egui_plot::{Axis, Line, PlotPoints, Span};

use super::{Computed, TEXT};
use crate::kit::figure::{self, Key};
use crate::kit::theme;

pub fn plot(ui: &mut egui::Ui, computed: &Computed, focus: &Format, lang: Lang) {
    let t = |key: &'static str| TEXT.get(lang, key);
    let visuals = ui.visuals().clone();
    let range = focus.range();
    let lg = |v: f64| v.log2();
    let zone = |color: Color32| color.gamma_multiply(0.18);
    let (lost, subnormal, normal) = (
        zone(theme::bad(&visuals)),
        zone(theme::warn(&visuals)),
        zone(theme::good(&visuals)),
    );
    // The focus format is drawn on top, wide; the others thin and paler, so
    // the bundle of formats that share a range still reads.
    let order: Vec<usize> = (0..computed.formats.len())
        .filter(|i| computed.formats[*i].name != focus.name)
        .chain(
            (0..computed.formats.len()).filter(|i| computed.formats[*i].name == focus.name),
        )
        .collect();
    crate::kit::figure::plot("float_spacing", 260.0, t("plot.log_value"), t("plot.log_spacing"))
        .show(ui, |plot| {
            // Unnamed: a narrow band cannot hold its name; the legend names it.
            for (range, fill) in [
                (
                    lg(range.min_subnormal) - 6.0..=lg(range.underflow_to_zero_at),
                    lost,
                ),
                (lg(range.min_subnormal)..=lg(range.min_normal), subnormal),
                (lg(range.min_normal)..=lg(range.max_finite), normal),
                (lg(range.max_finite)..=lg(range.max_finite) + 6.0, lost),
            ] {
                plot.span(Span::new("", range).axis(Axis::X).fill(fill));
            }
            for i in &order {
                let format = &computed.formats[*i];
                let focused = format.name == focus.name;
                let color = theme::series(&visuals, *i);
                plot.line(
                    Line::new(format.name.clone(), PlotPoints::from(curve(format)))
                        .color(if focused { color } else { color.gamma_multiply(0.7) })
                        .width(if focused { 2.5 } else { 1.2 }),
                );
            }
        });
    let mut keys: Vec<Key> = computed
        .formats
        .iter()
        .enumerate()
        .map(|(i, f)| Key::line(&f.name, theme::series(&visuals, i)))
        .collect();
    let from = TEXT.fill(
        lang,
        if range.tie_overflows { "zone.from_tie" } else { "zone.past_tie" },
        &[("overflow", &float::show(range.overflow_tie)), ("max", &float::show(range.max_finite))],
    );
    let to = if range.has_infinity { "±inf" } else { "NaN" };
    let fill = |key: &str, color| {
        Key::fill(
            TEXT.fill(lang, key, &[("format", &focus.name)]),
            color,
        )
        .hint(TEXT.fill(
            lang,
            &format!("{key}_hint"),
            &[
                ("format", &focus.name),
                ("sub", &float::show(range.min_subnormal)),
                ("normal", &float::show(range.min_normal)),
                ("max", &float::show(range.max_finite)),
                ("zero", &float::show(range.underflow_to_zero_at)),
                ("from", &from),
                ("to", &to),
            ],
        ))
    };
    keys.push(fill("zone.lost", lost));
    keys.push(fill("zone.subnormal", subnormal));
    keys.push(fill("zone.normal", normal));
    figure::legend(ui, "float_spacing", &keys);
}

/// log₂ of the spacing against log₂ of the value: flat through the
/// subnormals, then a step per binade.
fn curve(format: &Format) -> Vec<[f64; 2]> {
    let lg = |v: f64| v.log2();
    let r = format.range();
    let mut points = vec![
        [lg(r.min_subnormal), lg(r.min_subnormal)],
        [lg(r.min_normal), lg(r.min_subnormal)],
    ];
    for (v, spacing) in float::spacing_curve(format).into_iter().skip(1) {
        points.push([lg(v), lg(spacing)]);
        if v != r.max_finite {
            points.push([lg(v) + 1.0, lg(spacing)]);
        }
    }
    points
}
