//! Serving a model: the serving calculator (time to first token, time per
//! output token, the batch where decoding turns compute-bound, how many
//! sequences' caches fit; [`calc`]), the paged KV cache against contiguous
//! reservation on a seeded stream of requests ([`paged`]), static against
//! continuous batching on the virtual clock ([`batching`]), and speculative
//! decoding's exact rejection sampling ([`speculative`]). The inference
//! lesson draws these and `dlsys-lab infer` prints them.
//!
//! Not here (yet): generation with the engine's char model and its KV
//! cache timed per step, the roofline points of prefill and decode measured.

pub mod batching;
pub mod calc;
mod error;
pub mod generate;
pub mod paged;
pub mod speculative;

pub use error::InferError;

#[cfg(test)]
mod tests;
