//! `dlsys-shaders`: the GPU side of dlsys-lab.
//!
//! It owns adapter and device setup (standalone for the CLI and tests, or
//! wrapped around eframe's device in the app), and — as the GPU lesson grows —
//! the WGSL kernels, their dispatch, timing and checking against `dlsys-core`'s
//! CPU references. It never depends on egui.

pub mod attention;
pub mod codegen;
pub mod error;
pub mod fused_step;
pub mod gpu;
pub mod int8_gemm;
pub mod kernel_track;
pub mod ladder;
pub mod plumbing;
pub mod report;
pub mod run;
pub mod selection;
pub mod source;
pub mod summary;
mod unroll;

pub use error::{KernelError, SourceError};
pub use gpu::{Gpu, GpuError, GpuInfo};
pub use ladder::{Ladder, LadderSettings, Outcome};
pub use plumbing::TimerKind;
pub use run::program::{Program, ProgramRow};
pub use run::{Job, KernelRunner, RunOutput, RunSpec};
pub use summary::Summary;
