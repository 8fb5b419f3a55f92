//! `dlsys-lab compile --fuse` on a GPU: the captured step run end to end
//! with every fused group as its generated WGSL kernel on this machine's
//! adapter (the rest on the CPU executor), held to the eager step; and
//! each group's kernels timed on the ladder, op by op and fused — or,
//! without an adapter, why not.

use std::io::{self, Write};

use dlsys_core::compile::captured::{Captured, capture_step};
use dlsys_core::compile::fused_run::{ABS, REL};
use dlsys_core::compile::step::StepModel;
use dlsys_core::kernels::{Data, Problem};
use dlsys_core::memory::mlp::MlpSettings;
use dlsys_core::names::Named as _;
use dlsys_shaders::fused_step::{
    ChainTiming, ChainTotals, FusedOnGpu, TRIALS, chain_timings, fused_on_gpu, ratio,
    timing_programs,
};
use dlsys_shaders::{Ladder, LadderSettings};

use super::output::line;

#[derive(serde::Serialize)]
pub struct FusedReport {
    pub step: FusedOnGpu,
    /// Each group's kernels on the ladder, op by op and fused.
    pub chains: Vec<ChainTiming>,
    pub timer: String,
}

/// The fused step on the adapter, or why it did not run.
pub type FusedGpu = Result<FusedReport, String>;

/// The fused step of `model` on the adapter, and the chains `c` (its
/// capture) found timed there.
pub fn fused(model: StepModel, mlp: &MlpSettings, c: &Captured) -> FusedGpu {
    let mut runner = super::kernel::kernel_runner()?;
    let step = capture_step(model, mlp).map_err(|e| super::say(&e))?;
    let run = fused_on_gpu(&mut runner, &step).map_err(|e| super::say(&e))?;
    // A generator bug is said as it is.
    let programs = timing_programs(&c.timed).map_err(|e| format!("{e:?}"))?;
    // The ladder's copy kernel runs first, as always; the programs after.
    let settings = LadderSettings::families(&[], Problem::new(1, 1024), Data::Random, TRIALS);
    let ladder = Ladder::new(&settings, runner.max_elements())
        .map_err(|e| super::say(&e))?
        .with_programs(programs);
    let outcomes = ladder.run_blocking(&mut runner);
    Ok(FusedReport {
        step: run,
        chains: chain_timings(&c.timed, &outcomes),
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
            ("rest", &s.launches_after.saturating_sub(s.groups)),
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
                ("ratio", &two(ratio(c.unfused_ms, c.fused_ms))),
                ("ubytes", &c.unfused_bytes),
                ("fbytes", &c.fused_bytes),
                (
                    "right",
                    &super::t(if c.right { "bench.yes" } else { "bench.no" }),
                ),
            ],
        )?;
    }
    let s = ChainTotals::of(&f.chains);
    if s.groups == 0 {
        return Ok(());
    }
    line(
        out,
        "compile.chains_time",
        &[
            ("launches", &s.launches),
            ("groups", &s.groups),
            ("unfused", &ms(s.unfused_ms)),
            ("fused", &ms(s.fused_ms)),
            ("ratio", &two(ratio(s.unfused_ms, s.fused_ms))),
            ("timer", &f.timer),
            ("trials", &TRIALS),
        ],
    )
}

/// A ratio to two places, or "–" where nothing was timed.
fn two(r: Option<f64>) -> String {
    r.map_or_else(|| "–".to_owned(), |r| format!("{r:.2}"))
}
