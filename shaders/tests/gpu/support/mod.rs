//! What the GPU kernel tests share: a runner on the default adapter (a
//! failure, not a skip, when CI=true and there is none) and one run.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use dlsys_core::kernels::{Kernel, Problem};
use dlsys_shaders::{Gpu, KernelRunner, RunOutput, RunSpec};

pub fn runner(test: &str) -> Option<KernelRunner> {
    match Gpu::request_blocking() {
        Ok(gpu) => Some(KernelRunner::new(gpu)),
        Err(err) => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "{test}: CI=true but no GPU adapter: {err}");
            eprintln!("SKIPPED (not CI, no GPU adapter): {test}: {err}");
            None
        }
    }
}

/// One run of `kernel` on `problem` (warm-up 0, one trial); panics with
/// the kernel's id on an error.
pub fn run(
    r: &mut KernelRunner,
    kernel: Kernel,
    problem: Problem,
    input: &[f32],
    instrumented: bool,
) -> RunOutput {
    let spec = RunSpec {
        kernel,
        problem,
        warmup: 0,
        trials: 1,
        instrumented,
    };
    r.start(spec, input)
        .and_then(|job| job.wait())
        .unwrap_or_else(|e| panic!("{}: {e}", kernel.id()))
}

/// Runs the instrumented build of `kernel` once: `Some` with what differs
/// when the bytes it counted are not the plan's traffic model.
pub fn traffic_mismatch(
    r: &mut KernelRunner,
    kernel: Kernel,
    problem: Problem,
    input: &[f32],
) -> Option<String> {
    let out = run(r, kernel, problem, input, true);
    let counted = out.counted.unwrap();
    let model = (out.traffic.bytes_read, out.traffic.bytes_written);
    (counted != model).then(|| {
        format!(
            "{} {problem:?}: counted {counted:?}, model {model:?}",
            kernel.id()
        )
    })
}
