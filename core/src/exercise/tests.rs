//! The exercise machinery held to its rules: parsing, checking, the
//! self-check and the seeds.

use super::*;

fn number_task() -> Task {
    Task {
        prompt: "fp16 max?".into(),
        kind: AnswerKind::Number,
        checker: AnswerChecker::Number {
            expected: 65504.0,
            abs_tol: 0.0,
            rel_tol: 1e-9,
        },
        hints: vec!["exponent 15".into()],
        explanation: "(2 − 2^-10)·2^15".into(),
        reference: "65504".into(),
        mistakes: vec![Mistake {
            answer: "65536".into(),
            feedback: "that is 2^16, which overflows".into(),
        }],
    }
}

#[test]
fn number_checker_accepts_forms_and_names_mistakes() {
    let task = number_task();
    assert!(task.check("65504").is_correct());
    assert!(task.check("6.5504e4").is_correct());
    assert!(task.check("0x1.ffcp15").is_correct());
    assert_eq!(
        task.check("65536"),
        AnswerVerdict::Wrong { mistake: Some(0) }
    );
    assert_eq!(
        task.verdict_text(&task.check("65536"), Lang::Zh),
        "that is 2^16, which overflows"
    );
    assert_eq!(task.check("65503"), AnswerVerdict::Wrong { mistake: None });
    assert_eq!(
        task.verdict_text(&task.check("65503"), Lang::Zh),
        "不对。可以看看提示。"
    );
    assert!(matches!(
        task.check("six"),
        AnswerVerdict::Unparsable(AnswerError::Unreadable { .. })
    ));
    assert_eq!(
        task.check("  "),
        AnswerVerdict::Unparsable(AnswerError::Empty)
    );
    assert_eq!(
        task.verdict_text(&task.check(""), Lang::Zh),
        "请先输入答案。"
    );
}

#[test]
fn parses_numbers() {
    // The answer reader is `float::parse_number` (tested there); these
    // are the forms a task must accept.
    let answer = |s: &str| parse_answer(&AnswerKind::Number, s);
    assert_eq!(answer("2^-24"), Ok(Answer::Number(2f64.powi(-24))));
    assert_eq!(answer("-0x1p-14"), Ok(Answer::Number(-(2f64.powi(-14)))));
    assert_eq!(answer("1_000"), Ok(Answer::Number(1000.0)));
    assert_eq!(answer("1e-3"), Ok(Answer::Number(1e-3)));
    assert_eq!(answer("0.5"), Ok(Answer::Number(0.5)));
    assert_eq!(answer("-inf"), Ok(Answer::Number(f64::NEG_INFINITY)));
    assert_eq!(answer("0x1.8p-3"), Ok(Answer::Number(0.1875)));
    assert_eq!(answer("0x.8"), Ok(Answer::Number(0.5)));
    assert!(answer("0x").is_err());
    assert!(answer("2^x").is_err());
}

#[test]
fn bits_checker_reads_hex_and_binary_and_rejects_too_wide() {
    let task = Task {
        kind: AnswerKind::Bits { width: 16 },
        checker: AnswerChecker::Bits {
            expected: 0x3c00,
            width: 16,
        },
        reference: "0x3c00".into(),
        mistakes: vec![Mistake {
            answer: "0x3f80".into(),
            feedback: "that is bf16's 1.0".into(),
        }],
        ..number_task()
    };
    assert!(task.check("0b0011_1100_0000_0000").is_correct());
    assert!(task.check("0X3C00").is_correct());
    assert_eq!(
        task.verdict_text(&task.check("0x3f80"), Lang::En),
        "that is bf16's 1.0"
    );
    assert!(matches!(
        task.check("0x13c00"),
        AnswerVerdict::Unparsable(_)
    ));
    assert!(matches!(task.check("0xzz"), AnswerVerdict::Unparsable(_)));
}

#[test]
fn choice_and_text() {
    let options = vec!["fp16".to_owned(), "bf16".to_owned()];
    let task = Task {
        kind: AnswerKind::Choice { options },
        checker: AnswerChecker::Choice { correct: 1 },
        reference: "2".into(),
        mistakes: vec![Mistake {
            answer: "1".into(),
            feedback: "fp16 has 5 exponent bits".into(),
        }],
        ..number_task()
    };
    assert!(task.check("2").is_correct());
    assert!(task.check("BF16").is_correct());
    assert_eq!(
        task.verdict_text(&task.check("fp16"), Lang::En),
        "fp16 has 5 exponent bits"
    );
    assert!(matches!(task.check("3"), AnswerVerdict::Unparsable(_)));
    let text = Task {
        kind: AnswerKind::Text,
        checker: AnswerChecker::Text {
            accepted: vec!["p - y".into()],
            case_sensitive: false,
        },
        reference: "p - y".into(),
        mistakes: vec![Mistake {
            answer: "y - p".into(),
            feedback: "sign".into(),
        }],
        ..number_task()
    };
    assert!(text.check("  P   -  Y ").is_correct());
    assert_eq!(text.verdict_text(&text.check("y - p"), Lang::En), "sign");
}

#[test]
fn self_check_catches_a_broken_checker() {
    fn good(_: u64, _: Lang) -> Task {
        number_task()
    }
    fn broken(_: u64, _: Lang) -> Task {
        Task {
            mistakes: vec![Mistake {
                answer: "65504.00000001".into(),
                feedback: String::new(),
            }],
            ..number_task()
        }
    }
    let title = |_: Lang| String::new();
    let ok = self_check(
        &Exercise {
            id: "good",
            title,
            generate: good,
        },
        1,
    );
    assert!(ok.ok(), "{:?}", ok.problems);
    let bad = self_check(
        &Exercise {
            id: "bad",
            title,
            generate: broken,
        },
        1,
    );
    assert!(!bad.ok());
    assert_eq!(bad.accepted_mistakes, vec!["65504.00000001".to_owned()]);
}

#[test]
fn seeds_step_reproducibly_and_stay_small() {
    let a = next_seed(FIRST_SEED);
    assert_eq!(a, next_seed(FIRST_SEED));
    assert_ne!(a, FIRST_SEED);
    assert!(a < 1_000_000);
    assert_ne!(next_seed(a), a);
}

#[test]
fn progress_records_attempts_and_first_solve_with_their_days() {
    let task = number_task();
    let mut progress = Progress::default();
    let (d1, d2) = (crate::study::Day(20_000), crate::study::Day(20_003));
    let (verdict, newly) = progress.submit("float", "max", &task, "x", d1);
    assert!(matches!(verdict, AnswerVerdict::Unparsable(_)) && !newly);
    assert_eq!(progress.get("float", "max").map(|p| p.attempts), Some(0));
    // A malformed answer is not an attempt, nor a study day.
    assert!(progress.days.is_empty() && progress.dated_since.is_none());
    let (_, newly) = progress.submit("float", "max", &task, "65504", d1);
    assert!(newly);
    let (_, newly) = progress.submit("float", "max", &task, "65504", d2);
    assert!(!newly);
    let entry = progress.get("float", "max").cloned().unwrap_or_default();
    assert_eq!(
        (entry.attempts, entry.solved_on, entry.last_attempt),
        (2, Some(d1), Some(d2))
    );
    assert_eq!(progress.solved_count("float", ["max", "other"]), 1);
    assert_eq!(progress.days.iter().copied().collect::<Vec<_>>(), [d1, d2]);
    assert_eq!(progress.dated_since, Some(d1));
    assert!(progress.visit("float", d2) && !progress.visit("float", d2));
}

#[test]
fn a_merge_loses_nothing_from_either_side() {
    let task = number_task();
    let day = crate::study::Day;
    let mut here = Progress::default();
    here.submit("float", "max", &task, "1", day(10));
    here.submit("float", "min", &task, "65504", day(12));
    here.visit("float", day(12));
    let mut there = Progress::default();
    there.submit("float", "max", &task, "65504", day(11));
    there.submit("float", "min", &task, "65504", day(9));
    there.submit("gemm", "tiles", &task, "65504", day(8));
    there.visit("float", day(11));
    there.visit("gemm", day(8));
    let mut merged = here.clone();
    merged.merge(&there);
    let get = |k: &str| merged.exercises.get(k).cloned().unwrap_or_default();
    assert!(get("float/max").solved && get("float/max").solved_on == Some(day(11)));
    assert_eq!(get("float/max").last_attempt, Some(day(11)));
    // The earlier solve is kept; this side's draft stays.
    assert_eq!(get("float/min").solved_on, Some(day(9)));
    assert!(get("gemm/tiles").solved);
    assert_eq!(merged.visits.get("float"), Some(&day(12)));
    assert_eq!(merged.visits.get("gemm"), Some(&day(8)));
    assert_eq!(merged.days.len(), 5);
    assert_eq!(merged.dated_since, Some(day(8)));
    // Merging twice changes nothing more, and nothing merged is lost.
    let mut again = merged.clone();
    again.merge(&there);
    assert_eq!(again, merged);
    let mut into_there = there.clone();
    into_there.merge(&here);
    assert_eq!(into_there.solved_count("float", ["max", "min"]), 2);
    // A reveal on another variant does not reveal this one; an entry only
    // shown here takes the file's whole.
    let mut revealed = Progress::default();
    let entry = revealed.entry("float", "max");
    (entry.seed, entry.revealed, entry.hints_shown) = (7, true, 2);
    let mut shown = Progress::default();
    shown.entry("float", "max").seed = 1;
    shown.entry("float", "min").seed = 1;
    shown.submit("float", "min", &task, "1", day(3));
    let mut merged = shown.clone();
    merged.merge(&revealed);
    assert_eq!(
        merged.get("float", "max").map(|e| (e.seed, e.revealed)),
        Some((7, true))
    );
    let mut other = revealed.clone();
    other.exercises.insert(
        "float/min".into(),
        ExerciseProgress {
            seed: 9,
            revealed: true,
            ..Default::default()
        },
    );
    merged.merge(&other);
    assert_eq!(
        merged.get("float", "min").map(|e| (e.seed, e.revealed)),
        Some((1, false))
    );
    // Solved there on another variant: that variant comes with it (no
    // explanation shown for a variant never solved), the attempts kept.
    let mut solved_there = Progress::default();
    let entry = solved_there.entry("float", "min");
    (entry.seed, entry.solved, entry.attempts) = (9, true, 1);
    merged.merge(&solved_there);
    let min = merged.get("float", "min").cloned().unwrap_or_default();
    assert_eq!((min.seed, min.solved, min.attempts), (9, true, 1));
}

/// A saved verdict keeps its reason, not a sentence: it reads in the
/// language chosen later, and saves from before verdicts were typed load.
#[test]
fn a_saved_verdict_is_a_reason_rendered_in_any_language() {
    let task = number_task();
    let verdict = task.check("");
    let saved = ron::to_string(&verdict).unwrap_or_default();
    assert!(!saved.contains("Type"), "{saved}");
    let back: AnswerVerdict = ron::from_str(&saved).unwrap_or(AnswerVerdict::Right);
    assert_eq!(back, verdict);
    assert_eq!(task.verdict_text(&back, Lang::Zh), "请先输入答案。");
    let bad: AnswerVerdict = ron::from_str(&ron::to_string(&task.check("x1")).unwrap_or_default())
        .unwrap_or(AnswerVerdict::Right);
    assert!(
        task.verdict_text(&bad, Lang::Zh)
            .chars()
            .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
    );
    for (old, new) in [
        ("Correct(feedback: \"Correct.\")", AnswerVerdict::Right),
        (
            "Incorrect(feedback: \"Not quite.\")",
            AnswerVerdict::Wrong { mistake: None },
        ),
        (
            "Malformed(message: \"Type an answer first.\")",
            AnswerVerdict::Unparsable(AnswerError::NotKept),
        ),
    ] {
        assert_eq!(ron::from_str::<AnswerVerdict>(old).ok(), Some(new), "{old}");
    }
}
