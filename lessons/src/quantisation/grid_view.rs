//! A real trained weight tensor — a layer of the engine's MLP — as a
//! histogram, with the integer grid and the clip range drawn over it. The
//! clip slider sets the range; the core quantises the whole tensor and
//! reports the error and SQNR.

use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::float::Format;
use dlsys_core::names::Named as _;
use dlsys_core::quant::QuantError;
use dlsys_core::quant::fp8::{GridsCompared, versus_int8};
use dlsys_core::quant::{
    Calibration, Granularity, IntFormat, Mapping, QuantSettings, calibrate, quantise_with_stats,
};
use dlsys_core::text::Lang;
use egui_plot::{Bar, BarChart, Plot, Span, VLine};

use super::runs::Runs;
use super::{Settings, TEXT, t};
use crate::kit::figure::{self, Key};
use crate::kit::memo::Memo;
use crate::kit::theme;
use crate::kit::theme::ReadableAxes as _;

const BINS: usize = 80;

/// The fp8-versus-int8 comparison of the layer shown, computed when the
/// layer changes, not every frame (a cast of every weight through the
/// float emulator).
pub type Grids = Memo<usize, Result<GridsCompared, QuantError>>;

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, runs: &mut Runs, grids: &mut Grids, lang: Lang) {
    ui.label(t(lang, "grid.intro"));
    let trained = match runs.trained() {
        Ok(t) => t,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    ui.horizontal_wrapped(|ui| {
        crate::kit::choice(ui, "quant_layer", t(lang, "grid.layer"), &mut s.layer, 0..trained.model.layers.len().min(2), |&i| TEXT.fill(lang, "grid.layer_n", &[("n", &(i + 1))]));
        let label = ui.label(t(lang, "grid.bits"));
        ui.add(egui::Slider::new(&mut s.bits, 2..=8)).labelled_by(label.id);
    });
    ui.horizontal_wrapped(|ui| {
        crate::kit::choice(ui, "quant_mapping", t(lang, "grid.mapping"), &mut s.mapping, Mapping::ALL, |&m| m.name(lang));
        crate::kit::choice(ui, "quant_rounding", t(lang, "grid.rounding"), &mut s.rounding, super::ROUNDINGS, |&r| r.name(lang));
    });
    let Some(layer) = trained.model.layers.get(s.layer) else {
        return;
    };
    let (rows, cols) = layer.weight.rows_cols();
    let values = &layer.weight.data;
    let format = IntFormat::signed(s.bits);
    let wide: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
    // The MSE-optimal clip as a fraction of amax, for the button.
    let best = calibrate::clip_range(&wide, Calibration::Mse, format, s.mapping).ok();
    let (lo, hi) = calibrate::min_max(&wide).unwrap_or((0.0, 0.0));
    let amax = lo.abs().max(hi.abs());
    ui.horizontal_wrapped(|ui| {
        let label = ui.label(t(lang, "grid.clip"));
        ui.add(egui::Slider::new(&mut s.clip, 0.05..=1.0)).labelled_by(label.id);
        // A clip as a fraction of the range the slider spans.
        let fraction = |(blo, bhi): (f64, f64)| {
            if s.mapping == Mapping::Asymmetric {
                if hi > 0.0 { bhi / hi } else { 1.0 }
            } else if amax > 0.0 {
                bhi.max(-blo) / amax
            } else {
                1.0
            }
        };
        if let Some(range) = best {
            let f = fraction(range);
            if ui.button(TEXT.fill(lang, "grid.use_mse", &[("f", &show_sig(f, 3))])).clicked() {
                s.clip = f.clamp(0.05, 1.0);
            }
        }
        // The entropy search is found when asked (it tries 2,048 clips).
        if ui.button(t(lang, "grid.use_kl")).clicked()
            && let Ok(range) = calibrate::clip_range(&wide, Calibration::Entropy, format, s.mapping)
        {
            s.clip = fraction(range).clamp(0.05, 1.0);
        }
    });
    let settings = QuantSettings {
        format,
        mapping: s.mapping,
        granularity: Granularity::Tensor,
        calibration: Calibration::Fraction { of_range: s.clip },
        rounding: s.rounding,
        ..QuantSettings::default()
    };
    let (q, stats) = match quantise_with_stats(values, rows, cols, &settings) {
        Ok(r) => r,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    let Some(p) = q.params.first().copied() else {
        return;
    };
    let (glo, ghi) = p.grid_range();
    let visuals = ui.visuals().clone();
    let width = ((hi - lo) / BINS as f64).max(f64::MIN_POSITIVE);
    let mut counts = vec![0u32; BINS];
    for &v in &wide {
        let i = (((v - lo) / width) as usize).min(BINS - 1);
        counts[i] += 1;
    }
    let bars: Vec<Bar> = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| Bar::new(lo + (i as f64 + 0.5) * width, f64::from(c)).width(width))
        .collect();
    let weights_name = t(lang, "grid.legend_weights");
    let grid_name = t(lang, "grid.legend_grid");
    let clipped_name = t(lang, "grid.legend_clipped");
    let (c_weights, c_grid, c_clip) = (theme::series(&visuals, 0), theme::series(&visuals, 1), theme::bad(&visuals));
    let x_lo = lo.min(glo) - width;
    let x_hi = hi.max(ghi) + width;
    Plot::new("quant_hist")
        .height(200.0)
        .readable_x()
        .include_y(0.0)
        .include_x(x_lo)
        .include_x(x_hi)
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .show(ui, |plot| {
            if glo > x_lo {
                plot.span(Span::new("", x_lo..=glo).fill(c_clip.gamma_multiply(0.18)));
            }
            if ghi < x_hi {
                plot.span(Span::new("", ghi..=x_hi).fill(c_clip.gamma_multiply(0.18)));
            }
            plot.bar_chart(BarChart::new(weights_name, bars).color(c_weights));
            // Every code's value, over the bars (the lines merge into a band
            // at 8 bits, which is the point: 255 steps across the range).
            let line = if p.qmax - p.qmin > 64 { 0.5 } else { 1.5 };
            for code in p.qmin..=p.qmax {
                plot.vline(VLine::new("", p.dequantise(code)).color(c_grid).width(line));
            }
        });
    figure::legend(
        ui,
        "quant_hist",
        &[
            Key::fill(weights_name, c_weights),
            Key::rule(grid_name, c_grid),
            Key::fill(clipped_name, c_clip),
        ],
    );
    ui.vertical_centered(|ui| {
        ui.small(TEXT.fill(lang, "grid.axis", &[("n", &(s.layer + 1)), ("rows", &rows), ("cols", &cols)]));
    });
    ui.label(TEXT.fill(
        lang,
        "grid.params",
        &[
            ("format", &format.name()),
            ("mapping", &s.mapping.name(lang)),
            ("lo", &show_sig(glo, 3)),
            ("hi", &show_sig(ghi, 3)),
            ("scale", &show_sig(p.scale, 3)),
            ("zero", &p.zero_point),
            ("qmin", &p.qmin),
            ("qmax", &p.qmax),
        ],
    ));
    ui.label(TEXT.fill(
        lang,
        "grid.error",
        &[
            ("max", &show_sig(stats.max_abs_error, 3)),
            ("bound", &show_sig(p.scale / 2.0, 3)),
            ("rms", &show_sig(stats.rms_error, 3)),
            ("sqnr", &stats.sqnr_db.map_or_else(|| "∞".to_owned(), |d| format!("{d:.1}"))),
            ("clipped", &stats.clipped),
            ("count", &stats.count),
        ],
    ));
    ui.small(t(lang, "grid.note"));
    let compared = grids.get(&s.layer, |_| versus_int8(values, &Format::fp8_e4m3()));
    fp8_beside_int8(ui, compared, lang);
}

/// The same tensor on fp8 E4M3's grid and on int8's, both scaled to its
/// amax: the values each can hold, and what each round trip keeps.
fn fp8_beside_int8(ui: &mut egui::Ui, compared: &Result<GridsCompared, QuantError>, lang: Lang) {
    use egui_plot::Points;
    let c = match compared {
        Ok(c) => c,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    let sqnr = |e: &dlsys_core::quant::ErrorStats| e.sqnr_db.map_or_else(|| "∞".to_owned(), |d| format!("{d:.1}"));
    let better = if c.fp8_wins {
        "grid.fp8.fp8_better"
    } else {
        "grid.fp8.int8_better"
    };
    ui.label(TEXT.fill(
        lang,
        "grid.fp8",
        &[
            ("fp8", &sqnr(&c.fp8_error)),
            ("int8", &sqnr(&c.int8_error)),
            ("n", &c.fp8_grid.len()),
            ("which", &t(lang, better)),
        ],
    ));
    let visuals = ui.visuals().clone();
    let (c_int8, c_fp8) = (theme::series(&visuals, 1), theme::series(&visuals, 2));
    let (int8_name, fp8_name) = (t(lang, "grid.legend_int8"), t(lang, "grid.legend_fp8"));
    let row = |grid: &[f64], y: f64| -> Vec<[f64; 2]> { grid.iter().map(|&x| [x, y]).collect() };
    let (int8_points, fp8_points) = (row(&c.int8_grid, 1.0), row(&c.fp8_grid, 0.0));
    Plot::new("quant_fp8_grid")
        .height(70.0)
        .readable_x()
        .show_axes([true, false])
        .include_y(-0.5)
        .include_y(1.5)
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .show(ui, |plot| {
            plot.points(Points::new(int8_name, int8_points).radius(1.5).color(c_int8));
            plot.points(Points::new(fp8_name, fp8_points).radius(1.5).color(c_fp8));
        });
    figure::legend(ui, "quant_fp8_grid", &[Key::points(int8_name, c_int8), Key::points(fp8_name, c_fp8)]);
}
