//! A small computation graph drawn node by node, with backward stepped
//! through in reverse topological order.

use dlsys_core::autograd::{Graph, Op, Tensor, Var};
use dlsys_core::float::show_sig;
use dlsys_core::text::Lang;
use egui::{Align2, Color32, FontId, Pos2, Rect, Stroke, StrokeKind, Vec2};
use serde::{Deserialize, Serialize};

use super::TEXT;
use crate::kit::theme;

/// Which expression is shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Preset {
    #[default]
    Neuron,
    UsedTwice,
    SoftmaxCe,
}

impl Preset {
    const ALL: [Self; 3] = [Self::Neuron, Self::UsedTwice, Self::SoftmaxCe];

    fn key(self) -> &'static str {
        match self {
            Self::Neuron => "graph.preset.neuron",
            Self::UsedTwice => "graph.preset.twice",
            Self::SoftmaxCe => "graph.preset.layer",
        }
    }
}

/// The learner's choices (persisted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GraphSettings {
    pub preset: Preset,
    /// Neuron: x1, x2, w1, w2, b.
    pub neuron: [f64; 5],
    pub twice_x: f64,
    pub logits: [f64; 3],
    pub label: usize,
    /// How many backward steps have been taken.
    pub steps: usize,
}

impl Default for GraphSettings {
    fn default() -> Self {
        Self {
            preset: Preset::Neuron,
            neuron: [2.0, 0.0, -3.0, 1.0, 6.881_373_587_019_543],
            twice_x: 3.0,
            logits: [2.0, 1.0, -1.0],
            label: 0,
            steps: 0,
        }
    }
}

/// Builds the chosen expression; returns the graph and its output.
fn build(settings: &GraphSettings) -> (Graph<f64>, Var) {
    let mut g = Graph::<f64>::new();
    let leaf = |g: &mut Graph<f64>, value: f64, label: &str| {
        let v = g.param(Tensor::scalar(value));
        g.set_label(v, label);
        v
    };
    let out = match settings.preset {
        Preset::Neuron => {
            let [x1, x2, w1, w2, b] = settings.neuron;
            let (x1, x2) = (leaf(&mut g, x1, "x₁"), leaf(&mut g, x2, "x₂"));
            let (w1, w2) = (leaf(&mut g, w1, "w₁"), leaf(&mut g, w2, "w₂"));
            let b = leaf(&mut g, b, "b");
            let x1w1 = g.mul(x1, w1);
            g.set_label(x1w1, "x₁w₁");
            let x2w2 = g.mul(x2, w2);
            g.set_label(x2w2, "x₂w₂");
            let s = g.add(x1w1, x2w2);
            g.set_label(s, "x₁w₁ + x₂w₂");
            let n = g.add(s, b);
            g.set_label(n, "n");
            let o = g.tanh(n);
            g.set_label(o, "o = tanh(n)");
            o
        }
        Preset::UsedTwice => {
            let x = leaf(&mut g, settings.twice_x, "x");
            let xx = g.mul(x, x);
            g.set_label(xx, "x·x");
            let y = g.add(xx, x);
            g.set_label(y, "y = x·x + x");
            y
        }
        Preset::SoftmaxCe => {
            let z = g.param(Tensor::new(settings.logits.to_vec(), &[1, 3]));
            g.set_label(z, "logits z");
            let p = g.softmax(z);
            g.set_label(p, "p = softmax(z)");
            let loss = g.softmax_cross_entropy(z, &[settings.label.min(2)]);
            g.set_label(loss, "L = CE(z, y)");
            // p is shown for reading only; the loss's own backward gives p − y.
            let _ = p;
            loss
        }
    };
    (g, out)
}

fn compact(t: &Tensor<f64>) -> String {
    let items: Vec<String> = t.data.iter().take(4).map(|v| show_sig(*v, 4)).collect();
    if t.numel() == 1 {
        items.join("")
    } else {
        format!("[{}]", items.join(", "))
    }
}

pub fn graph_ui(ui: &mut egui::Ui, settings: &mut GraphSettings, lang: Lang) {
    let t = |key| TEXT.get(lang, key);
    ui.label(t("graph.explain"));
    ui.horizontal_wrapped(|ui| {
        let before = settings.preset;
        crate::kit::choice(ui, "graph_preset", t("graph.preset"), &mut settings.preset, Preset::ALL, |p| t(p.key()));
        if before != settings.preset {
            settings.steps = 0;
        }
    });
    let changed = ui
        .horizontal_wrapped(|ui| {
            let mut changed = false;
            let mut edit = |ui: &mut egui::Ui, name: &str, value: &mut f64| {
                let label = ui.label(name);
                changed |= ui
                    .add(egui::DragValue::new(value).speed(0.05).max_decimals(4))
                    .labelled_by(label.id)
                    .changed();
            };
            match settings.preset {
                Preset::Neuron => {
                    for (name, value) in ["x₁", "x₂", "w₁", "w₂", "b"]
                        .iter()
                        .zip(settings.neuron.iter_mut())
                    {
                        edit(ui, name, value);
                    }
                }
                Preset::UsedTwice => edit(ui, "x", &mut settings.twice_x),
                Preset::SoftmaxCe => {
                    for (i, value) in settings.logits.iter_mut().enumerate() {
                        edit(ui, &format!("z{i}"), value);
                    }
                    let label = ui.label("y");
                    changed |= ui
                        .add(egui::DragValue::new(&mut settings.label).range(0..=2))
                        .labelled_by(label.id)
                        .changed();
                }
            }
            changed
        })
        .inner;
    if changed {
        settings.steps = 0;
    }

    let (mut g, out) = build(settings);
    let order = g.topological_order(out);
    let total = order.len();
    settings.steps = settings.steps.min(total);
    let stepped = g.backward_stepped(out, settings.steps);
    let done = &stepped.done;
    ui.horizontal(|ui| {
        if ui
            .add_enabled(settings.steps < total, egui::Button::new(t("graph.step")))
            .clicked()
        {
            settings.steps += 1;
        }
        if ui
            .add_enabled(settings.steps < total, egui::Button::new(t("graph.all")))
            .clicked()
        {
            settings.steps = total;
        }
        if ui
            .add_enabled(settings.steps > 0, egui::Button::new(t("graph.reset")))
            .clicked()
        {
            settings.steps = 0;
        }
        ui.weak(TEXT.fill(
            lang,
            "graph.progress",
            &[("done", &done.len()), ("total", &total)],
        ));
    });
    if let Some(last) = done.last() {
        ui.label(applied(&g, *last, lang));
    }
    let next = order.iter().rev().nth(settings.steps).copied();
    // Backward starts at the output, the rightmost node: open there.
    crate::kit::theme::sideways_from_right(ui, "graph_canvas", |ui| {
        draw(ui, &g, &order, &stepped, next, lang);
    });

    let names: Vec<String> = order.iter().rev().map(|v| name(&g, *v)).collect();
    ui.weak(TEXT.fill(lang, "graph.order", &[("order", &names.join(" → "))]));
}

fn name(g: &Graph<f64>, v: Var) -> String {
    let node = g.node(v);
    if node.label.is_empty() {
        node.op.name().to_owned()
    } else {
        node.label.clone()
    }
}

/// What the last backward step did at `v`: the local derivative it applied
/// and what each input received, in the node's own numbers.
fn applied(g: &Graph<f64>, v: Var, lang: Lang) -> String {
    let item = |v: Var| g.value(v).item();
    let grad = g.grad(v).map_or(f64::NAN, |t| t.item());
    let n = |x: f64| show_sig(x, 4);
    let fill = |key: &str, args: &[(&str, &dyn std::fmt::Display)]| TEXT.fill(lang, key, args);
    let me = name(g, v);
    match &g.node(v).op {
        Op::Leaf { .. } => {
            let kept = g.grad(v).map_or_else(String::new, |t| compact(&t));
            fill("local.leaf", &[("name", &me), ("g", &kept)])
        }
        Op::Add(a, b) => fill(
            "local.add",
            &[
                ("name", &me),
                ("g", &n(grad)),
                ("a", &name(g, *a)),
                ("b", &name(g, *b)),
            ],
        ),
        Op::Mul(a, b) if a == b => {
            let d = 2.0 * item(*a);
            fill(
                "local.square",
                &[
                    ("name", &me),
                    ("x", &name(g, *a)),
                    ("d", &n(d)),
                    ("g", &n(grad)),
                    ("out", &n(grad * d)),
                ],
            )
        }
        Op::Mul(a, b) => fill(
            "local.mul",
            &[
                ("name", &me),
                ("a", &name(g, *a)),
                ("b", &name(g, *b)),
                ("va", &n(item(*a))),
                ("vb", &n(item(*b))),
                ("g", &n(grad)),
                ("ga", &n(grad * item(*b))),
                ("gb", &n(grad * item(*a))),
            ],
        ),
        Op::Tanh(x) => {
            let o = item(v);
            let d = 1.0 - o * o;
            fill(
                "local.tanh",
                &[
                    ("name", &me),
                    ("x", &name(g, *x)),
                    ("o", &n(o)),
                    ("d", &n(d)),
                    ("g", &n(grad)),
                    ("out", &n(grad * d)),
                ],
            )
        }
        Op::SoftmaxCrossEntropy {
            logits,
            labels,
            probs,
        } => {
            let rows = labels.len().max(1);
            let cols = probs.numel() / rows;
            let d: Vec<f64> = probs
                .data
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let hot = labels.get(i / cols.max(1)) == Some(&(i % cols.max(1)));
                    (p - if hot { 1.0 } else { 0.0 }) / rows as f64
                })
                .collect();
            fill(
                "local.ce",
                &[
                    ("name", &me),
                    ("z", &name(g, *logits)),
                    ("d", &compact(&Tensor::new(d, &[rows, cols]))),
                ],
            )
        }
        op => fill("local.other", &[("name", &me), ("op", &op.name())]),
    }
}

fn draw(
    ui: &mut egui::Ui,
    g: &Graph<f64>,
    order: &[Var],
    stepped: &dlsys_core::autograd::Stepped<f64>,
    next: Option<Var>,
    lang: Lang,
) {
    let done = &stepped.done;
    // Column = depth from the leaves; row = order within the column.
    let mut depth = vec![0usize; g.len()];
    for v in order {
        depth[v.0] = g
            .node(*v)
            .op
            .inputs()
            .iter()
            .map(|i| depth[i.0] + 1)
            .max()
            .unwrap_or(0);
    }
    let columns = order.iter().map(|v| depth[v.0]).max().unwrap_or(0) + 1;
    let mut rows_in = vec![0usize; columns];
    let mut slot = vec![(0usize, 0usize); g.len()];
    for v in order {
        let d = depth[v.0];
        slot[v.0] = (d, rows_in[d]);
        rows_in[d] += 1;
    }
    let max_rows = rows_in.iter().copied().max().unwrap_or(1);
    let box_size = Vec2::new(150.0, 62.0);
    let gap = Vec2::new(40.0, 14.0);
    let size = Vec2::new(
        columns as f32 * (box_size.x + gap.x),
        max_rows as f32 * (box_size.y + gap.y),
    );
    let (rect, _) = ui.allocate_exact_size(
        size.max(Vec2::new(ui.available_width(), 0.0)),
        egui::Sense::hover(),
    );
    let painter = ui.painter_at(rect);
    let visuals = ui.visuals().clone();
    let box_rect = |v: Var| {
        let (c, r) = slot[v.0];
        let top = rect.min
            + Vec2::new(
                c as f32 * (box_size.x + gap.x),
                r as f32 * (box_size.y + gap.y),
            );
        Rect::from_min_size(top, box_size)
    };
    let edge = Stroke::new(1.2, visuals.weak_text_color());
    for v in order {
        let to = box_rect(*v);
        for input in g.node(*v).op.inputs() {
            let from = box_rect(input);
            let (a, b) = (
                Pos2::new(from.right(), from.center().y),
                Pos2::new(to.left(), to.center().y),
            );
            painter.line_segment([a, b], edge);
            let dir = (b - a).normalized();
            let side = Vec2::new(-dir.y, dir.x) * 4.0;
            painter.line_segment([b, b - dir * 8.0 + side], edge);
            painter.line_segment([b, b - dir * 8.0 - side], edge);
        }
    }
    let font = FontId::proportional(12.0);
    for v in order {
        let r = box_rect(*v);
        let node = g.node(*v);
        let is_done = done.contains(v);
        let (border, width) = if Some(*v) == next {
            (theme::warn(&visuals), 2.5)
        } else if is_done {
            (theme::good(&visuals), 2.0)
        } else {
            (visuals.widgets.noninteractive.bg_stroke.color, 1.0)
        };
        painter.rect(
            r,
            6.0,
            visuals.extreme_bg_color,
            Stroke::new(width, border),
            StrokeKind::Inside,
        );
        let text = visuals.text_color();
        painter.text(
            r.left_top() + Vec2::new(6.0, 4.0),
            Align2::LEFT_TOP,
            name(g, *v),
            font.clone(),
            text,
        );
        painter.text(
            r.left_top() + Vec2::new(6.0, 22.0),
            Align2::LEFT_TOP,
            format!("{} {}", TEXT.get(lang, "graph.value"), compact(&node.value())),
            font.clone(),
            theme::exponent(&visuals),
        );
        let received = stepped.received.get(v.0).and_then(Option::as_ref);
        let (grad_text, grad_color): (String, Color32) = match (&node.grad(), received) {
            (Some(grad), _) => (
                format!("{} {}", TEXT.get(lang, "graph.grad"), compact(grad)),
                theme::bad(&visuals),
            ),
            // Some consumers are done: a partial sum, still collecting.
            (None, Some(part)) => (
                TEXT.fill(lang, "graph.so_far", &[("g", &compact(part))]),
                theme::warn(&visuals),
            ),
            (None, None) => (
                TEXT.get(lang, "graph.pending").to_owned(),
                visuals.weak_text_color(),
            ),
        };
        painter.text(
            r.left_top() + Vec2::new(6.0, 40.0),
            Align2::LEFT_TOP,
            grad_text,
            font.clone(),
            grad_color,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_neuron_preset_reproduces_the_classic_numbers() {
        let settings = GraphSettings::default();
        let (mut g, out) = build(&settings);
        g.backward(out);
        // tanh(0.8813…) = 0.7071…, and do/dn = 1 − o² = 0.5.
        assert!((g.value(out).item() - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        let order = g.topological_order(out);
        let n = order[order.len() - 2];
        assert!((g.grad(n).as_deref().map_or(0.0, Tensor::item) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn each_step_names_the_local_derivative_it_applied() {
        let (mut g, out) = build(&GraphSettings::default());
        let done = g.backward_steps(out, 1);
        let text = applied(&g, done[0], Lang::En);
        assert!(text.contains("1 − o² = 1 − 0.7071² = 0.5"), "{text}");
        let (mut g, out) = build(&GraphSettings {
            preset: Preset::UsedTwice,
            ..Default::default()
        });
        let done = g.backward_steps(out, 2);
        let text = applied(&g, done[1], Lang::En);
        // x = 3 by default: 2·x = 6, times the 1 that reached x·x.
        assert!(text.contains("2·x = 6") && text.contains("= 6."), "{text}");
    }

    #[test]
    fn a_value_used_twice_gets_both_contributions() {
        let settings = GraphSettings {
            preset: Preset::UsedTwice,
            ..Default::default()
        };
        let (mut g, out) = build(&settings);
        g.backward(out);
        let x = g.topological_order(out)[0];
        assert_eq!(g.grad(x).as_deref().map(Tensor::item), Some(2.0 * 3.0 + 1.0));
    }
}
