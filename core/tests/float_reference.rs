//! The emulator against an independent reference: ml_dtypes and NumPy
//! (`scripts/gen-float-reference.py` wrote `data/ml_dtypes_reference.txt`).
//! NaN results are compared by class: payload and sign rules differ between
//! libraries, and ours is documented on `Format::encode_with_random`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dlsys_core::float::{Class, Exact, Format, Rounding};

const REFERENCE: &str = include_str!("data/ml_dtypes_reference.txt");

#[test]
fn every_fp8_pattern_decodes_as_ml_dtypes_says() {
    let mut checked = 0;
    for line in REFERENCE.lines().filter(|l| l.starts_with("decode ")) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let format = Format::by_name(parts[1]).unwrap();
        let bits = u32::from_str_radix(parts[2].trim_start_matches("0x"), 16).unwrap();
        let value = format.decode(bits);
        if parts[3] == "nan" {
            assert!(value.is_nan(), "{line}");
        } else {
            let expected = u64::from_str_radix(parts[3].trim_start_matches("0x"), 16).unwrap();
            assert_eq!(value.to_bits(), expected, "{line}: got {value}");
        }
        checked += 1;
    }
    assert_eq!(checked, 512);
}

#[test]
fn f32_to_fp16_bf16_fp8_rounds_as_ml_dtypes_does() {
    let formats = [
        Format::fp16(),
        Format::bf16(),
        Format::fp8_e4m3(),
        Format::fp8_e5m2(),
    ];
    let mut checked = 0;
    for line in REFERENCE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("decode "))
    {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let input = u32::from_str_radix(parts[0], 16).unwrap();
        let exact = Exact::from_f32_bits(input);
        for (format, expected) in formats.iter().zip(&parts[1..]) {
            let got = format.encode(&exact, Rounding::NearestEven);
            if *expected == "nan" {
                assert_eq!(
                    format.classify(got),
                    Class::Nan,
                    "{} of {input:#010x}",
                    format.name
                );
            } else {
                let expected = u32::from_str_radix(expected, 16).unwrap();
                assert_eq!(
                    got,
                    expected,
                    "{} of {input:#010x} ({})",
                    format.name,
                    f32::from_bits(input)
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 50_000, "only {checked} reference conversions");
}
