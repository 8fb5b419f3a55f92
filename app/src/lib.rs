//! `dlsys-lab`: the eframe shell that hosts the lessons, and the command-line
//! face over the same cores.

pub mod app;
#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
mod gpu_panel;
pub mod notice;
pub mod persist;
pub mod selftest;
pub mod setup;
#[cfg(not(target_arch = "wasm32"))]
pub mod track;
#[cfg(target_arch = "wasm32")]
pub mod web;

pub use app::{DlsysApp, Startup};
pub use notice::Notice;

/// The application id: the window's app id and the name of the data directory.
pub const APP_ID: &str = "dlsys-lab";

/// The system's language: `LC_ALL`, `LC_MESSAGES`, then `LANG` on the
/// desktop (the first one set decides, as for every POSIX program);
/// `navigator.language` in the browser. English when none says otherwise.
pub fn system_lang() -> dlsys_core::text::Lang {
    #[cfg(not(target_arch = "wasm32"))]
    let found = dlsys_core::text::Lang::from_env();
    #[cfg(target_arch = "wasm32")]
    let found = web::browser_language().and_then(|l| dlsys_core::text::Lang::from_locale(&l));
    found.unwrap_or_default()
}
