//! The lesson's exercises. Every answer comes from the core: output sizes
//! and parameters from `Conv2d`, offsets from `Layout`, the folded weight
//! and bias from `fold_conv`, LayerNorm's backward from the engine itself
//! (and its classic mistakes from the engine with a bug planted), attention
//! FLOPs and KV-cache bytes from the memory calculator's formulas.

use dlsys_core::autograd::view::Layout;
use dlsys_core::autograd::{Conv2d, Graph, PlantedBug, Tensor, conv_output_side};
use dlsys_core::exercise::Task;
use dlsys_core::memory::{attention_flops, kv_cache_bytes};
use dlsys_core::nn::models::fold::{BatchNormParams, fold_conv};
use dlsys_core::text::Lang;
use rand::RngExt as _;

use super::TEXT;
use crate::kit::exercise_kit::{pick, show};

crate::exercises! {
    catalog: TEXT,
    salt: 0x1a7e_55ed,
    conv_output => conv_output,
    conv_params => conv_params,
    im2col_size => im2col_size,
    bn_fold_weight => fold_weight,
    bn_fold_bias => fold_bias,
    layernorm_backward => layernorm_backward,
    nhwc_offset => nhwc_offset,
    attention_flops => attention_cost,
    kv_cache_bytes => kv_bytes,
}

/// A convolution drawn so its output fits: input side, kernel, stride,
/// padding, dilation.
fn geometry(rng: &mut rand::rngs::StdRng) -> (usize, usize, usize, usize, usize) {
    loop {
        // Outputs stay small enough that off by one is more than 1 % off,
        // and the padding is never 0, so leaving it out shows.
        let h = pick(rng, &[7, 9, 14, 19, 28, 32]);
        let k = pick(rng, &[3, 5, 7]);
        let s = pick(rng, &[1, 2, 3]);
        let p = pick(rng, &[1, 2, 3]);
        let d = pick(rng, &[1, 1, 2]);
        if conv_output_side(h, k, s, p, d).is_some_and(|o| o > 1) {
            return (h, k, s, p, d);
        }
    }
}

fn conv_output(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let (h, k, s, p, d) = geometry(&mut rng);
    let side = |h, k, s, p, d| conv_output_side(h, k, s, p, d).map_or(0.0, |o| o as f64);
    let answer = side(h, k, s, p, d);
    let span = d * (k - 1) + 1;
    Task::numeric(
        TEXT.fill(lang, "ex.conv_output.prompt", &[("h", &h), ("k", &k), ("s", &s), ("p", &p), ("d", &d)]),
        answer,
        vec![t(lang, "ex.conv_output.hint1"), t(lang, "ex.conv_output.hint2")],
        TEXT.fill(lang, "ex.conv_output.explain", &[("span", &span), ("h", &h), ("p", &p), ("s", &s), ("answer", &answer)]),
        vec![
            (side(h, k, s, 0, d), t(lang, "ex.conv_output.no_padding")),
            (side(h, k, s, p, 1), t(lang, "ex.conv_output.no_dilation")),
            (((h + 2 * p - span) / s) as f64, t(lang, "ex.conv_output.no_one")),
            (
                (h + p).checked_sub(span).map_or(f64::NAN, |v| (v / s + 1) as f64),
                t(lang, "ex.conv_output.one_side"),
            ),
            ((h + 2 * p - span + 1) as f64, t(lang, "ex.conv_output.no_stride")),
        ],
    )
}

fn conv_params(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let c = pick(&mut rng, &[1, 3, 16, 32, 64, 128]);
    let oc = pick(&mut rng, &[8, 16, 64, 96, 128, 256]);
    let k = pick(&mut rng, &[1, 3, 5, 7]);
    let conv = Conv2d::new(c, oc, (32, 32), k);
    let answer = conv.parameters(true) as f64;
    Task::numeric(
        TEXT.fill(lang, "ex.conv_params.prompt", &[("c", &c), ("oc", &oc), ("k", &k)]),
        answer,
        vec![t(lang, "ex.conv_params.hint1")],
        TEXT.fill(lang, "ex.conv_params.explain", &[("c", &c), ("oc", &oc), ("k", &k), ("answer", &answer)]),
        vec![
            (conv.parameters(false) as f64, t(lang, "ex.conv_params.no_bias")),
            ((oc * k * k + oc) as f64, t(lang, "ex.conv_params.no_channels")),
            (answer * 32.0 * 32.0, t(lang, "ex.conv_params.per_pixel")),
        ],
    )
}

fn im2col_size(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let c = pick(&mut rng, &[2, 3, 8, 16, 64]);
    let (h, k, s, p, _) = geometry(&mut rng);
    let conv = Conv2d {
        stride: s,
        padding: p,
        ..Conv2d::new(c, 8, (h, h), k)
    };
    let (oh, ow) = conv.output().unwrap_or((0, 0));
    let columns = (oh * ow) as f64;
    let answer = conv.patch() as f64 * columns;
    Task::numeric(
        TEXT.fill(lang, "ex.im2col_size.prompt", &[("c", &c), ("h", &h), ("k", &k), ("s", &s), ("p", &p)]),
        answer,
        vec![t(lang, "ex.im2col_size.hint1"), t(lang, "ex.im2col_size.hint2")],
        TEXT.fill(
            lang,
            "ex.im2col_size.explain",
            &[("rows", &conv.patch()), ("cols", &columns), ("o", &oh), ("answer", &answer)],
        ),
        vec![
            (conv.input_len() as f64, t(lang, "ex.im2col_size.input")),
            (columns, t(lang, "ex.im2col_size.columns_only")),
            ((k * k) as f64 * columns, t(lang, "ex.im2col_size.no_channels")),
        ],
    )
}

/// One channel's BatchNorm after a conv: (γ, β, μ, σ²), γ kept away from 1
/// and σ² away from 1 so forgetting either shows.
fn batchnorm(rng: &mut rand::rngs::StdRng) -> (f64, f64, f64, f64) {
    let gamma = pick(rng, &[0.5, 0.8, 1.5, 2.0, 2.5]);
    let beta = pick(rng, &[-0.5, -0.2, 0.3, 0.7, 1.0]);
    let mean = pick(rng, &[-1.5, -0.4, 0.6, 1.2, 2.0]);
    let var = pick(rng, &[0.04, 0.25, 2.25, 4.0, 9.0]);
    (gamma, beta, mean, var)
}

/// The folded (weight, bias) of one weight `w` and bias `b` under `bn`.
fn folded(w: f64, b: f64, (gamma, beta, mean, var): (f64, f64, f64, f64)) -> (f64, f64) {
    let bn = BatchNormParams {
        gamma: vec![gamma],
        beta: vec![beta],
        running_mean: vec![mean],
        running_var: vec![var],
    };
    let (fw, fb) = fold_conv(&Tensor::new(vec![w], &[1, 1]), Some(&Tensor::new(vec![b], &[1])), &bn);
    (fw.data[0], fb.data[0])
}

fn fold_weight(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let bn = batchnorm(&mut rng);
    let w = pick(&mut rng, &[-0.9, -0.3, 0.4, 0.75, 1.2]);
    let (answer, _) = folded(w, 0.0, bn);
    let (gamma, _, _, var) = bn;
    Task::numeric(
        TEXT.fill(lang, "ex.bn_fold_weight.prompt", &[("w", &w), ("gamma", &gamma), ("var", &var)]),
        answer,
        vec![t(lang, "ex.bn_fold_weight.hint1")],
        TEXT.fill(lang, "ex.bn_fold_weight.explain", &[("w", &w), ("gamma", &gamma), ("var", &var), ("answer", &show(answer))]),
        vec![
            (w * gamma / var, t(lang, "ex.bn_fold_weight.no_sqrt")),
            (w / var.sqrt(), t(lang, "ex.bn_fold_weight.no_gamma")),
            (w * gamma * var.sqrt(), t(lang, "ex.bn_fold_weight.multiplied")),
        ],
    )
}

fn fold_bias(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let bn = batchnorm(&mut rng);
    let b = pick(&mut rng, &[-0.6, -0.1, 0.2, 0.5, 0.9]);
    let (_, answer) = folded(1.0, b, bn);
    let (gamma, beta, mean, var) = bn;
    let s = gamma / (var + 1e-5).sqrt();
    Task::numeric(
        TEXT.fill(
            lang,
            "ex.bn_fold_bias.prompt",
            &[("b", &b), ("gamma", &gamma), ("beta", &beta), ("mean", &mean), ("var", &var)],
        ),
        answer,
        vec![t(lang, "ex.bn_fold_bias.hint1"), t(lang, "ex.bn_fold_bias.hint2")],
        TEXT.fill(lang, "ex.bn_fold_bias.explain", &[("s", &show(s)), ("answer", &show(answer))]),
        vec![
            (s * (b - mean), t(lang, "ex.bn_fold_bias.no_beta")),
            (s * b + beta, t(lang, "ex.bn_fold_bias.no_mean")),
            (s * (b + mean) + beta, t(lang, "ex.bn_fold_bias.sign")),
        ],
    )
}

/// ∂L/∂x₀ of LayerNorm (γ = 1, β = 0) on `x` with upstream gradient `g`,
/// from the engine's backward, with `bug` planted or not.
fn layernorm_grad(x: &[f64], g: &[f64], bug: Option<PlantedBug>) -> f64 {
    let n = x.len();
    let mut graph = Graph::<f64>::new();
    graph.plant_bug(bug);
    let xv = graph.param(Tensor::new(x.to_vec(), &[1, n]));
    let gamma = graph.input(Tensor::full(&[n], 1.0));
    let beta = graph.input(Tensor::zeros(&[n]));
    let y = graph.layer_norm(xv, gamma, beta);
    let weights = graph.input(Tensor::new(g.to_vec(), &[1, n]));
    let weighted = graph.mul(y, weights);
    let loss = graph.sum(weighted);
    graph.backward(loss);
    graph.grad(xv).map_or(f64::NAN, |d| d.data[0])
}

fn layernorm_backward(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let mut x = [0.0; 3];
    for v in &mut x {
        *v = f64::from(rng.random_range(-4i32..=4));
    }
    while x[0] == x[1] && x[1] == x[2] {
        x[2] += 2.0;
    }
    let mut g = [0.0; 3];
    for v in &mut g {
        *v = f64::from(rng.random_range(-3i32..=3));
    }
    // g₁ ≠ 0 and Σg ≠ 0, so the classic mistakes differ from the answer.
    if g[0] == 0.0 {
        g[0] = 2.0;
    }
    if g.iter().all(|v| *v == g[0]) {
        g[1] += 1.0;
    }
    if g.iter().sum::<f64>() == 0.0 {
        g[2] += 1.0;
    }
    let answer = layernorm_grad(&x, &g, None);
    let mean = x.iter().sum::<f64>() / 3.0;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 3.0;
    let inv = 1.0 / (var + 1e-5).sqrt();
    let show_row = |v: &[f64; 3]| format!("({}, {}, {})", v[0], v[1], v[2]);
    Task::numeric(
        TEXT.fill(lang, "ex.layernorm_backward.prompt", &[("x", &show_row(&x)), ("g", &show_row(&g))]),
        answer,
        vec![t(lang, "ex.layernorm_backward.hint1"), t(lang, "ex.layernorm_backward.hint2")],
        TEXT.fill(
            lang,
            "ex.layernorm_backward.explain",
            &[("mean", &show(mean)), ("var", &show(var)), ("inv", &show(inv)), ("answer", &show(answer))],
        ),
        vec![
            (layernorm_grad(&x, &g, Some(PlantedBug::LayerNormMissingMean)), t(lang, "ex.layernorm_backward.no_mean")),
            (g[0] * inv, t(lang, "ex.layernorm_backward.constants")),
            (g[0], t(lang, "ex.layernorm_backward.identity")),
        ],
    )
}

fn nhwc_offset(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let (n, c) = (pick(&mut rng, &[2, 4, 8]), pick(&mut rng, &[3, 16, 32, 64]));
    let h = pick(&mut rng, &[7, 10, 14]);
    let w = pick(&mut rng, &[5, 12, 20]);
    // Not the first image, row or column: each stride shows in the answer.
    let at = [
        rng.random_range(1..n),
        rng.random_range(0..c),
        rng.random_range(1..h),
        rng.random_range(1..w),
    ];
    let nhwc = Layout::contiguous(&[n, h, w, c]);
    let nchw = Layout::contiguous(&[n, c, h, w]);
    let offset = |l: &Layout, i: &[usize]| l.offset_of(i).map_or(f64::NAN, |o| o as f64);
    let answer = offset(&nhwc, &[at[0], at[2], at[3], at[1]]);
    let image = (h * w * c) as f64;
    let strides = format!("{:?}", nhwc.strides);
    Task::numeric(
        TEXT.fill(
            lang,
            "ex.nhwc_offset.prompt",
            &[("n", &n), ("c", &c), ("h", &h), ("w", &w), ("i", &format!("({}, {}, {}, {})", at[0], at[1], at[2], at[3]))],
        ),
        answer,
        vec![t(lang, "ex.nhwc_offset.hint1"), t(lang, "ex.nhwc_offset.hint2")],
        TEXT.fill(lang, "ex.nhwc_offset.explain", &[("strides", &strides), ("answer", &answer)]),
        vec![
            (offset(&nchw, &at), t(lang, "ex.nhwc_offset.nchw")),
            (answer - at[0] as f64 * image, t(lang, "ex.nhwc_offset.no_batch")),
            (
                at[0] as f64 * image + (at[2] * w + at[3] + at[1]) as f64,
                t(lang, "ex.nhwc_offset.no_c"),
            ),
        ],
    )
}

fn attention_cost(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let layers = pick(&mut rng, &[12u64, 24, 32, 48]);
    let seq = pick(&mut rng, &[512u64, 1024, 2048, 4096, 8192]);
    let hidden = pick(&mut rng, &[768u64, 1024, 2048, 4096]);
    let flops = |l, s, h| attention_flops(l, s, h, s).map_or(f64::NAN, |f| f as f64 / 1e9);
    let answer = flops(layers, seq, hidden);
    Task::numeric(
        TEXT.fill(lang, "ex.attention_flops.prompt", &[("l", &layers), ("s", &seq), ("h", &hidden)]),
        answer,
        vec![t(lang, "ex.attention_flops.hint1"), t(lang, "ex.attention_flops.hint2")],
        TEXT.fill(lang, "ex.attention_flops.explain", &[("l", &layers), ("s", &seq), ("h", &hidden), ("answer", &show(answer))]),
        vec![
            (answer / 2.0, t(lang, "ex.attention_flops.one_product")),
            (answer * 3.0, t(lang, "ex.attention_flops.training")),
            (answer / seq as f64, t(lang, "ex.attention_flops.linear")),
        ],
    )
}

fn kv_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let layers = pick(&mut rng, &[24u64, 32, 40, 80]);
    let heads = pick(&mut rng, &[32u64, 40, 64]);
    let kv_heads = pick(&mut rng, &[8u64, 4, heads]);
    let head_dim = 128;
    let tokens = pick(&mut rng, &[2048u64, 4096, 8192, 32768]);
    let gib = |kv, bytes| kv_cache_bytes(layers, kv, head_dim, tokens, bytes).map_or(f64::NAN, |b| b as f64 / (1u64 << 30) as f64);
    let answer = gib(kv_heads, 2);
    Task::numeric(
        TEXT.fill(
            lang,
            "ex.kv_cache_bytes.prompt",
            &[("l", &layers), ("heads", &heads), ("kv", &kv_heads), ("d", &head_dim), ("t", &tokens)],
        ),
        answer,
        vec![t(lang, "ex.kv_cache_bytes.hint1"), t(lang, "ex.kv_cache_bytes.hint2")],
        TEXT.fill(
            lang,
            "ex.kv_cache_bytes.explain",
            &[("l", &layers), ("kv", &kv_heads), ("d", &head_dim), ("t", &tokens), ("answer", &show(answer))],
        ),
        vec![
            (answer / 2.0, t(lang, "ex.kv_cache_bytes.no_v")),
            (gib(heads, 2), t(lang, "ex.kv_cache_bytes.all_heads")),
            (gib(kv_heads, 4), t(lang, "ex.kv_cache_bytes.fp32")),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exercise_checks_its_answer_and_its_classic_mistakes() {
        crate::check_numeric_exercises(EXERCISES, 2);
    }

    #[test]
    fn layernorm_backward_is_the_written_out_formula() {
        // x = (1, 2, 6): mean 3, variance 14/3; g = (1, 0, 0).
        let x = [1.0, 2.0, 6.0];
        let inv = 1.0 / (14.0f64 / 3.0 + 1e-5).sqrt();
        let xhat: Vec<f64> = x.iter().map(|v| (v - 3.0) * inv).collect();
        let g = [1.0, 0.0, 0.0];
        let mean_g = 1.0 / 3.0;
        let mean_gx = xhat[0] / 3.0;
        let want = inv * (g[0] - mean_g - xhat[0] * mean_gx);
        assert!((layernorm_grad(&x, &g, None) - want).abs() < 1e-12);
    }
}
