//! Capture: the MLP's or the CNN's step recorded into a static graph and
//! replayed alone — its kernels listed, the replay checked bit for bit
//! against the eager step, the compile cache fed four batches (a guard
//! fails, the batch turns symbolic); for the MLP also a data-dependent
//! branch and the overhead of eager vs replayed steps at a
//! tiny and a large size, timed in the background on the learner's button.

use dlsys_core::compile::cache::CacheEvent;
use dlsys_core::compile::captured::{Captured, CapturedError, captured, same_step};
use dlsys_core::compile::step::StepModel;
use dlsys_core::names::Named as _;
use dlsys_core::errors::Localized as _;
use dlsys_core::memory::mlp::MlpSettings;
use dlsys_core::memory::{show_bytes, show_seconds};
use dlsys_core::text::Lang;

use super::{TEXT, t};
use crate::kit::background::Background;
use crate::kit::table::{Header, Look, headed, pinned};
use crate::kit::theme;

/// Runs timed each way: natively in the background; on the web the work
/// runs between frames, so once.
#[cfg(not(target_arch = "wasm32"))]
const RUNS: usize = 5;
#[cfg(target_arch = "wasm32")]
const RUNS: usize = 1;

/// The settings captured with (the model, the MLP's), the runs, the result.
type Done = ((StepModel, MlpSettings), usize, Result<Captured, CapturedError>);

/// The models whose steps can be captured.
const MODELS: [StepModel; 2] = [StepModel::Mlp, StepModel::Cnn];

#[derive(Default)]
pub struct Capture {
    /// The model the learner chose to capture.
    model: StepModel,
    job: Background<Done>,
    done: Option<Done>,
}

impl Capture {
    /// Captures `model`'s step (the MLP of `mlp`; the batch for either),
    /// timing the MLP's overhead `runs` times (none at 0).
    pub fn start(&mut self, model: StepModel, mlp: &MlpSettings, runs: usize) {
        let key = (model, mlp.clone());
        self.job.start(move || {
            let result = captured(key.0, &key.1, runs);
            (key, runs, result)
        });
    }

    pub fn is_running(&self) -> bool {
        self.job.is_running()
    }

    /// The last capture, if it succeeded.
    pub fn result(&self) -> Option<&Captured> {
        self.done.as_ref().and_then(|(_, _, r)| r.as_ref().ok())
    }

    pub fn logic(&mut self, ctx: &egui::Context) {
        if let Some(done) = self.job.take(ctx) {
            self.done = Some(done);
        }
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, mlp: &MlpSettings, lang: Lang) {
        ui.label(t(lang, "capture.explain"));
        ui.horizontal_wrapped(|ui| {
            ui.label(t(lang, "capture.model"));
            for m in MODELS {
                ui.radio_value(&mut self.model, m, m.name(lang));
            }
        });
        ui.horizontal_wrapped(|ui| {
            // The overhead is timed on the MLP only.
            let (run, running) = match self.model {
                StepModel::Mlp => ("capture.run", "capture.running"),
                _ => ("capture.run_cnn", "capture.running_cnn"),
            };
            if self.is_running() {
                ui.spinner();
                ui.label(t(lang, running));
            } else if ui.button(t(lang, run)).clicked() {
                self.start(self.model, mlp, RUNS);
            }
        });
        let Some((for_settings, _, result)) = &self.done else {
            return;
        };
        let c = match result {
            Ok(c) => c,
            Err(e) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
                return;
            }
        };
        if !same_step((for_settings.0, &for_settings.1), (self.model, mlp)) {
            ui.weak(t(lang, "capture.stale"));
        }
        summary(ui, c, lang);
        kernels(ui, c, lang);
        events(ui, c, lang);
        overhead(ui, c, lang);
    }

    /// For the self-test: the default step captured (no timing), replayed
    /// bit for bit, the cache capturing twice for four batches.
    pub fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        if self.is_running() {
            return None;
        }
        let fail = |why: String| Some(Err(crate::SelfTestFailure(why)));
        let c = match &self.done {
            Some((_, _, Ok(c))) => c,
            Some((_, _, Err(e))) => return fail(e.to_string()),
            None => return fail("nothing captured".to_owned()),
        };
        let detail = format!(
            "{} kernels, replay bit-exact: {}, {} captures for batches {:?}",
            c.launches, c.bit_exact, c.captures, c.batches
        );
        Some(if c.bit_exact && c.captures == 2 {
            Ok(detail)
        } else {
            Err(crate::SelfTestFailure(detail))
        })
    }
}

fn summary(ui: &mut egui::Ui, c: &Captured, lang: Lang) {
    let sizes: Vec<String> = c.sizes.iter().map(usize::to_string).collect();
    let model = match c.model {
        StepModel::Mlp => TEXT.fill(lang, "capture.mlp", &[("sizes", &sizes.join("-"))]),
        _ => t(lang, "capture.cnn").to_owned(),
    };
    ui.label(TEXT.fill(
        lang,
        "capture.summary",
        &[
            ("model", &model),
            ("batch", &c.batch),
            ("inputs", &c.inputs()),
            ("forward", &c.forward()),
            ("backward", &c.backward()),
            ("arena", &show_bytes(c.arena)),
            ("max_live", &show_bytes(c.max_live)),
            ("no_reuse", &show_bytes(c.no_reuse)),
            ("in_place", &c.in_place),
        ],
    ));
    let (key, colour) = if c.bit_exact {
        ("capture.exact", theme::good(ui.visuals()))
    } else {
        ("capture.inexact", theme::bad(ui.visuals()))
    };
    ui.colored_label(colour, t(lang, key));
}

fn kernels(ui: &mut egui::Ui, c: &Captured, lang: Lang) {
    let header = t(lang, "capture.kernels");
    egui::CollapsingHeader::new(header)
        .id_salt("frameworks_kernels")
        .show(ui, |ui| {
            egui::ScrollArea::vertical()
                .max_height(260.0)
                .id_salt("frameworks_kernels_scroll")
                .show(ui, |ui| {
                    let cols = ["col.phase", "col.op", "col.shape", "col.from"];
                    pinned(
                        ui,
                        "frameworks_kernel_grid",
                        c.kernels.len() + 1,
                        Look::default(),
                        |ui, r| {
                            if r == 0 {
                                ui.strong(t(lang, "col.node"));
                            } else {
                                ui.monospace(format!("%{}", r - 1));
                            }
                        },
                        |ui, r| {
                            let Some(k) = r.checked_sub(1).and_then(|i| c.kernels.get(i)) else {
                                for key in cols {
                                    ui.strong(t(lang, key));
                                }
                                return;
                            };
                            let phase = match (k.key, k.backward) {
                                ("copy_in", _) => "phase.input",
                                (_, false) => "phase.forward",
                                (_, true) => "phase.backward",
                            };
                            let from: Vec<String> = k.inputs.iter().map(|j| format!("%{j}")).collect();
                            ui.label(t(lang, phase));
                            ui.monospace(k.key);
                            ui.monospace(format!("{:?}", k.shape));
                            ui.monospace(from.join(", "));
                        },
                    );
                });
        });
}

/// One line of the compile cache's log.
fn event_text(e: &CacheEvent, lang: Lang) -> String {
    match e {
        CacheEvent::Captured {
            batch,
            capture,
            symbolic,
        } => TEXT.fill(
            lang,
            if *symbolic {
                "event.captured_symbolic"
            } else {
                "event.captured"
            },
            &[("batch", batch), ("graph", &(capture + 1))],
        ),
        CacheEvent::Reused { batch, capture } => {
            TEXT.fill(lang, "event.reused", &[("batch", batch), ("graph", &(capture + 1))])
        }
        CacheEvent::GuardFailed {
            batch,
            capture,
            error,
        } => TEXT.fill(
            lang,
            "event.guard",
            &[("batch", batch), ("graph", &(capture + 1)), ("error", &error.message(lang))],
        ),
    }
}

fn events(ui: &mut egui::Ui, c: &Captured, lang: Lang) {
    ui.add_space(6.0);
    ui.strong(t(lang, "capture.cache"));
    for e in &c.events {
        ui.label(format!("• {}", event_text(e, lang)));
    }
    ui.label(TEXT.fill(
        lang,
        "capture.captures",
        &[
            ("captures", &c.captures),
            ("calls", &c.batches.len()),
            ("exact", &c.calls_exact),
        ],
    ));
    if c.branch_means.is_empty() {
        // The branch and the overhead are the MLP's.
        ui.add_space(6.0);
        ui.weak(t(lang, "capture.mlp_only"));
        return;
    }
    ui.add_space(6.0);
    ui.strong(t(lang, "capture.branch"));
    ui.label(TEXT.fill(
        lang,
        "capture.branch_explain",
        &[("threshold", &dlsys_core::compile::captured::BRANCH_THRESHOLD)],
    ));
    let means: Vec<String> = c.branch_means.iter().map(|m| format!("{m:.3}")).collect();
    ui.label(TEXT.fill(lang, "capture.branch_means", &[("means", &means.join(", "))]));
    for e in &c.branch_events {
        ui.label(format!("• {}", event_text(e, lang)));
    }
    ui.label(TEXT.fill(
        lang,
        "capture.branch_captures",
        &[
            ("captures", &c.branch_captures),
            ("calls", &c.branch_means.len()),
            ("exact", &c.branch_exact),
        ],
    ));
}

fn overhead(ui: &mut egui::Ui, c: &Captured, lang: Lang) {
    if c.overhead.is_empty() {
        return;
    }
    ui.add_space(6.0);
    ui.strong(t(lang, "capture.overhead"));
    let cols = [
        "col.size", "col.eager",
        "col.replay",
        "col.math",
        "col.eager_share",
        "col.replay_share",
        "col.speedup",
    ];
    headed(
        ui,
        "frameworks_overhead",
        &c.overhead,
        Header { text: &TEXT, lang, keys: &cols },
        |ui, o| {
            ui.label(TEXT.fill(lang, "capture.size", &[("batch", &o.batch), ("width", &o.width)]));
        },
        |ui, o| {
            ui.monospace(show_seconds(o.eager_seconds));
            ui.monospace(show_seconds(o.replay_seconds));
            ui.monospace(show_seconds(o.math_seconds));
            ui.monospace(format!("{:.0} %", 100.0 * o.eager_share));
            ui.monospace(format!("{:.0} %", 100.0 * o.replay_share));
            ui.monospace(format!("{:.2}×", o.speedup()));
        },
    );
    ui.label(TEXT.fill(
        lang,
        "capture.method",
        &[
            ("block", &format!("{:.0}", 1e3 * dlsys_core::compile::overhead::BLOCK)),
            ("runs", &c.overhead[0].runs),
        ],
    ));
    if let [small, large, ..] = c.overhead.as_slice() {
        let key = if small.eager_share > large.eager_share && small.speedup() > 1.0 {
            "capture.bound"
        } else {
            "capture.not_bound"
        };
        ui.label(TEXT.fill(
            lang,
            key,
            &[
                ("small", &format!("{:.0}", 100.0 * small.eager_share)),
                ("large", &format!("{:.0}", 100.0 * large.eager_share)),
                ("speedup", &format!("{:.1}", small.speedup())),
            ],
        ));
    }
}
