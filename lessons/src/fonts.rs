//! The fonts the app installs on top of egui's: a DejaVu Sans subset for math
//! and arrows (Wᵀ, ∂, ←, Σ), and a Noto Sans CJK SC subset for the Chinese
//! prose (both made by `scripts/gen-fonts.py`; licences in `assets/fonts/`).

use std::sync::Arc;

const MATH: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans-math.ttf");
const CJK: &[u8] = include_bytes!("../../assets/fonts/NotoSansSC-dlsys.otf");

/// egui's default fonts, then the math fallback, then the CJK fallback.
pub fn definitions() -> egui::FontDefinitions {
    let mut fonts = egui::FontDefinitions::default();
    fonts.font_data.insert(
        "dejavu-math".to_owned(),
        Arc::new(egui::FontData::from_static(MATH)),
    );
    fonts.font_data.insert(
        "noto-sc".to_owned(),
        Arc::new(egui::FontData::from_static(CJK)),
    );
    for family in [egui::FontFamily::Proportional, egui::FontFamily::Monospace] {
        let list = fonts.families.entry(family).or_default();
        list.push("dejavu-math".to_owned());
        list.push("noto-sc".to_owned());
    }
    fonts
}

/// Installs [`definitions`] into a context (the app does this at start-up).
pub fn install(ctx: &egui::Context) {
    ctx.set_fonts(definitions());
}
