//! The lesson's two trainings, the core's runs (`cnn_run`, `text_run`)
//! stepped a slice at a time between frames (so the page stays responsive,
//! in the browser too; the slice from `kit::frame_budget`): the CNN with its three evaluations, and the tiny
//! transformer.

use dlsys_core::autograd::Tensor;
use dlsys_core::errors::Localized as _;
use dlsys_core::nn::TrainError;
use dlsys_core::nn::models::char_model::{self, CharModel, Corpus};
use dlsys_core::nn::models::cnn::Cnn;
use dlsys_core::nn::models::cnn_run::{self, CnnEvent, CnnPhase, CnnResult, CnnRun, CnnSettings};
use dlsys_core::nn::models::text_run::{self, TextEvent, TextResult, TextRun, TextSettings};
use dlsys_core::text::Lang;
use web_time::{Duration, Instant};

use super::TEXT;
use crate::kit::datasets::{self, Fetch};
use crate::kit::frame_budget::FrameBudget;
use crate::kit::theme;

/// The CNN's run: waiting for MNIST, training, or done.
#[derive(Default)]
pub struct CnnJob {
    waiting_for_data: bool,
    run: Option<CnnRun>,
    started: Option<Instant>,
    /// Seconds the training steps took (evaluation not counted).
    train_seconds: f64,
    pub result: Option<(CnnResult, f64)>,
    error: Option<TrainError>,
    budget: FrameBudget,
    /// The self-test's run: a few hundred images, trained and tested.
    quick: bool,
}

/// Images the self-test's CNN trains on and is tested on.
const QUICK_IMAGES: usize = 256;

impl CnnJob {
    pub fn is_running(&self) -> bool {
        self.waiting_for_data || self.run.is_some()
    }

    pub fn start(&mut self) {
        self.result = None;
        self.error = None;
        self.waiting_for_data = true;
        self.quick = false;
    }

    /// The self-test's run: the button's path on [`QUICK_IMAGES`] images.
    pub fn start_quick(&mut self) {
        self.start();
        self.quick = true;
    }

    /// How the last run ended, for the self-test (`None` while it runs).
    pub fn outcome(&self) -> Option<crate::SelfTestResult> {
        if let Some(err) = &self.error {
            return Some(Err(crate::SelfTestFailure(format!("CNN: {err}"))));
        }
        if self.is_running() {
            return None;
        }
        let (result, _) = self.result.as_ref()?;
        let detail = format!("CNN: {} test images, accuracy {:.3}", result.test, result.accuracy[0]);
        Some(if result.accuracy[0] > 0.3 { Ok(detail) } else { Err(crate::SelfTestFailure(detail)) })
    }

    pub fn stop(&mut self) {
        self.run = None;
        self.waiting_for_data = false;
    }

    fn begin(&mut self) {
        self.waiting_for_data = false;
        let mut settings = CnnSettings::default();
        if self.quick {
            settings.images = Some(QUICK_IMAGES);
        }
        let quick = self.quick;
        let run = datasets::load("mnist", settings.seed)
            .map_err(TrainError::from)
            .and_then(|data| {
                let (train, mut test) = data.split(datasets::TEST_FRACTION, settings.seed);
                if quick {
                    test = test.first(QUICK_IMAGES);
                }
                CnnRun::new(settings, train, test)
            });
        match run {
            Ok(run) => {
                self.run = Some(run);
                self.started = Some(Instant::now());
            }
            Err(err) => self.error = Some(err),
        }
    }

    pub fn logic(&mut self, ctx: &egui::Context) {
        if self.waiting_for_data {
            match datasets::fetch_mnist() {
                Fetch::Ready => self.begin(),
                Fetch::Failed(detail) => {
                    self.error = Some(dlsys_core::nn::DataError::Download { detail }.into());
                    self.waiting_for_data = false;
                }
                _ => ctx.request_repaint_after(Duration::from_millis(100)),
            }
            return;
        }
        let Some(run) = &mut self.run else {
            self.budget.pause();
            return;
        };
        let until = Instant::now() + self.budget.begin();
        while Instant::now() < until {
            let training = matches!(run.phase(), CnnPhase::Training { .. });
            match run.step() {
                Ok(None | Some(CnnEvent::Epoch(_))) => {}
                Ok(Some(CnnEvent::Finished(result))) => {
                    self.result = Some((result, self.train_seconds));
                    self.run = None;
                    return;
                }
                Err(err) => {
                    self.error = Some(err);
                    self.run = None;
                    return;
                }
            }
            if training && !matches!(run.phase(), CnnPhase::Training { .. }) {
                self.train_seconds = self.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
            }
        }
        self.budget.end();
        ctx.request_repaint();
    }
}

pub fn cnn_ui(ui: &mut egui::Ui, job: &mut CnnJob, lang: Lang) {
    crate::kit::anchor(&ui.label(egui::RichText::new(TEXT.get(lang, "cnn.heading")).strong()), "cnn");
    ui.label(TEXT.fill(
        lang,
        "cnn.explain",
        &[
            ("parameters", &Cnn::architecture_parameters()),
            ("images", &CnnSettings::default().images.unwrap_or_default()),
            ("test", &job.result.as_ref().map_or(2000, |r| r.0.test)),
        ],
    ));
    ui.horizontal(|ui| {
        if job.is_running() {
            if ui.button(TEXT.get(lang, "cnn.stop")).clicked() {
                job.stop();
            }
            ui.spinner();
            let line = match job.run.as_ref().map(CnnRun::phase) {
                None => TEXT.get(lang, "cnn.downloading").to_owned(),
                Some(CnnPhase::Training { step, steps, loss, .. }) => TEXT.fill(
                    lang,
                    "cnn.progress",
                    &[("step", &step), ("steps", &steps), ("loss", &format!("{loss:.3}"))],
                ),
                Some(CnnPhase::Evaluating { mode, done, total }) => TEXT.fill(
                    lang,
                    "cnn.evaluating",
                    &[
                        ("mode", &TEXT.get(lang, &format!("cnn.mode.{:?}", cnn_run::MODES[mode]))),
                        ("done", &done),
                        ("total", &total),
                    ],
                ),
                Some(CnnPhase::Done) => String::new(),
            };
            ui.label(line);
        } else if ui.button(TEXT.get(lang, "cnn.run")).clicked() {
            job.start();
        }
    });
    if let Some(err) = &job.error {
        ui.colored_label(
            theme::bad(ui.visuals()),
            TEXT.fill(lang, "cnn.failed", &[("why", &err.message(lang))]),
        );
    }
    if let Some((result, seconds)) = &job.result {
        egui::Grid::new("cnn_modes").striped(true).show(ui, |ui| {
            crate::kit::column_header(ui, &TEXT, lang, "cnn.mode");
            crate::kit::column_header(ui, &TEXT, lang, "cnn.accuracy");
            ui.end_row();
            for (mode, accuracy) in cnn_run::MODES.iter().zip(result.accuracy) {
                ui.label(TEXT.get(lang, &format!("cnn.mode.{mode:?}")));
                ui.monospace(format!("{:.2} %", 100.0 * accuracy));
                ui.end_row();
            }
        });
        ui.label(TEXT.fill(
            lang,
            "cnn.trained",
            &[("seconds", &format!("{seconds:.1}")), ("loss", &format!("{:.3}", result.train_loss))],
        ));
    }
}

/// The transformer: a run in flight or done (its model drawn in the
/// heatmaps), or, before the first, a fresh model.
pub struct TextJob {
    pub settings: TextSettings,
    run: Option<TextRun>,
    running: bool,
    fresh: CharModel,
    /// The text the heatmaps show: the held-out tenth.
    pub held: Corpus,
    pub result: Option<TextResult>,
    pub error: Option<TrainError>,
    /// The heatmaps' weights for the model shown (recomputed at each report).
    pub weights: Option<Vec<Tensor<f32>>>,
    budget: FrameBudget,
}

impl Default for TextJob {
    fn default() -> Self {
        let settings = TextSettings::default();
        let corpus = Corpus::shipped();
        let (_, held) = corpus.split(text_run::HELD_OUT_FRACTION);
        Self {
            settings,
            run: None,
            running: false,
            fresh: CharModel::new(char_model::shipped_config(&corpus), settings.seed),
            held,
            result: None,
            error: None,
            weights: None,
            budget: FrameBudget::default(),
        }
    }
}

impl TextJob {
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// The model the page shows: the run's, or a fresh one before the first.
    pub fn model(&self) -> &CharModel {
        self.run.as_ref().map_or(&self.fresh, TextRun::model)
    }

    /// Steps taken and the last step's loss.
    pub fn progress(&self) -> (u64, f32) {
        self.run.as_ref().map_or((0, f32::NAN), |r| (r.steps_done(), r.last_loss()))
    }

    pub fn start(&mut self) {
        self.start_with(self.settings);
    }

    /// The self-test's run: the button's path, a few steps.
    pub fn start_quick(&mut self) {
        self.start_with(TextSettings {
            steps: 20,
            ..self.settings
        });
    }

    /// How the last run ended, for the self-test (`None` while it runs).
    pub fn outcome(&self) -> Option<crate::SelfTestResult> {
        if let Some(err) = &self.error {
            return Some(Err(crate::SelfTestFailure(format!("transformer: {err}"))));
        }
        if self.running {
            return None;
        }
        let result = self.result.as_ref()?;
        let detail = format!(
            "transformer: {} steps, loss {:.3} -> {:.3}",
            result.report.step, result.start_loss, result.end_loss
        );
        Some(if result.end_loss < result.start_loss { Ok(detail) } else { Err(crate::SelfTestFailure(detail)) })
    }

    fn start_with(&mut self, settings: TextSettings) {
        self.result = None;
        self.error = None;
        match TextRun::new(settings) {
            Ok(run) => {
                self.run = Some(run);
                self.running = true;
                self.weights = None;
            }
            Err(err) => self.error = Some(err),
        }
    }

    /// Stops training; the model stays as far as it got.
    pub fn stop(&mut self) {
        self.running = false;
    }

    pub fn logic(&mut self, ctx: &egui::Context) {
        let (true, Some(run)) = (self.running, &mut self.run) else {
            self.budget.pause();
            return;
        };
        let until = Instant::now() + self.budget.begin();
        while Instant::now() < until {
            match run.step() {
                Ok(None) => {}
                Ok(Some(TextEvent::Report(_))) => self.weights = None,
                Ok(Some(TextEvent::Finished(result))) => {
                    self.result = Some(result);
                    self.weights = None;
                    self.running = false;
                    return;
                }
                Err(err) => {
                    self.error = Some(err);
                    self.running = false;
                    return;
                }
            }
        }
        self.budget.end();
        ctx.request_repaint();
    }
}
