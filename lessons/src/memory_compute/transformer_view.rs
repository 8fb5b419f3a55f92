//! The transformer calculator: a preset's published configuration, your
//! batch, sequence, precision, optimizer, ZeRO stage and data-parallel
//! size, and what a rank holds — with and without checkpointing — what the
//! KV cache takes and what a step costs in FLOPs.

use dlsys_core::errors::Localized as _;
use dlsys_core::memory::{
    Component, Components, FfnKind, Precision, Preset, TransformerRun, Zero, show_bytes,
    show_count, show_flops,
};
use dlsys_core::float::show_sig;
use dlsys_core::nn::OptimizerKind;
use dlsys_core::quant::KvElement;
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};

use super::{TEXT, t};
use super::bars::{self, Bar};
use super::mlp_view::{layout_note, precision_combo};
use crate::kit::theme;

/// A data-centre GPU's memory, to say whether a rank's share fits.
const GPU_BYTES: u64 = 80 << 30;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TransformerSettings {
    pub preset: Preset,
    pub batch: u64,
    pub seq: u64,
    pub precision: Precision,
    pub optimizer: String,
    pub zero: Zero,
    pub ranks: u64,
    /// The KV cache's element type (the quantisation lesson's).
    pub kv: KvElement,
    /// FlashAttention: a log-sum-exp saved instead of the scores.
    pub flash: bool,
}

impl Default for TransformerSettings {
    fn default() -> Self {
        Self {
            preset: Preset::Llama7b,
            batch: 1,
            seq: Preset::Llama7b.context(),
            precision: Precision::MixedFp16,
            optimizer: "adam".to_owned(),
            zero: Zero::Off,
            ranks: 1,
            kv: KvElement::Fp16,
            flash: false,
        }
    }
}

impl TransformerSettings {
    fn run(&self) -> TransformerRun {
        TransformerRun {
            batch: self.batch,
            seq: self.seq,
            precision: self.precision,
            states: OptimizerKind::by_name(&self.optimizer).map_or(2, |o| o.states() as u64),
            zero: self.zero,
            ranks: self.ranks,
            kv: self.kv,
            flash_attention: self.flash,
            ..TransformerRun::preset(self.preset)
        }
    }
}

pub fn transformer_ui(ui: &mut egui::Ui, s: &mut TransformerSettings, lang: Lang) {
    ui.label(t(lang, "tf.explain"));
    controls(ui, s, lang);
    let run = s.run();
    let r = match run.report() {
        Ok(r) => r,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    let m = &run.model;
    let ffn = match m.ffn_kind {
        FfnKind::Gelu => "GELU",
        FfnKind::SwiGlu => "SwiGLU",
    };
    ui.weak(TEXT.fill(
        lang,
        "tf.config",
        &[
            ("layers", &m.layers),
            ("hidden", &m.hidden),
            ("heads", &m.heads),
            ("kv", &m.kv_heads),
            ("ffn", &m.ffn),
            ("kind", &ffn),
            ("vocab", &m.vocab),
            ("tied", &t(lang, if m.tied { "tf.tied" } else { "tf.untied" })),
        ],
    ));
    ui.label(TEXT.fill(
        lang,
        "tf.parameters",
        &[
            ("parameters", &show_count(r.parameters)),
            ("exact", &r.parameters),
            ("embedding", &show_count(r.embedding_parameters)),
        ],
    ));
    let p = run.precision;
    ui.label(TEXT.fill(
        lang,
        "tf.per_parameter",
        &[
            ("per", &p.bytes_per_parameter(run.states)),
            ("weights", &p.compute_bytes()),
            ("grads", &p.compute_bytes()),
            ("master", &p.master_bytes()),
            ("states", &run.states),
            ("state", &p.state_bytes()),
        ],
    ));
    ui.checkbox(&mut s.flash, t(lang, "tf.flash"));
    ui.label(TEXT.fill(
        lang,
        if s.flash { "tf.flash_on" } else { "tf.flash_off" },
        &[
            ("scores", &show_bytes(r.scores_per_layer)),
            ("lse", &show_bytes(r.lse_per_layer)),
            ("layers", &m.layers),
            ("saved", &show_bytes(r.flash_saved)),
        ],
    ));
    let with_activations = |activations: u64| {
        let mut c: Components = r.per_rank;
        c.set(Component::Activations, activations);
        c
    };
    let plain = with_activations(r.activations);
    let checkpointed = with_activations(r.activations_checkpointed);
    bars::stacked(
        ui,
        "memory_tf_bars",
        &[
            Bar {
                label: t(lang, "tf.bar.plain").to_owned(),
                parts: plain,
                unknown: &[],
            },
            Bar {
                label: t(lang, "tf.bar.checkpointed").to_owned(),
                parts: checkpointed,
                unknown: &[],
            },
        ],
        lang,
    );
    let fits = |c: &Components| {
        let key = if c.total() <= GPU_BYTES { "tf.fits" } else { "tf.does_not_fit" };
        TEXT.fill(
            lang,
            key,
            &[("total", &show_bytes(c.total())), ("gpu", &show_bytes(GPU_BYTES))],
        )
    };
    ui.label(TEXT.fill(
        lang,
        "tf.fit_line",
        &[("plain", &fits(&plain)), ("checkpointed", &fits(&checkpointed))],
    ));
    ui.label(TEXT.fill(
        lang,
        "tf.zero",
        &[
            ("stage", &run.zero.stage()),
            ("ranks", &run.ranks),
            ("what", &TEXT.get(lang, &format!("tf.zero.{}", run.zero.stage()))),
        ],
    ));
    ui.horizontal_wrapped(|ui| {
        ui.label(t(lang, "tf.kv.dtype"));
        for kv in KvElement::ALL {
            ui.selectable_value(&mut s.kv, kv, kv.id());
        }
    });
    let one = r.kv_per_token;
    let scales = if one.scales > 0 {
        TEXT.fill(
            lang,
            "tf.kv.scales",
            &[("scales", &show_bytes(one.scales)), ("per_token", &show_bytes(r.kv_cache_per_token))],
        )
    } else {
        String::new()
    };
    ui.label(TEXT.fill(
        lang,
        "tf.kv",
        &[
            ("dtype", &run.kv.id()),
            ("bits", &run.kv.bits()),
            ("values", &show_bytes(one.values)),
            ("scales", &scales),
            ("layers", &m.layers),
            ("kv", &m.kv_heads),
            ("head_dim", &r.head_dim),
            ("context", &show_bytes(r.kv_cache_context)),
            ("batch", &run.batch),
            ("seq", &run.seq),
        ],
    ));
    ui.label(TEXT.fill(
        lang,
        "tf.flops",
        &[
            ("tokens", &r.tokens),
            ("dense", &show_flops(r.flops_dense)),
            ("attention", &show_flops(r.flops_attention)),
            ("recompute", &show_flops(r.flops_recompute)),
        ],
    ));
    let kaplan = r.parameters.saturating_sub(r.lookup_parameters);
    ui.weak(TEXT.fill(
        lang,
        "tf.flops_conventions",
        &[
            ("n", &show_count(r.parameters)),
            ("lookup", &show_count(r.lookup_parameters)),
            ("kaplan", &show_count(kaplan)),
            ("percent", &show_sig(100.0 * r.lookup_parameters as f64 / kaplan.max(1) as f64, 2)),
        ],
    ));
}

/// A labelled whole number from 1 to `max`, dragged or typed.
fn number(ui: &mut egui::Ui, label: &str, value: &mut u64, max: u64) {
    let label = ui.label(label);
    let speed = (*value as f64 / 50.0).max(0.2);
    ui.add(egui::DragValue::new(value).range(1..=max).speed(speed))
        .labelled_by(label.id);
}

fn controls(ui: &mut egui::Ui, s: &mut TransformerSettings, lang: Lang) {
    ui.horizontal_wrapped(|ui| {
        let before = s.preset;
        crate::kit::choice(ui, "memory_preset", t(lang, "tf.model"), &mut s.preset, Preset::ALL, |p| p.name());
        if s.preset != before {
            s.seq = s.preset.context();
        }
        number(ui, t(lang, "tf.batch"), &mut s.batch, 4096);
        number(ui, t(lang, "tf.seq"), &mut s.seq, 1 << 20);
    });
    ui.horizontal_wrapped(|ui| {
        precision_combo(ui, "memory_tf_precision", &mut s.precision, lang);
        crate::kit::choice_of_names(ui, "memory_tf_optimizer", t(lang, "tf.optimizer"), &mut s.optimizer, &OptimizerKind::NAMES);
    });
    layout_note(ui, s.precision, &s.optimizer, lang);
    ui.horizontal_wrapped(|ui| {
        ui.label(t(lang, "tf.zero_label"));
        for zero in Zero::ALL {
            ui.radio_value(&mut s.zero, zero, format!("ZeRO-{}", zero.stage()))
                .on_hover_text(TEXT.get(lang, &format!("tf.zero.{}", zero.stage())));
        }
        number(ui, t(lang, "tf.ranks"), &mut s.ranks, 65_536);
    });
}
