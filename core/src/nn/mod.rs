//! Layers, optimizers and a trainer on top of the autograd engine.
//!
//! - [`layers`]: activations, [`Linear`], [`Mlp`];
//! - [`optimizers`]: SGD, momentum, Nesterov, Adam and their state;
//! - [`config`]: [`TrainConfig`], what to train and how;
//! - [`settings`]: settings as people write them (CLI flags, lesson fields)
//!   turned into a [`TrainConfig`];
//! - [`trainer`]: [`Trainer`], its step, history and status;
//! - [`precision`]: what a reduced-precision policy adds to a step;
//! - [`data`]: data sets, by name too, and the loader.

pub mod config;
pub mod data;
mod error;
pub mod layers;
pub mod models;
pub mod optimizers;
mod pass;
pub mod precision;
pub mod scenarios;
pub mod settings;
pub mod trainer;

pub use config::TrainConfig;
pub use data::{DataLoader, Dataset, Packed, Synthetic};
pub use error::{DataError, Divergence, TrainError};
pub use layers::{Activation, Linear, Mlp, TapeStep};
pub use optimizers::{Optimizer, OptimizerKind};
pub use precision::{LayerGradients, MixedEpoch, MixedReport};
pub use trainer::{EpochStats, Status, Trainer, evaluate};

#[cfg(test)]
mod tests;
