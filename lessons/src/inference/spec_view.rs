//! Speculative decoding on the shipped text (bigram target, unigram draft):
//! a few rounds streamed with each token coloured by how it came (a kept
//! proposal, the resample after a rejection, the target's bonus token), the
//! measured acceptance and tokens per pass against the formula, and the
//! chi-squared test that passes exact resampling and fails the mistake.

use dlsys_core::errors::Localized as _;
use dlsys_core::inference::InferError;
use dlsys_core::inference::spec_run::SpecRound;
use dlsys_core::inference::speculative::{self, ChiSquared, MAX_K, Resample, SpecReport, SpecSettings, Table};
use dlsys_core::nn::models::char_model::Corpus;
use dlsys_core::text::Lang;
use rand::SeedableRng as _;

use super::generate_view::Trained;
use super::{Settings, TEXT, t};
use crate::kit::memo::Memo;
use crate::kit::theme;

/// Rounds the page streams as coloured text.
const SHOWN_ROUNDS: usize = 12;

/// The text's models and the last measurement, for the settings it ran with.
pub struct Cache {
    corpus: Corpus,
    target: Table,
    draft: Table,
    memo: Memo<SpecSettings, Result<SpecReport, InferError>>,
    engine: super::spec_engine_view::Engine,
}

impl Default for Cache {
    fn default() -> Self {
        let corpus = Corpus::shipped();
        let (target, draft) = speculative::text_pair(&corpus);
        Self { corpus, target, draft, memo: Memo::default(), engine: Default::default() }
    }
}

impl Cache {
    fn settings(s: &Settings) -> SpecSettings {
        SpecSettings { k: s.k, seed: s.spec_seed, ..SpecSettings::default() }
    }

    pub fn compute(&mut self, s: &Settings) -> &Result<SpecReport, InferError> {
        let Self { corpus, target, draft, memo, .. } = self;
        memo.get(&Self::settings(s), |spec| {
            speculative::measure(target, draft, speculative::text_context(corpus), spec)
        })
    }

    /// For the self-test: exact passes, the mistake fails.
    pub fn outcome(&self) -> Option<crate::SelfTestResult> {
        Some(match self.memo.last()? {
            Ok(r) => {
                let detail = format!(
                    "α {:.3}, {:.3} tokens a pass (formula {:.3}); χ² exact {:.1}, wrong {:.1}, critical {:.1}",
                    r.alpha, r.tokens_per_pass, r.formula, r.exact.statistic, r.wrong.statistic, r.exact.critical
                );
                if r.exact.passes() && !r.wrong.passes() { Ok(detail) } else { Err(crate::SelfTestFailure(detail)) }
            }
            Err(e) => Err(crate::SelfTestFailure(e.to_string())),
        })
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, s: &mut Settings, trained: Option<&Trained>, lang: Lang) {
        ui.label(t(lang, "spec.explain"));
        ui.horizontal_wrapped(|ui| {
            crate::kit::number_field(ui, t(lang, "spec.k"), &mut s.k, 1..=MAX_K, 0.1);
            crate::kit::number_field(ui, t(lang, "spec.seed"), &mut s.spec_seed, 0..=u64::from(u32::MAX), 0.2);
        });
        self.stream_ui(ui, s, lang);
        let report = match self.compute(s) {
            Ok(r) => r.clone(),
            Err(e) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
                return;
            }
        };
        ui.label(TEXT.fill(lang, "spec.rates", &dlsys_core::text::args(&report.rate_fields())));
        let context = match self.corpus.vocab.get(report.context).copied().unwrap_or(' ') {
            ' ' => t(lang, "spec.space").to_owned(),
            c => format!("“{c}”"),
        };
        ui.label(TEXT.fill(lang, "spec.test", &[("context", &context), ("samples", &report.exact.samples)]));
        test_line(ui, t(lang, "spec.exact"), &report.exact, lang);
        test_line(ui, t(lang, "spec.wrong"), &report.wrong, lang);
        best_k_ui(ui, report.alpha, &mut s.draft_cost, lang);
        ui.add_space(6.0);
        self.engine.ui(ui, &self.corpus, &self.target, s, trained, lang);
    }

    /// A few rounds from the test's context, each token coloured by how it
    /// was emitted.
    fn stream_ui(&self, ui: &mut egui::Ui, s: &Settings, lang: Lang) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(s.spec_seed);
        let mut prev = speculative::text_context(&self.corpus);
        let rounds: Vec<SpecRound> = (0..SHOWN_ROUNDS)
            .map(|_| {
                let (emitted, kept) = speculative::round(&self.target, &self.draft, prev, s.k, Resample::Residual, &mut rng);
                prev = emitted.last().copied().unwrap_or(prev);
                SpecRound { proposed: s.k, kept, emitted }
            })
            .collect();
        rounds_ui(ui, &self.corpus, "", &rounds, lang);
        let kept: u32 = rounds.iter().map(|r| r.kept).sum();
        ui.label(TEXT.fill(lang, "spec.stream", &[("rounds", &rounds.len()), ("kept", &kept), ("k", &s.k)]));
    }
}

/// Rounds as one line of text after `lead` (weak), each token coloured by
/// how it came: a kept proposal, the token drawn after a rejection, the
/// target's bonus after all were kept; │ ends each round (one target
/// pass). Then the colours' legend.
pub(super) fn rounds_ui(ui: &mut egui::Ui, corpus: &Corpus, lead: &str, rounds: &[SpecRound], lang: Lang) {
    let visuals = ui.visuals().clone();
    let font = egui::TextStyle::Monospace.resolve(ui.style());
    let format = |color| egui::TextFormat { font_id: font.clone(), color, ..Default::default() };
    let weak = format(visuals.weak_text_color());
    let shown = |token: usize| match corpus.vocab.get(token).copied().unwrap_or('?') {
        '\n' => '¶',
        c => c,
    };
    let mut job = egui::text::LayoutJob::default();
    // Quoted: the text is the model's output, not the page's prose.
    job.append(&format!("“{lead}"), 0.0, weak.clone());
    for round in rounds {
        for (i, &token) in round.emitted.iter().enumerate() {
            let colour = if (i as u32) < round.kept {
                theme::good(&visuals)
            } else if round.kept < round.proposed {
                theme::warn(&visuals)
            } else {
                theme::series(&visuals, 0)
            };
            job.append(&shown(token).to_string(), 0.0, format(colour));
        }
        job.append("│", 0.0, weak.clone());
    }
    job.append("”", 0.0, weak);
    job.wrap.max_width = ui.available_width();
    ui.label(job);
    crate::kit::figure::legend(
        ui,
        "infer_spec_stream",
        &[
            crate::kit::figure::Key::fill(t(lang, "spec.kept"), theme::good(&visuals)),
            crate::kit::figure::Key::fill(t(lang, "spec.resampled"), theme::warn(&visuals)),
            crate::kit::figure::Key::fill(t(lang, "spec.bonus"), theme::series(&visuals, 0)),
        ],
    );
}

fn test_line(ui: &mut egui::Ui, name: &str, test: &ChiSquared, lang: Lang) {
    let (verdict, colour) = if test.passes() {
        (t(lang, "spec.pass"), theme::good(ui.visuals()))
    } else {
        (t(lang, "spec.fail"), theme::bad(ui.visuals()))
    };
    ui.horizontal_wrapped(|ui| {
        ui.label(TEXT.fill(
            lang,
            "spec.chi",
            &[
                ("name", &name),
                ("stat", &format!("{:.1}", test.statistic)),
                ("dof", &test.dof),
                ("critical", &format!("{:.1}", test.critical)),
            ],
        ));
        ui.colored_label(colour, verdict);
    });
}

/// The k that speeds decoding most at acceptance `alpha` when a draft
/// step costs `cost` target steps (the learner sets the cost).
pub(super) fn best_k_ui(ui: &mut egui::Ui, alpha: f64, cost: &mut f64, lang: Lang) {
    ui.horizontal_wrapped(|ui| {
        crate::kit::number_field(ui, t(lang, "spec.draft_cost"), cost, 0.0..=MAX_DRAFT_COST, 0.005);
        let (k, speedup) = speculative::best_k(alpha, *cost);
        ui.label(TEXT.fill(
            lang,
            "spec.best",
            &[("alpha", &format!("{alpha:.3}")), ("k", &k), ("speedup", &format!("{speedup:.2}"))],
        ));
    });
}

/// The costliest draft the page takes, in target steps.
pub const MAX_DRAFT_COST: f64 = 2.0;
