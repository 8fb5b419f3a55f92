//! What sharded training sends: ZeRO-3 / FSDP's two all-gathers and one
//! reduce-scatter per step against plain data parallelism's all-reduce —
//! the counts of the collective engine's ring.

use dlsys_core::memory::show_bytes;
use dlsys_core::parallel::cost::sharded_traffic;
use dlsys_core::text::Lang;

use super::{Settings, TEXT, number, t};

/// Weights and gradients in bf16.
const ELEMENT_BYTES: u64 = 2;

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
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
