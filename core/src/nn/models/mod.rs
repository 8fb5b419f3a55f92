//! Models beyond the MLP, on the engine's layers: a small CNN, a tiny
//! character-level transformer, BatchNorm
//! folding for inference, incremental decoding with a KV cache.

pub mod char_model;
pub mod cnn;
pub mod fold;
pub mod kv_cache;

pub use char_model::{CharConfig, CharModel, Corpus};
pub use cnn::{BnStats, Cnn};
pub use fold::{BatchNormParams, fold_conv, fold_linear};
pub use kv_cache::{AttentionLayer, KvCache};
