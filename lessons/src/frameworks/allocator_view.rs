//! The caching allocator: the traced step's allocs and frees run through
//! the model of PyTorch's allocator — what the step holds, what the
//! allocator has handed out (rounded), what it has reserved from the device
//! — its rules with the numbers it uses, and out of memory while memory is
//! free, built step by step.

use std::sync::LazyLock;

use dlsys_core::compile::allocator::{
    LARGE_BUFFER, MIN_BLOCK, MIN_LARGE_ALLOC, ROUND_LARGE, ReplayPoint, SMALL_BUFFER, SMALL_SIZE,
};
use dlsys_core::compile::step::{
    Fragmented, Growing, StepMemory, StepSettings, fragmented, growing,
};
use dlsys_core::memory::show_bytes;
use dlsys_core::text::Lang;


use super::traced::Traced;
use super::{TEXT, t};
use crate::kit::figure::{Key, legend};
use crate::kit::theme;

/// The out-of-memory case: the same every time, made once.
static FRAGMENTED: LazyLock<Option<Fragmented>> = LazyLock::new(fragmented);
/// Sizes that change, under both allocators: the same every time too.
static GROWING: LazyLock<Growing> = LazyLock::new(growing);

pub fn ui(ui: &mut egui::Ui, traced: &Traced, s: &StepSettings, lang: Lang) {
    ui.label(TEXT.fill(
        lang,
        "allocator.rules",
        &[
            ("min_block", &show_bytes(MIN_BLOCK)),
            ("small", &show_bytes(SMALL_SIZE)),
            ("small_segment", &show_bytes(SMALL_BUFFER)),
            ("large_segment", &show_bytes(LARGE_BUFFER)),
            ("min_large", &show_bytes(MIN_LARGE_ALLOC)),
            ("round_large", &show_bytes(ROUND_LARGE)),
        ],
    ));
    if let Ok(m) = traced.current(s) {
        replay_plot(ui, m, lang);
        let s = &m.allocator.stats;
        ui.label(TEXT.fill(
            lang,
            "allocator.stats",
            &[
                ("segments", &s.segments_made),
                ("splits", &s.splits),
                ("merges", &s.merges),
                ("allocated", &show_bytes(s.peak_allocated)),
                ("reserved", &show_bytes(s.peak_reserved)),
                ("device", &show_bytes(m.device)),
            ],
        ));
        if let Some((event, oom)) = &m.allocator.oom {
            ui.colored_label(
                theme::bad(ui.visuals()),
                TEXT.fill(
                    lang,
                    "allocator.oom",
                    &[
                        ("event", &(event + 1)),
                        ("request", &show_bytes(oom.requested)),
                        ("segment", &show_bytes(oom.segment)),
                        ("allocated", &show_bytes(oom.allocated)),
                        ("reserved", &show_bytes(oom.reserved)),
                        ("device", &show_bytes(oom.capacity)),
                    ],
                ),
            );
        }
    }
    if let Some(f) = FRAGMENTED.as_ref() {
        ui.label(TEXT.fill(
            lang,
            "allocator.fragmented",
            &[
                ("device", &show_bytes(f.device)),
                ("segments", &f.segments),
                ("segment", &show_bytes(LARGE_BUFFER)),
                ("tensor", &show_bytes(f.tensor)),
                ("free", &show_bytes(f.cached_free)),
                ("request", &show_bytes(f.oom.requested)),
                ("largest", &show_bytes(f.oom.largest_free)),
            ],
        ));
    }
    growing_ui(ui, lang);
}

/// A figure of a replay point the plot draws.
type Figure = fn(&ReplayPoint) -> u64;

/// What expandable segments change, from [`growing`].
fn growing_ui(ui: &mut egui::Ui, lang: Lang) {
    let g = &*GROWING;
    // The story the first key tells holds only when plain segments fail
    // and expandable ones do not.
    let key = match (&g.plain, &g.expandable) {
        (Some(_), None) => "allocator.growing",
        _ => "allocator.growing_same",
    };
    ui.label(TEXT.fill(
        lang,
        key,
        &[
            ("device", &show_bytes(g.device)),
            ("first", &show_bytes(g.first)),
            ("second", &show_bytes(g.second)),
            ("request", &show_bytes(g.request)),
            ("free", &show_bytes(g.plain_free)),
            ("largest", &show_bytes(g.plain.map_or(0, |o| o.largest_free))),
            ("reserved", &show_bytes(g.expandable_reserved)),
        ],
    ));
}

fn replay_plot(ui: &mut egui::Ui, m: &StepMemory, lang: Lang) {
    use egui_plot::{Line, PlotPoints};
    const MIB: f64 = (1u64 << 20) as f64;
    let visuals = ui.visuals().clone();
    let colours = [theme::series(&visuals, 0), theme::series(&visuals, 1), theme::series(&visuals, 2)];
    let series: [(&str, Figure); 3] = [
        ("plot.requested", |p| p.requested),
        ("plot.allocated", |p| p.allocated),
        ("plot.reserved", |p| p.reserved),
    ];
    let id = "frameworks_allocator";
    crate::kit::figure::plot(id, 200.0, t(lang, "axis.event"), t(lang, "axis.mib"))
        .include_y(0.0)
        .show(ui, |plot| {
            // Reserved, then allocated, then what the step holds on top:
            // the last two nearly coincide, so the top one is thinner.
            for (((key, value), colour), width) in series.iter().zip(colours).zip([1.5, 3.0, 2.0]).rev() {
                let points: Vec<[f64; 2]> = m
                    .allocator
                    .points
                    .iter()
                    .enumerate()
                    .map(|(i, p)| [(i + 1) as f64, value(p) as f64 / MIB])
                    .collect();
                plot.line(Line::new(t(lang, key), PlotPoints::from(points)).color(colour).width(width));
            }
        });
    let keys: Vec<Key> = series.iter().zip(colours).map(|((key, _), c)| Key::line(t(lang, key), c)).collect();
    legend(ui, id, &keys);
}
