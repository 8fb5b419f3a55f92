//! The GPU lesson's exercises. Traffic answers come from the same plans the
//! kernels run (`dlsys_core::kernels::plan`).

use dlsys_core::exercise::{AnswerChecker, AnswerKind, Mistake, Task};
use dlsys_core::float::show_sig;
use dlsys_core::kernels::{DeviceLimits, Kernel, Problem, SoftmaxKind, plan};
use dlsys_core::text::Lang;
use rand::RngExt as _;

use super::TEXT;

fn close(expected: f64) -> AnswerChecker {
    AnswerChecker::close(expected, 5e-3)
}

/// The choices in a fixed order, with the correct one moved to `correct_at`.
fn choice(lang: Lang, keys: [&str; 4], correct_at: usize) -> (Vec<String>, usize) {
    let mut options: Vec<String> = keys.iter().map(|k| t(lang, k)).collect();
    options.swap(0, correct_at);
    (options, correct_at)
}

crate::exercises! {
    catalog: TEXT,
    salt: 0x6b0_6b0,
    three_pass_bytes => three_pass_bytes,
    online_bytes_per_element => online_bytes,
    roofline_bound => roofline,
    why_subtract_max => why_max,
    occupancy => occupancy,
    divergence_step => divergence,
    effective_bandwidth => bandwidth,
}

const DEVICE: DeviceLimits = DeviceLimits {
    cache_floats: 1 << 20,
    ..DeviceLimits::TYPICAL
};

fn mb_of(kind: SoftmaxKind, problem: Problem) -> f64 {
    plan(Kernel::Softmax(kind), problem, DEVICE).map_or(f64::NAN, |(_, t)| t.bytes() as f64 / 1e6)
}

fn three_pass_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let rows = [1024u32, 2048, 4096, 8192][rng.random_range(0..4)];
    let cols = [512u32, 1000, 1024, 4096][rng.random_range(0..4)];
    let problem = Problem::new(rows, cols);
    let elems = problem.elements();
    // The plan's bytes include the per-row stats; the question leaves them out.
    let exact = 16.0 * elems as f64 / 1e6;
    let with_stats = mb_of(SoftmaxKind::ThreePass, problem);
    debug_assert!((with_stats - exact).abs() < 0.01 * exact);
    let online = mb_of(SoftmaxKind::Online, problem);
    let cached = 8.0 * elems as f64 / 1e6;
    Task {
        prompt: TEXT.fill(lang, "ex.three_pass_bytes.prompt", &[("rows", &rows), ("cols", &cols)]),
        kind: AnswerKind::Number,
        checker: close(exact),
        hints: vec![t(lang, "ex.three_pass_bytes.hint1"), t(lang, "ex.three_pass_bytes.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.three_pass_bytes.explain",
            &[
                ("elems", &elems),
                ("mb", &show_sig(exact, 6)),
                ("online", &show_sig(online, 6)),
                ("cached", &show_sig(cached, 6)),
            ],
        ),
        reference: show_sig(exact, 6),
        mistakes: vec![
            Mistake {
                answer: show_sig(online, 6),
                feedback: t(lang, "ex.three_pass_bytes.online"),
            },
            Mistake {
                answer: show_sig(cached, 6),
                feedback: t(lang, "ex.three_pass_bytes.once"),
            },
        ],
    }
}

fn online_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    // Global-memory accesses per element, from the kernel's own traffic
    // plan (f32, a row long enough that the per-row max and sum vanish).
    let problem = Problem::new(1, 1 << 20);
    let per = |kind| (mb_of(kind, problem) * 1e6 / problem.elements() as f64 / 4.0).round();
    let (online, safe) = (per(SoftmaxKind::Online), per(SoftmaxKind::ThreePass));
    let (format, width) = [("f32", 4.0), ("f16", 2.0), ("bf16", 2.0), ("fp8", 1.0)][rng.random_range(0..4)];
    let cols = [512u32, 1000, 1024, 4096, 32_000, 50_257][rng.random_range(0..6)];
    let bytes = |accesses: f64, w: f64| accesses * w * f64::from(cols);
    let answer = bytes(online, width);
    let mut mistakes = vec![
        Mistake {
            answer: show_sig(bytes(safe, width), 6),
            feedback: t(lang, "ex.online_bytes_per_element.safe"),
        },
        Mistake {
            answer: show_sig(bytes(2.0, width), 6),
            feedback: t(lang, "ex.online_bytes_per_element.cached"),
        },
    ];
    if width != 4.0 {
        mistakes.push(Mistake {
            answer: show_sig(bytes(online, 4.0), 6),
            feedback: TEXT.fill(lang, "ex.online_bytes_per_element.width", &[("format", &format), ("width", &width)]),
        });
    }
    Task {
        prompt: TEXT.fill(lang, "ex.online_bytes_per_element.prompt", &[("cols", &cols), ("format", &format)]),
        kind: AnswerKind::Number,
        checker: close(answer),
        hints: vec![
            t(lang, "ex.online_bytes_per_element.hint1"),
            TEXT.fill(lang, "ex.online_bytes_per_element.hint2", &[("format", &format), ("width", &width)]),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.online_bytes_per_element.explain",
            &[
                ("cols", &cols),
                ("width", &width),
                ("answer", &show_sig(answer, 6)),
                ("safe", &show_sig(bytes(safe, width), 6)),
            ],
        ),
        reference: show_sig(answer, 6),
        mistakes,
    }
}

fn roofline(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let bw: f64 = [900.0, 2000.0, 3350.0, 4800.0][rng.random_range(0..4)];
    let peak: f64 = [19_500.0, 60_000.0, 67_000.0][rng.random_range(0..3)];
    let ai: f64 = [0.25, 1.0, 4.0, 30.0, 100.0][rng.random_range(0..5)];
    let roofline = dlsys_core::kernels::Roofline { peak, bandwidth: bw };
    let (memory, answer) = (roofline.memory_roof(ai), roofline.attainable(ai));
    let bound = t(
        lang,
        if roofline.is_memory_bound(ai) {
            "bound.memory"
        } else {
            "bound.compute"
        },
    );
    let mut mistakes = Vec::new();
    if memory < peak {
        mistakes.push(Mistake {
            answer: show_sig(peak, 6),
            feedback: t(lang, "ex.roofline_bound.peak"),
        });
    } else if memory > peak {
        mistakes.push(Mistake {
            answer: show_sig(memory, 6),
            feedback: t(lang, "ex.roofline_bound.memory"),
        });
    }
    if mistakes.is_empty() {
        mistakes.push(Mistake {
            answer: show_sig(answer * 2.0, 6),
            feedback: t(lang, "ex.roofline_bound.memory"),
        });
    }
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.roofline_bound.prompt",
            &[("bw", &bw), ("peak", &peak), ("ai", &ai)],
        ),
        kind: AnswerKind::Number,
        checker: close(answer),
        hints: vec![t(lang, "ex.roofline_bound.hint1"), t(lang, "ex.roofline_bound.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.roofline_bound.explain",
            &[
                ("peak", &peak),
                ("bw", &bw),
                ("ai", &ai),
                ("answer", &show_sig(answer, 6)),
                ("bound", &bound),
            ],
        ),
        reference: show_sig(answer, 6),
        mistakes,
    }
}

fn why_max(seed: u64, lang: Lang) -> Task {
    let at = (seed % 4) as usize;
    let (options, correct) = choice(lang, ["ex.why_subtract_max.a", "ex.why_subtract_max.b", "ex.why_subtract_max.c", "ex.why_subtract_max.d"], at);
    let mistakes = (0..4)
        .filter(|i| *i != correct)
        .map(|i| Mistake {
            answer: (i + 1).to_string(),
            feedback: t(lang, "ex.why_subtract_max.wrong"),
        })
        .collect();
    // The claims are computed, not asserted: exp(100) in f32, and a very
    // negative logit whose exp underflows to 0 (so Σexp can be 0, and 0/0 NaN).
    debug_assert!(100f32.exp().is_infinite());
    debug_assert!((-200f32).exp() == 0.0);
    Task {
        prompt: t(lang, "ex.why_subtract_max.prompt"),
        kind: AnswerKind::Choice { options },
        checker: AnswerChecker::Choice { correct },
        hints: vec![t(lang, "ex.why_subtract_max.hint1"), t(lang, "ex.why_subtract_max.hint2")],
        explanation: t(lang, "ex.why_subtract_max.explain"),
        reference: (correct + 1).to_string(),
        mistakes,
    }
}

fn occupancy(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let threads = 2048u32;
    let regs = 65_536u32;
    let wg = [128u32, 256, 512][rng.random_range(0..3)];
    let per = [32u32, 40, 64, 96, 128][rng.random_range(0..5)];
    let by_threads = threads / wg;
    let by_regs = regs / (per * wg);
    let answer = by_threads.min(by_regs);
    let mut mistakes = Vec::new();
    // Ignoring registers gives the thread limit; when that is already the
    // answer, one more than it is the classic over-count.
    let threads_only = if by_threads == answer {
        answer + 1
    } else {
        by_threads
    };
    mistakes.push(Mistake {
        answer: threads_only.to_string(),
        feedback: t(lang, "ex.occupancy.threads_only"),
    });
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.occupancy.prompt",
            &[
                ("threads", &threads),
                ("regs", &regs),
                ("per", &per),
                ("wg", &wg),
            ],
        ),
        kind: AnswerKind::Number,
        checker: AnswerChecker::Number {
            expected: f64::from(answer),
            abs_tol: 0.0,
            rel_tol: 0.0,
        },
        hints: vec![
            t(lang, "ex.occupancy.hint1"),
            TEXT.fill(
                lang,
                "ex.occupancy.hint2",
                &[
                    ("regs", &regs),
                    ("per", &per),
                    ("wg", &wg),
                    ("threads", &threads),
                ],
            ),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.occupancy.explain",
            &[
                ("by_threads", &by_threads),
                ("by_regs", &by_regs),
                ("answer", &answer),
                ("occupancy", &(100 * answer * wg / threads)),
            ],
        ),
        reference: answer.to_string(),
        mistakes,
    }
}

fn divergence(seed: u64, lang: Lang) -> Task {
    let at = (seed % 4) as usize;
    let (options, correct) = choice(
        lang,
        [
            "ex.divergence_step.a",
            "ex.divergence_step.b",
            "ex.divergence_step.c",
            "ex.divergence_step.d",
        ],
        at,
    );
    // After the swap, "sequential addressing" sits where the correct one started
    // unless the correct one moved onto it.
    let seq_text = t(lang, "ex.divergence_step.b");
    let mistakes = (0..4)
        .filter(|i| *i != correct)
        .map(|i| {
            let key = if options[i] == seq_text {
                "ex.divergence_step.seq"
            } else {
                "ex.divergence_step.other"
            };
            Mistake {
                answer: (i + 1).to_string(),
                feedback: t(lang, key),
            }
        })
        .collect();
    Task {
        prompt: t(lang, "ex.divergence_step.prompt"),
        kind: AnswerKind::Choice { options },
        checker: AnswerChecker::Choice { correct },
        hints: vec![
            t(lang, "ex.divergence_step.hint1"),
            t(lang, "ex.divergence_step.hint2"),
        ],
        explanation: t(lang, "ex.divergence_step.explain"),
        reference: (correct + 1).to_string(),
        mistakes,
    }
}

fn bandwidth(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let mb: f64 = [16.8, 33.6, 67.1, 134.2, 268.4][rng.random_range(0..5)];
    let ms: f64 = [0.05, 0.2, 1.5, 4.0, 12.5][rng.random_range(0..5)];
    let answer = mb / ms;
    Task {
        prompt: TEXT.fill(lang, "ex.effective_bandwidth.prompt", &[("mb", &mb), ("ms", &ms)]),
        kind: AnswerKind::Number,
        checker: close(answer),
        hints: vec![t(lang, "ex.effective_bandwidth.hint1"), t(lang, "ex.effective_bandwidth.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.effective_bandwidth.explain",
            &[("mb", &mb), ("ms", &ms), ("answer", &show_sig(answer, 5))],
        ),
        reference: show_sig(answer, 5),
        mistakes: vec![
            Mistake {
                answer: show_sig(answer * 1000.0, 5),
                feedback: t(lang, "ex.effective_bandwidth.thousand"),
            },
            Mistake {
                answer: show_sig(answer / 1000.0, 5),
                feedback: t(lang, "ex.effective_bandwidth.thousand"),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classic_answers() {
        // 12 bytes an f32 element, 16 for three passes, whatever the draw.
        let mut seed = dlsys_core::exercise::FIRST_SEED;
        for _ in 0..20 {
            let task = online_bytes(seed, Lang::En);
            let numbers: Vec<f64> = task
                .prompt
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|x| x.parse().ok())
                .collect();
            let width = [("f32", 4.0), ("f16", 2.0), ("bf16", 2.0), ("fp8", 1.0)]
                .into_iter()
                .find(|(f, _)| task.prompt.contains(&format!(" {f} ")))
                .map_or(f64::NAN, |(_, w)| w);
            let cols = numbers[0];
            assert!(task.check(&(3.0 * width * cols).to_string()).is_correct(), "{}", task.prompt);
            assert!(task.verdict_text(&task.check(&(4.0 * width * cols).to_string()), Lang::En).contains("three-pass"));
            seed = dlsys_core::exercise::next_seed(seed);
        }
        let div = divergence(0, Lang::En);
        assert!(div.check("1").is_correct());
        assert!(div.verdict_text(&div.check("2"), Lang::En).contains("bank conflicts"));
    }

    #[test]
    fn the_explanations_say_what_they_leave_out() {
        // Subtracting the max also avoids 0/0 on a row of very negative logits.
        let max = why_max(1, Lang::En);
        assert!(max.explanation.contains("0/0"), "{}", max.explanation);
        // The occupancy exercise counts two limits; the explanation names the rest.
        let occ = occupancy(1, Lang::En);
        assert!(occ.explanation.contains("shared memory"), "{}", occ.explanation);
        assert!(!occ.explanation.contains('{'), "{}", occ.explanation);
    }
}
