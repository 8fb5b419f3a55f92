//! GPTQ and AWQ on one layer's weight row, small enough to do by hand:
//! the quantisation lesson's worked exercises take their answers from here.
//!
//! Both minimise the layer's *output* error over a calibration set X
//! (`[samples, K]`), not the weights' own error: for a row w of the weight
//! (one output channel, K inputs) and its quantised q, the error is
//! ‖X·(w − q)‖².
//!
//! - **GPTQ** (Frantar et al. 2023, from Optimal Brain Quantisation)
//!   needs the Hessian of that error, H = 2·XᵀX (K × K), from the
//!   calibration set. It quantises the row one weight at a time and moves
//!   each rounding error onto the weights not yet quantised, through H⁻¹:
//!   after q_i, every later w_j ← w_j − (w_i − q_i)·[H⁻¹]_ij / [H⁻¹]_ii;
//!   then H⁻¹ loses row and column i. (The paper does the same with a
//!   Cholesky factor of H⁻¹, in blocks, for speed; the arithmetic is this.)
//! - **AWQ** (Lin et al. 2024) needs each input channel's mean |x| from
//!   the calibration set for its scales, and the set's output error only to
//!   pick α — no Hessian. A channel with large activations is salient:
//!   scaling its weights up by s (and its activations down by s) before
//!   round-to-nearest shrinks that channel's share of the error by about s.
//!   The scales are s_j = m_j^α, normalised by √(max·min) as the reference
//!   code does, with α found by a small grid search on the output error.

use super::QuantError;

/// The fraction of the mean diagonal added to H's diagonal (GPTQ's
/// `percdamp`), so that H⁻¹ exists when a calibration channel is constant.
pub const DAMP: f64 = 0.01;

/// The α of AWQ's grid search: 0 (plain rounding) to 1 in twentieths.
pub const ALPHA_STEPS: usize = 20;

/// H = 2·XᵀX + λ·I for `x` of `samples` rows of `k`, λ = [`DAMP`] × the
/// mean of 2·XᵀX's diagonal.
pub fn hessian(x: &[f64], samples: usize, k: usize) -> Result<Vec<f64>, QuantError> {
    if samples == 0 || k == 0 {
        return Err(QuantError::Empty);
    }
    if x.len() != samples * k {
        return Err(QuantError::Shape {
            len: x.len(),
            rows: samples,
            cols: k,
        });
    }
    let mut h = vec![0.0; k * k];
    for row in x.chunks(k) {
        for i in 0..k {
            for j in 0..k {
                h[i * k + j] += 2.0 * row[i] * row[j];
            }
        }
    }
    let mean_diag = (0..k).map(|i| h[i * k + i]).sum::<f64>() / k as f64;
    let damp = DAMP * mean_diag.max(f64::MIN_POSITIVE);
    for i in 0..k {
        h[i * k + i] += damp;
    }
    Ok(h)
}

/// The inverse of the symmetric positive definite `h` (`k × k`), by
/// Gauss–Jordan elimination with partial pivoting; `None` when singular.
pub fn inverse(h: &[f64], k: usize) -> Option<Vec<f64>> {
    if h.len() != k * k {
        return None;
    }
    let mut a = h.to_vec();
    let mut inv: Vec<f64> = (0..k * k)
        .map(|i| if i / k == i % k { 1.0 } else { 0.0 })
        .collect();
    for col in 0..k {
        let pivot =
            (col..k).max_by(|&p, &q| a[p * k + col].abs().total_cmp(&a[q * k + col].abs()))?;
        if a[pivot * k + col].abs() < 1e-300 {
            return None;
        }
        for j in 0..k {
            a.swap(col * k + j, pivot * k + j);
            inv.swap(col * k + j, pivot * k + j);
        }
        let d = a[col * k + col];
        for j in 0..k {
            a[col * k + j] /= d;
            inv[col * k + j] /= d;
        }
        for r in (0..k).filter(|&r| r != col) {
            let f = a[r * k + col];
            for j in 0..k {
                a[r * k + j] -= f * a[col * k + j];
                inv[r * k + j] -= f * inv[col * k + j];
            }
        }
    }
    Some(inv)
}

/// `value` rounded to the nearest of `scale`'s symmetric grid [−qmax, qmax].
pub fn round_to_grid(value: f64, scale: f64, qmax: i32) -> f64 {
    let q = f64::from(qmax);
    (value / scale).round_ties_even().clamp(-q, q) * scale
}

/// One compensation: weight j after weight i was rounded to `q_i`, through
/// the inverse Hessian's entries `hinv_ii` and `hinv_ij`.
pub fn compensate(w_j: f64, w_i: f64, q_i: f64, hinv_ii: f64, hinv_ij: f64) -> f64 {
    w_j - (w_i - q_i) * hinv_ij / hinv_ii
}

/// GPTQ on one row `w` (K weights) with the inverse Hessian `hinv`
/// (`K × K`), on the symmetric grid of `scale` and `qmax`: the quantised
/// row (values on the grid).
pub fn gptq_row(w: &[f64], hinv: &[f64], scale: f64, qmax: i32) -> Result<Vec<f64>, QuantError> {
    let k = w.len();
    if hinv.len() != k * k {
        return Err(QuantError::Shape {
            len: hinv.len(),
            rows: k,
            cols: k,
        });
    }
    let (mut w, mut hinv) = (w.to_vec(), hinv.to_vec());
    let mut q = vec![0.0; k];
    for i in 0..k {
        q[i] = round_to_grid(w[i], scale, qmax);
        let d = hinv[i * k + i];
        for j in i + 1..k {
            w[j] = compensate(w[j], w[i], q[i], d, hinv[i * k + j]);
        }
        // Remove weight i from the problem: H⁻¹ ← H⁻¹ − H⁻¹[:, i]·H⁻¹[i, :] / d.
        let (col, row): (Vec<f64>, Vec<f64>) =
            (0..k).map(|r| (hinv[r * k + i], hinv[i * k + r])).unzip();
        for r in 0..k {
            for c in 0..k {
                hinv[r * k + c] -= col[r] * row[c] / d;
            }
        }
    }
    Ok(q)
}

/// ‖X·(w − q)‖²: the layer's output error over the calibration set.
pub fn output_error(x: &[f64], w: &[f64], q: &[f64]) -> f64 {
    if w.is_empty() {
        return 0.0;
    }
    x.chunks(w.len())
        .map(|row| {
            let e: f64 = row
                .iter()
                .zip(w.iter().zip(q))
                .map(|(x, (w, q))| x * (w - q))
                .sum();
            e * e
        })
        .sum()
}

/// AWQ's per-input-channel scales for activation means `mean_abs` at `alpha`:
/// m_j^α / √(max · min) over the channels.
pub fn awq_scales(mean_abs: &[f64], alpha: f64) -> Vec<f64> {
    let raw: Vec<f64> = mean_abs.iter().map(|m| m.max(1e-4).powf(alpha)).collect();
    let max = raw.iter().copied().fold(f64::MIN_POSITIVE, f64::max);
    let min = raw.iter().copied().fold(f64::INFINITY, f64::min);
    let norm = (max * min).sqrt();
    raw.iter().map(|s| s / norm).collect()
}

/// One row rounded after AWQ's scaling: w·s rounded on a min–max grid of
/// `qmax` (one scale for the row, as one group), then divided by s again.
pub fn awq_row(w: &[f64], scales: &[f64], qmax: i32) -> Vec<f64> {
    let scaled: Vec<f64> = w.iter().zip(scales).map(|(w, s)| w * s).collect();
    let amax = scaled.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if amax == 0.0 {
        return vec![0.0; w.len()];
    }
    let step = amax / f64::from(qmax);
    scaled
        .iter()
        .zip(scales)
        .map(|(v, s)| round_to_grid(*v, step, qmax) / s)
        .collect()
}

/// AWQ's search: the α of [`ALPHA_STEPS`] + 1 on [0, 1] whose scaled row
/// has the least output error over `x`, with that row and its error.
pub fn awq_search(x: &[f64], w: &[f64], qmax: i32) -> (f64, Vec<f64>, f64) {
    let k = w.len();
    if k == 0 {
        return (0.0, Vec::new(), 0.0);
    }
    let samples = x.len() / k.max(1);
    let mean_abs: Vec<f64> = (0..k)
        .map(|j| x.chunks(k).map(|row| row[j].abs()).sum::<f64>() / samples.max(1) as f64)
        .collect();
    (0..=ALPHA_STEPS)
        .map(|i| {
            let alpha = i as f64 / ALPHA_STEPS as f64;
            let q = awq_row(w, &awq_scales(&mean_abs, alpha), qmax);
            let err = output_error(x, w, &q);
            (alpha, q, err)
        })
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .unwrap_or((0.0, w.to_vec(), 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt as _, SeedableRng as _};

    /// A calibration set whose channels are correlated (a shared factor)
    /// and one of which is large (salient), and a weight row.
    fn layer(seed: u64, k: usize, samples: usize) -> (Vec<f64>, Vec<f64>) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut x = Vec::with_capacity(samples * k);
        for _ in 0..samples {
            let shared: f64 = rng.random_range(-1.0..1.0);
            for j in 0..k {
                let own: f64 = rng.random_range(-1.0..1.0);
                let gain = if j == 1 { 20.0 } else { 1.0 };
                x.push(gain * (0.7 * shared + 0.5 * own));
            }
        }
        let w = (0..k).map(|_| rng.random_range(-1.0..1.0)).collect();
        (x, w)
    }

    #[test]
    fn the_inverse_is_an_inverse() {
        let (x, _) = layer(3, 6, 40);
        let h = hessian(&x, 40, 6).unwrap_or_else(|e| panic!("{e}"));
        let inv = inverse(&h, 6).unwrap_or_else(|| panic!("singular"));
        for i in 0..6 {
            for j in 0..6 {
                let p: f64 = (0..6).map(|m| h[i * 6 + m] * inv[m * 6 + j]).sum();
                assert!(
                    (p - f64::from(u8::from(i == j))).abs() < 1e-9,
                    "{i},{j}: {p}"
                );
            }
        }
        assert!(inverse(&[1.0, 2.0, 2.0, 4.0], 2).is_none());
    }

    #[test]
    fn gptq_beats_rounding_to_nearest_on_the_output_error() {
        let (k, samples) = (16, 64);
        let mut wins = 0;
        for seed in 0..20 {
            let (x, w) = layer(seed, k, samples);
            let hinv = inverse(&hessian(&x, samples, k).unwrap_or_default(), k).unwrap_or_default();
            let amax = w.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let (scale, qmax) = (amax / 7.0, 7);
            let rtn: Vec<f64> = w.iter().map(|v| round_to_grid(*v, scale, qmax)).collect();
            let gptq = gptq_row(&w, &hinv, scale, qmax).unwrap_or_default();
            // Every value lies on the grid.
            for q in &gptq {
                let code = q / scale;
                assert!((code - code.round()).abs() < 1e-9 && code.abs() <= 7.0 + 1e-9);
            }
            if output_error(&x, &w, &gptq) < output_error(&x, &w, &rtn) {
                wins += 1;
            }
        }
        assert!(wins >= 18, "GPTQ won {wins} of 20");
    }

    #[test]
    fn two_weights_by_hand() {
        // w = (0.36, 0.14) on a grid of 0.25, H⁻¹ = [[2, 1], [1, 2]]:
        // w₁ rounds to 0.25 (error 0.11); w₂ becomes 0.14 − 0.11·1/2 =
        // 0.085 and rounds to 0, where round-to-nearest gives 0.25.
        assert!((compensate(0.14, 0.36, 0.25, 2.0, 1.0) - 0.085).abs() < 1e-12);
        let q = gptq_row(&[0.36, 0.14], &[2.0, 1.0, 1.0, 2.0], 0.25, 7).unwrap_or_default();
        assert_eq!(q, vec![0.25, 0.0]);
        assert!(gptq_row(&[0.36, 0.14], &[2.0], 0.25, 7).is_err());
        assert_eq!(output_error(&[], &[], &[]), 0.0);
        assert_eq!(awq_search(&[], &[], 7).1, Vec::<f64>::new());
    }

    #[test]
    fn awq_protects_the_salient_channel_and_alpha_0_is_plain_rounding() {
        let (k, samples) = (16, 64);
        let mut better = 0;
        for seed in 0..20 {
            let (x, w) = layer(seed, k, samples);
            let ones = vec![1.0; k];
            let rtn = awq_row(&w, &ones, 7);
            let (alpha, q, err) = awq_search(&x, &w, 7);
            if alpha > 0.0 && err < output_error(&x, &w, &rtn) {
                better += 1;
            }
            assert_eq!(q.len(), k);
        }
        assert!(better >= 15, "AWQ's scales helped on {better} of 20");
        // Normalised: the largest and smallest scale multiply to 1.
        let s = awq_scales(&[1.0, 4.0, 16.0], 0.5);
        assert!((s[0] * s[2] - 1.0).abs() < 1e-12 && (s[2] / s[0] - 4.0).abs() < 1e-12);
        assert_eq!(awq_scales(&[1.0, 4.0, 16.0], 0.0), vec![1.0; 3]);
    }
}
