//! The kernels on a real adapter (lavapipe in CI), one test binary with a
//! module per subject. The runaway-kernel test stays in its own binary: it
//! loses its device on purpose.

mod attention;
mod compute_kernels;
mod fusion_codegen;
mod int8_gemm;
mod kernel_exercises;
mod kernels;
mod loop_budget;
mod programs;
mod support;
