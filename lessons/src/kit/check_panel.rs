//! The gradient-check panel: a set of checks (the MLP's ops and a whole
//! MLP here; the layers' ops in the layers lesson), in f64 or f32, with an
//! optional planted bug, errors plotted against the CS231n bands.

use dlsys_core::autograd::{Band, Check, GradcheckReport, PlantedBug};
use dlsys_core::float::show_sig;
use dlsys_core::names::Named;
use dlsys_core::text::Lang;
use egui_plot::{Plot, PlotPoints, Points};
use serde::{Deserialize, Serialize};

use crate::kit::{figure, theme};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckSettings {
    pub f32: bool,
    pub bug: Option<PlantedBug>,
    pub seed: u64,
}

impl Default for CheckSettings {
    fn default() -> Self {
        Self {
            f32: false,
            bug: None,
            seed: 1,
        }
    }
}

/// Which checks a panel runs, the bugs it offers and its plot's id.
#[derive(Clone, Copy, Debug)]
pub struct CheckSet {
    pub checks: &'static [Check],
    pub bugs: &'static [PlantedBug],
    pub plot: &'static str,
}

/// The MLP's ops and a whole MLP (this lesson's panel).
pub const MLP_CHECKS: CheckSet = CheckSet {
    checks: &Check::ALL,
    bugs: &PlantedBug::ALL,
    plot: "gradcheck_plot",
};

/// The layers' ops (the layers lesson's panel).
pub const LAYER_CHECKS: CheckSet = CheckSet {
    checks: &Check::LAYERS,
    bugs: &PlantedBug::LAYERS,
    plot: "layers_gradcheck_plot",
};

/// Reports, computed when the settings change.
pub struct CheckCache {
    set: CheckSet,
    key: Option<CheckSettings>,
    reports: Vec<GradcheckReport>,
}

impl Default for CheckCache {
    fn default() -> Self {
        Self::new(MLP_CHECKS)
    }
}

impl CheckCache {
    pub fn new(set: CheckSet) -> Self {
        Self {
            set,
            key: None,
            reports: Vec::new(),
        }
    }

    pub fn reports(&mut self, settings: &CheckSettings) -> &[GradcheckReport] {
        if self.key.as_ref() != Some(settings) {
            self.reports = self
                .set
                .checks
                .iter()
                .map(|c| {
                    if settings.f32 {
                        c.run::<f32>(settings.seed, settings.bug)
                    } else {
                        c.run::<f64>(settings.seed, settings.bug)
                    }
                })
                .collect();
            self.key = Some(settings.clone());
        }
        &self.reports
    }
}

fn band_color(visuals: &egui::Visuals, band: Band) -> egui::Color32 {
    match band {
        Band::Good => theme::good(visuals),
        Band::Acceptable => visuals.text_color(),
        Band::Suspicious => theme::warn(visuals),
        Band::Wrong => theme::bad(visuals),
    }
}

pub fn check_ui(
    ui: &mut egui::Ui,
    settings: &mut CheckSettings,
    cache: &mut CheckCache,
    lang: Lang,
) {
    let text = super::text();
    let t = |key| text.get(lang, key);
    let set = cache.set;
    // A bug saved from another panel does not apply to these checks.
    if settings.bug.is_some_and(|b| !set.bugs.contains(&b)) {
        settings.bug = None;
    }
    ui.label(t("check.explain"));
    ui.horizontal_wrapped(|ui| {
        ui.label(t("check.precision"));
        ui.selectable_value(&mut settings.f32, false, "f64");
        ui.selectable_value(&mut settings.f32, true, "f32");
        ui.separator();
        let bugs = std::iter::once(None).chain(set.bugs.iter().copied().map(Some));
        let name =
            |b: &Option<PlantedBug>| b.map_or(t("check.no_bug").to_owned(), |b| b.name(lang));
        super::choice(
            ui,
            (set.plot, "bug"),
            t("check.bug"),
            &mut settings.bug,
            bugs,
            name,
        );
        let label = ui.label(t("check.seed"));
        ui.add(egui::DragValue::new(&mut settings.seed).range(1..=9999))
            .labelled_by(label.id);
    });
    let reports = cache.reports(settings);
    let visuals = ui.visuals().clone();
    let outside = reports.iter().filter(|r| r.band != Band::Good).count();
    if settings.f32 {
        ui.colored_label(theme::warn(&visuals), t("check.f32_note"));
    }
    if let Some(bug) = settings.bug {
        let (key, color) = match outside {
            0 => ("check.missed", theme::warn(&visuals)),
            1 => ("check.caught_one", theme::bad(&visuals)),
            _ => ("check.caught", theme::bad(&visuals)),
        };
        ui.colored_label(
            color,
            text.fill(lang, key, &[("bug", &bug.name(lang)), ("count", &outside)]),
        );
    }
    ui.columns(2, |columns| {
        // Wide names scroll inside their column instead of widening the page.
        let table_id = format!("{}_table", set.plot);
        crate::kit::theme::sideways(&mut columns[0], &table_id, |ui| {
            egui::Grid::new((set.plot, "table"))
                .striped(true)
                .show(ui, |ui| {
                    ui.strong(t("check.op"));
                    ui.strong(t("check.max"));
                    ui.strong(t("check.band"));
                    ui.end_row();
                    for (check, r) in set.checks.iter().zip(reports) {
                        ui.label(Named::name(check, lang));
                        ui.monospace(show_sig(r.max_rel_error, 3));
                        ui.colored_label(band_color(&visuals, r.band), Named::name(&r.band, lang));
                        ui.end_row();
                    }
                });
        });
        // One row per check, the first on top, its name on the axis;
        // log₁₀ of the error across, the bands shaded behind.
        let floor = -17.0;
        let n = reports.len();
        let points: Vec<[f64; 2]> = reports
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let x = if r.max_rel_error > 0.0 {
                    r.max_rel_error.log10().max(floor)
                } else {
                    floor
                };
                [if x.is_finite() { x } else { 1.0 }, (n - 1 - i) as f64]
            })
            .collect();
        let names: Vec<String> = set
            .checks
            .iter()
            .rev()
            .map(|c| Named::name(c, lang))
            .collect();
        Plot::new(set.plot)
            // egui_plot hides a tick label closer than 20 px to the next.
            .height((28.0 * n as f32 + 60.0).max(200.0))
            .x_axis_label(t("check.axis"))
            .y_axis_formatter(theme::row_names(names))
            .y_grid_spacer(theme::integer_grid())
            .include_x(floor)
            .include_x(1.0)
            .include_y(-0.5)
            .include_y(n as f64 - 0.5)
            .allow_scroll(false)
            .allow_zoom(false)
            .allow_drag(false)
            .show(&mut columns[1], |plot| {
                theme::band_zones(plot, &visuals, floor, egui_plot::Axis::X);
                plot.points(
                    Points::new(t("plot.max_rel_error"), PlotPoints::from(points))
                        .radius(4.0)
                        .color(theme::exponent(&visuals)),
                );
            });
        let mut keys = vec![figure::Key::points(
            t("plot.max_rel_error"),
            theme::exponent(&visuals),
        )];
        keys.extend(theme::band_keys(&visuals, lang));
        figure::legend(&mut columns[1], set.plot, &keys);
    });
}
