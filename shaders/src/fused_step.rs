//! The fused step on a GPU: a captured training step run end to end with
//! each group of the fusion pass as its generated WGSL kernel on the
//! adapter, every other kernel (the GEMMs, the reductions, the losses) on
//! the CPU executor, one after the other — and its loss and gradients
//! held to the eager step's within `dlsys_core`'s stated tolerance.
//! Also each group's kernels timed fused and op by op on the ladder.

use dlsys_core::compile::fused_run::{Agreement, Timed};
use serde::Serialize;

use crate::codegen::{CodegenError, program};
use crate::{Outcome, Program};

/// What the fused step gave on the GPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FusedOnGpu {
    pub adapter: String,
    /// Generated kernels run on the GPU, one per group.
    pub groups: usize,
    /// Kernels launched by the step, unfused and fused.
    pub launches_before: usize,
    pub launches_after: usize,
    pub loss: f32,
    pub eager_loss: f32,
    pub agreement: Agreement,
}

/// Runs `step` fused, its groups on `runner`'s adapter (natively: it
/// blocks on each kernel).
#[cfg(not(target_arch = "wasm32"))]
pub fn fused_on_gpu(
    runner: &mut crate::KernelRunner,
    step: &dlsys_core::compile::captured::StepCapture,
) -> Result<FusedOnGpu, dlsys_core::compile::capture::CaptureError> {
    use dlsys_core::compile::capture::CaptureError;
    use dlsys_core::compile::fuse::Group;
    use dlsys_core::compile::fused_run::{agreement, run_fused};
    let failed = |why: String| CaptureError::GroupKernel { why };
    let inputs = step.inputs();
    let mut kernel = |g: &Group, x: &[f32], extras: &[&[f32]], out: &mut [f32]| {
        let extras = extras.iter().map(|e| e.to_vec()).collect();
        let p =
            program(&g.chain, x.to_vec(), extras, g.cols).map_err(|e| failed(format!("{e:?}")))?;
        let run = runner
            .start_program(&p, 0, 1, false)
            .and_then(crate::Job::wait)
            .map_err(|e| failed(e.to_string()))?;
        if run.words.len() != out.len() {
            return Err(failed(format!(
                "{} values read back, not {}",
                run.words.len(),
                out.len()
            )));
        }
        for (o, w) in out.iter_mut().zip(&run.words) {
            *o = f32::from_bits(*w);
        }
        Ok(())
    };
    let (fusion, run) = run_fused(&step.ir, &inputs, &step.y, &mut kernel)?;
    Ok(FusedOnGpu {
        adapter: runner.gpu().adapter_info.name.clone(),
        groups: fusion.groups.len(),
        launches_before: fusion.launches_before,
        launches_after: fusion.launches_after,
        loss: run.loss,
        eager_loss: step.eager.loss,
        agreement: agreement(&run, &step.eager),
    })
}

/// Timed trials of each kernel when the chains are timed.
pub const TRIALS: u32 = 5;

/// `a / b`, or `None` where `b` is not positive (nothing timed).
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// The chains' timings summed: kernels one op each and their time and
/// bytes, fused kernels and theirs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ChainTotals {
    pub launches: usize,
    pub groups: usize,
    pub unfused_ms: f64,
    pub fused_ms: f64,
    pub unfused_bytes: u64,
    pub fused_bytes: u64,
}

impl ChainTotals {
    pub fn of(chains: &[ChainTiming]) -> Self {
        chains.iter().fold(
            Self {
                groups: chains.len(),
                ..Self::default()
            },
            |t, c| Self {
                launches: t.launches + c.ops,
                unfused_ms: t.unfused_ms + c.unfused_ms,
                fused_ms: t.fused_ms + c.fused_ms,
                unfused_bytes: t.unfused_bytes + c.unfused_bytes,
                fused_bytes: t.fused_bytes + c.fused_bytes,
                ..t
            },
        )
    }
}

/// One group's generated kernels timed on the ladder: its ops one kernel
/// each, and fused.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChainTiming {
    pub group: usize,
    pub ops: usize,
    /// Medians, ms: the ops' kernels summed, and the fused kernel.
    pub unfused_ms: f64,
    pub fused_ms: f64,
    /// Bytes by the traffic models, the same two ways.
    pub unfused_bytes: u64,
    pub fused_bytes: u64,
    /// Whether every kernel's output matched the chain's CPU meaning.
    pub right: bool,
}

/// The programs that time `timed` (each named by [`Timed::id`]).
pub fn timing_programs(timed: &[Timed]) -> Result<Vec<Program>, CodegenError> {
    timed
        .iter()
        .map(|t| {
            let mut p = program(&t.chain, t.x.clone(), t.extras.clone(), t.cols)?;
            p.id = t.id();
            Ok(p)
        })
        .collect()
}

/// Each group's timing from a race of [`timing_programs`]; a group with a
/// kernel that did not run is left out.
pub fn chain_timings(timed: &[Timed], outcomes: &[Outcome]) -> Vec<ChainTiming> {
    let row = |t: &Timed| {
        let id = t.id();
        outcomes.iter().find_map(|o| match o {
            Outcome::Program(Ok(r)) if r.id == id => Some(r),
            _ => None,
        })
    };
    let groups = timed.iter().map(|t| t.group + 1).max().unwrap_or(0);
    (0..groups)
        .filter_map(|group| {
            let of: Vec<&Timed> = timed.iter().filter(|t| t.group == group).collect();
            let rows = of.iter().map(|t| row(t)).collect::<Option<Vec<_>>>()?;
            let mut timing = ChainTiming {
                group,
                ops: of.len().saturating_sub(1),
                unfused_ms: 0.0,
                fused_ms: 0.0,
                unfused_bytes: 0,
                fused_bytes: 0,
                right: true,
            };
            for (t, r) in of.iter().zip(rows) {
                timing.right &= r.check.ok;
                if t.op.is_some() {
                    timing.unfused_ms += r.median_ms;
                    timing.unfused_bytes += r.bytes;
                } else {
                    timing.fused_ms = r.median_ms;
                    timing.fused_bytes = r.bytes;
                }
            }
            Some(timing)
        })
        .collect()
}
