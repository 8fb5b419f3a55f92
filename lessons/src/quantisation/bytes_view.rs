//! The bytes of a quantised model: payload, scales and zero points from
//! the core's one byte count, beside fp16, and the decode speed-up bound
//! that follows from bytes alone.

use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::quant::grouped_bytes;
use dlsys_core::text::Lang;

use super::{Settings, TEXT, t};
use crate::kit::theme;

fn gb(bytes: u64) -> String {
    show_sig(bytes as f64 / 1e9, 4)
}

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.label(t(lang, "bytes.intro"));
    ui.horizontal_wrapped(|ui| {
        crate::kit::number_field(ui, t(lang, "bytes.params"), &mut s.params_billions, 0.001..=10_000.0, 0.5);
        crate::kit::number_field(ui, t(lang, "bytes.bits"), &mut s.calc_bits, 2..=16, 0.1);
        crate::kit::number_field(ui, t(lang, "bytes.group"), &mut s.calc_group, 0..=1 << 20, 1.0);
    });
    ui.horizontal_wrapped(|ui| {
        crate::kit::number_field(ui, t(lang, "bytes.scale_bytes"), &mut s.scale_bytes, 1..=4, 0.05);
        ui.checkbox(&mut s.zero_points, t(lang, "bytes.zero_points"));
    });
    let params = (s.params_billions * 1e9).round() as u64;
    let (quant, fp16) = match (
        grouped_bytes(params, s.calc_bits, s.calc_group, s.scale_bytes, s.zero_points),
        grouped_bytes(params, 16, 0, 0, false),
    ) {
        (Ok(q), Ok(f)) => (q, f),
        (Err(e), _) | (_, Err(e)) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    ui.label(TEXT.fill(
        lang,
        "bytes.result",
        &[
            ("total", &gb(quant.total_bytes)),
            ("payload", &gb(quant.payload_bytes)),
            ("scales", &gb(quant.scales_bytes)),
            ("zeros", &gb(quant.zero_points_bytes)),
            ("bpp", &show_sig(quant.bits_per_param, 4)),
            ("blocks", &quant.blocks),
        ],
    ));
    let speedup = fp16.total_bytes as f64 / quant.total_bytes.max(1) as f64;
    ui.label(TEXT.fill(
        lang,
        "bytes.versus",
        &[("fp16", &gb(fp16.total_bytes)), ("ratio", &show_sig(speedup, 3))],
    ));
    ui.small(t(lang, "bytes.note"));
}
