//! Model parallelism's cores (the "Model parallelism" lesson, in progress).
//! So far: pipeline schedules ([`schedule`]) — GPipe, 1F1B, interleaved
//! 1F1B and ZB-H1 as explicit per-stage lists of operations — and their
//! timeline on a virtual clock, with the bubble and the activations in
//! flight measured and held to the closed forms; and what tensor, sharded
//! and expert parallelism send, with the pipeline's and the utilisation's
//! closed forms ([`cost`]); and the pipeline run on real data, the MLP's
//! layers cut into stages on threads, its gradients held to the unsplit
//! accumulation bit for bit ([`stages`]); and Megatron's tensor
//! parallelism on threads, each worker's shard against the unsplit layer
//! ([`tensor`]), with sequence parallelism's split of the norm's region
//! ([`sequence`]); and ZeRO-3 / FSDP on threads, every worker holding a
//! shard of each layer, its training held to data parallelism's bit for
//! bit and its peak memory to the calculator's ([`sharded`]); and the 3D
//! planner, every TP × PP × DP factorisation of a cluster costed term by
//! term ([`plan`]).

pub mod cost;
pub mod plan;
pub mod schedule;
pub mod sequence;
pub mod sharded;
pub mod stages;
pub mod tensor;
mod workers;

#[cfg(test)]
mod tests;
