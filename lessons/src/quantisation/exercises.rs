//! The quantisation lesson's exercises. Every answer comes from
//! `dlsys_core::quant` (scale and zero point, codes, the byte count, the
//! dot product's bound, fp8's scale) or the float emulator's range.

use dlsys_core::exercise::Task;
use dlsys_core::float::{Format, Rounding};
use dlsys_core::quant::gptq::{awq_scales, compensate, round_to_grid};
use dlsys_core::quant::{IntFormat, Mapping, QParams, dot_bound, fp8_scale, grouped_bytes};
use dlsys_core::text::Lang;

use super::TEXT;
use crate::kit::exercise_kit::{pick, show};

crate::exercises! {
    catalog: TEXT,
    salt: 0x0a1a_5ca1,
    scale => scale,
    zero_point => zero_point,
    int8_code => int8_code,
    error_bound => error_bound,
    bytes_int4 => bytes_int4,
    accumulator => accumulator,
    outlier_granularity => outlier_granularity,
    fp8_scale => fp8_scale_task,
    w4a16_speedup => speedup,
    gptq_update => gptq_update,
    awq_scale => awq_scale,
    calibration_needs => calibration_needs,
}

/// A range with a negative low end, for the affine exercises.
fn range(rng: &mut rand::rngs::StdRng) -> (f64, f64, u32) {
    let lo = pick(rng, &[-0.5, -1.0, -1.5, -2.0, -0.8, -3.0]);
    let hi = pick(rng, &[2.0, 3.0, 4.0, 6.0, 5.5, 2.5]);
    let bits = pick(rng, &[8, 4, 6]);
    (lo, hi, bits)
}

fn affine(lo: f64, hi: f64, bits: u32) -> QParams {
    QParams::for_range(lo, hi, IntFormat::unsigned(bits), Mapping::Asymmetric)
        .unwrap_or(QParams { scale: f64::NAN, zero_point: 0, qmin: 0, qmax: 0 })
}

fn scale(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let (lo, hi, bits) = range(&mut rng);
    let p = affine(lo, hi, bits);
    let levels = f64::from(p.qmax - p.qmin);
    Task::numeric(
        TEXT.fill(lang, "ex.scale.prompt", &[("lo", &lo), ("hi", &hi), ("bits", &bits)]),
        p.scale,
        vec![t(lang, "ex.scale.hint1")],
        TEXT.fill(lang, "ex.scale.explain", &[("lo", &lo), ("hi", &hi), ("levels", &levels), ("answer", &show(p.scale))]),
        vec![
            ((hi - lo) / (levels + 1.0), t(lang, "ex.scale.two_to_the_b")),
            (hi / levels, t(lang, "ex.scale.ignores_lo")),
            (hi.max(-lo) / f64::from((1 << (bits - 1)) - 1), t(lang, "ex.scale.symmetric")),
            ((hi - lo) / f64::from((1 << (bits - 1)) - 1), t(lang, "ex.scale.signed_steps")),
        ],
    )
}

fn zero_point(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let (lo, hi, bits) = range(&mut rng);
    let p = affine(lo, hi, bits);
    let answer = f64::from(p.zero_point);
    Task::numeric(
        TEXT.fill(lang, "ex.zero_point.prompt", &[("lo", &lo), ("hi", &hi), ("bits", &bits)]),
        answer,
        vec![t(lang, "ex.zero_point.hint1")],
        TEXT.fill(lang, "ex.zero_point.explain", &[("lo", &lo), ("scale", &show(p.scale)), ("answer", &answer)]),
        vec![
            ((lo / p.scale).round(), t(lang, "ex.zero_point.sign")),
            (f64::from(1u32 << (bits - 1)), t(lang, "ex.zero_point.midpoint")),
            (0.0, t(lang, "ex.zero_point.zero")),
        ],
    )
}

fn int8_code(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let amax = pick(&mut rng, &[2.0, 4.0, 0.5, 3.0, 6.0]);
    let x = amax * pick(&mut rng, &[0.37, 0.414, 0.61, -0.29, 0.83, -0.552, 0.125]);
    let p = QParams::for_range(-amax, amax, IntFormat::signed(8), Mapping::Symmetric)
        .unwrap_or(QParams { scale: f64::NAN, zero_point: 0, qmin: 0, qmax: 0 });
    let code = f64::from(p.quantise(x, Rounding::NearestEven, 0));
    Task::numeric(
        TEXT.fill(lang, "ex.int8_code.prompt", &[("amax", &amax), ("x", &show(x))]),
        code,
        vec![t(lang, "ex.int8_code.hint1")],
        TEXT.fill(lang, "ex.int8_code.explain", &[("amax", &amax), ("x", &show(x)), ("answer", &code)]),
        vec![
            ((x / amax * 127.0).trunc(), t(lang, "ex.int8_code.truncated")),
            ((x / amax * 128.0).round(), t(lang, "ex.int8_code.by_128")),
            ((x * 127.0).round(), t(lang, "ex.int8_code.no_amax")),
            (code + 128.0, t(lang, "ex.int8_code.offset")),
        ],
    )
}

fn error_bound(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let amax = pick(&mut rng, &[0.5, 1.0, 2.0, 3.0, 6.0]);
    let bits = pick(&mut rng, &[8, 4, 6, 3]);
    let p = QParams::for_range(-amax, amax, IntFormat::signed(bits), Mapping::Symmetric)
        .unwrap_or(QParams { scale: f64::NAN, zero_point: 0, qmin: 0, qmax: 0 });
    let answer = p.scale / 2.0;
    Task::numeric(
        TEXT.fill(lang, "ex.error_bound.prompt", &[("amax", &amax), ("bits", &bits)]),
        answer,
        vec![t(lang, "ex.error_bound.hint1")],
        TEXT.fill(lang, "ex.error_bound.explain", &[("amax", &amax), ("qmax", &p.qmax), ("scale", &show(p.scale)), ("answer", &show(answer))]),
        vec![
            (p.scale, t(lang, "ex.error_bound.full_step")),
            (amax / f64::from(1u32 << bits), t(lang, "ex.error_bound.two_to_the_b")),
            (amax / f64::from((1u32 << bits) - 1) / 2.0, t(lang, "ex.error_bound.unsigned_count")),
        ],
    )
}

fn bytes_int4(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let billions = pick(&mut rng, &[7.0, 8.0, 13.0, 34.0, 70.0, 405.0]);
    let group = pick(&mut rng, &[32u64, 64, 128]);
    let params = (billions * 1e9) as u64;
    let gb = |scale_bytes, group| {
        grouped_bytes(params, 4, group, scale_bytes, false).map_or(f64::NAN, |b| b.total_bytes as f64 / 1e9)
    };
    let answer = gb(2, group);
    Task::numeric(
        TEXT.fill(lang, "ex.bytes_int4.prompt", &[("billions", &billions), ("group", &group)]),
        answer,
        vec![t(lang, "ex.bytes_int4.hint1")],
        TEXT.fill(lang, "ex.bytes_int4.explain", &[("billions", &billions), ("group", &group), ("answer", &show(answer))]),
        vec![
            (billions / 2.0, t(lang, "ex.bytes_int4.no_scales")),
            (gb(4, group), t(lang, "ex.bytes_int4.fp32_scales")),
            (billions * 4.0, t(lang, "ex.bytes_int4.bits_as_bytes")),
        ],
    )
}

fn accumulator(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let k = pick(&mut rng, &[256u64, 512, 768, 1024, 2048, 3072, 4096, 5120, 8192, 11_008, 14_336, 16_384, 28_672, 65_536]);
    let i8 = IntFormat::signed(8);
    let (bound, bits) = dot_bound(k, i8, i8);
    let answer = f64::from(bits);
    Task::numeric(
        TEXT.fill(lang, "ex.accumulator.prompt", &[("k", &k)]),
        answer,
        vec![t(lang, "ex.accumulator.hint1")],
        TEXT.fill(lang, "ex.accumulator.explain", &[("k", &k), ("bound", &bound), ("answer", &bits)]),
        vec![
            (16.0, t(lang, "ex.accumulator.product_only")),
            ((k as f64).log2().ceil() + 1.0, t(lang, "ex.accumulator.sum_only")),
            (32.0, t(lang, "ex.accumulator.int32")),
        ],
    )
}

fn outlier_granularity(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let m = pick(&mut rng, &[20, 50, 100, 200, 500]);
    let channel = pick(&mut rng, &[3, 17, 42, 311, 1024, 2077]);
    let options = ["input_channel", "tensor", "token", "weights_only"];
    let args: [(&str, &dyn std::fmt::Display); 2] = [("m", &m), ("channel", &channel)];
    crate::kit::exercise_kit::catalog_choice(&TEXT, lang, "outlier_granularity", seed, &options, &args)
}

fn fp8_scale_task(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let amax = pick(&mut rng, &[3.5, 7.0, 12.0, 0.75, 28.0, 100.0]);
    let margin = pick(&mut rng, &[0, 1, 2]);
    let e4m3 = Format::fp8_e4m3();
    let max = e4m3.range().max_finite;
    let answer = fp8_scale(amax, &e4m3, margin);
    Task::numeric(
        TEXT.fill(lang, "ex.fp8_scale.prompt", &[("amax", &amax), ("margin", &margin)]),
        answer,
        vec![t(lang, "ex.fp8_scale.hint1")],
        TEXT.fill(lang, "ex.fp8_scale.explain", &[("amax", &amax), ("margin", &margin), ("max", &max), ("answer", &show(answer))]),
        vec![
            (amax / max, t(lang, "ex.fp8_scale.inverted")),
            (max / amax * f64::from(1u32 << margin), t(lang, "ex.fp8_scale.margin_up")),
            (fp8_scale(amax, &Format::fp8_e5m2(), margin), t(lang, "ex.fp8_scale.e5m2")),
        ],
    )
}

fn speedup(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let bits = pick(&mut rng, &[4u32, 3, 8, 6, 5, 2]);
    let group = pick(&mut rng, &[32u64, 64, 128, 256]);
    let params = 1_000_000_000u64 * group;
    let bytes = |bits, group, scale_bytes| {
        grouped_bytes(params, bits, group, scale_bytes, false).map_or(f64::NAN, |b| b.total_bytes as f64)
    };
    let answer = bytes(16, 0, 0) / bytes(bits, group, 2);
    Task::numeric(
        TEXT.fill(lang, "ex.w4a16_speedup.prompt", &[("bits", &bits), ("group", &group)]),
        answer,
        vec![t(lang, "ex.w4a16_speedup.hint1")],
        TEXT.fill(lang, "ex.w4a16_speedup.explain", &[("bits", &bits), ("group", &group), ("answer", &show(answer))]),
        vec![
            (16.0 / f64::from(bits), t(lang, "ex.w4a16_speedup.no_scales")),
            (32.0 / f64::from(bits), t(lang, "ex.w4a16_speedup.from_fp32")),
            (16.0 / (f64::from(bits) + 16.0), t(lang, "ex.w4a16_speedup.scale_per_weight")),
        ],
    )
}

fn gptq_update(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let scale = pick(&mut rng, &[0.25, 0.5, 0.125, 0.2]);
    let w1 = scale * pick(&mut rng, &[2.3, -1.4, 3.35, 0.62, -2.7, 1.8]);
    let w2 = pick(&mut rng, &[0.41, -0.73, 0.9, -0.28, 0.55]);
    let hinv_11 = pick(&mut rng, &[0.5, 0.8, 1.0, 2.0, 0.25]);
    let hinv_12 = hinv_11 * pick(&mut rng, &[-0.6, -0.3, 0.4, 0.7, 0.5]);
    let q1 = round_to_grid(w1, scale, 127);
    let answer = compensate(w2, w1, q1, hinv_11, hinv_12);
    let values = [
        ("w1", show(w1)),
        ("w2", show(w2)),
        ("q1", show(q1)),
        ("scale", show(scale)),
        ("a", show(hinv_11)),
        ("b", show(hinv_12)),
        ("answer", show(answer)),
    ];
    let values: Vec<(&str, &dyn std::fmt::Display)> =
        values.iter().map(|(k, v)| -> (&str, &dyn std::fmt::Display) { (k, v) }).collect();
    Task::numeric(
        TEXT.fill(lang, "ex.gptq_update.prompt", &values),
        answer,
        vec![t(lang, "ex.gptq_update.hint1")],
        TEXT.fill(lang, "ex.gptq_update.explain", &values),
        vec![
            (w2, t(lang, "ex.gptq_update.no_update")),
            (w2 + (w1 - q1) * hinv_12 / hinv_11, t(lang, "ex.gptq_update.sign")),
            (w2 - (w1 - q1), t(lang, "ex.gptq_update.unweighted")),
            (w2 - (w1 - q1) * hinv_11 / hinv_12, t(lang, "ex.gptq_update.upside_down")),
        ],
    )
}

fn awq_scale(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let means = [
        pick(&mut rng, &[0.5, 0.8, 2.0, 0.3]),
        pick(&mut rng, &[16.0, 9.0, 25.0, 36.0, 64.0]),
        pick(&mut rng, &[1.5, 3.0, 4.0, 0.6]),
    ];
    let alpha = pick(&mut rng, &[0.5, 0.25, 0.75]);
    let channel = pick(&mut rng, &[0usize, 1, 2]);
    let answer = awq_scales(&means, alpha)[channel];
    let raw = means[channel].powf(alpha);
    Task::numeric(
        TEXT.fill(
            lang,
            "ex.awq_scale.prompt",
            &[("m1", &means[0]), ("m2", &means[1]), ("m3", &means[2]), ("alpha", &alpha), ("channel", &(channel + 1))],
        ),
        answer,
        vec![t(lang, "ex.awq_scale.hint1")],
        TEXT.fill(lang, "ex.awq_scale.explain", &[("raw", &show(raw)), ("alpha", &alpha), ("answer", &show(answer))]),
        vec![
            (raw, t(lang, "ex.awq_scale.not_normalised")),
            (1.0 / answer, t(lang, "ex.awq_scale.inverted")),
            (awq_scales(&means, 1.0)[channel], t(lang, "ex.awq_scale.alpha_one")),
        ],
    )
}

fn calibration_needs(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let (method, right) = pick(&mut rng, &[("GPTQ", 0), ("AWQ", 1)]);
    let k = pick(&mut rng, &[768, 1024, 4096, 5120, 8192]);
    let samples = pick(&mut rng, &[128, 256, 512]);
    let mut options = ["hessian", "means", "weights", "labels"];
    options.swap(0, right);
    let args: [(&str, &dyn std::fmt::Display); 3] = [("method", &method), ("k", &k), ("samples", &samples)];
    crate::kit::exercise_kit::catalog_choice(&TEXT, lang, "calibration_needs", seed, &options, &args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsys_core::exercise::FIRST_SEED;

    #[test]
    fn every_variant_has_a_real_answer_and_its_mistakes_are_caught() {
        crate::check_numeric_exercises(EXERCISES, 2);
    }

    /// The classic answers by hand: int8 over [−1, 1] puts 0.37 at 47; a
    /// 70B model at int4 g128 with fp16 scales is 36.09 GB.
    #[test]
    fn worked_values_by_hand() {
        let p = QParams::for_range(-1.0, 1.0, IntFormat::signed(8), Mapping::Symmetric).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.quantise(0.37, Rounding::NearestEven, 0), 47);
        let b = grouped_bytes(70_000_000_000, 4, 128, 2, false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b.total_bytes, 36_093_750_000);
        let task = outlier_granularity(FIRST_SEED, Lang::En);
        assert!(task.check(&task.reference).is_correct());
        assert!(!task.check(if task.reference == "1" { "2" } else { "1" }).is_correct());
    }
}
