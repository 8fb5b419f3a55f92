//! Known-wrong solutions, one or two per exercise, each making a classic
//! mistake. Every checker must reject them with a message that names the
//! mistake (`expect` is a fragment of that message).

use crate::{AdamConfig, Case, check, reference};

/// Treats exponent 0 like any other exponent: no subnormals.
pub fn fp16_without_subnormals(bits: u16) -> f32 {
    let exponent = i32::from((bits >> 10) & 0x1f);
    if exponent == 0 {
        let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
        return sign * (1.0 + f32::from(bits & 0x03ff) / 1024.0) * 2f32.powi(-15);
    }
    reference::fp16_from_bits(bits)
}

/// One scale for the whole matrix: an outlier in one channel coarsens all.
pub fn quantise_per_tensor(w: &[f32], rows: usize, cols: usize) -> Option<(Vec<i8>, Vec<f64>)> {
    let (_, scales) = reference::quantise_per_channel(w, rows, cols)?;
    let scale = scales.iter().copied().fold(0.0f64, f64::max);
    let codes = w
        .iter()
        .map(|&x| {
            (f64::from(x) / scale)
                .round_ties_even()
                .clamp(-127.0, 127.0) as i8
        })
        .collect();
    Some((codes, vec![scale; scales.len()]))
}

/// amax / 127 even for an all-zero column: a scale of 0 (and x / 0).
pub fn quantise_zero_divides(w: &[f32], rows: usize, cols: usize) -> Option<(Vec<i8>, Vec<f64>)> {
    let (codes, mut scales) = reference::quantise_per_channel(w, rows, cols)?;
    for (j, s) in scales.iter_mut().enumerate() {
        let amax = (0..rows).fold(0.0f64, |m, r| m.max(f64::from(w[r * cols + j].abs())));
        *s = amax / 127.0;
    }
    Some((codes, scales))
}

/// Truncates x / scale instead of rounding it.
pub fn quantise_truncating(w: &[f32], rows: usize, cols: usize) -> Option<(Vec<i8>, Vec<f64>)> {
    let (_, scales) = reference::quantise_per_channel(w, rows, cols)?;
    let codes = w
        .iter()
        .enumerate()
        .map(|(i, &x)| (f64::from(x) / scales[i % cols]).trunc() as i8)
        .collect();
    Some((codes, scales))
}

/// Keeps the top 16 bits.
pub fn bf16_truncate(x: f32) -> u16 {
    (x.to_bits() >> 16) as u16
}

/// Rounds ties up (adds half an ulp and truncates).
pub fn bf16_ties_up(x: f32) -> u16 {
    if x.is_nan() {
        return reference::round_to_bf16_rne(x);
    }
    (x.to_bits().wrapping_add(0x8000) >> 16) as u16
}

/// The bias gradient averaged over the batch instead of summed.
pub fn linear_db_mean(
    x: &[f64],
    w: &[f64],
    dy: &[f64],
    n: usize,
    d_in: usize,
    d_out: usize,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (dx, dw, db) = reference::linear_backward(x, w, dy, n, d_in, d_out);
    (dx, dw, db.iter().map(|v| v / n as f64).collect())
}

/// dW without its transpose bookkeeping: dy·x laid out as d_out×d_in.
pub fn linear_dw_transposed(
    x: &[f64],
    w: &[f64],
    dy: &[f64],
    n: usize,
    d_in: usize,
    d_out: usize,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (dx, dw, db) = reference::linear_backward(x, w, dy, n, d_in, d_out);
    let mut t = vec![0.0; dw.len()];
    for i in 0..d_in {
        for o in 0..d_out {
            t[o * d_in + i] = dw[i * d_out + o];
        }
    }
    (dx, t, db)
}

/// p ⊙ g: the dot-product term forgotten.
pub fn softmax_backward_elementwise(p: &[f64], g: &[f64], _classes: usize) -> Vec<f64> {
    p.iter().zip(g).map(|(p, g)| p * g).collect()
}

/// The gradient of the summed loss, not the mean.
pub fn softmax_ce_not_averaged(logits: &[f64], labels: &[usize], classes: usize) -> Vec<f64> {
    let n = labels.len() as f64;
    reference::softmax_cross_entropy_backward(logits, labels, classes)
        .iter()
        .map(|v| v * n)
        .collect()
}

/// exp without subtracting the row max.
pub fn softmax_ce_unstable(logits: &[f64], labels: &[usize], classes: usize) -> Vec<f64> {
    let n = labels.len() as f64;
    let mut dz = Vec::new();
    for (row, label) in logits.chunks(classes).zip(labels) {
        let sum: f64 = row.iter().map(|z| z.exp()).sum();
        dz.extend(
            row.iter()
                .enumerate()
                .map(|(k, z)| (z.exp() / sum - if k == *label { 1.0 } else { 0.0 }) / n),
        );
    }
    dz
}

/// Computes the velocity but never stores it.
pub fn momentum_forgets_velocity(
    params: &mut [f64],
    grads: &[f64],
    velocity: &mut [f64],
    lr: f64,
    mu: f64,
) {
    for ((p, v), g) in params.iter_mut().zip(velocity.iter()).zip(grads) {
        let v = mu * v - lr * g;
        *p += v;
    }
}

/// Adam without bias correction.
pub fn adam_uncorrected(
    params: &mut [f64],
    grads: &[f64],
    m: &mut [f64],
    v: &mut [f64],
    _t: i32,
    c: AdamConfig,
) {
    for (((p, m), v), g) in params
        .iter_mut()
        .zip(m.iter_mut())
        .zip(v.iter_mut())
        .zip(grads)
    {
        *m = c.beta1 * *m + (1.0 - c.beta1) * g;
        *v = c.beta2 * *v + (1.0 - c.beta2) * g * g;
        *p -= c.lr * *m / (v.sqrt() + c.eps);
    }
}

/// exp(x) / Σ exp: no max subtracted.
pub fn softmax_naive(row: &[f32]) -> Vec<f32> {
    let sum: f32 = row.iter().map(|x| x.exp()).sum();
    row.iter().map(|x| x.exp() / sum).collect()
}

/// Tracks the running max but never rescales the running sum.
pub fn online_softmax_no_rescale(row: &[f32]) -> Vec<f32> {
    let (mut max, mut sum) = (f32::NEG_INFINITY, 0.0f32);
    for &x in row {
        if x == f32::NEG_INFINITY {
            continue;
        }
        max = max.max(x);
        sum += (x - max).exp();
    }
    row.iter().map(|x| (x - max).exp() / sum).collect()
}

/// The classic biased shuffle: swap with any position at every step.
pub fn batches_biased_shuffle(
    len: usize,
    batch_size: usize,
    drop_last: bool,
    below: &mut dyn FnMut(usize) -> usize,
) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..len).collect();
    for i in 0..len {
        order.swap(i, below(len));
    }
    order
        .chunks(batch_size)
        .filter(|b| !drop_last || b.len() == batch_size)
        .map(<[usize]>::to_vec)
        .collect()
}

/// Ignores drop_last.
pub fn batches_keep_last(
    len: usize,
    batch_size: usize,
    _drop_last: bool,
    below: &mut dyn FnMut(usize) -> usize,
) -> Vec<Vec<usize>> {
    reference::dataloader_batches(len, batch_size, false, below)
}

/// No reuse: every buffer at bytes of its own.
pub fn plan_no_reuse(buffers: &[(u64, u32, u32)]) -> Vec<u64> {
    let mut next = 0;
    buffers
        .iter()
        .map(|b| {
            let at = next;
            next += b.0;
            at
        })
        .collect()
}

/// Reuses by time, but checks only the buffer just before: each goes past
/// the previous buffer when the two are live together, else at 0 — so a
/// buffer live with an earlier one gets its bytes.
pub fn plan_last_only(buffers: &[(u64, u32, u32)]) -> Vec<u64> {
    let mut offsets = Vec::with_capacity(buffers.len());
    for (i, b) in buffers.iter().enumerate() {
        let at = match i.checked_sub(1).map(|j| (buffers[j], offsets[j])) {
            Some((prev, off)) if prev.1 < b.2 && b.1 < prev.2 => off + prev.0,
            _ => 0,
        };
        offsets.push(at);
    }
    offsets
}

/// Frees a buffer at its last reader's point, before the reader has read it.
pub fn liveness_before_the_reader(inputs: &[Vec<usize>], outputs: &[usize]) -> Vec<(u32, u32)> {
    let n = inputs.len() as u32;
    let mut spans: Vec<(u32, u32)> = (0..n).map(|i| (i, i + 1)).collect();
    for (reader, reads) in inputs.iter().enumerate() {
        for j in reads {
            spans[*j].1 = spans[*j].1.max(reader as u32);
        }
    }
    for out in outputs {
        spans[*out].1 = n;
    }
    spans
}

/// Forgets the results: the loss and the gradients freed after their last
/// reader, as any other buffer.
pub fn liveness_results_freed(inputs: &[Vec<usize>], _outputs: &[usize]) -> Vec<(u32, u32)> {
    crate::reference::liveness(inputs, &[])
}

/// Each checker against its known-wrong solutions.
pub fn cases() -> Vec<Case> {
    fn case(
        exercise: &'static str,
        solution: &'static str,
        expect: &'static str,
        run: fn() -> Result<(), String>,
    ) -> Case {
        Case {
            exercise,
            solution,
            expect: Some(expect),
            run,
        }
    }
    vec![
        case("fp16_from_bits", "no subnormals", "subnormal", || {
            check::fp16_from_bits(fp16_without_subnormals)
        }),
        case("round_to_bf16_rne", "truncation", "truncation", || {
            check::round_to_bf16_rne(bf16_truncate)
        }),
        case("round_to_bf16_rne", "ties away from even", "tie", || {
            check::round_to_bf16_rne(bf16_ties_up)
        }),
        case("linear_backward", "db averaged", "does not average", || {
            check::linear_backward(linear_db_mean)
        }),
        case(
            "linear_backward",
            "dW transposed",
            "laid out d_out×d_in",
            || check::linear_backward(linear_dw_transposed),
        ),
        case("softmax_backward", "p ⊙ g", "is missing", || {
            check::softmax_backward(softmax_backward_elementwise)
        }),
        case(
            "softmax_cross_entropy_backward",
            "not averaged",
            "divide by n",
            || check::softmax_cross_entropy_backward(softmax_ce_not_averaged),
        ),
        case(
            "softmax_cross_entropy_backward",
            "no max subtracted",
            "subtract each row's max",
            || check::softmax_cross_entropy_backward(softmax_ce_unstable),
        ),
        case(
            "sgd_momentum_step",
            "velocity not stored",
            "not carried",
            || check::sgd_momentum_step(momentum_forgets_velocity),
        ),
        case(
            "adam_step",
            "no bias correction",
            "no bias correction",
            || check::adam_step(adam_uncorrected),
        ),
        case(
            "online_softmax",
            "no max subtracted",
            "subtract the running max",
            || check::online_softmax(softmax_naive),
        ),
        case("online_softmax", "sum not rescaled", "rescale", || {
            check::online_softmax(online_softmax_no_rescale)
        }),
        case("dataloader_batches", "biased shuffle", "biased", || {
            check::dataloader_batches(batches_biased_shuffle)
        }),
        case(
            "dataloader_batches",
            "drop_last ignored",
            "short last batch is dropped",
            || check::dataloader_batches(batches_keep_last),
        ),
        case("plan_arena", "no reuse", "no reuse", || {
            check::plan_arena(plan_no_reuse)
        }),
        case(
            "plan_arena",
            "only the last buffer checked",
            "live together",
            || check::plan_arena(plan_last_only),
        ),
        case(
            "liveness",
            "freed before its reader",
            "while it runs",
            || check::liveness(liveness_before_the_reader),
        ),
        case("liveness", "results freed", "a result of the step", || {
            check::liveness(liveness_results_freed)
        }),
        case(
            "quantise_per_channel",
            "one scale per tensor",
            "every column shares",
            || check::quantise_per_channel(quantise_per_tensor),
        ),
        case(
            "quantise_per_channel",
            "zero scale for a zero column",
            "all-zero column",
            || check::quantise_per_channel(quantise_zero_divides),
        ),
        case(
            "quantise_per_channel",
            "truncated codes",
            "truncated",
            || check::quantise_per_channel(quantise_truncating),
        ),
    ]
}
