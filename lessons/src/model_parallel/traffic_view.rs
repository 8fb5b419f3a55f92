//! What the other two splits send per worker: a Megatron layer's four
//! all-reduces under tensor parallelism, with each worker's shard of the
//! MLP's weights, and ZeRO-3 / FSDP's all-gathers and reduce-scatter
//! against plain data parallelism's all-reduce — the counts of the
//! collective engine's ring.

use dlsys_core::memory::show_bytes;
use dlsys_core::parallel::cost::{TP_ALL_REDUCES_PER_LAYER, sharded_traffic, tp_traffic};
use dlsys_core::text::Lang;

use super::{Settings, TEXT, number, t};

/// Activations and weights in bf16.
const ELEMENT_BYTES: u64 = 2;

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.label(t(lang, "traffic.tp_explain"));
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "traffic.tp_workers"), &mut s.tp_workers, 2..=16, 0.05);
        number(ui, t(lang, "traffic.tokens"), &mut s.tokens, 1..=1 << 24, 16.0);
        number(ui, t(lang, "traffic.hidden"), &mut s.hidden, 1..=1 << 16, 8.0);
    });
    let (tp, h) = (s.tp_workers as u64, s.hidden);
    let traffic = tp_traffic(s.tp_workers, s.tokens, h, ELEMENT_BYTES);
    ui.label(TEXT.fill(
        lang,
        "traffic.shards",
        &[
            ("t", &tp),
            ("h", &h),
            ("ffn", &(4 * h)),
            ("shard", &(4 * h).div_ceil(tp)),
        ],
    ));
    ui.label(TEXT.fill(
        lang,
        "traffic.tp_line",
        &[
            ("t", &tp),
            ("tokens", &s.tokens),
            ("h", &h),
            ("one", &show_bytes(traffic.per_all_reduce)),
            ("count", &TP_ALL_REDUCES_PER_LAYER),
            ("layer", &show_bytes(traffic.per_layer)),
        ],
    ));
    ui.add_space(6.0);
    ui.label(t(lang, "traffic.fsdp_explain"));
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "traffic.fsdp_workers"), &mut s.fsdp_workers, 2..=1024, 0.2);
        number(ui, t(lang, "traffic.params"), &mut s.params_m, 1e-3..=1e7, 10.0);
    });
    let params = (s.params_m * 1e6).round() as u64;
    let sharded = sharded_traffic(s.fsdp_workers, params, ELEMENT_BYTES);
    ui.label(TEXT.fill(
        lang,
        "traffic.fsdp_line",
        &[
            ("n", &s.fsdp_workers),
            ("psi", &show_bytes(params * ELEMENT_BYTES)),
            ("fsdp", &show_bytes(sharded.fsdp)),
            ("dp", &show_bytes(sharded.data_parallel)),
            (
                "ratio",
                &format!("{:.2}", sharded.fsdp as f64 / sharded.data_parallel.max(1) as f64),
            ),
        ],
    ));
}
