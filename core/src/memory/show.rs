//! Sizes as people read them: bytes in binary units, counts and FLOPs in
//! decimal ones, durations in s/ms/µs (the units are the same in every
//! language).

/// `12.6 GiB`, `512 KiB`, `96 B`: three significant digits.
pub fn show_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{} {}", three_digits(value), UNITS[unit])
}

/// `124.4M`, `6.738B`, `950`: four significant digits.
pub fn show_count(count: u64) -> String {
    const UNITS: [(f64, &str); 4] = [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")];
    let x = count as f64;
    for (scale, unit) in UNITS {
        if x >= scale {
            let v = x / scale;
            let decimals = 4usize.saturating_sub(digits_before_point(v));
            return format!("{v:.decimals$}{unit}");
        }
    }
    count.to_string()
}

/// `5.87 TFLOP`: three significant digits.
pub fn show_flops(flops: u64) -> String {
    const UNITS: [(f64, &str); 6] = [
        (1e18, "EFLOP"),
        (1e15, "PFLOP"),
        (1e12, "TFLOP"),
        (1e9, "GFLOP"),
        (1e6, "MFLOP"),
        (1e3, "kFLOP"),
    ];
    let x = flops as f64;
    for (scale, unit) in UNITS {
        if x >= scale {
            return format!("{} {unit}", three_digits(x / scale));
        }
    }
    format!("{flops} FLOP")
}

/// `3.20 µs`, `12.5 ms`, `1.07 s`: three significant digits; `0 s`;
/// `1.00e-12 s` below a nanosecond and `3.15e7 s` from 10⁵ s on.
pub fn show_seconds(seconds: f64) -> String {
    if !seconds.is_finite() {
        return format!("{seconds}");
    }
    if seconds == 0.0 {
        return "0 s".to_owned();
    }
    let sign = if seconds < 0.0 { "-" } else { "" };
    // Past the units' range, scientific: not 300 digits, nor "0.00 ns".
    if !(1e-9..1e5).contains(&seconds.abs()) {
        return format!("{sign}{:.2e} s", seconds.abs());
    }
    const UNITS: [(f64, &str); 3] = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs")];
    for (scale, unit) in UNITS {
        if seconds.abs() >= scale {
            return format!("{sign}{} {unit}", three_digits(seconds.abs() / scale));
        }
    }
    format!("{sign}{} ns", three_digits(seconds.abs() * 1e9))
}

fn digits_before_point(v: f64) -> usize {
    if v >= 100.0 {
        3
    } else if v >= 10.0 {
        2
    } else {
        1
    }
}

fn three_digits(v: f64) -> String {
    let decimals = 3usize.saturating_sub(digits_before_point(v));
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(show_bytes(96), "96 B");
        assert_eq!(show_bytes(512 * 1024), "512 KiB");
        assert_eq!(show_bytes(1 << 30), "1.00 GiB");
        assert_eq!(show_bytes(13_476_831_232), "12.6 GiB");
        assert_eq!(show_count(124_439_808), "124.4M");
        assert_eq!(show_count(6_738_415_616), "6.738B");
        assert_eq!(show_count(174_604_259_328), "174.6B");
        assert_eq!(show_count(950), "950");
        assert_eq!(show_flops(5_870_000_000_000), "5.87 TFLOP");
        assert_eq!(show_flops(12), "12 FLOP");
        assert_eq!(show_bytes(u64::MAX), "16.0 EiB");
        assert_eq!(show_seconds(3.2e-6), "3.20 µs");
        assert_eq!(show_seconds(0.0125), "12.5 ms");
        assert_eq!(show_seconds(1.07), "1.07 s");
        assert_eq!(show_seconds(0.0), "0 s");
        assert_eq!(show_seconds(5e-8), "50.0 ns");
        assert_eq!(show_seconds(1e-9), "1.00 ns");
        assert_eq!(show_seconds(1e-12), "1.00e-12 s");
        assert_eq!(show_seconds(99_999.0), "99999 s");
        assert_eq!(show_seconds(1e300), "1.00e300 s");
        assert_eq!(show_seconds(-1e-300), "-1.00e-300 s");
    }
}
