//! The estimate for the engine's MLP: a pure function of the layer sizes,
//! the batch, the optimizer, the precision and checkpointing, predicting
//! what [`super::measure_step`] measures, and the step's FLOPs. It never
//! calls the engine; it knows what the engine keeps:
//!
//! - each hidden layer saves `x·W`, `+ b` and the activation (3 values per
//!   output per example); the last saves `x·W` and the logits, the
//!   softmax's probabilities (kept in fp32) and the loss (a scalar, and the
//!   scaled loss under a reduced-precision policy);
//! - the batch: the inputs in the compute format, the labels twice (the
//!   loss's copy and the trainer's), `usize` each;
//! - with checkpointing every layer but the last is a segment: forward keeps
//!   only each segment's output, backward recomputes one segment at a time.

use serde::Serialize;

use super::measure::{Formats, f32s};
use super::precision::{Component, Components, Precision};
use super::{MemoryError, Quantity, product, sum};
use crate::nn::OptimizerKind;

/// The deepest MLP estimated here.
pub const MAX_LAYERS: usize = 10_000;

/// An MLP training step to estimate (and to measure).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct MlpShape {
    /// Input, hidden…, output.
    pub sizes: Vec<usize>,
    pub batch: usize,
    pub optimizer: OptimizerKind,
    pub precision: Precision,
    pub checkpoint: bool,
}

/// The estimate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MlpEstimate {
    pub parameters: u64,
    /// The most each component holds during a step (temporaries are
    /// measured, not estimated: 0 here).
    pub components: Components,
    /// Forward matmul FLOPs, `Σ 2·B·in·out`.
    pub flops_forward: u64,
    /// Backward matmul FLOPs: `4·B·in·out` per layer (dX and dW), except the
    /// first, whose input needs no gradient: `2·B·in·out` (dW only).
    pub flops_backward: u64,
    /// The forward recomputed by checkpointing (every layer but the last).
    pub flops_recompute: u64,
}

impl MlpEstimate {
    pub fn flops(&self) -> u64 {
        self.flops_forward
            .saturating_add(self.flops_backward)
            .saturating_add(self.flops_recompute)
    }
}

impl MlpShape {
    pub fn validate(&self) -> Result<(), MemoryError> {
        if self.sizes.len() < 2 {
            return Err(MemoryError::Zero {
                what: Quantity::Layers,
            });
        }
        if self.sizes.contains(&0) {
            return Err(MemoryError::Zero {
                what: Quantity::LayerSize,
            });
        }
        if self.batch == 0 {
            return Err(MemoryError::Zero {
                what: Quantity::Batch,
            });
        }
        if self.sizes.len() - 1 > MAX_LAYERS {
            return Err(MemoryError::TooManyLayers {
                layers: (self.sizes.len() - 1) as u64,
                max: MAX_LAYERS as u64,
            });
        }
        // The engine's own limits (layer width, batch size), said once there.
        crate::nn::Mlp::<f32>::check_sizes(&self.sizes)?;
        crate::nn::TrainConfig {
            batch_size: self.batch,
            ..crate::nn::TrainConfig::default()
        }
        .validate()?;
        Ok(())
    }
}

/// The estimate of one step of `shape`.
pub fn estimate_mlp(shape: &MlpShape) -> Result<MlpEstimate, MemoryError> {
    shape.validate()?;
    let policy = shape.precision.policy();
    let f = Formats::of(&policy);
    let reduced = shape.precision != Precision::Fp32;
    let master = shape.precision.master_bytes() > 0;
    let sizes: Vec<u64> = shape.sizes.iter().map(|s| *s as u64).collect();
    let b = shape.batch as u64;
    let layers = sizes.len() - 1;
    let what = Quantity::Parameters;
    let mut params = 0u64;
    let (mut fwd, mut bwd, mut recompute) = (0u64, 0u64, 0u64);
    for (i, w) in sizes.windows(2).enumerate() {
        params = sum(what, &[params, product(what, &[w[0], w[1]])?, w[1]])?;
        let flops = product(what, &[2, b, w[0], w[1]])?;
        fwd = sum(what, &[fwd, flops])?;
        bwd = sum(what, &[bwd, flops, if i == 0 { 0 } else { flops }])?;
        if shape.checkpoint && i + 1 < layers {
            recompute = sum(what, &[recompute, flops])?;
        }
    }
    let classes = sizes[layers];
    let mut c = Components::default();
    let mut overhead = 0u64;
    let mut put = |c: &mut Components, role: Component, (bytes, extra): (u64, u64)| {
        c.add(role, bytes);
        overhead += extra;
    };
    // The weights the forward pass reads, and the fp32 masters.
    put(&mut c, Component::Parameters, f32s(params, f.compute));
    if master {
        put(&mut c, Component::MasterWeights, f32s(params, 4));
    }
    put(
        &mut c,
        Component::Gradients,
        f32s(params, f.grads.max(f.compute)),
    );
    let states = shape.optimizer.states() as u64;
    put(
        &mut c,
        Component::OptimizerState,
        f32s(states * params, f.state),
    );
    // Saved activations: values in the compute format, and the softmax's
    // probabilities in fp32 while the last layer's graph lives. Each
    // moment is (compute-format values, fp32 values); the role's most is
    // the largest in bytes, its overhead the largest overhead.
    let hidden = |i: usize| b * sizes[i]; // layer i's output (1-based) per batch
    let scalars = if reduced { 2 } else { 1 };
    let (last, probs) = (2 * b * classes + scalars, b * classes);
    let moments: Vec<(u64, u64)> = if shape.checkpoint {
        // Forward's end: every segment output and the last segment; then
        // recomputing segment i (i < layers − 1): the outputs before it
        // (its input among them) and its three values.
        let boundaries: u64 = (1..layers).map(hidden).sum();
        let mut before = 0;
        let mut moments = vec![(boundaries + last, probs)];
        for i in 0..layers - 1 {
            if i > 0 {
                before += hidden(i);
            }
            moments.push((before + 3 * hidden(i + 1), 0));
        }
        moments
    } else {
        vec![(
            (1..layers).map(|i| 3 * hidden(i)).sum::<u64>() + last,
            probs,
        )]
    };
    let bytes = |(values, fp32): (u64, u64)| f32s(values, f.compute).0 + fp32 * 4;
    let most = moments.iter().map(|m| bytes(*m)).max().unwrap_or(0);
    let most_overhead = moments
        .iter()
        .map(|m| f32s(m.0, f.compute).1)
        .max()
        .unwrap_or(0);
    put(&mut c, Component::Activations, (most, most_overhead));
    // The batch: inputs in the compute format, labels twice.
    put(&mut c, Component::Inputs, f32s(b * sizes[0], f.compute));
    let usize_bytes = std::mem::size_of::<usize>() as u64;
    c.add(Component::Inputs, 2 * b * usize_bytes);
    c.set(Component::EmulationOverhead, overhead);
    Ok(MlpEstimate {
        parameters: params,
        components: c,
        flops_forward: fwd,
        flops_backward: bwd,
        flops_recompute: recompute,
    })
}
