//! All 2^32 fp32 patterns → fp16 and → bf16 with nearest-even, bit for bit
//! against the `half` crate. NaN rule (ours and `half`'s): keep the sign, keep
//! the top payload bits, set the quiet bit. Split across the machine's cores.

use dlsys_core::float::{Exact, Format, Rounding};

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

#[test]
fn all_fp32_patterns_to_fp16_match_half() {
    let fp16 = Format::fp16();
    sweep(|bits| {
        let ours = fp16.encode(&Exact::from_f32_bits(bits), Rounding::NearestEven);
        let theirs = u32::from(half::f16::from_f32(f32::from_bits(bits)).to_bits());
        (ours != theirs)
            .then(|| format!("fp16 of {bits:#010x}: ours {ours:#06x}, half {theirs:#06x}"))
    });
}

#[test]
fn all_fp32_patterns_to_bf16_match_half() {
    let bf16 = Format::bf16();
    sweep(|bits| {
        let ours = bf16.encode(&Exact::from_f32_bits(bits), Rounding::NearestEven);
        let theirs = u32::from(half::bf16::from_f32(f32::from_bits(bits)).to_bits());
        (ours != theirs)
            .then(|| format!("bf16 of {bits:#010x}: ours {ours:#06x}, half {theirs:#06x}"))
    });
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
