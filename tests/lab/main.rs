//! The end-to-end tests: the whole app driven through egui_kittest, the
//! ladder seen from the CLI and the page, and the Chinese pages — one test
//! binary (one link of egui, wgpu and every lesson, not five).

mod app;
mod common;
mod glossary;
mod gpu_lessons;
mod keys;
mod ladder;
mod lang;
mod progress;
mod quantisation;
mod search;
