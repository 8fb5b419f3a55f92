//! LayerNorm against BatchNorm on one small NCHW batch: which values share
//! statistics, drawn as coloured groups, the values normalised by the
//! engine's own ops.

use dlsys_core::autograd::{Graph, Tensor, mean_and_variance};
use dlsys_core::float::show_sig;
use dlsys_core::text::Lang;
use rand::{RngExt as _, SeedableRng as _};
use serde::{Deserialize, Serialize};

use super::TEXT;
use crate::kit::figure;

/// Images, channels and pixels per channel of the drawn batch.
const N: usize = 4;
const C: usize = 3;
const HW: usize = 4;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NormSettings {
    /// BatchNorm (else LayerNorm).
    pub batch: bool,
    /// Show the normalised values (else the input).
    pub normalised: bool,
}

/// The batch: seeded, each channel on its own scale and offset, so
/// BatchNorm's per-channel statistics differ visibly from LayerNorm's.
fn batch() -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    (0..N * C * HW)
        .map(|i| {
            let c = (i / HW) % C;
            let centre = [-2.0, 0.5, 3.0][c];
            let spread = [0.5, 1.5, 1.0][c];
            let v: f64 = centre + spread * rng.random_range(-1.0..1.0);
            (v * 100.0).round() / 100.0
        })
        .collect()
}

/// The batch normalised by the engine: LayerNorm per image, BatchNorm per
/// channel (γ = 1, β = 0).
fn normalised(x: &[f64], batch_norm: bool) -> Vec<f64> {
    let mut g = Graph::<f64>::new();
    let xv = g.input(Tensor::new(x.to_vec(), &[N, C * HW]));
    let y = if batch_norm {
        let gamma = g.input(Tensor::full(&[C], 1.0));
        let beta = g.input(Tensor::zeros(&[C]));
        g.batch_norm_train(xv, gamma, beta, C).0
    } else {
        let gamma = g.input(Tensor::full(&[C * HW], 1.0));
        let beta = g.input(Tensor::zeros(&[C * HW]));
        g.layer_norm(xv, gamma, beta)
    };
    g.value(y).data.clone()
}

/// The group a cell belongs to, and the indices of the group's values.
fn group(batch_norm: bool, n: usize, c: usize) -> (usize, Vec<usize>) {
    if batch_norm {
        let members = (0..N).flat_map(|m| (0..HW).map(move |p| (m * C + c) * HW + p)).collect();
        (c, members)
    } else {
        (n, (n * C * HW..(n + 1) * C * HW).collect())
    }
}

pub fn norms_ui(ui: &mut egui::Ui, s: &mut NormSettings, lang: Lang) {
    let t = |key: &str| TEXT.get(lang, key).to_owned();
    ui.label(TEXT.fill(lang, "norms.explain", &[("n", &N), ("c", &C), ("hw", &HW)]));
    ui.horizontal_wrapped(|ui| {
        ui.label(t("norms.which"));
        ui.radio_value(&mut s.batch, false, t("norms.layer"));
        ui.radio_value(&mut s.batch, true, t("norms.batch"));
        ui.separator();
        ui.label(t("norms.show"));
        ui.radio_value(&mut s.normalised, false, t("norms.input"));
        ui.radio_value(&mut s.normalised, true, t("norms.output"));
    });
    let x = batch();
    let shown = if s.normalised { normalised(&x, s.batch) } else { x.clone() };
    let visuals = ui.visuals().clone();
    // The image's number stays put; its cells scroll at 800 px.
    let look = crate::kit::table::Look {
        spacing: egui::vec2(2.0, 2.0),
        striped: false,
    };
    crate::kit::table::pinned(
        ui,
        "norms_grid",
        N + 1,
        look,
        |ui, r| {
            match r {
                0 => ui.strong(t("norms.image")),
                n => ui.monospace((n - 1).to_string()),
            };
        },
        |ui, r| {
            let Some(n) = r.checked_sub(1) else {
                for c in 0..C {
                    for p in 0..HW {
                        ui.monospace(TEXT.fill(lang, "norms.cell", &[("c", &c), ("p", &p)]));
                    }
                }
                return;
            };
            for c in 0..C {
                let (id, members) = group(s.batch, n, c);
                // The statistics of what is shown: the input's, or ≈ 0 and 1.
                let values: Vec<f64> = members.iter().map(|i| shown[*i]).collect();
                let (mean, var) = mean_and_variance(&values);
                let name = if s.batch {
                    TEXT.fill(lang, "norms.group_batch", &[("i", &id)])
                } else {
                    TEXT.fill(lang, "norms.group_layer", &[("i", &id)])
                };
                let tip = TEXT.fill(
                    lang,
                    "norms.group_tip",
                    &[
                        ("group", &name),
                        ("mean", &show_sig(mean, 3)),
                        ("var", &show_sig(var, 3)),
                        ("count", &values.len()),
                    ],
                );
                let fill = figure::nth(&visuals, id).gamma_multiply(0.35);
                for p in 0..HW {
                    let v = shown[(n * C + c) * HW + p];
                    egui::Frame::new()
                        .fill(fill)
                        .inner_margin(egui::Margin::symmetric(4, 2))
                        .show(ui, |ui| ui.monospace(format!("{v:+.2}")))
                        .response
                        .on_hover_text(&tip);
                }
            }
        },
    );
    ui.label(TEXT.fill(
        lang,
        "norms.summary",
        &[
            ("layer_groups", &N),
            ("layer_size", &(C * HW)),
            ("batch_groups", &C),
            ("batch_size", &(N * HW)),
        ],
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_group_comes_out_with_mean_zero_and_variance_one() {
        let x = batch();
        for batch_norm in [false, true] {
            let y = normalised(&x, batch_norm);
            for first in [0, 1] {
                let (_, members) = group(batch_norm, first, first);
                let values: Vec<f64> = members.iter().map(|i| y[*i]).collect();
                let (mean, var) = mean_and_variance(&values);
                assert!(mean.abs() < 1e-9 && (var - 1.0).abs() < 1e-3, "{mean} {var}");
            }
        }
    }
}
