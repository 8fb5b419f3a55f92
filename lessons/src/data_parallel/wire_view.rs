//! Time on the wire: the α-β model's closed forms against the event
//! simulation of the real schedules, the crossover, the algorithms side by
//! side for one gradient, and one all-reduce drawn on the virtual clock.

use dlsys_core::names::{Named as _, Node};
use dlsys_core::collective::{
    Algorithm, MAX_ELEMENTS, Network, Op, Schedule, StepKind, compare, crossover_bytes, simulate,
    simulate_on,
};
use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::memory::{show_bytes, show_seconds};
use dlsys_core::text::Lang;
use super::{MAX_MIB, Settings, TEXT, algorithm_combo, color, number, t};
use crate::kit::{gantt, theme};
use crate::kit::table::{Header, headed};

/// The plot's message sizes: 2⁸ to 2²⁸ bytes (log₂ on the axis).
const LOG2_FROM: f64 = 8.0;
const LOG2_TO: f64 = 28.0;

fn controls(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "workers"), &mut s.workers, 2..=16, 0.05);
        number(ui, t(lang, "wire.alpha"), &mut s.alpha_us, 0.0..=1e6, 0.1);
        number(ui, t(lang, "wire.gbps"), &mut s.gbps, 0.01..=1e4, 0.1);
        number(ui, t(lang, "wire.size"), &mut s.mib, 1e-3..=MAX_MIB, 0.5);
    });
}

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.label(t(lang, "wire.explain"));
    controls(ui, s, lang);
    let (n, link) = (s.workers, s.link());
    plot(ui, s, lang);
    match crossover_bytes(Algorithm::Ring, Algorithm::Tree, n, link) {
        Some(bytes) => ui.label(TEXT.fill(lang, "wire.crossover", &[("size", &show_bytes(bytes as u64))])),
        None => ui.label(TEXT.fill(
            lang,
            "wire.no_crossover",
            &[
                ("n", &n),
                ("alpha", &s.alpha_us),
                ("ring", &Algorithm::Ring.cost(n).latency_terms),
                ("tree", &Algorithm::Tree.cost(n).latency_terms),
            ],
        )),
    };
    let elements = s.gradient_elements();
    let size = show_bytes(4 * elements as u64);
    let rows = match compare(n, elements, link) {
        Ok(rows) => rows,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    ui.add_space(4.0);
    ui.label(TEXT.fill(lang, "wire.table", &[("size", &size), ("n", &n)]));
    // The algorithm's name stays put; its figures scroll at 800 px.
    let keys = ["col.algo", "col.steps", "col.worker", "col.busiest", "col.total", "col.closed", "col.sim"];
    headed(
        ui,
        "dp_wire_table",
        &rows,
        Header { text: &TEXT, lang, keys: &keys },
        |ui, row| {
            ui.colored_label(color(ui.visuals(), row.algorithm), row.algorithm.name(lang));
        },
        |ui, row| {
            ui.label(row.steps.to_string());
            ui.label(show_bytes(row.worker_max_bytes));
            ui.label(show_bytes(row.busiest_bytes));
            ui.label(show_bytes(row.total_bytes));
            ui.label(show_seconds(row.closed_s));
            ui.label(show_seconds(row.simulated_s));
        },
    );
    if let Some(ring) = rows.iter().find(|r| r.algorithm == Algorithm::Ring) {
        ui.add_space(4.0);
        ui.label(TEXT.fill(
            lang,
            "misc.ring",
            &[("sent", &show_bytes(ring.worker_max_bytes)), ("size", &size)],
        ));
    }
}

/// The sizes simulated for the plot: about 2^k bytes for even k, rounded
/// to a multiple of 16·N elements so every algorithm's chunks are equal
/// and the closed form is exact.
fn simulated_sizes(n: usize) -> Vec<usize> {
    let unit = 16 * n;
    (10..=28)
        .step_by(2)
        .map(|k| {
            let rounded = ((1usize << k) / 4).div_ceil(unit).max(1) * unit;
            // Within a schedule's limit: the last size rounds down instead.
            if rounded > MAX_ELEMENTS { MAX_ELEMENTS / unit * unit } else { rounded }
        })
        .collect()
}

fn plot(ui: &mut egui::Ui, s: &Settings, lang: Lang) {
    use crate::kit::figure::{self, Key};
    use egui_plot::{Line, Plot, PlotPoints, Points, VLine, uniform_grid_spacer};
    let (n, link) = (s.workers, s.link());
    let visuals = ui.visuals().clone();
    ui.label(TEXT.fill(lang, "wire.plot", &[("n", &n)]));
    let samples = 60;
    Plot::new("dp_wire_plot")
        .height(260.0)
        .x_axis_label(t(lang, "axis.size"))
        .y_axis_label(t(lang, "axis.time"))
        .x_grid_spacer(uniform_grid_spacer(|_| [2.0, 10.0, 20.0]))
        .y_grid_spacer(uniform_grid_spacer(|_| [1.0, 5.0, 10.0]))
        .x_axis_formatter(|mark, _| {
            if mark.value.fract() == 0.0 {
                show_bytes(mark.value.exp2() as u64)
            } else {
                String::new()
            }
        })
        .y_axis_formatter(|mark, _| {
            if mark.value.fract() == 0.0 {
                show_seconds(10f64.powf(mark.value))
            } else {
                String::new()
            }
        })
        .label_formatter(|hover| {
            let p = match hover {
                egui_plot::HoverPosition::NearDataPoint { position, .. } => position,
                egui_plot::HoverPosition::Elsewhere { position } => position,
            };
            Some(format!("{}, {}", show_bytes(p.x.exp2() as u64), show_seconds(10f64.powf(p.y))))
        })
        .allow_scroll(false)
        .show(ui, |plot| {
            for a in Algorithm::ALL {
                let cost = a.cost(n);
                let line: Vec<[f64; 2]> = (0..=samples)
                    .map(|i| {
                        let x = LOG2_FROM + (LOG2_TO - LOG2_FROM) * i as f64 / samples as f64;
                        [x, cost.time(x.exp2(), link).log10()]
                    })
                    .collect();
                plot.line(Line::new(a.name(lang), PlotPoints::from(line)).color(color(&visuals, a)));
                let points: Vec<[f64; 2]> = simulated_sizes(n)
                    .into_iter()
                    .filter_map(|e| {
                        let schedule = Schedule::new(a, Op::AllReduce, n, e).ok()?;
                        let t = simulate(&schedule, 4, link).end_s;
                        Some([(4.0 * e as f64).log2(), t.log10()])
                    })
                    .collect();
                // Under the line's name: one legend entry shows and hides both.
                plot.points(Points::new(a.name(lang), PlotPoints::from(points)).radius(3.0).color(color(&visuals, a)));
            }
            if let Some(bytes) = crossover_bytes(Algorithm::Ring, Algorithm::Tree, n, link) {
                let x = bytes.log2();
                if (LOG2_FROM..=LOG2_TO).contains(&x) {
                    plot.vline(
                        VLine::new(t(lang, "wire.crossover_line"), x)
                            .color(visuals.text_color())
                            .width(1.5)
                            .style(egui_plot::LineStyle::dashed_dense()),
                    );
                }
            }
        });
    let mut keys: Vec<Key> = Algorithm::ALL
        .into_iter()
        .map(|a| Key::line(a.name(lang), color(&visuals, a)))
        .collect();
    if crossover_bytes(Algorithm::Ring, Algorithm::Tree, n, link)
        .is_some_and(|b| (LOG2_FROM..=LOG2_TO).contains(&b.log2()))
    {
        keys.push(Key::rule(t(lang, "wire.crossover_line"), visuals.text_color()));
    }
    figure::legend(ui, "dp_wire_plot", &keys);
}

/// One all-reduce of the chosen algorithm on the virtual clock: a row per
/// node, a bar per message on its sender's row, coloured by phase — on
/// uniform links, or with the last worker's links slower.
pub fn gantt_ui(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.label(t(lang, "gantt.explain"));
    ui.horizontal_wrapped(|ui| {
        algorithm_combo(ui, "dp_gantt_algo", &mut s.algorithm, lang);
        ui.checkbox(&mut s.slow_link, TEXT.fill(lang, "gantt.slow", &[("worker", &Node { index: s.workers - 1, workers: s.workers }.name(lang))]));
        if s.slow_link {
            number(ui, t(lang, "gantt.slow_factor"), &mut s.slow_factor, 1.0..=100.0, 0.05);
        }
    });
    let (n, link, elements) = (s.workers, s.link(), s.gradient_elements());
    let schedule = match Schedule::new(s.algorithm, Op::AllReduce, n, elements) {
        Ok(schedule) => schedule,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    let uniform = simulate(&schedule, 4, link);
    let network = match s.slow_link.then(|| Network::with_slow_node(link, n - 1, s.slow_factor)).transpose() {
        Ok(network) => network,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    let timeline = network.map_or_else(|| uniform.clone(), |net| simulate_on(&schedule, 4, &net));
    let visuals = ui.visuals().clone();
    let kind_color = |k: StepKind| {
        let index = StepKind::ALL.iter().position(|x| *x == k).unwrap_or(0);
        theme::series(&visuals, index + 1)
    };
    let names: Vec<(egui::Color32, String)> = StepKind::ALL
        .into_iter()
        .filter(|kind| timeline.transfers.iter().any(|x| x.kind == *kind))
        .map(|kind| (kind_color(kind), TEXT.get(lang, &format!("kind.{}", kind.key())).to_owned()))
        .collect();
    gantt::legend(ui, "dp_gantt", &names.iter().map(|(c, name)| (*c, name.as_str())).collect::<Vec<_>>());
    // Each message on its sender's row; `index` finds it again for the tooltip.
    let mut rows: Vec<gantt::Row> = (0..schedule.nodes)
        .map(|node| gantt::Row {
            label: Node { index: node, workers: n }.name(lang),
            bars: Vec::new(),
        })
        .collect();
    let mut index: Vec<Vec<usize>> = vec![Vec::new(); schedule.nodes];
    for (i, x) in timeline.transfers.iter().enumerate() {
        rows[x.from].bars.push(gantt::Bar {
            start_s: x.start_s,
            end_s: x.end_s,
            color: kind_color(x.kind),
        });
        index[x.from].push(i);
    }
    let mut summary = TEXT.fill(
        lang,
        "gantt.summary",
        &[
            ("algo", &s.algorithm.name(lang)),
            ("size", &show_bytes(4 * elements as u64)),
            ("end", &show_seconds(timeline.end_s)),
            ("messages", &timeline.transfers.len()),
        ],
    );
    if network.is_some() {
        summary.push(' ');
        summary.push_str(&TEXT.fill(
            lang,
            "gantt.slow_summary",
            &[
                ("worker", &Node { index: n - 1, workers: n }.name(lang)),
                ("uniform", &show_seconds(uniform.end_s)),
                ("ratio", &show_sig(timeline.end_s / uniform.end_s.max(f64::MIN_POSITIVE), 3)),
            ],
        ));
    }
    let (response, hovered) = gantt::draw(ui, &rows, (0.0, timeline.end_s), &summary);
    if let Some(x) = hovered.and_then(|(r, b)| timeline.transfers.get(index[r][b])) {
        response.on_hover_text(TEXT.fill(
            lang,
            "gantt.tip",
            &[
                ("from", &Node { index: x.from, workers: n }.name(lang)),
                ("to", &Node { index: x.to, workers: n }.name(lang)),
                ("bytes", &show_bytes(x.bytes)),
                ("start", &show_seconds(x.start_s)),
                ("end", &show_seconds(x.end_s)),
            ],
        ));
    }
}
