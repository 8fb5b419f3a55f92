//! The same gradient checks in f64, f32, tf32, bf16 and fp16 arithmetic: every
//! element's relative error, plotted against the good / suspicious / wrong bands.

use dlsys_core::autograd::checks::{self, PRECISIONS, PrecisionError};
use dlsys_core::autograd::{Band, Check};
use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::text::Lang;
use egui_plot::{Plot, PlotPoints, Points};

use super::TEXT;
use crate::kit::{figure, theme};

/// One precision's errors.
#[derive(Clone, Debug, PartialEq)]
pub struct Spread {
    pub precision: &'static str,
    /// Every element's relative error, sorted.
    pub errors: Vec<f64>,
    /// How many of the checks land outside the good band.
    pub checks_outside: usize,
}

impl Spread {
    pub fn median(&self) -> f64 {
        self.errors
            .get(self.errors.len() / 2)
            .copied()
            .unwrap_or(f64::NAN)
    }

    pub fn max(&self) -> f64 {
        self.errors.last().copied().unwrap_or(f64::NAN)
    }
}

/// Runs every check in every precision (correct gradients, seed 1).
pub fn spreads() -> Result<Vec<Spread>, PrecisionError> {
    PRECISIONS
        .iter()
        .map(|precision| {
            let reports = Check::ALL
                .iter()
                .map(|c| c.run_in(precision, 1, None))
                .collect::<Result<Vec<_>, _>>()?;
            let mut errors: Vec<f64> = reports
                .iter()
                .flat_map(|r| {
                    r.tensors
                        .iter()
                        .flat_map(|t| t.elements.iter().map(|e| e.rel_error))
                })
                .collect();
            errors.sort_by(f64::total_cmp);
            Ok(Spread {
                precision,
                errors,
                checks_outside: reports.iter().filter(|r| r.band != Band::Good).count(),
            })
        })
        .collect()
}

/// Computed the first time the section is opened.
#[derive(Default)]
pub struct CheckCache {
    spreads: Option<Result<Vec<Spread>, PrecisionError>>,
}

pub fn check_ui(ui: &mut egui::Ui, cache: &mut CheckCache, lang: Lang) {
    let t = |key: &str| TEXT.get(lang, key).to_owned();
    ui.label(TEXT.fill(
        lang,
        "check.explain",
        &[
            ("checks", &Check::ALL.len()),
            ("step", &format!("2^{}", checks::EMULATED_STEP.log2())),
        ],
    ));
    let spreads = match cache.spreads.get_or_insert_with(spreads) {
        Ok(s) => s,
        Err(err) => {
            ui.colored_label(theme::bad(ui.visuals()), err.message(lang));
            return;
        }
    };
    let visuals = ui.visuals().clone();
    ui.columns(2, |cols| {
        egui::Grid::new("precision_check_table")
            .striped(true)
            .show(&mut cols[0], |ui| {
                ui.strong(t("check.precision"));
                ui.strong(t("check.median"));
                ui.strong(t("check.max"));
                ui.strong(t("check.outside"));
                ui.end_row();
                for s in spreads.iter() {
                    ui.monospace(s.precision);
                    ui.monospace(show_sig(s.median(), 2));
                    ui.monospace(show_sig(s.max(), 2));
                    let color = if s.checks_outside == 0 {
                        theme::good(&visuals)
                    } else {
                        theme::bad(&visuals)
                    };
                    ui.colored_label(
                        color,
                        format!("{} / {}", s.checks_outside, Check::ALL.len()),
                    );
                    ui.end_row();
                }
            });
        cols[0].label(t("check.lesson"));
        let floor = -17.0;
        let names: Vec<&'static str> = spreads.iter().map(|s| s.precision).collect();
        Plot::new("precision_check_plot")
            .height(300.0)
            .y_axis_label(t("check.axis"))
            .x_axis_formatter(move |mark, _| {
                let i = mark.value.round();
                if (mark.value - i).abs() < 1e-9 {
                    names
                        .get(i as usize)
                        .map_or(String::new(), |n| (*n).to_owned())
                } else {
                    String::new()
                }
            })
            .include_y(floor)
            .include_y(1.0)
            .include_x(-0.5)
            .include_x(PRECISIONS.len() as f64 - 0.5)
            .allow_scroll(false)
            .show(&mut cols[1], |plot| {
                theme::band_zones(plot, &visuals, floor, egui_plot::Axis::Y);
                for (x, s) in spreads.iter().enumerate() {
                    let n = s.errors.len().max(1) as f64;
                    // Spread the points sideways by rank, so the density shows.
                    let points: Vec<[f64; 2]> = s
                        .errors
                        .iter()
                        .enumerate()
                        .map(|(i, e)| {
                            let y = if *e > 0.0 {
                                e.log10().max(floor)
                            } else {
                                floor
                            };
                            let jitter = ((i * 37) % 23) as f64 / 23.0 - 0.5;
                            [
                                x as f64 + 0.6 * jitter * (1.0 - i as f64 / n).max(0.2),
                                if y.is_finite() { y } else { 1.0 },
                            ]
                        })
                        .collect();
                    plot.points(
                        Points::new(s.precision, PlotPoints::from(points))
                            .radius(1.5)
                            .color(theme::series(&visuals, x)),
                    );
                }
            });
        let mut keys: Vec<figure::Key> = spreads
            .iter()
            .enumerate()
            .map(|(x, s)| figure::Key::points(s.precision, theme::series(&visuals, x)))
            .collect();
        keys.extend(theme::band_keys(&visuals, lang));
        figure::legend(&mut cols[1], "precision_check_plot", &keys);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrower_arithmetic_spreads_errors_upward() {
        let spreads = spreads().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(spreads.len(), 5);
        assert_eq!(spreads[0].checks_outside, 0, "f64 passes every check");
        let fp16 = &spreads[4];
        assert!(fp16.median() > 1e3 * spreads[0].median().max(1e-16));
        assert!(fp16.checks_outside > 0);
    }
}
