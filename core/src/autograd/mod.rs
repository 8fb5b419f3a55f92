//! A from-scratch reverse-mode automatic differentiation engine.
//!
//! [`Tensor`]s hold row-major data; a [`Graph`] records each op as it runs;
//! [`Graph::backward`] walks the graph in reverse topological order, applying
//! each op's derivative (written out, one per op, in `graph/backward.rs`). Gradients are
//! checked against numerical ones by [`gradcheck()`].

pub mod checks;
pub mod conv;
pub mod gradcheck;
pub mod graph;
pub mod layer_math;
pub mod op;
pub mod pointwise;
pub mod stored;
pub mod tensor;
pub mod view;

pub use checks::Check;
pub use conv::{Conv2d, Pool2d, conv_output_side};
pub use gradcheck::{Band, GradcheckReport, gradcheck, relative_error};
pub use graph::{Attention, Buffer, Graph, Stepped, dropout_mask, mean_and_variance};
pub use op::{GradHook, Node, Op, OutputHook, PlantedBug, Var, softmax_rows};
pub use stored::{Half, Stored};
pub use tensor::{Real, Tensor, matmul, max_abs_diff};

#[cfg(test)]
mod tests;
