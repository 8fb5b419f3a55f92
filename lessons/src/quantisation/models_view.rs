//! The CNN and the char transformer quantised weight-only on the page: the
//! core's `ModelJob` trained and measured a frame's slice at a time (the
//! browser has no threads; on the web MNIST is downloaded first), with
//! progress and Stop, and the table of bits × granularity it finds — test
//! accuracy for the CNN, held-out loss for the transformer.

use dlsys_core::errors::Localized as _;
use dlsys_core::names::Named as _;
use dlsys_core::quant::{Calibration, QuantError};
use dlsys_core::quant::models::{JobPhase, Metric, ModelCell, ModelJob, ModelKind};
use dlsys_core::quant::ptq::{GRID_BITS, GranularityKind};
use dlsys_core::text::Lang;
use web_time::Instant;

use super::{Settings, TEXT, t};
use crate::kit::datasets::{self, Fetch};
use crate::kit::frame_budget::FrameBudget;
use crate::kit::theme;

/// What the learner asked for: the model, the table's group size and clip.
#[derive(Clone, Copy)]
struct Plan {
    kind: ModelKind,
    group: usize,
    calibration: Calibration,
}

/// The table a finished job found.
struct Found {
    plan: Plan,
    metric: Metric,
    fp32: f64,
    cells: Vec<ModelCell>,
}

#[derive(Default)]
pub struct ModelsRun {
    job: Option<(Plan, ModelJob)>,
    /// The CNN waits for MNIST's download (web build).
    waiting: Option<Plan>,
    budget: FrameBudget,
    found: Option<Found>,
    error: Option<QuantError>,
}

impl ModelsRun {
    pub fn is_running(&self) -> bool {
        self.job.is_some() || self.waiting.is_some()
    }

    fn start(&mut self, plan: Plan) {
        self.error = None;
        self.found = None;
        if plan.kind == ModelKind::Cnn && datasets::needs_fetch("mnist") {
            self.waiting = Some(plan);
            return;
        }
        self.begin(plan);
    }

    fn begin(&mut self, plan: Plan) {
        self.waiting = None;
        let run = plan.kind.run(1);
        let mnist = match plan.kind {
            ModelKind::Cnn => match datasets::load("mnist", 1) {
                Ok(data) => Some(data),
                Err(e) => {
                    self.error = Some(dlsys_core::nn::TrainError::from(e).into());
                    return;
                }
            },
            ModelKind::Transformer => None,
        };
        match ModelJob::new(&run, mnist, Some(plan.group), plan.calibration) {
            Ok(job) => self.job = Some((plan, job)),
            Err(e) => self.error = Some(e),
        }
    }

    pub fn logic(&mut self, ctx: &egui::Context) {
        if let Some(plan) = self.waiting {
            match datasets::fetch_mnist() {
                Fetch::Ready => self.begin(plan),
                Fetch::Failed(detail) => {
                    self.waiting = None;
                    self.error = Some(dlsys_core::nn::TrainError::from(dlsys_core::nn::DataError::Download { detail }).into());
                }
                _ => ctx.request_repaint_after(std::time::Duration::from_millis(100)),
            }
            return;
        }
        let Some((plan, job)) = &mut self.job else {
            self.budget.pause();
            return;
        };
        let until = Instant::now() + self.budget.begin();
        let mut outcome = Ok(false);
        while Instant::now() < until {
            if job.phase() == JobPhase::Done {
                outcome = Ok(true);
                break;
            }
            if let Err(e) = job.step() {
                outcome = Err(e);
                break;
            }
        }
        self.budget.end();
        match outcome {
            Ok(false) => ctx.request_repaint(),
            Ok(true) => {
                self.found = job.trained().map(|trained| Found {
                    plan: *plan,
                    metric: trained.metric(),
                    fp32: trained.fp32,
                    cells: job.cells().to_vec(),
                });
                self.job = None;
            }
            Err(e) => {
                self.error = Some(e);
                self.job = None;
            }
        }
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
        crate::kit::prose(ui, t(lang, "models.intro"));
        ui.horizontal_wrapped(|ui| {
            ui.label(t(lang, "models.model"));
            for kind in ModelKind::ALL {
                ui.radio_value(&mut s.ptq_model, kind, kind.name(lang));
            }
        });
        ui.horizontal_wrapped(|ui| {
            if self.is_running() {
                if ui.button(crate::kit::text().get(lang, "race.cancel")).clicked() {
                    self.job = None;
                    self.waiting = None;
                }
                ui.spinner();
                ui.label(self.progress(lang));
            } else if ui.button(t(lang, "models.run")).clicked() {
                self.start(Plan {
                    kind: s.ptq_model,
                    group: s.group,
                    calibration: s.table_calibration,
                });
            }
        });
        if let Some(e) = &self.error {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
        }
        if let Some(found) = &self.found {
            table_ui(ui, found, lang);
        }
    }

    fn progress(&self, lang: Lang) -> String {
        match self.job.as_ref().map(|(_, job)| job.phase()) {
            None => t(lang, "models.downloading").to_owned(),
            Some(JobPhase::Training { step, steps }) => TEXT.fill(lang, "models.training", &[("step", &step), ("steps", &steps)]),
            Some(JobPhase::Measuring { done, total }) => TEXT.fill(lang, "table.progress", &[("done", &done), ("total", &total)]),
            Some(JobPhase::Done) => String::new(),
        }
    }
}

fn table_ui(ui: &mut egui::Ui, found: &Found, lang: Lang) {
    let figure = |value: f64| match found.metric {
        Metric::Accuracy => format!("{:.1} %", 100.0 * value),
        Metric::Loss => format!("{value:.4}"),
    };
    let change = |delta: f64| match found.metric {
        Metric::Accuracy => format!("{:+.1}", 100.0 * delta),
        Metric::Loss => format!("{delta:+.4}"),
    };
    let key = match found.metric {
        Metric::Accuracy => "models.fp32_accuracy",
        Metric::Loss => "models.fp32_loss",
    };
    let plan = found.plan;
    ui.label(TEXT.fill(
        lang,
        key,
        &[
            ("model", &plan.kind.name(lang)),
            ("value", &figure(found.fp32)),
            ("calibration", &plan.calibration.name(lang)),
        ],
    ));
    let kinds = [GranularityKind::Tensor, GranularityKind::Channel, GranularityKind::Group(plan.group)];
    theme::sideways(ui, "quant_models", |ui| {
        egui::Grid::new("quant_models_grid").striped(true).show(ui, |ui| {
            let header = match found.metric {
                Metric::Accuracy => "models.col_accuracy",
                Metric::Loss => "models.col_loss",
            };
            crate::kit::column_header(ui, &TEXT, lang, header);
            for k in kinds {
                ui.strong(k.words().say(lang));
            }
            ui.end_row();
            let rows = GRID_BITS
                .into_iter()
                .map(|bits| (TEXT.fill(lang, "models.row", &[("bits", &bits)]), bits, false))
                .chain(std::iter::once((t(lang, "table.row_w8a8").to_owned(), 8, true)));
            for (label, bits, acts) in rows {
                ui.label(label);
                for k in kinds {
                    let cell = found
                        .cells
                        .iter()
                        .find(|c| c.bits == bits && c.granularity == k && c.int8_activations == acts);
                    match cell {
                        Some(c) => {
                            // Worse is lower accuracy or higher loss.
                            let worse = match found.metric {
                                Metric::Accuracy => -c.measured.delta,
                                Metric::Loss => c.measured.delta / found.fp32.max(f64::MIN_POSITIVE),
                            };
                            let colour = if worse > 0.1 {
                                theme::bad(ui.visuals())
                            } else if worse > 0.01 {
                                theme::warn(ui.visuals())
                            } else {
                                theme::good(ui.visuals())
                            };
                            let text = format!("{} ({})", figure(c.measured.value), change(c.measured.delta));
                            ui.colored_label(colour, text);
                        }
                        None => {
                            ui.label("–");
                        }
                    }
                }
                ui.end_row();
            }
        });
    });
    let scale = match found.metric {
        Metric::Accuracy => 100.0,
        Metric::Loss => 1.0,
    };
    let series: Vec<super::bits_plot::Series> = kinds
        .iter()
        .map(|k| {
            let points = GRID_BITS
                .iter()
                .rev()
                .filter_map(|&bits| {
                    found
                        .cells
                        .iter()
                        .find(|c| c.bits == bits && c.granularity == *k && !c.int8_activations)
                        .map(|c| [f64::from(bits), scale * c.measured.value])
                })
                .collect();
            (k.words().say(lang), points)
        })
        .collect();
    let y = match found.metric {
        Metric::Accuracy => t(lang, "plot.accuracy"),
        Metric::Loss => t(lang, "plot.loss"),
    };
    super::bits_plot::ui(ui, "quant_models_plot", t(lang, "plot.bits"), y, &series, (t(lang, "plot.fp32"), scale * found.fp32));
    crate::kit::prose(ui, t(lang, "models.note"));
}
