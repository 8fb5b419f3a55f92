//! The bubble against the micro-batch count for every schedule at the
//! page's P: each point a schedule run on the virtual clock with the
//! page's times, each line the closed form; and the micro-batches each
//! needs for a bubble of at most 10 %.

use dlsys_core::names::Named as _;
use dlsys_core::parallel::cost::micro_batches_for;
use dlsys_core::parallel::schedule::{Kind, pipeline};
use dlsys_core::text::Lang;

use super::{Settings, TEXT, color, t};
use crate::kit::theme::ReadableAxes as _;

/// The micro-batch counts plotted: 1 to this.
const PLOT_MICRO: usize = 32;
/// The bubble the last line asks about.
const TARGET: f64 = 0.10;

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    use crate::kit::figure::{self, Key};
    use egui_plot::{Line, PlotPoints, Points};
    ui.label(t(lang, "bubble.explain"));
    let (stages, times) = (s.stages, s.times());
    // GPipe's bubble is 1F1B's: one line for both.
    let kinds: Vec<Kind> = Kind::ALL
        .iter()
        .filter(|k| **k != Kind::GPipe)
        .map(|k| k.with_chunks(s.chunks))
        .collect();
    let name = |k: Kind| match k {
        Kind::OneFOneB => TEXT.fill(
            lang,
            "bubble.same",
            &[("a", &Kind::GPipe.name(lang)), ("b", &k.name(lang))],
        ),
        _ => k.name(lang),
    };
    // Interleaving takes whole groups of P.
    let counts = |k: Kind| {
        (1..=PLOT_MICRO).filter(move |m| !matches!(k, Kind::Interleaved { .. }) || m.is_multiple_of(stages))
    };
    let visuals = ui.visuals().clone();
    ui.label(TEXT.fill(lang, "bubble.plot", &[("p", &stages)]));
    crate::kit::figure::plot("mp_bubble_plot", 220.0, t(lang, "axis.micro"), t(lang, "axis.bubble"))
        .readable_y()
        .include_y(0.0)
        .include_x(0.0)
        .show(ui, |plot| {
            for k in &kinds {
                let formula: Vec<[f64; 2]> = counts(*k)
                    .map(|m| [m as f64, 100.0 * dlsys_core::parallel::schedule::bubble_formula(*k, stages, m, times)])
                    .collect();
                let measured: Vec<[f64; 2]> = counts(*k)
                    .filter_map(|m| pipeline(*k, stages, m, times).ok().map(|r| [m as f64, 100.0 * r.rows[0].bubble]))
                    .collect();
                let c = color(&visuals, *k);
                plot.line(Line::new(name(*k), PlotPoints::from(formula)).color(c));
                plot.points(Points::new(name(*k), PlotPoints::from(measured)).color(c).radius(2.5));
            }
        });
    let mut keys: Vec<Key> = kinds.iter().map(|k| Key::line(name(*k), color(&visuals, *k))).collect();
    keys.push(Key::points(t(lang, "bubble.measured"), visuals.text_color()));
    figure::legend(ui, "mp_bubble_plot", &keys);
    let needs: Vec<String> = kinds
        .iter()
        .map(|k| {
            let m = micro_batches_for(*k, stages, TARGET, times)
                .map_or_else(|| t(lang, "bubble.never").to_owned(), |m| m.to_string());
            TEXT.fill(lang, "bubble.need_one", &[("schedule", &name(*k)), ("m", &m)])
        })
        .collect();
    ui.label(TEXT.fill(
        lang,
        "bubble.need",
        &[
            ("target", &format!("{:.0}", 100.0 * TARGET)),
            ("p", &stages),
            ("list", &crate::kit::join(lang, &needs)),
        ],
    ));
}
