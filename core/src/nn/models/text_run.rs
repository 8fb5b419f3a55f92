//! Training the tiny character-level transformer as one value both views
//! poll: the lesson page a slice per frame, `dlsys-lab train --model
//! transformer` in a loop. One settings type with its limits, one schedule
//! (Adam at a constant rate), one seed rule (the seed draws the weights and
//! every step's windows), the same held-out score and continuation.

use crate::nn::TrainError;
use crate::nn::models::char_model::{self, CharModel, Corpus};
use crate::nn::optimizers::Optimizer;

/// The largest batch of windows (each window's graph holds ≈ 100 KB).
pub const MAX_BATCH: usize = 1024;
/// The most steps (a thousand take seconds).
pub const MAX_STEPS: u64 = 100_000;
/// A report every this many steps.
pub const REPORT_EVERY: u64 = 50;
/// The share of the text held out, never trained on.
pub const HELD_OUT_FRACTION: f64 = 0.1;
/// Windows scored for the training and held-out losses: fixed, so the
/// numbers compare.
const SCORED: usize = 32;
/// What the trained model continues, and how many characters it adds.
pub const PROMPT: &str = "Attention ";
pub const CONTINUATION: usize = 80;

/// What a text-model run is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct TextSettings {
    pub steps: u64,
    pub batch: usize,
    pub lr: f64,
    pub seed: u64,
    /// Characters of context the model learns positions for.
    pub context: usize,
}

impl Default for TextSettings {
    /// The lesson's run: 400 steps of 8 windows, Adam at 1e-2.
    fn default() -> Self {
        Self {
            steps: 400,
            batch: 8,
            lr: 1e-2,
            seed: 1,
            context: SHIPPED_CONTEXT,
        }
    }
}

/// The lessons' model's context: 32 characters.
pub const SHIPPED_CONTEXT: usize = 32;
/// The longest context a run learns: its windows must fit in the held-out
/// tenth of the shipped text (about 440 characters).
pub const MAX_CONTEXT: usize = 256;

impl TextSettings {
    /// Every limit, with the value refused.
    pub fn validate(&self) -> Result<(), TrainError> {
        super::check_step(self.lr, self.batch, MAX_BATCH)?;
        if self.steps == 0 || self.steps > MAX_STEPS {
            return Err(TrainError::ModelSteps {
                value: self.steps,
                max: MAX_STEPS,
            });
        }
        if !(2..=MAX_CONTEXT).contains(&self.context) {
            return Err(TrainError::ModelContext {
                value: self.context,
                max: MAX_CONTEXT,
            });
        }
        Ok(())
    }
}

/// The losses at a report (nats per character).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct TextReport {
    pub step: u64,
    /// The mean of the steps' own losses since the last report.
    pub train_loss: f64,
    pub held_out_loss: f64,
}

/// What the run reached.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TextResult {
    /// The last report, at the last step.
    pub report: TextReport,
    /// The loss on the scored training windows before and after training.
    pub start_loss: f64,
    pub end_loss: f64,
    pub held_out_loss: f64,
    pub prompt: String,
    /// The greedy continuation of [`PROMPT`].
    pub continuation: String,
}

/// What one [`TextRun::step`] finished, if anything.
#[derive(Clone, Debug, PartialEq)]
pub enum TextEvent {
    Report(TextReport),
    Finished(TextResult),
}

/// A text-model run in flight.
pub struct TextRun {
    settings: TextSettings,
    corpus: Corpus,
    train: Corpus,
    model: CharModel,
    optimizer: Optimizer<f32>,
    probe: Vec<(Vec<usize>, Vec<usize>)>,
    held_out: Vec<(Vec<usize>, Vec<usize>)>,
    step: u64,
    loss: f32,
    recent: Vec<f64>,
    start_loss: f64,
    done: bool,
}

impl TextRun {
    /// A run of `settings` on the shipped text.
    pub fn new(settings: TextSettings) -> Result<Self, TrainError> {
        settings.validate()?;
        let corpus = Corpus::shipped();
        let config = char_model::CharConfig {
            context: settings.context,
            ..char_model::shipped_config(&corpus)
        };
        let (train, held) = corpus.split(HELD_OUT_FRACTION);
        let probe = train.windows(SCORED, config.context, settings.seed ^ 0x9e37);
        let held_out = held.windows(SCORED, config.context, settings.seed ^ 0x5eed);
        let model = CharModel::new(config, settings.seed);
        let start_loss = f64::from(model.loss(&probe));
        Ok(Self {
            optimizer: char_model::optimizer(settings.lr),
            settings,
            corpus,
            train,
            model,
            probe,
            held_out,
            step: 0,
            loss: f32::NAN,
            recent: Vec::new(),
            start_loss,
            done: false,
        })
    }

    pub fn settings(&self) -> &TextSettings {
        &self.settings
    }

    pub fn model(&self) -> &CharModel {
        &self.model
    }

    pub fn corpus(&self) -> &Corpus {
        &self.corpus
    }

    /// Steps taken so far.
    pub fn steps_done(&self) -> u64 {
        self.step
    }

    /// The last step's loss (NaN before the first).
    pub fn last_loss(&self) -> f32 {
        self.loss
    }

    /// The scored training windows' loss before training.
    pub fn start_loss(&self) -> f64 {
        self.start_loss
    }

    /// The held-out windows' loss now.
    pub fn held_out_loss(&self) -> f64 {
        f64::from(self.model.loss(&self.held_out))
    }

    /// The held-out windows the loss above is measured on.
    pub fn held_out(&self) -> &[(Vec<usize>, Vec<usize>)] {
        &self.held_out
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// One training step (of `settings.batch` windows), and what it
    /// finished: a report every [`REPORT_EVERY`] steps, the result after the
    /// last. A loss that is not finite stops the run.
    pub fn step(&mut self) -> Result<Option<TextEvent>, TrainError> {
        if self.done {
            return Ok(None);
        }
        self.step += 1;
        let context = self.model.config.context;
        let seed = self
            .settings
            .seed
            .wrapping_mul(1_000_003)
            .wrapping_add(self.step);
        let windows = self.train.windows(self.settings.batch, context, seed);
        self.loss = self.model.train_step(&mut self.optimizer, &windows);
        if !self.loss.is_finite() {
            self.done = true;
            return Err(TrainError::TextDiverged { step: self.step });
        }
        self.recent.push(f64::from(self.loss));
        let last = self.step == self.settings.steps;
        if !last && !self.step.is_multiple_of(REPORT_EVERY) {
            return Ok(None);
        }
        let report = TextReport {
            step: self.step,
            train_loss: self.recent.iter().sum::<f64>() / self.recent.len().max(1) as f64,
            held_out_loss: self.held_out_loss(),
        };
        self.recent.clear();
        if last {
            self.done = true;
            let ids: Vec<usize> = PROMPT
                .chars()
                .filter_map(|c| self.corpus.vocab.binary_search(&c).ok())
                .collect();
            let generated = self.model.generate(&ids, CONTINUATION);
            return Ok(Some(TextEvent::Finished(TextResult {
                report,
                start_loss: self.start_loss,
                end_loss: f64::from(self.model.loss(&self.probe)),
                held_out_loss: report.held_out_loss,
                prompt: PROMPT.to_owned(),
                continuation: self.corpus.decode(&generated[ids.len()..]),
            })));
        }
        Ok(Some(TextEvent::Report(report)))
    }
}
