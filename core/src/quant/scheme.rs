//! What an integer quantisation is: the format (2–8 bits, signed or not),
//! the mapping from reals to integers (symmetric or affine), the
//! granularity (which values share a scale), the calibration (which range
//! is mapped) and the rounding. One value is quantised by [`QParams`].

use serde::{Deserialize, Serialize};

use super::QuantError;
use crate::float::Rounding;
use crate::names::Named;

pub const MIN_BITS: u32 = 2;
pub const MAX_BITS: u32 = 8;

/// An integer format: `bits` wide, two's complement when `signed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IntFormat {
    pub bits: u32,
    pub signed: bool,
}

impl IntFormat {
    pub fn signed(bits: u32) -> Self {
        Self { bits, signed: true }
    }

    pub fn unsigned(bits: u32) -> Self {
        Self {
            bits,
            signed: false,
        }
    }

    pub fn validate(&self) -> Result<(), QuantError> {
        if !(MIN_BITS..=MAX_BITS).contains(&self.bits) {
            return Err(QuantError::Bits {
                bits: self.bits,
                min: MIN_BITS,
                max: MAX_BITS,
            });
        }
        Ok(())
    }

    /// The smallest code: −2^(b−1) signed, 0 unsigned.
    pub fn qmin(&self) -> i32 {
        if self.signed {
            -(1 << (self.bits - 1))
        } else {
            0
        }
    }

    /// The largest code: 2^(b−1) − 1 signed, 2^b − 1 unsigned.
    pub fn qmax(&self) -> i32 {
        if self.signed {
            (1 << (self.bits - 1)) - 1
        } else {
            (1 << self.bits) - 1
        }
    }

    /// `int8`, `uint4`, …
    pub fn name(&self) -> String {
        format!("{}int{}", if self.signed { "" } else { "u" }, self.bits)
    }
}

/// How a clip range becomes a scale and a zero point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mapping {
    /// Zero point 0, `scale = amax / qmax`, codes in [−qmax, qmax]: the
    /// most negative code is left unused so the grid is symmetric (int8:
    /// amax/127 over [−127, 127], as TensorRT and most int8 kernels do).
    #[default]
    Symmetric,
    /// PyTorch's symmetric observer: `scale = amax / ((qmax − qmin) / 2)`
    /// over the full [qmin, qmax] (int8: amax/127.5 over [−128, 127]).
    SymmetricFull,
    /// Affine: `scale = (hi − lo) / (qmax − qmin)` with an integer zero
    /// point, the range widened to include 0 so that 0 is exact.
    Asymmetric,
}

impl Mapping {
    pub const ALL: [Self; 3] = [Self::Symmetric, Self::SymmetricFull, Self::Asymmetric];

    pub fn id(self) -> &'static str {
        match self {
            Self::Symmetric => "symmetric",
            Self::SymmetricFull => "symmetric-full",
            Self::Asymmetric => "asymmetric",
        }
    }
}

impl Named for Mapping {
    fn name_key(&self) -> String {
        format!("quant.mapping.{}", self.id())
    }
}

/// Which values share one scale (and zero point), for a 2-D tensor
/// `[rows, cols]` stored row-major. The engine's `Linear` stores `W` as
/// `[in, out]`: its output channels are axis 1 and its reduction axis
/// (K) is axis 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Granularity {
    Tensor,
    /// One scale per index along `axis` (axis 1 of `[in, out]`: per
    /// output channel; axis 0 of `[tokens, K]`: per token).
    Channel {
        axis: usize,
    },
    /// Runs of `size` consecutive values along `axis` (the reduction axis),
    /// one run per index of the other axis; a shorter last run, when the
    /// axis is not a multiple of `size`, gets its own scale.
    Group {
        axis: usize,
        size: usize,
    },
}

impl Granularity {
    pub fn validate(&self) -> Result<(), QuantError> {
        match *self {
            Self::Tensor => Ok(()),
            Self::Channel { axis } if axis > 1 => Err(QuantError::Axis { axis }),
            Self::Group { axis, .. } if axis > 1 => Err(QuantError::Axis { axis }),
            Self::Group { size: 0, .. } => Err(QuantError::GroupSize),
            _ => Ok(()),
        }
    }

    /// The kind, without its axis or size: `tensor`, `channel`, `group`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Tensor => "tensor",
            Self::Channel { .. } => "channel",
            Self::Group { .. } => "group",
        }
    }

    /// `tensor`, `channel`, `group:128` (the CLI's spelling).
    pub fn id(&self) -> String {
        match self {
            Self::Group { size, .. } => format!("group:{size}"),
            other => other.kind().to_owned(),
        }
    }

    /// For each value of a `[rows, cols]` tensor, the index of its block,
    /// and the number of blocks.
    pub fn blocks(&self, rows: usize, cols: usize) -> (Vec<u32>, usize) {
        let n = rows * cols;
        match *self {
            Self::Tensor => (vec![0; n], usize::from(n > 0)),
            Self::Channel { axis: 0 } => ((0..n).map(|i| (i / cols) as u32).collect(), rows),
            Self::Channel { .. } => ((0..n).map(|i| (i % cols) as u32).collect(), cols),
            Self::Group { axis, size } => {
                let size = size.max(1);
                // Along axis 0: groups of rows within each column; along
                // axis 1: groups of columns within each row.
                let (len, other) = if axis == 0 {
                    (rows, cols)
                } else {
                    (cols, rows)
                };
                let per = len.div_ceil(size);
                let block = |i: usize| {
                    let (r, c) = (i / cols, i % cols);
                    let (along, across) = if axis == 0 { (r, c) } else { (c, r) };
                    (across * per + along / size) as u32
                };
                ((0..n).map(block).collect(), per * other)
            }
        }
    }
}

/// Which range of a block's values is mapped onto the integer grid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Calibration {
    /// The block's minimum and maximum.
    #[default]
    MinMax,
    /// Clip at the `pct`-th percentile of |x| (symmetric) or at the
    /// (100 − pct)-th and pct-th percentiles (asymmetric).
    Percentile { pct: f64 },
    /// The clip among [`super::calibrate::MSE_STEPS`] shrinkings of the
    /// min–max range whose quantisation error (mean square) is least.
    Mse,
    /// A clip set by hand: this fraction (0 < f ≤ 1) of the min–max range
    /// (of amax, when symmetric) — the lesson's slider.
    Fraction { of_range: f64 },
    /// TensorRT's entropy calibration: the clip of |x| whose quantised
    /// histogram is closest to the clipped one in KL divergence
    /// ([`super::calibrate::entropy_clip`]).
    Entropy,
}

impl Calibration {
    pub fn validate(&self) -> Result<(), QuantError> {
        match *self {
            Self::Percentile { pct } if !(pct.is_finite() && pct > 50.0 && pct <= 100.0) => {
                Err(QuantError::Percentile { value: pct })
            }
            Self::Fraction { of_range } if !(of_range > 0.0 && of_range <= 1.0) => {
                Err(QuantError::Fraction { value: of_range })
            }
            _ => Ok(()),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Self::MinMax => "minmax",
            Self::Percentile { .. } => "percentile",
            Self::Mse => "mse",
            Self::Fraction { .. } => "fraction",
            Self::Entropy => "kl",
        }
    }

    /// `minmax`, `percentile:99.9`, `mse` (the CLI's spelling).
    pub fn id(&self) -> String {
        match self {
            Self::Percentile { pct } => format!("percentile:{pct}"),
            Self::Fraction { of_range } => format!("fraction:{of_range}"),
            other => other.kind().to_owned(),
        }
    }
}

impl Named for Calibration {
    fn name_key(&self) -> String {
        format!("quant.calibration.{}", self.kind())
    }
}

impl Named for Granularity {
    fn name_key(&self) -> String {
        format!("quant.granularity.{}", self.kind())
    }
}

/// Everything one quantisation needs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuantSettings {
    pub format: IntFormat,
    pub mapping: Mapping,
    pub granularity: Granularity,
    pub calibration: Calibration,
    /// Nearest-even or stochastic (the float emulator's modes; the directed
    /// ones work too, without the half-step bound).
    pub rounding: Rounding,
    /// Seeds stochastic rounding.
    pub seed: u64,
}

impl Default for QuantSettings {
    fn default() -> Self {
        Self {
            format: IntFormat::signed(8),
            mapping: Mapping::Symmetric,
            granularity: Granularity::Tensor,
            calibration: Calibration::MinMax,
            rounding: Rounding::NearestEven,
            seed: 1,
        }
    }
}

impl QuantSettings {
    /// Every limit, checked once for every face.
    pub fn validate(&self) -> Result<(), QuantError> {
        self.format.validate()?;
        if self.mapping != Mapping::Asymmetric && !self.format.signed {
            return Err(QuantError::SymmetricUnsigned);
        }
        self.granularity.validate()?;
        self.calibration.validate()
    }
}

/// A block's scale and zero point: `q = clamp(round(x / scale) + zero_point,
/// qmin, qmax)`, `x̂ = (q − zero_point) · scale`, in f64.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct QParams {
    pub scale: f64,
    pub zero_point: i32,
    pub qmin: i32,
    pub qmax: i32,
}

impl QParams {
    /// The parameters that map the clip range `[lo, hi]` (widened to hold
    /// 0) onto `format` under `mapping`. A zero range — an all-zero block —
    /// gets scale 1: every value in it is 0 and maps to the zero point
    /// exactly, and nothing is divided by zero.
    pub fn for_range(
        lo: f64,
        hi: f64,
        format: IntFormat,
        mapping: Mapping,
    ) -> Result<Self, QuantError> {
        if !(lo.is_finite() && hi.is_finite()) || lo > hi {
            return Err(QuantError::Range { lo, hi });
        }
        let (qmin, qmax) = (format.qmin(), format.qmax());
        let (lo, hi) = (lo.min(0.0), hi.max(0.0));
        let (scale, zero_point, qmin) = match mapping {
            Mapping::Symmetric => (lo.abs().max(hi) / f64::from(qmax), 0, -qmax),
            Mapping::SymmetricFull => (lo.abs().max(hi) / (f64::from(qmax - qmin) / 2.0), 0, qmin),
            Mapping::Asymmetric => {
                let scale = (hi - lo) / f64::from(qmax - qmin);
                let zp = if scale > 0.0 {
                    (f64::from(qmin) - lo / scale).round_ties_even() as i32
                } else {
                    0
                };
                (scale, zp.clamp(qmin, qmax), qmin)
            }
        };
        // A range so small its scale is subnormal or zero: treat it as zero.
        let scale = if scale.is_normal() { scale } else { 1.0 };
        let zero_point = zero_point.clamp(qmin, qmax);
        Ok(Self {
            scale,
            zero_point,
            qmin,
            qmax,
        })
    }

    /// `x`'s code, rounded by `rounding`; `draw` is the uniform 64-bit draw
    /// stochastic rounding compares against, as the float emulator does
    /// (up when the draw is below the dropped fraction as a 0.64 number).
    pub fn quantise(&self, x: f64, rounding: Rounding, draw: u64) -> i32 {
        let v = x / self.scale;
        // A code's own value, divided back in f64, can land an ulp off the
        // integer; directed and stochastic modes would then step away.
        let near = v.round();
        let v = if (v - near).abs() <= 4.0 * f64::EPSILON * near.abs() {
            near
        } else {
            v
        };
        let r = round_to_integer(v, rounding, draw);
        let q = r + f64::from(self.zero_point);
        q.clamp(f64::from(self.qmin), f64::from(self.qmax)) as i32
    }

    pub fn dequantise(&self, q: i32) -> f64 {
        f64::from(q - self.zero_point) * self.scale
    }

    /// The real range the codes cover.
    pub fn grid_range(&self) -> (f64, f64) {
        (self.dequantise(self.qmin), self.dequantise(self.qmax))
    }
}

/// Rounds `v` to an integer. The grid is uniform, so this is the float
/// emulator's rounding with one unit in the last place equal to 1.
pub fn round_to_integer(v: f64, rounding: Rounding, draw: u64) -> f64 {
    match rounding {
        Rounding::NearestEven => v.round_ties_even(),
        Rounding::NearestAway => v.round(),
        Rounding::TowardZero => v.trunc(),
        Rounding::TowardPositive => v.ceil(),
        Rounding::TowardNegative => v.floor(),
        Rounding::Stochastic => {
            let floor = v.floor();
            let frac = v - floor;
            // The fraction as a 0.64 fixed-point number (saturating at 1).
            let bits = (frac * crate::float::pow2(64)) as u64;
            if frac > 0.0 && draw < bits {
                floor + 1.0
            } else {
                floor
            }
        }
    }
}
