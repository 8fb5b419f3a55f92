//! All 2^32 fp32 patterns → fp16 and → bf16 with nearest-even, bit for bit
//! against the `half` crate — the emulator's two encoders and the
//! mixed-precision rounder. NaN rule (ours and `half`'s): keep the sign, keep
//! the top payload bits, set the quiet bit. Split across the machine's cores.

use dlsys_core::float::{Exact, Format, Rounding};
use dlsys_core::mixed::Rounder;

fn sweep(check: impl Fn(u32) -> Option<String> + Sync) {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 16) as u64;
    let chunk = (1u64 << 32) / threads;
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let check = &check;
                scope.spawn(move || {
                    let start = t * chunk;
                    let end = if t + 1 == threads {
                        1u64 << 32
                    } else {
                        start + chunk
                    };
                    let mut failures = Vec::new();
                    for bits in start..end {
                        if let Some(failure) = check(bits as u32) {
                            failures.push(failure);
                            if failures.len() >= 10 {
                                break;
                            }
                        }
                    }
                    failures
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
}

/// Both our paths — the general exact encoder and the bit-trick fast path —
/// against `half`, for one input.
fn compare(format: &Format, bits: u32, theirs: u32) -> Option<String> {
    let general = format.encode(&Exact::from_f32_bits(bits), Rounding::NearestEven);
    let fast = format.encode_f32_rne_ieee(bits);
    (general != theirs || fast != theirs).then(|| {
        format!(
            "{} of {bits:#010x}: general {general:#06x}, fast {fast:#06x}, half {theirs:#06x}",
            format.name
        )
    })
}

/// The mixed-precision lesson's buffer rounding (f32 → format → f32) against
/// `half`'s round trip: the same value, or NaN for NaN.
fn compare_rounder(rounder: &Rounder, bits: u32, theirs: f32) -> Option<String> {
    let ours = rounder.round(f32::from_bits(bits));
    let same = ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan());
    (!same).then(|| {
        format!(
            "{} rounder of {bits:#010x}: {ours:e} vs half {theirs:e}",
            rounder.format_name()
        )
    })
}

#[test]
fn all_fp32_patterns_to_fp16_match_half() {
    let fp16 = Format::fp16();
    let rounder = Rounder::new(&fp16);
    sweep(|bits| {
        let theirs = half::f16::from_f32(f32::from_bits(bits));
        compare(&fp16, bits, u32::from(theirs.to_bits()))
            .or_else(|| compare_rounder(&rounder, bits, theirs.to_f32()))
    });
}

#[test]
fn all_fp32_patterns_to_bf16_match_half() {
    let bf16 = Format::bf16();
    let rounder = Rounder::new(&bf16);
    sweep(|bits| {
        let theirs = half::bf16::from_f32(f32::from_bits(bits));
        compare(&bf16, bits, u32::from(theirs.to_bits()))
            .or_else(|| compare_rounder(&rounder, bits, theirs.to_f32()))
    });
}

#[test]
fn fast_path_matches_the_general_path_for_other_ieee_formats() {
    // Every exponent, with mantissa bits around each rounding position and tie.
    for name in ["tf32", "fp8-e5m2", "e6m9", "e2m1", "e8m23", "e3m4", "e5m10"] {
        let format = Format::by_name(name).unwrap_or_else(|e| panic!("{e}"));
        for high in 0..=0x1ffu32 {
            for shift in 0..23 {
                for pattern in [0u32, 1, 2, 3] {
                    for noise in [0u32, 0x2a_aaaa, 0x7f_ffff] {
                        let man =
                            ((pattern << shift) | (noise >> (23 - shift).min(23))) & 0x7f_ffff;
                        let bits = (high << 23) | man;
                        let general =
                            format.encode(&Exact::from_f32_bits(bits), Rounding::NearestEven);
                        let fast = format.encode_f32_rne_ieee(bits);
                        assert_eq!(fast, general, "{name} of {bits:#010x}");
                    }
                }
            }
        }
    }
}

#[test]
fn all_fp16_and_bf16_patterns_decode_exactly() {
    let fp16 = Format::fp16();
    let bf16 = Format::bf16();
    for bits in 0..=0xffffu16 {
        let h = half::f16::from_bits(bits).to_f64();
        let ours = fp16.decode(u32::from(bits));
        assert!(
            ours.to_bits() == h.to_bits() || (ours.is_nan() && h.is_nan()),
            "fp16 {bits:#06x}"
        );
        let b = half::bf16::from_bits(bits).to_f64();
        let ours = bf16.decode(u32::from(bits));
        assert!(
            ours.to_bits() == b.to_bits() || (ours.is_nan() && b.is_nan()),
            "bf16 {bits:#06x}"
        );
    }
}
