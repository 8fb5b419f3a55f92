//! The tiled rung's loop, step by step, on a small head whose scores rise
//! with the key index (so the running max moves in every tile): which block
//! of query rows and which tile of K and V sit in workgroup memory, the
//! tiles the causal rung skips, and each row's running max, sum and the
//! factor that rescales O — replayed by the core's `trace`.

use dlsys_core::float::show_sig;
use dlsys_core::kernels::attention::{AttnShape, Qkv, SEED, TileStep, Tiles, trace};
use dlsys_core::text::Lang;

use super::{AttentionKernels, TEXT, t};
use crate::kit::figure::{self, Key};
use crate::kit::table::{Look, pinned};
use crate::kit::theme;

/// The picture's problem: small enough to draw every score.
const N: u32 = 40;
const TILES: Tiles = Tiles { br: 16, bc: 8 };
/// Seconds between steps while playing.
const STEP_S: f64 = 0.8;

fn steps(causal: bool) -> Vec<TileStep> {
    let Ok(shape) = AttnShape::new(1, N, 32, causal) else {
        return Vec::new();
    };
    trace(&shape, TILES, &Qkv::rising(&shape, SEED), causal).unwrap_or_default()
}

impl AttentionKernels {
    pub(super) fn tiles_ui(&mut self, ui: &mut egui::Ui, lang: Lang) {
        ui.label(TEXT.fill(
            lang,
            "tiles.explain",
            &[("n", &N), ("br", &TILES.br), ("bc", &TILES.bc)],
        ));
        let causal = self.settings.causal;
        // Replayed when the mask changes, not every frame.
        let steps = self.trace.get(&causal, |c| steps(*c));
        if steps.is_empty() {
            return;
        }
        let last = steps.len() - 1;
        let s = &mut self.settings;
        s.step = s.step.min(last);
        // Playing: one step every STEP_S seconds, stopping at the end.
        let now = ui.input(|i| i.time);
        if let Some(at) = self.playing {
            if s.step >= last {
                self.playing = None;
            } else if now - at >= STEP_S {
                s.step += 1;
                self.playing = Some(now);
            }
            ui.ctx().request_repaint_after(std::time::Duration::from_secs_f64(STEP_S / 4.0));
        }
        ui.horizontal_wrapped(|ui| {
            if ui
                .add_enabled(s.step > 0, egui::Button::new(t(lang, "tiles.back")))
                .clicked()
            {
                s.step -= 1;
            }
            if ui
                .add_enabled(s.step < last, egui::Button::new(t(lang, "tiles.forward")))
                .clicked()
            {
                s.step += 1;
            }
            let play = if self.playing.is_some() { "tiles.pause" } else { "tiles.play" };
            if ui.button(t(lang, play)).clicked() {
                self.playing = match self.playing {
                    Some(_) => None,
                    None => {
                        if s.step >= last {
                            s.step = 0;
                        }
                        Some(now)
                    }
                };
            }
            ui.add(
                egui::Slider::new(&mut s.step, 0..=last)
                    .text(t(lang, "tiles.step"))
                    .custom_formatter(|v, _| format!("{} / {}", v as usize + 1, last + 1)),
            );
        });
        let step = &steps[s.step];
        let (r0, r1) = step.rows;
        let (j0, j1) = step.keys;
        let key = if step.skipped { "tiles.now_skipped" } else { "tiles.now" };
        ui.label(TEXT.fill(
            lang,
            key,
            &[
                ("block", &step.block),
                ("r0", &r0),
                ("r1", &(r1 - 1)),
                ("j0", &j0),
                ("j1", &(j1.max(1) - 1)),
            ],
        ));
        // Side by side where the page is wide, one under the other where not.
        ui.horizontal_wrapped(|ui| {
            ui.spacing_mut().item_spacing.x = 24.0;
            grid(ui, steps, s.step, causal, lang);
            state_table(ui, step, lang);
        });
    }
}

/// The N × N scores: masked ones faint, the block's earlier tiles shaded,
/// the current tile filled, skipped tiles outlined.
fn grid(ui: &mut egui::Ui, steps: &[TileStep], at: usize, causal: bool, lang: Lang) {
    // Room for the state table beside it where the page allows.
    let side = (ui.available_width() - 300.0).clamp(160.0, 320.0);
    ui.vertical(|ui| {
        // The caption and the key wrap within the picture's width.
        ui.set_max_width(side);
        ui.weak(t(lang, "tiles.axes"));
        let (rect, _) = ui.allocate_exact_size(egui::vec2(side, side), egui::Sense::hover());
        let painter = ui.painter_at(rect);
        let visuals = &ui.visuals().clone();
        let cell = side / N as f32;
        let cell_rect = |i: u32, j: u32, rows: u32, cols: u32| {
            egui::Rect::from_min_size(
                rect.min + egui::vec2(j as f32 * cell, i as f32 * cell),
                egui::vec2(cols as f32 * cell, rows as f32 * cell),
            )
        };
        painter.rect_filled(rect, 0.0, visuals.extreme_bg_color);
        if causal {
            let faint = visuals.weak_text_color().gamma_multiply(0.18);
            for i in 0..N {
                painter.rect_filled(cell_rect(i, i + 1, 1, N - i - 1), 0.0, faint);
            }
        }
        let now = &steps[at];
        let done = theme::series(visuals, 0).gamma_multiply(0.35);
        let current = theme::series(visuals, 0);
        let skipped = theme::warn(visuals);
        for (k, step) in steps.iter().enumerate() {
            let r = cell_rect(
                step.rows.0,
                step.keys.0,
                step.rows.1 - step.rows.0,
                step.keys.1 - step.keys.0,
            );
            if step.skipped && (step.block < now.block || k <= at) {
                painter.rect_stroke(
                    r.shrink(1.0),
                    0.0,
                    egui::Stroke::new(1.5, skipped),
                    egui::StrokeKind::Inside,
                );
            } else if k < at && step.block == now.block {
                painter.rect_filled(r, 0.0, done);
            }
        }
        let r = cell_rect(
            now.rows.0,
            now.keys.0,
            now.rows.1 - now.rows.0,
            now.keys.1 - now.keys.0,
        );
        if now.skipped {
            painter.rect_stroke(r, 0.0, egui::Stroke::new(3.0, skipped), egui::StrokeKind::Inside);
        } else {
            painter.rect_filled(r, 0.0, current);
        }
        painter.rect_stroke(
            rect,
            0.0,
            egui::Stroke::new(1.0, visuals.weak_text_color()),
            egui::StrokeKind::Inside,
        );
        let masked = visuals.weak_text_color().gamma_multiply(0.18);
        let keys: Vec<Key> = [
            (current, "tiles.key_current"),
            (done, "tiles.key_done"),
            (skipped, "tiles.key_skipped"),
            (masked, "tiles.key_masked"),
        ]
        .into_iter()
        .map(|(color, key)| Key::fill(t(lang, key), color))
        .collect();
        figure::legend(ui, "attn_tiles", &keys);
    });
}

/// Each row of the block after this tile: running max m, sum l, and the
/// factor exp(m_old − m_new) that O and l were multiplied by.
fn state_table(ui: &mut egui::Ui, step: &TileStep, lang: Lang) {
    let cols = ["tiles.col_m", "tiles.col_l", "tiles.col_rescale"];
    let number = |x: f64| {
        if x == f64::NEG_INFINITY {
            "−∞".to_owned()
        } else {
            show_sig(x, 4)
        }
    };
    ui.vertical(|ui| {
        pinned(
            ui,
            "attn_tile_state",
            step.state.len() + 1,
            Look {
                spacing: egui::vec2(12.0, 2.0),
                striped: true,
            },
            |ui, r| match r.checked_sub(1).and_then(|i| step.state.get(i)) {
                None => {
                    ui.strong(t(lang, "tiles.col_row"));
                }
                Some(s) => {
                    ui.monospace(s.row.to_string());
                }
            },
            |ui, r| match r.checked_sub(1).and_then(|i| step.state.get(i)) {
                None => {
                    for key in cols {
                        ui.strong(t(lang, key));
                    }
                }
                Some(s) => {
                    ui.monospace(number(s.m));
                    ui.monospace(number(s.l));
                    // 0 at a row's first keys: there was nothing to rescale.
                    let text = if s.rescale == 0.0 { "—".to_owned() } else { number(s.rescale) };
                    if s.rescale > 0.0 && s.rescale < 1.0 {
                        ui.colored_label(theme::series(ui.visuals(), 1), text);
                    } else {
                        ui.monospace(text);
                    }
                }
            },
        );
    });
}
