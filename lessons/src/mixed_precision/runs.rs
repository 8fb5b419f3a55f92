//! Two trainers side by side: a precision policy and its fp32 baseline,
//! stepped a slice of each frame so the UI never stalls.

use dlsys_core::errors::Localized as _;
use dlsys_core::float::{Format, Rounding, show_sig};
use dlsys_core::mixed::{LossScale, MasterWeights, Policy};
use dlsys_core::nn::scenarios::Scenario;
use dlsys_core::nn::{DataError, OptimizerKind, Status, TrainConfig, TrainError, Trainer};
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};

use super::TEXT;
use crate::kit::{datasets, theme};

/// The formats a policy can pick, widest first.
pub const FORMATS: [&str; 6] = ["fp32", "tf32", "bf16", "fp16", "fp8-e5m2", "fp8-e4m3"];

/// The scenarios offered as buttons: each runs against [`Scenario::baseline`].
pub const BUTTONS: [Scenario; 5] = [
    Scenario::Fp16NoScaling,
    Scenario::Fp16Dynamic,
    Scenario::Bf16NoScaling,
    Scenario::AccumulateFp16,
    Scenario::AdamFp16Moments,
];

/// How the custom policy scales the loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScaleChoice {
    None,
    Static,
    Dynamic,
}

/// The learner's own policy (persisted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CustomPolicy {
    pub dataset: String,
    pub compute: String,
    pub grads: String,
    pub optimizer_state: String,
    pub accumulation: String,
    pub master_fp32: bool,
    pub scale: ScaleChoice,
    /// The static scale is 2^this.
    pub scale_log2: i32,
    pub micro_batches: u32,
    /// Multiply the loss by 2⁻¹⁶, as if it were averaged over 2¹⁶× more elements.
    pub small_gradients: bool,
    pub adam: bool,
    pub lr: f64,
    pub epochs: u64,
}

impl Default for CustomPolicy {
    fn default() -> Self {
        Self {
            dataset: "digits".to_owned(),
            compute: "fp16".to_owned(),
            grads: "fp16".to_owned(),
            optimizer_state: "fp32".to_owned(),
            accumulation: "fp32".to_owned(),
            master_fp32: true,
            scale: ScaleChoice::Dynamic,
            scale_log2: 16,
            micro_batches: 1,
            small_gradients: true,
            adam: true,
            lr: 0.003,
            epochs: 15,
        }
    }
}

impl CustomPolicy {
    fn policy(&self) -> Policy {
        Policy {
            compute: self.compute.clone(),
            grads: self.grads.clone(),
            optimizer_state: self.optimizer_state.clone(),
            accumulation: self.accumulation.clone(),
            master_weights: if self.master_fp32 {
                MasterWeights::Fp32
            } else {
                MasterWeights::Same
            },
            loss_scale: match self.scale {
                ScaleChoice::None => LossScale::None,
                ScaleChoice::Static => LossScale::Static(2f32.powi(self.scale_log2)),
                ScaleChoice::Dynamic => LossScale::dynamic(),
            },
        }
    }

    /// (policy run, fp32 baseline): the same network, data and seed.
    pub fn configs(&self) -> (TrainConfig, TrainConfig) {
        let base = TrainConfig {
            optimizer: if self.adam {
                OptimizerKind::adam()
            } else {
                OptimizerKind::Momentum {
                    mu: 0.9,
                    nesterov: false,
                }
            },
            lr: self.lr,
            epochs: self.epochs,
            micro_batches: self.micro_batches,
            loss_weight: if self.small_gradients {
                dlsys_core::nn::scenarios::SMALL_GRADIENTS
            } else {
                1.0
            },
            ..Scenario::Fp32.config()
        };
        let run = TrainConfig {
            policy: self.policy(),
            ..base.clone()
        };
        (run, base)
    }
}

/// One side of the comparison.
pub struct Side {
    pub label: String,
    pub trainer: Trainer,
}

/// A policy run and its baseline in progress (not persisted).
#[derive(Default)]
pub struct PairRun {
    pub title: String,
    pub sides: Vec<Side>,
    budget: crate::kit::frame_budget::FrameBudget,
    running: bool,
    pub error: Option<TrainError>,
    /// (title, dataset, configs) to start once MNIST has downloaded (web).
    waiting: Option<(String, String, TrainConfig, TrainConfig)>,
}

impl PairRun {
    pub fn is_running(&self) -> bool {
        self.running || self.waiting.is_some()
    }

    /// How the last run ended, for the self-test: every side finished (a
    /// scenario may lose accuracy; that is its point, not a failure).
    pub fn outcome(&self) -> Option<crate::SelfTestResult> {
        if let Some(err) = &self.error {
            return Some(Err(crate::SelfTestFailure(err.to_string())));
        }
        if self.sides.is_empty() || self.is_running() {
            return None;
        }
        let sides: Vec<String> = self
            .sides
            .iter()
            .map(|side| {
                let accuracy = side.trainer.history.last().map_or(0.0, |h| h.test_accuracy);
                format!("{}: {accuracy:.3}", side.label)
            })
            .collect();
        let finished = self
            .sides
            .iter()
            .all(|side| side.trainer.status != Status::Running);
        let detail = format!("{} — {}", self.title, sides.join("; "));
        Some(if finished { Ok(detail) } else { Err(crate::SelfTestFailure(detail)) })
    }

    /// Trains both sides for a slice of the frame.
    pub fn logic(&mut self, ctx: &egui::Context) {
        if let Some((title, dataset, run, base)) = &self.waiting {
            match datasets::fetch_mnist() {
                datasets::Fetch::Ready => {
                    let (title, dataset, run, base) =
                        (title.clone(), dataset.clone(), run.clone(), base.clone());
                    self.start(title, &dataset, run, base);
                }
                datasets::Fetch::Failed(detail) => {
                    self.waiting = None;
                    self.error = Some(DataError::Download { detail }.into());
                }
                datasets::Fetch::Pending | datasets::Fetch::NotStarted => ctx.request_repaint(),
            }
            return;
        }
        if !self.running {
            self.budget.pause();
            return;
        }
        // The two runs share the frame's slice.
        let sides = &mut self.sides;
        self.budget.run(|slice| {
            let share = slice / sides.len().max(1) as u32;
            for side in sides.iter_mut() {
                side.trainer.run_for(share);
            }
        });
        if self
            .sides
            .iter()
            .all(|s| s.trainer.status != Status::Running)
        {
            self.running = false;
        }
        ctx.request_repaint();
    }

    /// Starts `run` (and `base`, unless it is the same configuration).
    pub fn start(&mut self, title: String, dataset: &str, run: TrainConfig, base: TrainConfig) {
        *self = Self::default();
        if datasets::needs_fetch(dataset) && datasets::fetch_mnist() != datasets::Fetch::Ready {
            self.waiting = Some((title, dataset.to_owned(), run, base));
            return;
        }
        let same = run == base;
        let result = datasets::load(dataset, run.seed)
            .map_err(TrainError::from)
            .and_then(|data| {
                let (train, test) = data.split(datasets::TEST_FRACTION, run.seed);
                let mut sides = vec![Side {
                    label: run.policy.describe(),
                    trainer: Trainer::new(run, train.clone(), test.clone())?,
                }];
                if !same {
                    sides.push(Side {
                        label: base.policy.describe(),
                        trainer: Trainer::new(base, train, test)?,
                    });
                }
                Ok(sides)
            });
        match result {
            Ok(sides) => {
                self.title = title;
                self.sides = sides;
                self.running = true;
            }
            Err(err) => self.error = Some(err),
        }
    }

    /// A scenario as its button starts it, cut to `epochs` epochs (the
    /// self-test's size: seconds, not the full run).
    pub fn start_scenario_for(&mut self, scenario: Scenario, epochs: u64, lang: Lang) {
        let title = TEXT
            .get(lang, &format!("scenario.{}", scenario.id()))
            .to_owned();
        let cut = |config: TrainConfig| TrainConfig {
            epochs: config.epochs.min(epochs),
            ..config
        };
        self.start(
            title,
            "digits",
            cut(scenario.config()),
            cut(scenario.baseline().config()),
        );
    }

    pub fn start_scenario(&mut self, scenario: Scenario, lang: Lang) {
        self.start_scenario_for(scenario, u64::MAX, lang);
    }
}

/// The small-gradient loss weight as `2^k`.
fn weight_text() -> String {
    format!("2^{}", dlsys_core::nn::scenarios::SMALL_GRADIENTS.log2())
}

/// A scenario's tooltip, its numbers taken from its configuration.
fn scenario_hint(scenario: Scenario, lang: Lang) -> String {
    let config = scenario.config();
    let scale = match config.policy.loss_scale {
        LossScale::None => 1.0,
        LossScale::Static(s) | LossScale::Dynamic { initial: s, .. } => s,
    };
    let fp16 = Format::fp16();
    let zones = super::results::Zones::of(&fp16);
    // The ε of the scenario's Adam (the default Adam's for the other hints).
    let eps = [config.optimizer, OptimizerKind::adam()]
        .into_iter()
        .find_map(|kind| match kind {
            OptimizerKind::Adam { eps, .. } => Some(eps),
            _ => None,
        })
        .unwrap_or(f64::NAN);
    TEXT.fill(
        lang,
        &format!("scenario.{}.hint", scenario.id()),
        &[
            ("scale", &format!("2^{}", scale.log2())),
            ("micro", &config.micro_batches),
            ("max", &fp16.range().max_finite),
            ("normal", &format!("2^{}", zones.normal)),
            ("flush", &format!("2^{}", zones.flush)),
            ("eps", &format!("{eps:e}")),
            ("eps16", &show_sig(fp16.round_f64(eps, Rounding::NearestEven), 3)),
            ("sub", &show_sig(fp16.range().min_subnormal, 3)),
        ],
    )
}

/// The scenario buttons and the custom policy editor.
pub fn controls_ui(ui: &mut egui::Ui, custom: &mut CustomPolicy, run: &mut PairRun, lang: Lang) {
    let t = |key: &str| TEXT.get(lang, key).to_owned();
    let busy = run.is_running();
    let small = Scenario::Fp32.config();
    let hidden: Vec<String> = small.hidden.iter().map(ToString::to_string).collect();
    ui.label(TEXT.fill(
        lang,
        "scenarios.explain",
        &[("hidden", &hidden.join(", ")), ("weight", &weight_text())],
    ));
    ui.add_enabled_ui(!busy, |ui| {
        ui.horizontal_wrapped(|ui| {
            for scenario in BUTTONS {
                let key = format!("scenario.{}", scenario.id());
                if ui
                    .button(t(&key))
                    .on_hover_text(scenario_hint(scenario, lang))
                    .clicked()
                {
                    run.start_scenario(scenario, lang);
                }
            }
        });
    });
    ui.add_space(6.0);
    let shown = egui::CollapsingHeader::new(t("custom.heading"))
        .id_salt("custom_policy")
        .show(ui, |ui| {
            ui.add_enabled_ui(!busy, |ui| custom_ui(ui, custom, run, lang));
        });
    crate::kit::anchor(&shown.header_response, "custom");
    ui.horizontal(|ui| {
        if busy {
            if ui.button(t("run.pause")).clicked() {
                run.running = false;
                run.waiting = None;
            }
        } else if run
            .sides
            .iter()
            .any(|s| s.trainer.status == Status::Running)
            && ui.button(t("run.resume")).clicked()
        {
            run.running = true;
        }
        if (!run.sides.is_empty() || run.error.is_some()) && ui.button(t("run.reset")).clicked() {
            *run = PairRun::default();
        }
        if let Some(side) = run.sides.first() {
            let tr = &side.trainer;
            ui.add(
                egui::ProgressBar::new(tr.progress() as f32)
                    .desired_width(220.0)
                    .text(TEXT.fill(
                        lang,
                        "run.progress",
                        &[("epoch", &tr.epoch), ("epochs", &tr.config.epochs)],
                    )),
            );
        }
    });
    if run.waiting.is_some() {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(t("run.downloading"));
        });
    }
    if let Some(err) = &run.error {
        ui.colored_label(
            theme::bad(ui.visuals()),
            TEXT.fill(lang, "run.error", &[("error", &err.message(lang))]),
        );
    }
}

fn custom_ui(ui: &mut egui::Ui, custom: &mut CustomPolicy, run: &mut PairRun, lang: Lang) {
    let t = |key: &str| TEXT.get(lang, key).to_owned();
    ui.horizontal_wrapped(|ui| {
        let datasets = ["digits", "mnist", "spirals"];
        crate::kit::choice_of_names(ui, "mixed_dataset", &t("custom.dataset"), &mut custom.dataset, &datasets);
        let formats = [
            ("mixed_compute", "custom.compute", &mut custom.compute),
            ("mixed_grads", "custom.grads", &mut custom.grads),
            ("mixed_state", "custom.state", &mut custom.optimizer_state),
            ("mixed_accum", "custom.accumulation", &mut custom.accumulation),
        ];
        for (id, key, value) in formats {
            crate::kit::choice_of_names(ui, id, &t(key), value, &FORMATS);
        }
    });
    ui.horizontal_wrapped(|ui| {
        ui.checkbox(&mut custom.master_fp32, t("custom.master"));
        ui.label(t("custom.scale"));
        ui.selectable_value(&mut custom.scale, ScaleChoice::None, t("custom.scale.none"));
        ui.selectable_value(
            &mut custom.scale,
            ScaleChoice::Static,
            t("custom.scale.static"),
        );
        ui.selectable_value(
            &mut custom.scale,
            ScaleChoice::Dynamic,
            t("custom.scale.dynamic"),
        );
        if custom.scale == ScaleChoice::Static {
            let label = ui.label("2^");
            ui.add(egui::DragValue::new(&mut custom.scale_log2).range(-24..=100))
                .labelled_by(label.id);
        }
    });
    ui.horizontal_wrapped(|ui| {
        ui.checkbox(
            &mut custom.small_gradients,
            TEXT.fill(lang, "custom.small", &[("weight", &weight_text())]),
        );
        let label = ui.label(t("custom.micro"));
        ui.add(egui::DragValue::new(&mut custom.micro_batches).range(1..=1024))
            .labelled_by(label.id);
        ui.checkbox(&mut custom.adam, "Adam");
        let label = ui.label(t("custom.lr"));
        ui.add(
            egui::DragValue::new(&mut custom.lr)
                .speed(0.0005)
                .range(1e-6..=10.0)
                .max_decimals(5),
        )
        .labelled_by(label.id);
        let label = ui.label(t("custom.epochs"));
        ui.add(egui::DragValue::new(&mut custom.epochs).range(1..=200))
            .labelled_by(label.id);
    });
    if ui.button(t("custom.run")).clicked() {
        let (policy_run, base) = custom.configs();
        let title = TEXT.fill(
            lang,
            "custom.title",
            &[("policy", &super::policy_text(&policy_run.policy, lang))],
        );
        run.start(title, &custom.dataset, policy_run, base);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scenario_hints_say_subnormal_and_where_adams_eps_goes() {
        for scenario in BUTTONS {
            for lang in [Lang::En, Lang::Zh] {
                let hint = scenario_hint(scenario, lang);
                assert!(!hint.contains('{'), "{hint}");
            }
        }
        let no_scaling = scenario_hint(Scenario::Fp16NoScaling, Lang::En);
        assert!(no_scaling.contains("subnormal") && no_scaling.contains("2^-25"), "{no_scaling}");
        let adam = scenario_hint(Scenario::AdamFp16Moments, Lang::En);
        assert!(adam.contains("1e-8") && adam.contains("rounds to 0"), "{adam}");
    }

    #[test]
    fn a_scenario_pair_trains_both_sides_in_slices() {
        let mut run = PairRun::default();
        let (mut policy, mut base) = CustomPolicy::default().configs();
        policy.epochs = 1;
        base.epochs = 1;
        run.start("t".to_owned(), "digits", policy, base);
        assert_eq!(run.sides.len(), 2);
        let ctx = egui::Context::default();
        for _ in 0..10_000 {
            run.logic(&ctx);
            if !run.is_running() {
                break;
            }
        }
        for side in &run.sides {
            assert_eq!(side.trainer.status, Status::Finished);
        }
        let report = run.sides[0].trainer.mixed_report();
        let layers = report.map(|r| r.layers).unwrap_or_default();
        assert_eq!(layers.len(), 2, "W1 and W2");
        assert!(
            layers
                .iter()
                .all(|l| l.histogram.total() > 0 && l.stats.values > 0)
        );
    }

    #[test]
    fn a_bad_custom_policy_is_an_error_not_a_run() {
        let mut run = PairRun::default();
        let (mut policy, base) = CustomPolicy::default().configs();
        policy.policy.compute = "fp7".to_owned();
        run.start("t".to_owned(), "digits", policy, base);
        assert!(run.sides.is_empty());
        assert!(run.error.is_some_and(|e| e.to_string().contains("fp7")));
    }
}
