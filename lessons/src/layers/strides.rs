//! Strides and layouts: a tensor stored NCHW or NHWC, each element's
//! offset from the core's `Layout`, the other layout as a permuted view
//! (shared memory, not contiguous) and what `contiguous()` makes of it.

use dlsys_core::autograd::view::{NCHW_TO_NHWC, NHWC_TO_NCHW, Strided};
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};

use super::TEXT;
use crate::kit::figure;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StrideSettings {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    /// Stored NHWC (else NCHW).
    pub nhwc: bool,
    /// The element (n, c, h, w).
    pub index: [usize; 4],
}

impl Default for StrideSettings {
    fn default() -> Self {
        Self {
            n: 2,
            c: 3,
            h: 2,
            w: 4,
            nhwc: false,
            index: [1, 2, 1, 3],
        }
    }
}

/// Memory cells drawn at most, and per row.
const DRAW: usize = 96;
const ROW: usize = 12;

pub fn strides_ui(ui: &mut egui::Ui, s: &mut StrideSettings, lang: Lang) {
    let t = |key: &str| TEXT.get(lang, key).to_owned();
    ui.label(t("strides.explain"));
    ui.horizontal_wrapped(|ui| {
        crate::kit::number_field(ui, &t("strides.n"), &mut s.n, 1..=8, 0.1);
        crate::kit::number_field(ui, &t("strides.c"), &mut s.c, 1..=8, 0.1);
        crate::kit::number_field(ui, &t("strides.h"), &mut s.h, 1..=8, 0.1);
        crate::kit::number_field(ui, &t("strides.w"), &mut s.w, 1..=8, 0.1);
        ui.separator();
        ui.label(t("strides.layout"));
        ui.radio_value(&mut s.nhwc, false, "NCHW");
        ui.radio_value(&mut s.nhwc, true, "NHWC");
    });
    let dims = [s.n.max(1), s.c.max(1), s.h.max(1), s.w.max(1)];
    ui.horizontal_wrapped(|ui| {
        ui.label(t("strides.element"));
        for ((i, d), name) in s.index.iter_mut().zip(dims).zip(["n", "c", "h", "w"]) {
            *i = (*i).min(d - 1);
            let label = ui.label(name);
            ui.add(egui::DragValue::new(i).range(0..=d - 1))
                .labelled_by(label.id);
        }
    });
    let [n, c, h, w] = dims;
    let [i_n, i_c, i_h, i_w] = s.index;
    // The stored tensor, holding each element's NCHW position as its value.
    // Stored NHWC, the NCHW view is the permutation back, and vice versa.
    let (shape, view_order, index) = if s.nhwc {
        ([n, h, w, c], NHWC_TO_NCHW, [i_n, i_h, i_w, i_c])
    } else {
        ([n, c, h, w], NCHW_TO_NHWC, [i_n, i_c, i_h, i_w])
    };
    let count = n * c * h * w;
    let Ok(stored) = Strided::new((0..count).collect::<Vec<usize>>(), &shape) else {
        return;
    };
    let layout = if s.nhwc { "NHWC" } else { "NCHW" };
    let offset = stored.layout.offset_of(&index).unwrap_or(0);
    // Neighbouring pixels of one channel: 1 apart in NCHW, C apart in NHWC.
    let pixel_stride = stored.layout.strides[if s.nhwc { 2 } else { 3 }];
    ui.label(TEXT.fill(
        lang,
        "strides.line",
        &[
            ("layout", &layout),
            ("shape", &format!("{:?}", stored.layout.shape)),
            ("strides", &format!("{:?}", stored.layout.strides)),
            ("index", &format!("({i_n}, {i_c}, {i_h}, {i_w})")),
            ("offset", &offset),
            ("cstride", &pixel_stride),
        ],
    ));
    if let Ok(view) = stored.permute(&view_order) {
        let yes_no = |b: bool| t(if b { "strides.yes" } else { "strides.no" });
        ui.label(TEXT.fill(
            lang,
            "strides.view",
            &[
                ("order", &format!("{view_order:?}")),
                ("shape", &format!("{:?}", view.layout.shape)),
                ("strides", &format!("{:?}", view.layout.strides)),
                ("contiguous", &yes_no(view.layout.is_contiguous())),
                ("shared", &yes_no(view.shares_data(&stored))),
                ("packed", &format!("{:?}", view.contiguous().layout.strides)),
            ],
        ));
    }
    // Memory in order: which of image n's channel-c values each cell holds.
    ui.label(t("strides.memory"));
    let visuals = ui.visuals().clone();
    let (chosen, same) = (figure::nth(&visuals, 0), figure::nth(&visuals, 1).gamma_multiply(0.4));
    crate::kit::theme::sideways(ui, "strides_memory", |ui| {
    egui::Grid::new("strides_memory").spacing([1.0, 1.0]).show(ui, |ui| {
        for (pos, value) in stored.memory().iter().enumerate().take(DRAW) {
            // The stored value is the element's NCHW position.
            let (vn, vc) = (value / (c * h * w), (value / (h * w)) % c);
            let fill = if pos == offset {
                Some(chosen.gamma_multiply(0.6))
            } else if vn == i_n && vc == i_c {
                Some(same)
            } else {
                None
            };
            let frame = egui::Frame::new().inner_margin(egui::Margin::symmetric(3, 1));
            let frame = fill.map_or(frame, |f| frame.fill(f));
            frame
                .show(ui, |ui| ui.monospace(format!("c{vc}")))
                .response
                .on_hover_text(format!("{pos}"));
            if (pos + 1) % ROW == 0 {
                ui.end_row();
            }
        }
    });
    });
    ui.horizontal(|ui| {
        if count > DRAW {
            ui.weak(TEXT.fill(lang, "strides.more", &[("more", &(count - DRAW))]));
        }
    });
}
