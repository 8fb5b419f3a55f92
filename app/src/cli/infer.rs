//! `dlsys-lab infer`: the serving calculator (`calc`: time to first token,
//! time per output token, tokens/s and the bounds), the paged KV cache
//! against contiguous reservation on a seeded stream (`paged`), static
//! against continuous batching on the virtual clock (`serve`), speculative
//! decoding (`speculate`, in `infer_spec.rs`), and the
//! engine's character model generating with or without its KV cache, every
//! step timed (`generate`), and prefill and decode of a shape model on the
//! CPU's roofline (`roofline`, in `infer_roofline.rs`).
//! The same core values as the inference lesson's page.

use dlsys_core::quant::KvElement;
use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::float::show_sig;
use dlsys_core::inference::batching::{
    self, BatchingRun, BatchingSettings, KvCapacity, KvLayout, Scheme,
};
use dlsys_core::inference::calc::{self, DevicePreset, ServeReport, ServeSettings};
use dlsys_core::inference::generate as textgen;
use dlsys_core::inference::paged::{self, SchemeRun, StreamReport, StreamSettings};
use dlsys_core::inference::speculative::{self, SpecSettings};
use dlsys_core::memory::show_seconds;
use dlsys_core::memory::transformer::Preset;
use dlsys_core::names::Named as _;
use dlsys_core::text::args;

use super::output::{Report, emit, line};
use super::{CliError, choice, say};

#[derive(Clone, Debug, clap::Subcommand)]
pub enum InferCommand {
    Calc(CalcArgs),
    Paged(PagedArgs),
    Serve(ServeArgs),
    Speculate(SpecArgs),
    Generate(GenerateArgs),
    Roofline(super::infer_roofline::RooflineArgs),
}

impl InferCommand {
    pub fn json(&self) -> bool {
        match self {
            Self::Calc(a) => a.json,
            Self::Paged(a) => a.json,
            Self::Serve(a) => a.json,
            Self::Generate(a) => a.json,
            Self::Speculate(a) => a.json,
            Self::Roofline(a) => a.json,
        }
    }
}

#[derive(Clone, Debug, clap::Args)]
pub struct CalcArgs {
    #[arg(long, default_value = "llama-7b", value_parser = choice::choice(&Preset::ALL, |p| p.name()))]
    model: Preset,
    #[arg(long, default_value = "h100-sxm", value_parser = choice::choice(&DevicePreset::ALL, |d| d.name()))]
    device: DevicePreset,
    #[arg(long, default_value_t = 2.0)]
    weight_bytes: f64,
    #[arg(long, default_value = "fp16", value_parser = choice::choice(&KvElement::ALL, |k| k.id()))]
    kv_dtype: KvElement,
    #[arg(long, default_value_t = 512)]
    prompt: u64,
    #[arg(long, default_value_t = 1024)]
    context: u64,
    #[arg(long, default_value_t = 1)]
    batch: u64,
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Debug, clap::Args)]
pub struct PagedArgs {
    #[arg(long, default_value_t = StreamSettings::default().memory_tokens)]
    memory: u64,
    #[arg(long, default_value_t = StreamSettings::default().block_tokens)]
    block: u32,
    #[arg(long, default_value_t = StreamSettings::default().reserve)]
    reserve: u64,
    #[arg(long, default_value_t = StreamSettings::default().requests)]
    requests: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Batching {
    Static,
    Continuous,
    Chunked,
    #[value(alias = "both")]
    All,
}

#[derive(Clone, Debug, clap::Args)]
pub struct ServeArgs {
    #[arg(long, default_value = "llama-7b", value_parser = choice::choice(&Preset::ALL, |p| p.name()))]
    model: Preset,
    #[arg(long, default_value = "h100-sxm", value_parser = choice::choice(&DevicePreset::ALL, |d| d.name()))]
    device: DevicePreset,
    #[arg(long, default_value_t = 5.0)]
    rate: f64,
    #[arg(long, value_enum, default_value_t = Batching::All)]
    batching: Batching,
    /// Default: 512, or one more than --max-batch where that is more.
    #[arg(long)]
    chunk: Option<u32>,
    #[arg(long, default_value_t = 200)]
    requests: u32,
    #[arg(long, default_value_t = 32)]
    max_batch: u32,
    #[arg(long, default_value_t = 2.0)]
    max_wait: f64,
    /// The KV cache in blocks (default: each request reserves the longest).
    #[arg(long)]
    paged: bool,
    #[arg(long, default_value_t = 16)]
    block: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Debug, clap::Args)]
pub struct GenerateArgs {
    #[arg(long, default_value = textgen::DEFAULT_PROMPT)]
    prompt: String,
    #[arg(long, default_value_t = textgen::DEFAULT_TOKENS)]
    tokens: usize,
    #[arg(long)]
    no_kv_cache: bool,
    #[arg(long, default_value_t = 0.0)]
    temperature: f64,
    #[arg(long, default_value_t = 0)]
    top_k: usize,
    #[arg(long, default_value_t = 1.0)]
    top_p: f64,
    #[arg(long, default_value_t = 1)]
    sample_seed: u64,
    #[arg(long, default_value_t = textgen::DEFAULT_STEPS)]
    steps: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Debug, clap::Args)]
pub struct SpecArgs {
    #[arg(long, default_value_t = SpecSettings::default().k)]
    pub(super) k: u32,
    #[arg(long, default_value_t = SpecSettings::default().rounds)]
    pub(super) rounds: u32,
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    #[arg(long, default_value_t = 0.1)]
    pub(super) draft_cost: f64,
    #[arg(long)]
    pub(super) engine: bool,
    #[arg(long, default_value = textgen::DEFAULT_PROMPT)]
    pub(super) prompt: String,
    #[arg(long, default_value_t = textgen::DEFAULT_TOKENS)]
    pub(super) tokens: usize,
    #[arg(long, default_value_t = 0.0)]
    pub(super) temperature: f64,
    #[arg(long, default_value_t = textgen::DEFAULT_STEPS)]
    pub(super) steps: u64,
    #[arg(long)]
    pub(super) json: bool,
}

/// The figures `infer --help` names.
pub(super) fn help_values() -> Vec<(&'static str, String)> {
    vec![
        ("infer_max_k", speculative::MAX_K.to_string()),
        (
            "infer_max_width",
            dlsys_core::inference::roofline::MAX_WIDTH.to_string(),
        ),
        ("infer_max_count", calc::MAX_COUNT.to_string()),
        ("infer_max_requests", batching::MAX_REQUESTS.to_string()),
        ("infer_max_batch", batching::MAX_BATCH.to_string()),
    ]
}

pub fn run(command: &InferCommand) -> Result<ExitCode, CliError> {
    match command {
        InferCommand::Calc(a) => {
            let settings = ServeSettings {
                weight_bytes: a.weight_bytes,
                kv: a.kv_dtype,
                prompt: a.prompt,
                context: a.context,
                batch: a.batch,
                ..ServeSettings::preset(a.model, a.device)
            };
            let report = calc::serve(&settings).map_err(|e| CliError::from(say(&e)))?;
            emit(
                &CalcReport {
                    model: a.model.name(),
                    device: a.device.name(),
                    settings,
                    report,
                },
                a.json,
            )
        }
        InferCommand::Paged(a) => {
            let settings = StreamSettings {
                memory_tokens: a.memory,
                block_tokens: a.block,
                reserve: a.reserve,
                requests: a.requests,
                seed: a.seed,
                ..StreamSettings::default()
            };
            let report = paged::run_stream(&settings).map_err(|e| CliError::from(say(&e)))?;
            emit(&PagedReport { settings, report }, a.json)
        }
        InferCommand::Serve(a) => {
            let settings = BatchingSettings {
                requests: a.requests,
                max_batch: a.max_batch,
                max_wait_s: a.max_wait,
                chunk_tokens: a.chunk.unwrap_or(512.max(a.max_batch.saturating_add(1))),
                kv: if a.paged {
                    KvLayout::Paged
                } else {
                    KvLayout::Contiguous
                },
                block_tokens: a.block,
                seed: a.seed,
                ..BatchingSettings::new(ServeSettings::preset(a.model, a.device), a.rate)
            };
            let schemes: &[Scheme] = match a.batching {
                Batching::Static => &[Scheme::Static],
                Batching::Continuous => &[Scheme::Continuous],
                Batching::Chunked => &[Scheme::Chunked],
                Batching::All => &Scheme::ALL,
            };
            let runs = schemes
                .iter()
                .map(|&scheme| batching::simulate(&settings, scheme))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| CliError::from(say(&e)))?;
            let kv_memory = settings
                .kv_capacity()
                .map_err(|e| CliError::from(say(&e)))?;
            emit(
                &ServeCli {
                    model: a.model.name(),
                    device: a.device.name(),
                    settings,
                    kv_memory,
                    runs,
                },
                a.json,
            )
        }
        InferCommand::Generate(a) => generate(a),
        InferCommand::Speculate(a) => super::infer_spec::speculate(a),
        InferCommand::Roofline(a) => super::infer_roofline::run(a),
    }
}

/// The generation model, trained as the page trains it (progress on
/// stdout unless the output is JSON), and its held-out loss.
pub(super) fn train(
    steps: u64,
    seed: u64,
    json: bool,
) -> Result<(dlsys_core::nn::models::char_model::CharModel, f64), CliError> {
    use dlsys_core::nn::models::text_run::{TextEvent, TextRun};
    let mut run =
        TextRun::new(textgen::model_settings(steps, seed)).map_err(|e| CliError::from(say(&e)))?;
    loop {
        match run.step().map_err(|e| CliError::from(say(&e)))? {
            Some(TextEvent::Report(r)) if !json => {
                let mut out = io::stdout().lock();
                line(
                    &mut out,
                    "infer.generate.training",
                    &[
                        ("step", &r.step),
                        ("steps", &steps),
                        ("loss", &format!("{:.3}", r.held_out_loss)),
                    ],
                )
                .map_err(CliError::from)?;
            }
            Some(TextEvent::Finished(result)) => {
                return Ok((run.model().clone(), result.held_out_loss));
            }
            _ => {}
        }
    }
}

#[derive(serde::Serialize)]
struct CalcReport {
    model: &'static str,
    device: &'static str,
    settings: ServeSettings,
    #[serde(flatten)]
    report: ServeReport,
}

impl Report for CalcReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let (s, r) = (&self.settings, &self.report);
        let gb = |bytes: f64| show_sig(bytes / 1e9, 3);
        line(
            out,
            "infer.calc.setup",
            &[
                ("model", &self.model),
                ("device", &self.device),
                ("params", &show_sig(r.parameters as f64 / 1e9, 3)),
                ("weights", &gb(r.weight_bytes)),
                ("kv", &r.kv_per_token),
            ],
        )?;
        for (key, phase) in [
            ("infer.calc.prefill", &r.prefill),
            ("infer.calc.decode", &r.decode),
        ] {
            line(
                out,
                key,
                &[
                    ("prompt", &s.prompt),
                    ("context", &s.context),
                    ("batch", &s.batch),
                    ("time", &show_seconds(phase.seconds)),
                    ("compute", &show_seconds(phase.compute_s)),
                    ("memory", &show_seconds(phase.memory_s)),
                    ("bound", &phase.bound.name(super::lang())),
                ],
            )?;
        }
        line(
            out,
            "infer.calc.rates",
            &[
                ("tps", &show_sig(r.tokens_per_s, 4)),
                ("limit", &show_sig(r.bandwidth_bound_tokens_per_s, 4)),
                ("ridge", &show_sig(r.ridge_batch, 3)),
                ("attn", &show_sig(r.attention_intensity, 3)),
                ("ridge_i", &show_sig(r.ridge_intensity, 3)),
                ("fit", &r.sequences_fit),
            ],
        )?;
        if !r.weights_fit {
            let memory = show_sig(s.device.memory_gb, 3);
            line(
                out,
                "infer.calc.no_fit",
                &[("weights", &gb(r.weight_bytes)), ("memory", &memory)],
            )?;
        }
        Ok(())
    }
}

#[derive(serde::Serialize)]
struct PagedReport {
    settings: StreamSettings,
    #[serde(flatten)]
    report: StreamReport,
}

fn scheme_line(out: &mut dyn Write, key: &str, run: &SchemeRun) -> io::Result<()> {
    line(
        out,
        key,
        &[
            ("waste", &format!("{:.1}", 100.0 * run.waste())),
            ("mean", &format!("{:.1}", run.mean_running())),
            ("peak", &run.peak_running()),
            ("steps", &run.steps),
            ("finished", &run.finished),
            ("requests", &run.requests),
            ("preempted", &run.preempted),
        ],
    )
}

impl Report for PagedReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let s = &self.settings;
        line(
            out,
            "infer.paged.setup",
            &[
                ("requests", &s.requests),
                ("plo", &s.prompt.0),
                ("phi", &s.prompt.1),
                ("olo", &s.output.0),
                ("ohi", &s.output.1),
                ("memory", &s.memory_tokens),
                ("reserve", &s.reserve),
                ("block", &s.block_tokens),
            ],
        )?;
        scheme_line(out, "infer.paged.contiguous", &self.report.contiguous)?;
        scheme_line(out, "infer.paged.paged", &self.report.paged)
    }
}

#[derive(serde::Serialize)]
struct ServeCli {
    model: &'static str,
    device: &'static str,
    settings: BatchingSettings,
    kv_memory: KvCapacity,
    runs: Vec<BatchingRun>,
}

impl Report for ServeCli {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let s = &self.settings;
        line(
            out,
            "infer.serve.setup",
            &[
                ("requests", &s.requests),
                ("rate", &show_sig(s.rate, 3)),
                ("plo", &s.prompt.0),
                ("phi", &s.prompt.1),
                ("olo", &s.output.0),
                ("ohi", &s.output.1),
                ("model", &self.model),
                ("device", &self.device),
                ("batch", &s.max_batch),
                ("wait", &show_seconds(s.max_wait_s)),
            ],
        )?;
        let memory_key = match s.kv {
            KvLayout::Contiguous => "infer.serve.memory_contiguous",
            KvLayout::Paged => "infer.serve.memory_paged",
        };
        line(out, memory_key, &args(&self.kv_memory.fields()))?;
        for run in &self.runs {
            line(
                out,
                "infer.serve.run",
                &[
                    ("scheme", &run.scheme.name(super::lang())),
                    ("tput", &show_sig(run.throughput, 4)),
                    ("ttft50", &show_seconds(run.ttft_p50)),
                    ("ttft99", &show_seconds(run.ttft_p99)),
                    ("e2e50", &show_seconds(run.e2e_p50)),
                    ("e2e99", &show_seconds(run.e2e_p99)),
                    ("tpot99", &show_seconds(run.tpot_p99)),
                    ("mean", &format!("{:.1}", run.mean_batch)),
                    ("pad", &format!("{:.1}", 100.0 * run.padding_share)),
                    ("waste", &format!("{:.1}", 100.0 * run.kv_waste)),
                    ("preempted", &run.preempted),
                ],
            )?;
        }
        Ok(())
    }
}

/// Trains the generation model (a report line every few steps), then
/// generates with or without the cache.
fn generate(a: &GenerateArgs) -> Result<ExitCode, CliError> {
    let corpus = dlsys_core::nn::models::char_model::Corpus::shipped();
    let sampling = textgen::Sampling {
        temperature: a.temperature,
        top_k: a.top_k,
        top_p: a.top_p,
        seed: a.sample_seed,
    };
    // Bad input is refused before the training it would waste.
    textgen::check_request(&corpus, &a.prompt, a.tokens, textgen::CONTEXT, &sampling)
        .map_err(|e| CliError::from(say(&e)))?;
    let (model, held_out) = train(a.steps, a.seed, a.json)?;
    let generation = textgen::generate(
        &model,
        &corpus,
        &a.prompt,
        a.tokens,
        !a.no_kv_cache,
        &sampling,
    )
    .map_err(|e| CliError::from(say(&e)))?;
    emit(
        &GenerateCli {
            context: model.config.context,
            parameters: model.parameter_count(),
            held_out_loss: held_out,
            median_step_s: generation.median_step_s(),
            generation,
        },
        a.json,
    )
}

/// The trained model (context, parameters, held-out loss) and what it
/// wrote after `prompt`.
pub(super) fn model_lines(
    out: &mut dyn Write,
    (context, parameters, loss): (usize, usize, f64),
    prompt: &str,
    text: &str,
) -> io::Result<()> {
    line(
        out,
        "infer.generate.model",
        &[
            ("context", &context),
            ("params", &parameters),
            ("loss", &format!("{loss:.3}")),
        ],
    )?;
    line(
        out,
        "infer.generate.text",
        &[("prompt", &prompt), ("text", &text)],
    )
}

#[derive(serde::Serialize)]
struct GenerateCli {
    context: usize,
    parameters: usize,
    held_out_loss: f64,
    median_step_s: f64,
    #[serde(flatten)]
    generation: textgen::Generation,
}

impl Report for GenerateCli {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let g = &self.generation;
        let model = (self.context, self.parameters, self.held_out_loss);
        model_lines(out, model, &g.prompt, &g.text)?;
        let (first, last) = (
            g.step_s.first().copied().unwrap_or(0.0),
            g.step_s.last().copied().unwrap_or(0.0),
        );
        line(
            out,
            if g.cached {
                "infer.generate.cached"
            } else {
                "infer.generate.uncached"
            },
            &[
                ("prefill", &show_seconds(g.prefill_s)),
                ("steps", &g.step_s.len()),
                ("median", &show_seconds(self.median_step_s)),
                ("first", &show_seconds(first)),
                ("last", &show_seconds(last)),
                ("total", &show_seconds(g.total_s())),
                ("bytes", &g.cache_bytes),
            ],
        )
    }
}
