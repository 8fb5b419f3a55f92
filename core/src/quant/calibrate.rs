//! Calibration: the range of a block's values that is mapped onto the
//! integer grid. Min–max keeps every value; a percentile clip gives up the
//! tails for a finer grid; the MSE search picks the clip whose
//! quantisation error is least on the values themselves.

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
