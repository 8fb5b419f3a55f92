//! Generation with the engine's character model: trained here at a context
//! of 256 (the text run, a slice of steps per frame), then the prompt
//! continued with the KV cache and without it, each step timed; the text,
//! the time per step against the position, and what the cache holds.

use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::inference::InferError;
use dlsys_core::inference::generate::{self, CONTEXT, Generation, MAX_TEMPERATURE, Sampling};
use dlsys_core::memory::show_seconds;
use dlsys_core::nn::TrainError;
use dlsys_core::nn::models::char_model::{CharModel, Corpus};
use dlsys_core::nn::models::text_run::{MAX_STEPS, TextEvent, TextRun};
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};
use web_time::Instant;

use super::{TEXT, t};
use crate::kit::frame_budget::FrameBudget;
use crate::kit::theme;

/// What the learner asks for; survives restarts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GenSettings {
    pub prompt: String,
    pub tokens: usize,
    pub steps: u64,
    pub seed: u64,
    pub sampling: Sampling,
}

impl Default for GenSettings {
    fn default() -> Self {
        Self {
            prompt: generate::DEFAULT_PROMPT.to_owned(),
            tokens: generate::DEFAULT_TOKENS,
            steps: generate::DEFAULT_STEPS,
            seed: 1,
            sampling: Sampling::default(),
        }
    }
}

impl GenSettings {
    pub fn clamped(&mut self) {
        self.tokens = self.tokens.clamp(1, CONTEXT - 1);
        self.steps = self.steps.clamp(1, MAX_STEPS);
        let d = Sampling::default();
        let sm = &mut self.sampling;
        sm.temperature = if sm.temperature.is_finite() { sm.temperature.clamp(0.0, MAX_TEMPERATURE) } else { d.temperature };
        sm.top_p = if sm.top_p.is_finite() { sm.top_p.clamp(0.01, 1.0) } else { d.top_p };
        sm.top_k = sm.top_k.min(4096);
        if self.prompt.chars().count() > generate::MAX_PROMPT {
            self.prompt = self.prompt.chars().take(generate::MAX_PROMPT).collect();
        }
    }
}

/// Characters the continuation streams in per frame.
const STREAM_PER_FRAME: usize = 4;

/// Both generations from the same trained model.
pub struct Pair {
    pub cached: Generation,
    pub uncached: Generation,
    pub held_out_loss: f64,
}

/// Why a run stopped short.
enum Failed {
    Train(TrainError),
    Generate(InferError),
}

/// The last model trained here, for the speculation section to use as
/// its target.
pub struct Trained {
    /// Counts the models trained, so a new one is told from the last.
    pub serial: u64,
    pub model: CharModel,
    /// What it was trained and asked to generate with.
    pub asked: GenSettings,
}

#[derive(Default)]
pub struct Job {
    run: Option<TextRun>,
    /// What the run generates once trained.
    asked: GenSettings,
    pair: Option<Pair>,
    /// Characters of the continuation shown so far: it streams in, a few a
    /// frame, with the cache's blocks filling beside it.
    shown: usize,
    trained: Option<Trained>,
    failed: Option<Failed>,
    budget: FrameBudget,
}

impl Job {
    pub fn is_running(&self) -> bool {
        self.run.is_some()
    }

    /// Whether the text is still streaming in.
    pub fn is_streaming(&self) -> bool {
        self.pair.as_ref().is_some_and(|p| self.shown < p.cached.text.chars().count())
    }

    pub fn trained(&self) -> Option<&Trained> {
        self.trained.as_ref()
    }

    /// Trains a new model for `s`, then generates (in [`Job::logic`]). Bad
    /// input is refused before any training.
    pub fn start(&mut self, s: &GenSettings) {
        self.pair = None;
        self.failed = None;
        let checked = generate::check_request(&Corpus::shipped(), &s.prompt, s.tokens, CONTEXT, &s.sampling);
        if let Err(e) = checked {
            self.failed = Some(Failed::Generate(e));
            return;
        }
        match TextRun::new(generate::model_settings(s.steps, s.seed)) {
            Ok(run) => {
                self.run = Some(run);
                self.asked = s.clone();
            }
            Err(e) => self.failed = Some(Failed::Train(e)),
        }
    }

    pub fn stop(&mut self) {
        self.run = None;
        self.budget.pause();
    }

    pub fn logic(&mut self, ctx: &egui::Context) {
        if self.is_streaming() {
            self.shown += STREAM_PER_FRAME;
            ctx.request_repaint();
        }
        let Some(run) = &mut self.run else {
            self.budget.pause();
            return;
        };
        let until = Instant::now() + self.budget.begin();
        let mut trained = None;
        while Instant::now() < until {
            match run.step() {
                Ok(Some(TextEvent::Finished(result))) => {
                    trained = Some(result.held_out_loss);
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    self.failed = Some(Failed::Train(e));
                    break;
                }
            }
        }
        self.budget.end();
        ctx.request_repaint();
        if self.failed.is_some() {
            self.run = None;
            return;
        }
        let Some(held_out_loss) = trained else { return };
        // Both generations in one frame: a few hundred milliseconds at most.
        let (model, corpus, s) = (run.model(), run.corpus(), &self.asked);
        let both = generate::generate(model, corpus, &s.prompt, s.tokens, true, &s.sampling).and_then(|cached| {
            generate::generate(model, corpus, &s.prompt, s.tokens, false, &s.sampling)
                .map(|uncached| Pair { cached, uncached, held_out_loss })
        });
        self.shown = 0;
        match both {
            Ok(pair) => self.pair = Some(pair),
            Err(e) => self.failed = Some(Failed::Generate(e)),
        }
        let serial = self.trained.as_ref().map_or(0, |t| t.serial + 1);
        self.trained = Some(Trained { serial, model: model.clone(), asked: s.clone() });
        self.run = None;
    }

    /// For the self-test: the two texts agree.
    pub fn outcome(&self) -> Option<crate::SelfTestResult> {
        if let Some(failed) = &self.failed {
            let why = match failed {
                Failed::Train(e) => e.to_string(),
                Failed::Generate(e) => e.to_string(),
            };
            return Some(Err(crate::SelfTestFailure(why)));
        }
        let pair = self.pair.as_ref()?;
        let detail = format!(
            "generated {} characters, the same with and without the cache: {}",
            pair.cached.text.chars().count(),
            pair.cached.text == pair.uncached.text
        );
        Some(if pair.cached.text == pair.uncached.text { Ok(detail) } else { Err(crate::SelfTestFailure(detail)) })
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, s: &mut GenSettings, lang: Lang) {
        ui.label(t(lang, "generate.explain"));
        ui.horizontal_wrapped(|ui| {
            let label = ui.label(t(lang, "generate.prompt"));
            ui.add(egui::TextEdit::singleline(&mut s.prompt).desired_width(180.0)).labelled_by(label.id);
            crate::kit::number_field(ui, t(lang, "generate.tokens"), &mut s.tokens, 1..=CONTEXT - 1, 1.0);
            crate::kit::number_field(ui, t(lang, "generate.steps"), &mut s.steps, 1..=MAX_STEPS, 5.0);
            crate::kit::number_field(ui, t(lang, "generate.seed"), &mut s.seed, 0..=u64::from(u32::MAX), 0.2);
        });
        ui.horizontal_wrapped(|ui| {
            let sm = &mut s.sampling;
            crate::kit::number_field(ui, t(lang, "generate.temperature"), &mut sm.temperature, 0.0..=MAX_TEMPERATURE, 0.01);
            crate::kit::number_field(ui, t(lang, "generate.top_k"), &mut sm.top_k, 0..=4096, 0.2);
            crate::kit::number_field(ui, t(lang, "generate.top_p"), &mut sm.top_p, 0.01..=1.0, 0.005);
            crate::kit::number_field(ui, t(lang, "generate.sample_seed"), &mut sm.seed, 0..=u64::from(u32::MAX), 0.2);
        });
        ui.horizontal_wrapped(|ui| {
            if let Some(run) = &self.run {
                if ui.button(t(lang, "generate.stop")).clicked() {
                    self.stop();
                    return;
                }
                let (done, total) = (run.steps_done(), run.settings().steps);
                let label = TEXT.fill(lang, "generate.training", &[("step", &done), ("steps", &total)]);
                ui.add(egui::ProgressBar::new(done as f32 / total.max(1) as f32).desired_width(260.0).text(label));
            } else if ui.button(t(lang, "generate.run")).clicked() {
                self.start(s);
            }
        });
        match &self.failed {
            Some(Failed::Train(e)) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            }
            Some(Failed::Generate(e)) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
            }
            None => {}
        }
        let Some(pair) = &self.pair else {
            if self.run.is_none() && self.failed.is_none() {
                ui.weak(t(lang, "generate.before"));
            }
            return;
        };
        let (c, u) = (&pair.cached, &pair.uncached);
        ui.label(TEXT.fill(lang, "generate.model", &[("loss", &format!("{:.3}", pair.held_out_loss))]));
        let text: Vec<char> = c.text.chars().collect();
        let shown = self.shown.min(text.len());
        let streamed: String = text[..shown].iter().collect();
        ui.add(egui::Label::new(egui::RichText::new(format!("{}|{streamed}", c.prompt)).monospace()).wrap());
        // The cache holds the prompt and every shown character but the last
        // (the next step appends it).
        let prompt: Vec<char> = c.prompt.chars().collect();
        super::kv_grid_view::ui(ui, &prompt, &text, shown.saturating_sub(1), lang);
        let same = if c.text == u.text { "generate.same" } else { "generate.differ" };
        ui.label(t(lang, same));
        step_plot(ui, pair, lang);
        ui.label(TEXT.fill(
            lang,
            "generate.totals",
            &[
                ("cached", &show_seconds(c.total_s())),
                ("uncached", &show_seconds(u.total_s())),
                ("ratio", &show_sig(u.total_s() / c.total_s().max(1e-12), 3)),
                ("bytes", &c.cache_bytes),
                ("tokens", &c.cache_tokens),
            ],
        ));
        if cfg!(target_arch = "wasm32") {
            ui.weak(t(lang, "generate.coarse_clock"));
        }
    }
}

/// Seconds per decode step against the position it generates (log₁₀ on
/// y): flat with the cache, growing without.
fn step_plot(ui: &mut egui::Ui, pair: &Pair, lang: Lang) {
    use egui_plot::{Line, Plot, PlotPoints};
    let visuals = ui.visuals().clone();
    let start = pair.cached.prompt.chars().count() as f64 + 1.0;
    // A step the clock saw as 0 s (a browser's clock is coarse) has no
    // place on a log scale: left out.
    let series = |g: &Generation| -> Vec<[f64; 2]> {
        g.step_s
            .iter()
            .enumerate()
            .filter(|(_, s)| **s > 0.0)
            .map(|(i, s)| [start + i as f64, (s * 1e6).log10()])
            .collect()
    };
    let lines = [
        (t(lang, "plot.with_cache"), series(&pair.cached), theme::series(&visuals, 0)),
        (t(lang, "plot.without_cache"), series(&pair.uncached), theme::series(&visuals, 1)),
    ];
    ui.label(t(lang, "plot.step_heading"));
    Plot::new("infer_generate_plot")
        .height(200.0)
        .x_axis_label(t(lang, "axis.position"))
        .y_axis_label(t(lang, "axis.microseconds"))
        .y_grid_spacer(theme::decade_grid())
        .y_axis_formatter(|mark, _| show_sig(10f64.powf(mark.value), 3))
        // At least 10 µs to 100 µs, so two marks are labelled.
        .include_y(1.0)
        .include_y(2.0)
        .allow_scroll(false)
        .show(ui, |plot| {
            for (name, points, colour) in &lines {
                plot.line(Line::new(*name, PlotPoints::from(points.clone())).color(*colour));
            }
        });
    let keys: Vec<_> = lines.iter().map(|(name, _, colour)| crate::kit::figure::Key::line(*name, *colour)).collect();
    crate::kit::figure::legend(ui, "infer_generate_plot", &keys);
}
