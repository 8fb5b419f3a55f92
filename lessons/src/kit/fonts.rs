//! The fonts the app installs on top of egui's: a DejaVu Sans subset for math
//! and arrows (Wᵀ, ∂, ←, Σ), and a Noto Sans CJK SC subset for the Chinese
//! prose (both made by `scripts/gen-fonts.py`; licences in `assets/fonts/`).
//!
//! Natively the Chinese font is compiled in. The web build fetches it when
//! Chinese is first chosen (as it fetches MNIST), so the English page loads
//! without it; until it arrives the app keeps showing English.

use std::sync::Arc;

const MATH: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans-math.ttf");
#[cfg(not(target_arch = "wasm32"))]
const CJK: &[u8] = include_bytes!("../../../assets/fonts/NotoSansSC-dlsys.otf");

/// Where the web build fetches the Chinese font from (next to the page).
pub const CJK_URL: &str = "assets/fonts/NotoSansSC-dlsys.otf";

/// egui's default fonts, then the math fallback, then the CJK fallback when
/// its bytes are at hand.
pub fn definitions(cjk: Option<&'static [u8]>) -> egui::FontDefinitions {
    let mut fonts = egui::FontDefinitions::default();
    fonts.font_data.insert(
        "dejavu-math".to_owned(),
        Arc::new(egui::FontData::from_static(MATH)),
    );
    if let Some(bytes) = cjk {
        fonts.font_data.insert(
            "noto-sc".to_owned(),
            Arc::new(egui::FontData::from_static(bytes)),
        );
    }
    for family in [egui::FontFamily::Proportional, egui::FontFamily::Monospace] {
        let list = fonts.families.entry(family).or_default();
        list.push("dejavu-math".to_owned());
        if cjk.is_some() {
            list.push("noto-sc".to_owned());
        }
    }
    fonts
}

/// Installs the fonts at start-up (natively with the Chinese font).
pub fn install(ctx: &egui::Context) {
    #[cfg(not(target_arch = "wasm32"))]
    ctx.set_fonts(definitions(Some(CJK)));
    #[cfg(target_arch = "wasm32")]
    ctx.set_fonts(definitions(web::cjk()));
}

/// Whether Chinese text can be drawn now. On the web this starts fetching
/// the font (once) and installs it when it arrives; `false` until then.
pub fn cjk_ready(ctx: &egui::Context) -> bool {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = ctx;
        true
    }
    #[cfg(target_arch = "wasm32")]
    {
        web::ready(ctx)
    }
}

/// Why the Chinese font is not there (the web download failed), if it is not.
pub fn cjk_failure() -> Option<String> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        None
    }
    #[cfg(target_arch = "wasm32")]
    {
        web::failure()
    }
}

#[cfg(target_arch = "wasm32")]
mod web {
    use std::cell::RefCell;

    use crate::kit::datasets::Fetch;

    thread_local! {
        /// The download's state, and the font once it is here (leaked: it
        /// lives as long as the page, and egui wants `'static` bytes).
        static CJK: RefCell<(Fetch, Option<&'static [u8]>, bool)> =
            const { RefCell::new((Fetch::NotStarted, None, false)) };
    }

    pub fn cjk() -> Option<&'static [u8]> {
        CJK.with(|c| c.borrow().1)
    }

    pub fn failure() -> Option<String> {
        CJK.with(|c| match &c.borrow().0 {
            Fetch::Failed(err) => Some(err.clone()),
            _ => None,
        })
    }

    pub fn ready(ctx: &egui::Context) -> bool {
        let (state, bytes, installed) = CJK.with(|c| c.borrow().clone());
        match (state, bytes) {
            (Fetch::NotStarted, _) => {
                CJK.with(|c| c.borrow_mut().0 = Fetch::Pending);
                let ctx = ctx.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    let result = crate::kit::datasets::download(super::CJK_URL).await;
                    CJK.with(|c| {
                        let mut c = c.borrow_mut();
                        match result {
                            Ok(bytes) => {
                                c.0 = Fetch::Ready;
                                c.1 = Some(Vec::leak(bytes));
                            }
                            Err(err) => c.0 = Fetch::Failed(err),
                        }
                    });
                    ctx.request_repaint();
                });
                false
            }
            (Fetch::Ready, Some(bytes)) if !installed => {
                ctx.set_fonts(super::definitions(Some(bytes)));
                CJK.with(|c| c.borrow_mut().2 = true);
                // The new fonts take effect from the next frame.
                ctx.request_repaint();
                false
            }
            (Fetch::Ready, Some(_)) => true,
            _ => false,
        }
    }
}
