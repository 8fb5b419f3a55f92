//! Calibration: the range of a block's values that is mapped onto the
//! integer grid. Min–max keeps every value; a percentile clip gives up the
//! tails for a finer grid; the MSE search picks the clip whose
//! quantisation error is least on the values themselves; the entropy
//! search (TensorRT's) picks the clip whose quantised histogram loses the
//! least information, in KL divergence.

use super::QuantError;
use super::scheme::{Calibration, IntFormat, Mapping, QParams};
use crate::float::Rounding;

/// The shrinkings of the min–max range the MSE search tries: 1, 0.99, …,
/// down to 1/MSE_STEPS·… (`k / MSE_STEPS` for k = MSE_STEPS down to 1).
pub const MSE_STEPS: usize = 100;

/// The clip range of `values` (finite, not empty) under `calibration`.
pub fn clip_range(
    values: &[f64],
    calibration: Calibration,
    format: IntFormat,
    mapping: Mapping,
) -> Result<(f64, f64), QuantError> {
    let (lo, hi) = min_max(values).ok_or(QuantError::Empty)?;
    let symmetric = mapping != Mapping::Asymmetric;
    match calibration {
        Calibration::MinMax => Ok((lo, hi)),
        Calibration::Percentile { pct } => {
            if symmetric {
                let mut mags: Vec<f64> = values.iter().map(|v| v.abs()).collect();
                mags.sort_by(f64::total_cmp);
                let a = percentile(&mags, pct);
                Ok((-a, a))
            } else {
                let mut sorted = values.to_vec();
                sorted.sort_by(f64::total_cmp);
                Ok((percentile(&sorted, 100.0 - pct), percentile(&sorted, pct)))
            }
        }
        Calibration::Fraction { of_range } => {
            if symmetric {
                let a = lo.abs().max(hi.abs()) * of_range;
                Ok((-a, a))
            } else {
                Ok((lo * of_range, hi * of_range))
            }
        }
        Calibration::Entropy => {
            // A histogram of 2,048 bins over a few dozen values is almost
            // empty, and its KL minimum a meaningless, far too narrow clip.
            if values.len() < KL_MIN_VALUES {
                return Err(QuantError::KlValues {
                    values: values.len(),
                    min: KL_MIN_VALUES,
                });
            }
            let levels = usize::try_from(format.qmax()).unwrap_or(1).max(1) + 1;
            let t = entropy_clip(values, levels);
            if symmetric {
                Ok((-t, t))
            } else {
                Ok((lo.max(-t), hi.min(t)))
            }
        }
        Calibration::Mse => {
            let (base_lo, base_hi) = if symmetric {
                let a = lo.abs().max(hi.abs());
                (-a, a)
            } else {
                (lo, hi)
            };
            let mut best = (f64::INFINITY, (base_lo, base_hi));
            for k in (1..=MSE_STEPS).rev() {
                let f = k as f64 / MSE_STEPS as f64;
                let (l, h) = (base_lo * f, base_hi * f);
                let p = QParams::for_range(l, h, format, mapping)?;
                let mse = values
                    .iter()
                    .map(|&x| {
                        let e = x - p.dequantise(p.quantise(x, Rounding::NearestEven, 0));
                        e * e
                    })
                    .sum::<f64>();
                // Strictly less: ties keep the wider clip.
                if mse < best.0 {
                    best = (mse, (l, h));
                }
            }
            Ok(best.1)
        }
    }
}

pub fn min_max(values: &[f64]) -> Option<(f64, f64)> {
    let first = *values.first()?;
    Some(
        values
            .iter()
            .fold((first, first), |(lo, hi), &v| (lo.min(v), hi.max(v))),
    )
}

/// The `pct`-th percentile of sorted values, linearly interpolated between
/// ranks (NumPy's default).
pub fn percentile(sorted: &[f64], pct: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let pos = (pct / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos - pos.floor());
    let j = (i + 1).min(sorted.len() - 1);
    sorted[i] + (sorted[j] - sorted[i]) * frac
}

/// Bins of the |x| histogram the entropy search uses (TensorRT's 2048).
pub const KL_BINS: usize = 2048;
/// The fewest values a block must hold for the entropy clip: a quarter of
/// the bins (TensorRT builds its histograms over a calibration set's
/// activations; a channel's 64 weights leave the histogram nearly empty).
pub const KL_MIN_VALUES: usize = KL_BINS / 4;

/// TensorRT's entropy calibration (Migacz, "8-bit Inference with TensorRT",
/// 2017): a histogram of |x| in [`KL_BINS`] bins; for every candidate clip
/// of `i ≥ levels` bins, P is the first `i` bins with the tail folded into
/// the last, Q the same bins merged into `levels` groups and each group's
/// count spread over its non-empty bins; the clip is the upper edge of bin
/// `i` whose KL(P ‖ Q) is least. Zero for an all-zero input.
pub fn entropy_clip(values: &[f64], levels: usize) -> f64 {
    let amax = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if amax == 0.0 || levels == 0 {
        return 0.0;
    }
    let width = amax / KL_BINS as f64;
    let mut hist = vec![0.0f64; KL_BINS];
    for v in values {
        hist[((v.abs() / width) as usize).min(KL_BINS - 1)] += 1.0;
    }
    let mut best = (f64::INFINITY, amax);
    for i in levels.min(KL_BINS)..=KL_BINS {
        let kl = kl_for_clip(&hist, i, levels);
        // Strictly less: ties keep the narrower clip found first.
        if kl < best.0 {
            best = (kl, i as f64 * width);
        }
    }
    best.1
}

/// KL(P ‖ Q) for the clip at `i` bins (see [`entropy_clip`]).
fn kl_for_clip(hist: &[f64], i: usize, levels: usize) -> f64 {
    let mut p = hist[..i].to_vec();
    p[i - 1] += hist[i..].iter().sum::<f64>();
    let mut q = vec![0.0f64; i];
    let per = i / levels;
    for g in 0..levels {
        let start = g * per;
        let stop = if g + 1 == levels { i } else { start + per };
        let total: f64 = hist[start..stop].iter().sum();
        let nonzero = p[start..stop].iter().filter(|&&c| c > 0.0).count();
        if nonzero > 0 {
            for k in start..stop {
                if p[k] > 0.0 {
                    q[k] = total / nonzero as f64;
                }
            }
        }
    }
    let (sp, sq) = (p.iter().sum::<f64>(), q.iter().sum::<f64>());
    if sp == 0.0 || sq == 0.0 {
        return f64::INFINITY;
    }
    p.iter()
        .zip(&q)
        .filter(|(pk, _)| **pk > 0.0)
        .map(|(pk, qk)| {
            let (pk, qk) = (pk / sp, qk / sq);
            // A bin P has and Q lacks: Q's mass was merged away; charge it
            // as TensorRT's smoothing does, with a tiny mass.
            pk * (pk / qk.max(1e-12)).ln()
        })
        .sum()
}
