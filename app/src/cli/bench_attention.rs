//! `bench kernels --family attention`: the attention rungs raced on seeded
//! Q, K, V beside the copy kernel and the FMA roof (one `AttnRow` per rung,
//! the same the page shows), and `--sweep`: every rung at N = 128, 256, …
//! up to the longest accepted sequence, the time and the extra memory of
//! each — where the naive rung's cost grows with the N² scores.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::kernels::attention::{
    AttnRung, AttnShape, MAX_SEQ, Qkv, SEED, Tiles, sweep_lengths,
};
use dlsys_shaders::attention::{AttnRow, limits, programs, rows};
use dlsys_shaders::ladder::Inputs;
use dlsys_shaders::{KernelRunner, Ladder, Outcome};

use super::CliError;
use super::lang::{pad, pad_left};
use super::output::{Report, emit, line};
use super::{t, tf};

#[derive(Clone, Debug, Default, clap::Args)]
pub struct AttnBenchArgs {
    #[arg(long)]
    pub heads: Option<u32>,
    #[arg(long)]
    pub seq: Option<u32>,
    #[arg(long)]
    pub head_dim: Option<u32>,
    #[arg(long)]
    pub causal: bool,
    #[arg(long)]
    pub br: Option<u32>,
    #[arg(long)]
    pub bc: Option<u32>,
    #[arg(long)]
    pub sweep: bool,
}

impl AttnBenchArgs {
    /// The flags given, by name (refused for a family without attention).
    pub(super) fn given(&self) -> Option<&'static str> {
        let flags = [
            ("--heads", self.heads.is_some()),
            ("--seq", self.seq.is_some()),
            ("--head-dim", self.head_dim.is_some()),
            ("--causal", self.causal),
            ("--br", self.br.is_some()),
            ("--bc", self.bc.is_some()),
            ("--sweep", self.sweep),
        ];
        super::given::given(&flags).first().copied()
    }

    fn shape(&self, seq: u32) -> Result<AttnShape, String> {
        AttnShape::new(
            self.heads.unwrap_or(1),
            seq,
            self.head_dim.unwrap_or(64),
            self.causal,
        )
        .map_err(|e| super::say(&e))
    }

    fn tiles(&self) -> Tiles {
        let d = Tiles::default();
        Tiles {
            br: self.br.unwrap_or(d.br),
            bc: self.bc.unwrap_or(d.bc),
        }
    }
}

/// The problem raced, for the report.
#[derive(serde::Serialize)]
pub(super) struct AttnRace {
    heads: u32,
    seq: u32,
    head_dim: u32,
    causal: bool,
    br: u32,
    bc: u32,
    #[serde(skip)]
    shape: AttnShape,
    /// (tiles the causal rung skips, tiles of the plain tiled rung).
    tiles_skipped: (u64, u64),
    pub(super) rows: Vec<AttnRow>,
}

/// Adds the attention rungs to `ladder`; a rung the problem or the device
/// refuses goes to `skipped` with the reason.
pub(super) fn add(
    args: &AttnBenchArgs,
    runner: &KernelRunner,
    mut ladder: Ladder,
    skipped: &mut Vec<String>,
) -> Result<(Ladder, AttnRace), CliError> {
    let shape = args.shape(args.seq.unwrap_or(1024))?;
    let tiles = args.tiles();
    let qkv = Qkv::seeded(&shape, SEED);
    let rungs = AttnRung::for_shape(&shape);
    for (rung, program) in
        programs(&rungs, &shape, tiles, limits(runner), &qkv).map_err(|e| super::say(&e))?
    {
        match program {
            Ok(p) => ladder = ladder.with_programs([p]),
            Err(e) => skipped.push(format!("{}: {}", rung.id(), super::say(&e))),
        }
    }
    let race = AttnRace {
        heads: shape.heads,
        seq: shape.seq,
        head_dim: shape.head_dim,
        causal: shape.causal,
        br: tiles.br,
        bc: tiles.bc,
        tiles_skipped: shape.tiles_skipped(tiles),
        shape,
        rows: Vec::new(),
    };
    Ok((ladder, race))
}

impl AttnRace {
    /// Its rows read off the ladder's outcomes.
    pub(super) fn read(&mut self, outcomes: &[Outcome]) {
        self.rows = rows(outcomes, &self.shape);
    }

    pub(super) fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "bench.attn.problem",
            &[
                ("heads", &self.heads),
                ("seq", &self.seq),
                ("d", &self.head_dim),
                (
                    "mask",
                    &t(if self.causal {
                        "bench.attn.causal"
                    } else {
                        "bench.attn.full"
                    }),
                ),
                ("br", &self.br),
                ("bc", &self.bc),
            ],
        )?;
        writeln!(
            out,
            "{} {} {} {:>8} {:>9} {} {} {}",
            pad(t("bench.kernel"), 14),
            pad_left(t("bench.median"), 10),
            pad_left(t("bench.attn.mb"), 9),
            "GB/s",
            "GFLOP/s",
            pad_left(t("bench.attn.extra"), 12),
            pad_left(t("bench.attn.bound"), 10),
            t("bench.ok")
        )?;
        for r in &self.rows {
            writeln!(
                out,
                "{:<14} {:>10.3} {:>9.1} {:>8.2} {:>9.2} {:>12} {:>10.3} {}",
                r.id,
                r.median_ms,
                r.bytes as f64 / 1e6,
                r.gb_per_s,
                r.gflops,
                mib(r.extra_bytes),
                r.share_of_bound,
                t(if r.ok { "bench.yes" } else { "bench.no" })
            )?;
        }
        let time = |id: &str| self.rows.iter().find(|r| r.id == id).map(|r| r.median_ms);
        if let (Some(naive), Some(tiled)) = (time(AttnRung::Naive.id()), time(AttnRung::Tiled.id()))
        {
            let ratio = format!("{:.2}", naive / tiled);
            line(out, "bench.attn.ratio", &[("ratio", &ratio)])?;
        }
        if self.causal {
            let (skipped, total) = self.tiles_skipped;
            line(
                out,
                "bench.attn.skipped",
                &[("skipped", &skipped), ("total", &total)],
            )?;
        }
        Ok(())
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.3} MiB", bytes as f64 / f64::from(1 << 20))
}

/// One sequence length of the sweep: each rung's time, or why it did not run.
#[derive(serde::Serialize)]
struct SweepRow {
    seq: u32,
    rungs: Vec<SweepCell>,
}

#[derive(serde::Serialize)]
struct SweepCell {
    id: &'static str,
    median_ms: Option<f64>,
    extra_bytes: u64,
    ok: Option<bool>,
    refused: Option<String>,
}

#[derive(serde::Serialize)]
struct SweepReport {
    adapter: String,
    heads: u32,
    head_dim: u32,
    causal: bool,
    trials: u32,
    rows: Vec<SweepRow>,
}

/// `--sweep`: every rung at each length of [`sweep_lengths`] up to `--seq`
/// (all of them without it), one ladder per length, progress on stderr.
pub(super) fn sweep(
    args: &AttnBenchArgs,
    trials: u32,
    json: bool,
    mut runner: KernelRunner,
) -> Result<ExitCode, CliError> {
    let tiles = args.tiles();
    let mut report = SweepReport {
        adapter: runner.gpu().info().adapter,
        heads: args.heads.unwrap_or(1),
        head_dim: args.head_dim.unwrap_or(64),
        causal: args.causal,
        trials,
        rows: Vec::new(),
    };
    let longest = args.seq.unwrap_or(MAX_SEQ);
    // The sweep's own range first: its lengths start at 128.
    args.shape(longest)?;
    let shortest = sweep_lengths().first().copied().unwrap_or(128);
    if longest < shortest {
        return Err(CliError::from(tf(
            "bench.attn.sweep_seq",
            &[("seq", &longest), ("shortest", &shortest)],
        )));
    }
    args.tiles().check().map_err(|e| super::say(&e))?;
    for seq in sweep_lengths().into_iter().filter(|n| *n <= longest) {
        eprintln!("{}", tf("bench.attn.sweep_progress", &[("seq", &seq)]));
        let shape = args.shape(seq)?;
        let qkv = Qkv::seeded(&shape, SEED);
        let rungs = AttnRung::for_shape(&shape);
        let made =
            programs(&rungs, &shape, tiles, limits(&runner), &qkv).map_err(|e| super::say(&e))?;
        let mut cells: Vec<SweepCell> = Vec::new();
        let mut ladder = Ladder::with_inputs(
            Vec::new(),
            shape_problem(),
            Inputs::shared(vec![0.0]),
            trials,
        );
        for (rung, program) in made {
            cells.push(SweepCell {
                id: rung.id(),
                median_ms: None,
                extra_bytes: shape.extra_bytes(rung),
                ok: None,
                refused: program.as_ref().err().map(super::say),
            });
            if let Ok(p) = program {
                ladder = ladder.with_programs([p]);
            }
        }
        let outcomes = ladder.run_blocking(&mut runner);
        for outcome in &outcomes {
            match outcome {
                Outcome::Program(Ok(row)) => {
                    if let Some(cell) = cells.iter_mut().find(|c| c.id == row.id) {
                        cell.median_ms = Some(row.median_ms);
                        cell.ok = Some(row.check.ok);
                    }
                }
                Outcome::Program(Err((id, why))) => {
                    if let Some(cell) = cells.iter_mut().find(|c| c.id == *id) {
                        cell.refused = Some(super::say(why));
                    }
                }
                _ => {}
            }
        }
        report.rows.push(SweepRow { seq, rungs: cells });
    }
    emit(&report, json)
}

/// The programs-only ladder's own problem (it runs no built-in kernel).
fn shape_problem() -> dlsys_core::kernels::Problem {
    dlsys_core::kernels::Problem::new(1, 1)
}

impl Report for SweepReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        line(
            out,
            "bench.attn.sweep",
            &[
                ("adapter", &self.adapter),
                ("heads", &self.heads),
                ("d", &self.head_dim),
                ("trials", &self.trials),
            ],
        )?;
        let ids: Vec<&str> = self
            .rows
            .first()
            .map(|r| r.rungs.iter().map(|c| c.id).collect())
            .unwrap_or_default();
        write!(out, "{:>6}", "N")?;
        for id in &ids {
            write!(out, " {id:>12}")?;
        }
        writeln!(
            out,
            " {} {}",
            pad_left(t("bench.attn.scores_mib"), 14),
            pad_left(t("bench.attn.lse_kib"), 10)
        )?;
        for row in &self.rows {
            write!(out, "{:>6}", row.seq)?;
            for cell in &row.rungs {
                let text = match (cell.median_ms, cell.ok) {
                    (Some(ms), Some(true)) => format!("{ms:.3}"),
                    (Some(ms), _) => format!("{ms:.3}!"),
                    (None, _) => "—".to_owned(),
                };
                write!(out, " {text:>12}")?;
            }
            let extra = |id: &str| {
                row.rungs
                    .iter()
                    .find(|c| c.id == id)
                    .map_or(0, |c| c.extra_bytes)
            };
            writeln!(
                out,
                " {:>14.2} {:>10.1}",
                extra(AttnRung::Naive.id()) as f64 / f64::from(1 << 20),
                extra(AttnRung::Tiled.id()) as f64 / 1024.0
            )?;
        }
        for row in &self.rows {
            for cell in &row.rungs {
                if let Some(why) = &cell.refused {
                    line(
                        out,
                        "bench.skipped",
                        &[("what", &format!("{} (N = {}): {why}", cell.id, row.seq))],
                    )?;
                }
            }
        }
        writeln!(out, "{}", t("bench.attn.sweep_note"))
    }

    fn ok(&self) -> bool {
        self.rows
            .iter()
            .flat_map(|r| &r.rungs)
            .all(|c| c.ok != Some(false))
    }
}
