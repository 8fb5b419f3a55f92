//! Overlap: the gradients all-reduced in buckets while backward still runs
//! (as DDP does), drawn against the step that all-reduces after backward,
//! and the step time against the bucket size.

use dlsys_core::names::Named as _;
use dlsys_core::collective::{OverlapPlan, OverlapStep, comm_time, equal_layers, overlap_step};
use dlsys_core::errors::Localized as _;
use dlsys_core::memory::{show_bytes, show_seconds};
use dlsys_core::text::Lang;

use super::{MAX_MIB, Settings, TEXT, algorithm_combo, number, t};
use crate::kit::{gantt, theme};
use crate::kit::theme::ReadableAxes as _;

/// The most layers the view splits the model into (a bar each).
pub const MAX_VIEW_LAYERS: usize = 64;

/// The step the settings describe, with buckets of `bucket_bytes`: the
/// scaling view's compute (a third forward, two thirds backward) over
/// equal layers, the wire view's gradient, each bucket's all-reduce by the
/// closed form.
fn step(s: &Settings, bucket_bytes: u64) -> Result<OverlapStep, dlsys_core::collective::CollectiveError> {
    let compute = s.compute_ms * 1e-3;
    // Whole layers of equal bytes, so a cap of k layers holds k of them.
    let bytes = 4 * s.gradient_elements() as u64;
    let bytes = (bytes - bytes % s.layers as u64).max(s.layers as u64);
    let plan = OverlapPlan {
        forward_s: compute / 3.0,
        layers: equal_layers(s.layers, compute * 2.0 / 3.0, bytes),
        bucket_bytes,
    };
    let (algorithm, n, link) = (s.algorithm, s.workers, s.link());
    overlap_step(&plan, &|b| comm_time(algorithm, n, b as f64, link))
}

fn bucket_bytes(s: &Settings) -> u64 {
    (s.bucket_mib * f64::from(1u32 << 20)).round().max(1.0) as u64
}

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.label(t(lang, "overlap.explain"));
    ui.horizontal_wrapped(|ui| {
        algorithm_combo(ui, "dp_overlap_algo", &mut s.algorithm, lang);
        number(ui, t(lang, "overlap.layers"), &mut s.layers, 1..=MAX_VIEW_LAYERS, 0.1);
        number(ui, t(lang, "overlap.bucket"), &mut s.bucket_mib, 1e-3..=MAX_MIB, 0.25);
    });
    let timed = match step(s, bucket_bytes(s)) {
        Ok(timed) => timed,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    timeline(ui, s, &timed, lang);
    let hidden = (timed.comm_buckets_s - timed.exposed_s()).max(0.0);
    let last = timed.buckets.last().map_or(0.0, |b| b.end_s - b.start_s);
    ui.label(TEXT.fill(
        lang,
        "overlap.summary",
        &[
            ("none", &show_seconds(timed.no_overlap_s)),
            ("forward", &show_seconds(timed.backward.first().map_or(0.0, |b| b.0))),
            ("backward", &show_seconds(timed.backward_end_s - timed.backward.first().map_or(0.0, |b| b.0))),
            ("comm", &show_seconds(timed.comm_whole_s)),
            ("buckets", &timed.buckets.len()),
            ("cap", &show_bytes(bucket_bytes(s))),
            ("with", &show_seconds(timed.end_s)),
            ("hidden", &show_seconds(hidden)),
            ("exposed", &show_seconds(timed.exposed_s())),
            ("last", &show_seconds(last)),
        ],
    ));
    ui.label(TEXT.fill(
        lang,
        "overlap.latency",
        &[
            ("sum", &show_seconds(timed.comm_buckets_s)),
            ("extra", &show_seconds((timed.comm_buckets_s - timed.comm_whole_s).max(0.0))),
        ],
    ));
    plot(ui, s, &timed, lang);
}

/// Four rows: the step without overlap (compute, then all-reduce) and the
/// step with it (backward layer by layer, the buckets under it).
fn timeline(ui: &mut egui::Ui, s: &Settings, timed: &OverlapStep, lang: Lang) {
    let visuals = ui.visuals().clone();
    let (forward, backward, comm) = (theme::series(&visuals, 5), theme::series(&visuals, 2), theme::series(&visuals, 3));
    // Neighbouring layers and buckets in two shades, so each one shows.
    let shade = |c: egui::Color32, i: usize| if i.is_multiple_of(2) { c } else { c.gamma_multiply(0.65) };
    gantt::legend(
        ui,
        "dp_overlap_gantt",
        &[
            (forward, t(lang, "overlap.forward")),
            (backward, t(lang, "overlap.backward")),
            (comm, t(lang, "overlap.comm")),
        ],
    );
    let bar = |start_s, end_s, color| gantt::Bar { start_s, end_s, color };
    let forward_s = timed.backward.first().map_or(0.0, |b| b.0);
    let layer_bars = || -> Vec<gantt::Bar> {
        std::iter::once(bar(0.0, forward_s, forward))
            .chain(timed.backward.iter().enumerate().map(|(i, &(a, b))| bar(a, b, shade(backward, i))))
            .collect()
    };
    let rows = [
        gantt::Row {
            label: t(lang, "overlap.row_none_compute").to_owned(),
            bars: layer_bars(),
        },
        gantt::Row {
            label: t(lang, "overlap.row_none_comm").to_owned(),
            bars: vec![bar(timed.backward_end_s, timed.no_overlap_s, comm)],
        },
        gantt::Row {
            label: t(lang, "overlap.row_compute").to_owned(),
            bars: layer_bars(),
        },
        gantt::Row {
            label: t(lang, "overlap.row_comm").to_owned(),
            bars: timed.buckets.iter().enumerate().map(|(i, b)| bar(b.start_s, b.end_s, shade(comm, i))).collect(),
        },
    ];
    let summary = TEXT.fill(
        lang,
        "overlap.gantt",
        &[
            ("algo", &s.algorithm.name(lang)),
            ("none", &show_seconds(timed.no_overlap_s)),
            ("with", &show_seconds(timed.end_s)),
        ],
    );
    let end = timed.no_overlap_s.max(timed.end_s);
    let (response, hovered) = gantt::draw(ui, &rows, (0.0, end), &summary);
    // The layers are numbered as the model numbers them: backward meets
    // the last one first.
    let tip = match hovered {
        Some((0 | 2, 0)) => Some(TEXT.fill(lang, "overlap.tip_forward", &[("end", &show_seconds(forward_s))])),
        Some((0 | 2, b)) => timed.backward.get(b - 1).map(|&(start, end)| {
            TEXT.fill(
                lang,
                "overlap.tip_layer",
                &[
                    ("layer", &(timed.backward.len() - (b - 1))),
                    ("start", &show_seconds(start)),
                    ("end", &show_seconds(end)),
                ],
            )
        }),
        Some((1, _)) => Some(TEXT.fill(
            lang,
            "overlap.tip_whole",
            &[
                ("bytes", &show_bytes(timed.buckets.iter().map(|b| b.bytes).sum())),
                ("start", &show_seconds(timed.backward_end_s)),
                ("end", &show_seconds(timed.no_overlap_s)),
            ],
        )),
        Some((_, b)) => timed.buckets.get(b).map(|x| {
            let count = timed.backward.len();
            let key = if x.layers.len() == 1 { "overlap.tip_bucket_one" } else { "overlap.tip_bucket" };
            TEXT.fill(
                lang,
                key,
                &[
                    ("k", &(b + 1)),
                    ("from", &(count - x.layers.start)),
                    ("to", &(count - (x.layers.end - 1))),
                    ("bytes", &show_bytes(x.bytes)),
                    ("ready", &show_seconds(x.ready_s)),
                    ("start", &show_seconds(x.start_s)),
                    ("end", &show_seconds(x.end_s)),
                ],
            )
        }),
        None => None,
    };
    if let Some(tip) = tip {
        response.on_hover_text(tip);
    }
}

/// The step against the bucket size, log₂ of bytes on the axis, from
/// half a layer (below that every layer is a bucket of its own) to one
/// bucket for everything.
fn plot(ui: &mut egui::Ui, s: &Settings, timed: &OverlapStep, lang: Lang) {
    use crate::kit::figure::Key;
    use egui_plot::{HLine, Line, Plot, PlotPoints, VLine};
    let visuals = ui.visuals().clone();
    let total = 4.0 * s.gradient_elements() as f64;
    let layer = (total / s.layers as f64).max(1.0);
    let (from, to) = ((layer.log2() - 1.0).floor(), total.log2().ceil() + 1.0);
    let samples = 80;
    let ms = 1e3;
    let curve: Vec<[f64; 2]> = (0..=samples)
        .filter_map(|i| {
            let x = from + (to - from) * i as f64 / samples as f64;
            let timed = step(s, x.exp2().round().max(1.0) as u64).ok()?;
            Some([x, timed.end_s * ms])
        })
        .collect();
    let forward_s = timed.backward.first().map_or(0.0, |b| b.0);
    let best = forward_s + (timed.backward_end_s - forward_s).max(timed.comm_whole_s);
    // Room under the curves for the legend: the step never drops below the
    // best case, and the differences are what the plot is for.
    let gap = (timed.no_overlap_s - best).max(best * 0.01);
    let (floor, ceiling) = (best - 0.8 * gap, timed.no_overlap_s + 0.15 * gap);
    ui.label(t(lang, "overlap.plot"));
    Plot::new("dp_overlap_plot")
        .height(220.0)
        .x_axis_label(t(lang, "axis.bucket"))
        .y_axis_label(t(lang, "axis.step_ms"))
        .readable_y()
        .x_grid_spacer(egui_plot::uniform_grid_spacer(|_| [1.0, 4.0, 8.0]))
        .x_axis_formatter(|mark, _| {
            if mark.value.fract() == 0.0 {
                show_bytes(mark.value.exp2() as u64)
            } else {
                String::new()
            }
        })
        .label_formatter(|hover| {
            let p = match hover {
                egui_plot::HoverPosition::NearDataPoint { position, .. } => position,
                egui_plot::HoverPosition::Elsewhere { position } => position,
            };
            Some(format!("{}, {}", show_bytes(p.x.exp2() as u64), show_seconds(p.y / ms)))
        })
        .include_y(floor * ms)
        .include_y(ceiling * ms)
        .allow_scroll(false)
        .show(ui, |plot| {
            plot.hline(
                HLine::new(t(lang, "overlap.none"), timed.no_overlap_s * ms)
                    .color(theme::series(&visuals, 1))
                    .style(egui_plot::LineStyle::dashed_loose()),
            );
            plot.hline(
                HLine::new(t(lang, "overlap.best"), best * ms)
                    .color(theme::series(&visuals, 2))
                    .style(egui_plot::LineStyle::dotted_dense()),
            );
            plot.line(Line::new(t(lang, "overlap.series"), PlotPoints::from(curve)).color(theme::series(&visuals, 0)).width(2.0));
            plot.vline(
                VLine::new(t(lang, "overlap.current"), (bucket_bytes(s) as f64).log2())
                    .color(visuals.text_color())
                    .width(1.0),
            );
        });
    crate::kit::figure::legend(
        ui,
        "dp_overlap_plot",
        &[
            Key::line(t(lang, "overlap.series"), theme::series(&visuals, 0)),
            Key::rule(t(lang, "overlap.none"), theme::series(&visuals, 1)),
            Key::rule(t(lang, "overlap.best"), theme::series(&visuals, 2)),
            Key::rule(t(lang, "overlap.current"), visuals.text_color()),
        ],
    );
}
