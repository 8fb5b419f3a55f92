//! Tensor parallelism run for real: one transformer layer split over T
//! workers on threads (`parallel::tensor`), each shard against the unsplit
//! layer and each all-reduce's bytes counted; then what the same four
//! all-reduces send at a real model's size (`parallel::cost`).

use dlsys_core::errors::Localized as _;
use dlsys_core::memory::show_bytes;
use dlsys_core::names::Named as _;
use dlsys_core::collective::Link;
use dlsys_core::memory::show_seconds;
use dlsys_core::parallel::cost::{TP_ALL_REDUCES_PER_LAYER, tp_step, tp_traffic};
use dlsys_core::parallel::plan::layer_activation_bytes;
use dlsys_core::parallel::sequence::{SpRun, run_sp};
use dlsys_core::parallel::tensor::{MAX_HEADS, MAX_HIDDEN, MAX_TOKENS, TensorError, TpRun, TpSettings, run_tp};
use dlsys_core::text::Lang;

use super::{Settings, TEXT, number, t};
use crate::kit::memo::Memo;
use crate::kit::theme;

/// Activations in bf16 at scale.
const ELEMENT_BYTES: u64 = 2;

/// A run, kept until its settings change; the MLP block under sequence
/// parallelism beside it.
pub type Runs = Memo<TpSettings, Result<(TpRun, Option<SpRun>), TensorError>>;

/// Both runs; sequence parallelism only where the tokens divide.
fn runs(s: &TpSettings) -> Result<(TpRun, Option<SpRun>), TensorError> {
    let threads = super::train_view::THREADS;
    let tp = run_tp(s, threads)?;
    let sp = match run_sp(s, threads) {
        Ok(sp) => Some(sp),
        Err(TensorError::SpTokens { .. }) => None,
        Err(e) => return Err(e),
    };
    Ok((tp, sp))
}

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, runs: &mut Runs, lang: Lang) {
    ui.label(t(lang, "traffic.tp_explain"));
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "traffic.tp_workers"), &mut s.tp_workers, 2..=16, 0.05);
        number(ui, t(lang, "tensor.tokens"), &mut s.tp_tokens, 1..=MAX_TOKENS, 0.2);
        number(ui, t(lang, "tensor.hidden"), &mut s.tp_hidden, 1..=MAX_HIDDEN, 0.5);
        number(ui, t(lang, "tensor.heads"), &mut s.tp_heads, 1..=MAX_HEADS, 0.05);
    });
    let settings = TpSettings {
        workers: s.tp_workers,
        tokens: s.tp_tokens,
        hidden: s.tp_hidden,
        heads: s.tp_heads,
        ..TpSettings::default()
    };
    match runs.get(&settings, self::runs) {
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
        }
        Ok((run, sp)) => {
            show(ui, run, lang);
            sequence(ui, run, sp.as_ref(), lang);
        }
    }
    ui.add_space(6.0);
    scale(ui, s, lang);
    time_share(ui, s, lang);
    activation_figure(ui, s, lang);
}

fn show(ui: &mut egui::Ui, run: &TpRun, lang: Lang) {
    let t_workers = run.settings.workers;
    for sub in &run.sublayers {
        let same = sub.activations_bitwise && sub.weight_grads_bitwise && sub.both_within_f64_bound;
        let color = if same { theme::good(ui.visuals()) } else { theme::bad(ui.visuals()) };
        ui.label(TEXT.fill(
            lang,
            "tensor.shards",
            &[("name", &sub.sublayer.name(lang)), ("t", &t_workers), ("shapes", &sub.shapes_text())],
        ));
        ui.colored_label(
            color,
            TEXT.fill(
                lang,
                if same { "tensor.same" } else { "tensor.differ" },
                &[
                    ("out", &format!("{:.1e}", sub.output_max_difference)),
                    ("out_ratio", &format!("{:.3}", sub.output_over_bound)),
                    ("input", &format!("{:.1e}", sub.input_grad_max_difference)),
                    ("in_ratio", &format!("{:.3}", sub.input_grad_over_bound)),
                ],
            ),
        );
        let counted = sub.sent_forward.iter().chain(&sub.sent_backward).all(|b| *b == sub.formula_bytes);
        ui.label(TEXT.fill(
            lang,
            if counted { "tensor.bytes" } else { "tensor.bytes_off" },
            &[("sent", &show_bytes(sub.sent_forward[0])), ("formula", &show_bytes(sub.formula_bytes))],
        ));
    }
    ui.label(TEXT.fill(
        lang,
        "tensor.layer",
        &[("count", &run.all_reduces), ("bytes", &show_bytes(run.layer_bytes))],
    ));
}

/// The MLP block with the norm's region split along the sequence.
fn sequence(ui: &mut egui::Ui, run: &TpRun, sp: Option<&SpRun>, lang: Lang) {
    let s = &run.settings;
    let Some(sp) = sp else {
        ui.label(TEXT.fill(lang, "tensor.sp_tokens", &[("tokens", &s.tokens), ("t", &s.workers)]));
        return;
    };
    let same = sp.output_bitwise && sp.input_grad_bitwise && sp.sp_sent == sp.tp_sent;
    let text = TEXT.fill(
        lang,
        if same { "tensor.sp" } else { "tensor.sp_differ" },
        &[
            ("per", &(s.tokens / s.workers)),
            ("tokens", &s.tokens),
            ("sent", &show_bytes(sp.sp_sent[0])),
            ("norm", &show_bytes(sp.sp_norm_sent[0])),
            ("sp_kept", &sp.sp_kept),
            ("tp_kept", &sp.tp_kept),
            ("diff", &format!("{:.1e}", sp.norm_grad_max_difference)),
        ],
    );
    ui.colored_label(if same { theme::good(ui.visuals()) } else { theme::bad(ui.visuals()) }, text);
}

/// The same four all-reduces at a real model's size, from the formula the
/// run above counted.
fn scale(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.label(t(lang, "tensor.scale"));
    ui.horizontal_wrapped(|ui| {
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
}

/// The layer's time at that size: its compute on one GPU against its four
/// all-reduces on the link (`parallel::cost::tp_step`).
fn time_share(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "tensor.tflops"), &mut s.tp_tflops, 0.01..=1e5, 1.0);
        number(ui, t(lang, "tensor.gbps"), &mut s.tp_gbps, 0.01..=1e5, 1.0);
    });
    let link = Link::new(3.0, s.tp_gbps).unwrap_or(Link { alpha_s: 3e-6, bytes_per_s: 450e9 });
    let step = tp_step(s.tp_workers, s.tokens, s.hidden, ELEMENT_BYTES, s.tp_tflops * 1e12, link);
    ui.label(TEXT.fill(
        lang,
        "tensor.time",
        &[
            ("flops", &format!("{:.3e}", step.flops)),
            ("compute", &show_seconds(step.compute_s)),
            ("comm", &show_seconds(step.comm_s)),
            ("share", &format!("{:.1}", 100.0 * step.comm_share)),
        ],
    ));
}

/// Activations a layer keeps per GPU against T, with and without sequence
/// parallelism (Korthikanti et al.'s counts, `parallel::plan`), at the
/// tokens and width above, 2,048-token sequences and 128-wide heads.
fn activation_figure(ui: &mut egui::Ui, s: &Settings, lang: Lang) {
    use crate::kit::figure::{Key, legend};
    use crate::kit::theme::ReadableAxes as _;
    use egui_plot::{Bar, BarChart};
    // Sequences of 2,048 tokens (all the tokens, if fewer), heads of 128
    // (one head if the width is narrower).
    let seq = s.tokens.clamp(1, 2048);
    let micro = s.tokens / seq;
    let heads = (s.hidden / 128).max(1);
    let visuals = ui.visuals().clone();
    let (c_tp, c_sp) = (theme::series(&visuals, 0), theme::series(&visuals, 1));
    let gib = |bytes: f64| bytes / f64::from(1u32 << 30);
    let ts = [1u64, 2, 4, 8];
    let bars = |sp: bool, offset: f64, color| -> Vec<Bar> {
        ts.iter()
            .enumerate()
            .map(|(i, t)| {
                let bytes = layer_activation_bytes(seq, micro, s.hidden, heads, *t, sp, false);
                Bar::new(i as f64 + offset, gib(bytes)).width(0.35).fill(color)
            })
            .collect()
    };
    let tp_name = t(lang, "tensor.fig_tp").to_owned();
    let sp_name = t(lang, "tensor.fig_sp").to_owned();
    ui.label(TEXT.fill(lang, "tensor.fig", &[("micro", &micro), ("seq", &seq), ("heads", &heads)]));
    crate::kit::figure::plot("mp_sp_activations", 170.0, t(lang, "tensor.fig_x"), t(lang, "tensor.fig_y"))
        .readable_y()
        .x_axis_formatter(move |mark, _| ts.get(mark.value.round() as usize).filter(|_| (mark.value - mark.value.round()).abs() < 1e-6).map(|t| format!("T = {t}")).unwrap_or_default())
        .allow_drag(false)
        .show(ui, |plot| {
            plot.bar_chart(BarChart::new(tp_name.clone(), bars(false, -0.2, c_tp)).color(c_tp));
            plot.bar_chart(BarChart::new(sp_name.clone(), bars(true, 0.2, c_sp)).color(c_sp));
        });
    legend(ui, "mp_sp_activations", &[Key::fill(tp_name, c_tp), Key::fill(sp_name, c_sp)]);
}
