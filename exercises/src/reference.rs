//! Reference solutions: what `learn/` should become. Each checker must accept
//! its reference (`dlsys-lab check`, and `cargo test --workspace` through the
//! `reference` feature). Don't peek before you try.

use crate::{AdamConfig, Case, check};

/// Symmetric per-channel int8: a scale per column, amax / 127 (1 for an
/// all-zero column); codes rounded to nearest-even; NaN or ±inf refused.
pub fn quantise_per_channel(w: &[f32], rows: usize, cols: usize) -> Option<(Vec<i8>, Vec<f64>)> {
    if w.iter().any(|x| !x.is_finite()) || w.len() != rows * cols {
        return None;
    }
    let scales: Vec<f64> = (0..cols)
        .map(|j| {
            let amax = (0..rows).fold(0.0f64, |m, r| m.max(f64::from(w[r * cols + j].abs())));
            if amax > 0.0 { amax / 127.0 } else { 1.0 }
        })
        .collect();
    let codes = w
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            (f64::from(x) / scales[i % cols])
                .round_ties_even()
                .clamp(-127.0, 127.0) as i8
        })
        .collect();
    Some((codes, scales))
}

/// fp16 bits → f32 (exact: every fp16 value is an f32).
pub fn fp16_from_bits(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f32::from(bits & 0x03ff);
    let magnitude = match exponent {
        0 => mantissa * 2f32.powi(-24),
        31 if mantissa == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        e => (1.0 + mantissa / 1024.0) * 2f32.powi(e - 15),
    };
    sign * magnitude
}

/// f32 → bf16 bits, round to nearest, ties to even.
pub fn round_to_bf16_rne(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        // Keep the sign and set the quiet bit, so the payload cannot vanish.
        return ((bits >> 16) as u16) | 0x0040;
    }
    let lsb = (bits >> 16) & 1;
    (bits.wrapping_add(0x7fff + lsb) >> 16) as u16
}

/// y = x·W + b with x: n×d_in, W: d_in×d_out, b: d_out (row-major). Given
/// dy = ∂L/∂y (n×d_out), returns (dx, dW, db).
pub fn linear_backward(
    x: &[f64],
    w: &[f64],
    dy: &[f64],
    n: usize,
    d_in: usize,
    d_out: usize,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut dx = vec![0.0; n * d_in];
    let mut dw = vec![0.0; d_in * d_out];
    let mut db = vec![0.0; d_out];
    for r in 0..n {
        for o in 0..d_out {
            let g = dy[r * d_out + o];
            db[o] += g;
            for i in 0..d_in {
                dx[r * d_in + i] += g * w[i * d_out + o];
                dw[i * d_out + o] += x[r * d_in + i] * g;
            }
        }
    }
    (dx, dw, db)
}

/// Rows of p = softmax(z) and of the upstream gradient g; returns dz.
pub fn softmax_backward(p: &[f64], g: &[f64], classes: usize) -> Vec<f64> {
    let mut dz = Vec::with_capacity(p.len());
    for (p_row, g_row) in p.chunks(classes).zip(g.chunks(classes)) {
        let dot: f64 = p_row.iter().zip(g_row).map(|(p, g)| p * g).sum();
        dz.extend(p_row.iter().zip(g_row).map(|(p, g)| p * (g - dot)));
    }
    dz
}

/// ∂/∂z of the mean over rows of −log softmax(z)[label].
pub fn softmax_cross_entropy_backward(
    logits: &[f64],
    labels: &[usize],
    classes: usize,
) -> Vec<f64> {
    let n = labels.len() as f64;
    let mut dz = Vec::with_capacity(logits.len());
    for (row, label) in logits.chunks(classes).zip(labels) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|z| (z - max).exp()).sum();
        dz.extend(row.iter().enumerate().map(|(k, z)| {
            let p = (z - max).exp() / sum;
            (p - if k == *label { 1.0 } else { 0.0 }) / n
        }));
    }
    dz
}

/// v ← μv − lr·g; θ ← θ + v.
pub fn sgd_momentum_step(
    params: &mut [f64],
    grads: &[f64],
    velocity: &mut [f64],
    lr: f64,
    mu: f64,
) {
    for ((p, v), g) in params.iter_mut().zip(velocity.iter_mut()).zip(grads) {
        *v = mu * *v - lr * g;
        *p += *v;
    }
}

/// One Adam step; `t` is the step number, from 1.
pub fn adam_step(
    params: &mut [f64],
    grads: &[f64],
    m: &mut [f64],
    v: &mut [f64],
    t: i32,
    c: AdamConfig,
) {
    let correct1 = 1.0 - c.beta1.powi(t);
    let correct2 = 1.0 - c.beta2.powi(t);
    for (((p, m), v), g) in params
        .iter_mut()
        .zip(m.iter_mut())
        .zip(v.iter_mut())
        .zip(grads)
    {
        *m = c.beta1 * *m + (1.0 - c.beta1) * g;
        *v = c.beta2 * *v + (1.0 - c.beta2) * g * g;
        *p -= c.lr * (*m / correct1) / ((*v / correct2).sqrt() + c.eps);
    }
}

/// Softmax of one row: one pass for the max and the sum, one to normalise.
pub fn online_softmax(row: &[f32]) -> Vec<f32> {
    let (mut max, mut sum) = (f32::NEG_INFINITY, 0.0f32);
    for &x in row {
        if x == f32::NEG_INFINITY {
            continue; // exp(−inf) adds nothing (and −inf − −inf would be NaN)
        }
        if x > max {
            sum = sum * (max - x).exp() + 1.0;
            max = x;
        } else {
            sum += (x - max).exp();
        }
    }
    row.iter().map(|x| (x - max).exp() / sum).collect()
}

/// A Fisher–Yates shuffle of 0..len from `below(n)` (uniform in 0..n), cut
/// into batches of `batch_size`; with `drop_last`, a short last batch is dropped.
pub fn dataloader_batches(
    len: usize,
    batch_size: usize,
    drop_last: bool,
    below: &mut dyn FnMut(usize) -> usize,
) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..len).collect();
    for i in (1..len).rev() {
        order.swap(i, below(i + 1));
    }
    order
        .chunks(batch_size)
        .filter(|b| !drop_last || b.len() == batch_size)
        .map(<[usize]>::to_vec)
        .collect()
}

/// Greedy by size with best fit: largest first (ties: the earlier first
/// use), each at the start of the smallest gap among the placed buffers
/// live with it that holds it, else past the last of them.
pub fn plan_arena(buffers: &[(u64, u32, u32)]) -> Vec<u64> {
    let mut order: Vec<usize> = (0..buffers.len())
        .filter(|i| buffers[*i].1 < buffers[*i].2)
        .collect();
    order.sort_by_key(|i| (std::cmp::Reverse(buffers[*i].0), buffers[*i].1, *i));
    let mut offsets = vec![0; buffers.len()];
    let mut placed: Vec<usize> = Vec::new();
    for i in order {
        let (bytes, first, end) = buffers[i];
        let mut taken: Vec<(u64, u64)> = placed
            .iter()
            .filter(|j| buffers[**j].1 < end && first < buffers[**j].2)
            .map(|j| (offsets[*j], offsets[*j] + buffers[*j].0))
            .collect();
        taken.sort_unstable();
        let (mut cursor, mut best): (u64, Option<(u64, u64)>) = (0, None);
        for (start, stop) in taken {
            if start > cursor
                && start - cursor >= bytes
                && best.is_none_or(|(_, g)| start - cursor < g)
            {
                best = Some((cursor, start - cursor));
            }
            cursor = cursor.max(stop);
        }
        offsets[i] = best.map_or(cursor, |(at, _)| at);
        placed.push(i);
    }
    offsets
}

/// Each node lives from its own point through its last reader's point; a
/// result to the end.
pub fn liveness(inputs: &[Vec<usize>], outputs: &[usize]) -> Vec<(u32, u32)> {
    let n = inputs.len() as u32;
    let mut spans: Vec<(u32, u32)> = (0..n).map(|i| (i, i + 1)).collect();
    for (reader, reads) in inputs.iter().enumerate() {
        for j in reads {
            spans[*j].1 = spans[*j].1.max(reader as u32 + 1);
        }
    }
    for out in outputs {
        spans[*out].1 = n;
    }
    spans
}

/// Each checker against its reference.
pub fn cases() -> Vec<Case> {
    fn case(exercise: &'static str, run: fn() -> Result<(), String>) -> Case {
        Case {
            exercise,
            solution: "reference",
            expect: None,
            run,
        }
    }
    vec![
        case("fp16_from_bits", || check::fp16_from_bits(fp16_from_bits)),
        case("round_to_bf16_rne", || {
            check::round_to_bf16_rne(round_to_bf16_rne)
        }),
        case("linear_backward", || {
            check::linear_backward(linear_backward)
        }),
        case("softmax_backward", || {
            check::softmax_backward(softmax_backward)
        }),
        case("softmax_cross_entropy_backward", || {
            check::softmax_cross_entropy_backward(softmax_cross_entropy_backward)
        }),
        case("sgd_momentum_step", || {
            check::sgd_momentum_step(sgd_momentum_step)
        }),
        case("adam_step", || check::adam_step(adam_step)),
        case("online_softmax", || check::online_softmax(online_softmax)),
        case("dataloader_batches", || {
            check::dataloader_batches(dataloader_batches)
        }),
        case("plan_arena", || check::plan_arena(plan_arena)),
        case("liveness", || check::liveness(liveness)),
        case("quantise_per_channel", || {
            check::quantise_per_channel(quantise_per_channel)
        }),
    ]
}
