//! Optimizers (SGD, momentum, Nesterov, Adam) and their per-parameter state.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::TrainError;
use crate::autograd::{Half, OutputHook, Real, Stored, Tensor};

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
    first: Vec<Stored<T>>,
    /// Adam's second moment (empty otherwise).
    second: Vec<Stored<T>>,
    /// Whether the state has been made for the parameters.
    ready: bool,
    pub steps: u64,
    /// Rounds the optimizer state as it is stored (emulated precision):
    /// applied to each moment right after it is computed, before it is used.
    pub state_hook: Option<OutputHook<T>>,
    /// Keeps the state packed in this 2-byte format (set together with a
    /// [`Self::state_hook`] rounding to it, so packing loses nothing). Each
    /// step decodes one block ([`STATE_BLOCK`] values) of each state tensor
    /// at a time into scratch.
    pub state_packing: Option<Half>,
    /// Elements of the largest scratch the last step decoded state into.
    scratch: usize,
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
            state_packing: None,
            scratch: 0,
        }
    }

    /// Elements of optimizer state held (every tensor, every parameter).
    pub fn state_elements(&self) -> usize {
        self.state_tensors().map(Stored::numel).sum()
    }

    /// Whether any state tensor is packed (2 bytes an element).
    pub fn state_packed(&self) -> bool {
        self.state_tensors().any(Stored::is_packed)
    }

    /// Every state tensor, as kept.
    pub fn state_tensors(&self) -> impl Iterator<Item = &Stored<T>> {
        self.first.iter().chain(&self.second)
    }

    /// Elements of f32 scratch the last step held at once while it decoded
    /// packed state (0 when the state is not packed).
    pub fn scratch_elements(&self) -> usize {
        self.scratch
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
        let packing = self.state_packing;
        let zeros = || {
            params
                .iter()
                .map(|p| Stored::keep(Tensor::zeros(&p.shape), packing))
                .collect()
        };
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
    /// stored, before it is used, block by block ([`STATE_BLOCK`] values):
    /// a block of state is updated in one pass, rounded, then applied in a
    /// second (Nesterov, which needs the velocity before and after, rounds
    /// value by value instead: rounding is elementwise, so the result is
    /// the same). Packed state is decoded a block at a time into scratch.
    fn step_rounded(
        &mut self,
        params: &mut [&mut Tensor<T>],
        grads: &[Tensor<T>],
        hook: &OutputHook<T>,
    ) {
        let lr = T::from_f64(self.lr);
        let wd = T::from_f64(self.weight_decay);
        let t = self.steps as i32;
        let (mut s1, mut s2) = self.scratch_buffers(params);
        for (i, (param, grad)) in params.iter_mut().zip(grads).enumerate() {
            let n = param.numel().min(grad.numel());
            for lo in (0..n).step_by(STATE_BLOCK) {
                let r = lo..(lo + STATE_BLOCK).min(n);
                let theta = &mut param.data[r.clone()];
                let grad = &grad.data[r.clone()];
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
                        let mu = T::from_f64(mu);
                        let v = open(&mut self.first[i], r.clone(), &mut s1);
                        for ((v, p), g) in v.iter_mut().zip(theta.iter()).zip(grad) {
                            *v = mu * *v - lr * (*g + wd * *p);
                        }
                        hook(v);
                        for (p, v) in theta.iter_mut().zip(v.iter()) {
                            *p += *v;
                        }
                        close(&mut self.first[i], r, &s1);
                    }
                    OptimizerKind::Momentum { mu, nesterov: true } => {
                        let mu = T::from_f64(mu);
                        let v = open(&mut self.first[i], r.clone(), &mut s1);
                        for ((p, v), g) in theta.iter_mut().zip(v.iter_mut()).zip(grad) {
                            let v_prev = *v;
                            *v = mu * *v - lr * (*g + wd * *p);
                            hook(std::slice::from_mut(v));
                            *p += -mu * v_prev + (T::ONE + mu) * *v;
                        }
                        close(&mut self.first[i], r, &s1);
                    }
                    OptimizerKind::Adam { beta1, beta2, eps } => {
                        let (b1, b2, eps) =
                            (T::from_f64(beta1), T::from_f64(beta2), T::from_f64(eps));
                        let c1 = T::ONE / T::from_f64(1.0 - beta1.powi(t));
                        let c2 = T::ONE / T::from_f64(1.0 - beta2.powi(t));
                        let first = open(&mut self.first[i], r.clone(), &mut s1);
                        let second = open(&mut self.second[i], r.clone(), &mut s2);
                        for (((m, v), p), g) in first
                            .iter_mut()
                            .zip(second.iter_mut())
                            .zip(theta.iter())
                            .zip(grad)
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
                        close(&mut self.first[i], r.clone(), &s1);
                        close(&mut self.second[i], r, &s2);
                    }
                }
            }
        }
        self.scratch = s1.capacity() + s2.capacity();
    }

    /// The scratch packed state is decoded into: one block per state
    /// tensor (no longer than the largest parameter), made once a step;
    /// empty when the state is not packed.
    fn scratch_buffers(&self, params: &[&mut Tensor<T>]) -> (Vec<T>, Vec<T>) {
        if !self.state_packed() {
            return (Vec::new(), Vec::new());
        }
        let most = params.iter().map(|p| p.numel()).max().unwrap_or(0);
        let block = STATE_BLOCK.min(most);
        let with = |tensors: usize| {
            Vec::with_capacity(if self.kind.states() >= tensors {
                block
            } else {
                0
            })
        };
        (with(1), with(2))
    }

    /// Updates every parameter in place from its gradient. Each rule is one
    /// tight loop over the parameter, so the compiler can vectorise it.
    pub fn step(&mut self, params: &mut [&mut Tensor<T>], grads: &[Tensor<T>]) {
        self.make_state(params);
        self.steps += 1;
        if self.state_hook.is_some() || self.state_packed() {
            // (Packed state without a hook is packed back as it is, exactly
            // or not at all.)
            let hook: OutputHook<T> = self
                .state_hook
                .clone()
                .unwrap_or_else(|| std::sync::Arc::new(|_: &mut [T]| {}));
            self.step_rounded(params, grads, &hook);
            return;
        }
        let lr = T::from_f64(self.lr);
        let wd = T::from_f64(self.weight_decay);
        let t = self.steps as i32;
        // The state is whole, updated in place: these stay empty.
        let (mut s1, mut s2) = (Vec::new(), Vec::new());
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
                    let v = open(&mut self.first[i], 0..theta.len(), &mut s1);
                    for ((p, v), g) in theta.iter_mut().zip(v.iter_mut()).zip(grad) {
                        *v = mu * *v - lr * (*g + wd * *p);
                        *p += *v;
                    }
                }
                OptimizerKind::Momentum { mu, nesterov: true } => {
                    // Look ahead: θ ← θ − μ·v_prev + (1 + μ)·v.
                    let mu = T::from_f64(mu);
                    let v = open(&mut self.first[i], 0..theta.len(), &mut s1);
                    for ((p, v), g) in theta.iter_mut().zip(v.iter_mut()).zip(grad) {
                        let v_prev = *v;
                        *v = mu * v_prev - lr * (*g + wd * *p);
                        *p += -mu * v_prev + (T::ONE + mu) * *v;
                    }
                }
                OptimizerKind::Adam { beta1, beta2, eps } => {
                    let (b1, b2, eps) = (T::from_f64(beta1), T::from_f64(beta2), T::from_f64(eps));
                    let c1 = T::ONE / T::from_f64(1.0 - beta1.powi(t));
                    let c2 = T::ONE / T::from_f64(1.0 - beta2.powi(t));
                    let first = open(&mut self.first[i], 0..theta.len(), &mut s1);
                    let second = open(&mut self.second[i], 0..theta.len(), &mut s2);
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

/// Values of state the rounded step works on at once.
pub const STATE_BLOCK: usize = 4096;

/// The values `r` of a state tensor, to update in place: its own when
/// whole, else decoded into `scratch` (see [`close`]).
fn open<'a, T: Real>(
    s: &'a mut Stored<T>,
    r: Range<usize>,
    scratch: &'a mut Vec<T>,
) -> &'a mut [T] {
    let clamp = |len: usize| r.start.min(len)..r.end.min(len);
    match s {
        Stored::Whole(t) => {
            let r = clamp(t.data.len());
            &mut t.data[r]
        }
        Stored::Packed { half, bits, .. } => {
            half.unpack_into(&bits[clamp(bits.len())], scratch);
            scratch
        }
    }
}

/// Packs `scratch` back into values `r` of a packed state tensor, in place
/// (nothing for a whole one). The state hook has rounded it to the
/// packing's format; a value it did not (a hook for another format) makes
/// the tensor whole.
fn close<T: Real>(s: &mut Stored<T>, r: Range<usize>, scratch: &[T]) {
    let r = r.start.min(s.numel())..r.end.min(s.numel());
    if let Stored::Packed { half, bits, .. } = s
        && !half.pack_into(scratch, &mut bits[r.clone()])
    {
        // The block's patterns are partly overwritten: take the rest whole.
        let mut t = std::mem::take(s).into_tensor();
        t.data[r].copy_from_slice(scratch);
        *s = Stored::Whole(t);
    }
}
