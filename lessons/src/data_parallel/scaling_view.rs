//! How far N workers scale: the speedup N·T_compute / (T_compute + T_comm)
//! for each algorithm's all-reduce of the gradient, against the ideal N.

use dlsys_core::names::Named as _;
use dlsys_core::collective::{Algorithm, MAX_WORKERS, comm_time, speedup};
use dlsys_core::float::show_sig;
use dlsys_core::memory::{show_bytes, show_seconds};
use dlsys_core::text::Lang;

use super::{Settings, TEXT, color, number, t};
use crate::kit::theme::ReadableAxes as _;

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    use crate::kit::figure::{self, Key};
    use egui_plot::{Line, PlotPoints};
    ui.label(t(lang, "scale.explain"));
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "scale.compute"), &mut s.compute_ms, 0.01..=1e5, 0.5);
    });
    let link = s.link();
    let bytes = 4.0 * s.gradient_elements() as f64;
    let compute = s.compute_ms * 1e-3;
    let visuals = ui.visuals().clone();
    ui.label(t(lang, "scale.plot"));
    crate::kit::figure::plot("dp_scale_plot", 220.0, t(lang, "axis.workers"), t(lang, "axis.speedup"))
        .readable_y()
        .include_y(0.0)
        .show(ui, |plot| {
            let ideal: Vec<[f64; 2]> = (1..=MAX_WORKERS).map(|n| [n as f64, n as f64]).collect();
            plot.line(
                Line::new(t(lang, "scale.ideal"), PlotPoints::from(ideal))
                    .color(visuals.weak_text_color())
                    .style(egui_plot::LineStyle::dashed_loose()),
            );
            for a in Algorithm::ALL {
                let points: Vec<[f64; 2]> = (1..=MAX_WORKERS)
                    .map(|n| [n as f64, speedup(n, compute, comm_time(a, n, bytes, link))])
                    .collect();
                plot.line(Line::new(a.name(lang), PlotPoints::from(points)).color(color(&visuals, a)));
            }
        });
    let mut keys = vec![Key::rule(t(lang, "scale.ideal"), visuals.weak_text_color())];
    keys.extend(Algorithm::ALL.into_iter().map(|a| Key::line(a.name(lang), color(&visuals, a))));
    figure::legend(ui, "dp_scale_plot", &keys);
    let n = s.workers;
    let comm = comm_time(Algorithm::Ring, n, bytes, link);
    ui.label(TEXT.fill(
        lang,
        "scale.line",
        &[
            ("n", &n),
            ("size", &show_bytes(bytes as u64)),
            ("comm", &show_seconds(comm)),
            ("compute", &show_seconds(compute)),
            ("speedup", &show_sig(speedup(n, compute, comm), 3)),
        ],
    ));
}
