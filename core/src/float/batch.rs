//! The batch converter behind `dlsys-lab float --batch`: fp32 bit patterns in,
//! one per line, rounded target patterns out — a reference anyone can test
//! their own converter against.

use std::io::{BufRead, Write};

use super::{Exact, Format, FormatError, Rounding, StochasticRounder};

/// What a batch run saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchReport {
    pub lines: usize,
    /// Malformed lines (each was answered `invalid` and told to the caller).
    pub invalid: usize,
}

/// Why a batch stopped: its input could not be read, or its output written.
#[derive(Debug)]
pub enum BatchIo {
    Read(std::io::Error),
    Write(std::io::Error),
}

impl std::fmt::Display for BatchIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Read(err) | Self::Write(err) => err.fmt(f),
        }
    }
}

/// Parses one line: an fp32 pattern in hex, `0x` optional.
pub fn parse_f32_pattern(line: &str) -> Result<u32, FormatError> {
    let text = line.trim();
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if digits.is_empty() {
        return Err(FormatError::EmptyPattern);
    }
    if digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        let shown: String = text.chars().take(40).collect();
        return Err(FormatError::NotF32Pattern { text: shown });
    }
    u32::from_str_radix(digits, 16).map_err(|_| FormatError::NotF32Pattern {
        text: text.chars().take(40).collect(),
    })
}

/// Converts every line of `input`; a malformed line is answered with
/// `invalid` (so output lines stay aligned with input lines) and handed to
/// `on_error` with its 1-based number at once, so errors stream too.
pub fn convert_batch(
    input: impl BufRead,
    mut output: impl Write,
    format: &Format,
    rounding: Rounding,
    seed: u64,
    mut on_error: impl FnMut(usize, &FormatError),
) -> Result<BatchReport, BatchIo> {
    let width = format.bits().div_ceil(4) as usize;
    let mut stochastic = StochasticRounder::new(seed);
    let mut report = BatchReport::default();
    for (index, line) in input.lines().enumerate() {
        report.lines += 1;
        let parsed = match line {
            Ok(line) => parse_f32_pattern(&line),
            Err(err) if err.kind() == std::io::ErrorKind::InvalidData => Err(FormatError::NotUtf8),
            Err(err) => return Err(BatchIo::Read(err)),
        };
        match parsed {
            Ok(bits) => {
                let exact = Exact::from_f32_bits(bits);
                let out = if rounding == Rounding::Stochastic {
                    stochastic.encode(format, &exact)
                } else {
                    format.encode(&exact, rounding)
                };
                writeln!(output, "0x{out:0width$x}").map_err(BatchIo::Write)?;
            }
            Err(error) => {
                report.invalid += 1;
                on_error(index + 1, &error);
                writeln!(output, "invalid").map_err(BatchIo::Write)?;
            }
        }
    }
    output.flush().map_err(BatchIo::Write)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8], format: &Format) -> (String, BatchReport, Vec<usize>) {
        let mut out = Vec::new();
        let mut bad = Vec::new();
        let report = convert_batch(input, &mut out, format, Rounding::NearestEven, 0, |n, _| {
            bad.push(n);
        })
        .unwrap_or_default();
        (String::from_utf8_lossy(&out).into_owned(), report, bad)
    }

    #[test]
    fn converts_and_reports_bad_lines_by_number() {
        let (out, report, bad) = run(
            b"0x3f800000\n3f800000\nzz\n\n0x477fe000\n0x123456789\n\xff\n",
            &Format::fp16(),
        );
        assert_eq!(
            out,
            "0x3c00\n0x3c00\ninvalid\ninvalid\n0x7bff\ninvalid\ninvalid\n"
        );
        assert_eq!(report.lines, 7);
        assert_eq!(report.invalid, 4);
        assert_eq!(bad, vec![3, 4, 6, 7]);
    }

    #[test]
    fn random_bytes_never_panic() {
        use rand::{RngExt as _, SeedableRng as _};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..2000 {
            let len = rng.random_range(0..64);
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    let pool = b"0123456789abcdefABCDEFxX \n\t-+.\xff\xc3";
                    pool[rng.random_range(0..pool.len())]
                })
                .collect();
            let (out, report, _) = run(&bytes, &Format::bf16());
            assert_eq!(out.lines().count(), report.lines);
        }
    }
}
