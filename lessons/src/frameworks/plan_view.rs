//! Memory planning: the traced step's buffers placed in one arena ahead of
//! time (greedy by size, best fit), drawn as lifetime bars — op index
//! across, offset up — with the most live at once and the arena marked,
//! and the bounds side by side: max-live, the planned arena, the caching
//! allocator's peaks, no reuse.

use dlsys_core::compile::step::StepMemory;
use dlsys_core::memory::show_bytes;
use dlsys_core::text::Lang;

use dlsys_core::compile::step::StepSettings;

use super::traced::Traced;
use super::{TEXT, t};
use crate::kit::figure::{Key, legend};
use crate::kit::theme;

const MIB: f64 = (1u64 << 20) as f64;
/// The most buffers the lifetime picture draws (the transformer's step has
/// thousands; each is a polygon every frame).
const DRAWN: usize = 1500;

pub fn ui(ui: &mut egui::Ui, traced: &Traced, s: &StepSettings, lang: Lang) {
    let Ok(m) = traced.current(s) else {
        return;
    };
    ui.label(TEXT.fill(
        lang,
        "plan.summary",
        &[
            ("buffers", &m.buffers),
            ("points", &m.points),
            ("max_live", &show_bytes(m.plan.max_live)),
            ("arena", &show_bytes(m.plan.arena)),
            ("ratio", &format!("{:.2}", m.arena_ratio())),
            ("no_reuse", &show_bytes(m.plan.no_reuse)),
        ],
    ));
    lifetimes_plot(ui, m, lang);
    bounds_table(ui, m, lang);
    ui.label(TEXT.fill(
        lang,
        "plan.why",
        &[
            ("reserved", &show_bytes(m.allocator.stats.peak_reserved)),
            ("rratio", &format!("{:.2}", m.reserved_ratio())),
            ("ratio", &format!("{:.2}", m.arena_ratio())),
        ],
    ));
}

fn lifetimes_plot(ui: &mut egui::Ui, m: &StepMemory, lang: Lang) {
    use egui_plot::{HLine, PlotPoints, Polygon};
    let visuals = ui.visuals().clone();
    let (fill, edge) = (theme::series(&visuals, 0), visuals.text_color());
    let (live_colour, arena_colour) = (theme::series(&visuals, 1), theme::series(&visuals, 2));
    let id = "frameworks_lifetimes";
    crate::kit::figure::plot(id, 260.0, t(lang, "axis.point"), t(lang, "axis.offset_mib"))
        .include_y(0.0)
        .show(ui, |plot| {
            let name = t(lang, "plot.buffer");
            // Largest first: past DRAWN, the smallest are left out.
            for p in m.plan.placed.iter().take(DRAWN) {
                let (x0, x1) = (f64::from(p.buffer.first), f64::from(p.buffer.end));
                let (y0, y1) = (p.offset as f64 / MIB, p.end() as f64 / MIB);
                plot.polygon(
                    Polygon::new(name, PlotPoints::from(vec![[x0, y0], [x1, y0], [x1, y1], [x0, y1]]))
                        .fill_color(fill.gamma_multiply(0.45))
                        .stroke(egui::Stroke::new(0.5, edge.gamma_multiply(0.6)))
                        .allow_hover(false),
                );
            }
            plot.hline(HLine::new(t(lang, "plot.max_live"), m.plan.max_live as f64 / MIB).color(live_colour).width(2.0));
            plot.hline(
                HLine::new(t(lang, "plot.arena"), m.plan.arena as f64 / MIB)
                    .color(arena_colour)
                    .width(2.0)
                    .style(egui_plot::LineStyle::dashed_loose()),
            );
        });
    if m.plan.placed.len() > DRAWN {
        ui.label(TEXT.fill(lang, "plan.drawn", &[("drawn", &DRAWN), ("buffers", &m.plan.placed.len())]));
    }
    legend(
        ui,
        id,
        &[
            Key::fill(t(lang, "plot.buffer"), fill),
            Key::rule(t(lang, "plot.max_live"), live_colour),
            Key::rule(t(lang, "plot.arena"), arena_colour),
        ],
    );
}

fn bounds_table(ui: &mut egui::Ui, m: &StepMemory, lang: Lang) {
    let stats = &m.allocator.stats;
    let rows = [
        ("row.max_live", m.plan.max_live),
        ("row.arena", m.plan.arena),
        ("row.allocated", stats.peak_allocated),
        ("row.reserved", stats.peak_reserved),
        ("row.no_reuse", m.plan.no_reuse),
    ];
    egui::Grid::new("frameworks_bounds").striped(true).show(ui, |ui| {
        ui.strong(t(lang, "col.what"));
        ui.strong(t(lang, "col.bytes"));
        ui.strong(t(lang, "col.over_max_live"));
        ui.end_row();
        for (key, bytes) in rows {
            ui.label(t(lang, key));
            ui.monospace(show_bytes(bytes));
            ui.monospace(format!("{:.2}×", bytes as f64 / m.plan.max_live.max(1) as f64));
            ui.end_row();
        }
    });
}
