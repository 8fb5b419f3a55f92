//! The batch converter behind `dlsys-lab float --batch`: fp32 bit patterns in,
//! one per line, rounded target patterns out — a reference anyone can test
//! their own converter against.

use std::io::{BufRead, Write};

use super::{Exact, Format, FormatError, Rounding, StochasticRounder};

/// What a batch run saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchReport {
    pub lines: usize,
    /// `(line number, message)` for each malformed line (1-based).
    pub errors: Vec<(usize, String)>,
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
/// `invalid` (so output lines stay aligned with input lines) and reported.
pub fn convert_batch(
    input: impl BufRead,
    mut output: impl Write,
    format: &Format,
    rounding: Rounding,
    seed: u64,
) -> std::io::Result<BatchReport> {
    let width = format.bits().div_ceil(4) as usize;
    let mut stochastic = StochasticRounder::new(seed);
    let mut report = BatchReport::default();
    for (index, line) in input.lines().enumerate() {
        let line = match line {
            Ok(line) => line,
            Err(err) if err.kind() == std::io::ErrorKind::InvalidData => {
                report.lines += 1;
                report.errors.push((index + 1, "not UTF-8 text".to_owned()));
                writeln!(output, "invalid")?;
                continue;
            }
            Err(err) => return Err(err),
        };
        report.lines += 1;
        match parse_f32_pattern(&line) {
            Ok(bits) => {
                let exact = Exact::from_f32_bits(bits);
                let out = if rounding == Rounding::Stochastic {
                    stochastic.encode(format, &exact)
                } else {
                    format.encode(&exact, rounding)
                };
                writeln!(output, "0x{out:0width$x}")?;
            }
            Err(message) => {
                report.errors.push((index + 1, message.to_string()));
                writeln!(output, "invalid")?;
            }
        }
    }
    output.flush()?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8], format: &Format) -> (String, BatchReport) {
        let mut out = Vec::new();
        let report =
            convert_batch(input, &mut out, format, Rounding::NearestEven, 0).unwrap_or_default();
        (String::from_utf8_lossy(&out).into_owned(), report)
    }

    #[test]
    fn converts_and_reports_bad_lines_by_number() {
        let (out, report) = run(
            b"0x3f800000\n3f800000\nzz\n\n0x477fe000\n0x123456789\n",
            &Format::fp16(),
        );
        assert_eq!(out, "0x3c00\n0x3c00\ninvalid\ninvalid\n0x7bff\ninvalid\n");
        assert_eq!(report.lines, 6);
        let lines: Vec<usize> = report.errors.iter().map(|e| e.0).collect();
        assert_eq!(lines, vec![3, 4, 6]);
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
            let (out, report) = run(&bytes, &Format::bf16());
            assert_eq!(out.lines().count(), report.lines);
        }
    }
}
