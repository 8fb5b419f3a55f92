//! Layers, optimizers and a trainer on top of the autograd engine.

pub mod data;
pub mod scenarios;

use rand::{RngExt as _, SeedableRng as _};
use serde::{Deserialize, Serialize};

use std::sync::{Arc, Mutex};

use crate::autograd::{Graph, OutputHook, Real, Tensor, Var};
use crate::mixed::{Histogram, MasterWeights, Policy, RoundStats, Rounder, ScaleEvent, Scaler};
pub use data::{DataLoader, Dataset, Synthetic};

/// The hidden layers' nonlinearity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Activation {
    #[default]
    Relu,
    Tanh,
    Sigmoid,
}

impl Activation {
    pub const ALL: [Self; 3] = [Self::Relu, Self::Tanh, Self::Sigmoid];

    pub fn name(self) -> &'static str {
        match self {
            Self::Relu => "relu",
            Self::Tanh => "tanh",
            Self::Sigmoid => "sigmoid",
        }
    }

    pub fn by_name(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|a| a.name() == name.trim().to_ascii_lowercase())
            .ok_or_else(|| format!("unknown activation `{name}`; use relu, tanh or sigmoid"))
    }

    fn apply<T: Real>(self, g: &mut Graph<T>, x: Var) -> Var {
        match self {
            Self::Relu => g.relu(x),
            Self::Tanh => g.tanh(x),
            Self::Sigmoid => g.sigmoid(x),
        }
    }
}

/// `y = x·W + b` with `W: [in, out]`, `b: [out]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Linear<T> {
    pub weight: Tensor<T>,
    pub bias: Tensor<T>,
}

impl<T: Real> Linear<T> {
    /// Weights uniform with variance `gain / fan_in` (He for ReLU, LeCun
    /// otherwise), biases zero.
    pub fn new(
        inputs: usize,
        outputs: usize,
        activation: Activation,
        rng: &mut rand::rngs::StdRng,
    ) -> Self {
        let gain = if activation == Activation::Relu {
            2.0
        } else {
            1.0
        };
        let limit = (3.0 * gain / inputs as f64).sqrt();
        let weight = (0..inputs * outputs)
            .map(|_| T::from_f64(rng.random_range(-limit..limit)))
            .collect();
        Self {
            weight: Tensor::new(weight, &[inputs, outputs]),
            bias: Tensor::zeros(&[outputs]),
        }
    }
}

/// A multi-layer perceptron: linear layers with an activation between them.
#[derive(Clone, Debug, PartialEq)]
pub struct Mlp<T> {
    pub layers: Vec<Linear<T>>,
    pub activation: Activation,
}

impl<T: Real> Mlp<T> {
    /// `sizes` = input, hidden…, output. Seeded.
    pub fn new(sizes: &[usize], activation: Activation, seed: u64) -> Result<Self, String> {
        if sizes.len() < 2 || sizes.contains(&0) {
            return Err(format!(
                "an MLP needs an input and an output size, all non-zero; got {sizes:?}"
            ));
        }
        if sizes.iter().any(|s| *s > 8192) {
            return Err("layers wider than 8192 units are not supported here".to_owned());
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let layers = sizes
            .windows(2)
            .map(|w| Linear::new(w[0], w[1], activation, &mut rng))
            .collect();
        Ok(Self { layers, activation })
    }

    pub fn parameter_count(&self) -> usize {
        self.layers
            .iter()
            .map(|l| l.weight.numel() + l.bias.numel())
            .sum()
    }

    /// Records the forward pass; returns the logits and the parameter leaves
    /// (weight, bias per layer) in [`Self::params_mut`] order.
    pub fn forward(&self, g: &mut Graph<T>, x: Var) -> (Var, Vec<Var>) {
        let mut h = x;
        let mut params = Vec::with_capacity(self.layers.len() * 2);
        for (i, layer) in self.layers.iter().enumerate() {
            let w = g.param(layer.weight.clone());
            let b = g.param(layer.bias.clone());
            params.extend([w, b]);
            let z = g.matmul(h, w);
            h = g.add(z, b);
            if i + 1 < self.layers.len() {
                h = self.activation.apply(g, h);
            }
        }
        (h, params)
    }

    pub fn params_mut(&mut self) -> Vec<&mut Tensor<T>> {
        self.layers
            .iter_mut()
            .flat_map(|l| [&mut l.weight, &mut l.bias])
            .collect()
    }

    pub fn params(&self) -> Vec<&Tensor<T>> {
        self.layers
            .iter()
            .flat_map(|l| [&l.weight, &l.bias])
            .collect()
    }

    /// [`Self::forward`] that moves the parameters into the graph instead of
    /// copying them; [`Self::take_back`] returns them after the backward pass.
    pub fn forward_moving(&mut self, g: &mut Graph<T>, x: Var) -> (Var, Vec<Var>) {
        let mut h = x;
        let mut params = Vec::with_capacity(self.layers.len() * 2);
        let count = self.layers.len();
        for (i, layer) in self.layers.iter_mut().enumerate() {
            let w = g.param(std::mem::replace(&mut layer.weight, Tensor::zeros(&[0])));
            let b = g.param(std::mem::replace(&mut layer.bias, Tensor::zeros(&[0])));
            params.extend([w, b]);
            let z = g.matmul(h, w);
            h = g.add(z, b);
            if i + 1 < count {
                h = self.activation.apply(g, h);
            }
        }
        (h, params)
    }

    /// [`Self::forward`] with the given parameter values (weight, bias per
    /// layer) as leaves — e.g. rounded copies of fp32 master weights.
    pub fn forward_with(
        &self,
        g: &mut Graph<T>,
        x: Var,
        values: Vec<Tensor<T>>,
    ) -> (Var, Vec<Var>) {
        let mut h = x;
        let mut params = Vec::with_capacity(values.len());
        let mut values = values.into_iter();
        for i in 0..self.layers.len() {
            let (Some(w), Some(b)) = (values.next(), values.next()) else {
                break;
            };
            let (w, b) = (g.param(w), g.param(b));
            params.extend([w, b]);
            let z = g.matmul(h, w);
            h = g.add(z, b);
            if i + 1 < self.layers.len() {
                h = self.activation.apply(g, h);
            }
        }
        (h, params)
    }

    /// Moves the parameters back out of `g` (see [`Self::forward_moving`]).
    pub fn take_back(&mut self, g: &mut Graph<T>, params: &[Var]) {
        for (layer, pair) in self.layers.iter_mut().zip(params.chunks(2)) {
            layer.weight = g.take_value(pair[0]);
            layer.bias = g.take_value(pair[1]);
        }
    }

    /// Logits for a batch of `rows` examples (read in place): a plain
    /// forward pass, no graph, no copy of the input.
    pub fn logits(&self, x: &[T], rows: usize) -> Tensor<T> {
        let mut h = Tensor::zeros(&[0]);
        for (i, layer) in self.layers.iter().enumerate() {
            let input = if i == 0 { x } else { &h.data };
            h = crate::autograd::tensor::matmul_rows(input, rows, &layer.weight);
            let cols = layer.bias.numel();
            for row in h.data.chunks_mut(cols) {
                for (v, b) in row.iter_mut().zip(&layer.bias.data) {
                    *v += *b;
                }
            }
            if i + 1 < self.layers.len() {
                h = match self.activation {
                    Activation::Relu => h.map(|v| if v > T::ZERO { v } else { T::ZERO }),
                    Activation::Tanh => h.map(T::tanh),
                    Activation::Sigmoid => h.map(|v| T::ONE / (T::ONE + (-v).exp())),
                };
            }
        }
        h
    }
}

/// Which optimizer, with its hyperparameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum OptimizerKind {
    Sgd,
    /// Heavy-ball momentum: `v ← μv − ηg; θ ← θ + v`.
    Momentum {
        mu: f64,
        nesterov: bool,
    },
    Adam {
        beta1: f64,
        beta2: f64,
        eps: f64,
    },
}

impl OptimizerKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Sgd => "sgd",
            Self::Momentum {
                nesterov: false, ..
            } => "momentum",
            Self::Momentum { nesterov: true, .. } => "nesterov",
            Self::Adam { .. } => "adam",
        }
    }

    pub fn by_name(name: &str) -> Result<Self, String> {
        Ok(match name.trim().to_ascii_lowercase().as_str() {
            "sgd" => Self::Sgd,
            "momentum" => Self::Momentum {
                mu: 0.9,
                nesterov: false,
            },
            "nesterov" => Self::Momentum {
                mu: 0.9,
                nesterov: true,
            },
            "adam" => Self::adam(),
            other => {
                return Err(format!(
                    "unknown optimizer `{other}`; use sgd, momentum, nesterov or adam"
                ));
            }
        })
    }

    pub fn adam() -> Self {
        Self::Adam {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
        }
    }
}

/// An optimizer and its per-parameter state.
#[derive(Clone)]
pub struct Optimizer<T> {
    pub kind: OptimizerKind,
    pub lr: f64,
    pub weight_decay: f64,
    /// Momentum's velocity, or Adam's first moment.
    first: Vec<Vec<T>>,
    /// Adam's second moment.
    second: Vec<Vec<T>>,
    pub steps: u64,
    /// Rounds the optimizer state as it is stored (emulated precision):
    /// applied to each moment right after it is computed, before it is used.
    pub state_hook: Option<OutputHook<T>>,
}

impl<T: Real> std::fmt::Debug for Optimizer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Optimizer")
            .field("kind", &self.kind)
            .field("lr", &self.lr)
            .field("steps", &self.steps)
            .field("state_hook", &self.state_hook.is_some())
            .finish_non_exhaustive()
    }
}

impl<T: Real> Optimizer<T> {
    pub fn new(kind: OptimizerKind, lr: f64, weight_decay: f64) -> Self {
        Self {
            kind,
            lr,
            weight_decay,
            first: Vec::new(),
            second: Vec::new(),
            steps: 0,
            state_hook: None,
        }
    }

    /// The same rules, each state vector rounded by the hook as it is stored.
    fn step_rounded(
        &mut self,
        params: &mut [&mut Tensor<T>],
        grads: &[Tensor<T>],
        hook: &OutputHook<T>,
    ) {
        let lr = T::from_f64(self.lr);
        let wd = T::from_f64(self.weight_decay);
        let t = self.steps as i32;
        for (i, (param, grad)) in params.iter_mut().zip(grads).enumerate() {
            let (first, second) = (&mut self.first[i], &mut self.second[i]);
            let theta = &mut param.data;
            let g: Vec<T> = grad
                .data
                .iter()
                .zip(theta.iter())
                .map(|(g, p)| *g + wd * *p)
                .collect();
            match self.kind {
                OptimizerKind::Sgd => {
                    for (p, g) in theta.iter_mut().zip(&g) {
                        *p -= lr * *g;
                    }
                }
                OptimizerKind::Momentum { mu, nesterov } => {
                    let mu = T::from_f64(mu);
                    let previous = first.clone();
                    for (v, g) in first.iter_mut().zip(&g) {
                        *v = mu * *v - lr * *g;
                    }
                    hook(first);
                    for ((p, v), v_prev) in theta.iter_mut().zip(first.iter()).zip(&previous) {
                        *p += if nesterov {
                            -mu * *v_prev + (T::ONE + mu) * *v
                        } else {
                            *v
                        };
                    }
                }
                OptimizerKind::Adam { beta1, beta2, eps } => {
                    let (b1, b2, eps) = (T::from_f64(beta1), T::from_f64(beta2), T::from_f64(eps));
                    let c1 = T::ONE / T::from_f64(1.0 - beta1.powi(t));
                    let c2 = T::ONE / T::from_f64(1.0 - beta2.powi(t));
                    for ((m, v), g) in first.iter_mut().zip(second.iter_mut()).zip(&g) {
                        *m = b1 * *m + (T::ONE - b1) * *g;
                        *v = b2 * *v + (T::ONE - b2) * *g * *g;
                    }
                    hook(first);
                    hook(second);
                    for ((p, m), v) in theta.iter_mut().zip(first.iter()).zip(second.iter()) {
                        *p -= lr * (*m * c1) / ((*v * c2).sqrt() + eps);
                    }
                }
            }
        }
    }

    /// Updates every parameter in place from its gradient. Each rule is one
    /// tight loop over the parameter, so the compiler can vectorise it.
    pub fn step(&mut self, params: &mut [&mut Tensor<T>], grads: &[Tensor<T>]) {
        if self.first.len() != params.len() {
            self.first = params.iter().map(|p| vec![T::ZERO; p.numel()]).collect();
            self.second = self.first.clone();
        }
        self.steps += 1;
        if let Some(hook) = self.state_hook.clone() {
            self.step_rounded(params, grads, &hook);
            return;
        }
        let lr = T::from_f64(self.lr);
        let wd = T::from_f64(self.weight_decay);
        let t = self.steps as i32;
        for (i, (param, grad)) in params.iter_mut().zip(grads).enumerate() {
            let (first, second) = (&mut self.first[i], &mut self.second[i]);
            let theta = &mut param.data;
            let grad = &grad.data;
            match self.kind {
                OptimizerKind::Sgd => {
                    for (p, g) in theta.iter_mut().zip(grad) {
                        *p -= lr * (*g + wd * *p);
                    }
                }
                OptimizerKind::Momentum {
                    mu,
                    nesterov: false,
                } => {
                    // v ← μv − ηg; θ ← θ + v
                    let mu = T::from_f64(mu);
                    for ((p, v), g) in theta.iter_mut().zip(first.iter_mut()).zip(grad) {
                        *v = mu * *v - lr * (*g + wd * *p);
                        *p += *v;
                    }
                }
                OptimizerKind::Momentum { mu, nesterov: true } => {
                    // Look ahead: θ ← θ − μ·v_prev + (1 + μ)·v.
                    let mu = T::from_f64(mu);
                    for ((p, v), g) in theta.iter_mut().zip(first.iter_mut()).zip(grad) {
                        let v_prev = *v;
                        *v = mu * v_prev - lr * (*g + wd * *p);
                        *p += -mu * v_prev + (T::ONE + mu) * *v;
                    }
                }
                OptimizerKind::Adam { beta1, beta2, eps } => {
                    let (b1, b2, eps) = (T::from_f64(beta1), T::from_f64(beta2), T::from_f64(eps));
                    let c1 = T::ONE / T::from_f64(1.0 - beta1.powi(t));
                    let c2 = T::ONE / T::from_f64(1.0 - beta2.powi(t));
                    for (((p, m), v), g) in theta
                        .iter_mut()
                        .zip(first.iter_mut())
                        .zip(second.iter_mut())
                        .zip(grad)
                    {
                        let g = *g + wd * *p;
                        *m = b1 * *m + (T::ONE - b1) * g;
                        *v = b2 * *v + (T::ONE - b2) * g * g;
                        *p -= lr * (*m * c1) / ((*v * c2).sqrt() + eps);
                    }
                }
            }
        }
    }
}

/// What the trainer is doing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Status {
    Running,
    Finished,
    /// The loss became NaN or infinite at this step; training stopped.
    Diverged {
        epoch: u64,
        step: u64,
        loss: f64,
    },
}

/// One epoch's numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EpochStats {
    pub epoch: u64,
    pub train_loss: f64,
    pub train_accuracy: f64,
    pub test_loss: f64,
    pub test_accuracy: f64,
    /// Under a reduced-precision policy: what the epoch's rounding did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mixed: Option<MixedEpoch>,
}

/// One epoch under a precision policy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MixedEpoch {
    /// The loss scale at the end of the epoch.
    pub loss_scale: f32,
    pub skipped_steps: u64,
    /// Gradient values rounded to the compute format in backward.
    pub gradient_values: u64,
    /// Of those, non-zero values that became zero.
    pub underflowed: u64,
    pub underflow_fraction: f64,
    /// Finite gradient values that became inf/NaN.
    pub overflowed: u64,
    /// Values of the accumulation buffer that overflowed.
    pub accumulation_overflows: u64,
}

/// How to train.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrainConfig {
    pub hidden: Vec<usize>,
    pub activation: Activation,
    pub optimizer: OptimizerKind,
    pub lr: f64,
    pub weight_decay: f64,
    pub batch_size: usize,
    pub epochs: u64,
    pub seed: u64,
    /// The precision policy (fp32 throughout by default).
    pub policy: Policy,
    /// Batches whose gradients are accumulated before each optimizer step.
    pub micro_batches: u32,
    /// Multiplies the loss before backward (e.g. 2^-16 for a loss averaged
    /// over many more elements), which shrinks every gradient alike.
    pub loss_weight: f32,
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            hidden: vec![128],
            activation: Activation::Relu,
            optimizer: OptimizerKind::Momentum {
                mu: 0.9,
                nesterov: false,
            },
            lr: 0.05,
            weight_decay: 0.0,
            batch_size: 64,
            epochs: 10,
            seed: 1,
            policy: Policy::default(),
            micro_batches: 1,
            loss_weight: 1.0,
        }
    }
}

impl TrainConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(format!(
                "learning rate must be a positive number, not {}",
                self.lr
            ));
        }
        if self.batch_size == 0 || self.batch_size > 65_536 {
            return Err(format!(
                "batch size must be 1..=65536, not {}",
                self.batch_size
            ));
        }
        if self.epochs == 0 || self.epochs > 10_000 {
            return Err(format!("epochs must be 1..=10000, not {}", self.epochs));
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err("weight decay must be ≥ 0".to_owned());
        }
        if !(self.loss_weight.is_finite() && self.loss_weight > 0.0) {
            return Err(format!(
                "the loss weight must be positive, not {}",
                self.loss_weight
            ));
        }
        if !(1..=1024).contains(&self.micro_batches) {
            return Err(format!(
                "micro-batches must be 1..=1024, not {}",
                self.micro_batches
            ));
        }
        self.policy.validate()?;
        Ok(())
    }
}

/// Trains an MLP in f32 one batch at a time, so a UI can interleave it with frames.
pub struct Trainer {
    pub config: TrainConfig,
    pub model: Mlp<f32>,
    pub optimizer: Optimizer<f32>,
    pub train: Dataset,
    pub test: Dataset,
    pub loader: DataLoader,
    pub history: Vec<EpochStats>,
    /// (global step, batch loss) for every step.
    pub losses: Vec<(u64, f64)>,
    pub status: Status,
    pub epoch: u64,
    batches: Vec<Vec<usize>>,
    batch: usize,
    step: u64,
    epoch_loss: f64,
    epoch_correct: usize,
    epoch_seen: usize,
    /// Reduced-precision state, when the policy is not plain fp32.
    mixed: Option<MixedState>,
}

/// What a reduced-precision policy keeps between steps.
struct MixedState {
    compute: Rounder,
    grads: Rounder,
    accumulation: Rounder,
    scaler: Scaler,
    /// Tallied by the backward pass's hook.
    backward: Arc<Mutex<Tally>>,
    accumulation_overflows: u64,
    skipped_at_epoch_start: u64,
    accum: Vec<Tensor<f32>>,
    /// The rounded copies of fp32 master weights the forward pass reads.
    copies: Vec<Tensor<f32>>,
    micro: u32,
}

/// What the backward hook records.
#[derive(Default)]
struct Tally {
    /// Every gradient value rounded this epoch.
    stats: RoundStats,
    /// Whether this step's parameter gradients go into the histograms
    /// (every tenth step: a sample is enough for a picture).
    sampling: bool,
    /// This step's parameter nodes, in [`Mlp::params`] order.
    params: Vec<Var>,
    layers: Vec<LayerGradients>,
}

/// One parameter's gradients as they reached the rounding, over the sampled
/// steps: magnitudes (log₂ bins, loss scale included) and what rounding did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LayerGradients {
    pub name: String,
    pub histogram: Histogram,
    pub stats: RoundStats,
}

/// A snapshot of the policy's state, for plots.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MixedReport {
    pub scale: f32,
    pub skipped: u64,
    pub events: Vec<ScaleEvent>,
    /// The sampled gradients of each weight matrix.
    pub layers: Vec<LayerGradients>,
}

impl Trainer {
    pub fn new(config: TrainConfig, train: Dataset, test: Dataset) -> Result<Self, String> {
        config.validate()?;
        if train.is_empty() {
            return Err("the training set is empty".to_owned());
        }
        let mut sizes = vec![train.features];
        sizes.extend(&config.hidden);
        sizes.push(train.classes);
        let model = Mlp::new(&sizes, config.activation, config.seed)?;
        let loader = DataLoader {
            len: train.len(),
            batch_size: config.batch_size,
            shuffle: true,
            drop_last: false,
            seed: config.seed,
        };
        let batches = loader.batches(0);
        let mut optimizer = Optimizer::new(config.optimizer, config.lr, config.weight_decay);
        let mixed = if config.policy.is_fp32()
            && config.micro_batches == 1
            && config.loss_weight == 1.0
        {
            None
        } else {
            let policy = &config.policy;
            let state = Rounder::by_name(&policy.optimizer_state)?;
            if !state.is_identity() {
                optimizer.state_hook = Some(Arc::new(move |d: &mut [f32]| state.round_slice(d)));
            }
            Some(MixedState {
                compute: Rounder::by_name(&policy.compute)?,
                grads: Rounder::by_name(&policy.grads)?,
                accumulation: Rounder::by_name(&policy.accumulation)?,
                scaler: Scaler::new(policy.loss_scale),
                backward: Arc::new(Mutex::new(Tally {
                    layers: (0..model.layers.len() * 2)
                        .map(|i| LayerGradients {
                            name: format!("{}{}", if i % 2 == 0 { "W" } else { "b" }, i / 2 + 1),
                            ..LayerGradients::default()
                        })
                        .collect(),
                    ..Tally::default()
                })),
                accumulation_overflows: 0,
                skipped_at_epoch_start: 0,
                accum: Vec::new(),
                copies: Vec::new(),
                micro: 0,
            })
        };
        let mut trainer = Self {
            optimizer,
            config,
            model,
            train,
            test,
            loader,
            history: Vec::new(),
            losses: Vec::new(),
            status: Status::Running,
            epoch: 0,
            batches,
            batch: 0,
            step: 0,
            epoch_loss: 0.0,
            epoch_correct: 0,
            epoch_seen: 0,
            mixed,
        };
        // The training inputs enter the network in the compute format: round
        // them once, not every batch.
        if let Some(m) = &trainer.mixed {
            m.compute.round_slice(&mut trainer.train.x);
        }
        // Weights stored in the compute format start out rounded to it.
        if let Some(m) = &trainer.mixed
            && trainer.config.policy.master_weights == MasterWeights::Same
        {
            for p in trainer.model.params_mut() {
                m.compute.round_slice(&mut p.data);
            }
        }
        Ok(trainer)
    }

    /// The loss scale, its history and the gradient histograms (reduced precision only).
    pub fn mixed_report(&self) -> Option<MixedReport> {
        let m = self.mixed.as_ref()?;
        let layers = m
            .backward
            .lock()
            .map(|t| t.layers.iter().step_by(2).cloned().collect())
            .unwrap_or_default();
        Some(MixedReport {
            scale: m.scaler.scale,
            skipped: m.scaler.skipped,
            events: m.scaler.events.clone(),
            layers,
        })
    }

    /// Batches per epoch.
    pub fn batches_per_epoch(&self) -> usize {
        self.batches.len()
    }

    /// Fraction of all configured work done, 0..=1.
    pub fn progress(&self) -> f64 {
        let per = self.batches.len().max(1) as f64;
        ((self.epoch as f64 * per + self.batch as f64) / (self.config.epochs as f64 * per)).min(1.0)
    }

    /// Trains on one batch (and closes the epoch when it was the last).
    pub fn step(&mut self) -> &Status {
        self.step_batch();
        &self.status
    }

    fn step_batch(&mut self) {
        if self.status != Status::Running {
            return;
        }
        if self.mixed.is_some() {
            self.step_mixed();
            return;
        }
        let indices = std::mem::take(&mut self.batches[self.batch]);
        let (x, y) = self.train.gather(&indices);
        self.batches[self.batch] = indices;
        let rows = y.len();
        let mut g = Graph::new();
        let xv = g.input(Tensor::new(x, &[rows, self.train.features]));
        let (logits, params) = self.model.forward_moving(&mut g, xv);
        let loss = g.softmax_cross_entropy(logits, &y);
        let loss_value = f64::from(g.value(loss).item());
        self.step += 1;
        if !loss_value.is_finite() {
            // Non-finite parameters show up here too, one step after they appear.
            self.model.take_back(&mut g, &params);
            self.status = Status::Diverged {
                epoch: self.epoch,
                step: self.step,
                loss: loss_value,
            };
            return;
        }
        let predictions = g.value(logits).argmax_rows();
        self.epoch_correct += predictions.iter().zip(&y).filter(|(p, t)| p == t).count();
        self.epoch_seen += rows;
        self.epoch_loss += loss_value * rows as f64;
        self.losses.push((self.step, loss_value));
        let loss = if self.config.loss_weight == 1.0 {
            loss
        } else {
            g.scale(loss, self.config.loss_weight)
        };
        g.backward(loss);
        let grads: Vec<Tensor<f32>> = params
            .iter()
            .map(|p| {
                g.take_grad(*p)
                    .unwrap_or_else(|| Tensor::zeros(&g.value(*p).shape))
            })
            .collect();
        self.model.take_back(&mut g, &params);
        self.optimizer.step(&mut self.model.params_mut(), &grads);
        self.batch += 1;
        if self.batch == self.batches.len() {
            self.finish_epoch();
        }
    }

    /// One batch under a reduced-precision policy: every op output and every
    /// gradient rounded to the compute format, the loss scaled, gradients
    /// accumulated over micro-batches in the accumulation format, the step
    /// skipped when they are not finite.
    fn step_mixed(&mut self) {
        let Some(mut m) = self.mixed.take() else {
            return;
        };
        let policy = self.config.policy.clone();
        let indices = std::mem::take(&mut self.batches[self.batch]);
        let (x, y) = self.train.gather(&indices);
        self.batches[self.batch] = indices;
        let rows = y.len();
        let mut g = Graph::new();
        if !m.compute.is_identity() {
            let c = m.compute.clone();
            g.set_output_hook(Some(Arc::new(move |d: &mut [f32]| c.round_slice(d))));
        }
        let (c, tally) = (m.compute.clone(), m.backward.clone());
        g.set_grad_hook(Some(Arc::new(move |to: Var, d: &mut [f32]| {
            let Ok(mut t) = tally.lock() else {
                c.round_slice(d);
                return;
            };
            let layer = if t.sampling {
                t.params.iter().position(|p| *p == to)
            } else {
                None
            };
            if let Some(i) = layer {
                t.layers[i].histogram.add_slice(d);
            }
            let stats = c.round_slice_counting(d);
            t.stats.add(&stats);
            if let Some(i) = layer {
                t.layers[i].stats.add(&stats);
            }
        })));
        let xv = g.input(Tensor::new(x, &[rows, self.train.features]));
        let moved = policy.master_weights == MasterWeights::Same;
        let (logits, params) = if moved {
            self.model.forward_moving(&mut g, xv)
        } else {
            // The fp32 master weights stay; the forward pass sees rounded
            // copies, written into buffers kept from step to step.
            let masters = self.model.params();
            if m.copies.len() != masters.len() {
                m.copies = masters.iter().map(|p| (*p).clone()).collect();
            }
            for (copy, master) in m.copies.iter_mut().zip(masters) {
                m.compute.round_into(&master.data, &mut copy.data);
            }
            self.model
                .forward_with(&mut g, xv, std::mem::take(&mut m.copies))
        };
        let loss = g.softmax_cross_entropy(logits, &y);
        let loss_value = f64::from(g.value(loss).item());
        self.step += 1;
        if !loss_value.is_finite() {
            if moved {
                self.model.take_back(&mut g, &params);
            }
            self.status = Status::Diverged {
                epoch: self.epoch,
                step: self.step,
                loss: loss_value,
            };
            self.mixed = Some(m);
            return;
        }
        let predictions = g.value(logits).argmax_rows();
        self.epoch_correct += predictions.iter().zip(&y).filter(|(p, t)| p == t).count();
        self.epoch_seen += rows;
        self.epoch_loss += loss_value * rows as f64;
        self.losses.push((self.step, loss_value));
        let scale = m.scaler.scale;
        if let Ok(mut t) = m.backward.lock() {
            t.sampling = self.step % 10 == 1;
            t.params.clone_from(&params);
        }
        let scaled = g.scale(loss, scale * self.config.loss_weight);
        g.backward(scaled);
        let mut grads: Vec<Tensor<f32>> = params
            .iter()
            .map(|p| {
                g.take_grad(*p)
                    .unwrap_or_else(|| Tensor::zeros(&g.value(*p).shape))
            })
            .collect();
        if moved {
            self.model.take_back(&mut g, &params);
        } else {
            m.copies = params.iter().map(|p| g.take_value(*p)).collect();
        }
        if m.grads.format_name() != m.compute.format_name() {
            for grad in &mut grads {
                m.grads.round_slice(&mut grad.data);
            }
        }
        if self.config.micro_batches == 1 && m.accumulation.is_identity() {
            // Nothing to accumulate: the batch's gradients are the sum.
            m.accum = grads;
        } else {
            if m.accum.is_empty() {
                m.accum = grads.iter().map(|t| Tensor::zeros(&t.shape)).collect();
            }
            for (acc, grad) in m.accum.iter_mut().zip(&grads) {
                m.accumulation_overflows += accumulate(&mut acc.data, &grad.data, &m.accumulation);
            }
        }
        m.micro += 1;
        if m.micro >= self.config.micro_batches {
            m.micro = 0;
            let finite = m.accum.iter().all(Tensor::all_finite);
            if m.scaler.update(self.step, finite) {
                let inverse = 1.0 / (scale * self.config.micro_batches as f32);
                for acc in &mut m.accum {
                    for v in &mut acc.data {
                        *v *= inverse;
                    }
                }
                self.optimizer.step(&mut self.model.params_mut(), &m.accum);
                if moved {
                    for p in self.model.params_mut() {
                        m.compute.round_slice(&mut p.data);
                    }
                }
            }
            if self.config.micro_batches > 1 || !m.accumulation.is_identity() {
                for acc in &mut m.accum {
                    acc.data.fill(0.0);
                }
            }
        }
        self.mixed = Some(m);
        self.batch += 1;
        if self.batch == self.batches.len() {
            self.finish_epoch();
        }
    }

    fn mixed_epoch(&mut self) -> Option<MixedEpoch> {
        let m = self.mixed.as_mut()?;
        let tally = m
            .backward
            .lock()
            .map(|mut t| std::mem::take(&mut t.stats))
            .unwrap_or_default();
        let epoch = MixedEpoch {
            loss_scale: m.scaler.scale,
            skipped_steps: m.scaler.skipped - m.skipped_at_epoch_start,
            gradient_values: tally.values,
            underflowed: tally.underflowed,
            underflow_fraction: tally.underflow_fraction(),
            overflowed: tally.overflowed,
            accumulation_overflows: std::mem::take(&mut m.accumulation_overflows),
        };
        m.skipped_at_epoch_start = m.scaler.skipped;
        Some(epoch)
    }

    fn finish_epoch(&mut self) {
        let (test_loss, test_accuracy) = self.evaluate(&self.test);
        let mixed = self.mixed_epoch();
        let seen = self.epoch_seen.max(1) as f64;
        self.history.push(EpochStats {
            epoch: self.epoch + 1,
            train_loss: self.epoch_loss / seen,
            train_accuracy: self.epoch_correct as f64 / seen,
            test_loss,
            test_accuracy,
            mixed,
        });
        self.epoch += 1;
        self.batch = 0;
        self.epoch_loss = 0.0;
        self.epoch_correct = 0;
        self.epoch_seen = 0;
        if self.epoch >= self.config.epochs {
            self.status = Status::Finished;
        } else {
            self.batches = self.loader.batches(self.epoch);
        }
    }

    /// Runs until finished or diverged.
    pub fn run(&mut self) -> &Status {
        while self.status == Status::Running {
            self.step_batch();
        }
        &self.status
    }

    /// Trains until the current epoch ends (or training stops).
    pub fn run_epoch(&mut self) -> &Status {
        let epoch = self.epoch;
        while self.status == Status::Running && self.epoch == epoch {
            self.step_batch();
        }
        &self.status
    }

    /// Trains whole batches until `budget` has passed (at least one batch),
    /// so a UI can train between frames without stalling them.
    pub fn run_for(&mut self, budget: web_time::Duration) -> &Status {
        let start = web_time::Instant::now();
        while self.status == Status::Running {
            self.step_batch();
            if start.elapsed() >= budget {
                break;
            }
        }
        &self.status
    }

    /// Mean loss and accuracy of the current model on `data`.
    pub fn evaluate(&self, data: &Dataset) -> (f64, f64) {
        if data.is_empty() {
            return (f64::NAN, f64::NAN);
        }
        let (mut loss, mut correct) = (0.0, 0);
        let chunk = 500;
        for start in (0..data.len()).step_by(chunk) {
            let rows = chunk.min(data.len() - start);
            let x = &data.x[start * data.features..(start + rows) * data.features];
            let labels = &data.y[start..start + rows];
            let logits = self.model.logits(x, rows);
            loss += cross_entropy_sum(&logits, labels);
            correct += logits
                .argmax_rows()
                .iter()
                .zip(labels)
                .filter(|(p, t)| p == t)
                .count();
        }
        (loss / data.len() as f64, correct as f64 / data.len() as f64)
    }

    /// Predicted class of each test example.
    pub fn predict(&self, data: &Dataset) -> Vec<usize> {
        let indices: Vec<usize> = (0..data.len()).collect();
        indices
            .chunks(512)
            .flat_map(|chunk| {
                let (x, _) = data.gather(chunk);
                self.model.logits(&x, chunk.len()).argmax_rows()
            })
            .collect()
    }
}

/// `acc += grad`, the sum rounded to the buffer's format; returns how many
/// finite sums overflowed to ±inf (in fp32 too, if a sum leaves its range).
fn accumulate(acc: &mut [f32], grad: &[f32], format: &Rounder) -> u64 {
    let mut overflows = 0;
    for (a, g) in acc.iter_mut().zip(grad) {
        let was_finite = a.is_finite() && g.is_finite();
        *a = format.round(*a + *g);
        overflows += u64::from(was_finite && !a.is_finite());
    }
    overflows
}

/// Σ over rows of −log softmax(logits)[label], stable, in f64.
fn cross_entropy_sum(logits: &Tensor<f32>, labels: &[usize]) -> f64 {
    labels
        .iter()
        .enumerate()
        .map(|(r, label)| {
            let row = logits.row(r);
            let max = row.iter().fold(f32::NEG_INFINITY, |m, x| m.max(*x));
            let sum: f64 = row.iter().map(|x| f64::from(*x - max).exp()).sum();
            sum.ln() - f64::from(row[*label] - max)
        })
        .sum()
}

#[cfg(test)]
mod tests;
