//! Optimizers (SGD, momentum, Nesterov, Adam) and their per-parameter state.

use serde::{Deserialize, Serialize};

use super::TrainError;
use crate::autograd::{OutputHook, Real, Tensor};

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
    /// Every name [`Self::by_name`] reads, as [`Self::name`] writes them.
    pub const NAMES: [&'static str; 4] = ["sgd", "momentum", "nesterov", "adam"];

    /// State tensors per parameter: none for SGD, the velocity for
    /// momentum, m and v for Adam.
    pub fn states(self) -> usize {
        match self {
            Self::Sgd => 0,
            Self::Momentum { .. } => 1,
            Self::Adam { .. } => 2,
        }
    }

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

    pub fn by_name(name: &str) -> Result<Self, TrainError> {
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
            _ => {
                return Err(TrainError::UnknownOptimizer {
                    name: name.to_owned(),
                });
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
    /// Momentum's velocity, or Adam's first moment (empty for SGD).
    first: Vec<Vec<T>>,
    /// Adam's second moment (empty otherwise).
    second: Vec<Vec<T>>,
    /// Whether the state has been made for the parameters.
    ready: bool,
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
            ready: false,
            steps: 0,
            state_hook: None,
        }
    }

    /// Elements of optimizer state held (every tensor, every parameter).
    pub fn state_elements(&self) -> usize {
        self.first.iter().chain(&self.second).map(Vec::len).sum()
    }

    /// Makes the state the rule needs, once: nothing for SGD, one tensor
    /// per parameter for momentum, two for Adam.
    fn make_state(&mut self, params: &[&mut Tensor<T>]) {
        let wanted = |tensors: usize| {
            if self.kind.states() >= tensors {
                params.len()
            } else {
                0
            }
        };
        if self.ready && self.first.len() == wanted(1) && self.second.len() == wanted(2) {
            return;
        }
        let zeros = || params.iter().map(|p| vec![T::ZERO; p.numel()]).collect();
        self.first = if self.kind.states() >= 1 {
            zeros()
        } else {
            Vec::new()
        };
        self.second = if self.kind.states() >= 2 {
            zeros()
        } else {
            Vec::new()
        };
        self.ready = true;
    }

    /// The same rules, each state tensor rounded by the hook as it is
    /// stored, before it is used. No scratch buffer is made: the state is
    /// updated in one pass, rounded as a whole, then applied in a second
    /// (Nesterov, which needs the velocity before and after, rounds value by
    /// value instead: rounding is elementwise, so the result is the same).
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
            let theta = &mut param.data;
            match self.kind {
                OptimizerKind::Sgd => {
                    for (p, g) in theta.iter_mut().zip(&grad.data) {
                        *p -= lr * (*g + wd * *p);
                    }
                }
                OptimizerKind::Momentum {
                    mu,
                    nesterov: false,
                } => {
                    let (mu, v) = (T::from_f64(mu), &mut self.first[i]);
                    for ((v, p), g) in v.iter_mut().zip(theta.iter()).zip(&grad.data) {
                        *v = mu * *v - lr * (*g + wd * *p);
                    }
                    hook(v);
                    for (p, v) in theta.iter_mut().zip(v.iter()) {
                        *p += *v;
                    }
                }
                OptimizerKind::Momentum { mu, nesterov: true } => {
                    let mu = T::from_f64(mu);
                    for ((p, v), g) in theta
                        .iter_mut()
                        .zip(self.first[i].iter_mut())
                        .zip(&grad.data)
                    {
                        let v_prev = *v;
                        *v = mu * *v - lr * (*g + wd * *p);
                        hook(std::slice::from_mut(v));
                        *p += -mu * v_prev + (T::ONE + mu) * *v;
                    }
                }
                OptimizerKind::Adam { beta1, beta2, eps } => {
                    let (b1, b2, eps) = (T::from_f64(beta1), T::from_f64(beta2), T::from_f64(eps));
                    let c1 = T::ONE / T::from_f64(1.0 - beta1.powi(t));
                    let c2 = T::ONE / T::from_f64(1.0 - beta2.powi(t));
                    let (first, second) = (&mut self.first[i], &mut self.second[i]);
                    for (((m, v), p), g) in first
                        .iter_mut()
                        .zip(second.iter_mut())
                        .zip(theta.iter())
                        .zip(&grad.data)
                    {
                        let g = *g + wd * *p;
                        *m = b1 * *m + (T::ONE - b1) * g;
                        *v = b2 * *v + (T::ONE - b2) * g * g;
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
        self.make_state(params);
        self.steps += 1;
        if let Some(hook) = self.state_hook.clone() {
            self.step_rounded(params, grads, &hook);
            return;
        }
        let lr = T::from_f64(self.lr);
        let wd = T::from_f64(self.weight_decay);
        let t = self.steps as i32;
        for (i, (param, grad)) in params.iter_mut().zip(grads).enumerate() {
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
                    for ((p, v), g) in theta.iter_mut().zip(self.first[i].iter_mut()).zip(grad) {
                        *v = mu * *v - lr * (*g + wd * *p);
                        *p += *v;
                    }
                }
                OptimizerKind::Momentum { mu, nesterov: true } => {
                    // Look ahead: θ ← θ − μ·v_prev + (1 + μ)·v.
                    let mu = T::from_f64(mu);
                    for ((p, v), g) in theta.iter_mut().zip(self.first[i].iter_mut()).zip(grad) {
                        let v_prev = *v;
                        *v = mu * v_prev - lr * (*g + wd * *p);
                        *p += -mu * v_prev + (T::ONE + mu) * *v;
                    }
                }
                OptimizerKind::Adam { beta1, beta2, eps } => {
                    let (b1, b2, eps) = (T::from_f64(beta1), T::from_f64(beta2), T::from_f64(eps));
                    let c1 = T::ONE / T::from_f64(1.0 - beta1.powi(t));
                    let c2 = T::ONE / T::from_f64(1.0 - beta2.powi(t));
                    let (first, second) = (&mut self.first[i], &mut self.second[i]);
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
