//! The write-a-kernel lesson's tests.
use super::help::{REVEAL_AFTER, hints};
use super::*;

#[test]
fn the_state_round_trips() {
    let mut lesson = WriteKernels::default();
    let ex = &EXERCISES[1];
    lesson.saved.selected = ex.id.to_owned();
    lesson.code_mut(ex, Lang::En).push_str("\n// mine\n");
    lesson.saved.passed.insert(ex.id.to_owned());
    let text = lesson.save_state().unwrap_or_default();
    let mut restored = WriteKernels::default();
    assert!(restored.load_state(&text).is_ok());
    assert_eq!(restored.saved, lesson.saved);
    assert!(restored.load_state("not ron").is_err());
}

#[test]
fn every_exercise_has_two_hints_in_both_languages() {
    for ex in &EXERCISES {
        assert_eq!(hints(ex, Lang::En).len(), 2, "{}", ex.id);
        assert_eq!(hints(ex, Lang::Zh).len(), 2, "{}", ex.id);
        assert_ne!(hints(ex, Lang::En), hints(ex, Lang::Zh), "{}", ex.id);
    }
}

#[test]
fn the_reference_unlocks_after_failed_checks_and_leaves_the_code_alone() {
    let gpu = GpuStatus::Unavailable {
        reason: crate::NoGpu::NotWgpu,
    };
    let env = Env {
        gpu: &gpu,
        lang: Lang::En,
    };
    let mut lesson = WriteKernels::default();
    let ex = &EXERCISES[0];
    lesson.code_mut(ex, Lang::En).push_str("\n// mine\n");
    let mine = lesson.code_mut(ex, Lang::En).clone();
    for failed in 1..=REVEAL_AFTER {
        assert!(!lesson.can_reveal(ex));
        lesson.check(ex, "not wgsl".to_owned(), &env);
        assert_eq!(lesson.failures(ex), failed);
    }
    assert!(lesson.can_reveal(ex));
    lesson.revealed.insert(ex.id);
    // A valid kernel with no device to run it is no failure.
    lesson.check(ex, ex.reference(), &env);
    assert_eq!(lesson.failures(ex), REVEAL_AFTER);
    assert_eq!(lesson.saved.code.get(ex.id), Some(&mine));
}

#[test]
fn a_verdict_goes_stale_when_the_code_changes() {
    let gpu = GpuStatus::Unavailable {
        reason: crate::NoGpu::NotWgpu,
    };
    let env = Env {
        gpu: &gpu,
        lang: Lang::En,
    };
    let mut lesson = WriteKernels::default();
    let ex = &EXERCISES[1];
    lesson.start_check(ex, &env);
    let code = lesson.code_mut(ex, Lang::En).clone();
    assert!(lesson.shown.is_some());
    assert!(!lesson.verdict_is_stale(ex, &code));
    let edited = format!("{code}\n// edited\n");
    assert!(lesson.verdict_is_stale(ex, &edited));
    // Another exercise's verdict is not this one's.
    assert!(!lesson.verdict_is_stale(&EXERCISES[2], &edited));
}
