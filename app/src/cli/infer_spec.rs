//! `dlsys-lab infer speculate`: speculative decoding on the text's tables
//! (acceptance, tokens per pass against the formula, the exactness test,
//! the best k for a draft's cost) and, with `--engine`, on the trained
//! character model, timed against it decoding alone. The same core values
//! as the inference lesson's section 6.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::float::show_sig;
use dlsys_core::inference::generate as textgen;
use dlsys_core::inference::spec_run::{self, EngineSpec};
use dlsys_core::inference::speculative::{self, SpecReport, SpecSettings};
use dlsys_core::text::args;

use super::infer::{SpecArgs, model_lines, train};
use super::output::{Report, emit, line};
use super::{CliError, say, t};

pub(super) fn speculate(a: &SpecArgs) -> Result<ExitCode, CliError> {
    let settings = SpecSettings {
        k: a.k,
        rounds: a.rounds,
        seed: a.seed,
    };
    let refused = |e: dlsys_core::inference::InferError| CliError::from(say(&e));
    settings.validate().map_err(refused)?;
    let draft_cost = speculative::check_cost(a.draft_cost).map_err(refused)?;
    let corpus = dlsys_core::nn::models::char_model::Corpus::shipped();
    let sampling = textgen::Sampling {
        temperature: a.temperature,
        seed: a.seed,
        ..textgen::Sampling::default()
    };
    // The tables' target, the bigram, is the engine's draft.
    let (target, draft) = speculative::text_pair(&corpus);
    let engine = if a.engine {
        // Bad input is refused before the training it would waste.
        textgen::check_request(&corpus, &a.prompt, a.tokens, textgen::CONTEXT, &sampling)
            .map_err(refused)?;
        let (model, held_out_loss) = train(a.steps, a.seed, a.json)?;
        let run = spec_run::speculate(
            &model, &corpus, &target, &a.prompt, a.tokens, a.k, &sampling,
        )
        .map_err(refused)?;
        Some(EngineCli {
            prompt: a.prompt.clone(),
            context: model.config.context,
            parameters: model.parameter_count(),
            held_out_loss,
            rounds_text: run
                .rounds
                .iter()
                .map(|r| corpus.decode(&r.emitted))
                .collect(),
            first_text: corpus.decode(&[run.first]),
            run,
        })
    } else {
        None
    };
    let context = speculative::text_context(&corpus);
    let report = speculative::measure(&target, &draft, context, &settings).map_err(refused)?;
    let best = speculative::best_k(report.alpha, draft_cost);
    emit(
        &SpecCli {
            report,
            draft_cost,
            best_k: best.0,
            best_speedup: best.1,
            engine,
        },
        a.json,
    )
}

#[derive(serde::Serialize)]
struct SpecCli {
    #[serde(flatten)]
    report: SpecReport,
    draft_cost: f64,
    best_k: u32,
    best_speedup: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    engine: Option<EngineCli>,
}

/// Speculation with the engine's model as the target.
#[derive(serde::Serialize)]
struct EngineCli {
    prompt: String,
    context: usize,
    parameters: usize,
    held_out_loss: f64,
    /// The prefill's token, then each round's tokens, as text.
    first_text: String,
    rounds_text: Vec<String>,
    #[serde(flatten)]
    run: EngineSpec,
}

impl EngineCli {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let r = &self.run;
        // The rounds apart: │ ends each target pass.
        let text = format!("{}│{}", self.first_text, self.rounds_text.join("│"));
        let model = (self.context, self.parameters, self.held_out_loss);
        model_lines(out, model, &self.prompt, &text.replace('\n', "¶"))?;
        line(out, "infer.spec.engine.rates", &args(&r.rate_fields()))?;
        line(out, "infer.spec.engine.time", &args(&r.time_fields()))?;
        if let Some(same) = r.same_as_plain {
            let verdict = t(if same {
                "infer.spec.engine.same"
            } else {
                "infer.spec.engine.differs"
            });
            line(out, "infer.spec.engine.greedy", &[("verdict", &verdict)])?;
        }
        Ok(())
    }
}

impl Report for SpecCli {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let r = &self.report;
        line(out, "infer.spec.rates", &args(&r.rate_fields()))?;
        for (key, test) in [
            ("infer.spec.exact", &r.exact),
            ("infer.spec.wrong", &r.wrong),
        ] {
            let verdict = if test.passes() {
                t("infer.spec.pass")
            } else {
                t("infer.spec.fail")
            };
            line(
                out,
                key,
                &[
                    ("stat", &format!("{:.1}", test.statistic)),
                    ("dof", &test.dof),
                    ("critical", &format!("{:.1}", test.critical)),
                    ("samples", &test.samples),
                    ("verdict", &verdict),
                ],
            )?;
        }
        line(
            out,
            "infer.spec.best",
            &[
                ("cost", &show_sig(self.draft_cost, 3)),
                ("alpha", &format!("{:.3}", r.alpha)),
                ("k", &self.best_k),
                ("speedup", &format!("{:.2}", self.best_speedup)),
            ],
        )?;
        match &self.engine {
            Some(engine) => engine.text(out),
            None => Ok(()),
        }
    }

    /// The run fails when the exact sampler fails its test, or the wrong
    /// one passes it (the test could not tell them apart), or a greedy
    /// speculation on the engine wrote another text than the target's.
    fn ok(&self) -> bool {
        let greedy_same = self.engine.as_ref().and_then(|e| e.run.same_as_plain) != Some(false);
        self.report.exact.passes() && !self.report.wrong.passes() && greedy_same
    }
}
