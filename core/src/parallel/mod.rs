//! Model parallelism's cores (the "Model parallelism" lesson, in progress).
//! So far: pipeline schedules ([`schedule`]) — GPipe, 1F1B and
//! interleaved 1F1B as explicit per-stage lists of operations — and their
//! timeline on a virtual clock, with the bubble and the activations in
//! flight measured and held to the closed forms.

pub mod schedule;

#[cfg(test)]
mod tests;
