//! Training an MLP live: a few batches per frame, never blocking the UI.

use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::nn::settings::RunSettings;
use dlsys_core::nn::{Activation, DataError, Dataset, Status, TrainConfig, TrainError, Trainer};
use dlsys_core::text::Lang;
use egui::{Color32, Rect, Stroke, StrokeKind, Vec2};
use egui_plot::{Heatmap, Line, Plot, PlotPoint, PlotPoints, Points};
use serde::{Deserialize, Serialize};

use super::TEXT;
use crate::kit::{datasets, figure, theme};
use crate::kit::theme::ReadableAxes as _;

/// What the learner set (persisted; the trained weights are not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrainSettings {
    pub dataset: String,
    pub hidden: String,
    pub activation: Activation,
    pub optimizer: String,
    pub lr: f64,
    pub batch: usize,
    pub epochs: u64,
    pub seed: u64,
}

impl Default for TrainSettings {
    fn default() -> Self {
        Self {
            dataset: "spirals".to_owned(),
            hidden: "64,64".to_owned(),
            activation: Activation::Tanh,
            optimizer: "adam".to_owned(),
            lr: 0.01,
            batch: 32,
            epochs: 100,
            seed: 1,
        }
    }
}

impl TrainSettings {
    /// The configuration, through the same settings reader as the CLI's.
    fn config(&self) -> Result<TrainConfig, TrainError> {
        let settings = RunSettings {
            dataset: self.dataset.clone(),
            hidden: self.hidden.clone(),
            activation: self.activation.name().to_owned(),
            optimizer: self.optimizer.clone(),
            lr: self.lr,
            batch: self.batch,
            epochs: self.epochs,
            seed: self.seed,
            ..RunSettings::default()
        };
        let (_, config) = settings.config()?;
        Ok(config)
    }
}

/// The epochs a data set starts with: MNIST's 8,000 images take about a
/// second an epoch natively, so 10; the small 2-D sets 100.
pub fn default_epochs(dataset: &str) -> u64 {
    if dataset.starts_with("mnist") { 10 } else { 100 }
}

/// A wrong test prediction: (test index, predicted, true).
type Misclassified = (usize, usize, usize);

/// Training in progress (not persisted).
#[derive(Default)]
pub struct TrainRun {
    trainer: Option<Trainer>,
    running: bool,
    error: Option<TrainError>,
    initial_loss: f64,
    boundary: Option<(usize, Vec<f64>)>,
    /// Settings to start with once a data set has downloaded (web).
    waiting: Option<TrainSettings>,
    mistakes: Option<(usize, Vec<Misclassified>)>,
    /// Wall time spent running (pauses excluded), for the ETA.
    elapsed: web_time::Duration,
    last_tick: Option<web_time::Instant>,
    budget: crate::kit::frame_budget::FrameBudget,
}

impl TrainRun {
    pub fn is_running(&self) -> bool {
        self.running || self.waiting.is_some()
    }

    /// The self-test's run: one epoch on MNIST, started as the Train button
    /// starts a run (the learner's settings stay as they are).
    pub fn self_test_start(&mut self) {
        let quick = TrainSettings {
            dataset: "mnist".to_owned(),
            hidden: "32".to_owned(),
            optimizer: "sgd".to_owned(),
            lr: 0.1,
            batch: 64,
            epochs: 1,
            ..TrainSettings::default()
        };
        self.start(&quick);
    }

    /// How the last run ended, for the self-test.
    pub fn outcome(&self) -> Option<crate::SelfTestResult> {
        if let Some(err) = &self.error {
            return Some(Err(crate::SelfTestFailure(err.to_string())));
        }
        let trainer = self.trainer.as_ref()?;
        match &trainer.status {
            Status::Running => None,
            Status::Diverged { .. } => Some(Err(crate::SelfTestFailure("the loss diverged".to_owned()))),
            Status::Finished => {
                let accuracy = trainer.history.last().map_or(0.0, |h| h.test_accuracy);
                let detail = format!(
                    "{} epoch(s) on {} examples, test accuracy {accuracy:.3}",
                    trainer.epoch,
                    trainer.train.len()
                );
                if accuracy > 0.5 { Ok(detail) } else { Err(crate::SelfTestFailure(detail)) }.into()
            }
        }
    }

    /// Trains for a slice of the frame budget.
    pub fn logic(&mut self, ctx: &egui::Context) {
        if let Some(settings) = &self.waiting {
            match datasets::fetch_mnist() {
                datasets::Fetch::Ready => {
                    let settings = settings.clone();
                    self.start(&settings);
                }
                datasets::Fetch::Failed(detail) => {
                    self.waiting = None;
                    self.error = Some(DataError::Download { detail }.into());
                }
                datasets::Fetch::Pending | datasets::Fetch::NotStarted => ctx.request_repaint(),
            }
            return;
        }
        let Some(trainer) = &mut self.trainer else {
            return;
        };
        if !self.running {
            self.last_tick = None;
            self.budget.pause();
            return;
        }
        let now = web_time::Instant::now();
        if let Some(last) = self.last_tick {
            // A long gap (the window hidden) is not training time.
            self.elapsed += (now - last).min(web_time::Duration::from_millis(500));
        }
        self.last_tick = Some(now);
        self.budget.run(|slice| trainer.run_for(slice));
        if trainer.status != Status::Running {
            self.running = false;
        }
        ctx.request_repaint();
    }

    fn start(&mut self, settings: &TrainSettings) {
        *self = Self::default();
        if datasets::needs_fetch(&settings.dataset)
            && datasets::fetch_mnist() != datasets::Fetch::Ready
        {
            self.waiting = Some(settings.clone());
            return;
        }
        let result = settings.config().and_then(|config| {
            let data = datasets::load(&settings.dataset, settings.seed)?;
            let (train, test) = data.split(datasets::TEST_FRACTION, settings.seed);
            Trainer::new(config, train, test)
        });
        match result {
            Ok(trainer) => {
                self.initial_loss = trainer.evaluate(&trainer.test).0;
                self.trainer = Some(trainer);
                self.running = true;
            }
            Err(err) => self.error = Some(err),
        }
    }
}

/// While training: the last epoch's accuracies and the time left, from
/// the time this run has trained so far.
fn live_line(trainer: &Trainer, elapsed: web_time::Duration, busy: bool, lang: Lang) -> Option<String> {
    if trainer.status != Status::Running {
        return None;
    }
    let pct = |a: f64| format!("{:.1} %", a * 100.0);
    let accuracy = trainer.history.last().map_or_else(
        || TEXT.get(lang, "train.live_first").to_owned(),
        |h| {
            TEXT.fill(
                lang,
                "train.live_acc",
                &[("train", &pct(h.train_accuracy)), ("test", &pct(h.test_accuracy))],
            )
        },
    );
    let p = trainer.progress();
    let eta = if busy && p > 0.01 {
        let left = elapsed.as_secs_f64() * (1.0 - p) / p;
        TEXT.fill(lang, "train.eta", &[("eta", &dlsys_core::memory::show_seconds(left))])
    } else {
        String::new()
    };
    Some(format!("{accuracy}{eta}"))
}

pub fn trainer_ui(ui: &mut egui::Ui, settings: &mut TrainSettings, run: &mut TrainRun, lang: Lang) {
    let t = |key| TEXT.get(lang, key);
    let busy = run.running;
    ui.add_enabled_ui(!busy, |ui| {
        ui.horizontal_wrapped(|ui| {
            let before = settings.dataset.clone();
            crate::kit::choice_of_names(ui, "train_dataset", t("train.dataset"), &mut settings.dataset, &datasets::NAMES);
            if settings.dataset != before {
                settings.epochs = default_epochs(&settings.dataset);
            }
            let label = ui.label(t("train.hidden"));
            ui.add(
                egui::TextEdit::singleline(&mut settings.hidden)
                    .hint_text(t("train.hidden_hint"))
                    .desired_width(70.0),
            )
            .labelled_by(label.id);
            crate::kit::choice(ui, "train_activation", t("train.activation"), &mut settings.activation, Activation::ALL, |&a| a.name());
            let optimizers = &dlsys_core::nn::OptimizerKind::NAMES;
            crate::kit::choice_of_names(ui, "train_optimizer", t("train.optimizer"), &mut settings.optimizer, optimizers);
        });
        ui.horizontal_wrapped(|ui| {
            let label = ui.label(t("train.lr"));
            ui.add(
                egui::DragValue::new(&mut settings.lr)
                    .speed(0.001)
                    .range(1e-6..=10.0)
                    .max_decimals(6),
            )
            .labelled_by(label.id);
            let label = ui.label(t("train.batch"));
            ui.add(egui::DragValue::new(&mut settings.batch).range(1..=4096))
                .labelled_by(label.id);
            let label = ui.label(t("train.epochs"));
            ui.add(egui::DragValue::new(&mut settings.epochs).range(1..=1000))
                .labelled_by(label.id);
            let label = ui.label(t("train.seed"));
            ui.add(egui::DragValue::new(&mut settings.seed))
                .labelled_by(label.id);
        });
    });
    ui.horizontal(|ui| {
        let has = run
            .trainer
            .as_ref()
            .is_some_and(|tr| tr.status == Status::Running);
        if busy {
            if ui.button(t("train.pause")).clicked() {
                run.running = false;
            }
        } else if has {
            if ui.button(t("train.resume")).clicked() {
                run.running = true;
            }
        } else if ui.button(t("train.start")).clicked() {
            run.start(settings);
        }
        if ui
            .add_enabled(
                run.trainer.is_some() || run.error.is_some(),
                egui::Button::new(t("train.reset")),
            )
            .clicked()
        {
            *run = TrainRun::default();
        }
        if let Some(trainer) = &run.trainer {
            let progress = trainer.progress() as f32;
            ui.add(
                egui::ProgressBar::new(progress)
                    .desired_width(220.0)
                    .text(TEXT.fill(
                        lang,
                        "train.progress",
                        &[
                            ("epoch", &trainer.epoch),
                            ("epochs", &trainer.config.epochs),
                        ],
                    )),
            );
            if let Some(line) = live_line(trainer, run.elapsed, busy, lang) {
                ui.label(line);
            }
        }
    });
    if run.waiting.is_some() {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(t("train.downloading"));
        });
    }
    if let Some(err) = &run.error {
        ui.colored_label(
            theme::bad(ui.visuals()),
            TEXT.fill(lang, "train.error", &[("error", &err.message(lang))]),
        );
    }
    let Some(trainer) = &run.trainer else {
        return;
    };
    let visuals = ui.visuals().clone();
    ui.label(TEXT.fill(
        lang,
        "train.summary",
        &[
            ("data", &trainer.train.name.replace(" (train)", "")),
            ("train", &trainer.train.len()),
            ("test", &trainer.test.len()),
            ("features", &trainer.train.features),
            ("classes", &trainer.train.classes),
            ("params", &trainer.model.parameter_count()),
        ],
    ));
    let classes = trainer.train.classes;
    ui.weak(TEXT.fill(
        lang,
        "train.initial_loss",
        &[
            ("loss", &show_sig(run.initial_loss, 4)),
            ("classes", &classes),
            ("ln", &show_sig((classes as f64).ln(), 4)),
        ],
    ));
    match &trainer.status {
        Status::Diverged { epoch, step, loss } => {
            // The message names the setting most likely at fault.
            let why = trainer.config.divergence(*epoch, *step, *loss);
            ui.colored_label(theme::bad(&visuals), why.message(lang));
        }
        Status::Finished => {
            let acc = trainer.history.last().map_or(f64::NAN, |h| h.test_accuracy);
            ui.colored_label(
                theme::good(&visuals),
                TEXT.fill(
                    lang,
                    "train.done",
                    &[("acc", &format!("{:.2} %", acc * 100.0))],
                ),
            );
        }
        Status::Running => {}
    }

    ui.columns(2, |cols| {
        cols[0].label(t("train.loss_plot"));
        let stride = (trainer.losses.len() / 1500).max(1);
        let loss_points: Vec<[f64; 2]> = trainer
            .losses
            .iter()
            .step_by(stride)
            .map(|(s, l)| [*s as f64, *l])
            .collect();
        Plot::new("train_loss")
            .height(200.0)
            .x_axis_label(TEXT.get(lang, "plot.step"))
            .readable_x()
            .readable_y()
            .allow_scroll(false)
            .show(&mut cols[0], |plot| {
                plot.line(
                    Line::new(TEXT.get(lang, "plot.loss"), PlotPoints::from(loss_points))
                        .color(theme::series(&visuals, 0)),
                );
            });
        cols[1].label(t("train.acc_plot"));
        let train_acc: Vec<[f64; 2]> = trainer
            .history
            .iter()
            .map(|h| [h.epoch as f64, h.train_accuracy])
            .collect();
        let test_acc: Vec<[f64; 2]> = trainer
            .history
            .iter()
            .map(|h| [h.epoch as f64, h.test_accuracy])
            .collect();
        Plot::new("train_accuracy")
            .height(200.0)
            .x_axis_label(TEXT.get(lang, "plot.epoch"))
            .readable_x()
            .readable_y()
            .include_y(0.0)
            .include_y(1.0)
            .allow_scroll(false)
            .show(&mut cols[1], |plot| {
                plot.line(
                    Line::new(t("train.train_acc"), PlotPoints::from(train_acc))
                        .color(theme::series(&visuals, 1)),
                );
                plot.line(
                    Line::new(t("train.test_acc"), PlotPoints::from(test_acc))
                        .color(theme::series(&visuals, 2)),
                );
            });
        figure::legend(
            &mut cols[1],
            "train_accuracy",
            &[
                figure::Key::line(t("train.train_acc"), theme::series(&visuals, 1)),
                figure::Key::line(t("train.test_acc"), theme::series(&visuals, 2)),
            ],
        );
    });

    let epoch = trainer.history.len();
    if trainer.train.features == 2 {
        if run.boundary.as_ref().is_none_or(|(e, _)| *e != epoch) {
            run.boundary = Some((epoch, boundary_grid(trainer)));
        }
        if let Some((_, grid)) = &run.boundary {
            boundary_ui(ui, trainer, grid, &visuals, lang);
        }
    } else if trainer.train.image.is_some() {
        if run.mistakes.as_ref().is_none_or(|(e, _)| *e != epoch) {
            let predictions = trainer.predict(&trainer.test);
            let wrong: Vec<(usize, usize, usize)> = predictions
                .iter()
                .zip(&trainer.test.y)
                .enumerate()
                .filter(|(_, (p, y))| p != y)
                .take(24)
                .map(|(i, (p, y))| (i, *p, *y))
                .collect();
            run.mistakes = Some((epoch, wrong));
        }
        if let Some((_, wrong)) = &run.mistakes {
            mistakes_ui(ui, &trainer.test, wrong, &visuals, lang);
        }
    }
}

const GRID: usize = 64;
const EXTENT: f64 = 1.6;

/// The model's probability of class 1 over a grid covering the data.
fn boundary_grid(trainer: &Trainer) -> Vec<f64> {
    let mut points = Vec::with_capacity(GRID * GRID * 2);
    for row in 0..GRID {
        // Heatmap rows run from the top of the plot down.
        let y = EXTENT - (row as f64 + 0.5) / GRID as f64 * 2.0 * EXTENT;
        for col in 0..GRID {
            let x = -EXTENT + (col as f64 + 0.5) / GRID as f64 * 2.0 * EXTENT;
            points.extend([
                x as f32 + 0.5 * f32::from(u8::from(trainer.train.name.starts_with("moons"))),
                y as f32,
            ]);
        }
    }
    let logits = trainer.model.logits(&points, GRID * GRID);
    let probs = dlsys_core::autograd::softmax_rows(&logits);
    (0..GRID * GRID)
        .map(|i| f64::from(probs.row(i).get(1).copied().unwrap_or(0.0)))
        .collect()
}

fn boundary_ui(
    ui: &mut egui::Ui,
    trainer: &Trainer,
    grid: &[f64],
    visuals: &egui::Visuals,
    lang: Lang,
) {
    ui.label(TEXT.get(lang, "train.boundary"));
    let shift = if trainer.train.name.starts_with("moons") {
        0.5
    } else {
        0.0
    };
    let (c0, c1) = (theme::series(visuals, 0), theme::series(visuals, 1));
    let side = 2.0 * EXTENT as f32;
    // Square, so that equal data units on both axes span the data, not a
    // wide strip of empty plane beside it.
    let px = ui.available_width().min(320.0);
    Plot::new("train_boundary")
        .width(px)
        .height(px)
        .data_aspect(1.0)
        .allow_scroll(false)
        .show(ui, |plot| {
            plot.heatmap(
                Heatmap::new(grid.to_vec(), GRID)
                    .range(0.0, 1.0)
                    .palette(&[
                        c0.gamma_multiply(0.35),
                        visuals.extreme_bg_color,
                        c1.gamma_multiply(0.35),
                    ])
                    .at(PlotPoint::new(-EXTENT + shift, -EXTENT))
                    .size(side, side)
                    .show_labels(false),
            );
            for class in 0..2 {
                let pts: Vec<[f64; 2]> = (0..trainer.test.len())
                    .filter(|i| trainer.test.y[*i] == class)
                    .map(|i| {
                        let e = trainer.test.example(i);
                        [f64::from(e[0]), f64::from(e[1])]
                    })
                    .collect();
                plot.points(
                    Points::new(TEXT.fill(lang, "plot.class", &[("class", &class)]), PlotPoints::from(pts))
                        .radius(2.5)
                        .color(if class == 0 { c0 } else { c1 }),
                );
            }
        });
    let keys: Vec<figure::Key> = [c0, c1]
        .into_iter()
        .enumerate()
        .map(|(class, color)| {
            figure::Key::points(TEXT.fill(lang, "plot.class", &[("class", &class)]), color)
        })
        .collect();
    figure::legend(ui, "train_boundary", &keys);
}

fn mistakes_ui(
    ui: &mut egui::Ui,
    test: &Dataset,
    wrong: &[(usize, usize, usize)],
    visuals: &egui::Visuals,
    lang: Lang,
) {
    ui.label(TEXT.get(lang, "train.mistakes"));
    if wrong.is_empty() {
        ui.weak(TEXT.get(lang, "train.no_mistakes"));
        return;
    }
    let Some((rows, cols)) = test.image else {
        return;
    };
    ui.horizontal_wrapped(|ui| {
        for (index, predicted, truth) in wrong {
            ui.vertical(|ui| {
                let size = Vec2::splat(48.0);
                let (rect, response) = ui.allocate_exact_size(size, egui::Sense::hover());
                let painter = ui.painter_at(rect);
                let pixel = Vec2::new(rect.width() / cols as f32, rect.height() / rows as f32);
                for (i, v) in test.example(*index).iter().enumerate() {
                    let (r, c) = (i / cols, i % cols);
                    let level = (v.clamp(0.0, 1.0) * 255.0) as u8;
                    let color = if visuals.dark_mode {
                        Color32::from_gray(level)
                    } else {
                        Color32::from_gray(255 - level)
                    };
                    let min = rect.min + Vec2::new(c as f32 * pixel.x, r as f32 * pixel.y);
                    painter.rect_filled(Rect::from_min_size(min, pixel), 0.0, color);
                }
                painter.rect_stroke(
                    rect,
                    0.0,
                    Stroke::new(1.0, visuals.weak_text_color()),
                    StrokeKind::Outside,
                );
                let caption = format!("{predicted} / {truth}");
                response.on_hover_text(&caption);
                ui.small(caption);
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_give_a_message_not_a_trainer() {
        let mut run = TrainRun::default();
        let settings = TrainSettings {
            hidden: "64,abc".to_owned(),
            ..Default::default()
        };
        run.start(&settings);
        assert!(run.trainer.is_none());
        assert!(
            run.error
                .as_ref()
                .is_some_and(|e| e.to_string().contains("abc"))
        );
        let settings = TrainSettings {
            dataset: "cifar".to_owned(),
            ..Default::default()
        };
        run.start(&settings);
        assert!(
            run.error
                .as_ref()
                .is_some_and(|e| e.to_string().contains("cifar"))
        );
    }

    #[test]
    fn training_runs_in_slices_and_finishes() {
        let mut run = TrainRun::default();
        let settings = TrainSettings {
            dataset: "xor".to_owned(),
            hidden: "8".to_owned(),
            epochs: 2,
            ..Default::default()
        };
        run.start(&settings);
        assert!(run.is_running());
        let ctx = egui::Context::default();
        for _ in 0..1000 {
            run.logic(&ctx);
            if !run.is_running() {
                break;
            }
        }
        let trainer = run.trainer.as_ref().map(|t| t.status.clone());
        assert_eq!(trainer, Some(Status::Finished));
    }
}
