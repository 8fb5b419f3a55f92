//! Convolution as im2col + GEMM: the output-size arithmetic, the GEMM the
//! convolution becomes, and the patch matrix itself, drawn from the core's
//! `Conv2d::im2col` over an input whose values are their own positions.

use dlsys_core::autograd::Conv2d;
use dlsys_core::float::show_sig;
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};

use super::TEXT;
use crate::kit::figure;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConvSettings {
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    pub kernel: usize,
    pub stride: usize,
    pub padding: usize,
    pub dilation: usize,
    pub filters: usize,
    /// The output pixel whose patch is highlighted.
    pub pixel: usize,
}

impl Default for ConvSettings {
    fn default() -> Self {
        Self {
            channels: 1,
            height: 5,
            width: 5,
            kernel: 3,
            stride: 1,
            padding: 1,
            dilation: 1,
            filters: 4,
            pixel: 0,
        }
    }
}

/// The largest patch matrix drawn, rows × columns.
const DRAW_ROWS: usize = 32;
const DRAW_COLS: usize = 36;

impl ConvSettings {
    fn geometry(&self) -> Conv2d {
        Conv2d {
            in_channels: self.channels,
            out_channels: self.filters,
            height: self.height,
            width: self.width,
            kernel: (self.kernel, self.kernel),
            stride: self.stride,
            padding: self.padding,
            dilation: self.dilation,
        }
    }
}

pub fn conv_ui(ui: &mut egui::Ui, s: &mut ConvSettings, lang: Lang) {
    let t = |key: &str| TEXT.get(lang, key).to_owned();
    ui.label(t("conv.explain"));
    ui.horizontal_wrapped(|ui| {
        crate::kit::number_field(ui, &t("conv.c"), &mut s.channels, 1..=3, 0.1);
        crate::kit::number_field(ui, &t("conv.h"), &mut s.height, 1..=12, 0.1);
        crate::kit::number_field(ui, &t("conv.w"), &mut s.width, 1..=12, 0.1);
        crate::kit::number_field(ui, &t("conv.k"), &mut s.kernel, 1..=5, 0.1);
    });
    ui.horizontal_wrapped(|ui| {
        crate::kit::number_field(ui, &t("conv.stride"), &mut s.stride, 1..=4, 0.1);
        crate::kit::number_field(ui, &t("conv.padding"), &mut s.padding, 0..=3, 0.1);
        crate::kit::number_field(ui, &t("conv.dilation"), &mut s.dilation, 1..=3, 0.1);
        crate::kit::number_field(ui, &t("conv.oc"), &mut s.filters, 1..=64, 0.1);
    });
    let geometry = s.geometry();
    let Some((oh, ow)) = geometry.output() else {
        let span = s.dilation * s.kernel.saturating_sub(1) + 1;
        let padded = s.height.min(s.width) + 2 * s.padding;
        ui.colored_label(
            crate::kit::theme::warn(ui.visuals()),
            TEXT.fill(lang, "conv.no_fit", &[("span", &span), ("padded", &padded)]),
        );
        return;
    };
    ui.label(TEXT.fill(
        lang,
        "conv.sizes",
        &[
            ("h", &s.height),
            ("w", &s.width),
            ("p", &s.padding),
            ("d", &s.dilation),
            ("k", &s.kernel),
            ("s", &s.stride),
            ("oh", &oh),
            ("ow", &ow),
        ],
    ));
    let (patch, cols) = (geometry.patch(), oh * ow);
    ui.label(TEXT.fill(
        lang,
        "conv.gemm",
        &[
            ("oc", &s.filters),
            ("patch", &patch),
            ("cols", &cols),
            ("flops", &(2 * geometry.macs(1))),
            ("params", &geometry.parameters(true)),
            ("cells", &(patch * cols)),
            ("input", &geometry.input_len()),
            ("blowup", &show_sig((patch * cols) as f64 / geometry.input_len() as f64, 3)),
        ],
    ));
    if patch > DRAW_ROWS || cols > DRAW_COLS {
        ui.weak(TEXT.fill(lang, "conv.too_big", &[("rows", &patch), ("cols", &cols)]));
        return;
    }
    s.pixel = s.pixel.min(cols - 1);
    ui.add(
        egui::Slider::new(&mut s.pixel, 0..=cols - 1)
            .text(t("conv.pixel"))
            .custom_formatter(move |v, _| {
                let v = v as usize;
                format!("({}, {})", v / ow, v % ow)
            }),
    );
    // Each input value is its own position, counted from 1 (0 is padding).
    let image: Vec<f64> = (1..=geometry.input_len()).map(|v| v as f64).collect();
    let matrix = geometry.im2col(&image);
    let chosen: Vec<usize> = (0..patch)
        .map(|r| matrix[r * cols + s.pixel] as usize)
        .filter(|v| *v > 0)
        .collect();
    let visuals = ui.visuals().clone();
    let mark = figure::nth(&visuals, 0).gamma_multiply(0.45);
    let cell = |ui: &mut egui::Ui, text: String, marked: bool| {
        let frame = egui::Frame::new().inner_margin(egui::Margin::symmetric(3, 1));
        let frame = if marked { frame.fill(mark) } else { frame };
        frame.show(ui, |ui| ui.monospace(text));
    };
    ui.horizontal_wrapped(|ui| {
        for c in 0..s.channels {
            ui.vertical(|ui| {
                ui.label(TEXT.fill(lang, "conv.input", &[("c", &c)]));
                egui::Grid::new(("conv_input", c)).spacing([1.0, 1.0]).show(ui, |ui| {
                    for y in 0..s.height {
                        for x in 0..s.width {
                            let v = (c * s.height + y) * s.width + x + 1;
                            cell(ui, v.to_string(), chosen.contains(&v));
                        }
                        ui.end_row();
                    }
                });
            });
        }
    });
    ui.label(t("conv.matrix"));
    // Each row's (channel, tap row, tap column) stays put; the output
    // pixels scroll at 800 px.
    let look = crate::kit::table::Look {
        spacing: egui::vec2(1.0, 1.0),
        striped: false,
    };
    crate::kit::table::pinned(
        ui,
        "conv_matrix",
        patch,
        look,
        |ui, r| {
            let (c, ky, kx) = geometry.tap(r);
            ui.weak(TEXT.fill(lang, "conv.row", &[("c", &c), ("ky", &ky), ("kx", &kx)]));
        },
        |ui, r| {
            for col in 0..cols {
                cell(ui, (matrix[r * cols + col] as usize).to_string(), col == s.pixel);
            }
        },
    );
}
