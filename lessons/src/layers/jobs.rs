//! The lesson's two trainings, run a slice at a time between frames (so the
//! page stays responsive, in the browser too): the CNN with its three
//! evaluations, and the tiny transformer.

use dlsys_core::nn::models::char_model::{self, CharModel, Corpus};
use dlsys_core::nn::models::cnn::{self, BnStats, Cnn};
use dlsys_core::nn::optimizers::Optimizer;
use dlsys_core::nn::{DataError, DataLoader, Dataset};
use dlsys_core::text::Lang;
use web_time::{Duration, Instant};

use super::TEXT;
use crate::datasets::{self, Fetch};
use crate::theme;

/// Work done per frame before handing the frame back.
const SLICE: Duration = Duration::from_millis(25);

/// Training images and the CNN's batch (as `core/tests/cnn.rs` trains it).
pub const CNN_IMAGES: usize = 2000;
const CNN_BATCH: usize = 16;
const CNN_LR: f64 = 3e-3;
const MODES: [BnStats; 3] = [BnStats::Running, BnStats::Batch, BnStats::Initial];

struct CnnRun {
    model: Cnn,
    optimizer: Optimizer<f32>,
    train: Dataset,
    test: Dataset,
    batches: Vec<Vec<usize>>,
    step: usize,
    loss: f32,
    /// Which evaluation mode is running, and the test images done in it.
    mode: usize,
    done: usize,
    correct: [usize; 3],
    started: Instant,
    seconds: f64,
}

/// The three accuracies, and what training took.
#[derive(Clone, Debug, PartialEq)]
pub struct CnnResult {
    pub accuracy: [f64; 3],
    pub seconds: f64,
    pub loss: f32,
    pub test: usize,
}

#[derive(Default)]
pub struct CnnJob {
    waiting_for_data: bool,
    run: Option<CnnRun>,
    pub result: Option<CnnResult>,
    error: Option<DataError>,
}

impl CnnJob {
    pub fn is_running(&self) -> bool {
        self.waiting_for_data || self.run.is_some()
    }

    fn start(&mut self) {
        self.result = None;
        self.error = None;
        self.waiting_for_data = true;
    }

    fn begin(&mut self) {
        let data = match datasets::load("mnist", 1) {
            Ok(data) => data,
            Err(err) => {
                self.error = Some(err);
                self.waiting_for_data = false;
                return;
            }
        };
        self.waiting_for_data = false;
        let (train, test) = data.split(datasets::TEST_FRACTION, 1);
        let loader = DataLoader {
            len: CNN_IMAGES.min(train.len()),
            batch_size: CNN_BATCH,
            shuffle: false,
            drop_last: false,
            seed: 1,
        };
        self.run = Some(CnnRun {
            model: Cnn::new(1),
            optimizer: cnn::optimizer(CNN_LR),
            train,
            test,
            batches: loader.batches(0),
            step: 0,
            loss: f32::NAN,
            mode: 0,
            done: 0,
            correct: [0; 3],
            started: Instant::now(),
            seconds: 0.0,
        });
    }

    pub fn logic(&mut self, ctx: &egui::Context) {
        if self.waiting_for_data {
            match datasets::fetch_mnist() {
                Fetch::Ready => self.begin(),
                Fetch::Failed(detail) => {
                    self.error = Some(DataError::Download { detail });
                    self.waiting_for_data = false;
                }
                _ => ctx.request_repaint_after(Duration::from_millis(100)),
            }
            return;
        }
        let Some(run) = &mut self.run else {
            return;
        };
        let until = Instant::now() + SLICE;
        while Instant::now() < until {
            if run.step < run.batches.len() {
                let (x, y) = run.train.gather(&run.batches[run.step]);
                run.loss = run.model.train_step(&mut run.optimizer, &x, &y).loss;
                run.step += 1;
                if run.step == run.batches.len() {
                    run.seconds = run.started.elapsed().as_secs_f64();
                }
                continue;
            }
            if run.mode == MODES.len() {
                break;
            }
            // Training mode goes one image at a time; the others in chunks.
            let chunk = if MODES[run.mode] == BnStats::Batch { 1 } else { 100 };
            let indices: Vec<usize> = (run.done..(run.done + 25 * chunk).min(run.test.len())).collect();
            for part in indices.chunks(chunk) {
                let (x, y) = run.test.gather(part);
                let predicted = run.model.logits(&x, y.len(), MODES[run.mode]).argmax_rows();
                run.correct[run.mode] += predicted.iter().zip(&y).filter(|(p, l)| p == l).count();
            }
            run.done += indices.len();
            if run.done >= run.test.len() {
                run.mode += 1;
                run.done = 0;
            }
        }
        if run.mode == MODES.len() {
            let n = run.test.len().max(1) as f64;
            self.result = Some(CnnResult {
                accuracy: run.correct.map(|c| c as f64 / n),
                seconds: run.seconds,
                loss: run.loss,
                test: run.test.len(),
            });
            self.run = None;
        } else {
            ctx.request_repaint();
        }
    }
}

pub fn cnn_ui(ui: &mut egui::Ui, job: &mut CnnJob, lang: Lang) {
    ui.label(egui::RichText::new(TEXT.get(lang, "cnn.heading")).strong());
    ui.label(TEXT.fill(
        lang,
        "cnn.explain",
        &[
            ("parameters", &Cnn::architecture_parameters()),
            ("images", &CNN_IMAGES),
            ("test", &job.result.as_ref().map_or(2000, |r| r.test)),
        ],
    ));
    ui.horizontal(|ui| {
        if job.is_running() {
            if ui.button(TEXT.get(lang, "cnn.stop")).clicked() {
                job.run = None;
                job.waiting_for_data = false;
            }
            ui.spinner();
            let line = match &job.run {
                None => TEXT.get(lang, "cnn.downloading").to_owned(),
                Some(run) if run.step < run.batches.len() => TEXT.fill(
                    lang,
                    "cnn.progress",
                    &[
                        ("step", &run.step),
                        ("steps", &run.batches.len()),
                        ("loss", &format!("{:.3}", run.loss)),
                    ],
                ),
                Some(run) => TEXT.fill(
                    lang,
                    "cnn.evaluating",
                    &[
                        ("mode", &TEXT.get(lang, &format!("cnn.mode.{:?}", MODES[run.mode.min(2)]))),
                        ("done", &run.done),
                        ("total", &run.test.len()),
                    ],
                ),
            };
            ui.label(line);
        } else if ui.button(TEXT.get(lang, "cnn.run")).clicked() {
            job.start();
        }
    });
    if let Some(err) = &job.error {
        use dlsys_core::errors::Localized as _;
        ui.colored_label(
            theme::bad(ui.visuals()),
            TEXT.fill(lang, "cnn.failed", &[("why", &err.message(lang))]),
        );
    }
    if let Some(result) = &job.result {
        egui::Grid::new("cnn_modes").striped(true).show(ui, |ui| {
            crate::column_header(ui, &TEXT, lang, "cnn.mode");
            crate::column_header(ui, &TEXT, lang, "cnn.accuracy");
            ui.end_row();
            for (mode, accuracy) in MODES.iter().zip(result.accuracy) {
                ui.label(TEXT.get(lang, &format!("cnn.mode.{mode:?}")));
                ui.monospace(format!("{:.2} %", 100.0 * accuracy));
                ui.end_row();
            }
        });
        ui.label(TEXT.fill(
            lang,
            "cnn.trained",
            &[("seconds", &format!("{:.1}", result.seconds)), ("loss", &format!("{:.3}", result.loss))],
        ));
    }
}

/// Steps the lesson trains the transformer for.
pub const TEXT_STEPS: usize = 400;
const TEXT_BATCH: usize = 8;
const TEXT_LR: f64 = 1e-2;

struct TextRun {
    optimizer: Optimizer<f32>,
    step: usize,
    loss: f32,
}

/// The transformer, its training in flight and what it reached.
pub struct TextJob {
    pub corpus: Corpus,
    pub train: Corpus,
    pub held: Corpus,
    pub model: CharModel,
    run: Option<TextRun>,
    /// (start, end, held-out) losses, once trained.
    pub losses: Option<(f32, f32, f32)>,
    pub last_loss: f32,
    /// The greedy continuation of [`PROMPT`], once trained.
    pub continuation: Option<String>,
    /// The heatmaps' weights for the current model (computed when first shown).
    pub weights: Option<Vec<dlsys_core::autograd::Tensor<f32>>>,
}

/// What the trained model continues.
pub const PROMPT: &str = "Attention ";

impl Default for TextJob {
    fn default() -> Self {
        let corpus = Corpus::shipped();
        let (train, held) = corpus.split(0.1);
        let model = CharModel::new(char_model::shipped_config(&corpus), 1);
        Self {
            corpus,
            train,
            held,
            model,
            run: None,
            losses: None,
            last_loss: f32::NAN,
            continuation: None,
            weights: None,
        }
    }
}

impl TextJob {
    pub fn is_running(&self) -> bool {
        self.run.is_some()
    }

    pub fn step(&self) -> usize {
        self.run.as_ref().map_or(0, |r| r.step)
    }

    pub fn start(&mut self) {
        self.model = CharModel::new(self.model.config, 1);
        self.losses = None;
        self.continuation = None;
        self.weights = None;
        self.run = Some(TextRun {
            optimizer: char_model::optimizer(TEXT_LR),
            step: 0,
            loss: f32::NAN,
        });
    }

    fn probe(&self) -> Vec<(Vec<usize>, Vec<usize>)> {
        self.train.windows(16, self.model.config.context, 999)
    }

    pub fn logic(&mut self, ctx: &egui::Context) {
        let Some(mut run) = self.run.take() else {
            return;
        };
        if run.step == 0 {
            self.losses = Some((self.model.loss(&self.probe()), f32::NAN, f32::NAN));
        }
        let until = Instant::now() + SLICE;
        while Instant::now() < until && run.step < TEXT_STEPS {
            let windows = self.train.windows(TEXT_BATCH, self.model.config.context, run.step as u64);
            run.loss = self.model.train_step(&mut run.optimizer, &windows);
            run.step += 1;
        }
        self.last_loss = run.loss;
        if run.step >= TEXT_STEPS {
            let end = self.model.loss(&self.probe());
            let held = self.model.loss(&self.held.windows(16, self.model.config.context, 7));
            let start = self.losses.map_or(f32::NAN, |l| l.0);
            self.losses = Some((start, end, held));
            let ids: Vec<usize> = PROMPT
                .chars()
                .filter_map(|c| self.corpus.vocab.binary_search(&c).ok())
                .collect();
            let generated = self.model.generate(&ids, 40);
            self.continuation = Some(self.corpus.decode(&generated[ids.len()..]));
            self.weights = None;
        } else {
            self.run = Some(run);
            ctx.request_repaint();
        }
    }
}
