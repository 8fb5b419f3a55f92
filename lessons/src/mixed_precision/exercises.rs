//! The mixed-precision lesson's exercises. Every answer is computed by the
//! rounding core (`dlsys_core::mixed::Rounder`) or the loss scaler itself.

use dlsys_core::exercise::{AnswerChecker, AnswerKind, Mistake, Task};
use dlsys_core::float::{Format, show_sig};
use dlsys_core::mixed::{LossScale, Rounder, Scaler};
use dlsys_core::text::Lang;
use rand::RngExt as _;

use super::TEXT;

fn rounder(name: &str) -> Rounder {
    // The built-in names always parse; fall back to fp32 rather than panic.
    Rounder::by_name(name).unwrap_or_else(|_| Rounder::new(&Format::fp32()))
}

fn exact(expected: f64) -> AnswerChecker {
    AnswerChecker::Number {
        expected,
        abs_tol: 0.0,
        rel_tol: 1e-12,
    }
}

/// Shows a power of two as `2^k`, anything else with 8 significant digits.
fn show(x: f64) -> String {
    let k = x.log2();
    if x > 0.0 && k.fract() == 0.0 && k.abs() > 10.0 {
        format!("2^{k}")
    } else {
        show_sig(x, 8)
    }
}

crate::exercises! {
    catalog: TEXT,
    salt: 0x00f1_6b16,
    choose_loss_scale => choose_scale,
    which_format_loses_it => which_loses,
    fp16_accumulation_ceiling => accumulation,
    why_master_weights => master_weights,
    bf16_or_fp16 => bf16_or_fp16,
    dynamic_scale_after => dynamic_scale,
    autocast_op => super::autocast::which_op_runs_in_fp32,
}

/// The largest power-of-two scale that keeps `max_grad · scale` finite in fp16.
fn largest_safe_scale(max_grad: f64) -> f64 {
    let fp16 = rounder("fp16");
    (0..=40)
        .rev()
        .map(|k| 2f64.powi(k))
        .find(|s| fp16.round((max_grad * s) as f32).is_finite())
        .unwrap_or(1.0)
}

fn choose_scale(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let max_grad = [0.75, 1.5, 3.0, 6.5, 12.0, 40.0, 250.0][rng.random_range(0..7)];
    let smallest: i32 = -rng.random_range(26..34);
    let answer = largest_safe_scale(max_grad);
    let fp16 = rounder("fp16");
    let max_fp16 = Format::fp16().range().max_finite;
    let twice = answer * 2.0;
    let overflowed = fp16.round((max_grad * twice) as f32);
    debug_assert!(overflowed.is_infinite());
    let small = 2f64.powi(smallest);
    let fp16_range = Format::fp16().range();
    // Rounded to 0, kept only as a subnormal (fewer significant bits), or normal.
    let scaled_small = f64::from(fp16.round((small * answer) as f32));
    let fate = if scaled_small == 0.0 {
        t(lang, "ex.choose_loss_scale.lost")
    } else if scaled_small.abs() < fp16_range.min_normal {
        TEXT.fill(
            lang,
            "ex.choose_loss_scale.subnormal",
            &[("normal", &show(fp16_range.min_normal))],
        )
    } else {
        t(lang, "ex.choose_loss_scale.kept")
    };
    let mut mistakes = vec![Mistake {
        answer: show(twice),
        feedback: TEXT.fill(
            lang,
            "ex.choose_loss_scale.twice",
            &[
                ("product", &show_sig(max_grad * twice, 6)),
                ("max", &max_fp16),
            ],
        ),
    }];
    let default = f64::from(initial_scale());
    if answer != default {
        mistakes.push(Mistake {
            answer: show(default),
            feedback: t(lang, "ex.choose_loss_scale.default"),
        });
    }
    let naive = max_fp16 / max_grad;
    if naive != answer {
        mistakes.push(Mistake {
            answer: show_sig(naive, 8),
            feedback: t(lang, "ex.choose_loss_scale.power"),
        });
    }
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.choose_loss_scale.prompt",
            &[("max", &max_grad), ("small", &format!("2^{smallest}"))],
        ),
        kind: AnswerKind::Number,
        checker: exact(answer),
        hints: vec![
            TEXT.fill(lang, "ex.choose_loss_scale.hint1", &[("max", &max_fp16)]),
            TEXT.fill(
                lang,
                "ex.choose_loss_scale.hint2",
                &[("grad", &max_grad), ("max", &max_fp16)],
            ),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.choose_loss_scale.explain",
            &[
                ("scale", &show(answer)),
                ("product", &show_sig(max_grad * answer, 6)),
                ("max", &max_fp16),
                ("small", &format!("2^{smallest}")),
                ("scaled", &show(small * answer)),
                ("fate", &fate),
            ],
        ),
        reference: show(answer),
        mistakes,
    }
}

const LOSE_OPTIONS: [&str; 4] = ["fp32", "tf32", "bf16", "fp16"];

fn which_loses(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let underflow = seed.is_multiple_of(2);
    let value = if underflow {
        // Below half of fp16's smallest subnormal (2^-25), far above bf16's.
        f64::from(rng.random_range(1..8) * 2 + 1) * 2f64.powi(-rng.random_range(29..36))
    } else {
        // Beyond fp16's 65504 (and its rounding boundary 65520), far inside the others.
        f64::from(rng.random_range(66..900)) * 1000.0
    };
    let lost = |name: &str| {
        let r = rounder(name).round(value as f32);
        if underflow { r == 0.0 } else { r.is_infinite() }
    };
    let losers: Vec<usize> = (0..LOSE_OPTIONS.len())
        .filter(|i| lost(LOSE_OPTIONS[*i]))
        .collect();
    debug_assert_eq!(losers, vec![3]);
    let correct = losers.first().copied().unwrap_or(3);
    let options: Vec<String> = LOSE_OPTIONS.iter().map(|s| (*s).to_owned()).collect();
    let mistakes = (0..LOSE_OPTIONS.len())
        .filter(|i| *i != correct)
        .map(|i| Mistake {
            answer: (i + 1).to_string(),
            feedback: TEXT.fill(
                lang,
                "ex.which_format_loses_it.wrong",
                &[
                    ("format", &LOSE_OPTIONS[i]),
                    (
                        "value",
                        &show_sig(f64::from(rounder(LOSE_OPTIONS[i]).round(value as f32)), 6),
                    ),
                ],
            ),
        })
        .collect();
    let fp16 = Format::fp16().range();
    Task {
        prompt: TEXT.fill(
            lang,
            if underflow {
                "ex.which_format_loses_it.prompt_small"
            } else {
                "ex.which_format_loses_it.prompt_big"
            },
            &[("value", &show_sig(value, 6))],
        ),
        kind: AnswerKind::Choice { options },
        checker: AnswerChecker::Choice { correct },
        hints: vec![
            TEXT.fill(
                lang,
                "ex.which_format_loses_it.hint1",
                &[
                    ("wide", &Format::bf16().exp_bits),
                    ("narrow", &Format::fp16().exp_bits),
                ],
            ),
            TEXT.fill(
                lang,
                "ex.which_format_loses_it.hint2",
                &[
                    ("sub", &show(fp16.min_subnormal)),
                    ("max", &fp16.max_finite),
                ],
            ),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.which_format_loses_it.explain",
            &[
                ("sub", &show(fp16.min_subnormal)),
                ("normal", &show(fp16.min_normal)),
                ("max", &fp16.max_finite),
                ("bf16_sub", &show(Format::bf16().range().min_subnormal)),
                ("bf16_max", &show_sig(Format::bf16().range().max_finite, 4)),
            ],
        ),
        reference: (correct + 1).to_string(),
        mistakes,
    }
}

/// Adds `v` into an fp16 buffer until it stops growing or overflows:
/// (largest finite value held, additions done, overflowed?).
pub fn fp16_accumulate(v: f32) -> (f64, u32, bool) {
    let fp16 = rounder("fp16");
    let v = fp16.round(v);
    let mut acc = 0.0f32;
    for n in 1..=1_000_000u32 {
        let next = fp16.round(acc + v);
        if next.is_infinite() {
            return (f64::from(acc), n, true);
        }
        if next == acc {
            return (f64::from(acc), n, false);
        }
        acc = next;
    }
    (f64::from(acc), 1_000_000, false)
}

fn accumulation(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    const STEPS: [f32; 16] = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0, 100.0, 300.0, 1000.0, 3000.0, 5000.0, 6000.0];
    let v = STEPS[rng.random_range(0..STEPS.len())];
    let (answer, additions, overflowed) = fp16_accumulate(v);
    let max = Format::fp16().range().max_finite;
    let mut mistakes = Vec::new();
    if answer != max {
        mistakes.push(Mistake {
            answer: show_sig(max, 8),
            feedback: t(
                lang,
                if overflowed {
                    "ex.fp16_accumulation_ceiling.max_overflow"
                } else {
                    "ex.fp16_accumulation_ceiling.max_stall"
                },
            ),
        });
    }
    let naive = (max / f64::from(v)).floor() * f64::from(v);
    if naive != answer {
        mistakes.push(Mistake {
            answer: show_sig(naive, 8),
            feedback: t(lang, "ex.fp16_accumulation_ceiling.naive"),
        });
    }
    let next_power = 2f64.powf(max.log2().ceil());
    if answer != next_power {
        mistakes.push(Mistake {
            answer: show_sig(next_power, 8),
            feedback: t(lang, "ex.fp16_accumulation_ceiling.pow"),
        });
    }
    Task {
        prompt: TEXT.fill(lang, "ex.fp16_accumulation_ceiling.prompt", &[("v", &v)]),
        kind: AnswerKind::Number,
        checker: exact(answer),
        hints: vec![
            TEXT.fill(lang, "ex.fp16_accumulation_ceiling.hint1", &[("man", &Format::fp16().man_bits)]),
            TEXT.fill(lang, "ex.fp16_accumulation_ceiling.hint2", &[("max", &max)]),
        ],
        explanation: TEXT.fill(
            lang,
            if overflowed {
                "ex.fp16_accumulation_ceiling.explain_overflow"
            } else {
                "ex.fp16_accumulation_ceiling.explain_stall"
            },
            &[
                ("answer", &show_sig(answer, 8)),
                ("n", &additions),
                ("v", &v),
                ("max", &max),
                ("ulp", &show_sig(2f64.powf(answer.log2().floor() - 10.0), 6)),
            ],
        ),
        reference: show_sig(answer, 8),
        mistakes,
    }
}

/// What storing `w + update` in fp16 (giving `answer`; fp16's spacing at
/// `w` is `ulp`) did to the update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MasterFate {
    /// Rounded away: the weight did not move.
    Lost,
    /// Kept, but rounded to a whole number of fp16 steps.
    Rounded,
    /// A whole multiple of the spacing, stored exactly: nothing rounded off.
    Whole,
}

fn master_fate(w: f64, update: f64, ulp: f64, answer: f64) -> MasterFate {
    if answer == w {
        MasterFate::Lost
    } else if (update / ulp).fract() == 0.0 && answer == w + update {
        MasterFate::Whole
    } else {
        MasterFate::Rounded
    }
}

fn master_weights(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let w = [1.0f64, 2.0, 0.5, 4.0, 1.5][rng.random_range(0..5)];
    let fp16 = rounder("fp16");
    // fp16 keeps 10 fraction bits: the spacing at w is 2^(floor(log2 w) − 10).
    let ulp = 2f64.powf(w.log2().floor() - 10.0);
    let update = ulp / [4.0, 3.0, 8.0, 16.0, 1.0, 1.5][rng.random_range(0..6)];
    let answer = f64::from(fp16.round((w + update) as f32));
    let exact_sum = w + update;
    let mut mistakes = Vec::new();
    if exact_sum != answer {
        mistakes.push(Mistake {
            answer: show_sig(exact_sum, 12),
            feedback: t(lang, "ex.why_master_weights.exact"),
        });
    }
    let other = if answer == w { w + ulp } else { w };
    mistakes.push(Mistake {
        answer: show_sig(other, 12),
        feedback: t(lang, "ex.why_master_weights.round"),
    });
    let steps_lost = match master_fate(w, update, ulp, answer) {
        MasterFate::Lost => t(lang, "ex.why_master_weights.lost"),
        MasterFate::Rounded => TEXT.fill(
            lang,
            "ex.why_master_weights.kept",
            &[
                ("stored", &show_sig(answer - w, 8)),
                ("u", &show_sig(update, 8)),
            ],
        ),
        MasterFate::Whole => TEXT.fill(
            lang,
            "ex.why_master_weights.whole",
            &[("steps", &(update / ulp)), ("ulp", &show_sig(ulp, 6))],
        ),
    };
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.why_master_weights.prompt",
            &[("w", &w), ("u", &show_sig(update, 8))],
        ),
        kind: AnswerKind::Number,
        checker: exact(answer),
        hints: vec![
            TEXT.fill(
                lang,
                "ex.why_master_weights.hint1",
                &[("man", &Format::fp16().man_bits)],
            ),
            t(lang, "ex.why_master_weights.hint2"),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.why_master_weights.explain",
            &[
                ("w", &w),
                ("ulp", &show_sig(ulp, 6)),
                ("half", &show_sig(ulp / 2.0, 6)),
                ("u", &show_sig(update, 8)),
                ("answer", &show_sig(answer, 12)),
                ("fate", &steps_lost),
            ],
        ),
        reference: show_sig(answer, 12),
        mistakes,
    }
}

const RANGE_OPTIONS: [&str; 4] = ["fp16", "bf16", "fp8-e4m3", "fp8-e5m2"];

/// Whether `name` keeps `x` within 1 % relative error.
fn keeps(name: &str, x: f64) -> bool {
    let r = f64::from(rounder(name).round(x as f32));
    r.is_finite() && ((r - x) / x).abs() <= 0.01
}

fn bf16_or_fp16(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let small = f64::from(rng.random_range(3..15) * 2 + 1) * 2f64.powi(-rng.random_range(30..40));
    let big = f64::from(rng.random_range(3..60)) * 1000.0 + 0.5;
    let good: Vec<usize> = (0..RANGE_OPTIONS.len())
        .filter(|i| keeps(RANGE_OPTIONS[*i], small) && keeps(RANGE_OPTIONS[*i], big))
        .collect();
    debug_assert_eq!(good, vec![1]);
    let correct = good.first().copied().unwrap_or(1);
    // Rotate the options by the seed, so the answer is not always #2.
    let shift = (seed % 4) as usize;
    let order: Vec<usize> = (0..4).map(|i| (i + shift) % 4).collect();
    let options: Vec<String> = order.iter().map(|i| RANGE_OPTIONS[*i].to_owned()).collect();
    let at = order.iter().position(|i| *i == correct).unwrap_or(0);
    let describe = |name: &str, x: f64| show_sig(f64::from(rounder(name).round(x as f32)), 6);
    let mistakes = order
        .iter()
        .enumerate()
        .filter(|(_, i)| **i != correct)
        .map(|(pos, i)| Mistake {
            answer: (pos + 1).to_string(),
            feedback: TEXT.fill(
                lang,
                "ex.bf16_or_fp16.wrong",
                &[
                    ("format", &RANGE_OPTIONS[*i]),
                    ("small", &describe(RANGE_OPTIONS[*i], small)),
                    ("big", &describe(RANGE_OPTIONS[*i], big)),
                ],
            ),
        })
        .collect();
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.bf16_or_fp16.prompt",
            &[("small", &show_sig(small, 6)), ("big", &show_sig(big, 8))],
        ),
        kind: AnswerKind::Choice { options },
        checker: AnswerChecker::Choice { correct: at },
        hints: vec![
            t(lang, "ex.bf16_or_fp16.hint1"),
            TEXT.fill(lang, "ex.bf16_or_fp16.hint2", &[("layouts", &layouts(lang))]),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.bf16_or_fp16.explain",
            &[
                ("small", &describe("bf16", small)),
                ("big", &describe("bf16", big)),
                ("fp16_small", &describe("fp16", small)),
            ],
        ),
        reference: (at + 1).to_string(),
        mistakes,
    }
}

/// "fp16 1-5-10 (largest 65504), …" for the range exercise's options, from the formats.
fn layouts(lang: Lang) -> String {
    RANGE_OPTIONS
        .iter()
        .filter_map(|name| Format::by_name(name).ok())
        .map(|f| {
            TEXT.fill(
                lang,
                "ex.bf16_or_fp16.layout",
                &[
                    ("format", &f.name),
                    ("exp", &f.exp_bits),
                    ("man", &f.man_bits),
                    ("largest", &show_sig(f.range().max_finite, 5)),
                ],
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The frameworks' initial dynamic loss scale (2^16).
fn initial_scale() -> f32 {
    match LossScale::dynamic() {
        LossScale::Dynamic { initial, .. } => initial,
        LossScale::None | LossScale::Static(_) => 1.0,
    }
}

/// The scale after `steps` steps, with overflows at `bad` (1-based steps).
fn simulate(initial: f32, interval: u32, steps: u64, bad: &[u64]) -> f64 {
    let mut s = Scaler::new(LossScale::Dynamic {
        initial,
        growth_interval: interval,
    });
    for step in 1..=steps {
        s.update(step, !bad.contains(&step));
    }
    f64::from(s.scale)
}

fn dynamic_scale(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let interval = [4u32, 5, 10][rng.random_range(0..3)];
    let steps = u64::from(interval) * rng.random_range(3..6) + rng.random_range(0..3);
    let first = rng.random_range(2..steps / 2);
    let second = first + rng.random_range(1..4);
    let bad = [first, second];
    let initial = initial_scale();
    let answer = simulate(initial, interval, steps, &bad);
    // Classic slips: not resetting the clean-step count after an overflow;
    // forgetting that the scale grows at all.
    let no_reset = {
        let growths = (steps - bad.len() as u64) / u64::from(interval);
        f64::from(initial) * 2f64.powi(growths as i32) / 4.0
    };
    let no_growth = f64::from(initial) / 4.0;
    let mut mistakes = Vec::new();
    for (value, key) in [
        (no_reset, "ex.dynamic_scale_after.no_reset"),
        (no_growth, "ex.dynamic_scale_after.no_growth"),
    ] {
        if value != answer && !mistakes.iter().any(|m: &Mistake| m.answer == show(value)) {
            mistakes.push(Mistake {
                answer: show(value),
                feedback: t(lang, key),
            });
        }
    }
    if mistakes.is_empty() {
        mistakes.push(Mistake {
            answer: show(f64::from(initial)),
            feedback: t(lang, "ex.dynamic_scale_after.no_growth"),
        });
    }
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.dynamic_scale_after.prompt",
            &[
                ("initial", &initial),
                ("interval", &interval),
                ("steps", &steps),
                ("a", &first),
                ("b", &second),
            ],
        ),
        kind: AnswerKind::Number,
        checker: exact(answer),
        hints: vec![
            TEXT.fill(lang, "ex.dynamic_scale_after.hint1", &[("interval", &interval)]),
            t(lang, "ex.dynamic_scale_after.hint2"),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.dynamic_scale_after.explain",
            &[("answer", &show(answer)), ("interval", &interval)],
        ),
        reference: show(answer),
        mistakes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_computed_facts_behind_the_answers() {
        // 40 · 1024 = 40960 fits under 65504; 40 · 2048 = 81920 does not.
        assert_eq!(largest_safe_scale(40.0), 1024.0);
        assert_eq!(largest_safe_scale(0.75), 65536.0);
        // Adding 1.0 stalls at 2048 (the spacing there is 2); 1000 overflows.
        assert_eq!(fp16_accumulate(1.0), (2048.0, 2049, false));
        let (top, _, overflowed) = fp16_accumulate(1000.0);
        assert!(overflowed && top <= 65504.0 && top > 64000.0);
        // A scale that never overflows doubles every interval.
        assert_eq!(simulate(65536.0, 4, 8, &[]), 262_144.0);
        assert_eq!(simulate(65536.0, 4, 8, &[1]), 65536.0);
    }

    #[test]
    fn a_scaled_gradient_in_the_subnormal_range_is_not_called_lost() {
        // Over the seeds, the smallest scaled gradient lands in each zone;
        // only at or below 2^-25 does it round to 0.
        let (mut normal, mut subnormal, mut lost) = (0, 0, 0);
        let mut seed = dlsys_core::exercise::FIRST_SEED;
        for _ in 0..300 {
            let task = choose_scale(seed, Lang::En);
            let e = &task.explanation;
            assert!(!e.contains('{'), "{e}");
            if e.contains("subnormal, with fewer") {
                subnormal += 1;
            } else if e.contains("rounds to 0") {
                lost += 1;
            } else if e.contains("normal number") {
                normal += 1;
            }
            seed = dlsys_core::exercise::next_seed(seed);
        }
        assert!(normal > 0 && subnormal > 0 && lost > 0, "{normal} {subnormal} {lost}");
    }

    #[test]
    fn an_update_of_whole_fp16_steps_is_not_called_rounded() {
        let ulp = 2f64.powi(-10);
        assert_eq!(master_fate(1.0, ulp, ulp, 1.0 + ulp), MasterFate::Whole);
        assert_eq!(master_fate(1.0, ulp / 1.5, ulp, 1.0 + ulp), MasterFate::Rounded);
        assert_eq!(master_fate(1.0, ulp / 4.0, ulp, 1.0), MasterFate::Lost);
        // Over the seeds: a variant whose update is exactly one step (no
        // "exact sum" mistake, the weight moved) never says "rounded".
        let (mut whole, mut rounded) = (0, 0);
        let mut seed = dlsys_core::exercise::FIRST_SEED;
        for _ in 0..200 {
            let task = master_weights(seed, Lang::En);
            let exact_sum_is_answer = task.mistakes.len() == 1;
            if exact_sum_is_answer {
                whole += 1;
                assert!(!task.explanation.contains("rounded"), "{}", task.explanation);
                assert!(task.explanation.contains("nothing"), "{}", task.explanation);
            } else if task.explanation.contains("rounded to") {
                rounded += 1;
            }
            assert!(!task.explanation.contains('{'), "{}", task.explanation);
            seed = dlsys_core::exercise::next_seed(seed);
        }
        assert!(whole > 0 && rounded > 0, "{whole} whole, {rounded} rounded");
    }

    #[test]
    fn the_classic_answers_get_their_feedback() {
        let task = choose_scale(1, Lang::En);
        assert!(task.check(&task.reference).is_correct());
        let twice = format!("{}", parse(&task.reference) * 2.0);
        assert!(task.verdict_text(&task.check(&twice), Lang::En).contains("inf"));
        let task = accumulation(1, Lang::En);
        assert!(task.check(&task.reference).is_correct());
        if task.reference != "65504" {
            assert!(!task.check("65504").is_correct());
        }
        let task = master_weights(3, Lang::En);
        assert!(task.check(&task.reference).is_correct());
        for mistake in &task.mistakes {
            assert!(!task.check(&mistake.answer).is_correct());
        }
    }

    fn parse(s: &str) -> f64 {
        dlsys_core::float::parse_number(s).unwrap_or(f64::NAN)
    }
}
