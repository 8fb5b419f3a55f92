//! The compute-bound side of the ladder: every GEMM rung against the f64
//! reference within |C − Ĉ| ≤ 1e-4 · Σₖ|aᵢₖ|·|bₖⱼ| on hostile shapes, with
//! ±inf and NaN propagating as IEEE says, and at the largest K each rung
//! accepts (one more is refused with the reason); the fusion, access-pattern
//! and FMA kernels against their references; every plan's traffic against
//! the instrumented build's counts. Runs on the software Vulkan adapter in
//! CI; fails (not skips) there without one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dlsys_core::kernels::{
    AccessKind, Data, FusionKind, GemmKind, Kernel, Problem, STRIDES, gemm_inputs, largest_gemm_k,
    plan,
};
use dlsys_shaders::KernelRunner;
use dlsys_shaders::report::{Reference, row};

use crate::support::{run, runner, traffic_mismatch};

/// Runs `kernel` and judges it as the ladder does (its reference, its
/// tolerance); `Err` says what was wrong.
fn check(
    r: &mut KernelRunner,
    kernel: Kernel,
    problem: Problem,
    input: &[f32],
) -> Result<(), String> {
    let out = run(r, kernel, problem, input, false);
    let judged = row(&out, &Reference::compute(kernel, input, problem), None);
    if judged.ok {
        Ok(())
    } else {
        Err(format!(
            "{} {problem:?}: max rel. error {:e}, {} special mismatches",
            kernel.id(),
            judged.max_rel_error,
            judged.special_mismatches
        ))
    }
}

/// Every rung at every tile and block size the adapter runs.
fn gemm_rungs(r: &KernelRunner) -> Vec<GemmKind> {
    GemmKind::EVERY
        .into_iter()
        .filter(|k| r.supports(Kernel::Gemm(*k)).is_ok())
        .filter(|k| plan(Kernel::Gemm(*k), Problem::gemm(1, 1, 1), r.device()).is_ok())
        .collect()
}

#[test]
fn every_gemm_rung_matches_the_reference_on_hostile_shapes() {
    let Some(mut r) = runner("gemm shapes") else {
        return;
    };
    let rungs = gemm_rungs(&r);
    assert!(rungs.len() >= 10, "{rungs:?}");
    let mut failures = Vec::new();
    let shapes = [
        (1, 1, 1),
        (1, 300, 1),
        (300, 1, 1),
        (17, 33, 65),
        (64, 64, 64),
        (65, 68, 20),
        (257, 129, 511),
    ];
    for (m, n, k) in shapes {
        let p = Problem::gemm(m, n, k);
        for specials in [false, true] {
            if specials && m * n * k > 100_000 {
                continue;
            }
            let x = gemm_inputs(p, u64::from(m * 7 + n), specials);
            for kind in &rungs {
                if let Err(why) = check(&mut r, Kernel::Gemm(*kind), p, &x) {
                    failures.push(format!("{why} (specials: {specials})"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_gemm_rung_is_right_at_its_largest_accepted_k() {
    let Some(mut r) = runner("gemm largest k") else {
        return;
    };
    let device = r.device();
    let mut failures = Vec::new();
    for kind in gemm_rungs(&r) {
        let largest = largest_gemm_k(kind, device);
        let refused = plan(Kernel::Gemm(kind), Problem::gemm(3, 5, largest + 1), device);
        if !refused.as_ref().is_err_and(|e| {
            e.to_string().contains("65,535") && e.to_string().contains(&largest.to_string())
        }) {
            failures.push(format!("{kind:?} accepts K = {}: {refused:?}", largest + 1));
        }
        // The vec4 rung's 16-byte path wants N and K multiples of 4.
        let mut shapes = vec![Problem::gemm(3, 5, largest)];
        if matches!(kind, GemmKind::Vec4(_)) {
            shapes.push(Problem::gemm(3, 8, largest / 4 * 4));
        }
        for p in shapes {
            let started = std::time::Instant::now();
            let x = gemm_inputs(p, 9, false);
            let result = check(&mut r, Kernel::Gemm(kind), p, &x);
            eprintln!(
                "gemm/{:<12} 3 × {} by K = {}: {} in {:.2} s",
                kind.id(),
                p.cols,
                p.k,
                if result.is_ok() { "right" } else { "WRONG" },
                started.elapsed().as_secs_f64()
            );
            if let Err(why) = result {
                failures.push(why);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The problems each compute-side kernel is tried on: odd sizes, edges of
/// tiles, rows that do and do not fit in workgroup memory.
fn problems(kernel: Kernel, cache_floats: u32) -> Vec<Problem> {
    match kernel {
        Kernel::Gemm(_) => vec![Problem::gemm(17, 33, 65), Problem::gemm(64, 128, 48)],
        Kernel::Fusion(_) => vec![
            Problem::new(3, 1000),
            Problem::new(2, cache_floats + 7),
            Problem::new(5, 1),
        ],
        Kernel::Access(kind) => [
            Problem::new(17, 33),
            Problem::new(64, 1024),
            Problem::new(3, 5),
        ]
        .into_iter()
        .map(|p| Kernel::Access(kind).problem_for(p))
        .collect(),
        _ => vec![Problem::new(1, 5000), Problem::new(1, 1)],
    }
}

fn compute_side() -> Vec<Kernel> {
    let mut kernels: Vec<Kernel> = GemmKind::EVERY.into_iter().map(Kernel::Gemm).collect();
    kernels.extend(FusionKind::ALL.map(Kernel::Fusion));
    kernels.extend(AccessKind::all().into_iter().map(Kernel::Access));
    kernels.push(Kernel::Fma);
    kernels
}

fn input(kernel: Kernel, problem: Problem, data: Data) -> Vec<f32> {
    match kernel {
        Kernel::Gemm(_) => gemm_inputs(problem, 3, data == Data::Specials),
        Kernel::Fma => vec![0.0],
        Kernel::Access(kind) if kind.is_channel_sum() => {
            data.generate(problem.rows as usize, problem.cols as usize, 4, true)
        }
        _ => data.generate(problem.rows as usize, problem.cols as usize, 4, false),
    }
}

#[test]
fn fusion_access_and_fma_kernels_match_their_references() {
    let Some(mut r) = runner("compute references") else {
        return;
    };
    let mut failures = Vec::new();
    for kernel in compute_side() {
        if matches!(kernel, Kernel::Gemm(_)) || r.supports(kernel).is_err() {
            continue;
        }
        // GELU must stay finite for |x| up to 1e4: huge inputs too.
        let datas: &[Data] = if matches!(kernel, Kernel::Fusion(_)) {
            &[Data::Random, Data::HugeLogits]
        } else {
            &[Data::Random]
        };
        for problem in problems(kernel, r.cache_floats) {
            for data in datas {
                let x = input(kernel, problem, *data);
                if let Err(why) = check(&mut r, kernel, problem, &x) {
                    failures.push(format!("{why} ({})", data.id()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn compute_plans_count_what_the_instrumented_build_counts() {
    let Some(mut r) = runner("compute traffic") else {
        return;
    };
    let mut failures = Vec::new();
    for kernel in compute_side() {
        if r.supports(kernel).is_err() || plan(kernel, Problem::gemm(1, 1, 1), r.device()).is_err()
        {
            continue;
        }
        for problem in problems(kernel, r.cache_floats) {
            let x = input(kernel, problem, Data::Random);
            failures.extend(traffic_mismatch(&mut r, kernel, problem, &x));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn row_loops_are_refused_past_the_budget_with_the_largest_row() {
    let Some(r) = runner("compute budget") else {
        return;
    };
    let device = r.device();
    for kernel in [
        Kernel::Fusion(FusionKind::LayerNormPasses),
        Kernel::Fusion(FusionKind::LayerNormFused),
        Kernel::Access(AccessKind::ChannelNchw),
    ] {
        let huge = Problem {
            rows: 1,
            cols: 200_000_000,
            k: 1,
        };
        let refused = plan(kernel, huge, device);
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.to_string().contains("65,535")),
            "{}: {refused:?}",
            kernel.id()
        );
    }
    // Every stride divides the strided read's length.
    for stride in STRIDES {
        let p = Kernel::Access(AccessKind::Strided(stride)).problem_for(Problem::new(7, 13));
        assert!(plan(Kernel::Access(AccessKind::Strided(stride)), p, device).is_ok());
    }
}
