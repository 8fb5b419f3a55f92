//! `dlsys-lab compile --fuse` on a GPU: the captured step run end to end
//! with every fused group as its generated WGSL kernel on this machine's
//! adapter (the rest on the CPU executor), held to the eager step — or,
//! without an adapter, why not.

use std::io::{self, Write};

use dlsys_core::compile::captured::capture_step;
use dlsys_core::compile::fused_run::{ABS, REL};
use dlsys_core::compile::step::StepModel;
use dlsys_core::memory::mlp::MlpSettings;
use dlsys_shaders::fused_step::{FusedOnGpu, fused_on_gpu};

use super::output::line;

/// The fused step on the adapter, or why it did not run.
pub type FusedGpu = Result<FusedOnGpu, String>;

pub fn fused(model: StepModel, mlp: &MlpSettings) -> FusedGpu {
    let mut runner = super::kernel::kernel_runner()?;
    let step = capture_step(model, mlp).map_err(|e| super::say(&e))?;
    fused_on_gpu(&mut runner, &step).map_err(|e| super::say(&e))
}

pub fn text(f: &FusedGpu, out: &mut dyn Write) -> io::Result<()> {
    let f = match f {
        Ok(f) => f,
        Err(why) => return line(out, "compile.fused_gpu.none", &[("why", why)]),
    };
    let a = &f.agreement;
    line(
        out,
        "compile.fused_gpu",
        &[
            ("adapter", &f.adapter),
            ("groups", &f.groups),
            ("rest", &(f.launches_after - f.groups)),
            ("loss", &f.loss),
            ("eager", &f.eager_loss),
        ],
    )?;
    line(
        out,
        if a.holds() {
            "compile.fused_gpu.agrees"
        } else {
            "compile.fused_gpu.differs"
        },
        &[
            ("values", &a.values),
            ("exact", &a.exact),
            ("off", &a.off),
            ("abs", &format!("{ABS:e}")),
            ("rel", &format!("{REL:e}")),
            ("worst", &format!("{:.3}", a.worst)),
        ],
    )
}
