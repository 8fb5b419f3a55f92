//! The comparison of a policy run with its fp32 baseline: outcome lines,
//! the per-epoch table, loss and loss-scale plots, gradient histograms
//! against the format's range.

use dlsys_core::float::{Format, show_sig};
use dlsys_core::nn::{LayerGradients, Status, Trainer};
use dlsys_core::text::Lang;
use egui_plot::{Bar, BarChart, Line, Plot, PlotPoints, Points, Span};

use super::TEXT;
use super::runs::{PairRun, Side};
use crate::kit::figure::{self, Key};
use crate::kit::theme;
use crate::kit::theme::ReadableAxes as _;

/// The comparison: outcome lines, the per-epoch table, the plots.
pub fn results_ui(ui: &mut egui::Ui, run: &PairRun, lang: Lang) {
    let t = |key: &str| TEXT.get(lang, key).to_owned();
    if run.sides.is_empty() {
        return;
    }
    let visuals = ui.visuals().clone();
    ui.add_space(6.0);
    ui.strong(&run.title);
    for (i, side) in run.sides.iter().enumerate() {
        outcome_ui(ui, side, i, &visuals, lang);
    }
    let losses: Vec<Trace> = run
        .sides
        .iter()
        .map(|side| smoothed_log_loss(&side.trainer))
        .collect();
    let coincide = losses.len() == 2 && !losses[0].is_empty() && losses[0] == losses[1];
    if coincide {
        ui.label(t("plot.coincide"));
    }
    ui.columns(2, |cols| {
        cols[0].label(t("plot.loss"));
        let mut keys = Vec::new();
        crate::kit::figure::plot("mixed_loss", 220.0, t("plot.step"), t("plot.log_loss"))
            .readable_x()
            .readable_y()
            .show(&mut cols[0], |plot| {
                // The baseline first, so the policy's line is drawn on top
                // (dashed when the two coincide, so both stay visible).
                for (i, trace) in losses.iter().enumerate().rev() {
                    let mut line = Line::new(side_name(i, lang), PlotPoints::from(trace.clone()))
                        .color(theme::series(&visuals, i));
                    if coincide && i == 0 {
                        line = line.style(egui_plot::LineStyle::dashed_loose());
                    } else if coincide {
                        line = line.width(3.0);
                    }
                    plot.line(line);
                }
            });
        for i in 0..losses.len() {
            keys.push(Key::line(side_name(i, lang), theme::series(&visuals, i)));
        }
        figure::legend(&mut cols[0], "mixed_loss", &keys);
        cols[1].label(t("plot.scale"));
        // The fp32 baseline has no loss scale: only the policy's is drawn.
        let traces: Vec<(usize, Trace, Trace)> = run
            .sides
            .iter()
            .enumerate()
            .take(1)
            .filter_map(|(i, side)| {
                let report = side.trainer.mixed_report()?;
                let now = side.trainer.losses.last().map_or(0, |(s, _)| *s);
                let (trace, skipped) = scale_trace(&report.events, now);
                Some((i, trace, skipped))
            })
            .collect();
        let ys = traces.iter().flat_map(|(_, tr, _)| tr.iter().map(|p| p[1]));
        let (lo, hi) = ys.fold((0.0f64, 1.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
        let mut keys: Vec<Key> = traces
            .iter()
            .map(|(i, _, _)| Key::line(side_name(*i, lang), theme::series(&visuals, *i)))
            .collect();
        if traces.iter().any(|(_, _, skipped)| !skipped.is_empty()) {
            keys.push(Key::points(t("plot.skipped"), theme::bad(&visuals)));
        }
        crate::kit::figure::plot("mixed_scale", 220.0, t("plot.step"), t("plot.log_scale"))
            .readable_x()
            .readable_y()
            .include_y(lo - 1.0)
            .include_y(hi + 1.0)
            .show(&mut cols[1], |plot| {
                for (i, trace, skipped) in traces {
                    plot.line(
                        Line::new(side_name(i, lang), PlotPoints::from(trace))
                            .color(theme::series(&visuals, i)),
                    );
                    if !skipped.is_empty() {
                        plot.points(
                            Points::new(t("plot.skipped"), PlotPoints::from(skipped))
                                .radius(3.0)
                                .color(theme::bad(&visuals)),
                        );
                    }
                }
            });
        figure::legend(&mut cols[1], "mixed_scale", &keys);
    });
    epoch_table(ui, run, lang);
    if let Some(side) = run.sides.first() {
        histograms_ui(ui, side, &visuals, lang);
    }
}

fn side_name(index: usize, lang: Lang) -> &'static str {
    TEXT.get(
        lang,
        if index == 0 {
            "side.policy"
        } else {
            "side.baseline"
        },
    )
}

fn outcome_ui(ui: &mut egui::Ui, side: &Side, index: usize, visuals: &egui::Visuals, lang: Lang) {
    let tr = &side.trainer;
    let color = theme::series(visuals, index);
    let last = tr.history.last();
    let mixed: Vec<_> = tr.history.iter().filter_map(|h| h.mixed.as_ref()).collect();
    let underflow = if mixed.is_empty() {
        0.0
    } else {
        mixed.iter().map(|m| m.underflow_fraction).sum::<f64>() / mixed.len() as f64
    };
    let status = match &tr.status {
        Status::Running => TEXT.fill(
            lang,
            "outcome.running",
            &[("epoch", &tr.epoch), ("epochs", &tr.config.epochs)],
        ),
        Status::Finished => TEXT.get(lang, "outcome.finished").to_owned(),
        Status::Diverged { step, loss, .. } => {
            TEXT.fill(lang, "outcome.diverged", &[("step", step), ("loss", loss)])
        }
    };
    ui.horizontal_wrapped(|ui| {
        ui.colored_label(color, format!("{}:", side_name(index, lang)));
        ui.label(super::policy_text(&side.trainer.config.policy, lang));
    });
    ui.indent(("outcome", index), |ui| {
        ui.label(TEXT.fill(
            lang,
            "outcome.line",
            &[
                ("status", &status),
                (
                    "acc",
                    &last.map_or("–".to_owned(), |h| {
                        format!("{:.2} %", h.test_accuracy * 100.0)
                    }),
                ),
                (
                    "loss",
                    &last.map_or("–".to_owned(), |h| show_sig(h.train_loss, 4)),
                ),
                ("underflow", &format!("{:.2} %", underflow * 100.0)),
                ("skipped", &tr.mixed_report().map_or(0, |r| r.skipped)),
                (
                    "overflows",
                    &mixed.iter().map(|m| m.accumulation_overflows).sum::<u64>(),
                ),
            ],
        ));
    });
}

/// log₁₀ of the per-step loss, averaged over windows of 10 steps.
fn smoothed_log_loss(trainer: &Trainer) -> Vec<[f64; 2]> {
    trainer
        .losses
        .chunks(10)
        .map(|w| {
            let mean = w.iter().map(|(_, l)| l).sum::<f64>() / w.len() as f64;
            let step = w.last().map_or(0, |(s, _)| *s);
            [step as f64, mean.max(1e-12).log10()]
        })
        .collect()
}

/// Plot points.
type Trace = Vec<[f64; 2]>;

/// The loss scale as a step function of the step, and the skipped steps.
pub fn scale_trace(
    events: &[dlsys_core::mixed::ScaleEvent],
    now: u64,
) -> (Vec<[f64; 2]>, Vec<[f64; 2]>) {
    let mut trace: Vec<[f64; 2]> = Vec::with_capacity(events.len() * 2 + 1);
    let mut skipped = Vec::new();
    for e in events {
        let y = f64::from(e.scale).log2();
        if let Some(&[_, prev]) = trace.last() {
            trace.push([e.step as f64, prev]);
        }
        trace.push([e.step as f64, y]);
        if e.skipped {
            skipped.push([e.step as f64, y]);
        }
    }
    if let Some(&[_, y]) = trace.last() {
        trace.push([now as f64, y]);
    }
    (trace, skipped)
}

fn epoch_table(ui: &mut egui::Ui, run: &PairRun, lang: Lang) {
    let t = |key: &str| TEXT.get(lang, key).to_owned();
    let Some(policy) = run.sides.first() else {
        return;
    };
    let baseline = run.sides.get(1);
    let shown = egui::CollapsingHeader::new(t("table.heading"))
        .id_salt("mixed_epochs")
        .default_open(true)
        .show(ui, |ui| {
            egui::ScrollArea::vertical()
                .max_height(220.0)
                .show(ui, |ui| {
                    egui::Grid::new("mixed_epoch_table")
                        .striped(true)
                        .show(ui, |ui| {
                            for key in [
                                "table.epoch",
                                "table.loss",
                                "table.acc",
                                "table.scale",
                                "table.skipped",
                                "table.underflow",
                                "table.overflows",
                                "table.base_loss",
                                "table.base_acc",
                            ] {
                                crate::kit::column_header(ui, &TEXT, lang, key);
                            }
                            ui.end_row();
                            for (i, h) in policy.trainer.history.iter().enumerate() {
                                ui.label(h.epoch.to_string());
                                ui.monospace(show_sig(h.train_loss, 4));
                                ui.monospace(format!("{:.2} %", h.test_accuracy * 100.0));
                                match &h.mixed {
                                    Some(m) => {
                                        ui.monospace(show_sig(f64::from(m.loss_scale), 6));
                                        ui.monospace(m.skipped_steps.to_string());
                                        ui.monospace(format!(
                                            "{:.3} %",
                                            m.underflow_fraction * 100.0
                                        ));
                                        ui.monospace(m.accumulation_overflows.to_string());
                                    }
                                    None => {
                                        for _ in 0..4 {
                                            ui.monospace("–");
                                        }
                                    }
                                }
                                match baseline.and_then(|b| b.trainer.history.get(i)) {
                                    Some(b) => {
                                        ui.monospace(show_sig(b.train_loss, 4));
                                        ui.monospace(format!("{:.2} %", b.test_accuracy * 100.0));
                                    }
                                    None => {
                                        ui.monospace("–");
                                        ui.monospace("–");
                                    }
                                }
                                ui.end_row();
                            }
                        });
                });
        });
    crate::kit::anchor(&shown.header_response, "table");
}

/// Where a format loses gradient values, in log₂ |x|: below `flush` values
/// round to zero, up to `normal` they are subnormal, from `overflow` on they
/// become infinite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Zones {
    pub flush: f64,
    pub normal: f64,
    pub overflow: f64,
}

impl Zones {
    pub fn of(format: &Format) -> Self {
        let r = format.range();
        Self {
            // Round-to-nearest flushes what lies below half the smallest subnormal.
            flush: r.min_subnormal.log2() - 1.0,
            normal: r.min_normal.log2(),
            overflow: r.max_finite.log2(),
        }
    }
}

fn histograms_ui(ui: &mut egui::Ui, side: &Side, visuals: &egui::Visuals, lang: Lang) {
    let Some(report) = side.trainer.mixed_report() else {
        return;
    };
    let compute = &side.trainer.config.policy.compute;
    // In fp32 nothing is lost; show fp16's range for comparison.
    let (shown, note_key) = if compute == "fp32" {
        ("fp16", "hist.fp32_note")
    } else {
        (compute.as_str(), "hist.note")
    };
    let Ok(format) = Format::by_name(shown) else {
        return;
    };
    let zones = Zones::of(&format);
    ui.add_space(6.0);
    crate::kit::anchor(&ui.strong(TEXT.get(lang, "hist.heading")), "hist");
    ui.label(TEXT.fill(lang, note_key, &[("format", &shown)]));
    let columns = report.layers.len().max(1);
    ui.columns(columns, |cols| {
        for (col, layer) in cols.iter_mut().zip(&report.layers) {
            layer_histogram(col, layer, zones, shown, visuals, lang);
        }
    });
    let zone = |c: egui::Color32| c.gamma_multiply(0.18);
    figure::legend(
        ui,
        "mixed_hist",
        &[
            Key::fill(TEXT.get(lang, "hist.share"), theme::series(visuals, 0)),
            Key::fill(TEXT.get(lang, "hist.lost"), zone(theme::bad(visuals)))
                .hint(TEXT.fill(lang, "hist.lost_hint", &[("format", &shown)])),
            Key::fill(TEXT.get(lang, "hist.subnormal"), zone(theme::warn(visuals)))
                .hint(TEXT.fill(lang, "hist.subnormal_hint", &[("format", &shown)])),
        ],
    );
}

fn layer_histogram(
    ui: &mut egui::Ui,
    layer: &LayerGradients,
    zones: Zones,
    format: &str,
    visuals: &egui::Visuals,
    lang: Lang,
) {
    let h = &layer.histogram;
    let total = h.total().max(1) as f64;
    let bars: Vec<Bar> = h
        .bins
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| Bar::new(f64::from(h.first + i as i32) + 0.5, *n as f64 / total).width(0.9))
        .collect();
    // The axis spans the format's range and every occupied bin.
    let occupied = |i: usize| f64::from(h.first + i as i32);
    let first = h
        .bins
        .iter()
        .position(|n| *n > 0)
        .map_or(zones.flush, occupied);
    let last = h
        .bins
        .iter()
        .rposition(|n| *n > 0)
        .map_or(zones.overflow, |i| occupied(i) + 1.0);
    let lo = first.min(zones.flush - 8.0).floor();
    let hi = last.max(zones.overflow + 2.0).ceil();
    let zone = |c: egui::Color32| c.gamma_multiply(0.18);
    Plot::new(("mixed_hist", layer.name.as_str()))
        .height(170.0)
        .readable_x()
        .include_y(0.0)
        .include_x(lo)
        .include_x(hi)
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .show(ui, |plot| {
            plot.span(
                // Unnamed: a narrow band cannot hold its name; the legend
                // under the histograms names each band.
                Span::new("", lo..=zones.flush.max(lo))
                    .fill(zone(theme::bad(visuals))),
            );
            plot.span(
                Span::new("", zones.flush.max(lo)..=zones.normal.max(lo))
                .fill(zone(theme::warn(visuals))),
            );
            plot.span(
                Span::new("", zones.overflow.min(hi)..=hi)
                    .fill(zone(theme::bad(visuals))),
            );
            plot.bar_chart(
                BarChart::new(layer.name.clone(), bars).color(theme::series(visuals, 0)),
            );
        });
    ui.vertical_centered(|ui| {
        ui.small(TEXT.fill(lang, "hist.axis", &[("layer", &layer.name)]));
    });
    let s = &layer.stats;
    ui.small(TEXT.fill(
        lang,
        "hist.counts",
        &[
            ("values", &s.values),
            ("zero", &s.underflowed),
            ("sub", &s.subnormal),
            ("inf", &s.overflowed),
            ("format", &format),
        ],
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsys_core::mixed::ScaleEvent;

    #[test]
    fn fp16_zones_are_where_its_range_ends() {
        let z = Zones::of(&Format::fp16());
        assert_eq!((z.flush, z.normal), (-25.0, -14.0));
        assert!((z.overflow - 65504f64.log2()).abs() < 1e-12);
        let bf = Zones::of(&Format::bf16());
        assert_eq!(bf.normal, -126.0);
    }

    #[test]
    fn the_scale_trace_is_a_step_function_with_skips_marked() {
        let events = [
            ScaleEvent {
                step: 0,
                scale: 65536.0,
                skipped: false,
            },
            ScaleEvent {
                step: 5,
                scale: 32768.0,
                skipped: true,
            },
        ];
        let (trace, skipped) = scale_trace(&events, 9);
        assert_eq!(
            trace,
            vec![[0.0, 16.0], [5.0, 16.0], [5.0, 15.0], [9.0, 15.0]]
        );
        assert_eq!(skipped, vec![[5.0, 15.0]]);
    }
}
