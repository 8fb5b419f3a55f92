//! Mixed-precision training, emulated: a precision *policy* says which format
//! each kind of tensor is rounded through — op outputs, gradients, optimizer
//! state, the gradient-accumulation buffer, the weights — and how the loss is
//! scaled. Rounding is bit arithmetic over whole f32 buffers (the float
//! emulator's nearest-even fast path), so a policy costs a fraction of an epoch.

pub mod autocast;

use serde::{Deserialize, Serialize};

use crate::float::{Format, FormatError, Rounding, Specials};
use crate::nn::TrainError;

/// Rounds f32 values through a format (nearest-even) and back.
#[derive(Clone, Debug)]
pub struct Rounder {
    kind: Kind,
    name: String,
    /// The format's smallest normal, as f32 (for counting subnormals).
    min_normal: f32,
}

/// The rounding rule, with its constants worked out once.
#[derive(Clone, Debug)]
enum Kind {
    /// fp32: nothing to do.
    Identity,
    /// An 8-bit exponent like fp32's (bf16, tf32): drop `shift` mantissa bits.
    Wide { shift: u32 },
    /// A narrower exponent (fp16, fp8 E5M2…), IEEE-style.
    Narrow(Narrow),
    /// Anything else (saturating or FN formats): the general emulator.
    General(Format),
}

/// The constants of [`round_narrow`].
#[derive(Clone, Copy, Debug)]
struct Narrow {
    shift: u32,
    /// f32 bits of the format's smallest normal magnitude.
    min_normal_bits: u32,
    /// f32 bits of 2^(emax + 1): a rounded magnitude this large overflowed.
    overflow_bits: u32,
}

/// What one rounding pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RoundStats {
    pub values: u64,
    /// Non-zero values that became zero.
    pub underflowed: u64,
    /// Finite values that became ±inf or NaN.
    pub overflowed: u64,
    /// Values that landed on a subnormal (precision already reduced).
    pub subnormal: u64,
}

impl RoundStats {
    pub fn add(&mut self, other: &Self) {
        self.values += other.values;
        self.underflowed += other.underflowed;
        self.overflowed += other.overflowed;
        self.subnormal += other.subnormal;
    }

    pub fn underflow_fraction(&self) -> f64 {
        if self.values == 0 {
            0.0
        } else {
            self.underflowed as f64 / self.values as f64
        }
    }
}

impl Rounder {
    pub fn new(format: &Format) -> Self {
        let name = format.name.clone();
        let min_normal = format.range().min_normal as f32;
        let kind = if *format == Format::fp32() {
            Kind::Identity
        } else if format.specials != Specials::Ieee || format.saturate {
            Kind::General(format.clone())
        } else if format.exp_bits == 8 {
            Kind::Wide {
                shift: 23 - format.man_bits,
            }
        } else {
            Kind::Narrow(Narrow {
                shift: 23 - format.man_bits,
                min_normal_bits: ((format.emin() + 127) as u32) << 23,
                overflow_bits: ((format.emax() + 128) as u32) << 23,
            })
        };
        Self {
            kind,
            name,
            min_normal,
        }
    }

    pub fn by_name(name: &str) -> Result<Self, FormatError> {
        Format::by_name(name).map(|f| Self::new(&f))
    }

    pub fn is_identity(&self) -> bool {
        matches!(self.kind, Kind::Identity)
    }

    pub fn format_name(&self) -> String {
        self.name.clone()
    }

    /// `x` rounded (nearest-even) to the format and back to f32: bit
    /// arithmetic, the same result as the emulator's `encode` + `decode`.
    #[inline]
    pub fn round(&self, x: f32) -> f32 {
        match &self.kind {
            Kind::Identity => x,
            Kind::Wide { shift } => round_wide(x, *shift),
            Kind::Narrow(n) => round_narrow(x, n),
            Kind::General(f) => f.decode(f.encode_f32(x, Rounding::NearestEven)) as f32,
        }
    }

    pub fn round_slice(&self, xs: &mut [f32]) {
        match &self.kind {
            Kind::Identity => {}
            Kind::Wide { shift } => {
                dispatch(Wide(*shift), Pass::InPlace(xs));
            }
            Kind::Narrow(n) => {
                dispatch(*n, Pass::InPlace(xs));
            }
            Kind::General(_) => {
                for x in xs {
                    *x = self.round(*x);
                }
            }
        }
    }

    /// Writes `src` rounded into `dst` (same length), in one pass.
    pub fn round_into(&self, src: &[f32], dst: &mut [f32]) {
        match &self.kind {
            Kind::Identity => dst.copy_from_slice(src),
            Kind::Wide { shift } => {
                dispatch(Wide(*shift), Pass::Into(src, dst));
            }
            Kind::Narrow(n) => {
                dispatch(*n, Pass::Into(src, dst));
            }
            Kind::General(_) => {
                for (d, s) in dst.iter_mut().zip(src) {
                    *d = self.round(*s);
                }
            }
        }
    }

    /// [`Self::round_slice`], counting what was lost.
    pub fn round_slice_counting(&self, xs: &mut [f32]) -> RoundStats {
        let values = xs.len() as u64;
        let pass = Pass::Counting(xs, self.min_normal);
        let stats = match &self.kind {
            Kind::Identity => RoundStats::default(),
            Kind::Wide { shift } => dispatch(Wide(*shift), pass),
            Kind::Narrow(n) => dispatch(*n, pass),
            Kind::General(_) => run(General(self), pass),
        };
        RoundStats { values, ..stats }
    }
}

/// One element's rounding, for the buffer passes.
trait RoundOne: Copy {
    fn round_one(self, x: f32) -> f32;
}

#[derive(Clone, Copy)]
struct Wide(u32);

impl RoundOne for Wide {
    #[inline(always)]
    fn round_one(self, x: f32) -> f32 {
        round_wide(x, self.0)
    }
}

impl RoundOne for Narrow {
    #[inline(always)]
    fn round_one(self, x: f32) -> f32 {
        round_narrow(x, &self)
    }
}

#[derive(Clone, Copy)]
struct General<'a>(&'a Rounder);

impl RoundOne for General<'_> {
    fn round_one(self, x: f32) -> f32 {
        self.0.round(x)
    }
}

/// A pass over a buffer.
enum Pass<'a> {
    InPlace(&'a mut [f32]),
    Into(&'a [f32], &'a mut [f32]),
    /// In place, counting what was lost (the format's smallest normal given).
    Counting(&'a mut [f32], f32),
}

/// Runs a pass compiled for 256-bit vectors where the CPU has them (AVX2 on
/// x86-64: twice the lanes of the SSE2 baseline), as is elsewhere (other
/// CPUs, WebAssembly). The rounding is the same either way.
#[inline]
fn dispatch<R: RoundOne>(r: R, pass: Pass<'_>) -> RoundStats {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2")]
        fn avx2<R: RoundOne>(r: R, pass: Pass<'_>) -> RoundStats {
            run(r, pass)
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: a `target_feature` function may run only on a CPU that
            // has the feature, and AVX2 was detected just above.
            #[allow(unsafe_code)]
            return unsafe { avx2(r, pass) };
        }
    }
    run(r, pass)
}

/// The pass itself: branch-free per element, so the loops vectorise.
#[inline(always)]
fn run<R: RoundOne>(r: R, pass: Pass<'_>) -> RoundStats {
    match pass {
        Pass::InPlace(xs) => {
            for x in xs {
                *x = r.round_one(*x);
            }
            RoundStats::default()
        }
        Pass::Into(src, dst) => {
            for (d, s) in dst.iter_mut().zip(src) {
                *d = r.round_one(*s);
            }
            RoundStats::default()
        }
        Pass::Counting(xs, min_normal) => {
            let (mut under, mut over, mut sub) = (0u64, 0u64, 0u64);
            for chunk in xs.chunks_mut(4096) {
                // u32 counters inside a chunk keep the vector lanes narrow.
                let (mut u, mut o, mut s) = (0u32, 0u32, 0u32);
                for x in chunk {
                    let before = *x;
                    let after = r.round_one(before);
                    u += u32::from((before != 0.0) & (after == 0.0));
                    o += u32::from(before.is_finite() & !after.is_finite());
                    s += u32::from((after != 0.0) & (after.abs() < min_normal));
                    *x = after;
                }
                under += u64::from(u);
                over += u64::from(o);
                sub += u64::from(s);
            }
            RoundStats {
                values: 0,
                underflowed: under,
                overflowed: over,
                subnormal: sub,
            }
        }
    }
}

/// Nearest-even to `23 − shift` mantissa bits with fp32's exponent range:
/// add just under half a unit (plus the kept lowest bit), clear the rest.
/// A carry out of the mantissa bumps the exponent, up to infinity. NaN is
/// quieted and keeps the top of its payload. Selects, not branches, so loops
/// over slices vectorise.
#[inline(always)]
fn round_wide(x: f32, shift: u32) -> f32 {
    let bits = x.to_bits();
    let low = (1u32 << shift) - 1;
    let nan = bits & 0x7fff_ffff > 0x7f80_0000;
    let rounded = bits.wrapping_add((low >> 1) + ((bits >> shift) & 1));
    let quieted = bits | 0x0040_0000;
    f32::from_bits(if nan { quieted } else { rounded } & !low)
}

/// Nearest-even into a narrower IEEE-style format (fp16, E5M2…) with one
/// float addition: adding `magic` = 2^(e + shift), where e is the exponent of
/// |x| clamped to the format's normal range, leaves a sum whose spacing is
/// exactly the format's spacing at |x| (2^(e − mantissa bits), the fixed
/// subnormal quantum below the normal range), so the f32 adder rounds |x| to
/// it, ties to even; subtracting `magic` again is exact. Past the largest
/// exponent the result becomes infinity. Selects, not branches, so loops over
/// slices vectorise.
#[inline(always)]
fn round_narrow(x: f32, n: &Narrow) -> f32 {
    let bits = x.to_bits();
    let sign = bits & 0x8000_0000;
    let magnitude = bits & 0x7fff_ffff;
    let exponent = (magnitude & 0x7f80_0000).clamp(n.min_normal_bits, n.overflow_bits);
    let magic = f32::from_bits(exponent + (n.shift << 23));
    let rounded = ((f32::from_bits(magnitude) + magic) - magic).to_bits();
    let finite = if rounded >= n.overflow_bits {
        0x7f80_0000
    } else {
        rounded
    };
    let special = if magnitude > 0x7f80_0000 {
        magnitude | 0x0040_0000
    } else {
        magnitude
    };
    f32::from_bits(
        sign | if magnitude >= 0x7f80_0000 {
            special
        } else {
            finite
        },
    )
}

/// Magnitudes on a log₂ scale, for the gradient histograms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// The exponent of the first bin: bin i counts |x| in [2^(first+i), 2^(first+i+1)).
    pub first: i32,
    pub bins: Vec<u64>,
    pub zeros: u64,
    pub nonfinite: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            first: -60,
            bins: vec![0; 80],
            zeros: 0,
            nonfinite: 0,
        }
    }
}

impl Histogram {
    pub fn add_slice(&mut self, xs: &[f32]) {
        let last = self.bins.len() as i32 - 1;
        for x in xs {
            let bits = x.to_bits() & 0x7fff_ffff;
            if bits == 0 {
                self.zeros += 1;
            } else if bits >= 0x7f80_0000 {
                self.nonfinite += 1;
            } else {
                // floor(log2 |x|) read off the bits (subnormals from their leading zeros).
                let field = (bits >> 23) as i32;
                let e = if field == 0 {
                    -149 + (31 - bits.leading_zeros() as i32)
                } else {
                    field - 127
                };
                self.bins[(e - self.first).clamp(0, last) as usize] += 1;
            }
        }
    }

    pub fn total(&self) -> u64 {
        self.bins.iter().sum::<u64>() + self.zeros + self.nonfinite
    }

    /// How many finite non-zero values lie below `threshold` in magnitude.
    pub fn below(&self, threshold: f64) -> u64 {
        let limit = threshold.log2().floor() as i32;
        self.bins
            .iter()
            .enumerate()
            .filter(|(i, _)| self.first + (*i as i32) < limit)
            .map(|(_, n)| n)
            .sum()
    }
}

/// How the loss is scaled before backward.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum LossScale {
    None,
    Static(f32),
    /// Start at `initial`; ×2 after `growth_interval` clean steps; ×½ and skip
    /// the step when a gradient is inf or NaN.
    Dynamic {
        initial: f32,
        growth_interval: u32,
    },
}

impl LossScale {
    pub fn dynamic() -> Self {
        Self::Dynamic {
            initial: 65536.0,
            growth_interval: 200,
        }
    }

    pub fn by_name(name: &str) -> Result<Self, TrainError> {
        match name.trim() {
            "none" => Ok(Self::None),
            "dynamic" => Ok(Self::dynamic()),
            value => match crate::float::parse_number(value) {
                // The scale is held and applied in fp32: it must be a finite,
                // non-zero fp32 number, not only a positive one.
                Ok(v) if v > 0.0 && (v as f32).is_finite() && v as f32 > 0.0 => {
                    Ok(Self::Static(v as f32))
                }
                Ok(v) if v > 0.0 => Err(TrainError::LossScaleRange {
                    value: value.to_owned(),
                    becomes: if (v as f32).is_infinite() { "inf" } else { "0" }.to_owned(),
                }),
                _ => Err(TrainError::LossScale {
                    value: value.to_owned(),
                }),
            },
        }
    }
}

/// Where the weights live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MasterWeights {
    /// fp32 master copy; the forward pass sees a rounded copy.
    #[default]
    Fp32,
    /// The weights themselves are stored in the compute format.
    Same,
}

/// A precision policy: which format each kind of tensor is rounded through.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Policy {
    /// Every op's output and every gradient flowing backward.
    pub compute: String,
    /// The parameter gradients handed to the optimizer.
    pub grads: String,
    /// Momentum / Adam moments.
    pub optimizer_state: String,
    /// The buffer gradients are accumulated in over micro-batches.
    pub accumulation: String,
    pub master_weights: MasterWeights,
    pub loss_scale: LossScale,
}

impl Default for Policy {
    fn default() -> Self {
        Self::uniform("fp32", LossScale::None, MasterWeights::Fp32)
    }
}

impl Policy {
    /// Compute and gradients in `precision`; optimizer state and accumulation
    /// in fp32, as frameworks' automatic mixed precision does.
    pub fn uniform(precision: &str, loss_scale: LossScale, master_weights: MasterWeights) -> Self {
        Self {
            compute: precision.to_owned(),
            grads: precision.to_owned(),
            optimizer_state: "fp32".to_owned(),
            accumulation: "fp32".to_owned(),
            master_weights,
            loss_scale,
        }
    }

    pub fn is_fp32(&self) -> bool {
        [
            &self.compute,
            &self.grads,
            &self.optimizer_state,
            &self.accumulation,
        ]
        .iter()
        .all(|f| f.as_str() == "fp32")
            && self.loss_scale == LossScale::None
    }

    /// Checks every format name.
    pub fn validate(&self) -> Result<(), FormatError> {
        for name in [
            &self.compute,
            &self.grads,
            &self.optimizer_state,
            &self.accumulation,
        ] {
            Format::by_name(name)?;
        }
        Ok(())
    }

    /// The policy in English (its words are `policy` in `assets/names.ron`;
    /// [`crate::names::Named::name`] gives them in any language).
    pub fn describe(&self) -> String {
        crate::names::Named::name(self, crate::text::Lang::En)
    }
}

/// A scale change or a skipped step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ScaleEvent {
    pub step: u64,
    pub scale: f32,
    pub skipped: bool,
}

/// The loss scaler's state.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scaler {
    pub mode: LossScale,
    pub scale: f32,
    clean: u32,
    pub skipped: u64,
    pub events: Vec<ScaleEvent>,
}

impl Scaler {
    pub fn new(mode: LossScale) -> Self {
        let scale = match mode {
            LossScale::None => 1.0,
            LossScale::Static(s) => s,
            LossScale::Dynamic { initial, .. } => initial,
        };
        Self {
            mode,
            scale,
            clean: 0,
            skipped: 0,
            events: vec![ScaleEvent {
                step: 0,
                scale,
                skipped: false,
            }],
        }
    }

    /// After backward: whether to apply the step. Non-finite gradients skip it
    /// (and halve a dynamic scale); clean steps grow a dynamic scale.
    pub fn update(&mut self, step: u64, grads_finite: bool) -> bool {
        match self.mode {
            LossScale::Dynamic {
                growth_interval, ..
            } => {
                if grads_finite {
                    self.clean += 1;
                    if self.clean >= growth_interval {
                        self.clean = 0;
                        self.scale = (self.scale * 2.0).min(f32::MAX / 4.0);
                        self.events.push(ScaleEvent {
                            step,
                            scale: self.scale,
                            skipped: false,
                        });
                    }
                    true
                } else {
                    self.clean = 0;
                    self.skipped += 1;
                    self.scale = (self.scale / 2.0).max(f32::MIN_POSITIVE);
                    self.events.push(ScaleEvent {
                        step,
                        scale: self.scale,
                        skipped: true,
                    });
                    false
                }
            }
            LossScale::None | LossScale::Static(_) => {
                if !grads_finite {
                    self.skipped += 1;
                    self.events.push(ScaleEvent {
                        step,
                        scale: self.scale,
                        skipped: true,
                    });
                }
                grads_finite
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounders_agree_with_the_emulator_on_every_fp16_and_bf16_value_and_more() {
        for name in ["fp16", "bf16", "tf32", "fp8-e5m2", "fp8-e4m3", "e3m4"] {
            let format = Format::by_name(name).unwrap_or_else(|e| panic!("{e}"));
            let r = Rounder::new(&format);
            let mut x = 1.0e-12f32;
            while x < 1.0e6 {
                for v in [x, -x, x * 1.37, x * 0.999] {
                    let want = format.decode(format.encode_f32(v, Rounding::NearestEven));
                    let got = r.round(v);
                    assert!(
                        got.to_bits() == (want as f32).to_bits() || (got.is_nan() && want.is_nan()),
                        "{name}: {v} → {got} vs {want}"
                    );
                }
                x *= 1.7;
            }
        }
        assert!(Rounder::by_name("fp32").is_ok_and(|r| r.is_identity()));
    }

    #[test]
    fn counting_sees_underflow_and_overflow() {
        let r = Rounder::by_name("fp16").unwrap_or_else(|e| panic!("{e}"));
        let mut xs = [1e-9f32, 1.0, 70000.0, 1e-6, 0.0];
        let stats = r.round_slice_counting(&mut xs);
        assert_eq!(
            (
                stats.values,
                stats.underflowed,
                stats.overflowed,
                stats.subnormal
            ),
            (5, 1, 1, 1)
        );
        assert_eq!(xs[2], f32::INFINITY);
    }

    #[test]
    fn dynamic_scaler_backs_off_skips_and_grows() {
        let mut s = Scaler::new(LossScale::Dynamic {
            initial: 1024.0,
            growth_interval: 3,
        });
        assert!(!s.update(1, false));
        assert_eq!((s.scale, s.skipped), (512.0, 1));
        for step in 2..=4 {
            assert!(s.update(step, true));
        }
        assert_eq!(s.scale, 1024.0);
        assert_eq!(s.events.len(), 3);
        assert!(LossScale::by_name("2^10").is_ok_and(|l| l == LossScale::Static(1024.0)));
        assert!(LossScale::by_name("-3").is_err());
    }

    #[test]
    fn histogram_bins_by_power_of_two() {
        let mut h = Histogram::default();
        h.add_slice(&[1.0, 1.5, 0.25, 0.0, f32::INFINITY, 3e-8]);
        assert_eq!(h.total(), 6);
        assert_eq!(h.bins[(0 - h.first) as usize], 2);
        assert_eq!(h.below(2f64.powi(-24)), 1);
    }
}
