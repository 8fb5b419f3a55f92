//! Throughput against the workers: the model's curve from one worker's
//! stage times, the measured runs of a sweep on it, the knee marked.

use dlsys_core::pipeline::{ABOVE_MODEL_TOLERANCE, MAX_WORKERS, above_model, knee, predict};
use dlsys_core::text::Lang;

use super::run_view::Runs;
use super::{Settings, TEXT, cores, t};
use crate::kit::theme;
use crate::kit::theme::ReadableAxes as _;

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, runs: &mut Runs, lang: Lang) {
    use egui_plot::{Line, PlotPoints, Points, VLine};
    ui.label(t(lang, "sweep.explain"));
    // One cooperative worker on the web: there is nothing to sweep.
    if cfg!(target_arch = "wasm32") {
        crate::kit::prose(ui, t(lang, "sweep.web"));
        return;
    }
    if ui.add_enabled(!runs.is_running(), egui::Button::new(t(lang, "sweep.run"))).clicked() {
        runs.start(s, true);
        ui.ctx().request_repaint();
    }
    let Some(Ok(finished)) = &runs.last else {
        ui.weak(t(lang, "sweep.none"));
        return;
    };
    let costs = finished.costs();
    let cores = cores();
    let batch = finished.one.settings.batch;
    let threads = finished.one.settings.threads;
    let visuals = ui.visuals().clone();
    let model: Vec<[f64; 2]> = (1..=MAX_WORKERS)
        .map(|k| [k as f64, predict(costs, k, cores, threads).samples_per_s(batch)])
        .collect();
    let measured: Vec<[f64; 2]> = finished
        .all()
        .map(|r| [r.settings.workers as f64, r.samples_per_s()])
        .collect();
    // The model bounds the rate: a point well above it is said, not hidden.
    let above: Vec<(usize, f64, f64)> = measured
        .iter()
        .map(|&[k, rate]| {
            let k = k as usize;
            (k, rate, predict(costs, k, cores, threads).samples_per_s(batch))
        })
        .filter(|&(_, rate, bound)| above_model(rate, bound))
        .collect();
    let bend = knee(costs, cores, MAX_WORKERS);
    crate::kit::figure::plot("pipe_sweep_plot", 220.0, t(lang, "axis.workers"), t(lang, "axis.rate"))
        .readable_y()
        .include_y(0.0)
        .show(ui, |plot| {
            plot.line(Line::new(t(lang, "sweep.model"), PlotPoints::from(model)).color(theme::series(&visuals, 0)));
            plot.points(
                Points::new(t(lang, "sweep.measured"), PlotPoints::from(measured))
                    .radius(4.0)
                    .color(theme::series(&visuals, 1)),
            );
            if let Some(k) = bend {
                plot.vline(
                    VLine::new(t(lang, "sweep.knee"), k as f64)
                        .color(visuals.text_color())
                        .style(egui_plot::LineStyle::dashed_dense()),
                );
            }
        });
    let mut keys = vec![
        crate::kit::figure::Key::line(t(lang, "sweep.model"), theme::series(&visuals, 0)),
        crate::kit::figure::Key::points(t(lang, "sweep.measured"), theme::series(&visuals, 1)),
    ];
    if bend.is_some() {
        keys.push(crate::kit::figure::Key::rule(t(lang, "sweep.knee"), visuals.text_color()));
    }
    crate::kit::figure::legend(ui, "pipe_sweep_plot", &keys);
    match bend {
        Some(k) => ui.label(TEXT.fill(lang, "sweep.knee_line", &[("k", &k), ("cores", &cores)])),
        None => ui.label(TEXT.fill(lang, "sweep.no_knee", &[("max", &MAX_WORKERS), ("cores", &cores)])),
    };
    for (k, rate, bound) in above {
        ui.colored_label(
            theme::warn(&visuals),
            TEXT.fill(
                lang,
                "sweep.above_model",
                &[
                    ("k", &k),
                    ("rate", &dlsys_core::float::show_sig(rate, 3)),
                    ("bound", &dlsys_core::float::show_sig(bound, 3)),
                    ("tolerance", &format!("{:.0}%", 100.0 * ABOVE_MODEL_TOLERANCE)),
                ],
            ),
        );
    }
}
