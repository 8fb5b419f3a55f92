//! Attention: the tiny transformer's weights as heatmaps (the causal mask
//! visible), its training, attention's cost against sequence length from
//! the memory calculator's formulas, and a KV cache decoding token by token.

use dlsys_core::autograd::Tensor;
use dlsys_core::float::show_sig;
use dlsys_core::memory::{Preset, attention_flops, kv_cache_bytes};
use dlsys_core::nn::models::kv_cache::{AttentionLayer, KvCache};
use dlsys_core::text::Lang;
use egui_plot::{Line, PlotPoints, Points};

use super::TEXT;
use super::jobs::TextJob;
use dlsys_core::nn::models::text_run::PROMPT;
use crate::kit::{figure, theme};

/// Characters of held-out text the heatmaps show.
const SHOWN: usize = 20;

pub fn attention_ui(ui: &mut egui::Ui, job: &mut TextJob, lang: Lang) {
    let t = |key: &str| TEXT.get(lang, key).to_owned();
    let config = job.model().config;
    let v = config.vocab;
    let ln_v = show_sig((v as f64).ln(), 4);
    ui.label(TEXT.fill(
        lang,
        "attn.explain",
        &[
            ("parameters", &job.model().parameter_count()),
            ("heads", &config.heads),
            ("dh", &(config.width / config.heads)),
        ],
    ));
    let steps = job.settings.steps;
    ui.horizontal(|ui| {
        if job.is_running() {
            if ui.button(t("cnn.stop")).clicked() {
                job.stop();
            }
            ui.spinner();
            let (step, loss) = job.progress();
            ui.label(TEXT.fill(
                lang,
                "attn.progress",
                &[("step", &step), ("steps", &steps), ("loss", &format!("{loss:.3}")), ("ln_v", &ln_v)],
            ));
        } else if ui.button(TEXT.fill(lang, "attn.train", &[("steps", &steps)])).clicked() {
            job.start();
        }
    });
    if let Some(err) = &job.error {
        use dlsys_core::errors::Localized as _;
        ui.colored_label(theme::bad(ui.visuals()), err.message(lang));
    }
    let trained = match &job.result {
        Some(r) => {
            ui.label(TEXT.fill(
                lang,
                "attn.done",
                &[
                    ("start", &format!("{:.3}", r.start_loss)),
                    ("end", &format!("{:.3}", r.end_loss)),
                    ("held", &format!("{:.3}", r.held_out_loss)),
                    ("v", &v),
                    ("ln_v", &ln_v),
                    ("prompt", &PROMPT),
                    ("continuation", &r.continuation),
                ],
            ));
            true
        }
        None => job.is_running(),
    };
    {
        // Drawn during training too (from the latest report's weights), so
        // the page does not jump when training starts or stops.
        let ids = &job.held.ids[..SHOWN.min(job.held.ids.len())];
        let text = job.held.decode(ids).replace('\n', "⏎");
        ui.label(TEXT.fill(lang, "attn.heatmap", &[("text", &text)]));
        if !trained {
            ui.weak(t("attn.untrained"));
        }
        if job.weights.is_none() {
            job.weights = Some(job.model().attention_weights(ids));
        }
        let weights = job.weights.clone().unwrap_or_default();
        let chars: Vec<char> = text.chars().collect();
        crate::kit::theme::sideways(ui, "attn_heatmaps", |ui| {
            ui.horizontal(|ui| {
            for (h, w) in weights.iter().enumerate() {
                ui.vertical(|ui| {
                    ui.label(TEXT.fill(lang, "attn.head", &[("h", &(h + 1))]));
                    heatmap(ui, w, &chars);
                });
            }
            });
        });
    }
    ui.add_space(6.0);
    cost_ui(ui, lang);
    ui.add_space(6.0);
    kv_ui(ui, lang);
}

/// Rows are queries, columns keys: darker is more weight, hatched is masked.
fn heatmap(ui: &mut egui::Ui, w: &Tensor<f32>, chars: &[char]) {
    let (rows, cols) = w.rows_cols();
    let cell = 12.0;
    let (rect, response) = ui.allocate_exact_size(
        egui::vec2(cell * (cols as f32 + 1.0), cell * (rows as f32 + 1.0)),
        egui::Sense::hover(),
    );
    let painter = ui.painter_at(rect);
    let visuals = ui.visuals();
    let ink = figure::nth(visuals, 0);
    let font = egui::FontId::monospace(10.0);
    for (i, ch) in chars.iter().enumerate().take(rows) {
        let at = rect.min + egui::vec2(cell * 0.5, cell * (i as f32 + 1.5));
        painter.text(at, egui::Align2::CENTER_CENTER, ch, font.clone(), visuals.text_color());
        let at = rect.min + egui::vec2(cell * (i as f32 + 1.5), cell * 0.5);
        painter.text(at, egui::Align2::CENTER_CENTER, ch, font.clone(), visuals.text_color());
    }
    for r in 0..rows {
        for c in 0..cols {
            let min = rect.min + egui::vec2(cell * (c as f32 + 1.0), cell * (r as f32 + 1.0));
            let square = egui::Rect::from_min_size(min, egui::vec2(cell - 1.0, cell - 1.0));
            if c > r {
                painter.rect_stroke(square, 0.0, (1.0, visuals.weak_text_color()), egui::StrokeKind::Inside);
                painter.line_segment([square.left_bottom(), square.right_top()], (1.0, visuals.weak_text_color()));
            } else {
                let weight = w.data[r * cols + c].clamp(0.0, 1.0);
                painter.rect_filled(square, 0.0, ink.gamma_multiply(0.1 + 0.9 * weight));
            }
        }
    }
    if let Some(pos) = response.hover_pos() {
        let r = ((pos.y - rect.min.y) / cell - 1.0).floor();
        let c = ((pos.x - rect.min.x) / cell - 1.0).floor();
        if r >= 0.0 && c >= 0.0 && (r as usize) < rows && (c as usize) < cols {
            let (r, c) = (r as usize, c as usize);
            response.on_hover_text(format!("{:.3}", w.data[r * cols + c]));
        }
    }
}

/// FLOPs and KV-cache bytes against sequence length, for GPT-2 small.
fn cost_ui(ui: &mut egui::Ui, lang: Lang) {
    let t = |key: &str| TEXT.get(lang, key).to_owned();
    let m = Preset::Gpt2Small.config();
    let dh = m.head_dim();
    ui.label(TEXT.fill(
        lang,
        "attn.cost",
        &[("layers", &m.layers), ("hidden", &m.hidden), ("kv", &m.kv_heads), ("dh", &dh)],
    ));
    let seqs: Vec<u64> = (8..=15).map(|p| 1u64 << p).collect();
    let flops: Vec<[f64; 2]> = seqs
        .iter()
        .filter_map(|s| attention_flops(m.layers, *s, m.hidden, *s).ok().map(|f| [(*s as f64).log2(), (f as f64 / 1e9).log10()]))
        .collect();
    let kv: Vec<[f64; 2]> = seqs
        .iter()
        .filter_map(|s| {
            kv_cache_bytes(m.layers, m.kv_heads, dh, *s, 2)
                .ok()
                .map(|b| [(*s as f64).log2(), (b as f64 / f64::from(1u32 << 20)).log10()])
        })
        .collect();
    let visuals = ui.visuals().clone();
    let plot = |ui: &mut egui::Ui, id: &str, series: &str, axis: &str, points: Vec<[f64; 2]>, color: egui::Color32| {
        crate::kit::figure::plot(id, 200.0, t("attn.seq_axis"), axis)
            .x_axis_formatter(|mark, _| format!("{}", 2f64.powf(mark.value).round()))
            .y_axis_formatter(|mark, _| show_sig(10f64.powf(mark.value), 2))
            .x_grid_spacer(theme::integer_grid())
            .y_grid_spacer(theme::integer_grid())
            .allow_zoom(false)
            .allow_drag(false)
            .show(ui, |p| {
                p.line(Line::new(series, PlotPoints::from(points.clone())).color(color));
                p.points(Points::new(series, PlotPoints::from(points)).radius(3.0).color(color));
            });
        figure::legend(ui, id, &[figure::Key::line(series, color)]);
    };
    let (flops_colour, kv_colour) = (figure::nth(&visuals, 0), figure::nth(&visuals, 1));
    if ui.available_width() >= 900.0 {
        ui.columns(2, |cols| {
            plot(&mut cols[0], "attn_flops", &t("attn.flops_series"), &t("attn.flops_axis"), flops, flops_colour);
            plot(&mut cols[1], "attn_kv", &t("attn.kv_series"), &t("attn.kv_axis"), kv, kv_colour);
        });
    } else {
        // Narrow: one above the other, so the axes keep their numbers.
        plot(ui, "attn_flops", &t("attn.flops_series"), &t("attn.flops_axis"), flops, flops_colour);
        plot(ui, "attn_kv", &t("attn.kv_series"), &t("attn.kv_axis"), kv, kv_colour);
    }
}

/// A KV cache growing token by token, each step checked against the full pass.
fn kv_ui(ui: &mut egui::Ui, lang: Lang) {
    let (tokens, d, heads) = (8, 16, 2);
    let seeded = |n: usize, k: f32| -> Vec<f32> { (0..n).map(|i| ((i as f32 + 1.0) * k).sin() * 0.5).collect() };
    let layer = AttentionLayer {
        wq: Tensor::new(seeded(d * d, 0.37), &[d, d]),
        wk: Tensor::new(seeded(d * d, 0.53), &[d, d]),
        wv: Tensor::new(seeded(d * d, 0.71), &[d, d]),
        heads,
    };
    let x = Tensor::new(seeded(tokens * d, 0.29), &[tokens, d]);
    let full = layer.full(&x);
    let mut cache = KvCache::new(d);
    ui.label(egui::RichText::new(TEXT.get(lang, "attn.kv_heading")).strong());
    ui.label(TEXT.fill(lang, "attn.kv_explain", &[("d", &d), ("heads", &heads), ("tokens", &tokens)]));
    egui::Grid::new("kv_table").striped(true).show(ui, |ui| {
        for key in ["attn.col.token", "attn.col.bytes", "attn.col.formula", "attn.col.diff"] {
            crate::kit::column_header(ui, &TEXT, lang, key);
        }
        ui.end_row();
        for step in 0..tokens {
            let row = layer.step(&mut cache, x.row(step));
            let diff = dlsys_core::autograd::max_abs_diff(&row, full.row(step));
            let formula = kv_cache_bytes(1, heads as u64, (d / heads) as u64, step as u64 + 1, 4).unwrap_or(0);
            ui.monospace((step + 1).to_string());
            ui.monospace(cache.bytes().to_string());
            ui.monospace(formula.to_string());
            ui.monospace(format!("{diff:.1e}"));
            ui.end_row();
        }
    });
}
