//! The lesson's live demonstrations, computed by the emulator (the lesson and
//! the CLI show these numbers; none is typed into prose).

use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;

use super::{Exact, Format, Rounding, pow2};

/// The largest finite value and the first value that overflows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OverflowDemo {
    pub format: String,
    pub max_finite: f64,
    /// Halfway between max finite and the next power of the exponent step:
    /// nearest-even rounds it up, past the top.
    pub first_overflowing: f64,
    pub max_finite_rounds_to: f64,
    pub first_overflowing_rounds_to: f64,
    /// Just below the overflow threshold: still rounds down to max finite.
    pub just_below: f64,
    pub just_below_rounds_to: f64,
}

pub fn overflow_demo(format: &Format) -> OverflowDemo {
    let range = format.range();
    let max_bits = format.max_finite_bits(false);
    let half_ulp = format.ulp(max_bits).unwrap_or(0.0) / 2.0;
    let threshold = range.max_finite + half_ulp;
    let just_below = threshold - half_ulp / 1024.0;
    let round = |x: f64| format.round_f64(x, Rounding::NearestEven);
    OverflowDemo {
        format: format.name.clone(),
        max_finite: range.max_finite,
        first_overflowing: threshold,
        max_finite_rounds_to: round(range.max_finite),
        first_overflowing_rounds_to: round(threshold),
        just_below,
        just_below_rounds_to: round(just_below),
    }
}

/// A small gradient stored in a format, with and without loss scaling.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LossScalingDemo {
    pub format: String,
    pub gradient: f64,
    pub scale: f64,
    /// The gradient stored as is.
    pub stored_unscaled: f64,
    /// `gradient × scale` stored, then divided by `scale` in f64.
    pub stored_scaled: f64,
    pub recovered: f64,
    pub recovered_rel_error: f64,
}

pub fn loss_scaling_demo(format: &Format, gradient: f64, scale: f64) -> LossScalingDemo {
    let stored_unscaled = format.round_f64(gradient, Rounding::NearestEven);
    let stored_scaled = format.round_f64(gradient * scale, Rounding::NearestEven);
    let recovered = stored_scaled / scale;
    LossScalingDemo {
        format: format.name.clone(),
        gradient,
        scale,
        stored_unscaled,
        stored_scaled,
        recovered,
        recovered_rel_error: ((recovered - gradient) / gradient).abs(),
    }
}

/// Summing many values with the running sum kept in a format.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AccumulationDemo {
    pub format: String,
    pub count: usize,
    pub seed: u64,
    /// The exact sum of the same inputs (accumulated in f64).
    pub exact_sum: f64,
    pub final_sum: f64,
    /// The first step after which the sum never changed again, if it stalled.
    pub stalled_at_step: Option<usize>,
    /// The running sum after every `stride`-th step (for plotting).
    pub trace: Vec<(usize, f64)>,
}

/// `count` seeded uniform(0, 1) values (as f32) summed with an accumulator
/// in `format` (each addition computed exactly, then rounded once).
pub fn accumulation_demo(
    format: &Format,
    count: usize,
    seed: u64,
    trace_points: usize,
) -> AccumulationDemo {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let stride = (count / trace_points.max(1)).max(1);
    let mut sum = 0.0f64;
    let mut exact = 0.0f64;
    let mut last_change = 0;
    let mut trace = vec![(0, 0.0)];
    for step in 1..=count {
        let x = f64::from(rng.random::<f32>());
        exact += x;
        let next = format.round_f64(sum + x, Rounding::NearestEven);
        if next != sum {
            last_change = step;
        }
        sum = next;
        if step % stride == 0 || step == count {
            trace.push((step, sum));
        }
    }
    AccumulationDemo {
        format: format.name.clone(),
        count,
        seed,
        exact_sum: exact,
        final_sum: sum,
        stalled_at_step: (last_change < count).then_some(last_change),
        trace,
    }
}

/// One f32 value converted to tf32 by the three conventions stacks use.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tf32Conventions {
    pub input: f32,
    pub input_bits: u32,
    /// (convention, tf32 pattern as it sits in an f32 register, value)
    pub results: Vec<Tf32Result>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tf32Result {
    /// A short debug label (not shown to users: the lesson's catalog has
    /// `tf32.convention.<Rounding>`).
    pub convention: &'static str,
    pub rounding: Rounding,
    pub tf32_bits: u32,
    /// The same value as an f32 bit pattern (low 13 bits zero).
    pub f32_bits: u32,
    pub value: f64,
    pub abs_error: f64,
}

pub fn tf32_conventions(input: f32) -> Tf32Conventions {
    let tf32 = Format::tf32();
    let exact = Exact::from_f32_bits(input.to_bits());
    let conventions = [
        ("truncate (rtz)", Rounding::TowardZero),
        (
            "nearest, ties away (cvt.rna.tf32.f32)",
            Rounding::NearestAway,
        ),
        ("nearest, ties to even (rne)", Rounding::NearestEven),
    ];
    let results = conventions
        .into_iter()
        .map(|(convention, rounding)| {
            let bits = tf32.encode(&exact, rounding);
            let value = tf32.decode(bits);
            Tf32Result {
                convention,
                rounding,
                tf32_bits: bits,
                f32_bits: bits << 13,
                value,
                abs_error: value - f64::from(input),
            }
        })
        .collect();
    Tf32Conventions {
        input,
        input_bits: input.to_bits(),
        results,
    }
}

/// Where small values go: the smallest normal, the smallest subnormal, and
/// the threshold at which round-to-nearest gives zero.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnderflowDemo {
    pub format: String,
    pub min_normal: f64,
    pub min_subnormal: f64,
    /// Half the smallest subnormal: a tie between 0 and it, which goes to 0 (even).
    pub zero_threshold: f64,
    pub threshold_rounds_to: f64,
    pub just_above_threshold: f64,
    pub just_above_rounds_to: f64,
    /// (value, what it rounds to, relative error) for a few values between
    /// the smallest normal and the threshold: precision drains away.
    pub ladder: Vec<(f64, f64, f64)>,
}

pub fn underflow_demo(format: &Format) -> UnderflowDemo {
    let range = format.range();
    let round = |x: f64| format.round_f64(x, Rounding::NearestEven);
    let threshold = range.min_subnormal / 2.0;
    let just_above = threshold * (1.0 + pow2(-20));
    let ladder = [1.0, 0.3, 0.1, 0.03, 0.01, 1e-3, 3e-4]
        .into_iter()
        .map(|f| {
            let x = range.min_normal * f;
            let r = round(x);
            (x, r, ((r - x) / x).abs())
        })
        .collect();
    UnderflowDemo {
        format: format.name.clone(),
        min_normal: range.min_normal,
        min_subnormal: range.min_subnormal,
        zero_threshold: threshold,
        threshold_rounds_to: round(threshold),
        just_above_threshold: just_above,
        just_above_rounds_to: round(just_above),
        ladder,
    }
}

/// Machine epsilon versus "the smallest x with 1 + x ≠ 1".
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EpsilonDemo {
    pub format: String,
    pub epsilon: f64,
    /// 1 + eps/2 is a tie; nearest-even rounds it back to 1.
    pub one_plus_half_eps: f64,
    /// A hair above eps/2 is already enough to leave 1.
    pub smallest_visible_addend: f64,
    pub one_plus_smallest_visible: f64,
}

pub fn epsilon_demo(format: &Format) -> EpsilonDemo {
    let eps = format.range().epsilon;
    let round = |x: f64| format.round_f64(x, Rounding::NearestEven);
    let hair = eps / 2.0 * (1.0 + pow2(-30));
    EpsilonDemo {
        format: format.name.clone(),
        epsilon: eps,
        one_plus_half_eps: round(1.0 + eps / 2.0),
        smallest_visible_addend: hair,
        one_plus_smallest_visible: round(1.0 + hair),
    }
}

/// The spacing between neighbours across a format's range, for the log plot:
/// (value, gap to the next value) at every binade, plus the subnormal floor.
pub fn spacing_curve(format: &Format) -> Vec<(f64, f64)> {
    let range = format.range();
    // Subnormals all share the smallest spacing.
    let mut points = vec![(range.min_subnormal, range.min_subnormal)];
    for exp in format.emin()..=format.emax() {
        let x = pow2(exp);
        let bits = format.encode_f64(x, Rounding::NearestEven);
        if let Some(ulp) = format.ulp(bits) {
            points.push((x, ulp));
        }
    }
    points.push((
        range.max_finite,
        format
            .ulp(format.max_finite_bits(false))
            .unwrap_or(f64::NAN),
    ));
    points
}
