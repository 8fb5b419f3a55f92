//! fp8 with per-tensor scaling, as NVIDIA Transformer Engine does it: a
//! tensor is multiplied by `scale = max_finite / amax / 2^margin`, rounded
//! to E4M3 or E5M2 by the float emulator, and divided again. The amax is
//! the tensor's own (current scaling) or the largest of the last
//! `amax_history_len` steps' (delayed scaling: the scale is known before
//! the tensor is, so a tensor that grew since can overflow — into the
//! largest finite value when the conversion saturates, into NaN or ±inf
//! when it does not). Training the engine's MLP with fp8 matmul inputs
//! under TE's HYBRID format (E4M3 forward, E5M2 gradients) against bf16 is
//! [`super::fp8_train`].

use std::collections::VecDeque;

use serde::Serialize;

use super::bytes::fp8_scale;
use crate::float::{Format, Rounding};

/// Where the amax behind a scale comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Fp8Scaling {
    /// The tensor's own amax, found before it is cast (one extra pass).
    Current,
    /// The largest amax of the last `history` tensors (TE's
    /// `amax_history_len`, `amax_compute_algo = "max"`); scale 1 before any.
    Delayed { history: usize },
}

/// The most steps a delayed-scaling history holds.
pub const MAX_HISTORY: usize = 1024;

/// What one cast did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CastStats {
    pub values: u64,
    /// The tensor's amax, and the scale it was cast with.
    pub amax: f64,
    pub scale: f64,
    /// Finite values that became NaN or ±inf.
    pub overflowed: u64,
    /// Values that would have overflowed but became the largest finite
    /// (saturating conversion).
    pub saturated: u64,
    /// Non-zero values that became zero.
    pub underflowed: u64,
}

impl CastStats {
    pub fn add(&mut self, other: &Self) {
        self.values += other.values;
        self.overflowed += other.overflowed;
        self.saturated += other.saturated;
        self.underflowed += other.underflowed;
        self.amax = self.amax.max(other.amax);
    }
}

/// One tensor's scaling state across steps.
#[derive(Clone, Debug)]
pub struct ScaledCast {
    pub format: Format,
    pub scaling: Fp8Scaling,
    /// Binades left between the scaled amax and the format's largest value.
    pub margin: i32,
    history: VecDeque<f64>,
}

impl ScaledCast {
    /// `format` with its `saturate` flag as given (TE's casts saturate).
    pub fn new(format: Format, scaling: Fp8Scaling, margin: i32) -> Self {
        Self {
            format,
            scaling,
            margin,
            history: VecDeque::new(),
        }
    }

    /// The scale the next tensor gets, whose own amax is `amax`.
    pub fn scale_for(&self, amax: f64) -> f64 {
        match self.scaling {
            Fp8Scaling::Current => fp8_scale(amax, &self.format, self.margin),
            Fp8Scaling::Delayed { .. } => {
                let seen = self.history.iter().copied().fold(0.0, f64::max);
                fp8_scale(seen, &self.format, self.margin)
            }
        }
    }

    /// Casts `values` in place (scaled, rounded to the format, unscaled)
    /// and records their amax in the history.
    pub fn cast(&mut self, values: &mut [f32]) -> CastStats {
        let amax = values
            .iter()
            .filter(|v| v.is_finite())
            .fold(0.0f64, |m, v| m.max(f64::from(v.abs())));
        let scale = self.scale_for(amax);
        let stats = cast_with(values, scale, &self.format);
        if let Fp8Scaling::Delayed { history } = self.scaling {
            self.history.push_back(amax);
            while self.history.len() > history.clamp(1, MAX_HISTORY) {
                self.history.pop_front();
            }
        }
        CastStats {
            amax,
            scale,
            ..stats
        }
    }
}

/// `values` through `format` at `scale`: x·scale rounded (nearest-even),
/// decoded and divided by `scale` again.
pub fn cast_with(values: &mut [f32], scale: f64, format: &Format) -> CastStats {
    let max = format.range().max_finite;
    // What the same value would become without saturation: a value just
    // past the largest finite that rounds down to it is not saturated.
    let unsaturated = Format {
        saturate: false,
        ..format.clone()
    };
    let mut stats = CastStats {
        values: values.len() as u64,
        scale,
        ..CastStats::default()
    };
    for v in values.iter_mut() {
        let x = f64::from(*v) * scale;
        let y = format.decode(format.encode_f64(x, Rounding::NearestEven));
        if x.is_finite() && !y.is_finite() {
            stats.overflowed += 1;
        } else if x.abs() > max
            && y.abs() == max
            && !unsaturated
                .decode(unsaturated.encode_f64(x, Rounding::NearestEven))
                .is_finite()
        {
            stats.saturated += 1;
        } else if x != 0.0 && y == 0.0 {
            stats.underflowed += 1;
        }
        *v = (y / scale) as f32;
    }
    stats
}

/// One tensor on two 8-bit grids: fp8 (a per-tensor scale putting its
/// amax at the format's largest value) and int8 (symmetric, amax/127) —
/// each grid's values over the tensor's range and each round trip's error.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GridsCompared {
    /// fp8's representable values (divided by the scale) within ±amax:
    /// dense near zero, sparse at the ends.
    pub fp8_grid: Vec<f64>,
    /// int8's: evenly spaced.
    pub int8_grid: Vec<f64>,
    pub fp8_error: super::ErrorStats,
    pub int8_error: super::ErrorStats,
    /// Whether fp8's round trip kept more of the signal (an exact round
    /// trip, SQNR ∞, beats any finite one).
    pub fp8_wins: bool,
}

/// `values` in `format` beside int8, both with min–max per-tensor scales.
pub fn versus_int8(values: &[f32], format: &Format) -> Result<GridsCompared, super::QuantError> {
    super::tensor::check_matrix(values, 1, values.len())?;
    let amax = values.iter().fold(0.0f64, |m, v| m.max(f64::from(v.abs())));
    let scale = fp8_scale(amax, format, 0);
    let mut fp8 = values.to_vec();
    let stats = cast_with(&mut fp8, scale, format);
    let restored: Vec<f64> = fp8.iter().map(|&v| f64::from(v)).collect();
    let fp8_error = super::error_stats(values, &restored, stats.saturated as usize);
    let mut fp8_grid: Vec<f64> = (0..1u32 << format.bits())
        .map(|bits| format.decode(bits) / scale)
        .filter(|v| v.is_finite() && v.abs() <= amax * (1.0 + 1e-12))
        .collect();
    fp8_grid.sort_by(f64::total_cmp);
    fp8_grid.dedup();
    let int8 = super::QuantSettings {
        format: super::IntFormat::signed(8),
        ..super::QuantSettings::default()
    };
    let (q, int8_error) = super::quantise_with_stats(values, 1, values.len(), &int8)?;
    let p = q.params.first().copied().ok_or(super::QuantError::Empty)?;
    let int8_grid = (p.qmin..=p.qmax).map(|c| p.dequantise(c)).collect();
    let db = |e: &super::ErrorStats| e.sqnr_db.unwrap_or(f64::INFINITY);
    let fp8_wins = db(&fp8_error) > db(&int8_error);
    Ok(GridsCompared {
        fp8_grid,
        int8_grid,
        fp8_error,
        int8_error,
        fp8_wins,
    })
}

/// The delayed-scaling hazard on one tensor: a history whose amax is
/// `history_amax`, then a tensor of `values` that grew past it, cast with
/// the stale scale by a saturating conversion and by one that is not.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StaleScale {
    pub format: String,
    pub history_amax: f64,
    pub saturating: CastStats,
    pub overflowing: CastStats,
}

pub fn stale_scale(values: &[f32], history_amax: f64, format: &Format, margin: i32) -> StaleScale {
    let cast = |saturate: bool| {
        let format = Format {
            saturate,
            ..format.clone()
        };
        let mut cast = ScaledCast::new(format, Fp8Scaling::Delayed { history: 16 }, margin);
        cast.history.push_back(history_amax);
        cast.cast(&mut values.to_vec())
    };
    StaleScale {
        format: format.name.clone(),
        history_amax,
        saturating: cast(true),
        overflowing: cast(false),
    }
}

#[cfg(test)]
#[path = "fp8_tests.rs"]
mod tests;
