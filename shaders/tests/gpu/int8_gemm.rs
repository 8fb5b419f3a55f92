//! The int8 GEMM's two rungs on the GPU: bit for bit against the core's
//! integer reference on hostile shapes (K = 1, K not a multiple of 4, M and
//! N off the workgroup), at the largest K an int32 holds on the worst input
//! (every value −128: the sum is 2³¹ − 2¹⁴), one past it refused, and the
//! instrumented build's count equal to the traffic model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dlsys_core::kernels::Problem;
use dlsys_core::quant::QuantError;
use dlsys_core::quant::gemm::{GemmShape, Int8Kernel, MAX_K, seeded_operands};
use dlsys_shaders::int8_gemm::program;
use dlsys_shaders::ladder::{Inputs, Ladder, Outcome};
use dlsys_shaders::{Job, Program};

fn run(programs: Vec<Program>) -> Vec<Outcome> {
    let Some(mut runner) = crate::support::runner("int8_gemm") else {
        return Vec::new();
    };
    Ladder::with_inputs(Vec::new(), Problem::new(1, 1), Inputs::shared(vec![0.0]), 1)
        .with_programs(programs)
        .run_blocking(&mut runner)
}

fn assert_exact(outcomes: &[Outcome], what: &str) {
    for o in outcomes {
        let row = o.program().unwrap_or_else(|| panic!("{what}: {o:?}"));
        assert!(row.check.ok, "{what}: {} {:?}", row.id, row.check);
    }
}

#[test]
fn both_rungs_are_exact_on_hostile_shapes() {
    let shapes = [
        (1, 1, 1),
        (3, 5, 5),
        (7, 9, 13),
        (65, 3, 4),
        (2, 70, 31),
        (1, 1, 3),
    ];
    let mut programs = Vec::new();
    for (seed, &(m, n, k)) in shapes.iter().enumerate() {
        let shape = GemmShape::new(m, n, k).unwrap();
        let (mut a, b) = seeded_operands(shape, seed as u64);
        // A row of −128: the one value whose negation int8 cannot hold.
        a[..k as usize].fill(-128);
        for kernel in Int8Kernel::ALL {
            programs.push(program(kernel, shape, &a, &b).unwrap());
        }
    }
    let outcomes = run(programs);
    if outcomes.is_empty() {
        return;
    }
    assert_eq!(outcomes.len(), 2 * shapes.len());
    assert_exact(&outcomes, "hostile shapes");
}

#[test]
fn the_largest_k_is_exact_on_the_worst_input_and_one_more_is_refused() {
    let shape = GemmShape::new(1, 2, MAX_K).unwrap();
    let a = vec![-128i8; MAX_K as usize];
    let b = vec![-128i8; 2 * MAX_K as usize];
    let programs: Vec<Program> = Int8Kernel::ALL
        .iter()
        .map(|&kernel| program(kernel, shape, &a, &b).unwrap())
        .collect();
    let outcomes = run(programs);
    if !outcomes.is_empty() {
        assert_exact(&outcomes, "K = MAX_K");
    }
    assert_eq!(
        GemmShape::new(1, 2, MAX_K + 1),
        Err(QuantError::GemmK {
            k: MAX_K + 1,
            max: MAX_K
        })
    );
}

#[test]
fn the_instrumented_build_counts_the_traffic_model() {
    let Some(mut runner) = crate::support::runner("int8_gemm_counted") else {
        return;
    };
    let shape = GemmShape::new(9, 67, 23).unwrap();
    let (a, b) = seeded_operands(shape, 11);
    for kernel in Int8Kernel::ALL {
        let p = program(kernel, shape, &a, &b).unwrap();
        let out = runner
            .start_program(&p, 0, 1, true)
            .and_then(Job::wait)
            .unwrap();
        assert_eq!(
            out.counted,
            Some((p.traffic.bytes_read, p.traffic.bytes_written)),
            "{}",
            kernel.id()
        );
        assert!(p.check(&out.words).ok, "{}", kernel.id());
    }
}
