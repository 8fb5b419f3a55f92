//! How a framework turns ops into kernels and memory — the cores of the
//! "Frameworks & compilers" lesson. So far: memory planning ahead of time
//! over a step's buffers ([`plan`]) and a model of PyTorch's CUDA caching
//! allocator ([`allocator`]), both on the engine's allocation trace of a
//! training step ([`step`]).

pub mod allocator;
pub mod expandable;
pub mod plan;
pub mod step;

#[cfg(test)]
mod tests_allocator;
#[cfg(test)]
mod tests_plan;
