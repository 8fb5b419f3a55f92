//! The inference lesson's exercises. Every answer comes from
//! `dlsys_core::inference` (the KV formula, the bandwidth bound, the
//! prefill time, the ridge batch, the sequences that fit, blocks and their
//! waste, the expected tokens per pass) or the memory calculator's KV bytes.

use dlsys_core::exercise::Task;
use dlsys_core::inference::batching::padding_slots;
use dlsys_core::inference::calc::{self, Device};
use dlsys_core::inference::paged::blocks_and_waste;
use dlsys_core::inference::speculative::expected_tokens;
use dlsys_core::memory::transformer::kv_cache_bytes;
use dlsys_core::text::Lang;

use super::TEXT;
use crate::kit::exercise_kit::{pick, show};

#[cfg(test)]
mod tests {
    #[test]
    fn every_variant_has_a_real_answer_and_its_mistakes_are_caught() {
        // The last one is multiple choice.
        crate::check_numeric_exercises(&super::EXERCISES[..8], 1);
    }
}

crate::exercises! {
    catalog: TEXT,
    salt: 0x1f_e2e4,
    kv_bytes => kv_bytes,
    decode_bound => decode_bound,
    ttft => ttft,
    ridge_batch => ridge_batch,
    sequences_fit => sequences_fit,
    block_waste => block_waste,
    tokens_per_pass => tokens_per_pass,
    static_padding => static_padding,
    continuous_batching => continuous_batching,
}

/// A made-up device with round figures.
fn device(rng: &mut rand::rngs::StdRng) -> Device {
    Device {
        bandwidth_gb_s: pick(rng, &[1000.0, 2000.0, 3000.0, 800.0, 1600.0]),
        peak_tflops: pick(rng, &[100.0, 200.0, 400.0, 1000.0, 300.0]),
        memory_gb: pick(rng, &[24.0, 40.0, 80.0, 48.0]),
    }
}

fn kv_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let layers = pick(&mut rng, &[24u64, 32, 40, 48, 80]);
    let heads = pick(&mut rng, &[32u64, 40, 64]);
    let kv_heads = pick(&mut rng, &[heads, 8, 4]);
    let dim = pick(&mut rng, &[64u64, 128]);
    let bytes = pick(&mut rng, &[2u64, 1]);
    let answer = kv_cache_bytes(layers, kv_heads, dim, 1, bytes).unwrap_or(0) as f64;
    // Without grouped-query attention every head has its own K and V.
    let key = if kv_heads == heads { "ex.kv_bytes.prompt_mha" } else { "ex.kv_bytes.prompt" };
    Task::numeric(
        TEXT.fill(
            lang,
            key,
            &[("layers", &layers), ("heads", &heads), ("kv_heads", &kv_heads), ("dim", &dim), ("bytes", &bytes)],
        ),
        answer,
        vec![t(lang, "ex.kv_bytes.hint1")],
        TEXT.fill(
            lang,
            "ex.kv_bytes.explain",
            &[("layers", &layers), ("kv_heads", &kv_heads), ("dim", &dim), ("bytes", &bytes), ("answer", &answer)],
        ),
        vec![
            (answer / 2.0, t(lang, "ex.kv_bytes.one_of_two")),
            (answer / kv_heads as f64 * heads as f64, t(lang, "ex.kv_bytes.all_heads")),
            (answer / layers as f64, t(lang, "ex.kv_bytes.one_layer")),
        ],
    )
}

fn decode_bound(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let d = device(&mut rng);
    let params = pick(&mut rng, &[7.0, 13.0, 8.0, 70.0, 3.0]);
    let bytes = pick(&mut rng, &[2.0, 1.0, 0.5]);
    let kv_gb = pick(&mut rng, &[0.5, 1.0, 2.0, 0.25]);
    let weights = params * 1e9 * bytes;
    let answer = calc::bandwidth_tokens_per_s(&d, weights, kv_gb * 1e9, 1.0);
    Task::numeric(
        TEXT.fill(
            lang,
            "ex.decode_bound.prompt",
            &[("params", &params), ("bytes", &bytes), ("kv", &kv_gb), ("bw", &d.bandwidth_gb_s)],
        ),
        answer,
        vec![t(lang, "ex.decode_bound.hint1")],
        TEXT.fill(
            lang,
            "ex.decode_bound.explain",
            &[("bw", &d.bandwidth_gb_s), ("weights", &show(weights / 1e9)), ("kv", &kv_gb), ("answer", &show(answer))],
        ),
        vec![
            (calc::bandwidth_tokens_per_s(&d, weights, 0.0, 1.0), t(lang, "ex.decode_bound.no_kv")),
            (d.peak_tflops * 1e12 / (2.0 * params * 1e9), t(lang, "ex.decode_bound.compute")),
            (calc::bandwidth_tokens_per_s(&d, params * 1e9, kv_gb * 1e9, 1.0), t(lang, "ex.decode_bound.one_byte")),
        ],
    )
}

fn ttft(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let d = device(&mut rng);
    let params = pick(&mut rng, &[7.0, 13.0, 8.0, 70.0, 3.0]);
    let prompt = pick(&mut rng, &[512.0, 1000.0, 2000.0, 4096.0]);
    let answer = calc::prefill_compute_s(&d, params * 1e9, prompt) * 1e3;
    Task::numeric(
        TEXT.fill(lang, "ex.ttft.prompt", &[("params", &params), ("prompt", &prompt), ("peak", &d.peak_tflops)]),
        answer,
        vec![t(lang, "ex.ttft.hint1")],
        TEXT.fill(
            lang,
            "ex.ttft.explain",
            &[("params", &params), ("prompt", &prompt), ("peak", &d.peak_tflops), ("answer", &show(answer))],
        ),
        vec![
            (answer / 2.0, t(lang, "ex.ttft.one_flop")),
            (answer * 3.0, t(lang, "ex.ttft.training")),
            (answer / prompt, t(lang, "ex.ttft.one_token")),
        ],
    )
}

fn ridge_batch(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let d = device(&mut rng);
    // Not fp16: at 2 bytes the ridge batch equals the ridge point, and a
    // learner who confuses the two would be marked right.
    let bytes = pick(&mut rng, &[1.0, 0.5]);
    let answer = calc::ridge_batch(&d, bytes);
    let ridge = d.peak_tflops * 1e12 / (d.bandwidth_gb_s * 1e9);
    Task::numeric(
        TEXT.fill(lang, "ex.ridge_batch.prompt", &[("peak", &d.peak_tflops), ("bw", &d.bandwidth_gb_s), ("bytes", &bytes)]),
        answer,
        vec![t(lang, "ex.ridge_batch.hint1")],
        TEXT.fill(
            lang,
            "ex.ridge_batch.explain",
            &[("ridge", &show(ridge)), ("bytes", &bytes), ("answer", &show(answer))],
        ),
        vec![
            (ridge, t(lang, "ex.ridge_batch.ridge_only")),
            (ridge / 2.0, t(lang, "ex.ridge_batch.no_bytes")),
            (2.0 * ridge * bytes, t(lang, "ex.ridge_batch.inverted")),
        ],
    )
}

fn sequences_fit(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let d = Device { memory_gb: pick(&mut rng, &[40.0, 48.0, 80.0]), ..device(&mut rng) };
    let params = pick(&mut rng, &[3.0, 7.0, 8.0, 13.0]);
    let context = pick(&mut rng, &[2048.0, 4096.0, 8192.0, 1024.0]);
    let kv_kib = pick(&mut rng, &[128.0, 256.0, 512.0, 160.0]);
    let weights = params * 1e9 * 2.0;
    let per_sequence = context * kv_kib * 1024.0;
    let answer = calc::sequences_fit(&d, weights, per_sequence) as f64;
    let all = (d.memory_gb * 1e9 / per_sequence).floor();
    Task::numeric(
        TEXT.fill(
            lang,
            "ex.sequences_fit.prompt",
            &[("memory", &d.memory_gb), ("params", &params), ("context", &context), ("kv", &kv_kib)],
        ),
        answer,
        vec![t(lang, "ex.sequences_fit.hint1")],
        TEXT.fill(
            lang,
            "ex.sequences_fit.explain",
            &[
                ("memory", &d.memory_gb),
                ("weights", &show(weights / 1e9)),
                ("per", &show(per_sequence / 1e9)),
                ("answer", &answer),
            ],
        ),
        vec![
            (all, t(lang, "ex.sequences_fit.no_weights")),
            (((d.memory_gb * 1e9 - params * 1e9) / per_sequence).floor(), t(lang, "ex.sequences_fit.one_byte")),
        ],
    )
}

fn block_waste(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let block = pick(&mut rng, &[16u64, 32, 8]);
    let lengths: Vec<u64> = (0..4).map(|_| pick(&mut rng, &[37u64, 100, 250, 129, 61, 500, 17, 300])).collect();
    let (blocks, waste) = blocks_and_waste(&lengths, block);
    let shown = lengths.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    let total: u64 = lengths.iter().sum();
    Task::numeric(
        TEXT.fill(lang, "ex.block_waste.prompt", &[("lengths", &shown), ("block", &block)]),
        waste as f64,
        vec![t(lang, "ex.block_waste.hint1")],
        TEXT.fill(
            lang,
            "ex.block_waste.explain",
            &[("blocks", &blocks), ("block", &block), ("total", &total), ("answer", &waste)],
        ),
        vec![
            ((lengths.len() as u64 * block) as f64, t(lang, "ex.block_waste.whole_block")),
            (blocks as f64, t(lang, "ex.block_waste.blocks")),
        ],
    )
}

fn tokens_per_pass(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let alpha = pick(&mut rng, &[0.6, 0.7, 0.8, 0.9, 0.5]);
    let k = pick(&mut rng, &[2u32, 3, 4, 5, 6]);
    let answer = expected_tokens(alpha, k);
    Task::numeric(
        TEXT.fill(lang, "ex.tokens_per_pass.prompt", &[("alpha", &alpha), ("k", &k)]),
        answer,
        vec![t(lang, "ex.tokens_per_pass.hint1")],
        TEXT.fill(lang, "ex.tokens_per_pass.explain", &[("alpha", &alpha), ("k", &k), ("answer", &show(answer))]),
        vec![
            (f64::from(k) * alpha, t(lang, "ex.tokens_per_pass.k_alpha")),
            (1.0 + f64::from(k) * alpha, t(lang, "ex.tokens_per_pass.linear")),
            (expected_tokens(alpha, k.saturating_sub(1)), t(lang, "ex.tokens_per_pass.no_bonus")),
        ],
    )
}

fn static_padding(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let n = pick(&mut rng, &[3usize, 4, 5]);
    // Distinct lengths: equal ones would pad nothing.
    let mut lengths = vec![12u64, 40, 100, 250, 64, 8, 180, 30];
    rand::seq::SliceRandom::shuffle(lengths.as_mut_slice(), &mut rng);
    let outputs: Vec<u64> = lengths[..n].to_vec();
    let answer = padding_slots(&outputs);
    let longest = outputs.iter().copied().max().unwrap_or(0);
    let total: u64 = outputs.iter().sum();
    let shown = outputs.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    Task::numeric(
        TEXT.fill(lang, "ex.static_padding.prompt", &[("outputs", &shown)]),
        answer as f64,
        vec![t(lang, "ex.static_padding.hint1")],
        TEXT.fill(
            lang,
            "ex.static_padding.explain",
            &[("n", &n), ("longest", &longest), ("total", &total), ("answer", &answer)],
        ),
        vec![
            ((n as u64 * longest) as f64, t(lang, "ex.static_padding.all_slots")),
            (total as f64, t(lang, "ex.static_padding.useful")),
        ],
    )
}

fn continuous_batching(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let batch = pick(&mut rng, &[8, 16, 32, 64]);
    let lo = pick(&mut rng, &[2, 4, 8, 16]);
    let hi = pick(&mut rng, &[500, 1000, 2000, 4000]);
    let options = ["refill", "faster_steps", "less_memory", "bigger_batch"];
    let args: [(&str, &dyn std::fmt::Display); 3] = [("batch", &batch), ("lo", &lo), ("hi", &hi)];
    crate::kit::exercise_kit::catalog_choice(&TEXT, lang, "continuous_batching", seed, &options, &args)
}
