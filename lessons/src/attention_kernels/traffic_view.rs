//! The rungs' costs from the core's models at the chosen size, no GPU
//! needed: bytes read and written (what the instrumented build counts),
//! FLOPs and intensity, the global memory each needs beyond Q, K, V and O,
//! and the loop iterations of its longest invocation; the textbook count
//! beside them; the extra memory as N grows.

use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::kernels::LOOP_BUDGET;
use dlsys_core::kernels::attention::{AttnRung, standard_bytes, sweep_lengths};
use dlsys_core::memory::show_bytes;
use dlsys_core::names::Named as _;
use dlsys_core::text::Lang;

use super::loglog::{Series, plot};
use super::{Settings, TEXT, t};
use crate::kit::table::{Header, headed};
use crate::kit::theme;

pub fn ui(ui: &mut egui::Ui, s: &Settings, lang: Lang) {
    let shape = match s.shape(s.seq) {
        Ok(shape) => shape,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    let tiles = s.tiles();
    let (n, d) = (u64::from(shape.seq), u64::from(shape.head_dim));
    ui.label(TEXT.fill(
        lang,
        "traffic.explain",
        &[("n", &n), ("d", &d), ("br", &tiles.br), ("bc", &tiles.bc)],
    ));
    let rungs = AttnRung::for_shape(&shape);
    let cols = [
        "race.col_rung", "traffic.col_read",
        "traffic.col_written",
        "traffic.col_flops",
        "traffic.col_intensity",
        "traffic.col_extra",
        "traffic.col_loops",
    ];
    headed(
        ui,
        "attn_traffic",
        &rungs,
        Header { text: &TEXT, lang, keys: &cols },
        |ui, rung| {
            ui.monospace(rung.id()).on_hover_text(rung.name(lang));
        },
        |ui, &rung| {
            let traffic = shape.traffic(rung, tiles);
            let flops = shape.flops(rung);
            ui.monospace(show_bytes(traffic.bytes_read));
            ui.monospace(show_bytes(traffic.bytes_written));
            ui.monospace(show_sig(flops, 3));
            ui.monospace(show_sig(flops / traffic.bytes().max(1) as f64, 3));
            ui.monospace(show_bytes(shape.extra_bytes(rung)));
            ui.monospace(format!(
                "{} / {LOOP_BUDGET}",
                shape.loop_iterations(rung, tiles)
            ));
        },
    );
    let tiled = shape.traffic(AttnRung::Tiled, tiles).bytes();
    ui.label(TEXT.fill(
        lang,
        "traffic.textbook",
        &[
            ("standard", &show_bytes(standard_bytes(n, d, 4))),
            ("scores", &show_bytes(4 * 4 * n * n)),
            ("tiled", &show_bytes(tiled)),
            ("blocks", &n.div_ceil(u64::from(tiles.br))),
        ],
    ));
    if shape.causal {
        let (skipped, total) = shape.tiles_skipped(tiles);
        let percent = 100.0 * skipped as f64 / total.max(1) as f64;
        ui.label(TEXT.fill(
            lang,
            "traffic.skipped",
            &[("skipped", &skipped), ("total", &total), ("percent", &show_sig(percent, 3))],
        ));
    }
    // Extra memory against N: N² for the naive rung, N for the others.
    let lengths = sweep_lengths();
    let series: Vec<Series> = [AttnRung::Naive, AttnRung::Tiled]
        .into_iter()
        .enumerate()
        .map(|(i, rung)| Series {
            name: rung.name(lang),
            color: theme::series(ui.visuals(), i),
            points: lengths
                .iter()
                .filter_map(|&n| s.shape(n).ok())
                .map(|sh| (f64::from(sh.seq), sh.extra_bytes(rung) as f64))
                .collect(),
        })
        .collect();
    plot(
        ui,
        "attn_extra_memory",
        (t(lang, "traffic.axis_n"), t(lang, "traffic.axis_bytes")),
        super::loglog::decimal_bytes,
        &series,
    );
}
