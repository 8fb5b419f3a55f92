//! `dlsys-lab`: the eframe shell that hosts the lessons, and the command-line
//! face over the same cores.

pub mod app;
#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
pub mod persist;
pub mod selftest;
pub mod setup;
#[cfg(not(target_arch = "wasm32"))]
pub mod track;
#[cfg(target_arch = "wasm32")]
pub mod web;

pub use app::{DlsysApp, Startup};

/// The application id: the window's app id and the name of the data directory.
pub const APP_ID: &str = "dlsys-lab";
