//! The collective step by step: every worker's copy of a small gradient
//! after each step, whose values each element holds, the messages of the
//! step, and at the end the check of the result.

use dlsys_core::names::{Named as _, Node};
use dlsys_core::collective::{
    Combine, Op, RELATIVE_TOLERANCE, Schedule, Trace, check_result, run_traced,
};
use dlsys_core::errors::Localized as _;
use dlsys_core::memory::show_bytes;
use dlsys_core::text::Lang;
use egui::{RichText, Sense, Stroke, Vec2};
use rand::{RngExt as _, SeedableRng as _};

use super::{Settings, TEXT, VIEW_ELEMENTS, algorithm_combo, number, t};
use crate::kit::theme;

/// The messages listed under the grid before "… and k more".
const LISTED: usize = 8;

/// Worker w's gradient: seeded values in hundredths, so sums stay short.
fn gradients(workers: usize, elements: usize) -> Vec<Vec<f32>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x0a11_2ed0 + workers as u64);
    (0..workers)
        .map(|_| {
            (0..elements)
                .map(|_| rng.random_range(-99i32..=99) as f32 / 100.0)
                .collect()
        })
        .collect()
}

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
    ui.label(t(lang, "step.explain"));
    ui.horizontal_wrapped(|ui| {
        algorithm_combo(ui, "dp_step_algo", &mut s.algorithm, lang);
        number(ui, t(lang, "workers"), &mut s.workers, 2..=16, 0.05);
        number(ui, t(lang, "elements"), &mut s.elements, 1..=VIEW_ELEMENTS, 0.05);
    });
    let schedule = match Schedule::new(s.algorithm, Op::AllReduce, s.workers, s.elements) {
        Ok(schedule) => schedule,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    let inputs = gradients(s.workers, s.elements);
    let mut buffers = inputs.clone();
    if schedule.nodes > schedule.workers {
        buffers.push(vec![0.0; s.elements]);
    }
    let (outcome, trace) = match run_traced(&schedule, &mut buffers) {
        Ok(run) => run,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    let steps = outcome.steps;
    s.step = s.step.min(steps);
    ui.horizontal_wrapped(|ui| {
        if ui.add_enabled(s.step > 0, egui::Button::new(t(lang, "step.first"))).clicked() {
            s.step = 0;
        }
        if ui.add_enabled(s.step > 0, egui::Button::new(t(lang, "step.prev"))).clicked() {
            s.step -= 1;
        }
        if ui.add_enabled(s.step < steps, egui::Button::new(t(lang, "step.next"))).clicked() {
            s.step += 1;
        }
        let label = ui.label(t(lang, "step.label"));
        ui.add(egui::Slider::new(&mut s.step, 0..=steps)).labelled_by(label.id);
    });
    let k = s.step;
    if k == 0 {
        ui.label(TEXT.fill(lang, "step.before", &[("steps", &steps)]));
    } else {
        let step = &schedule.steps[k - 1];
        let key = format!("kind.{}", step.kind.key());
        let kind = TEXT.get(lang, &key);
        ui.label(RichText::new(TEXT.fill(lang, "step.at", &[("k", &k), ("steps", &steps), ("kind", &kind)])).strong());
    }
    crate::kit::theme::sideways(ui, "dp_step_grid", |ui| grid(ui, &schedule, &trace, k, lang));
    if k > 0 {
        messages(ui, &schedule, k, lang);
    }
    let sent = schedule.sent_in_first(k);
    let list: Vec<String> = sent
        .iter()
        .enumerate()
        .map(|(w, e)| format!("{} {}", Node { index: w, workers: schedule.workers }.name(lang), show_bytes(4 * e)))
        .collect();
    ui.weak(TEXT.fill(lang, "step.sent", &[("list", &crate::kit::join(lang, &list))]));
    if k == steps {
        verdict(ui, &schedule, &inputs, &buffers, lang);
    }
}

/// One row per node, one cell per element, shaded by how many workers'
/// values the element holds; the cells a message of step `k` landed in
/// are outlined.
fn grid(ui: &mut egui::Ui, schedule: &Schedule, trace: &Trace<f32>, k: usize, lang: Lang) {
    let visuals = ui.visuals().clone();
    let accent = theme::series(&visuals, 0);
    let n = schedule.workers;
    let all = (1u32 << n) - 1;
    let cell = Vec2::new(46.0, 22.0);
    let landed = |node: usize, i: usize| {
        k > 0
            && schedule.steps[k - 1]
                .messages
                .iter()
                .any(|m| m.to == node && m.range().contains(&i))
    };
    egui::Grid::new("dp_step_cells").spacing([2.0, 2.0]).show(ui, |ui| {
        ui.label("");
        for i in 0..schedule.elements {
            ui.weak(i.to_string());
        }
        ui.end_row();
        for node in 0..schedule.nodes {
            let name = Node { index: node, workers: n }.name(lang);
            ui.label(RichText::new(&name).monospace());
            for i in 0..schedule.elements {
                let value = trace.values[k][node][i];
                let mask = trace.contributors[k][node][i];
                let count = mask.count_ones();
                let (rect, response) = ui.allocate_exact_size(cell, Sense::hover());
                let shade = count as f32 / n as f32;
                ui.painter().rect_filled(rect, 3.0, accent.gamma_multiply(0.12 + 0.6 * shade));
                if landed(node, i) {
                    ui.painter().rect_stroke(rect, 3.0, Stroke::new(2.0, theme::warn(&visuals)), egui::StrokeKind::Inside);
                }
                let text = if count == 0 { "·".to_owned() } else { format!("{value:.2}") };
                let font = egui::FontId::monospace(12.0);
                let color = if mask == all { visuals.strong_text_color() } else { visuals.text_color() };
                let galley = if mask == all {
                    RichText::new(&text).font(font).strong().color(color)
                } else {
                    RichText::new(&text).font(font).color(color)
                };
                let galley = egui::WidgetText::from(galley).into_galley(ui, Some(egui::TextWrapMode::Extend), cell.x, egui::TextStyle::Monospace);
                ui.painter().galley(rect.center() - galley.size() / 2.0, galley, color);
                let about = TEXT.fill(
                    lang,
                    "step.cell",
                    &[("who", &name), ("i", &i), ("value", &text), ("count", &count), ("n", &n)],
                );
                response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, &about));
                let _ = response.on_hover_text(&about);
            }
            ui.end_row();
        }
    });
}

/// The messages of step `k`, the first few of them.
fn messages(ui: &mut egui::Ui, schedule: &Schedule, k: usize, lang: Lang) {
    let step = &schedule.steps[k - 1];
    let n = schedule.workers;
    for m in step.messages.iter().take(LISTED) {
        let key = match m.combine {
            Combine::Add => "step.msg.add",
            Combine::Copy => "step.msg.copy",
        };
        ui.label(TEXT.fill(
            lang,
            key,
            &[
                ("from", &Node { index: m.from, workers: n }.name(lang)),
                ("to", &Node { index: m.to, workers: n }.name(lang)),
                ("lo", &m.start),
                ("hi", &(m.start + m.len - 1)),
            ],
        ));
    }
    if step.messages.len() > LISTED {
        ui.weak(TEXT.fill(lang, "step.more", &[("count", &(step.messages.len() - LISTED))]));
    }
}

/// The result against the core's check: bit for bit where the algorithm
/// fixes the order, within a relative tolerance of an f64 sum otherwise;
/// the same on every worker.
fn verdict(ui: &mut egui::Ui, schedule: &Schedule, inputs: &[Vec<f32>], out: &[Vec<f32>], lang: Lang) {
    let how = if schedule.algorithm.fixed_order() {
        t(lang, "check.bitwise").to_owned()
    } else {
        TEXT.fill(lang, "check.relative", &[("tol", &format!("{RELATIVE_TOLERANCE:e}"))])
    };
    match check_result(schedule, inputs, out) {
        Ok(()) => ui.colored_label(theme::good(ui.visuals()), TEXT.fill(lang, "step.done", &[("how", &how)])),
        Err(i) => ui.colored_label(theme::bad(ui.visuals()), TEXT.fill(lang, "step.failed", &[("how", &how), ("i", &i)])),
    };
}
