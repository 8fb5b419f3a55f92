//! Models beyond the MLP, on the engine's layers: a small CNN, a tiny
//! character-level transformer, each with its training run (`cnn_run`,
//! `text_run`: settings, limits, one step at a time), BatchNorm folding for
//! inference, incremental decoding with a KV cache.

pub mod char_model;
pub mod cnn;
pub mod cnn_run;
pub mod fold;
pub mod kv_cache;
pub mod text_run;

pub use char_model::{CharConfig, CharModel, Corpus};
pub use cnn::{BnStats, Cnn};
pub use fold::{BatchNormParams, fold_conv, fold_linear};
pub use kv_cache::{AttentionLayer, KvCache};

/// The limits every model run shares: a finite positive learning rate and a
/// batch of 1 to `max_batch`.
fn check_step(lr: f64, batch: usize, max_batch: usize) -> Result<(), crate::nn::TrainError> {
    use crate::nn::TrainError;
    if !(lr.is_finite() && lr > 0.0) {
        return Err(TrainError::LearningRate { value: lr });
    }
    if batch == 0 || batch > max_batch {
        return Err(TrainError::ModelBatch {
            value: batch as u64,
            max: max_batch as u64,
        });
    }
    Ok(())
}
