//! Training settings as people write them (the CLI's flags, a lesson's
//! fields) turned into a [`TrainConfig`], in one place for every face.

use super::TrainError;
use super::config::TrainConfig;
use super::layers::Activation;
use super::optimizers::OptimizerKind;
use super::scenarios::Scenario;
use crate::float::parse_number;
use crate::mixed::{LossScale, MasterWeights, Policy};

/// What to train and how, as text and numbers a person typed. The defaults
/// are the CLI's: digits, one hidden layer of 128, ReLU, momentum, fp32.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSettings {
    /// A data set name (see [`super::data::NAMES`]).
    pub dataset: String,
    /// Hidden layer sizes, comma-separated (`128,64`); empty for none.
    pub hidden: String,
    /// `relu`, `tanh` or `sigmoid`.
    pub activation: String,
    /// `sgd`, `momentum`, `nesterov` or `adam`.
    pub optimizer: String,
    pub lr: f64,
    pub batch: usize,
    pub epochs: u64,
    pub seed: u64,
    /// The compute and gradient format (`fp32`, `bf16`, `fp16`, `eXmY`, …).
    pub precision: String,
    /// `dynamic`, `none` or a fixed positive number.
    pub loss_scale: String,
    /// `fp32` (a master copy) or `same` (weights stored in `precision`).
    pub master_weights: String,
    /// The format of the optimizer state.
    pub optimizer_state: String,
    /// The format of the gradient-accumulation buffer.
    pub accumulate_in: String,
    /// Batches accumulated per optimizer step.
    pub micro_batches: u32,
    /// Multiplies the loss before backward; any number form (`2^-16`).
    pub loss_weight: String,
    /// One of the mixed-precision lesson's scenarios, by id: when set, it
    /// decides everything (on the digits).
    pub scenario: Option<String>,
}

impl Default for RunSettings {
    fn default() -> Self {
        Self {
            dataset: "digits".to_owned(),
            hidden: "128".to_owned(),
            activation: "relu".to_owned(),
            optimizer: "momentum".to_owned(),
            lr: 0.05,
            batch: 64,
            epochs: 10,
            seed: 1,
            precision: "fp32".to_owned(),
            loss_scale: "none".to_owned(),
            master_weights: "fp32".to_owned(),
            optimizer_state: "fp32".to_owned(),
            accumulate_in: "fp32".to_owned(),
            micro_batches: 1,
            loss_weight: "1".to_owned(),
            scenario: None,
        }
    }
}

fn scenario_ids() -> String {
    let ids: Vec<&str> = Scenario::ALL.iter().map(|s| s.id()).collect();
    ids.join(", ")
}

/// Reads comma-separated layer sizes; blank entries are skipped.
pub fn parse_hidden(text: &str) -> Result<Vec<usize>, TrainError> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>().map_err(|_| TrainError::LayerSize {
                value: s.to_owned(),
            })
        })
        .collect()
}

impl RunSettings {
    /// The data set name and the validated configuration these settings ask for.
    pub fn config(&self) -> Result<(String, TrainConfig), TrainError> {
        if let Some(id) = &self.scenario {
            let scenario = Scenario::ALL
                .into_iter()
                .find(|s| s.id() == id)
                .ok_or_else(|| TrainError::UnknownScenario {
                    name: id.clone(),
                    choices: scenario_ids(),
                })?;
            return Ok(("digits".to_owned(), scenario.config()));
        }
        let master = match self.master_weights.trim() {
            "fp32" => MasterWeights::Fp32,
            "same" => MasterWeights::Same,
            other => {
                return Err(TrainError::MasterWeights {
                    value: other.to_owned(),
                });
            }
        };
        let loss_scale = LossScale::by_name(&self.loss_scale)?;
        let policy = Policy {
            optimizer_state: self.optimizer_state.clone(),
            accumulation: self.accumulate_in.clone(),
            ..Policy::uniform(&self.precision, loss_scale, master)
        };
        let weight = parse_number(&self.loss_weight)
            .map_err(|reason| TrainError::LossWeightText { reason })?;
        let loss_weight = weight as f32;
        // The loss is computed in fp32: a weight fp32 cannot hold is refused
        // with what it would become, not as "not positive".
        if weight > 0.0 && !(loss_weight.is_finite() && loss_weight > 0.0) {
            return Err(TrainError::LossWeightRange {
                value: self.loss_weight.trim().to_owned(),
                becomes: if loss_weight.is_infinite() {
                    "inf"
                } else {
                    "0"
                }
                .to_owned(),
            });
        }
        let config = TrainConfig {
            hidden: parse_hidden(&self.hidden)?,
            activation: Activation::by_name(&self.activation)?,
            optimizer: OptimizerKind::by_name(&self.optimizer)?,
            lr: self.lr,
            batch_size: self.batch,
            epochs: self.epochs,
            seed: self.seed,
            policy,
            micro_batches: self.micro_batches,
            loss_weight,
            ..TrainConfig::default()
        };
        config.validate()?;
        Ok((self.dataset.clone(), config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_plain_fp32() {
        let (dataset, config) = RunSettings::default()
            .config()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dataset, "digits");
        assert_eq!(config, TrainConfig::default());
        assert!(config.policy.is_fp32());
    }

    #[test]
    fn every_field_reaches_the_config() {
        let settings = RunSettings {
            dataset: "xor".to_owned(),
            hidden: " 64, ,32 ".to_owned(),
            activation: "Tanh".to_owned(),
            optimizer: "adam".to_owned(),
            lr: 0.003,
            batch: 32,
            epochs: 3,
            seed: 7,
            precision: "fp16".to_owned(),
            loss_scale: "dynamic".to_owned(),
            master_weights: "same".to_owned(),
            optimizer_state: "bf16".to_owned(),
            accumulate_in: "fp16".to_owned(),
            micro_batches: 4,
            loss_weight: "2^-16".to_owned(),
            scenario: None,
        };
        let (dataset, config) = settings.config().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dataset, "xor");
        assert_eq!(config.hidden, vec![64, 32]);
        assert_eq!(config.activation, Activation::Tanh);
        assert_eq!(config.optimizer, OptimizerKind::adam());
        assert_eq!(
            (config.lr, config.batch_size, config.epochs, config.seed),
            (0.003, 32, 3, 7)
        );
        assert_eq!(config.policy.compute, "fp16");
        assert_eq!(config.policy.grads, "fp16");
        assert_eq!(config.policy.optimizer_state, "bf16");
        assert_eq!(config.policy.accumulation, "fp16");
        assert_eq!(config.policy.master_weights, MasterWeights::Same);
        assert_eq!(config.policy.loss_scale, LossScale::dynamic());
        assert_eq!(config.micro_batches, 4);
        assert_eq!(config.loss_weight, 2f32.powi(-16));
    }

    #[test]
    fn a_scenario_decides_everything() {
        let settings = RunSettings {
            scenario: Some("bf16-no-scaling".to_owned()),
            dataset: "xor".to_owned(),
            lr: -1.0,
            ..RunSettings::default()
        };
        let (dataset, config) = settings.config().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dataset, "digits");
        assert_eq!(config, Scenario::Bf16NoScaling.config());
    }

    #[test]
    fn bad_settings_say_what_is_wrong() {
        let bad = |settings: RunSettings| settings.config().map(|_| ()).unwrap_err();
        assert_eq!(
            bad(RunSettings {
                hidden: "64,abc".to_owned(),
                ..RunSettings::default()
            })
            .to_string(),
            "hidden layers: `abc` is not a layer size"
        );
        let err = bad(RunSettings {
            scenario: Some("fp64".to_owned()),
            ..RunSettings::default()
        });
        assert!(
            err.to_string()
                .starts_with("unknown scenario `fp64`; use one of fp32, ")
        );
        for settings in [
            RunSettings {
                activation: "gelu".to_owned(),
                ..RunSettings::default()
            },
            RunSettings {
                optimizer: "lion".to_owned(),
                ..RunSettings::default()
            },
            RunSettings {
                loss_scale: "-3".to_owned(),
                ..RunSettings::default()
            },
            RunSettings {
                master_weights: "fp16".to_owned(),
                ..RunSettings::default()
            },
            RunSettings {
                loss_weight: "much".to_owned(),
                ..RunSettings::default()
            },
            RunSettings {
                precision: "fp7".to_owned(),
                ..RunSettings::default()
            },
            RunSettings {
                micro_batches: 0,
                ..RunSettings::default()
            },
        ] {
            assert!(!bad(settings).to_string().is_empty());
        }
    }

    /// Values fp32 turns into 0 or inf are refused with what they become.
    #[test]
    fn scales_and_weights_must_fit_fp32() {
        let run = |loss_scale: &str, loss_weight: &str| {
            RunSettings {
                loss_scale: loss_scale.to_owned(),
                loss_weight: loss_weight.to_owned(),
                precision: "fp16".to_owned(),
                ..RunSettings::default()
            }
            .config()
            .map(|_| ())
            .map_err(|e| e.to_string())
        };
        for (scale, weight, becomes) in [
            ("1e300", "1", "loss scale `1e300` becomes inf in fp32"),
            ("1e-50", "1", "loss scale `1e-50` becomes 0 in fp32"),
            ("none", "1e-50", "loss weight `1e-50` becomes 0 in fp32"),
            ("none", "1e300", "loss weight `1e300` becomes inf in fp32"),
        ] {
            let err = run(scale, weight).err().unwrap_or_default();
            assert!(err.starts_with(becomes), "{scale} / {weight}: {err}");
        }
        assert!(run("2^127", "2^-126").is_ok());
        assert!(run("65536", "1").is_ok());
    }

    /// A divergence names the setting most likely at fault.
    #[test]
    fn a_divergence_blames_the_likely_setting() {
        let config = |precision: &str, weight: f32| TrainConfig {
            policy: Policy::uniform(precision, LossScale::None, MasterWeights::Fp32),
            loss_weight: weight,
            ..TrainConfig::default()
        };
        let why = |c: TrainConfig| c.divergence(0, 7, f64::INFINITY).to_string();
        assert!(why(config("fp32", 1.0)).contains("smaller learning rate"));
        assert!(why(config("fp32", 1e30)).contains("loss weight 1000000000000000000000000000000"));
        let e2m1 = why(config("e2m1", 1.0));
        assert!(e2m1.contains("e2m1 overflows above 3"), "{e2m1}");
        assert!(!e2m1.contains("smaller learning rate"), "{e2m1}");
    }
}
