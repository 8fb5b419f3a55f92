//! Training steps of the models beyond the MLP, metered: the small CNN on
//! a batch of seeded images and the character model on seeded windows of
//! the shipped text, each after a first step (so the optimizer's state
//! exists), with the step's allocation trace and its figures.

use rand::{RngExt as _, SeedableRng as _};

use super::MemoryError;
use super::measure::{Measured, Meter};
use crate::nn::models::char_model::{self, CharModel, Corpus};
use crate::nn::models::cnn::{self, CONV1, Cnn};

/// The largest batch metered here (the trace walks the graph after every
/// node of backward).
pub const MAX_METERED_BATCH: usize = 256;

/// Refuses a batch past what is metered here (or none).
pub fn check(batch: usize) -> Result<(), MemoryError> {
    if batch == 0 || batch > MAX_METERED_BATCH {
        return Err(MemoryError::MeteredBatch {
            batch: batch as u64,
            max: MAX_METERED_BATCH as u64,
        });
    }
    Ok(())
}

/// `batch` seeded images (pixels uniform in [0, 1)) and labels for the CNN.
pub fn cnn_batch(batch: usize, seed: u64) -> (Vec<f32>, Vec<usize>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let x = (0..batch * CONV1.input_len())
        .map(|_| rng.random::<f32>())
        .collect();
    let y = (0..batch).map(|_| rng.random_range(0..10)).collect();
    (x, y)
}

/// One metered training step of the CNN on `batch` seeded images.
pub fn measure_cnn_step(batch: usize, seed: u64) -> Result<Measured, MemoryError> {
    check(batch)?;
    let (x, y) = cnn_batch(batch, seed);
    let mut model = Cnn::new(seed);
    let mut optimizer = cnn::optimizer(1e-3);
    model.train_step(&mut optimizer, &x, &y);
    let mut meter = Meter::default();
    let started = web_time::Instant::now();
    model.train_step_metered(&mut optimizer, &x, &y, Some(&mut meter));
    Ok(Measured::from_meter(
        meter,
        started.elapsed().as_secs_f64(),
        1,
    ))
}

/// One metered training step of the character model on `batch` seeded
/// windows of the shipped text.
pub fn measure_char_step(batch: usize, seed: u64) -> Result<Measured, MemoryError> {
    check(batch)?;
    let corpus = Corpus::shipped();
    let config = char_model::shipped_config(&corpus);
    let mut model = CharModel::new(config, seed);
    let mut optimizer = char_model::optimizer(1e-3);
    let windows = corpus.windows(batch, config.context, seed);
    model.train_step(&mut optimizer, &windows);
    let mut meter = Meter::default();
    let started = web_time::Instant::now();
    model.train_step_metered(&mut optimizer, &windows, Some(&mut meter));
    Ok(Measured::from_meter(
        meter,
        started.elapsed().as_secs_f64(),
        1,
    ))
}

/// A data-parallel worker's (or a pipeline stage's) step of the MLP on its
/// own examples, traced: its loss and flat gradient, as
/// [`crate::nn::Mlp::gradient`] computes them, and every buffer the worker
/// held (its replica's weights outside the graph; the graph after forward
/// and after every node of backward). Each worker on its own thread keeps
/// its own meter.
pub fn metered_gradient(
    model: &crate::nn::Mlp<f32>,
    x: &[f32],
    y: &[usize],
    meter: &mut Meter,
) -> (f64, Vec<f32>) {
    use super::measure::{Held, metered_backward};
    use super::precision::Component;
    use super::trace::BufKey;
    use crate::autograd::{Graph, Tensor};
    let features = x.len() / y.len().max(1);
    let mut g = Graph::new();
    let input = g.input(Tensor::new(x.to_vec(), &[y.len(), features]));
    let (logits, params) = model.forward(&mut g, input);
    let loss = g.softmax_cross_entropy(logits, y);
    let value = f64::from(g.value(loss).data[0]);
    let mut outside = Held::default();
    for (i, p) in model.params().iter().enumerate() {
        outside.f32s(BufKey::Param(i as u32), Component::Parameters, p.numel(), 4);
    }
    metered_backward(&mut g, loss, &outside, meter);
    let mut flat = Vec::with_capacity(model.parameter_count());
    for p in params {
        if let Some(grad) = g.grad(p) {
            flat.extend_from_slice(&grad.data);
        }
    }
    (value, flat)
}
