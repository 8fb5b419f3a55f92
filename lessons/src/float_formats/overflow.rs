//! Overflow past the largest finite value: where nearest-even starts to
//! overflow (E4M3's tie at 464 stays at 448), and saturating conversion
//! (CUDA's `__NV_SATFINITE` against `__NV_NOSAT`), from the emulator.

use dlsys_core::float::{Format, Rounding, show};
use dlsys_core::text::Lang;

use super::{Computed, TEXT};
use crate::kit::theme;

/// `format` with saturating conversion: overflow clamps to ±max finite.
fn saturating(format: &Format) -> Format {
    Format { saturate: true, ..format.clone() }
}

pub fn overflow_ui(ui: &mut egui::Ui, computed: &Computed, lang: Lang) {
    crate::kit::anchor(&ui.strong(TEXT.get(lang, "overflow.heading")), "overflow");
    let e4m3 = Format::fp8_e4m3();
    let r = e4m3.range();
    let step = 2.0 * (r.overflow_tie - r.max_finite);
    let example = r.max_finite + 1.5 * step;
    let plain = e4m3.round_f64(example, Rounding::NearestEven);
    let sat = saturating(&e4m3).round_f64(example, Rounding::NearestEven);
    let fp16 = Format::fp16().range();
    ui.label(TEXT.fill(
        lang,
        "overflow.explain",
        &[
            ("max", &show(r.max_finite)),
            ("tie", &show(r.overflow_tie)),
            ("next", &show(r.max_finite + step)),
            ("tie_rounds", &show(e4m3.round_f64(r.overflow_tie, Rounding::NearestEven))),
            ("fp16_tie", &show(fp16.overflow_tie)),
            ("fp16_max", &show(fp16.max_finite)),
            ("example", &show(example)),
            ("sat", &show(sat)),
            ("nosat", &show(plain)),
        ],
    ));
    // The learner's own input, where saturation changes its result.
    let Ok(parsed) = &computed.parsed else { return };
    for format in &computed.formats {
        let plain = format.encode(&parsed.exact, Rounding::NearestEven);
        let sat = saturating(format).encode(&parsed.exact, Rounding::NearestEven);
        if plain != sat {
            ui.colored_label(
                theme::good(ui.visuals()),
                TEXT.fill(
                    lang,
                    "overflow.yours",
                    &[
                        ("format", &format.name),
                        ("nosat", &show(format.decode(plain))),
                        ("sat", &show(format.decode(sat))),
                    ],
                ),
            );
        }
    }
}
