//! The float lesson's exercises: each task is generated from a seed and every
//! expected answer is computed by the emulator.

use dlsys_core::exercise::{AnswerChecker, AnswerKind, Mistake, Task};
use dlsys_core::float::{Format, Rounding, show, show_sig};
use dlsys_core::text::Lang;
use rand::RngExt as _;

use super::TEXT;

fn layout(format: &Format) -> String {
    format!("1-{}-{}", format.exp_bits, format.man_bits)
}

fn hex(format: &Format, bits: u32) -> String {
    format!("0x{:0w$x}", bits, w = format.bits().div_ceil(4) as usize)
}

/// A number typed to about `digits` significant digits is accepted.
fn number(expected: f64, digits: i32) -> AnswerChecker {
    AnswerChecker::Number {
        expected,
        abs_tol: 0.0,
        rel_tol: 10f64.powi(1 - digits) / 2.0,
    }
}

crate::exercises! {
    catalog: TEXT,
    salt: 0,
    fp16_bits => fp16_bits,
    fp16_overflow => fp16_overflow,
    min_subnormal => min_subnormal,
    tf32_rna => tf32_rna,
    accumulation_stall => accumulation_stall,
    epsilon => epsilon,
    max_finite => max_finite,
    loss_scale => loss_scale,
}

fn fp16_bits(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let fp16 = Format::fp16();
    // A value that needs rounding, in fp16's normal range, with a sign.
    let x = loop {
        let e = rng.random_range(-8..=10);
        let m = 1.0 + f64::from(rng.random_range(1..4096u32)) / 4096.0;
        let sign = if rng.random_range(0..4) == 0 {
            -1.0
        } else {
            1.0
        };
        let x: f64 = format!("{:.4}", sign * m * 2f64.powi(e))
            .parse()
            .unwrap_or(1.5);
        let rne = fp16.encode_f64(x, Rounding::NearestEven);
        let rtz = fp16.encode_f64(x, Rounding::TowardZero);
        // Prefer values where rounding matters, so truncation is a distinct mistake.
        if rne != rtz || rng.random_range(0..4) == 0 {
            break x;
        }
    };
    let bits = fp16.encode_f64(x, Rounding::NearestEven);
    let d = fp16.describe_bits(bits, x);
    let e = d.exponent_field as i32 - fp16.bias;
    let xs = show(x);
    let mut mistakes = Vec::new();
    let bf16 = Format::bf16().encode_f64(x, Rounding::NearestEven);
    mistakes.push(Mistake {
        answer: format!("0x{bf16:04x}"),
        feedback: t(lang, "ex.fp16_bits.bf16"),
    });
    let rtz = fp16.encode_f64(x, Rounding::TowardZero);
    if rtz != bits {
        mistakes.push(Mistake {
            answer: format!("0x{rtz:04x}"),
            feedback: t(lang, "ex.fp16_bits.truncated"),
        });
    }
    let top = Format::fp32().encode_f64(x, Rounding::NearestEven) >> 16;
    if top != bits && top != bf16 {
        mistakes.push(Mistake {
            answer: format!("0x{top:04x}"),
            feedback: t(lang, "ex.fp16_bits.fp32_top"),
        });
    }
    Task {
        prompt: TEXT.fill(lang, "ex.fp16_bits.prompt", &[("x", &xs)]),
        kind: AnswerKind::Bits { width: 16 },
        checker: AnswerChecker::Bits {
            expected: u64::from(bits),
            width: 16,
        },
        hints: vec![
            t(lang, "ex.fp16_bits.hint1"),
            TEXT.fill(
                lang,
                "ex.fp16_bits.hint2",
                &[
                    ("x", &xs),
                    ("mantissa_value", &show_sig(x.abs() / 2f64.powi(e), 8)),
                    ("e", &e),
                    ("exp_field", &d.exponent_field),
                ],
            ),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.fp16_bits.explain",
            &[
                ("x", &xs),
                ("value", &show(d.value)),
                ("sign", &d.sign),
                ("exp_field", &d.exponent_field),
                ("e", &e),
                ("man_field", &d.mantissa_field),
                ("binary", &d.binary),
                ("hex", &d.hex),
            ],
        ),
        reference: d.hex.clone(),
        mistakes,
    }
}

fn fp16_overflow(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let fp16 = Format::fp16();
    let range = fp16.range();
    let ulp_at_max = fp16.ulp(fp16.max_finite_bits(false)).unwrap_or(32.0);
    let threshold = range.max_finite + ulp_at_max / 2.0;
    let overflowing = [threshold, 65536.0, 70000.0, 1e5][rng.random_range(0..4)];
    let mut fitting = vec![range.max_finite, threshold - 1.0, 60000.0, 65000.0, 32768.5];
    // Three that fit, shuffled in with the one that overflows.
    let mut options = Vec::new();
    while options.len() < 3 {
        let i = rng.random_range(0..fitting.len());
        options.push(fitting.remove(i));
    }
    let answer_index = rng.random_range(0..=3);
    options.insert(answer_index, overflowing);
    let texts: Vec<String> = options.iter().map(|v| show(*v)).collect();
    let mistakes = options
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != answer_index)
        .map(|(i, v)| Mistake {
            answer: (i + 1).to_string(),
            feedback: TEXT.fill(
                lang,
                "ex.fp16_overflow.fits",
                &[
                    ("value", &show(*v)),
                    ("stored", &show(fp16.round_f64(*v, Rounding::NearestEven))),
                ],
            ),
        })
        .collect();
    let max = show(range.max_finite);
    Task {
        prompt: t(lang, "ex.fp16_overflow.prompt"),
        kind: AnswerKind::Choice { options: texts },
        checker: AnswerChecker::Choice {
            correct: answer_index,
        },
        hints: vec![
            TEXT.fill(
                lang,
                "ex.fp16_overflow.hint1",
                &[
                    ("max", &max),
                    ("next", &show(range.max_finite + ulp_at_max)),
                ],
            ),
            TEXT.fill(
                lang,
                "ex.fp16_overflow.hint2",
                &[
                    ("max", &max),
                    ("next", &show(range.max_finite + ulp_at_max)),
                ],
            ),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.fp16_overflow.explain",
            &[
                ("answer", &show(overflowing)),
                ("threshold", &show(threshold)),
                ("max", &max),
            ],
        ),
        reference: (answer_index + 1).to_string(),
        mistakes,
    }
}

/// A format to ask about: one of the named ones half the time, otherwise
/// an IEEE-style `eXmY` of 3–8 exponent and 2–10 mantissa bits (the
/// emulator takes any), so the question changes with the seed.
fn pick_format(rng: &mut rand::rngs::StdRng, with_fp32: bool) -> Format {
    if rng.random_range(0..2) == 0 {
        let (e, m) = (rng.random_range(3..=8u32), rng.random_range(2..=10u32));
        if let Ok(format) = Format::ieee(&format!("e{e}m{m}"), e, m) {
            return format;
        }
    }
    let mut formats = vec![
        Format::fp16(),
        Format::bf16(),
        Format::tf32(),
        Format::fp8_e4m3(),
        Format::fp8_e5m2(),
    ];
    if with_fp32 {
        formats.push(Format::fp32());
    }
    formats.swap_remove(rng.random_range(0..formats.len()))
}

/// A question on one value of a format's range (its prompt names the format
/// and its bit layout; the answer is `value` to three significant digits):
/// everything but the reference answer and the anticipated mistakes.
fn range_question(
    lang: Lang,
    id: &str,
    format: &Format,
    value: f64,
    hint2: (&str, &dyn std::fmt::Display),
    explain: &[(&str, &dyn std::fmt::Display)],
) -> Task {
    Task {
        prompt: TEXT.fill(
            lang,
            &format!("ex.{id}.prompt"),
            &[("format", &format.name), ("layout", &layout(format))],
        ),
        kind: AnswerKind::Number,
        checker: number(value, 3),
        hints: vec![
            t(lang, &format!("ex.{id}.hint1")),
            TEXT.fill(lang, &format!("ex.{id}.hint2"), &[hint2]),
        ],
        explanation: TEXT.fill(lang, &format!("ex.{id}.explain"), explain),
        reference: String::new(),
        mistakes: Vec::new(),
    }
}

fn min_subnormal(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let format = pick_format(&mut rng, true);
    let range = format.range();
    let base = range_question(
        lang,
        "min_subnormal",
        &format,
        range.min_subnormal,
        ("bias", &format.bias),
        &[
            ("emin", &range.emin),
            ("man_bits", &format.man_bits),
            ("value", &show(range.min_subnormal)),
            ("min_normal", &show(range.min_normal)),
        ],
    );
    Task {
        reference: format!("2^{}", range.emin - format.man_bits as i32),
        mistakes: vec![
            Mistake {
                answer: show(range.min_normal),
                feedback: TEXT.fill(
                    lang,
                    "ex.min_subnormal.normal",
                    &[("factor", &(1u64 << format.man_bits))],
                ),
            },
            Mistake {
                answer: "0".to_owned(),
                feedback: t(lang, "ex.min_subnormal.zero"),
            },
        ],
         ..base
    }
}

fn tf32_rna(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let fp32 = Format::fp32();
    let tf32 = Format::tf32();
    // A normal fp32 value; every other task is an exact tie, where RNA and RNE differ.
    let exp_field: u32 = rng.random_range(100..150);
    let upper: u32 = rng.random_range(0..1024);
    let dropped: u32 = if seed.is_multiple_of(2) {
        0x1000
    } else {
        rng.random_range(1..0x2000)
    };
    let sign: u32 = u32::from(rng.random_range(0..5) == 0);
    let bits = (sign << 31) | (exp_field << 23) | (upper << 13) | dropped;
    let x = dlsys_core::float::Exact::from_f32_bits(bits);
    let as_f32 = |r| tf32.encode(&x, r) << 13;
    let (rtz, rna, rne) = (
        as_f32(Rounding::TowardZero),
        as_f32(Rounding::NearestAway),
        as_f32(Rounding::NearestEven),
    );
    let mut mistakes = Vec::new();
    if rtz != rna {
        mistakes.push(Mistake {
            answer: hex(&fp32, rtz),
            feedback: t(lang, "ex.tf32_rna.rtz"),
        });
    }
    if rne != rna && rne != rtz {
        mistakes.push(Mistake {
            answer: hex(&fp32, rne),
            feedback: t(lang, "ex.tf32_rna.rne"),
        });
    }
    mistakes.push(Mistake {
        answer: hex(&fp32, bits),
        feedback: t(lang, "ex.tf32_rna.unmasked"),
    });
    let direction = t(
        lang,
        if dropped >= 0x1000 {
            "direction.away"
        } else {
            "direction.toward"
        },
    );
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.tf32_rna.prompt",
            &[
                ("bits", &hex(&fp32, bits)),
                ("value", &show(fp32.decode(bits))),
            ],
        ),
        kind: AnswerKind::Bits { width: 32 },
        checker: AnswerChecker::Bits {
            expected: u64::from(rna),
            width: 32,
        },
        hints: vec![
            TEXT.fill(
                lang,
                "ex.tf32_rna.hint1",
                &[("dropped", &format!("0x{dropped:04x}"))],
            ),
            t(lang, "ex.tf32_rna.hint2"),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.tf32_rna.explain",
            &[
                ("dropped", &format!("0x{dropped:04x}")),
                ("direction", &direction),
                ("rtz", &hex(&fp32, rtz)),
                ("rna", &hex(&fp32, rna)),
                ("rne", &hex(&fp32, rne)),
            ],
        ),
        reference: hex(&fp32, rna),
        mistakes,
    }
}

/// Adds `addend` `count` times into a sum kept in `format`; returns the final sum.
pub fn accumulate(format: &Format, addend: f64, count: u32) -> f64 {
    let mut sum = 0.0;
    for _ in 0..count {
        let next = format.round_f64(sum + addend, Rounding::NearestEven);
        if next == sum {
            break; // stalled: every further step gives the same sum
        }
        sum = next;
    }
    sum
}

fn accumulation_stall(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let format = if rng.random_range(0..2) == 0 {
        Format::bf16()
    } else {
        Format::fp16()
    };
    let addend = [1.0, 0.5, 0.25, 2.0, 0.125][rng.random_range(0..5)];
    let count: u32 = [10_000, 20_000, 100_000][rng.random_range(0..3)];
    let stall = accumulate(&format, addend, count);
    let exact = addend * f64::from(count);
    let spacing = format
        .ulp(format.encode_f64(stall, Rounding::NearestEven))
        .unwrap_or(f64::NAN);
    let name = format.name.clone();
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.accumulation_stall.prompt",
            &[
                ("addend", &show(addend)),
                ("format", &name),
                ("count", &count),
            ],
        ),
        kind: AnswerKind::Number,
        checker: AnswerChecker::Number {
            expected: stall,
            abs_tol: 0.0,
            rel_tol: 0.0,
        },
        hints: vec![
            TEXT.fill(lang, "ex.accumulation_stall.hint1", &[("addend", &show(addend))]),
            TEXT.fill(
                lang,
                "ex.accumulation_stall.hint2",
                &[
                    ("format", &name),
                    ("digits", &(format.man_bits + 1)),
                    ("man_bits", &format.man_bits),
                ],
            ),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.accumulation_stall.explain",
            &[
                ("stall", &show(stall)),
                ("spacing", &show(spacing)),
                ("addend", &show(addend)),
                ("exact", &show(exact)),
            ],
        ),
        reference: show(stall),
        mistakes: vec![Mistake {
            answer: show(exact),
            feedback: TEXT.fill(lang, "ex.accumulation_stall.exact", &[("format", &name)]),
        }],
    }
}

fn epsilon(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let format = pick_format(&mut rng, true);
    let range = format.range();
    let base = range_question(
        lang,
        "epsilon",
        &format,
        range.epsilon,
        ("man_bits", &format.man_bits),
        &[
            ("man_bits", &format.man_bits),
            ("eps", &show(range.epsilon)),
            ("half", &show(range.unit_roundoff)),
        ],
    );
    Task {
        reference: format!("2^-{}", format.man_bits),
        mistakes: vec![Mistake {
            answer: show(range.unit_roundoff),
            feedback: t(lang, "ex.epsilon.half"),
        }],
         ..base
    }
}

fn max_finite(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let format = pick_format(&mut rng, false);
    let range = format.range();
    let fn_format = !range.has_infinity;
    let next_pow2 = 2f64.powi(range.emax + 1);
    let mut mistakes = vec![Mistake {
        answer: show(next_pow2),
        feedback: TEXT.fill(lang, "ex.max_finite.pow2", &[("value", &show(next_pow2))]),
    }];
    if fn_format {
        mistakes.push(Mistake {
            answer: "240".to_owned(),
            feedback: t(lang, "ex.max_finite.ieee_e4m3"),
        });
        mistakes.push(Mistake {
            answer: "480".to_owned(),
            feedback: t(lang, "ex.max_finite.nan"),
        });
    }
    let special = if fn_format {
        t(lang, "ex.max_finite.special.fn")
    } else {
        t(lang, "ex.max_finite.special.ieee")
    };
    let fn_note = if fn_format {
        t(lang, "ex.max_finite.fn_note")
    } else {
        String::new()
    };
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.max_finite.prompt",
            &[("format", &format.name), ("layout", &layout(&format))],
        ),
        kind: AnswerKind::Number,
        checker: number(range.max_finite, 5),
        hints: vec![
            t(lang, "ex.max_finite.hint1"),
            TEXT.fill(lang, "ex.max_finite.hint2", &[("special", &special)]),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.max_finite.explain",
            &[
                ("bits", &format.binary_string(format.max_finite_bits(false))),
                ("max", &show(range.max_finite)),
                ("man_bits", &format.man_bits),
                ("emax", &range.emax),
                ("fn_note", &fn_note),
            ],
        ),
        reference: show(range.max_finite),
        mistakes,
    }
}

fn loss_scale(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let fp16 = Format::fp16();
    let min_normal = fp16.range().min_normal;
    let g: f64 = format!(
        "{:.2e}",
        rng.random_range(1.0..9.9) * 10f64.powi(-rng.random_range(7..=11))
    )
    .parse()
    .unwrap_or(3e-9);
    // The smallest k with g · 2^k ≥ 2^-14, found by counting, not by a formula.
    let mut k = 0;
    while g * 2f64.powi(k) < min_normal {
        k += 1;
    }
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.loss_scale.prompt",
            &[("g", &show(g)), ("min_normal", &show(min_normal))],
        ),
        kind: AnswerKind::Number,
        checker: AnswerChecker::Number {
            expected: 2f64.powi(k),
            abs_tol: 0.0,
            rel_tol: 0.0,
        },
        hints: vec![
            t(lang, "ex.loss_scale.hint1"),
            TEXT.fill(
                lang,
                "ex.loss_scale.hint2",
                &[("g", &show(g)), ("log2g", &show_sig(g.log2(), 4))],
            ),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.loss_scale.explain",
            &[
                ("g", &show(g)),
                ("k", &k),
                ("scaled", &show_sig(g * 2f64.powi(k), 4)),
                ("km1", &(k - 1)),
                ("under", &show_sig(g * 2f64.powi(k - 1), 4)),
            ],
        ),
        reference: format!("2^{k}"),
        mistakes: vec![
            Mistake {
                answer: format!("2^{}", k - 1),
                feedback: t(lang, "ex.loss_scale.too_small"),
            },
            Mistake {
                answer: format!("2^{}", k + 1),
                feedback: t(lang, "ex.loss_scale.bigger"),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    

    #[test]
    fn classic_wrong_answers_get_their_own_feedback() {
        // 6.1e-5 given as fp16's smallest subnormal.
        let task = (0..200)
            .map(|seed| min_subnormal(seed, Lang::En))
            .find(|task| task.prompt.contains("fp16"))
            .expect("some seed picks fp16");
        assert!(task.check("2^-24").is_correct());
        assert!(task.check("5.96e-8").is_correct());
        let verdict = task.check("6.1e-5");
        assert!(
            !verdict.is_correct() && task.verdict_text(&verdict, Lang::En).contains("normal"),
            "{verdict:?}"
        );

        // bf16 accumulation of ones stalls at 256.
        assert_eq!(accumulate(&Format::bf16(), 1.0, 10_000), 256.0);
        assert_eq!(accumulate(&Format::fp16(), 1.0, 10_000), 2048.0);

        // E4M3's max is 448, and 480 is named as the NaN pattern.
        let e4m3 = (0..200)
            .map(|s| max_finite(s, Lang::En))
            .find(|t| t.prompt.contains("e4m3"));
        let e4m3 = e4m3.expect("some seed picks e4m3");
        assert!(e4m3.check("448").is_correct());
        assert!(e4m3.verdict_text(&e4m3.check("480"), Lang::En).contains("NaN"));
    }

    #[test]
    fn tf32_ties_make_rna_and_rne_differ() {
        let tie = tf32_rna(2, Lang::En); // even seeds are exact ties
        assert!(tie.check(&tie.reference).is_correct());
        assert!(tie.mistakes.len() >= 2);
    }
}
