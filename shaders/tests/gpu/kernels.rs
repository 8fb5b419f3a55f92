//! Every memory-bound kernel (copy, softmax, reductions) against the CPU
//! reference on adversarial shapes and values, and every plan's traffic
//! model against the instrumented build's counts (the compute-bound side:
//! `compute_kernels.rs`). Runs on the software Vulkan adapter in CI; fails
//! (not skips) there without one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{run, runner, traffic_mismatch};
use dlsys_core::kernels::{
    Data, Kernel, Problem, ReduceKind, ReduceOp, SoftmaxKind, compare, reduce_reference,
    relative_error, softmax_reference,
};
use dlsys_shaders::{KernelRunner, RunSpec};

/// The kernels this file tests.
fn memory_bound() -> impl Iterator<Item = Kernel> {
    Kernel::all()
        .into_iter()
        .filter(|k| matches!(k, Kernel::Copy | Kernel::Softmax(_) | Kernel::Reduce(..)))
}

fn softmax_kinds(r: &KernelRunner) -> Vec<SoftmaxKind> {
    SoftmaxKind::ALL
        .into_iter()
        .filter(|k| r.supports(Kernel::Softmax(*k)).is_ok())
        .collect()
}

#[test]
fn softmax_variants_match_the_reference_on_adversarial_inputs() {
    let Some(mut r) = runner("softmax") else {
        return;
    };
    let wide = r.cache_floats as usize + 1; // forces the re-reading fallback
    let shapes = [
        (1, 1),
        (3, 2),
        (2, 255),
        (2, 256),
        (2, 257),
        (5, 1023),
        (4, 1025),
        (2, wide),
        (1, 5000),
        (65_537, 2),
    ];
    let mut failures = Vec::new();
    for (rows, cols) in shapes {
        for data in Data::ALL {
            let x = data.generate(rows, cols, 7, false);
            let want = softmax_reference(&x, rows, cols);
            for kind in softmax_kinds(&r) {
                let problem = Problem::new(rows as u32, cols as u32);
                let got = run(&mut r, Kernel::Softmax(kind), problem, &x, false).output;
                let c = compare(&got, &want);
                let expected_to_overflow =
                    kind == SoftmaxKind::NaiveUnsafe && data == Data::HugeLogits;
                if expected_to_overflow {
                    // The point of keeping it: exp(1e4) is inf, and inf/inf is NaN.
                    if c.special_mismatches == 0 {
                        failures.push(format!(
                            "naive softmax did not overflow on huge logits ({rows}×{cols})"
                        ));
                    }
                } else if !c.ok(1e-5) {
                    failures.push(format!("{} {rows}×{cols} {}: {c:?}", kind.id(), data.id()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn reductions_match_the_reference() {
    let Some(mut r) = runner("reduce") else {
        return;
    };
    let mut failures = Vec::new();
    for n in [1usize, 2, 255, 256, 257, 511, 513, 65_535, 65_537, 1 << 22] {
        let datas: &[Data] = if n == 1 << 22 {
            &[Data::Random]
        } else {
            &[Data::Random, Data::Specials]
        };
        for data in datas {
            let x = data.generate(1, n, 11, true);
            for op in [ReduceOp::Sum, ReduceOp::Max] {
                let want = reduce_reference(&x, op);
                for kind in ReduceKind::ALL {
                    let kernel = Kernel::Reduce(kind, op);
                    if r.supports(kernel).is_err() {
                        continue;
                    }
                    let got = f64::from(
                        run(&mut r, kernel, Problem::new(1, n as u32), &x, false).output[0],
                    );
                    let tolerance = if op == ReduceOp::Sum { 1e-5 } else { 0.0 };
                    let err = relative_error(got, want);
                    if err > tolerance || got.is_nan() != want.is_nan() {
                        failures.push(format!(
                            "{} n={n} {}: got {got}, want {want} (rel {err:e})",
                            kernel.id(),
                            data.id()
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn instrumented_counts_equal_the_traffic_model() {
    let Some(mut r) = runner("traffic") else {
        return;
    };
    let mut failures = Vec::new();
    for kernel in memory_bound() {
        if r.supports(kernel).is_err() {
            continue;
        }
        let problems: Vec<Problem> = match kernel {
            Kernel::Softmax(_) => vec![Problem::new(3, 1000), Problem::new(2, r.cache_floats + 7)],
            _ => vec![Problem::new(1, 4096), Problem::new(1, 300_004)],
        };
        for problem in problems {
            let x = Data::Random.generate(problem.rows as usize, problem.cols as usize, 1, true);
            failures.extend(traffic_mismatch(&mut r, kernel, problem, &x));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn copy_copies_and_trials_are_timed() {
    let Some(mut r) = runner("copy") else { return };
    let x = Data::Random.generate(1, 1 << 16, 3, false);
    let spec = RunSpec {
        kernel: Kernel::Copy,
        problem: Problem::new(1, 1 << 16),
        warmup: 2,
        trials: 5,
        instrumented: false,
    };
    let out = r.start(spec, &x).and_then(|j| j.wait()).unwrap();
    assert_eq!(out.output, x);
    assert_eq!(out.trial_ns.len(), 5);
    assert!(out.median_ns() > 0.0, "{:?}", out.trial_ns);
}

#[test]
fn bad_requests_are_errors_not_panics() {
    let Some(mut r) = runner("bad requests") else {
        return;
    };
    let spec = |cols| RunSpec {
        kernel: Kernel::Softmax(SoftmaxKind::Online),
        problem: Problem::new(1, cols),
        warmup: 0,
        trials: 1,
        instrumented: false,
    };
    assert!(r.start(spec(0), &[]).is_err());
    assert!(r.start(spec(4), &[1.0, 2.0]).is_err());
    let huge = Problem::new(1, u32::MAX / 8);
    let spec = RunSpec {
        kernel: Kernel::Copy,
        problem: huge,
        warmup: 0,
        trials: 1,
        instrumented: false,
    };
    assert!(r.start(spec, &[]).is_err());
}

/// Every kernel at the largest size it accepts on this adapter — the loop
/// budget's limit for softmax rows, what one buffer holds for the others —
/// matches its reference, and one column more is refused with the reason.
#[test]
fn every_kernel_is_right_at_its_largest_accepted_size() {
    let Some(mut r) = runner("largest") else {
        return;
    };
    let device = r.device();
    let limit = r.max_elements();
    let mut failures = Vec::new();
    let kernels = memory_bound().filter(|k| !matches!(k, Kernel::Reduce(_, ReduceOp::Max)));
    for kernel in kernels {
        if r.supports(kernel).is_err() {
            continue;
        }
        let largest = dlsys_core::kernels::largest_accepted(kernel, device, limit);
        // A kernel that takes wider rows of whole vec4s runs at both limits.
        let vec4 = dlsys_core::kernels::largest_accepted_vec4(kernel, device, limit);
        for (largest, step) in std::iter::once((largest, 1)).chain(vec4.map(|v| (v, 4))) {
            let mut cols = u32::try_from(largest).unwrap();
            // Past the vec4 limit one vec4 more is refused; below it, the
            // widest row that is no multiple of 4 runs and the next is refused.
            let scalar = step == 1 && vec4.is_some();
            let mut wider = cols + step as u32;
            if scalar && cols.is_multiple_of(4) {
                cols -= 1;
            }
            if scalar && wider.is_multiple_of(4) {
                wider += 1;
            }
            if largest + step <= limit {
                let more = Problem::new(1, wider);
                let refused = dlsys_core::kernels::plan(kernel, more, device);
                if !refused
                    .as_ref()
                    .is_err_and(|e| e.to_string().contains("65,535"))
                {
                    failures.push(format!("{} accepts {more:?}: {refused:?}", kernel.id()));
                }
            }
            let problem = Problem::new(1, cols);
            let x =
                Data::Random.generate(1, cols as usize, 5, matches!(kernel, Kernel::Reduce(..)));
            let started = std::time::Instant::now();
            let got = run(&mut r, kernel, problem, &x, false).output;
            let ok = match kernel {
                Kernel::Copy => got == x,
                Kernel::Softmax(_) => {
                    let c = compare(&got, &softmax_reference(&x, 1, cols as usize));
                    c.ok(1e-5)
                }
                Kernel::Reduce(_, op) => {
                    relative_error(f64::from(got[0]), reduce_reference(&x, op)) < 1e-5
                }
                _ => false,
            };
            eprintln!(
                "{:<26} 1 × {cols}: {} in {:.2} s",
                kernel.id(),
                if ok { "right" } else { "WRONG" },
                started.elapsed().as_secs_f64()
            );
            if !ok {
                failures.push(format!("{} wrong at 1 × {cols}", kernel.id()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
