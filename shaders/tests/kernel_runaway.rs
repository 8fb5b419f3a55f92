//! A learner's kernel that never finishes: the check gives up after its time
//! budget, says so, abandons the device the kernel still occupies, and the
//! next check runs on a fresh one. (Its own test binary: the runaway kernel
//! keeps a CPU core of the software driver busy until the process ends.)
//! (See [`runaway_kernel`] for why it is long rather than endless.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dlsys_shaders::kernel_track::{KernelChecker, KernelVerdict, exercise, runaway_kernel};

#[test]
fn an_endless_kernel_times_out_and_the_device_is_replaced() {
    let mut c = match KernelChecker::request_blocking() {
        Ok(c) => c,
        Err(err) => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "CI=true but no GPU adapter: {err}");
            eprintln!("SKIPPED (not CI, no GPU adapter): {err}");
            return;
        }
    };
    c.budget = web_time::Duration::from_millis(1000);
    let ex = exercise("sum_reduction").unwrap();
    let started = std::time::Instant::now();
    let verdict = c.check_blocking(ex, &runaway_kernel());
    assert!(
        matches!(verdict, KernelVerdict::TimedOut { .. }),
        "{verdict:?}"
    );
    assert!(
        verdict
            .to_string()
            .contains("did not finish within 1000 ms")
    );
    assert!(
        started.elapsed().as_secs() < 30,
        "the check itself must not hang"
    );
    assert!(!c.needs_recovery(), "check_blocking recovers by itself");
    let verdict = c.check_blocking(ex, &ex.reference());
    assert!(verdict.passed(), "after recovery: {verdict}");
}
