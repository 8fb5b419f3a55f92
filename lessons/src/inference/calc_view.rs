//! The serving calculator: the model, the device and the formats chosen,
//! prefill and decode as a table of FLOPs, bytes and the two times, the
//! rates and bounds, and tokens per second against the batch size.

use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::inference::calc::{self, DevicePreset, MAX_COUNT, Phase};
use dlsys_core::names::Named as _;
use dlsys_core::memory::show_seconds;
use dlsys_core::memory::transformer::Preset;
use dlsys_core::text::Lang;

use dlsys_core::quant::KvElement;

use super::{Settings, TEXT, WEIGHT_BYTES, t};
use crate::kit::table::{Header, headed};
use crate::kit::theme;

fn bytes_name(lang: Lang, bytes: f64) -> &'static str {
    match bytes {
        b if b >= 2.0 => t(lang, "format.fp16"),
        b if b >= 1.0 => t(lang, "format.int8"),
        _ => t(lang, "format.int4"),
    }
}


fn controls(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.horizontal_wrapped(|ui| {
        crate::kit::choice(ui, "infer_model", t(lang, "calc.model"), &mut s.model, Preset::ALL, |&p| p.name());
        crate::kit::choice(ui, "infer_device", t(lang, "calc.device"), &mut s.device, DevicePreset::ALL, |&d| d.name());
        ui.label(t(lang, "calc.weights"));
        for b in WEIGHT_BYTES {
            ui.selectable_value(&mut s.weight_bytes, b, bytes_name(lang, b));
        }
        ui.label(t(lang, "calc.kv"));
        for kv in KvElement::ALL {
            ui.selectable_value(&mut s.kv, kv, kv.id());
        }
    });
    ui.horizontal_wrapped(|ui| {
        crate::kit::number_field(ui, t(lang, "calc.prompt"), &mut s.prompt, 1..=MAX_COUNT, 4.0);
        crate::kit::number_field(ui, t(lang, "calc.context"), &mut s.context, 1..=MAX_COUNT, 4.0);
        crate::kit::number_field(ui, t(lang, "calc.batch"), &mut s.batch, 1..=MAX_COUNT, 0.5);
    });
}

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.label(t(lang, "calc.explain"));
    controls(ui, s, lang);
    let serve = s.serve();
    let r = match calc::serve(&serve) {
        Ok(r) => r,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    let device = serve.device;
    ui.label(TEXT.fill(
        lang,
        "calc.setup",
        &[
            ("params", &show_sig(r.parameters as f64 / 1e9, 3)),
            ("weights", &show_sig(r.weight_bytes / 1e9, 3)),
            ("kv", &show_sig(r.kv_per_token / 1024.0, 4)),
            ("bw", &device.bandwidth_gb_s),
            ("peak", &device.peak_tflops),
            ("memory", &device.memory_gb),
        ],
    ));
    if !r.weights_fit {
        ui.colored_label(
            theme::bad(ui.visuals()),
            TEXT.fill(
                lang,
                "calc.no_fit",
                &[("weights", &show_sig(r.weight_bytes / 1e9, 3)), ("memory", &device.memory_gb)],
            ),
        );
    }
    phase_table(ui, &[(t(lang, "calc.prefill"), &r.prefill), (t(lang, "calc.decode"), &r.decode)], lang);
    ui.label(TEXT.fill(
        lang,
        "calc.rates",
        &[
            ("tps", &show_sig(r.tokens_per_s, 4)),
            ("limit", &show_sig(r.bandwidth_bound_tokens_per_s, 4)),
            ("tpot", &show_seconds(r.decode.seconds)),
            ("ttft", &show_seconds(r.prefill.seconds)),
            ("ridge", &show_sig(r.ridge_batch, 3)),
            ("fit", &r.sequences_fit),
            ("context", &s.context),
        ],
    ));
    ui.label(TEXT.fill(
        lang,
        "calc.attention",
        &[
            ("attn", &show_sig(r.attention_intensity, 3)),
            ("ridge_i", &show_sig(r.ridge_intensity, 3)),
            ("heads", &serve.model.heads),
            ("kv_heads", &serve.model.kv_heads),
        ],
    ));
    batch_plot(ui, s, r.ridge_batch, lang);
}

fn phase_table(ui: &mut egui::Ui, rows: &[(&str, &Phase)], lang: Lang) {
    let keys = ["col.phase", "col.flops", "col.bytes", "col.intensity", "col.compute", "col.memory", "col.time", "col.bound"];
    headed(
        ui,
        "infer_phases",
        rows,
        Header { text: &TEXT, lang, keys: &keys },
        |ui, (name, _)| {
            ui.label(*name);
        },
        |ui, (_, p)| {
            ui.monospace(dlsys_core::memory::show_flops(p.flops as u64));
            ui.monospace(format!("{} GB", show_sig(p.bytes / 1e9, 3)));
            ui.monospace(show_sig(p.intensity(), 3));
            ui.monospace(show_seconds(p.compute_s));
            ui.monospace(show_seconds(p.memory_s));
            ui.monospace(show_seconds(p.seconds));
            ui.label(p.bound.name(lang));
        },
    );
}

/// Tokens per second against the batch, 1 to 4,096 (log₂ on x): what the
/// device reaches (points) under its two roofs, the rate if only FLOPs
/// counted and the rate if only bytes counted (lines), and the ridge batch.
fn batch_plot(ui: &mut egui::Ui, s: &Settings, ridge: f64, lang: Lang) {
    use egui_plot::{Line, PlotPoints, Points, VLine};
    let serve = s.serve();
    let batches: Vec<u64> = (0..=12).map(|i| 1u64 << i).collect();
    let Ok(points) = calc::tokens_per_s_by_batch(&serve, &batches) else {
        return;
    };
    let series = |f: fn(&calc::BatchPoint) -> f64| -> Vec<[f64; 2]> {
        points.iter().map(|p| [(p.batch as f64).log2(), f(p).log10()]).collect()
    };
    let (reached, compute, memory) = (series(|p| p.tokens_per_s), series(|p| p.compute_only), series(|p| p.memory_only));
    let visuals = ui.visuals().clone();
    let (c_reached, c_compute, c_memory) = (theme::series(&visuals, 0), theme::series(&visuals, 1), theme::series(&visuals, 2));
    ui.label(t(lang, "plot.batch_heading"));
    crate::kit::figure::plot("infer_batch_plot", 200.0, t(lang, "axis.batch"), t(lang, "axis.tokens_per_s"))
        .x_axis_formatter(|mark, _| format!("{}", 2f64.powf(mark.value).round()))
        .y_grid_spacer(theme::decade_grid())
        .y_axis_formatter(|mark, _| dlsys_core::float::show_sig(10f64.powf(mark.value), 3))
        .show(ui, |plot| {
            plot.line(Line::new(t(lang, "plot.compute_roof"), PlotPoints::from(compute)).color(c_compute));
            plot.line(Line::new(t(lang, "plot.memory_roof"), PlotPoints::from(memory)).color(c_memory));
            plot.points(Points::new(t(lang, "plot.rate"), PlotPoints::from(reached)).radius(3.5).color(c_reached));
            if ridge.is_finite() && ridge > 0.0 {
                plot.vline(
                    VLine::new(t(lang, "plot.ridge"), ridge.log2())
                        .color(visuals.text_color())
                        .style(egui_plot::LineStyle::dashed_dense()),
                );
            }
        });
    crate::kit::figure::legend(
        ui,
        "infer_batch_plot",
        &[
            crate::kit::figure::Key::points(t(lang, "plot.rate"), c_reached),
            crate::kit::figure::Key::line(t(lang, "plot.compute_roof"), c_compute),
            crate::kit::figure::Key::line(t(lang, "plot.memory_roof"), c_memory),
            crate::kit::figure::Key::rule(t(lang, "plot.ridge"), visuals.text_color()),
        ],
    );
}
