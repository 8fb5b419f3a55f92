//! The colours lessons share, for light and dark themes alike.
//! Lessons take colours from here, never from scattered `Color32::from_rgb`.

use dlsys_core::names::Named;
use egui::{Color32, Visuals};

fn pick(visuals: &Visuals, light: Color32, dark: Color32) -> Color32 {
    if visuals.dark_mode { dark } else { light }
}

/// A float's sign bit.
pub fn sign(visuals: &Visuals) -> Color32 {
    pick(
        visuals,
        Color32::from_rgb(0xb0, 0x30, 0x60),
        Color32::from_rgb(0xf0, 0x7c, 0xa8),
    )
}

/// A float's exponent bits: they set the range.
pub fn exponent(visuals: &Visuals) -> Color32 {
    pick(
        visuals,
        Color32::from_rgb(0x1f, 0x5f, 0xb0),
        Color32::from_rgb(0x7c, 0xb4, 0xf5),
    )
}

/// A float's mantissa bits: they set the precision.
pub fn mantissa(visuals: &Visuals) -> Color32 {
    pick(
        visuals,
        Color32::from_rgb(0x2e, 0x7d, 0x32),
        Color32::from_rgb(0x8b, 0xd6, 0x8f),
    )
}

pub fn good(visuals: &Visuals) -> Color32 {
    pick(
        visuals,
        Color32::from_rgb(0x1b, 0x7a, 0x2c),
        Color32::from_rgb(0x6f, 0xd8, 0x80),
    )
}

pub fn warn(visuals: &Visuals) -> Color32 {
    pick(
        visuals,
        Color32::from_rgb(0x9a, 0x5b, 0x00),
        Color32::from_rgb(0xf2, 0xb3, 0x4b),
    )
}

pub fn bad(visuals: &Visuals) -> Color32 {
    pick(
        visuals,
        Color32::from_rgb(0xb3, 0x1b, 0x1b),
        Color32::from_rgb(0xff, 0x7b, 0x72),
    )
}

/// The colours of highlighted code (WGSL in the editor and read-only views).
pub struct CodePalette {
    pub text: Color32,
    pub keyword: Color32,
    pub ty: Color32,
    pub builtin: Color32,
    pub attribute: Color32,
    pub number: Color32,
    pub comment: Color32,
    /// The background of the line a diagnostic points at.
    pub error_line: Color32,
}

pub fn code(visuals: &Visuals) -> CodePalette {
    if visuals.dark_mode {
        CodePalette {
            text: Color32::from_rgb(0xe6, 0xed, 0xf3),
            keyword: Color32::from_rgb(0xff, 0x7b, 0x72),
            ty: Color32::from_rgb(0x79, 0xc0, 0xff),
            builtin: Color32::from_rgb(0xd2, 0xa8, 0xff),
            attribute: Color32::from_rgb(0xff, 0xa6, 0x57),
            number: Color32::from_rgb(0xa5, 0xd6, 0xff),
            comment: Color32::from_rgb(0x8b, 0x94, 0x9e),
            error_line: Color32::from_rgba_unmultiplied(0xff, 0x50, 0x50, 0x40),
        }
    } else {
        CodePalette {
            text: Color32::from_rgb(0x1f, 0x23, 0x28),
            keyword: Color32::from_rgb(0xcf, 0x22, 0x2e),
            ty: Color32::from_rgb(0x05, 0x50, 0xae),
            builtin: Color32::from_rgb(0x82, 0x50, 0xdf),
            attribute: Color32::from_rgb(0x95, 0x38, 0x00),
            number: Color32::from_rgb(0x0a, 0x30, 0x69),
            comment: Color32::from_rgb(0x59, 0x63, 0x6e),
            error_line: Color32::from_rgba_unmultiplied(0xff, 0x80, 0x80, 0x50),
        }
    }
}

/// How many colours [`series`] has before it repeats (see
/// `figure::distinct` for more).
pub const SERIES: usize = 8;

/// A series colour for plots, stable per index.
pub fn series(visuals: &Visuals, index: usize) -> Color32 {
    const LIGHT: [Color32; SERIES] = [
        Color32::from_rgb(0x1f, 0x5f, 0xb0),
        Color32::from_rgb(0xc2, 0x4e, 0x00),
        Color32::from_rgb(0x2e, 0x7d, 0x32),
        Color32::from_rgb(0x8e, 0x24, 0xaa),
        Color32::from_rgb(0xb0, 0x30, 0x60),
        Color32::from_rgb(0x00, 0x79, 0x7a),
        Color32::from_rgb(0x79, 0x55, 0x48),
        Color32::from_rgb(0x54, 0x6e, 0x7a),
    ];
    const DARK: [Color32; SERIES] = [
        Color32::from_rgb(0x7c, 0xb4, 0xf5),
        Color32::from_rgb(0xff, 0xa6, 0x57),
        Color32::from_rgb(0x8b, 0xd6, 0x8f),
        Color32::from_rgb(0xd2, 0x9b, 0xf0),
        Color32::from_rgb(0xf0, 0x7c, 0xa8),
        Color32::from_rgb(0x5f, 0xd4, 0xd4),
        Color32::from_rgb(0xd7, 0xb5, 0x8c),
        Color32::from_rgb(0xb0, 0xbe, 0xc5),
    ];
    let palette = if visuals.dark_mode { &DARK } else { &LIGHT };
    palette[index % palette.len()]
}

/// The gradient check's bands on a log₁₀ relative-error axis (`axis`, the
/// plot's x or y): good (below 1e-7, down to `floor`), suspicious
/// (1e-4…1e-2), wrong (above 1e-2), shaded, with a line at each boundary.
/// The bands are named by [`band_keys`] in the legend under the plot.
pub fn band_zones(
    plot: &mut egui_plot::PlotUi<'_>,
    visuals: &Visuals,
    floor: f64,
    axis: egui_plot::Axis,
) {
    use egui_plot::{Axis, HLine, Span, VLine};
    for (range, color) in band_ranges(visuals, floor) {
        plot.span(Span::new("", range).axis(axis).fill(color));
    }
    for v in [-7.0, -4.0, -2.0] {
        let (name, color) = (format!("1e{v}"), visuals.weak_text_color());
        match axis {
            Axis::Y => plot.hline(HLine::new(name, v).color(color).width(0.5)),
            Axis::X => plot.vline(VLine::new(name, v).color(color).width(0.5)),
        }
    }
}

fn band_ranges(visuals: &Visuals, floor: f64) -> [(std::ops::RangeInclusive<f64>, Color32); 3] {
    let zone = |c: Color32| c.gamma_multiply(0.15);
    [
        (floor..=-7.0, zone(good(visuals))),
        (-4.0..=-2.0, zone(warn(visuals))),
        (-2.0..=2.0, zone(bad(visuals))),
    ]
}

/// The legend entries of [`band_zones`]' bands, each with a tooltip.
pub fn band_keys(visuals: &Visuals, lang: dlsys_core::text::Lang) -> Vec<crate::kit::figure::Key> {
    use dlsys_core::autograd::Band;
    let [good, suspicious, wrong] = band_ranges(visuals, -17.0).map(|(_, c)| c);
    [
        (Band::Good, good),
        (Band::Suspicious, suspicious),
        (Band::Wrong, wrong),
    ]
    .into_iter()
    .map(|(band, color)| {
        crate::kit::figure::Key::fill(Named::name(&band, lang), color)
            .hint(band.hint(lang).unwrap_or_default())
    })
    .collect()
}

/// Content that may be wider than the page (a table, a graph) scrolls
/// sideways inside itself, so the page never grows past the window. Its
/// scroll bar is solid and shown whenever the content is wider than the
/// window (not a floating bar that appears on hover only), so a cut-off
/// table says that it scrolls. Marked as a scroll view in the accessibility
/// tree: for screen readers, and for the test that fails on text cut off at
/// the window's edge.
pub fn sideways<R>(ui: &mut egui::Ui, id: &str, add: impl FnOnce(&mut egui::Ui) -> R) -> R {
    scrolled_sideways(ui, id, false, add)
}

/// [`sideways`], opened at its right end (where a graph's output is).
pub fn sideways_from_right<R>(
    ui: &mut egui::Ui,
    id: &str,
    add: impl FnOnce(&mut egui::Ui) -> R,
) -> R {
    scrolled_sideways(ui, id, true, add)
}

fn scrolled_sideways<R>(
    ui: &mut egui::Ui,
    id: &str,
    from_right: bool,
    add: impl FnOnce(&mut egui::Ui) -> R,
) -> R {
    ui.scope(|ui| {
        ui.spacing_mut().scroll = egui::style::ScrollStyle::solid();
        egui::ScrollArea::horizontal()
            .id_salt(id)
            .stick_to_right(from_right)
            .scroll_bar_visibility(egui::scroll_area::ScrollBarVisibility::VisibleWhenNeeded)
            .show(ui, |ui| {
                let scroll =
                    egui::UiBuilder::new().accessibility_role(egui::accesskit::Role::ScrollView);
                ui.scope_builder(scroll, add).inner
            })
            .inner
    })
    .inner
}

/// Grid lines at a 1-2-5 step that puts about five labelled lines across
/// the visible range, whatever it is, with fainter ones between. egui_plot's
/// default steps by powers of ten and hides a label closer than 20 px (or
/// than its own height, larger in Chinese), which leaves a 180 px plot of a
/// loss from 0.15 to 0.9 without a single number on its axis.
pub fn readable_grid() -> impl Fn(egui_plot::GridInput) -> Vec<egui_plot::GridMark> {
    egui_plot::uniform_grid_spacer(|input| {
        let span = (input.bounds.1 - input.bounds.0)
            .abs()
            .max(f64::MIN_POSITIVE);
        let raw = span / 5.0;
        let power = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .into_iter()
            .map(|m| m * power)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * power);
        [step / 5.0, step, step * 5.0]
    })
}

/// Grid lines at every whole number in view (and only there): for plots
/// whose axis is a list of names, one per row.
pub fn integer_grid() -> impl Fn(egui_plot::GridInput) -> Vec<egui_plot::GridMark> {
    |input| {
        let (lo, hi) = input.bounds;
        // At most a few hundred rows are ever named; never a mark per integer
        // of a view zoomed far out.
        (lo.ceil().max(0.0) as i64..=hi.floor().min(lo.ceil().max(0.0) + 512.0) as i64)
            .map(|v| egui_plot::GridMark {
                value: v as f64,
                step_size: 1.0,
            })
            .collect()
    }
}

/// Grid lines at every power of ten in view, for log₁₀ axes (at most a
/// hundred, however far out the view goes).
pub fn decade_grid() -> impl Fn(egui_plot::GridInput) -> Vec<egui_plot::GridMark> {
    |input| {
        let (lo, hi) = input.bounds;
        let (lo, hi) = (lo.ceil().max(-300.0) as i64, hi.floor().min(300.0) as i64);
        let step = ((hi - lo) / 100 + 1).max(1);
        (lo..=hi)
            .step_by(step as usize)
            .map(|v| egui_plot::GridMark {
                value: v as f64,
                step_size: step as f64,
            })
            .collect()
    }
}

/// A plot's axes with [`readable_grid`]'s lines and [`grid_label`]'s numbers.
pub trait ReadableAxes: Sized {
    fn readable_x(self) -> Self;
    fn readable_y(self) -> Self;
}

impl ReadableAxes for egui_plot::Plot<'_> {
    fn readable_x(self) -> Self {
        self.x_grid_spacer(readable_grid())
            .x_axis_formatter(grid_label)
    }

    fn readable_y(self) -> Self {
        self.y_grid_spacer(readable_grid())
            .y_axis_formatter(grid_label)
    }
}

/// The label of a grid line from [`readable_grid`]: its value with as many
/// decimals as the step needs (a step of 0.5 shows 0.5, not 0).
pub fn grid_label(mark: egui_plot::GridMark, _range: &std::ops::RangeInclusive<f64>) -> String {
    let step = mark.step_size.abs();
    let decimals = if step > 0.0 && step.is_finite() {
        (-step.log10()).ceil().clamp(0.0, 12.0) as usize
    } else {
        0
    };
    let v = if mark.value.abs() < step * 1e-9 {
        0.0
    } else {
        mark.value
    };
    format!("{v:.decimals$}")
}

/// An axis of named rows: row i (from the bottom) is `names[i]`, and
/// between rows nothing. With [`integer_grid`] for the marks.
pub fn row_names(
    names: Vec<String>,
) -> impl Fn(egui_plot::GridMark, &std::ops::RangeInclusive<f64>) -> String {
    move |mark, _| {
        names
            .get(mark.value.round() as usize)
            .filter(|_| mark.value.fract() == 0.0)
            .cloned()
            .unwrap_or_default()
    }
}
