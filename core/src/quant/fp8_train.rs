//! The engine's MLP trained with its matmul inputs in a low-precision
//! format, as an fp8 GEMM sees them: fp32 (the reference), bf16 (rounded,
//! no scale), or TE's HYBRID fp8 — activations and weights cast to E4M3 in
//! forward, the gradient arriving at each matmul's output cast to E5M2 in
//! backward, each tensor with its own per-tensor scale (current or
//! delayed). The master weights, the bias add, the activation and the loss
//! stay fp32, as they do in TE; the test accuracy is the fp32 model's.

use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use super::QuantError;
use super::fp8::{CastStats, Fp8Scaling, ScaledCast};
use super::qat::{check_run, leaf_grads, loader_and_sgd};
use crate::autograd::{Graph, Tensor, Var};
use crate::float::Format;
use crate::mixed::Rounder;
use crate::nn::data;
use crate::nn::{Activation, Mlp, TrainError, evaluate};

/// The formats of the matmul inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Recipe {
    Fp32,
    Bf16,
    /// E4M3 forward, E5M2 gradients, per-tensor scales.
    Hybrid(Fp8Scaling),
}

impl Recipe {
    pub fn id(self) -> String {
        match self {
            Self::Fp32 => "fp32".to_owned(),
            Self::Bf16 => "bf16".to_owned(),
            Self::Hybrid(Fp8Scaling::Current) => "fp8-hybrid-current".to_owned(),
            Self::Hybrid(Fp8Scaling::Delayed { history }) => {
                format!("fp8-hybrid-delayed:{history}")
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fp8TrainSettings {
    pub recipe: Recipe,
    pub dataset: String,
    pub hidden: usize,
    pub epochs: u64,
    pub lr: f64,
    pub batch: usize,
    pub seed: u64,
}

impl Default for Fp8TrainSettings {
    fn default() -> Self {
        Self {
            recipe: Recipe::Hybrid(Fp8Scaling::Delayed { history: 16 }),
            dataset: "digits".to_owned(),
            hidden: 128,
            epochs: 10,
            lr: 0.05,
            batch: 64,
            seed: 1,
        }
    }
}

/// The most epochs a run takes.
pub const MAX_FP8_EPOCHS: u64 = 100;

/// A run: per epoch, the mean training loss and the test accuracy; and
/// what the casts did over the whole run, forward and backward.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fp8Run {
    pub recipe: Recipe,
    pub loss: Vec<f64>,
    pub accuracy: Vec<f64>,
    pub forward: CastStats,
    pub backward: CastStats,
}

/// One tensor's cast.
#[derive(Clone, Debug)]
enum Caster {
    None,
    /// Rounded through a format with no scale (bf16): the mixed-precision
    /// policy's own rounder.
    Unscaled(Rounder),
    Scaled(ScaledCast),
}

impl Caster {
    fn forward(recipe: Recipe) -> Self {
        Self::of(recipe, Format::fp8_e4m3())
    }

    fn backward(recipe: Recipe) -> Self {
        Self::of(recipe, Format::fp8_e5m2())
    }

    fn of(recipe: Recipe, fp8: Format) -> Self {
        match recipe {
            Recipe::Fp32 => Self::None,
            Recipe::Bf16 => Self::Unscaled(Rounder::new(&Format::bf16())),
            // TE's casts saturate.
            Recipe::Hybrid(scaling) => Self::Scaled(ScaledCast::new(
                Format {
                    saturate: true,
                    ..fp8
                },
                scaling,
                0,
            )),
        }
    }

    fn cast(&mut self, values: &mut [f32]) -> CastStats {
        match self {
            Self::None => CastStats::default(),
            Self::Unscaled(rounder) => {
                let s = rounder.round_slice_counting(values);
                CastStats {
                    values: s.values,
                    scale: 1.0,
                    overflowed: s.overflowed,
                    underflowed: s.underflowed,
                    ..CastStats::default()
                }
            }
            Self::Scaled(cast) => cast.cast(values),
        }
    }
}

/// Trains the MLP from its seeded start under `settings.recipe`;
/// `progress(epoch, epochs)` after each epoch, returning false stops it.
pub fn train(
    settings: &Fp8TrainSettings,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<Fp8Run, QuantError> {
    check_run(settings.epochs, MAX_FP8_EPOCHS, settings.lr, settings.batch)?;
    let (train, test) =
        data::load_split(&settings.dataset, settings.seed).map_err(TrainError::from)?;
    let sizes = [train.features, settings.hidden, train.classes];
    let mut model = Mlp::<f32>::new(&sizes, Activation::Relu, settings.seed)?;
    let layers = model.layers.len();
    let recipe = settings.recipe;
    let mut acts: Vec<Caster> = (0..layers).map(|_| Caster::forward(recipe)).collect();
    let mut weights = acts.clone();
    let grads = Arc::new(Mutex::new((
        (0..layers)
            .map(|_| Caster::backward(recipe))
            .collect::<Vec<_>>(),
        CastStats::default(),
    )));
    let (loader, mut optimizer) =
        loader_and_sgd(train.len(), settings.batch, settings.seed, settings.lr);
    let mut run = Fp8Run {
        recipe,
        loss: Vec::new(),
        accuracy: Vec::new(),
        forward: CastStats::default(),
        backward: CastStats::default(),
    };
    for epoch in 0..settings.epochs {
        let batches = loader.batches(epoch);
        let mut total = 0.0;
        for batch in &batches {
            let (x, y) = train.gather(batch);
            let mut g = Graph::<f32>::new();
            let mut h = g.input(Tensor::new(x, &[y.len(), train.features]));
            let mut outputs = Vec::with_capacity(layers);
            let mut leaves = Vec::with_capacity(2 * layers);
            for (i, layer) in model.layers.iter().enumerate() {
                let w = g.param(layer.weight.clone());
                let b = g.param(layer.bias.clone());
                let hq = cast_node(&mut g, h, &mut acts[i], &mut run.forward);
                let wq = cast_node(&mut g, w, &mut weights[i], &mut run.forward);
                let z = g.matmul(hq, wq);
                outputs.push(z);
                let zb = g.add(z, b);
                h = if i + 1 < layers {
                    model.activation.apply(&mut g, zb)
                } else {
                    zb
                };
                leaves.extend([w, b]);
            }
            let loss = g.softmax_cross_entropy(h, &y);
            if recipe != Recipe::Fp32 {
                let grads = grads.clone();
                g.set_grad_hook(Some(Arc::new(move |v: Var, grad: &mut [f32]| {
                    if let Some(i) = outputs.iter().position(|z| *z == v) {
                        let mut state = grads.lock().unwrap_or_else(PoisonError::into_inner);
                        let stats = state.0[i].cast(grad);
                        state.1.add(&stats);
                    }
                })));
            }
            g.backward(loss);
            let value = f64::from(g.value(loss).data[0]);
            if !value.is_finite() {
                return Err(TrainError::Diverged { epoch: epoch + 1 }.into());
            }
            total += value;
            optimizer.step(&mut model.params_mut(), &leaf_grads(&g, &leaves));
        }
        run.loss.push(total / batches.len().max(1) as f64);
        run.accuracy.push(evaluate(&model, &test).1);
        if !progress(epoch + 1, settings.epochs) {
            break;
        }
    }
    run.backward = grads.lock().unwrap_or_else(PoisonError::into_inner).1;
    Ok(run)
}

/// `v`'s value cast by `caster`, as a node whose gradient passes straight
/// through (the cast is the identity to backward, as an fp8 GEMM's input
/// cast is).
fn cast_node(g: &mut Graph<f32>, v: Var, caster: &mut Caster, stats: &mut CastStats) -> Var {
    if matches!(caster, Caster::None) {
        return v;
    }
    let Tensor { mut data, shape } = g.value(v).into_owned();
    stats.add(&caster.cast(&mut data));
    let ones = Tensor::new(vec![1.0; data.len()], &shape);
    g.fake_quantise(v, Tensor::new(data, &shape), ones)
}
