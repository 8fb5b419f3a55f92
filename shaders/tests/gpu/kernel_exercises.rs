//! The WGSL exercises' checker: every reference passes, every known-wrong
//! kernel fails with a message naming its mistake, every template (as given)
//! fails, and broken or mis-bound kernels get a diagnostic instead of a panic.
//! Runs on the software Vulkan adapter in CI; fails (not skips) there without one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dlsys_shaders::kernel_track::{EXERCISES, KernelChecker, KernelVerdict, exercise, validate};

fn checker(test: &str) -> Option<KernelChecker> {
    match KernelChecker::request_blocking() {
        Ok(c) => Some(c),
        Err(err) => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "{test}: CI=true but no GPU adapter: {err}");
            eprintln!("SKIPPED (not CI, no GPU adapter): {test}: {err}");
            None
        }
    }
}

/// Every reference passes and every known-wrong kernel fails naming its
/// mistake, with one case on the device at a time (native) and with
/// several queued at once (the web's way): the same verdicts either way.
#[test]
fn references_pass_and_known_wrong_kernels_fail_naming_the_mistake() {
    let Some(mut c) = checker("references") else {
        return;
    };
    for in_flight in [1, 4] {
        c.in_flight = in_flight;
        for ex in &EXERCISES {
            let verdict = c.check_blocking(ex, &ex.reference());
            assert!(
                verdict.passed(),
                "{} reference ({in_flight} in flight): {verdict}",
                ex.id
            );
            for wrong in ex.wrong {
                let verdict = c.check_blocking(ex, &ex.wrong_source(wrong));
                assert!(
                    matches!(verdict, KernelVerdict::Mismatch(_)),
                    "{} / {} ({in_flight} in flight): {verdict:?}",
                    ex.id,
                    wrong.name
                );
                assert!(
                    verdict.to_string().contains(wrong.expect),
                    "{} / {}: message `{verdict}` does not mention {:?}",
                    ex.id,
                    wrong.name,
                    wrong.expect
                );
            }
            let verdict = c.check_blocking(ex, &ex.template(dlsys_core::text::Lang::En));
            assert!(
                matches!(verdict, KernelVerdict::Mismatch(_)),
                "{} template must compile and fail: {verdict:?}",
                ex.id
            );
        }
    }
}

#[test]
fn a_broken_kernel_gets_a_diagnostic_at_its_line() {
    let ex = exercise("sum_reduction").unwrap();
    let broken = ex
        .template(dlsys_core::text::Lang::En)
        .replace("y[0] = 0.0;", "y[0] = 0u;");
    let line = broken
        .lines()
        .position(|l| l.contains("y[0] = 0u;"))
        .unwrap() as u32
        + 1;
    let err = validate(ex, &broken).unwrap_err();
    assert_eq!(err.line, Some(line), "{err}");
    let syntax = ex
        .template(dlsys_core::text::Lang::En)
        .replace("fn main(", "fn main(,");
    let err = validate(ex, &syntax).unwrap_err();
    assert!(err.line.is_some(), "{err}");
    let wrong_size = ex
        .reference()
        .replace("@workgroup_size(256)", "@workgroup_size(64)");
    let err = validate(ex, &wrong_size).unwrap_err();
    assert!(err.message.contains("@workgroup_size(256)"), "{err}");
}

#[test]
fn bindings_the_harness_does_not_provide_are_reported_by_the_device() {
    let Some(mut c) = checker("bindings") else {
        return;
    };
    let ex = exercise("sum_reduction").unwrap();
    // naga accepts this; the pipeline layout does not (x is read-only there).
    let source = ex
        .reference()
        .replace("var<storage, read> x", "var<storage, read_write> x");
    let verdict = c.check_blocking(ex, &source);
    assert!(matches!(verdict, KernelVerdict::Invalid(_)), "{verdict:?}");
    // The checker still works afterwards.
    assert!(c.check_blocking(ex, &ex.reference()).passed());
}

#[test]
fn a_passing_kernel_races_the_built_in_ladder() {
    let Some(c) = checker("race") else {
        return;
    };
    let ex = exercise("safe_softmax").unwrap();
    let race = dlsys_shaders::kernel_track::race_blocking(
        c.gpu().unwrap(),
        ex,
        &ex.reference(),
        2,
        web_time::Duration::from_secs(30),
    )
    .unwrap();
    assert_eq!(race.problem.to_string(), "1024 × 1024");
    let names: Vec<&str> = race.laps.iter().map(|l| l.kernel.as_str()).collect();
    for kernel in ["yours", "copy", "softmax/three-pass", "softmax/online"] {
        assert!(names.contains(&kernel), "{names:?}");
    }
    assert!((1..=race.laps.len()).contains(&race.rank()));
    assert!(
        race.laps
            .windows(2)
            .all(|w| w[0].median_ns <= w[1].median_ns)
    );
    assert!(
        race.laps
            .iter()
            .all(|l| l.median_ns > 0.0 && l.gb_per_s > 0.0)
    );
}

/// Loops that never end are named by their line: the guard counts every
/// loop's iterations (llvmpipe would otherwise end them after 65,535 and the
/// kernel would only look wrong). On a driver without that cap the time
/// budget answers instead.
#[test]
fn an_endless_loop_is_named_by_its_line() {
    let Some(mut c) = checker("endless") else {
        return;
    };
    c.budget = web_time::Duration::from_millis(3000);
    let ex = exercise("sum_reduction").unwrap();
    let reference = ex.reference();
    let header = "    for (var i = tid; i < params.n; i += 256u) {";
    assert!(reference.contains(header));
    let endless = [
        (
            "loop {}",
            reference.replace(header, &format!("    loop {{}}\n{header}")),
        ),
        (
            "while (true) {}",
            reference.replace(header, &format!("    while (true) {{}}\n{header}")),
        ),
        (
            "an index that never changes",
            reference.replace(header, "    for (var i = tid; i < params.n; i += 0u) {"),
        ),
    ];
    let llvmpipe = c
        .gpu()
        .is_some_and(|g| g.adapter_info.name.contains("llvmpipe"));
    for (what, source) in endless {
        let line = source
            .lines()
            .position(|l| {
                l.trim_start().starts_with("loop {}")
                    || l.contains("while (true)")
                    || l.contains("i += 0u")
            })
            .unwrap() as u32
            + 1;
        let verdict = c.check_blocking(ex, &source);
        match &verdict {
            KernelVerdict::EndlessLoop { line: got, .. } => {
                assert_eq!(*got, line, "{what}: {verdict}");
                assert!(
                    verdict
                        .to_string()
                        .contains(&format!("the loop at line {line} does not end"))
                );
                // The learner's language names the same line.
                let zh =
                    dlsys_core::errors::Localized::message(&verdict, dlsys_core::text::Lang::Zh);
                assert!(zh.contains(&format!("第 {line} 行的循环不会结束")), "{zh}");
            }
            KernelVerdict::TimedOut { .. } if !llvmpipe => {}
            other => panic!("{what}: {other:?}"),
        }
    }
    // The checker is fine afterwards.
    assert!(c.check_blocking(ex, &reference).passed());
}
