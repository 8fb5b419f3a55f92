//! Models beyond the MLP, on the engine's layers: a small CNN, BatchNorm
//! folding for inference, incremental decoding with a KV cache.

pub mod cnn;
pub mod fold;
pub mod kv_cache;

pub use cnn::{BnStats, Cnn};
pub use fold::{BatchNormParams, fold_conv, fold_linear};
pub use kv_cache::{AttentionLayer, KvCache};
