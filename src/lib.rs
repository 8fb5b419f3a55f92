//! The root package of the dlsys-lab workspace. It exists to hold the
//! end-to-end tests in `tests/` (the whole app under `egui_kittest`, the CLI,
//! the self-check of every exercise); the code lives in the member crates.
