//! `dlsys-lab compile --select bench|heuristic`: the captured step's
//! matmuls dispatched through the op registry and the selection cache,
//! the GPU's WGSL rungs raced by the ladder on this machine's adapter (or
//! none, said so), and the crossover sweep.

use std::io::{self, Write};

use dlsys_core::compile::dispatch::{Call, Candidate, GPU_MIN_FLOPS, Mode, Timing};
use dlsys_core::compile::selected::{Selected, selected};
use dlsys_core::kernels::{GemmKind, Kernel};
use dlsys_core::memory::show_seconds;
use dlsys_core::names::Named as _;
use dlsys_shaders::selection::{gemm_seconds, ladder_for};
use dlsys_shaders::{Ladder, TimerKind};

use super::output::line;

/// What the text says about where the GPU times come from.
#[derive(serde::Serialize)]
pub struct Dispatch {
    pub selected: Selected,
    /// The adapter and the timer, or why there is no GPU.
    pub adapter: Result<(String, String), String>,
    /// Whether the GPU's times are GPU timestamps (the kernel alone)
    /// rather than the CPU clock from submit to completion.
    pub timestamps: bool,
}

/// Dispatches `calls` in `mode`, racing the GPU rungs on this machine's
/// adapter when there is one.
pub fn dispatch(calls: &[Call], mode: Mode) -> Dispatch {
    match super::kernel::kernel_runner() {
        Ok(mut runner) => {
            let info = runner.gpu().info();
            let timer = runner.timer().name(super::lang());
            let timestamps = matches!(runner.timer(), TimerKind::Timestamps { .. });
            let max = runner.max_elements();
            // The rungs this adapter runs (a subgroup rung needs subgroups).
            let kinds: Vec<GemmKind> = GemmKind::ALL
                .into_iter()
                .filter(|k| runner.supports(Kernel::Gemm(*k)).is_ok())
                .collect();
            let selected = selected(calls, mode, &kinds, |call| {
                match Ladder::new(&ladder_for(call, &kinds), max) {
                    Ok(ladder) => gemm_seconds(&ladder.run_blocking(&mut runner)),
                    // Too large for this device: every rung fails.
                    Err(_) => kinds.iter().map(|k| (*k, None)).collect(),
                }
            });
            Dispatch {
                selected,
                adapter: Ok((info.adapter, timer)),
                timestamps,
            }
        }
        Err(why) => Dispatch {
            selected: selected(calls, mode, &[], |_| Vec::new()),
            adapter: Err(why),
            timestamps: false,
        },
    }
}

fn shape(c: &Call) -> String {
    format!("{c} {}", c.layout())
}

fn timing(t: &Timing) -> String {
    match t {
        Timing::Seconds(s) => show_seconds(*s),
        Timing::Failed => super::t("compile.select.failed").to_string(),
        Timing::TooSlow => super::t("compile.select.too_slow").to_string(),
        // Refusals are said once per shape.
        Timing::Refused | Timing::NotTimed => "–".to_owned(),
    }
}

/// The dispatch section's text.
pub fn text(d: &Dispatch, out: &mut dyn Write) -> io::Result<()> {
    let s = &d.selected;
    let mode = super::lang::catalog_text(&format!("compile.select.mode.{}", s.mode.key()));
    match &d.adapter {
        Ok((adapter, timer)) => line(
            out,
            "compile.select.gpu",
            &[("mode", &mode), ("adapter", adapter), ("timer", timer)],
        )?,
        Err(why) => line(
            out,
            "compile.select.no_gpu",
            &[("mode", &mode), ("why", why)],
        )?,
    }
    let timed = s.calls.iter().filter(|(_, hit)| !hit).count();
    line(
        out,
        "compile.select.calls",
        &[
            ("calls", &s.calls.len()),
            ("timed", &timed),
            ("hits", &(s.calls.len() - timed)),
            ("second", &s.second_hits),
        ],
    )?;
    for (call, selection) in &s.entries {
        let winner = selection.winner.id();
        let time = selection
            .winner_seconds()
            .map_or_else(|| "–".to_owned(), show_seconds);
        writeln!(out, "  {:<26} → {winner} {time}", shape(call))?;
        if s.mode == Mode::Bench {
            // The candidates that refuse the layout, said once.
            let refused = selection
                .timings
                .iter()
                .filter(|(_, t)| *t == Timing::Refused)
                .count();
            let mut all: Vec<String> = selection
                .timings
                .iter()
                .filter(|(_, t)| *t != Timing::Refused)
                .map(|(c, t): &(Candidate, Timing)| format!("{} {}", c.id(), timing(t)))
                .collect();
            if refused > 0 {
                all.push(super::tf("compile.select.refused", &[("n", &refused)]));
            }
            writeln!(out, "      {}", all.join(" · "))?;
        }
    }
    if s.mode == Mode::Heuristic {
        line(
            out,
            "compile.select.rule",
            &[("flops", &format!("{GPU_MIN_FLOPS:.1e}"))],
        )?;
    }
    if let (Some(c), Some((first, _))) = (&s.chain, s.calls.first()) {
        let layers: Vec<String> = c
            .layers()
            .iter()
            .map(|(key, secs)| {
                format!(
                    "{} {}",
                    super::lang::catalog_text(&format!("compile.select.layer.{key}")),
                    show_seconds(*secs)
                )
            })
            .collect();
        line(
            out,
            "compile.select.chain",
            &[
                ("shape", &shape(first)),
                ("layers", &layers.join(" → ")),
                ("total", &show_seconds(c.total())),
            ],
        )?;
    }
    if s.gpu {
        line(out, "compile.select.sweep", &[])?;
        for r in &s.sweep {
            let gpu = r.gpu.map_or_else(
                || super::t("compile.select.failed").to_string(),
                |(k, secs)| format!("{} (gpu/{})", show_seconds(secs), k.id()),
            );
            writeln!(
                out,
                "  n = {:<4} cpu/sgemm {:<10} gpu {gpu}",
                r.n,
                show_seconds(r.cpu)
            )?;
        }
        match s.crossover {
            Some(n) => line(out, "compile.select.crossover", &[("n", &n)])?,
            None if s.gpu_never_ran() => {
                line(out, "compile.select.gpu_failed", &[])?;
            }
            None => line(out, "compile.select.no_crossover", &[])?,
        }
        line(
            out,
            if d.timestamps {
                "compile.select.timer_stamps"
            } else {
                "compile.select.timer_wall"
            },
            &[],
        )?;
    }
    Ok(())
}
