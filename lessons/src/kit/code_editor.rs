//! A WGSL editor: egui's multiline `TextEdit` with a highlighter for WGSL's
//! keywords, types, built-in functions, attributes, numbers and comments, a
//! line-number gutter, and the line a diagnostic points at marked; given a
//! `&str`, the same view read-only (generated kernels, references).
//!
//! (egui_code_editor 0.4.3, the egui 0.37 release of the usual crate, does not
//! build with egui's `persistence` feature, which eframe turns on; this is
//! the small part of it the lesson needs.)

use egui::text::{LayoutJob, TextFormat};
use egui::{Color32, FontId};

use super::theme::CodePalette;

const KEYWORDS: &[&str] = &[
    "fn",
    "let",
    "var",
    "const",
    "override",
    "struct",
    "if",
    "else",
    "for",
    "loop",
    "while",
    "break",
    "continue",
    "continuing",
    "return",
    "switch",
    "case",
    "default",
    "discard",
    "enable",
    "alias",
    "true",
    "false",
];

const TYPES: &[&str] = &[
    "f32",
    "f16",
    "u32",
    "i32",
    "bool",
    "vec2",
    "vec3",
    "vec4",
    "vec2f",
    "vec3f",
    "vec4f",
    "vec2u",
    "vec3u",
    "vec4u",
    "mat2x2",
    "mat3x3",
    "mat4x4",
    "array",
    "atomic",
    "ptr",
    "uniform",
    "storage",
    "workgroup",
    "function",
    "private",
    "read",
    "read_write",
];

const BUILTINS: &[&str] = &[
    "workgroupBarrier",
    "storageBarrier",
    "workgroupUniformLoad",
    "atomicAdd",
    "atomicMax",
    "atomicMin",
    "atomicLoad",
    "atomicStore",
    "select",
    "bitcast",
    "arrayLength",
    "exp",
    "exp2",
    "log",
    "max",
    "min",
    "abs",
    "sqrt",
    "fma",
    "clamp",
    "floor",
    "ceil",
    "sin",
    "cos",
    "dot",
];

/// Lays out WGSL in colour; `error_line` (1-based) gets a red background.
pub fn highlight(
    code: &str,
    font: &FontId,
    visuals: &egui::Visuals,
    error_line: Option<u32>,
) -> LayoutJob {
    let palette = super::theme::code(visuals);
    let mut job = LayoutJob::default();
    let mut line = 1u32;
    let mut rest = code;
    while !rest.is_empty() {
        let (len, color) = token(rest, &palette);
        let (piece, tail) = rest.split_at(len);
        // Newlines end a piece, so each line can get its own background.
        let background = if Some(line) == error_line {
            palette.error_line
        } else {
            Color32::TRANSPARENT
        };
        job.append(
            piece,
            0.0,
            TextFormat {
                font_id: font.clone(),
                color,
                background,
                ..Default::default()
            },
        );
        line += piece.matches('\n').count() as u32;
        rest = tail;
    }
    job
}

/// The length in bytes of the token at the start of `s`, and its colour.
fn token(s: &str, p: &CodePalette) -> (usize, Color32) {
    let first = s.chars().next().unwrap_or(' ');
    if s.starts_with("//") {
        return (s.find('\n').unwrap_or(s.len()), p.comment);
    }
    if s.starts_with("/*") {
        return (s.find("*/").map_or(s.len(), |i| i + 2), p.comment);
    }
    if first == '\n' {
        return (1, p.text);
    }
    let word_len = |from: usize| {
        s[from..]
            .char_indices()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(s.len(), |(i, _)| from + i)
    };
    if first == '@' {
        return (word_len(1), p.attribute);
    }
    if first.is_ascii_digit() {
        let end = s
            .char_indices()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '.'))
            .map_or(s.len(), |(i, _)| i);
        return (end, p.number);
    }
    if first.is_alphabetic() || first == '_' {
        let end = word_len(0);
        let word = &s[..end];
        let color = if KEYWORDS.contains(&word) {
            p.keyword
        } else if TYPES.contains(&word) {
            p.ty
        } else if BUILTINS.contains(&word) {
            p.builtin
        } else {
            p.text
        };
        return (end, color);
    }
    // Anything else, up to the next character that may start a token.
    let end = s
        .char_indices()
        .skip(1)
        .find(|(_, c)| c.is_alphanumeric() || matches!(c, '_' | '@' | '/' | '\n'))
        .map_or(s.len(), |(i, _)| i);
    (end, p.text)
}

/// The editor: line numbers, then the code. Returns the text edit's response.
/// `code` is a `String` to edit, or a `&str` to show read-only (selectable).
pub fn show(
    ui: &mut egui::Ui,
    id_salt: &str,
    code: &mut dyn egui::TextBuffer,
    label: &str,
    error_line: Option<u32>,
) -> egui::Response {
    let font = FontId::monospace(13.0);
    let lines = code.as_str().split('\n').count().max(1);
    let numbers = (1..=lines)
        .map(|n| format!("{n:>3}"))
        .collect::<Vec<_>>()
        .join("\n");
    let visuals = ui.visuals().clone();
    let mut layouter = |ui: &egui::Ui, buffer: &dyn egui::TextBuffer, _wrap: f32| {
        let job = highlight(buffer.as_str(), &font, &visuals, error_line);
        ui.fonts_mut(|f| f.layout_job(job))
    };
    ui.horizontal_top(|ui| {
        ui.spacing_mut().item_spacing.x = 2.0;
        egui::Frame::new()
            .inner_margin(egui::Margin::symmetric(2, 2))
            .show(ui, |ui| {
                ui.add(
                    egui::Label::new(
                        egui::RichText::new(numbers)
                            .font(FontId::monospace(13.0))
                            .color(ui.visuals().weak_text_color()),
                    )
                    .selectable(false),
                );
            });
        // Lines are never wrapped (code): a line wider than the window
        // scrolls sideways, the gutter stays.
        let widest = {
            let job = highlight(code.as_str(), &font, &visuals, error_line);
            ui.fonts_mut(|f| f.layout_job(job)).size().x + 16.0
        };
        let salt = format!("{id_salt}_sideways");
        // An editor gets room to write; read-only code its own lines.
        let rows = if code.is_mutable() { 24 } else { lines };
        super::theme::sideways(ui, &salt, |ui| {
            let response = egui::TextEdit::multiline(code)
                .id_salt(id_salt)
                .code_editor()
                .desired_rows(rows)
                .desired_width(widest.max(ui.available_width()))
                .layouter(&mut layouter)
                .show(ui)
                .response
                .response;
            let label = label.to_owned();
            response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::TextInput, true, &label));
            response
        })
    })
    .inner
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_cover_the_text_and_classify_wgsl() {
        let code =
            "@compute @workgroup_size(256)\nfn main() { // hi\n  let x: f32 = max(1.5e3, 2.0); }\n";
        let visuals = egui::Visuals::dark();
        let job = highlight(code, &FontId::monospace(13.0), &visuals, Some(2));
        let rebuilt: String = job
            .sections
            .iter()
            .map(|s| &job.text[s.byte_range.start.0..s.byte_range.end.0])
            .collect();
        assert_eq!(rebuilt, code);
        let p = crate::kit::theme::code(&visuals);
        let color_of = |needle: &str| {
            job.sections
                .iter()
                .find(|s| &job.text[s.byte_range.start.0..s.byte_range.end.0] == needle)
                .map(|s| s.format.color)
        };
        assert_eq!(color_of("fn"), Some(p.keyword));
        assert_eq!(color_of("f32"), Some(p.ty));
        assert_eq!(color_of("max"), Some(p.builtin));
        assert_eq!(color_of("@compute"), Some(p.attribute));
        assert_eq!(color_of("1.5e3"), Some(p.number));
        assert_eq!(color_of("// hi"), Some(p.comment));
        // Line 2 is marked, line 3 is not.
        let marked = job
            .sections
            .iter()
            .find(|s| &job.text[s.byte_range.start.0..s.byte_range.end.0] == "fn")
            .map(|s| s.format.background);
        assert_eq!(marked, Some(p.error_line));
        let unmarked = job
            .sections
            .iter()
            .find(|s| &job.text[s.byte_range.start.0..s.byte_range.end.0] == "let")
            .map(|s| s.format.background);
        assert_eq!(unmarked, Some(Color32::TRANSPARENT));
    }
}
