//! The KV cache of a generation as a paged cache holds it: its blocks in
//! table order (`dlsys_core::inference::paged::one_sequence`, the
//! allocator itself), each cell a cached token, the prompt's apart from
//! the generated ones, filling as the text streams in.

use dlsys_core::inference::paged::one_sequence;
use dlsys_core::text::Lang;

use super::{TEXT, t};
use crate::kit::theme;

/// Tokens a block holds: the paged section's default.
pub fn block_tokens() -> u32 {
    dlsys_core::inference::paged::StreamSettings::default().block_tokens
}

/// The blocks holding `prompt` then the first `cached` of `generated`.
pub fn ui(ui: &mut egui::Ui, prompt: &[char], generated: &[char], cached: usize, lang: Lang) {
    let block = block_tokens();
    let blocks = one_sequence(prompt.len() as u64, cached as u64, block);
    let tokens: Vec<(char, bool)> = prompt
        .iter()
        .map(|c| (*c, true))
        .chain(generated.iter().take(cached).map(|c| (*c, false)))
        .collect();
    let last = blocks.last().map_or(0, |b| b.1);
    let key = if last == block { "grid.caption_full" } else { "grid.caption" };
    ui.label(TEXT.fill(
        lang,
        key,
        &[
            ("blocks", &blocks.len()),
            ("block", &block),
            ("tokens", &tokens.len()),
            ("last", &last),
        ],
    ));
    let visuals = ui.visuals().clone();
    let font = egui::TextStyle::Monospace.resolve(ui.style());
    let cell = |c: char, colour| {
        let shown = match c {
            '\n' => '¶',
            ' ' => '·',
            c => c,
        };
        (shown.to_string(), egui::TextFormat { font_id: font.clone(), color: colour, ..Default::default() })
    };
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing = egui::vec2(4.0, 4.0);
        for (i, (id, held)) in blocks.iter().enumerate() {
            let mut job = egui::text::LayoutJob::default();
            for k in 0..block as usize {
                let (text, format) = match tokens.get(i * block as usize + k) {
                    Some(&(c, true)) if k < *held as usize => cell(c, visuals.weak_text_color()),
                    Some(&(c, false)) if k < *held as usize => cell(c, theme::series(&visuals, 0)),
                    _ => cell(' ', visuals.weak_text_color()),
                };
                job.append(&text, 0.0, format);
            }
            egui::Frame::group(ui.style()).inner_margin(2.0).show(ui, |ui| {
                ui.label(job).on_hover_text(TEXT.fill(lang, "grid.block", &[("id", id), ("held", held), ("block", &block)]));
            });
        }
    });
    crate::kit::figure::legend(
        ui,
        "infer_kv_grid",
        &[
            crate::kit::figure::Key::fill(t(lang, "grid.prompt"), visuals.weak_text_color()),
            crate::kit::figure::Key::fill(t(lang, "grid.generated"), theme::series(&visuals, 0)),
        ],
    );
}
