//! A from-scratch reverse-mode automatic differentiation engine.
//!
//! [`Tensor`]s hold row-major data; a [`Graph`] records each op as it runs;
//! [`Graph::backward`] walks the graph in reverse topological order, applying
//! each op's derivative (written out, one per op, in `graph/backward.rs`). Gradients are
//! checked against numerical ones by [`gradcheck()`].

pub mod checks;
pub mod gradcheck;
pub mod graph;
pub mod op;
pub mod stored;
pub mod tensor;

pub use checks::Check;
pub use gradcheck::{Band, GradcheckReport, gradcheck, relative_error};
pub use graph::{Buffer, Graph, Stepped};
pub use op::{GradHook, Node, Op, OutputHook, PlantedBug, Var, softmax_rows};
pub use stored::{Half, Stored};
pub use tensor::{Real, Tensor, matmul};

#[cfg(test)]
mod tests;
