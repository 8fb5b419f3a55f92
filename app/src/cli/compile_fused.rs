//! `dlsys-lab compile --fuse` on a GPU: the captured step run end to end
//! with every fused group as its generated WGSL kernel on this machine's
//! adapter (the rest on the CPU executor), held to the eager step; and
//! each group's kernels timed on the ladder, op by op and fused — or,
//! without an adapter, why not.

use std::io::{self, Write};

use dlsys_core::compile::captured::capture_step;
use dlsys_core::compile::fused_run::{ABS, REL, timed_kernels};
use dlsys_core::compile::step::StepModel;
use dlsys_core::kernels::{Data, Problem};
use dlsys_core::memory::mlp::MlpSettings;
use dlsys_core::names::Named as _;
use dlsys_shaders::fused_step::{
    ChainTiming, FusedOnGpu, chain_timings, fused_on_gpu, timing_programs,
};
use dlsys_shaders::{Ladder, LadderSettings};

use super::output::line;

/// Timed trials of each kernel.
const TRIALS: u32 = 5;

#[derive(serde::Serialize)]
pub struct FusedReport {
    pub step: FusedOnGpu,
    /// Each group's kernels on the ladder, op by op and fused.
    pub chains: Vec<ChainTiming>,
    pub timer: String,
}

/// The fused step on the adapter, or why it did not run.
pub type FusedGpu = Result<FusedReport, String>;

pub fn fused(model: StepModel, mlp: &MlpSettings) -> FusedGpu {
    let mut runner = super::kernel::kernel_runner()?;
    let step = capture_step(model, mlp).map_err(|e| super::say(&e))?;
    let run = fused_on_gpu(&mut runner, &step).map_err(|e| super::say(&e))?;
    let timed = timed_kernels(&step.ir, &step.inputs(), &step.y).map_err(|e| super::say(&e))?;
    // A generator bug is said as it is.
    let programs = timing_programs(&timed).map_err(|e| format!("{e:?}"))?;
    // The ladder's copy kernel runs first, as always; the programs after.
    let settings = LadderSettings::families(&[], Problem::new(1, 1024), Data::Random, TRIALS);
    let ladder = Ladder::new(&settings, runner.max_elements())
        .map_err(|e| super::say(&e))?
        .with_programs(programs);
    let outcomes = ladder.run_blocking(&mut runner);
    Ok(FusedReport {
        step: run,
        chains: chain_timings(&timed, &outcomes),
        timer: runner.timer().name(super::lang()),
    })
}

pub fn text(f: &FusedGpu, out: &mut dyn Write) -> io::Result<()> {
    let f = match f {
        Ok(f) => f,
        Err(why) => return line(out, "compile.fused_gpu.none", &[("why", why)]),
    };
    let (s, a) = (&f.step, &f.step.agreement);
    line(
        out,
        "compile.fused_gpu",
        &[
            ("adapter", &s.adapter),
            ("groups", &s.groups),
            ("rest", &(s.launches_after - s.groups)),
            ("loss", &s.loss),
            ("eager", &s.eager_loss),
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
    )?;
    let ms = |v: f64| format!("{v:.3}");
    for c in &f.chains {
        let key = if c.ops > 1 {
            "compile.chain_time"
        } else {
            "compile.chain_single"
        };
        line(
            out,
            key,
            &[
                ("group", &(c.group + 1)),
                ("ops", &c.ops),
                ("unfused", &ms(c.unfused_ms)),
                ("fused", &ms(c.fused_ms)),
                ("ratio", &format!("{:.2}", c.unfused_ms / c.fused_ms)),
                ("ubytes", &c.unfused_bytes),
                ("fbytes", &c.fused_bytes),
                (
                    "right",
                    &super::t(if c.right { "bench.yes" } else { "bench.no" }),
                ),
            ],
        )?;
    }
    let (unfused, fused): (f64, f64) = (
        f.chains.iter().map(|c| c.unfused_ms).sum(),
        f.chains.iter().map(|c| c.fused_ms).sum(),
    );
    let launches: usize = f.chains.iter().map(|c| c.ops).sum();
    line(
        out,
        "compile.chains_time",
        &[
            ("launches", &launches),
            ("groups", &f.chains.len()),
            ("unfused", &ms(unfused)),
            ("fused", &ms(fused)),
            ("ratio", &format!("{:.2}", unfused / fused)),
            ("timer", &f.timer),
        ],
    )
}
