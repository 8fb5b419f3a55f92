//! Speculative decoding on the engine: the model section 1 trained is the
//! target, the text's bigram table the draft. The continuation streamed
//! with each round's tokens coloured, α and tokens per pass against the
//! formula, and the wall clock against the model decoding alone, with the
//! costs that explain it (`dlsys_core::inference::spec_run`).

use dlsys_core::errors::Localized as _;
use dlsys_core::inference::InferError;
use dlsys_core::inference::generate::Sampling;
use dlsys_core::inference::spec_run::{self, EngineSpec};
use dlsys_core::inference::speculative::Table;
use dlsys_core::nn::models::char_model::Corpus;
use dlsys_core::text::{Lang, args};

use super::generate_view::Trained;
use super::spec_view::rounds_ui;
use super::{Settings, TEXT, t};
use crate::kit::memo::Memo;
use crate::kit::theme;

/// What a speculation on the engine ran with.
#[derive(Clone, Debug, PartialEq)]
struct Key {
    serial: u64,
    k: u32,
    prompt: String,
    tokens: usize,
    sampling: Sampling,
}

#[derive(Default)]
pub struct Engine {
    memo: Memo<Key, Result<EngineSpec, InferError>>,
}

impl Engine {
    /// `bigram`: the text's bigram table, the draft here (the section's
    /// table target).
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        corpus: &Corpus,
        bigram: &Table,
        s: &Settings,
        trained: Option<&Trained>,
        lang: Lang,
    ) {
        ui.strong(t(lang, "spec.engine.heading"));
        ui.label(t(lang, "spec.engine.explain"));
        let Some(trained) = trained else {
            ui.weak(t(lang, "spec.engine.before"));
            return;
        };
        let asked = &trained.asked;
        let key = Key {
            serial: trained.serial,
            k: s.k,
            prompt: asked.prompt.clone(),
            tokens: asked.tokens,
            sampling: asked.sampling,
        };
        // A few milliseconds on this model (both generations, five times):
        // computed in the frame that asks.
        let run = self.memo.get(&key, |key| {
            spec_run::speculate(&trained.model, corpus, bigram, &key.prompt, key.tokens, key.k, &key.sampling)
        });
        let run = match run {
            Ok(run) => run,
            Err(e) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
                return;
            }
        };
        // The prompt and the prefill's token (not a round's) lead, weak.
        let lead = format!("{}|{}│", asked.prompt, corpus.decode(&[run.first]).replace('\n', "¶"));
        rounds_ui(ui, corpus, &lead, &run.rounds, lang);
        ui.label(TEXT.fill(lang, "spec.engine.rates", &args(&run.rate_fields())));
        let time = run.time_fields();
        ui.label(TEXT.fill(lang, "spec.engine.time", &args(&time)));
        // Why, from the measured cost: more than half a step over one.
        ui.label(t(lang, if run.pass_cost > 1.5 { "spec.engine.costly" } else { "spec.engine.cheap" }));
        ui.label(TEXT.fill(lang, "spec.engine.best", &args(&time)));
        if let Some(same) = run.same_as_plain {
            let (key, colour) =
                if same { ("spec.engine.same", theme::good(ui.visuals())) } else { ("spec.engine.differs", theme::bad(ui.visuals())) };
            ui.colored_label(colour, t(lang, key));
        }
        if cfg!(target_arch = "wasm32") {
            ui.weak(t(lang, "spec.engine.coarse_clock"));
        }
    }
}
