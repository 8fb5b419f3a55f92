//! `dlsys-lab infer roofline`: prefill and decode of a shape model (the
//! engine's character model, random weights, 315 MB at the default width)
//! on the CPU's measured roofline, and the decode bound beside the
//! measured rate. The same core values as the inference lesson's page.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::float::show_sig;
use dlsys_core::inference::roofline::{self, CpuRoofs, RooflineReport, RooflineSettings};
use dlsys_core::text::args;

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

impl Report for RooflineCli {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let (roofs, r) = (&self.roofs, &self.report);
        line(out, "infer.roofline.cpu", &args(&roofs.fields()))?;
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
        let (lang, steps) = (super::lang(), r.decode.len());
        let prefill = r.prefill.fields(roofs, steps, lang);
        line(out, "infer.roofline.prefill", &args(&prefill))?;
        let decode = r.decode_median.fields(roofs, steps, lang);
        line(out, "infer.roofline.decode", &args(&decode))?;
        // A model that fits in the CPU's cache outruns the memory bound.
        let bound = if r.decode_tokens_per_s > r.decode_bound_tokens_per_s {
            "infer.roofline.bound_cached"
        } else {
            "infer.roofline.bound"
        };
        line(out, bound, &args(&r.bound_fields(roofs)))?;
        let rival = r.rival_fields();
        line(out, "infer.roofline.gemv", &args(&rival))?;
        line(out, "infer.roofline.verify", &args(&rival))
    }
}
