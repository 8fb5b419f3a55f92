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
//! - values and gradients in the graph in fp16 or bf16 are packed, 2 bytes
//!   each; under fp32 masters the rounded copies exist only for the pass;
//!   the gradients the optimizer reads are f32 buffers (they are unscaled
//!   there) holding values in the accumulation format;
//! - with checkpointing the layers are cut into segments of `checkpoint`
//!   layers from the input: forward keeps only each segment's input but the
//!   last segment's whole graph, backward recomputes one segment at a time.

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
    /// Layers per checkpointed segment (0: no checkpointing).
    pub checkpoint: usize,
}

/// An MLP step as people write it — the memory lesson's fields and
/// `dlsys-lab memory --mlp`'s flags are one value — turned into an
/// [`MlpShape`] in one place, [`MlpSettings::shape`].
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct MlpSettings {
    /// Layer sizes, input to output, comma-separated (`784,128,10`).
    pub sizes: String,
    pub batch: usize,
    /// An optimizer's name (`sgd`, `momentum`, `adam`, …).
    pub optimizer: String,
    pub precision: Precision,
    /// Activation checkpointing, in segments of `segment` layers.
    pub checkpoint: bool,
    pub segment: usize,
}

impl Default for MlpSettings {
    fn default() -> Self {
        Self {
            sizes: "784,256,256,10".to_owned(),
            batch: 64,
            optimizer: "adam".to_owned(),
            precision: Precision::MixedFp16,
            checkpoint: false,
            segment: 1,
        }
    }
}

impl MlpSettings {
    /// The shape these settings describe, or why they describe none.
    pub fn shape(&self) -> Result<MlpShape, MemoryError> {
        let shape = MlpShape {
            sizes: crate::nn::settings::parse_hidden(&self.sizes)?,
            batch: self.batch,
            optimizer: OptimizerKind::by_name(&self.optimizer)?,
            precision: self.precision,
            checkpoint: if self.checkpoint {
                self.segment.max(1)
            } else {
                0
            },
        };
        shape.validate()?;
        Ok(shape)
    }
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
    /// The forward recomputed by checkpointing (every segment but the last).
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
            return Err(MemoryError::MlpSizes {
                given: self.sizes.len() as u64,
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
    // Segments of k layers; all but the last (`recomputed` layers) are
    // recomputed in backward.
    let k = shape.checkpoint.max(1);
    let segments = layers.div_ceil(k);
    let recomputed = (segments - 1) * k;
    for (i, w) in sizes.windows(2).enumerate() {
        params = sum(what, &[params, product(what, &[w[0], w[1]])?, w[1]])?;
        let flops = product(what, &[2, b, w[0], w[1]])?;
        fwd = sum(what, &[fwd, flops])?;
        bwd = sum(what, &[bwd, flops, if i == 0 { 0 } else { flops }])?;
        if shape.checkpoint > 0 && i < recomputed {
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
    // The weights the forward pass reads: rounded copies of the fp32
    // masters, made for the pass (kept as the graph keeps values), or the
    // model's own weights (f32 buffers between steps).
    if master {
        put(&mut c, Component::Parameters, f.kept(params));
        put(&mut c, Component::MasterWeights, f32s(params, 4));
    } else {
        put(&mut c, Component::Parameters, f32s(params, f.compute));
    }
    // Gradients: in the graph, then in the buffer the optimizer reads.
    let (in_graph, buffer) = (f.kept(params), f32s(params, f.accumulation));
    put(
        &mut c,
        Component::Gradients,
        (in_graph.0.max(buffer.0), in_graph.1.max(buffer.1)),
    );
    let states = shape.optimizer.states() as u64;
    let state = states.saturating_mul(params);
    if f.state_packs {
        // Packed, 2 bytes; the step decodes a block of each state tensor at
        // a time into f32 scratch (no longer than the largest parameter).
        let largest = sizes.windows(2).map(|w| w[0] * w[1]).max().unwrap_or(0);
        let block = largest.min(crate::nn::optimizers::STATE_BLOCK as u64);
        let scratch = block.saturating_mul(4 * states);
        put(
            &mut c,
            Component::OptimizerState,
            (state.saturating_mul(2), scratch),
        );
    } else {
        put(&mut c, Component::OptimizerState, f32s(state, f.state));
    }
    // Saved activations: values in the compute format, and the softmax's
    // probabilities in fp32 while the last layer's graph lives. Each
    // moment is (compute-format values, fp32 values); the role's most is
    // the largest in bytes, its overhead the largest overhead.
    let hidden = |i: usize| b * sizes[i]; // layer i's output (1-based) per batch
    let scalars = if reduced { 2 } else { 1 };
    let (last, probs) = (2 * b * classes + scalars, b * classes);
    let moments: Vec<(u64, u64)> = if shape.checkpoint > 0 {
        // Forward's end: every segment's input after the data, and the last
        // segment's values (its input among the former); then recomputing
        // segment c: the inputs kept before it (its own among them) and the
        // three values of each of its layers.
        let boundaries: u64 = (1..segments).map(|c| hidden(c * k)).sum();
        let saved = |from: usize, to: usize| -> u64 { (from..to).map(|j| 3 * hidden(j + 1)).sum() };
        let mut moments = vec![(boundaries + saved(recomputed, layers - 1) + last, probs)];
        let mut before = 0;
        for c in 0..segments - 1 {
            if c > 0 {
                before += hidden(c * k);
            }
            moments.push((before + saved(c * k, (c + 1) * k), 0));
        }
        moments
    } else {
        vec![(
            (1..layers).map(|i| 3 * hidden(i)).sum::<u64>() + last,
            probs,
        )]
    };
    let bytes = |(values, fp32): (u64, u64)| f.kept(values).0 + fp32 * 4;
    let most = moments.iter().map(|m| bytes(*m)).max().unwrap_or(0);
    let most_overhead = moments.iter().map(|m| f.kept(m.0).1).max().unwrap_or(0);
    put(&mut c, Component::Activations, (most, most_overhead));
    // The batch: inputs in the compute format, labels twice.
    put(&mut c, Component::Inputs, f.kept(b * sizes[0]));
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
