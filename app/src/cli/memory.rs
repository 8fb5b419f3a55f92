//! `dlsys-lab memory`: a training step's memory and FLOPs — for an MLP,
//! estimated and measured on the engine; for a transformer, from its
//! configuration (a preset, or sizes given one by one).

use dlsys_core::names::Named as _;
use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_core::memory::{
    Component, FfnKind, Measured, MlpEstimate, MlpSettings, MlpShape, Precision, Preset,
    TransformerReport, TransformerRun, Zero, estimate_mlp, measure_step, show_bytes, show_count,
    show_flops,
};
use dlsys_core::nn::OptimizerKind;
use dlsys_core::quant::KvElement;

use super::choice::{choice, name_of};
use super::lang::{pad, pad_left};
use super::output::{Report, emit, line};
use super::{CliError, say, t, tf};

#[derive(Clone, Debug, clap::Args)]
pub struct MemoryArgs {
    #[arg(long, value_name = "SIZES", conflicts_with = "transformer")]
    mlp: Option<String>,
    #[arg(long, value_name = "MODEL", value_parser = choice(&Preset::ALL, |p| p.name()))]
    transformer: Option<Preset>,
    #[arg(long)]
    layers: Option<u64>,
    #[arg(long)]
    hidden: Option<u64>,
    #[arg(long)]
    heads: Option<u64>,
    #[arg(long)]
    kv_heads: Option<u64>,
    #[arg(long)]
    ffn: Option<u64>,
    #[arg(long, value_parser = choice(&FFN_KINDS, ffn_id))]
    ffn_kind: Option<FfnKind>,
    #[arg(long)]
    vocab: Option<u64>,
    #[arg(long)]
    untied: bool,
    #[arg(long)]
    batch: Option<u64>,
    #[arg(long)]
    seq: Option<u64>,
    #[arg(long, default_value = "adam", ignore_case = true, value_parser = name_of(&OptimizerKind::NAMES, |o| *o))]
    optimizer: String,
    #[arg(long, default_value = "mixed-fp16", value_parser = choice(&Precision::ALL, |p| p.name()))]
    precision: Precision,
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "1",
          value_parser = clap::value_parser!(u64).range(1..=dlsys_core::memory::mlp::MAX_LAYERS as u64))]
    checkpoint: Option<u64>,
    #[arg(long)]
    estimate_only: bool,
    #[arg(long)]
    zero: Option<u64>,
    #[arg(long)]
    dp: Option<u64>,
    #[arg(long, value_parser = choice(&KvElement::ALL, |k| k.id()))]
    kv_dtype: Option<KvElement>,
    #[arg(long)]
    flash_attention: bool,
    #[arg(long)]
    pub json: bool,
}

/// The MLP's batch and a custom transformer's sequence when not given.
const MLP_BATCH: u64 = 64;
const SEQ: u64 = 1024;

/// The figures `memory --help` names.
pub(super) fn help_values() -> Vec<(&'static str, String)> {
    vec![
        ("memory_batch", MLP_BATCH.to_string()),
        ("seq", SEQ.to_string()),
    ]
}

const FFN_KINDS: [FfnKind; 2] = [FfnKind::Gelu, FfnKind::SwiGlu];

fn ffn_id(kind: &FfnKind) -> &'static str {
    match kind {
        FfnKind::Gelu => "gelu",
        FfnKind::SwiGlu => "swiglu",
    }
}

/// An MLP step, estimated and (unless `--estimate-only`) measured.
#[derive(serde::Serialize)]
struct MlpOut {
    shape: MlpShape,
    estimate: MlpEstimate,
    measured: Option<Measured>,
}

/// A transformer's costs.
#[derive(serde::Serialize)]
struct TransformerOut {
    model: String,
    run: TransformerRun,
    report: TransformerReport,
}

impl MemoryArgs {
    /// The transformer's flags that were given, by name.
    fn transformer_flags(&self) -> Vec<&'static str> {
        let flags = [
            ("--layers", self.layers.is_some()),
            ("--hidden", self.hidden.is_some()),
            ("--heads", self.heads.is_some()),
            ("--kv-heads", self.kv_heads.is_some()),
            ("--ffn", self.ffn.is_some()),
            ("--ffn-kind", self.ffn_kind.is_some()),
            ("--vocab", self.vocab.is_some()),
            ("--untied", self.untied),
            ("--seq", self.seq.is_some()),
            ("--zero", self.zero.is_some()),
            ("--dp", self.dp.is_some()),
            ("--kv-dtype", self.kv_dtype.is_some()),
            ("--flash-attention", self.flash_attention),
        ];
        super::given::given(&flags)
    }

    /// The MLP's flags that were given, by name.
    fn mlp_flags(&self) -> Vec<&'static str> {
        super::given::given(&[
            ("--checkpoint", self.checkpoint.is_some()),
            ("--estimate-only", self.estimate_only),
        ])
    }
}

pub fn run(args: &MemoryArgs) -> Result<ExitCode, CliError> {
    // A flag the model asked for does not take is refused, not ignored.
    let refused = if args.mlp.is_some() {
        args.transformer_flags()
            .first()
            .map(|f| (*f, "memory.transformer_only"))
    } else {
        args.mlp_flags().first().map(|f| (*f, "memory.mlp_only"))
    };
    if let Some((flag, key)) = refused {
        return Err(CliError::from(tf(key, &[("flag", &flag)])));
    }
    if let Some(sizes) = &args.mlp {
        let settings = MlpSettings {
            sizes: sizes.clone(),
            batch: usize::try_from(args.batch.unwrap_or(MLP_BATCH)).unwrap_or(usize::MAX),
            optimizer: args.optimizer.clone(),
            precision: args.precision,
            checkpoint: args.checkpoint.is_some(),
            segment: args
                .checkpoint
                .map_or(1, |k| usize::try_from(k).unwrap_or(usize::MAX)),
        };
        let shape = settings.shape().map_err(|e| say(&e))?;
        let estimate = estimate_mlp(&shape).map_err(|e| say(&e))?;
        let measured = if args.estimate_only {
            None
        } else {
            Some(measure_step(&shape).map_err(|e| say(&e))?)
        };
        return emit(
            &MlpOut {
                shape,
                estimate,
                measured,
            },
            args.json,
        );
    }
    let optimizer = OptimizerKind::by_name(&args.optimizer).map_err(|e| say(&e))?;
    let (model, run) = transformer_run(args, optimizer)?;
    let report = run.report().map_err(|e| say(&e))?;
    emit(&TransformerOut { model, run, report }, args.json)
}

/// The transformer the flags describe: a preset with fields changed, or
/// one given by `--layers`, `--hidden` and `--heads` (GPT-style defaults
/// for the rest, its learned positions as many as `--seq`).
fn transformer_run(
    args: &MemoryArgs,
    optimizer: OptimizerKind,
) -> Result<(String, TransformerRun), CliError> {
    let mut run = match args.transformer {
        Some(preset) => TransformerRun::preset(preset),
        None => {
            if args.layers.is_none() && args.hidden.is_none() && args.heads.is_none() {
                return Err(t("memory.what").into());
            }
            let missing = |v: Option<u64>, flag: &str| {
                v.ok_or_else(|| CliError::from(tf("memory.missing", &[("flag", &flag)])))
            };
            let (layers, hidden, heads) = (
                missing(args.layers, "--layers")?,
                missing(args.hidden, "--hidden")?,
                missing(args.heads, "--heads")?,
            );
            let mut run = TransformerRun::preset(Preset::Gpt2Small);
            run.model.layers = layers;
            run.model.hidden = hidden;
            run.model.heads = heads;
            run.model.kv_heads = heads;
            run.model.ffn = hidden.saturating_mul(4);
            run.model.dropout = false;
            run.seq = args.seq.unwrap_or(SEQ);
            run.model.positions = run.seq;
            run
        }
    };
    let m = &mut run.model;
    m.layers = args.layers.unwrap_or(m.layers);
    if let Some(h) = args.hidden {
        if args.ffn.is_none() && m.ffn_kind == FfnKind::Gelu {
            m.ffn = h.saturating_mul(4);
        }
        m.hidden = h;
    }
    if let Some(heads) = args.heads {
        m.kv_heads = if m.kv_heads == m.heads {
            heads
        } else {
            m.kv_heads
        };
        m.heads = heads;
    }
    m.kv_heads = args.kv_heads.unwrap_or(m.kv_heads);
    m.ffn = args.ffn.unwrap_or(m.ffn);
    m.ffn_kind = args.ffn_kind.unwrap_or(m.ffn_kind);
    m.vocab = args.vocab.unwrap_or(m.vocab);
    m.tied &= !args.untied;
    run.batch = args.batch.unwrap_or(1);
    run.seq = args.seq.unwrap_or(run.seq);
    run.precision = args.precision;
    run.states = optimizer.states() as u64;
    run.zero = Zero::from_stage(args.zero.unwrap_or(0)).map_err(|e| say(&e))?;
    run.ranks = args.dp.unwrap_or(1);
    run.kv = args.kv_dtype.unwrap_or_default();
    run.flash_attention = args.flash_attention;
    let name = args
        .transformer
        .map_or_else(|| t("memory.custom").to_owned(), |p| p.name().to_owned());
    Ok((name, run))
}

/// The component's name in this run's language (the lesson's words).
fn component_name(c: Component) -> String {
    c.name(super::lang())
}

const NAME: usize = 26;
const COLUMN: usize = 14;

impl Report for MlpOut {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let s = &self.shape;
        let sizes: Vec<String> = s.sizes.iter().map(ToString::to_string).collect();
        line(
            out,
            "memory.mlp",
            &[
                ("sizes", &sizes.join("→")),
                ("batch", &s.batch),
                ("optimizer", &s.optimizer.name()),
                ("precision", &s.precision.name()),
                ("parameters", &self.estimate.parameters),
                (
                    "checkpoint",
                    &if s.checkpoint > 0 {
                        tf("memory.ckpt_on", &[("k", &s.checkpoint)])
                    } else {
                        t("memory.ckpt_off").to_owned()
                    },
                ),
            ],
        )?;
        writeln!(
            out,
            "{}{}{}",
            pad(t("memory.component"), NAME),
            pad_left(t("memory.estimated"), COLUMN),
            pad_left(t("memory.measured"), COLUMN)
        )?;
        let e = &self.estimate.components;
        let m = self.measured.as_ref();
        let measured =
            |c: Component| m.map_or_else(|| "—".to_owned(), |m| show_bytes(m.components.get(c)));
        for c in Component::ALL {
            let estimated = match c {
                Component::Temporaries => "—".to_owned(),
                _ => show_bytes(e.get(c)),
            };
            if e.get(c) == 0 && m.is_none_or(|m| m.components.get(c) == 0) {
                continue;
            }
            writeln!(
                out,
                "{}{}{}",
                pad(&component_name(c), NAME),
                pad_left(&estimated, COLUMN),
                pad_left(&measured(c), COLUMN)
            )?;
        }
        if let Some(m) = m {
            line(out, "memory.peak", &[("peak", &show_bytes(m.peak))])?;
            for phase in &m.phases {
                let name = phase.phase.name(super::lang());
                writeln!(
                    out,
                    "  {}",
                    tf(
                        "memory.phase",
                        &[("phase", &name), ("peak", &show_bytes(phase.peak))]
                    )
                )?;
            }
        }
        let f = &self.estimate;
        line(
            out,
            "memory.mlp_flops",
            &[
                ("total", &show_flops(f.flops())),
                ("forward", &show_flops(f.flops_forward)),
                ("backward", &show_flops(f.flops_backward)),
                ("recompute", &show_flops(f.flops_recompute)),
            ],
        )?;
        let Some(m) = m else {
            return Ok(());
        };
        let seconds = m.step_seconds;
        line(
            out,
            "memory.step_time",
            &[
                ("ms", &format!("{:.3}", seconds * 1e3)),
                ("steps", &m.timed_steps),
                (
                    "gflops",
                    &format!("{:.2}", f.flops() as f64 / seconds.max(1e-12) / 1e9),
                ),
            ],
        )
    }
}

impl Report for TransformerOut {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let (r, run) = (&self.report, &self.run);
        line(
            out,
            "memory.transformer",
            &[
                ("model", &self.model),
                ("parameters", &show_count(r.parameters)),
                ("exact", &r.parameters),
                ("embedding", &show_count(r.embedding_parameters)),
                ("head_dim", &r.head_dim),
            ],
        )?;
        line(
            out,
            "memory.setup",
            &[
                ("batch", &run.batch),
                ("seq", &run.seq),
                ("tokens", &r.tokens),
                ("precision", &run.precision.name()),
                ("states", &run.states),
                ("per_param", &run.precision.bytes_per_parameter(run.states)),
                ("zero", &run.zero.stage()),
                ("ranks", &run.ranks),
            ],
        )?;
        writeln!(
            out,
            "{}{}",
            pad(t("memory.component"), NAME),
            pad_left(t("memory.per_rank"), COLUMN)
        )?;
        for (c, bytes) in r.per_rank.nonzero() {
            writeln!(
                out,
                "{}{}",
                pad(&component_name(c), NAME),
                pad_left(&show_bytes(bytes), COLUMN)
            )?;
        }
        let states = r.per_rank.training_state();
        writeln!(
            out,
            "{}",
            tf(
                if run.flash_attention {
                    "memory.flash_on"
                } else {
                    "memory.flash_off"
                },
                &[
                    ("scores", &show_bytes(r.scores_per_layer)),
                    ("lse", &show_bytes(r.lse_per_layer)),
                    ("layers", &run.model.layers),
                    ("saved", &show_bytes(r.flash_saved)),
                ],
            )
        )?;
        line(
            out,
            "memory.totals",
            &[
                ("states", &show_bytes(states)),
                ("total", &show_bytes(states.saturating_add(r.activations))),
                (
                    "checkpointed",
                    &show_bytes(states.saturating_add(r.activations_checkpointed)),
                ),
                ("ckpt_activations", &show_bytes(r.activations_checkpointed)),
            ],
        )?;
        line(
            out,
            "memory.kv",
            &[
                ("dtype", &run.kv.id()),
                ("values", &show_bytes(r.kv_per_token.values)),
                ("scales", &show_bytes(r.kv_per_token.scales)),
                ("per_token", &show_bytes(r.kv_cache_per_token)),
                ("context", &show_bytes(r.kv_cache_context)),
                ("batch", &run.batch),
                ("seq", &run.seq),
            ],
        )?;
        line(
            out,
            "memory.flops",
            &[
                ("dense", &show_flops(r.flops_dense)),
                ("attention", &show_flops(r.flops_attention)),
                (
                    "total",
                    &show_flops(r.flops_dense.saturating_add(r.flops_attention)),
                ),
                ("recompute", &show_flops(r.flops_recompute)),
            ],
        )
    }
}
