//! `dlsys-lab quant --fp8-train`: the engine's MLP trained with its matmul
//! inputs in fp32, bf16 and TE's HYBRID fp8 (current and delayed scaling)
//! on the same seed, and a stale delayed scale saturating and overflowing.

use std::io::{self, Write};
use std::process::ExitCode;

use super::output::{Report, emit, line};
use super::quant::{MLP_EPOCHS, QuantArgs, fail, pct};
use super::{CliError, tf};

/// The MLP trained under each recipe on the same seed, and the stale-scale
/// hazard on one tensor.
pub fn run(args: &QuantArgs) -> Result<ExitCode, CliError> {
    use dlsys_core::quant::fp8::{Fp8Scaling, stale_scale};
    use dlsys_core::quant::fp8_train::{self, Fp8TrainSettings, Recipe};
    let recipes = [
        Recipe::Fp32,
        Recipe::Bf16,
        Recipe::Hybrid(Fp8Scaling::Current),
        Recipe::Hybrid(Fp8Scaling::Delayed { history: 16 }),
    ];
    let mut runs = Vec::new();
    for recipe in recipes {
        let settings = Fp8TrainSettings {
            recipe,
            dataset: args.mlp_dataset(),
            epochs: args.epochs.unwrap_or(MLP_EPOCHS),
            seed: args.seed,
            ..Fp8TrainSettings::default()
        };
        let id = recipe.id();
        let run = fp8_train::train(&settings, &mut |epoch, of| {
            eprintln!(
                "{}",
                tf(
                    "quant.fp8.progress",
                    &[("recipe", &id), ("epoch", &epoch), ("of", &of)]
                )
            );
            true
        })
        .map_err(|e| fail(&e))?;
        runs.push(run);
    }
    // A tensor that grew fourfold since its history: 0.25 … 4 against an amax of 1.
    let grown: Vec<f32> = (1..=16).map(|i| i as f32 / 4.0).collect();
    let stale = [
        stale_scale(&grown, 1.0, &dlsys_core::float::Format::fp8_e4m3(), 0),
        stale_scale(&grown, 1.0, &dlsys_core::float::Format::fp8_e5m2(), 0),
    ];
    emit(
        &Fp8Report {
            epochs: args.epochs.unwrap_or(MLP_EPOCHS),
            seed: args.seed,
            runs,
            stale,
        },
        args.json,
    )
}

#[derive(serde::Serialize)]
struct Fp8Report {
    epochs: u64,
    seed: u64,
    runs: Vec<dlsys_core::quant::fp8_train::Fp8Run>,
    stale: [dlsys_core::quant::fp8::StaleScale; 2],
}

impl Report for Fp8Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "quant.fp8.heading",
            &[("epochs", &self.epochs), ("seed", &self.seed)],
        )?;
        for r in &self.runs {
            line(
                out,
                "quant.fp8.row",
                &[
                    ("recipe", &r.recipe.id()),
                    (
                        "loss",
                        &format!("{:.4}", r.loss.last().copied().unwrap_or(f64::NAN)),
                    ),
                    (
                        "accuracy",
                        &pct(r.accuracy.last().copied().unwrap_or(f64::NAN)),
                    ),
                    ("values", &(r.forward.values + r.backward.values)),
                    ("saturated", &(r.forward.saturated + r.backward.saturated)),
                    (
                        "underflowed",
                        &(r.forward.underflowed + r.backward.underflowed),
                    ),
                ],
            )?;
        }
        for s in &self.stale {
            line(
                out,
                "quant.fp8.stale",
                &[
                    ("format", &s.format),
                    ("scale", &s.saturating.scale),
                    ("amax", &s.saturating.amax),
                    ("history", &s.history_amax),
                    ("count", &s.saturating.values),
                    ("saturated", &s.saturating.saturated),
                    ("overflowed", &s.overflowing.overflowed),
                ],
            )?;
        }
        Ok(())
    }
}
