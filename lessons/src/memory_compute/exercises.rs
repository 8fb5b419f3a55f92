//! The memory lesson's exercises. Every answer comes from the memory core
//! (`dlsys_core::memory`): the transformer calculator, the bytes each
//! precision stores, the MLP estimate's FLOPs.

use dlsys_core::exercise::{AnswerChecker, AnswerKind, Mistake, Task};
use dlsys_core::float::show_sig;
use dlsys_core::memory::{
    FfnKind, Layout, MlpShape, Norm, Precision, Preset, TransformerRun, Zero, estimate_mlp,
};
use dlsys_core::nn::OptimizerKind;
use dlsys_core::text::Lang;
use rand::RngExt as _;

use super::TEXT;
use crate::kit::exercise_kit::{pick, show};

/// Within 0.5 % (answers are rounded to three or four digits).
fn close(expected: f64) -> AnswerChecker {
    AnswerChecker::close(expected, 5e-3)
}

const GB: f64 = 1e9;
const GIB: f64 = (1u64 << 30) as f64;

/// The known mistakes, leaving out any that the checker would accept as
/// the answer or that repeat an earlier one.
fn mistakes(answer: f64, candidates: Vec<(f64, String)>) -> Vec<Mistake> {
    dlsys_core::exercise::number_mistakes(answer, candidates, show)
}

/// `seq`, or the preset's context when the model learned fewer positions
/// (GPT-2 cannot take 2,048 tokens).
fn within_context(preset: Preset, seq: u64) -> u64 {
    match preset.config().positions {
        0 => seq,
        positions => seq.min(positions),
    }
}

/// A preset's run at `batch` × `seq`, changed by `tweak` (the sizes used
/// here always have a report, which the tests hold; an empty one otherwise).
fn report(
    preset: Preset,
    batch: u64,
    seq: u64,
    tweak: impl FnOnce(&mut TransformerRun),
) -> dlsys_core::memory::TransformerReport {
    let mut run = TransformerRun::preset(preset);
    run.batch = batch;
    run.seq = seq;
    tweak(&mut run);
    run.report().unwrap_or_default()
}

crate::exercises! {
    catalog: TEXT,
    salt: 0x3e3_0a11,
    training_state_bytes => training_state,
    mixed_precision_halves => halves,
    kv_cache_context => kv_cache,
    activations_per_layer => activations,
    checkpointed_activations => checkpointed,
    zero2_per_rank => zero2,
    training_flops => training_flops,
    first_layer_flops => first_layer_flops,
    layer_parameters => layer_parameters,
}

fn precision_words(p: Precision, lang: Lang) -> String {
    t(lang, &format!("ex.precision.{}", p.name()))
}

fn optimizer_words(states: u64, lang: Lang) -> String {
    t(lang, if states == 2 { "ex.opt.adam" } else { "ex.opt.momentum" })
}

fn training_state(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let billions = pick(&mut rng, &[1.3, 2.7, 6.7, 13.0, 30.0, 65.0, 70.0, 175.0]);
    let precision = pick(
        &mut rng,
        &[Precision::MixedFp16, Precision::MixedFp16, Precision::MixedBf16, Precision::Fp32, Precision::PureBf16],
    );
    let states = pick(&mut rng, &[2, 2, 1]);
    let n = billions * 1e9;
    let per = precision.bytes_per_parameter(states) as f64;
    let answer = per * n / GB;
    let c = precision.compute_bytes() as f64;
    let fill = |key: &str, value: f64| TEXT.fill(lang, key, &[("value", &show(value))]);
    let mut candidates = vec![
        (c * n / GB, fill("ex.training_state_bytes.weights_only", c * n / GB)),
        (
            (2.0 * c + precision.master_bytes() as f64) * n / GB,
            t(lang, "ex.training_state_bytes.no_states"),
        ),
        (
            (c + precision.master_bytes() as f64 + states as f64 * precision.state_bytes() as f64) * n / GB,
            t(lang, "ex.training_state_bytes.no_grads"),
        ),
    ];
    if precision.master_bytes() > 0 {
        candidates.push((
            Precision::Fp32.bytes_per_parameter(states) as f64 * n / GB / 2.0,
            t(lang, "ex.training_state_bytes.halved"),
        ));
    }
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.training_state_bytes.prompt",
            &[
                ("billions", &billions),
                ("precision", &precision_words(precision, lang)),
                ("optimizer", &optimizer_words(states, lang)),
            ],
        ),
        kind: AnswerKind::Number,
        checker: close(answer),
        hints: vec![t(lang, "ex.training_state_bytes.hint1"), {
            let adam = |layout| Precision::MixedFp16.per_parameter(2, layout).to_string();
            TEXT.fill(
                lang,
                "ex.training_state_bytes.hint2",
                &[("master_copy", &adam(Layout::MasterCopy)), ("autocast", &adam(Layout::Autocast))],
            )
        }],
        explanation: TEXT.fill(
            lang,
            "ex.training_state_bytes.explain",
            &[
                ("weights", &precision.compute_bytes()),
                ("grads", &precision.compute_bytes()),
                ("master", &precision.master_bytes()),
                ("states", &states),
                ("state", &precision.state_bytes()),
                ("per", &per),
                ("answer", &show(answer)),
            ],
        ),
        reference: show(answer),
        mistakes: mistakes(answer, candidates),
    }
}

fn halves(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let low = pick(
        &mut rng,
        &[Precision::MixedFp16, Precision::MixedBf16, Precision::PureBf16],
    );
    let states = pick(&mut rng, &[2, 1]);
    let fp32 = Precision::Fp32.bytes_per_parameter(states);
    let mixed = low.bytes_per_parameter(states);
    let pure = low.master_bytes() == 0;
    // bf16's precision from the emulator: significand bits, and the decimal
    // digits they are worth.
    let bf16 = dlsys_core::float::Format::bf16().range();
    // Options: the right ratio and the classic beliefs, in a seeded order.
    let ratio = mixed as f64 / fp32 as f64;
    let keys = ["ex.mixed_precision_halves.same", "ex.mixed_precision_halves.half", "ex.mixed_precision_halves.quarter", "ex.mixed_precision_halves.more"];
    let correct_key = if mixed == fp32 {
        0
    } else if mixed * 2 == fp32 {
        1
    } else if mixed > fp32 {
        3
    } else {
        // Not a clean ratio: say so with the numbers (never for these policies).
        0
    };
    let mut order: Vec<usize> = (0..4).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let options: Vec<String> = order.iter().map(|k| t(lang, keys[*k])).collect();
    let correct = order.iter().position(|k| *k == correct_key).unwrap_or(0);
    let wrong = order
        .iter()
        .enumerate()
        .filter(|(_, k)| **k != correct_key)
        .map(|(i, k)| Mistake {
            answer: (i + 1).to_string(),
            feedback: TEXT.fill(
                lang,
                &format!("{}.why", keys[*k]),
                &[("fp32", &fp32), ("mixed", &mixed)],
            ),
        })
        .collect();
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.mixed_precision_halves.prompt",
            &[
                ("precision", &precision_words(low, lang)),
                ("optimizer", &optimizer_words(states, lang)),
            ],
        ),
        kind: AnswerKind::Choice { options },
        checker: AnswerChecker::Choice { correct },
        hints: vec![
            t(lang, "ex.mixed_precision_halves.hint1"),
            if pure {
                t(lang, "ex.mixed_precision_halves.hint2_pure")
            } else {
                TEXT.fill(
                    lang,
                    "ex.mixed_precision_halves.hint2",
                    &[
                        ("compute", &low.compute_bytes()),
                        ("master", &low.master_bytes()),
                        ("state", &low.state_bytes()),
                    ],
                )
            },
        ],
        explanation: TEXT.fill(
            lang,
            if pure { "ex.mixed_precision_halves.explain_pure" } else { "ex.mixed_precision_halves.explain" },
            &[
                ("fp32", &fp32),
                ("mixed", &mixed),
                ("ratio", &show_sig(ratio, 3)),
                ("master", &low.master_bytes()),
                ("bits", &(bf16.man_bits + 1)),
                ("digits", &show_sig(bf16.decimal_digits, 2)),
            ],
        ),
        reference: (correct + 1).to_string(),
        mistakes: wrong,
    }
}

fn kv_cache(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let preset = pick(&mut rng, &[Preset::Llama7b, Preset::Llama2_70b, Preset::Gpt3]);
    let context = within_context(preset, pick(&mut rng, &[2048u64, 4096, 8192, 32_768]));
    let batch = pick(&mut rng, &[1u64, 4, 8, 16]);
    let m = preset.config();
    let r = report(preset, batch, context, |_| {});
    let answer = r.kv_cache_context as f64 / GIB;
    let mut candidates = vec![
        (answer / 2.0, t(lang, "ex.kv_cache_context.no_v")),
        (answer * 2.0, t(lang, "ex.kv_cache_context.fp32")),
        (answer / batch as f64, t(lang, "ex.kv_cache_context.no_batch")),
    ];
    if m.kv_heads != m.heads {
        candidates.push((
            answer * (m.heads / m.kv_heads) as f64,
            TEXT.fill(lang, "ex.kv_cache_context.all_heads", &[("kv", &m.kv_heads), ("heads", &m.heads)]),
        ));
    }
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.kv_cache_context.prompt",
            &[
                ("model", &preset.name()),
                ("layers", &m.layers),
                ("heads", &m.heads),
                ("kv", &m.kv_heads),
                ("head_dim", &m.head_dim()),
                ("context", &context),
                ("batch", &batch),
            ],
        ),
        kind: AnswerKind::Number,
        checker: close(answer),
        hints: vec![t(lang, "ex.kv_cache_context.hint1"), t(lang, "ex.kv_cache_context.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.kv_cache_context.explain",
            &[
                ("layers", &m.layers),
                ("kv", &m.kv_heads),
                ("head_dim", &m.head_dim()),
                ("per_token", &dlsys_core::memory::show_bytes(r.kv_cache_per_token)),
                ("context", &context),
                ("batch", &batch),
                ("answer", &show(answer)),
            ],
        ),
        reference: show(answer),
        mistakes: mistakes(answer, candidates),
    }
}

fn activations(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let preset = pick(&mut rng, &[Preset::Gpt2Small, Preset::Gpt3]);
    let seq = within_context(preset, pick(&mut rng, &[512u64, 1024, 2048]));
    let batch = pick(&mut rng, &[2u64, 4, 8, 16]);
    let m = preset.config();
    let r = report(preset, batch, seq, |_| {});
    let answer = r.activations_per_layer as f64 / GIB;
    let no_scores = (34 * seq * batch * m.hidden) as f64 / GIB;
    let candidates = vec![
        (no_scores, t(lang, "ex.activations_per_layer.no_scores")),
        (answer / batch as f64, t(lang, "ex.activations_per_layer.no_batch")),
        (answer * m.layers as f64, t(lang, "ex.activations_per_layer.all_layers")),
    ];
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.activations_per_layer.prompt",
            &[
                ("model", &preset.name()),
                ("hidden", &m.hidden),
                ("heads", &m.heads),
                ("seq", &seq),
                ("batch", &batch),
            ],
        ),
        kind: AnswerKind::Number,
        checker: close(answer),
        hints: vec![t(lang, "ex.activations_per_layer.hint1"), t(lang, "ex.activations_per_layer.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.activations_per_layer.explain",
            &[
                ("sbh", &(seq * batch * m.hidden)),
                ("scores", &(5 * m.heads * seq * seq * batch)),
                ("answer", &show(answer)),
            ],
        ),
        reference: show(answer),
        mistakes: mistakes(answer, candidates),
    }
}

fn checkpointed(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let preset = pick(&mut rng, &[Preset::Gpt2Small, Preset::Gpt3, Preset::Llama7b]);
    let seq = within_context(preset, pick(&mut rng, &[1024u64, 2048]));
    let batch = pick(&mut rng, &[1u64, 2, 4, 8]);
    let m = preset.config();
    let r = report(preset, batch, seq, |_| {});
    let (layer, input, layers) = (
        r.activations_per_layer as f64 / GIB,
        r.layer_input as f64 / GIB,
        m.layers as f64,
    );
    // The recomputed layer's input is one of the kept inputs.
    let answer = layers * input + (layer - input);
    let candidates = vec![
        (layers * layer, t(lang, "ex.checkpointed_activations.unchanged")),
        (layers * input, t(lang, "ex.checkpointed_activations.no_recompute")),
        (layer, t(lang, "ex.checkpointed_activations.no_inputs")),
        (layers * input + layer, t(lang, "ex.checkpointed_activations.input_twice")),
    ];
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.checkpointed_activations.prompt",
            &[
                ("model", &preset.name()),
                ("layers", &m.layers),
                ("layer", &show(layer)),
                ("input", &show(input)),
            ],
        ),
        kind: AnswerKind::Number,
        checker: close(answer),
        hints: vec![t(lang, "ex.checkpointed_activations.hint1"), t(lang, "ex.checkpointed_activations.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.checkpointed_activations.explain",
            &[
                ("layers", &m.layers),
                ("input", &show(input)),
                ("rest", &show(layer - input)),
                ("answer", &show(answer)),
                ("without", &show(layers * layer)),
            ],
        ),
        reference: show(answer),
        mistakes: mistakes(answer, candidates),
    }
}

fn zero2(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let preset = pick(&mut rng, &[Preset::Llama7b, Preset::Llama2_70b, Preset::Gpt3]);
    let ranks = pick(&mut rng, &[4u64, 8, 16, 64]);
    let per_rank = |zero: Zero| {
        let r = report(preset, 1, 1024, |run| {
            run.zero = zero;
            run.ranks = ranks;
        });
        r.per_rank.training_state() as f64 / GB
    };
    let answer = per_rank(Zero::Stage2);
    let n = preset.config().parameters().unwrap_or(0);
    let candidates = vec![
        (per_rank(Zero::Off), t(lang, "ex.zero2_per_rank.off")),
        (per_rank(Zero::Stage1), t(lang, "ex.zero2_per_rank.stage1")),
        (per_rank(Zero::Stage3), t(lang, "ex.zero2_per_rank.stage3")),
    ];
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.zero2_per_rank.prompt",
            &[
                ("model", &preset.name()),
                ("parameters", &dlsys_core::memory::show_count(n)),
                ("ranks", &ranks),
            ],
        ),
        kind: AnswerKind::Number,
        checker: close(answer),
        hints: vec![t(lang, "ex.zero2_per_rank.hint1"), t(lang, "ex.zero2_per_rank.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.zero2_per_rank.explain",
            &[
                ("ranks", &ranks),
                ("off", &show(per_rank(Zero::Off))),
                ("answer", &show(answer)),
                ("stage3", &show(per_rank(Zero::Stage3))),
            ],
        ),
        reference: show(answer),
        mistakes: mistakes(answer, candidates),
    }
}

fn training_flops(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let preset = pick(&mut rng, &Preset::ALL);
    let batch = pick(&mut rng, &[8u64, 16, 32, 64, 256]);
    let seq = preset.context();
    let r = report(preset, batch, seq, |_| {});
    let pflop = |x: f64| x / 1e15;
    let answer = pflop(r.flops_dense as f64);
    let per = r.flops_dense as f64 / 6.0;
    let candidates = vec![
        (pflop(2.0 * per), t(lang, "ex.training_flops.forward")),
        (pflop(8.0 * per), t(lang, "ex.training_flops.recompute")),
        (pflop(4.0 * per), t(lang, "ex.training_flops.backward")),
        (pflop(r.parameters as f64 * batch as f64 * 6.0), t(lang, "ex.training_flops.sequences")),
    ];
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.training_flops.prompt",
            &[
                ("model", &preset.name()),
                ("parameters", &dlsys_core::memory::show_count(r.parameters)),
                ("batch", &batch),
                ("seq", &seq),
            ],
        ),
        kind: AnswerKind::Number,
        checker: close(answer),
        hints: vec![t(lang, "ex.training_flops.hint1"), t(lang, "ex.training_flops.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.training_flops.explain",
            &[
                ("tokens", &r.tokens),
                ("answer", &show(answer)),
                ("attention", &show(pflop(r.flops_attention as f64))),
            ],
        ),
        reference: show(answer),
        mistakes: mistakes(answer, candidates),
    }
}

fn first_layer_flops(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let inputs = pick(&mut rng, &[784usize, 1024, 3072]);
    let outputs = pick(&mut rng, &[128usize, 256, 512, 1000]);
    let batch = pick(&mut rng, &[32usize, 64, 128, 256]);
    let shape = MlpShape {
        sizes: vec![inputs, outputs],
        batch,
        optimizer: OptimizerKind::Sgd,
        precision: Precision::Fp32,
        checkpoint: 0,
    };
    let (forward, backward) = estimate_mlp(&shape)
        .map(|e| (e.flops_forward as f64, e.flops_backward as f64))
        .unwrap_or((0.0, 0.0));
    let mflop = |x: f64| x / 1e6;
    let answer = mflop(forward + backward);
    let candidates = vec![
        (mflop(3.0 * forward), t(lang, "ex.first_layer_flops.dx")),
        (mflop(forward), t(lang, "ex.first_layer_flops.forward_only")),
        (mflop((forward + backward) / 2.0), t(lang, "ex.first_layer_flops.macs")),
    ];
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.first_layer_flops.prompt",
            &[("in", &inputs), ("out", &outputs), ("batch", &batch)],
        ),
        kind: AnswerKind::Number,
        checker: close(answer),
        hints: vec![t(lang, "ex.first_layer_flops.hint1"), t(lang, "ex.first_layer_flops.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.first_layer_flops.explain",
            &[
                ("forward", &show(mflop(forward))),
                ("backward", &show(mflop(backward))),
                ("answer", &show(answer)),
            ],
        ),
        reference: show(answer),
        mistakes: mistakes(answer, candidates),
    }
}

fn layer_parameters(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let hidden = pick(&mut rng, &[256u64, 512, 768, 1024, 1280, 1536, 2048, 2560, 3072, 4096, 5120, 8192]);
    let swiglu = rng.random_bool(0.5);
    let mut m = Preset::Llama7b.config();
    m.hidden = hidden;
    m.heads = hidden / 64;
    m.kv_heads = m.heads;
    m.biases = false;
    m.norm = Norm::RmsNorm;
    (m.ffn_kind, m.ffn) = if swiglu {
        // LLaMA's rule: ⅔ of 4h, rounded up to a multiple of 256.
        (FfnKind::SwiGlu, (8 * hidden / 3).div_ceil(256) * 256)
    } else {
        (FfnKind::Gelu, 4 * hidden)
    };
    let answer = m.layer_parameters().unwrap_or(0) as f64;
    let (h, f) = (hidden as f64, m.ffn as f64);
    let matrices = if swiglu { 3.0 } else { 2.0 };
    let mut candidates = vec![
        (4.0 * h * h, t(lang, "ex.layer_parameters.attention_only")),
        (matrices * h * f + 2.0 * h, t(lang, "ex.layer_parameters.ffn_only")),
        (4.0 * h * h + matrices * h * f, t(lang, "ex.layer_parameters.no_norms")),
    ];
    if swiglu {
        candidates.push((4.0 * h * h + 2.0 * h * f + 2.0 * h, t(lang, "ex.layer_parameters.two_matrices")));
    }
    Task {
        prompt: TEXT.fill(
            lang,
            if swiglu { "ex.layer_parameters.prompt_swiglu" } else { "ex.layer_parameters.prompt_gelu" },
            &[("hidden", &hidden), ("ffn", &m.ffn)],
        ),
        kind: AnswerKind::Number,
        checker: AnswerChecker::Number {
            expected: answer,
            abs_tol: 0.5,
            rel_tol: 0.0,
        },
        hints: vec![t(lang, "ex.layer_parameters.hint1"), t(lang, "ex.layer_parameters.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.layer_parameters.explain",
            &[
                ("attention", &(4 * hidden * hidden)),
                ("ffn", &((matrices * h * f) as u64)),
                ("norms", &(2 * hidden)),
                ("answer", &(answer as u64)),
            ],
        ),
        reference: (answer as u64).to_string(),
        mistakes: candidates
            .into_iter()
            .filter(|(v, _)| (*v - answer).abs() > 0.5)
            .map(|(v, feedback)| Mistake {
                answer: (v as u64).to_string(),
                feedback,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_a_real_answer() {
        for exercise in EXERCISES {
            for seed in 1..=200 {
                let task = (exercise.generate)(seed, Lang::En);
                assert!(
                    !matches!(task.reference.as_str(), "0" | "0.000" | "NaN" | "inf"),
                    "{} seed {seed}: {}",
                    exercise.id,
                    task.reference
                );
            }
        }
    }
}
