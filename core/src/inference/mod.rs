//! Serving a model: the engine's character model generating with and
//! without its KV cache, every step timed ([`generate`]); the serving calculator (time to first token, time per
//! output token, the batch where decoding turns compute-bound, how many
//! sequences' caches fit; [`calc`]), the paged KV cache against contiguous
//! reservation on a seeded stream of requests ([`paged`]), static against
//! continuous batching on the virtual clock ([`batching`]), and speculative
//! decoding's exact rejection sampling ([`speculative`]), also with the
//! engine's model as the target, timed ([`spec_run`]). The inference
//! lesson draws these and `dlsys-lab infer` prints them.
//!
//! Prefill and decode on the CPU's roofline, measured on a shape model far
//! larger than the CPU's caches, with the decode bound ([`roofline`]).

pub mod batching;
pub mod calc;
mod error;
pub mod generate;
pub mod paged;
pub mod roofline;
pub mod spec_run;
pub mod speculative;

pub use error::InferError;

/// The median of `xs` (0 for none), by the quantisation lesson's percentile.
pub(crate) fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    crate::quant::calibrate::percentile(&xs, 50.0)
}

/// Prompt and output lengths, each uniform in [lo, hi]: both at least 1,
/// in order, and the longest request within `reserve` tokens.
pub(crate) fn check_lengths(
    prompt: (u64, u64),
    output: (u64, u64),
    reserve: u64,
) -> Result<(), InferError> {
    let bad = |(lo, hi): (u64, u64)| lo == 0 || lo > hi || hi > reserve;
    if bad(prompt) {
        return Err(InferError::PromptLengths {
            lo: prompt.0,
            hi: prompt.1,
            reserve,
        });
    }
    if bad(output) {
        return Err(InferError::OutputLengths {
            lo: output.0,
            hi: output.1,
            reserve,
        });
    }
    let longest = prompt.1.saturating_add(output.1);
    if longest > reserve {
        return Err(InferError::Longest { longest, reserve });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_batching;
#[cfg(test)]
mod tests_batching_memory;
#[cfg(test)]
mod tests_generate;
#[cfg(test)]
mod tests_roofline;
