//! Benchmark (not a test): converting f32 slices to fp16 and bf16 with
//! round-to-nearest-even, dlsys-core's emulator against the `half` crate's
//! slice conversion, in the same run; then the mixed-precision trainer's
//! round trip (f32 → format → f32, `mixed::Rounder`) against `half`'s two
//! slice conversions. Prints medians and the ratios.
//!
//! `cargo bench -p dlsys-core --bench float_convert`

use std::time::Instant;

use dlsys_core::float::{Format, Rounding};
use dlsys_core::mixed::Rounder;
use half::slice::HalfFloatSliceExt as _;
use rand::{RngExt as _, SeedableRng as _};

const N: usize = 1 << 22;
const TRIALS: usize = 9;

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn time(mut f: impl FnMut()) -> f64 {
    f(); // warm-up
    median(
        (0..TRIALS)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn main() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    // Values a training run sees: mostly normal, a spread of magnitudes.
    let input: Vec<f32> = (0..N)
        .map(|_| rng.random_range(-1.0f32..1.0) * 2f32.powi(rng.random_range(-20..12)))
        .collect();
    let mut ours = vec![0u16; N];
    let mut theirs = vec![half::f16::ZERO; N];
    let mut theirs_bf = vec![half::bf16::ZERO; N];
    println!("{N} f32 values, median of {TRIALS} trials");
    for (name, format) in [("fp16", Format::fp16()), ("bf16", Format::bf16())] {
        let ours_s = time(|| {
            format.encode_f32_slice(&input, &mut ours, Rounding::NearestEven);
        });
        let half_s = if name == "fp16" {
            time(|| theirs.convert_from_f32_slice(&input))
        } else {
            time(|| theirs_bf.convert_from_f32_slice(&input))
        };
        // Same results, or the comparison means nothing.
        let agree = if name == "fp16" {
            ours.iter().zip(&theirs).all(|(a, b)| *a == b.to_bits())
        } else {
            ours.iter().zip(&theirs_bf).all(|(a, b)| *a == b.to_bits())
        };
        assert!(agree, "{name}: results differ from half");
        println!(
            "{name}: dlsys-core {:.2} ns/value, half {:.2} ns/value, ratio dlsys/half = {:.2}x",
            ours_s / N as f64 * 1e9,
            half_s / N as f64 * 1e9,
            ours_s / half_s
        );
    }
    println!("round trip f32 → format → f32 (what a precision policy does to a buffer):");
    let mut ours_f32 = vec![0f32; N];
    let mut theirs_f32 = vec![0f32; N];
    for name in ["fp16", "bf16"] {
        let rounder = Rounder::by_name(name).unwrap_or_else(|e| panic!("{e}"));
        let ours_s = time(|| rounder.round_into(&input, &mut ours_f32));
        let half_s = if name == "fp16" {
            time(|| {
                theirs.convert_from_f32_slice(&input);
                theirs.convert_to_f32_slice(&mut theirs_f32);
            })
        } else {
            time(|| {
                theirs_bf.convert_from_f32_slice(&input);
                theirs_bf.convert_to_f32_slice(&mut theirs_f32);
            })
        };
        let agree = ours_f32
            .iter()
            .zip(&theirs_f32)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(agree, "{name}: round trips differ from half");
        println!(
            "{name}: Rounder {:.2} ns/value, half {:.2} ns/value, ratio dlsys/half = {:.2}x",
            ours_s / N as f64 * 1e9,
            half_s / N as f64 * 1e9,
            ours_s / half_s
        );
    }
}
