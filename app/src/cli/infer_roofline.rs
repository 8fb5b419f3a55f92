//! `dlsys-lab infer roofline`: prefill and decode of a shape model (the
//! engine's character model, random weights, 315 MB at the default width)
//! on the CPU's measured roofline, and the decode bound beside the
//! measured rate. The same core values as the inference lesson's page.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::float::show_sig;
use dlsys_core::inference::calc::Bound;
use dlsys_core::inference::roofline::{self, CpuRoofs, Point, RooflineReport, RooflineSettings};
use dlsys_core::memory::show_seconds;
use dlsys_core::names::Named as _;

use super::output::{Report, emit, line};
use super::{CliError, say};

#[derive(Clone, Debug, clap::Args)]
pub struct RooflineArgs {
    #[arg(long, default_value_t = RooflineSettings::default().width)]
    width: usize,
    #[arg(long, default_value_t = RooflineSettings::default().prompt)]
    prompt: usize,
    #[arg(long, default_value_t = RooflineSettings::default().steps)]
    steps: usize,
    #[arg(long, default_value_t = roofline::GEMM_SIZE)]
    gemm: usize,
    #[arg(long, default_value_t = roofline::READ_BYTES >> 20)]
    read_mb: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    pub json: bool,
}

pub(super) fn run(a: &RooflineArgs) -> Result<ExitCode, CliError> {
    let settings = RooflineSettings {
        width: a.width,
        prompt: a.prompt,
        steps: a.steps,
        seed: a.seed,
    };
    settings.validate().map_err(|e| CliError::from(say(&e)))?;
    let vocab = dlsys_core::nn::models::char_model::Corpus::shipped()
        .vocab
        .len();
    let roofs = roofline::measure_cpu(a.gemm, a.read_mb.saturating_mul(1 << 20))
        .map_err(|e| CliError::from(say(&e)))?;
    let json = a.json;
    let report = roofline::measure(&settings, vocab, &roofs, |done, of| {
        if !json {
            let mut out = io::stdout().lock();
            // A closed pipe ends the progress, not the measurement.
            let _ = line(
                &mut out,
                "infer.roofline.progress",
                &[("done", &done), ("of", &of)],
            );
        }
    })
    .map_err(|e| CliError::from(say(&e)))?;
    emit(&RooflineCli { roofs, report }, a.json)
}

#[derive(serde::Serialize)]
struct RooflineCli {
    roofs: CpuRoofs,
    #[serde(flatten)]
    report: RooflineReport,
}

fn point_line(
    out: &mut dyn Write,
    key: &str,
    p: &Point,
    roofs: &CpuRoofs,
    steps: usize,
) -> io::Result<()> {
    let r = &roofs.roofline;
    let intensity = p.cost.intensity();
    let bound = if r.is_memory_bound(intensity) {
        Bound::Memory
    } else {
        Bound::Compute
    };
    line(
        out,
        key,
        &[
            ("tokens", &p.tokens),
            ("cached", &p.cached),
            ("steps", &steps),
            ("gflop", &show_sig(p.cost.flops / 1e9, 3)),
            ("mb", &show_sig(p.cost.bytes / 1e6, 4)),
            ("intensity", &show_sig(intensity, 3)),
            ("time", &show_seconds(p.seconds)),
            ("gflops", &show_sig(p.gflops(), 3)),
            ("roof", &show_sig(r.attainable(intensity), 3)),
            ("bound", &bound.name(super::lang())),
        ],
    )
}

impl Report for RooflineCli {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let (roofs, r) = (&self.roofs, &self.report);
        let roof = &roofs.roofline;
        line(
            out,
            "infer.roofline.cpu",
            &[
                ("peak", &show_sig(roof.peak, 3)),
                ("size", &roofs.gemm_size),
                ("bandwidth", &show_sig(roof.bandwidth, 3)),
                ("mb", &show_sig(roofs.read_bytes / 1e6, 3)),
                ("ridge", &show_sig(roof.ridge(), 3)),
            ],
        )?;
        line(
            out,
            "infer.roofline.model",
            &[
                ("width", &r.config.width),
                ("context", &r.config.context),
                ("params", &r.parameters),
                ("mb", &show_sig(r.weight_bytes / 1e6, 4)),
            ],
        )?;
        point_line(out, "infer.roofline.prefill", &r.prefill, roofs, 1)?;
        point_line(
            out,
            "infer.roofline.decode",
            &r.decode_median,
            roofs,
            r.decode.len(),
        )?;
        line(
            out,
            "infer.roofline.bound",
            &[
                ("measured", &show_sig(r.decode_tokens_per_s, 3)),
                ("bound", &show_sig(r.decode_bound_tokens_per_s, 3)),
                ("bandwidth", &show_sig(roof.bandwidth, 3)),
                ("mb", &show_sig(r.decode_median.cost.bytes / 1e6, 4)),
                (
                    "share",
                    &format!(
                        "{:.0}",
                        100.0 * r.decode_tokens_per_s / r.decode_bound_tokens_per_s
                    ),
                ),
            ],
        )?;
        let gemv = r.decode.last().map_or(0.0, |p| p.seconds);
        line(
            out,
            "infer.roofline.gemv",
            &[
                ("gemm", &show_seconds(r.gemm_step_s)),
                ("gemv", &show_seconds(gemv)),
                (
                    "ratio",
                    &show_sig(r.gemm_step_s / gemv.max(f64::MIN_POSITIVE), 3),
                ),
            ],
        )?;
        line(
            out,
            "infer.roofline.verify",
            &[
                ("tokens", &roofline::VERIFY_TOKENS),
                ("time", &show_seconds(r.verify_s)),
                (
                    "steps",
                    &show_sig(r.verify_s / gemv.max(f64::MIN_POSITIVE), 3),
                ),
            ],
        )
    }
}
