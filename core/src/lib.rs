//! `dlsys-core`: the pure compute cores behind dlsys-lab.
//!
//! Nothing here knows about a UI or a GPU: the float-format emulator, the
//! autograd engine, the CPU reference kernels and the exercise model are plain
//! Rust, so the app, the CLI, the web build and the tests all share them.

pub mod autograd;
pub mod collective;
pub mod compile;
pub mod errors;
pub mod exercise;
pub mod float;
pub mod glossary;
pub mod inference;
pub mod kernels;
pub mod latin;
pub mod memory;
pub mod mixed;
pub mod names;
pub mod nn;
pub mod parallel;
pub mod pipeline;
pub mod quant;
pub mod search;
pub mod study;
pub mod text;
