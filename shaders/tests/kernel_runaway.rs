//! A learner's kernel that never finishes: the check gives up after its time
//! budget, says so, abandons the device the kernel still occupies, and the
//! next check runs on a fresh one. (Its own test binary: the runaway kernel
//! keeps a CPU core of the software driver busy until the process ends.)
//! llvmpipe caps one loop at 65,535 iterations, so the runaway kernel nests
//! two: 65,535² iterations for each of 256 invocations is hours of work.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dlsys_shaders::exercises::{Checker, Verdict, exercise};

/// A kernel that runs for about 8 s on llvmpipe (the checker gives it 1 s). (A truly endless `loop {}` is
/// not possible there: llvmpipe stops any shader after 65,535 loop
/// iterations. So the loop runs that cap, each iteration a long chain of
/// transcendental functions no compiler can fold; on a hardware GPU an
/// endless loop takes exactly the same path through the checker.)
fn runaway() -> String {
    let body = "        v = sin(v) * 0.75 + cos(v * 1.5) + exp(-v * v);\n".repeat(150);
    format!(
        "struct Params {{ rows: u32, cols: u32, n: u32, neg_inf: f32 }}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32) {{
    var v = x[0] + f32(tid);
    loop {{
{body}        if (v > 1e30) {{
            break;
        }}
    }}
    y[0] = v;
}}
"
    )
}

#[test]
fn an_endless_kernel_times_out_and_the_device_is_replaced() {
    let mut c = match Checker::request_blocking() {
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
    let verdict = c.check_blocking(ex, &runaway());
    assert!(matches!(verdict, Verdict::TimedOut { .. }), "{verdict:?}");
    assert!(verdict.message().contains("did not finish within 1000 ms"));
    assert!(
        started.elapsed().as_secs() < 30,
        "the check itself must not hang"
    );
    assert!(!c.needs_recovery(), "check_blocking recovers by itself");
    let verdict = c.check_blocking(ex, ex.reference);
    assert!(verdict.passed(), "after recovery: {}", verdict.message());
}
