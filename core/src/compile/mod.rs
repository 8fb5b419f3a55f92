//! How a framework turns ops into kernels and memory — the cores of the
//! "Frameworks & compilers" lesson. So far: a model of PyTorch's CUDA
//! caching allocator, replayed on the engine's allocation trace
//! ([`allocator`]).

pub mod allocator;

#[cfg(test)]
mod tests_allocator;
