//! The GPU lesson's plots: bandwidth per kernel against the copy kernel, and
//! the roofline, each point at its own run's problem size.

use dlsys_core::text::Lang;
use dlsys_shaders::report::Measured;
use egui_plot::{Bar, BarChart, HLine, Legend, Line, Plot, PlotPoints, Points};

use super::TEXT;
use crate::theme;

/// (kernel id, arithmetic intensity, Gop/s) for each run that has a roofline point.
pub(super) fn roofline_points(ran: &[Measured]) -> Vec<(String, f64, f64)> {
    ran.iter()
        .filter_map(|r| r.roofline.map(|(ai, gops)| (r.kernel.id(), ai, gops)))
        .collect()
}

/// The bandwidth bars and the roofline of `ran` (GPU runs, or the CPU
/// path's reference timings, which the plots then label as such).
pub(super) fn show(ui: &mut egui::Ui, lang: Lang, ran: &[Measured]) {
    let t = |key| TEXT.get(lang, key);
    let visuals = ui.visuals().clone();
    if ran.iter().any(|r| r.on_cpu) {
        ui.colored_label(theme::warn(&visuals), t("plot.cpu_note"));
    }
    let copy = ran
        .iter()
        .find(|r| r.kernel == dlsys_core::kernels::Kernel::Copy)
        .map(|r| r.gb_per_s);
    ui.columns(2, |cols| {
        cols[0].label(t("plot.bandwidth"));
        let bars: Vec<Bar> = ran
            .iter()
            .enumerate()
            .map(|(i, r)| {
                Bar::new(i as f64, r.gb_per_s)
                    .name(r.kernel.id())
                    .fill(theme::series(&visuals, i))
            })
            .collect();
        let names: Vec<String> = ran.iter().map(|r| r.kernel.id()).collect();
        Plot::new("gpu_bandwidth")
            .height(240.0)
            .y_axis_label("GB/s")
            .x_axis_formatter(move |mark, _| {
                names
                    .get(mark.value.round() as usize)
                    .filter(|_| mark.value.fract() == 0.0)
                    .cloned()
                    .unwrap_or_default()
            })
            .allow_scroll(false)
            .show(&mut cols[0], |plot| {
                plot.bar_chart(BarChart::new("GB/s", bars));
                if let Some(c) = copy {
                    plot.hline(HLine::new(t("plot.copy"), c).color(visuals.weak_text_color()));
                }
            });
        cols[1].label(t("plot.roofline"));
        let points = roofline_points(ran);
        Plot::new("gpu_roofline")
            .height(240.0)
            .legend(Legend::default())
            .x_axis_label(t("plot.intensity"))
            .y_axis_label(t("plot.throughput"))
            .allow_scroll(false)
            .show(&mut cols[1], |plot| {
                let mut max_ai: f64 = 1.0;
                for (i, (kernel, ai, gops)) in points.iter().enumerate() {
                    max_ai = max_ai.max(*ai);
                    plot.points(
                        Points::new(kernel.clone(), PlotPoints::from(vec![[*ai, *gops]]))
                            .radius(4.0)
                            .color(theme::series(&visuals, i + 1)),
                    );
                }
                if let Some(c) = copy {
                    let line: Vec<[f64; 2]> = vec![[0.0, 0.0], [max_ai * 1.2, c * max_ai * 1.2]];
                    plot.line(
                        Line::new(t("plot.memory_roof"), PlotPoints::from(line))
                            .color(visuals.weak_text_color()),
                    );
                }
            });
    });
}
