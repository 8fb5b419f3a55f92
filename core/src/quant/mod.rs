//! Integer quantisation: formats of 2–8 bits, symmetric and affine
//! mappings, per-tensor / per-channel / per-group scales, nearest-even and
//! stochastic rounding, min–max / percentile / MSE calibration
//! ([`scheme`], [`calibrate`], [`tensor`]); the int8 GEMM with int32
//! accumulation and fixed-point requantisation ([`gemm`]); post-training
//! quantisation of the engine's MLP, the outlier demonstration and
//! SmoothQuant ([`ptq`]); the CNN and the char transformer quantised
//! weight-only ([`models`]); quantisation-aware training with the
//! straight-through estimator ([`qat`]); fp8 with per-tensor current or
//! delayed scaling ([`fp8`]) and the MLP trained under TE's HYBRID format
//! against bf16 ([`fp8_train`]); the bytes of quantised weights
//! ([`bytes`]). The quantisation lesson draws these and `dlsys-lab quant`
//! prints them.
//!
//! GPTQ and AWQ on one weight row, for the lesson's worked exercises
//! ([`gptq`]); OCP MX block formats, 32 values to a power-of-two E8M0
//! scale ([`mx`]).

pub mod bytes;
pub mod calibrate;
mod error;
pub mod fp8;
pub mod fp8_train;
pub mod gemm;
pub mod gptq;
pub mod models;
pub mod mx;
pub mod ptq;
pub mod qat;
pub mod scheme;
pub mod tensor;

pub use bytes::{
    KvBytes, KvElement, QuantBytes, dot_bound, fp8_scale, grouped_bytes, quantised_bytes,
};
pub use error::QuantError;
pub use scheme::{
    Calibration, Granularity, IntFormat, MAX_BITS, MIN_BITS, Mapping, QParams, QuantSettings,
};
pub use tensor::{
    ErrorStats, OneValue, QuantTensor, error_stats, fake_quantise, quantise, quantise_value,
    quantise_with_stats,
};

#[cfg(test)]
mod tests;
