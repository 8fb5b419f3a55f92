//! The fused step on a GPU: a captured training step run end to end with
//! each group of the fusion pass as its generated WGSL kernel on the
//! adapter, every other kernel (the GEMMs, the reductions, the losses) on
//! the CPU executor, one after the other — and its loss and gradients
//! held to the eager step's within `dlsys_core`'s stated tolerance.
//! Native only: it blocks on each kernel (the CLI and the tests).

use dlsys_core::compile::capture::CaptureError;
use dlsys_core::compile::captured::StepCapture;
use dlsys_core::compile::fuse::Group;
use dlsys_core::compile::fused_run::{Agreement, agreement, run_fused};
use serde::Serialize;

use crate::codegen::program;
use crate::{Job, KernelRunner};

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

/// Runs `step` fused, its groups on `runner`'s adapter.
pub fn fused_on_gpu(
    runner: &mut KernelRunner,
    step: &StepCapture,
) -> Result<FusedOnGpu, CaptureError> {
    let failed = |why: String| CaptureError::GroupKernel { why };
    let inputs = step.inputs();
    let mut kernel = |g: &Group, x: &[f32], extras: &[&[f32]], out: &mut [f32]| {
        let extras = extras.iter().map(|e| e.to_vec()).collect();
        let p =
            program(&g.chain, x.to_vec(), extras, g.cols).map_err(|e| failed(format!("{e:?}")))?;
        let run = runner
            .start_program(&p, 0, 1, false)
            .and_then(Job::wait)
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
