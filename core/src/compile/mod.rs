//! How a framework turns ops into kernels and memory — the cores of the
//! "Frameworks & compilers" lesson. So far: a training step captured into
//! a static graph ([`capture`]), replayed alone into a planned arena
//! ([`replay`]) behind guards and recaptures ([`cache`]), with its
//! overhead measured against the eager step ([`overhead`]); a matmul's
//! dispatch through an op registry and algorithm selection ([`dispatch`]); memory
//! planning ahead of time over a step's buffers ([`plan`]) and a model of
//! PyTorch's CUDA caching allocator ([`allocator`], [`expandable`]), both
//! on the engine's allocation trace of a training step ([`step`]).

pub mod allocator;
pub mod cache;
pub mod capture;
pub mod captured;
pub mod chain;
pub mod dispatch;
pub mod expandable;
pub mod fuse;
pub mod fused_run;
pub mod kernel;
pub mod overhead;
pub mod plan;
pub mod replay;
pub mod selected;
pub mod step;

#[cfg(test)]
mod tests_allocator;
#[cfg(test)]
mod tests_capture;
#[cfg(test)]
mod tests_dispatch;
#[cfg(test)]
mod tests_fuse;
#[cfg(test)]
mod tests_plan;
