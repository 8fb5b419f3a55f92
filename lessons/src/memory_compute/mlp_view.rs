//! The MLP part: choose a network and a policy, see each component's bytes
//! estimated beside measured on the engine, the step's memory over time,
//! its FLOPs and time, and the misconceptions the numbers settle.

use dlsys_core::names::Named as _;
use dlsys_core::errors::Localized as _;
use dlsys_core::memory::measure::Phase;
use dlsys_core::memory::{
    Component, Layout, Measured, MemoryError, MlpEstimate, MlpShape, Precision, estimate_mlp, measure_step,
    show_bytes, show_flops,
};
use dlsys_core::nn::OptimizerKind;
use dlsys_core::nn::settings::parse_hidden;
use dlsys_core::text::Lang;

use super::bars::{self, Bar};
use super::{TEXT, t};
use crate::kit::background::Background;
use crate::kit::theme;

/// Work a measurement may take here (FLOPs over all the steps it runs):
/// a few seconds on a thread natively, well under a second on the web,
/// where it runs between frames.
#[cfg(not(target_arch = "wasm32"))]
const MEASURE_BUDGET: u64 = 40_000_000_000;
#[cfg(target_arch = "wasm32")]
const MEASURE_BUDGET: u64 = 2_000_000_000;

/// Steps one measurement usually trains: a warm-up, the metered one, five
/// timed; twice (without and with checkpointing). Under fp16's dynamic loss
/// scaling the first few steps may be skipped and a few more are trained.
const STEPS_PER_MEASUREMENT: u64 = 14;

/// The network and policy the learner set up: the core's settings, the
/// same value `dlsys-lab memory --mlp` builds from its flags.
pub use dlsys_core::memory::MlpSettings;

/// Measured without and with checkpointing, from the same shape.
#[derive(Clone, Debug)]
pub struct Pair {
    plain: Measured,
    checkpointed: Measured,
}

type Outcome = (MlpShape, Result<Pair, MemoryError>);

/// The measurement in flight and the last one made.
#[derive(Default)]
pub struct Measuring {
    job: Background<Outcome>,
    last: Option<Outcome>,
    /// The learner asked to measure: from then on every change is measured.
    armed: bool,
    /// The shape last seen unmeasured, and since when: a measurement
    /// starts once the settings have stayed still a moment (not on every
    /// keystroke; on the web it runs between two frames).
    settled: Option<(MlpShape, web_time::Instant)>,
    /// Set by the self-test: the next result is checked against the estimate.
    self_test: bool,
    /// The settings last parsed and what they gave: parsed once per change,
    /// not every frame.
    parsed: Option<(MlpSettings, Result<MlpShape, MemoryError>)>,
}

/// What is measured for `shape`: without checkpointing, and with
/// segments of `segment` layers (both are measured, whichever is shown).
fn key(shape: &MlpShape, segment: usize) -> MlpShape {
    MlpShape {
        checkpoint: segment.max(1),
        ..shape.clone()
    }
}

/// Measures `key` (see [`key`]) without and with checkpointing.
fn measure_both(key: MlpShape) -> Outcome {
    let plain = measure_step(&MlpShape {
        checkpoint: 0,
        ..key.clone()
    });
    let checkpointed = measure_step(&key);
    let result = match (plain, checkpointed) {
        (Ok(plain), Ok(checkpointed)) => Ok(Pair {
            plain,
            checkpointed,
        }),
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    (key, result)
}

/// How long the settings stay still before a measurement starts.
const SETTLE: web_time::Duration = web_time::Duration::from_millis(400);

/// Work one measurement of `shape` takes, in FLOPs.
fn cost(estimate: &MlpEstimate) -> u64 {
    estimate.flops().saturating_mul(STEPS_PER_MEASUREMENT)
}

/// Whether `shape` is measured here: what the core takes, within this
/// page's budget of work.
fn measurable(shape: &MlpShape) -> bool {
    dlsys_core::memory::check_measurable(shape).is_ok()
        && estimate_mlp(shape).is_ok_and(|e| cost(&e) <= MEASURE_BUDGET)
}

impl Measuring {
    /// The shape `settings` describe (parsed again only when they changed).
    fn shape(&mut self, settings: &MlpSettings) -> Result<MlpShape, MemoryError> {
        match &self.parsed {
            Some((parsed, shape)) if parsed == settings => shape.clone(),
            _ => {
                let shape = settings.shape();
                self.parsed = Some((settings.clone(), shape.clone()));
                shape
            }
        }
    }

    /// Picks up a finished measurement, and, once the learner has asked
    /// for measurements, starts one when the settings describe a shape not
    /// measured yet.
    pub fn logic(&mut self, ctx: &egui::Context, settings: &MlpSettings) {
        if let Some(outcome) = self.job.take(ctx) {
            self.last = Some(outcome);
        }
        if self.job.is_running() || !self.armed {
            return;
        }
        let Ok(shape) = self.shape(settings) else {
            return;
        };
        let shape = key(&shape, settings.segment);
        let fresh = self.last.as_ref().is_none_or(|(s, _)| *s != shape);
        if !fresh || !measurable(&shape) {
            return;
        }
        let since = match &self.settled {
            Some((s, since)) if *s == shape => *since,
            _ => {
                let now = web_time::Instant::now();
                self.settled = Some((shape.clone(), now));
                now
            }
        };
        let waited = since.elapsed();
        if waited >= SETTLE {
            self.settled = None;
            self.job.start(move || measure_both(shape));
        }
        ctx.request_repaint_after(SETTLE.saturating_sub(waited));
    }

    pub fn is_running(&self) -> bool {
        self.job.is_running()
    }

    /// The measurement of `shape` (segments of `segment` layers), if it is
    /// the last one made.
    fn of(&self, shape: &MlpShape, segment: usize) -> Option<&Result<Pair, MemoryError>> {
        self.last
            .as_ref()
            .filter(|(s, _)| *s == key(shape, segment))
            .map(|(_, r)| r)
    }

    pub fn start_self_test(&mut self) {
        let settings = MlpSettings::default();
        if let Ok(shape) = settings.shape() {
            self.self_test = true;
            self.last = None;
            let key = key(&shape, settings.segment);
            self.job.start(move || measure_both(key));
        }
    }

    /// Whether the default MLP measured what the estimate says.
    pub fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        if !self.self_test || self.job.is_running() {
            return None;
        }
        let Some((shape, result)) = &self.last else {
            return Some(Err(crate::SelfTestFailure(
                "the measurement stopped without a result".to_owned(),
            )));
        };
        let pair = match result {
            Ok(pair) => pair,
            Err(e) => return Some(Err(crate::SelfTestFailure(e.to_string()))),
        };
        let plain = MlpShape {
            checkpoint: 0,
            ..shape.clone()
        };
        for (shape, measured) in [(&plain, &pair.plain), (shape, &pair.checkpointed)] {
            let estimate = match estimate_mlp(shape) {
                Ok(e) => e,
                Err(e) => return Some(Err(crate::SelfTestFailure(e.to_string()))),
            };
            for c in [
                Component::Parameters,
                Component::Gradients,
                Component::OptimizerState,
                Component::MasterWeights,
                Component::Activations,
            ] {
                let (e, m) = (estimate.components.get(c), measured.components.get(c));
                if e != m {
                    return Some(Err(crate::SelfTestFailure(format!(
                        "{} (checkpoint {}): estimated {e} B, measured {m} B",
                        c.key(),
                        shape.checkpoint
                    ))));
                }
            }
        }
        Some(Ok(format!(
            "measured peak {} (checkpointed {}), estimate matched",
            show_bytes(pair.plain.peak),
            show_bytes(pair.checkpointed.peak)
        )))
    }
}

pub fn mlp_ui(ui: &mut egui::Ui, s: &mut MlpSettings, measuring: &mut Measuring, lang: Lang) {
    ui.label(t(lang, "mlp.explain"));
    controls(ui, s, lang);
    let shape = match measuring.shape(s) {
        Ok(shape) => shape,
        Err(err) => {
            ui.colored_label(theme::bad(ui.visuals()), err.message(lang));
            return;
        }
    };
    let estimate = match estimate_mlp(&shape) {
        Ok(e) => e,
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            return;
        }
    };
    ui.label(TEXT.fill(
        lang,
        "mlp.parameters",
        &[("parameters", &estimate.parameters)],
    ));
    let measured = match measuring.of(&shape, s.segment) {
        Some(Ok(pair)) => Some(pair),
        Some(Err(e)) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            None
        }
        None if measuring.is_running() => {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label(t(lang, "mlp.measuring"));
            });
            None
        }
        None if !measuring.armed => {
            ui.horizontal_wrapped(|ui| {
                if ui.button(t(lang, "mlp.measure")).clicked() {
                    measuring.armed = true;
                    ui.ctx().request_repaint();
                }
                ui.weak(t(lang, "mlp.measure.note"));
            });
            None
        }
        None if measurable(&shape) => {
            // Settling, or about to start.
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label(t(lang, "mlp.measuring"));
            });
            None
        }
        None => {
            let why = match dlsys_core::memory::check_measurable(&shape) {
                Err(e) => e.message(lang),
                Ok(()) => TEXT.fill(lang, "mlp.too_big", &[("flops", &show_flops(cost(&estimate)))]),
            };
            ui.weak(why);
            None
        }
    };
    let chosen = measured.map(|p| if s.checkpoint { &p.checkpointed } else { &p.plain });
    let mut rows = vec![Bar {
        label: t(lang, "mlp.estimated").to_owned(),
        parts: estimate.components,
        unknown: &[Component::Temporaries],
    }];
    if let Some(m) = chosen {
        rows.push(Bar {
            label: t(lang, "mlp.measured").to_owned(),
            parts: m.components,
            unknown: &[],
        });
    }
    ui.add_space(4.0);
    ui.weak(t(lang, "mlp.bars_note"));
    bars::stacked(ui, "memory_mlp_bars", &rows, lang);
    if let Some(m) = chosen {
        peak_line(ui, m, lang);
        timeline(ui, m, lang);
        ui.label(TEXT.fill(
            lang,
            "mlp.flops",
            &[
                ("total", &show_flops(estimate.flops())),
                ("forward", &show_flops(estimate.flops_forward)),
                ("backward", &show_flops(estimate.flops_backward)),
                ("recompute", &show_flops(estimate.flops_recompute)),
                ("ms", &format!("{:.2}", m.step_seconds * 1e3)),
                ("steps", &m.timed_steps),
            ],
        ));
    }
    ui.add_space(6.0);
    misconceptions(ui, &shape, &estimate, measured, lang);
}

fn controls(ui: &mut egui::Ui, s: &mut MlpSettings, lang: Lang) {
    ui.horizontal_wrapped(|ui| {
        let label = ui.label(t(lang, "mlp.sizes"));
        ui.add(egui::TextEdit::singleline(&mut s.sizes).desired_width(150.0))
            .labelled_by(label.id)
            .on_hover_text(t(lang, "mlp.sizes.tip"));
        let label = ui.label(t(lang, "mlp.batch"));
        ui.add(egui::DragValue::new(&mut s.batch).range(1..=4096))
            .labelled_by(label.id);
        crate::kit::choice_of_names(ui, "memory_optimizer", t(lang, "mlp.optimizer"), &mut s.optimizer, &OptimizerKind::NAMES);
    });
    ui.horizontal_wrapped(|ui| {
        precision_combo(ui, "memory_mlp_precision", &mut s.precision, lang);
        ui.checkbox(&mut s.checkpoint, t(lang, "mlp.checkpoint"))
            .on_hover_text(t(lang, "mlp.checkpoint.tip"));
        if s.checkpoint {
            // A segment as long as the network recomputes nothing.
            let layers = parse_hidden(&s.sizes).map_or(2, |sizes| sizes.len().saturating_sub(1));
            let label = ui.label(t(lang, "mlp.segment"));
            ui.add(egui::DragValue::new(&mut s.segment).range(1..=layers.max(2) - 1))
                .labelled_by(label.id)
                .on_hover_text(t(lang, "mlp.segment.tip"));
        }
    });
    layout_note(ui, s.precision, &s.optimizer, lang);
}

/// The precision picker, each policy described in its tooltip.
pub fn precision_combo(ui: &mut egui::Ui, id: &str, precision: &mut Precision, lang: Lang) {
    let tip = |p: &Precision| Some(TEXT.get(lang, &format!("precision.{}", p.name())).to_owned());
    crate::kit::choice_tipped(ui, id, t(lang, "precision.label"), precision, Precision::ALL, |p| p.name(), tip);
}

/// Under a mixed policy, which byte layout the estimates count (Megatron's
/// master copy) and how PyTorch's autocast splits the same bytes.
pub fn layout_note(ui: &mut egui::Ui, precision: Precision, optimizer: &str, lang: Lang) {
    let Ok(states) = OptimizerKind::by_name(optimizer).map(|o| o.states() as u64) else {
        return;
    };
    if precision.master_bytes() == 0 {
        return;
    }
    let split = |layout| precision.per_parameter(states, layout).to_string();
    ui.weak(TEXT.fill(
        lang,
        "precision.layout_note",
        &[
            ("format", &precision.policy().compute),
            ("master_copy", &split(Layout::MasterCopy)),
            ("autocast", &split(Layout::Autocast)),
        ],
    ));
}

fn peak_line(ui: &mut egui::Ui, m: &Measured, lang: Lang) {
    let phases: Vec<String> = m
        .phases
        .iter()
        .map(|p| format!("{} {}", p.phase.name(lang), show_bytes(p.peak)))
        .collect();
    let at = m
        .phases
        .iter()
        .max_by_key(|p| p.peak)
        .map(|p| p.phase.name(lang))
        .unwrap_or_default();
    ui.label(TEXT.fill(
        lang,
        "mlp.peak",
        &[
            ("peak", &show_bytes(m.peak)),
            ("bar", &show_bytes(m.components.total())),
            ("at", &at),
            ("phases", &crate::kit::join(lang, &phases)),
        ],
    ));
}

/// Total bytes held at each point of the step, coloured by phase.
fn timeline(ui: &mut egui::Ui, m: &Measured, lang: Lang) {
    use egui_plot::{Line, PlotPoints, Points};
    let visuals = ui.visuals().clone();
    let color = |i: usize| theme::series(&visuals, i);
    ui.label(t(lang, "timeline.title"));
    let mib = |b: u64| b as f64 / f64::from(1u32 << 20);
    crate::kit::figure::plot("memory_timeline", 160.0, t(lang, "timeline.x"), t(lang, "timeline.y"))
        .include_y(0.0)
        .allow_zoom(false)
        .allow_drag(false)
        .show(ui, |plot| {
            let all: Vec<[f64; 2]> = m
                .timeline
                .iter()
                .enumerate()
                .map(|(x, (_, bytes))| [x as f64, mib(*bytes)])
                .collect();
            plot.line(
                Line::new(t(lang, "timeline.y"), PlotPoints::from(all))
                    .color(visuals.weak_text_color())
                    .width(1.0),
            );
            for (i, phase) in Phase::ALL.iter().enumerate() {
                let points: Vec<[f64; 2]> = m
                    .timeline
                    .iter()
                    .enumerate()
                    .filter(|(_, (p, _))| p == phase)
                    .map(|(x, (_, bytes))| [x as f64, mib(*bytes)])
                    .collect();
                plot.points(
                    Points::new(phase.name(lang), PlotPoints::from(points))
                        .color(color(i))
                        .radius(3.0),
                );
            }
        });
    let keys: Vec<crate::kit::figure::Key> = Phase::ALL
        .iter()
        .enumerate()
        .map(|(i, phase)| crate::kit::figure::Key::points(phase.name(lang), color(i)))
        .collect();
    crate::kit::figure::legend(ui, "memory_timeline", &keys);
}

/// The classic beliefs, each held against this network's numbers.
fn misconceptions(
    ui: &mut egui::Ui,
    shape: &MlpShape,
    estimate: &MlpEstimate,
    measured: Option<&Pair>,
    lang: Lang,
) {
    crate::kit::anchor(&ui.strong(t(lang, "myth.heading")), "myth");
    let with = |precision: Precision, batch: usize| {
        estimate_mlp(&MlpShape {
            precision,
            batch,
            ..shape.clone()
        })
        .ok()
    };
    // The belief is about Adam: its moments are what stay in fp32.
    let adam = |precision: Precision| {
        estimate_mlp(&MlpShape {
            precision,
            optimizer: OptimizerKind::adam(),
            ..shape.clone()
        })
        .ok()
    };
    let states = |e: &MlpEstimate| e.components.training_state();
    let c = &estimate.components;
    if let (Some(fp32), Some(mixed)) = (adam(Precision::Fp32), adam(Precision::MixedFp16)) {
        ui.label(TEXT.fill(
            lang,
            "myth.halves",
            &[
                ("fp32", &show_bytes(states(&fp32))),
                ("mixed", &show_bytes(states(&mixed))),
                ("act32", &show_bytes(fp32.components.get(Component::Activations))),
                ("act16", &show_bytes(mixed.components.get(Component::Activations))),
            ],
        ));
    }
    ui.label(TEXT.fill(
        lang,
        "myth.grads",
        &[
            ("grads", &show_bytes(c.get(Component::Gradients))),
            ("params", &show_bytes(c.get(Component::Parameters))),
        ],
    ));
    if let Some(doubled) = with(shape.precision, shape.batch * 2) {
        ui.label(TEXT.fill(
            lang,
            "myth.batch",
            &[
                ("batch", &shape.batch),
                ("act", &show_bytes(c.get(Component::Activations))),
                ("double", &(shape.batch * 2)),
                ("act2", &show_bytes(doubled.components.get(Component::Activations))),
            ],
        ));
    }
    if let Some(pair) = measured {
        let (a, b) = (
            pair.plain.components.get(Component::Activations),
            pair.checkpointed.components.get(Component::Activations),
        );
        let (t0, t1) = (pair.plain.step_seconds, pair.checkpointed.step_seconds);
        let percent = |x: f64| format!("{:+.0}", 100.0 * x);
        ui.label(TEXT.fill(
            lang,
            "myth.checkpoint",
            &[
                ("act", &show_bytes(a)),
                ("act_ckpt", &show_bytes(b)),
                ("saved", &percent(b as f64 / a.max(1) as f64 - 1.0)),
                ("ms", &format!("{:.2}", t0 * 1e3)),
                ("ms_ckpt", &format!("{:.2}", t1 * 1e3)),
                ("slower", &percent(t1 / t0.max(1e-12) - 1.0)),
            ],
        ));
    }
}
