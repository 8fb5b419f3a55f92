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
