//! Generated fusion kernels on the adapter: random elementwise chains of
//! one to eight ops (a fixed seed) on hostile inputs (±inf, NaN, ±1e30,
//! subnormals, zeros) at awkward sizes (1, 2^k ± 1, past 65,535
//! workgroups), each validated by naga, run, and checked against the
//! chain's CPU meaning within 1e-5 relative to max(|want|, 0.1); the
//! instrumented build's byte counts equal the traffic model; and the
//! groups the fusion pass finds in a captured MLP step, run on the values
//! of its replay; chains that normalise rows (LayerNorm); the generated
//! kernels for the hand-written GELU and LayerNorm rungs' chains, byte for
//! byte; and the fused step run end to end against the eager one.

use dlsys_core::compile::capture::{capture, slots};
use dlsys_core::compile::chain::{Chain, ChainError, ChainOp, Extra};
use dlsys_core::compile::fuse::fuse;
use dlsys_core::compile::overhead::batch;
use dlsys_core::compile::replay::{layout_keeping_all, run, value};
use dlsys_core::nn::{Activation, Mlp};
use dlsys_shaders::codegen::{CodegenError, program, validated, wgsl};
use dlsys_shaders::kernel_track::parse_and_validate;
use rand::{RngExt as _, SeedableRng as _};

fn random_chain(rng: &mut rand::rngs::StdRng) -> Chain {
    let len = rng.random_range(1..=8);
    let mut chain = Chain {
        extras: Vec::new(),
        ops: Vec::new(),
    };
    for _ in 0..len {
        // x, y, the counters and at most five extra inputs: eight buffers.
        let room = chain.extras.len() < 5;
        let kind = if rng.random_bool(0.5) {
            Extra::Full
        } else {
            Extra::Row
        };
        let extra = |chain: &mut Chain| {
            chain.extras.push(kind);
            chain.extras.len() - 1
        };
        let which = if room {
            rng.random_range(0..11)
        } else {
            rng.random_range(2..8)
        };
        let scale = rng.random_range(-2.0..2.0);
        let op = match which {
            0 => ChainOp::Add(extra(&mut chain)),
            1 => ChainOp::Mul(extra(&mut chain)),
            2 if rng.random_bool(0.5) => ChainOp::Scale(scale),
            2 => ChainOp::Shift(scale),
            3 => ChainOp::Relu,
            4 => ChainOp::Gelu,
            5 => ChainOp::Tanh,
            6 => ChainOp::Sigmoid,
            7 => ChainOp::Exp,
            8 => ChainOp::ReluGrad(extra(&mut chain)),
            9 => ChainOp::TanhGrad(extra(&mut chain)),
            _ => ChainOp::SigmoidGrad(extra(&mut chain)),
        };
        chain.ops.push(op);
    }
    chain
}

/// No subnormals: WGSL lets a device flush them to zero, so a ReLU mask
/// of 1e-40 may pass or stop a gradient there.
const HOSTILE: [f32; 8] = [
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    1e30,
    -1e30,
    0.0,
    -0.0,
    -3.5,
];

/// Values in [−4, 4) with a hostile one every seventh, placed differently
/// in each buffer (`shift`) so that NaN meets 1e30, inf meets 0, …
fn values(n: usize, shift: usize, rng: &mut rand::rngs::StdRng) -> Vec<f32> {
    (0..n)
        .map(|i| {
            if i % 7 == 3 {
                HOSTILE[(i / 7 + shift) % HOSTILE.len()]
            } else {
                rng.random_range(-4.0..4.0)
            }
        })
        .collect()
}

#[test]
fn random_chains_validate_run_and_match_the_cpu_on_hostile_inputs() {
    let Some(mut runner) = crate::support::runner("fusion_codegen") else {
        return;
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x0f05e);
    // The last size needs a second row of workgroups (65,535 × 64 + 1).
    let sizes = [1, 2, 63, 65, 1023, 4097, 65_535 * 64 + 1];
    for case in 0..24 {
        let chain = random_chain(&mut rng);
        let n = sizes[case % sizes.len()];
        let cols = [1, 3, 64, 100][case % 4].min(n);
        let x = values(n, 0, &mut rng);
        let extras: Vec<Vec<f32>> = (0..chain.extras.len())
            .map(|k| {
                let v = values(chain.extra_len(k, n, cols), 3 * k + 1, &mut rng);
                // A backward op's extra input is its activation's output:
                // tanh's in [−1, 1], the sigmoid's in [0, 1] (NaN stays
                // NaN). Never ±inf, where WGSL leaves a product like
                // inf · −inf to the implementation (lavapipe gives NaN).
                let activation = chain.ops.iter().find_map(|o| match o {
                    ChainOp::TanhGrad(j) if *j == k => Some(ChainOp::Tanh),
                    ChainOp::SigmoidGrad(j) if *j == k => Some(ChainOp::Sigmoid),
                    _ => None,
                });
                match activation {
                    Some(a) => v.iter().map(|x| a.apply(*x, 0.0)).collect(),
                    None => v,
                }
            })
            .collect();
        let p = program(&chain, x, extras, cols).unwrap_or_else(|e| panic!("{chain:?}: {e:?}"));
        let out = runner
            .start_program(&p, 0, 1, true)
            .and_then(dlsys_shaders::Job::wait)
            .unwrap_or_else(|e| panic!("{}: {e}", p.id));
        let checked = p.check(&out.words);
        assert!(
            checked.ok,
            "{} at n = {n}, cols {cols}: {checked:?}\n{}",
            p.id, p.source
        );
        assert_eq!(
            out.counted,
            Some((p.traffic.bytes_read, p.traffic.bytes_written)),
            "{}: instrumented count vs the traffic model",
            p.id
        );
    }
}

#[test]
fn a_malformed_chain_is_refused_before_any_gpu_work() {
    let chain = Chain {
        extras: Vec::new(),
        ops: vec![ChainOp::Add(0)],
    };
    assert!(program(&chain, vec![1.0], Vec::new(), 1).is_err());
    let fine = Chain {
        extras: vec![Extra::Row],
        ops: vec![ChainOp::Add(0), ChainOp::Gelu],
    };
    assert!(
        program(&fine, Vec::new(), vec![vec![]], 1).is_err(),
        "no elements"
    );
    // Six extra inputs: nine buffers, past what a kernel binds.
    let wide = Chain {
        extras: vec![Extra::Full; 6],
        ops: (0..6).map(ChainOp::Add).collect(),
    };
    assert!(matches!(
        validated(&wide, 4, 4, false),
        Err(CodegenError::TooManyBuffers { buffers: 9, max: 8 })
    ));
    // A scale with no WGSL literal is written by its bits.
    let nan = Chain {
        extras: Vec::new(),
        ops: vec![ChainOp::Scale(f32::NAN), ChainOp::Scale(f32::INFINITY)],
    };
    validated(&nan, 3, 3, true).unwrap();
    // Every op's text is valid WGSL in both builds.
    for instrumented in [false, true] {
        parse_and_validate(&wgsl(&fine, 10, 5, instrumented)).unwrap();
    }
}

#[test]
fn the_groups_fused_in_a_captured_step_run_on_the_gpu_as_on_the_cpu() {
    let Some(mut runner) = crate::support::runner("fusion_groups") else {
        return;
    };
    for activation in [Activation::Relu, Activation::Tanh] {
        let sizes = [30, 24, 24, 5];
        let mlp = Mlp::<f32>::new(&sizes, activation, 3).unwrap();
        let (x, y) = batch(33, 30, 5, 4);
        let step = mlp.step(&x, &y);
        let ir = capture(&step.graph, step.loss, &step.params, step.data, false).unwrap();
        let params = mlp.params();
        let shape = [33, 30];
        let inputs = slots(&params, &x, &shape);
        let refs: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
        let plan = layout_keeping_all(&ir, &refs);
        let mut arena = Vec::new();
        run(&ir, &plan, &inputs, &y, &mut arena, false).unwrap();
        let f = fuse(&ir, &plan.shapes);
        assert!(
            f.groups.iter().any(|g| g.nodes.len() == 2),
            "{activation:?}"
        );
        for g in &f.groups {
            let extras = g
                .extras
                .iter()
                .map(|e| value(&plan, &arena, *e).to_vec())
                .collect();
            let p = program(
                &g.chain,
                value(&plan, &arena, g.input).to_vec(),
                extras,
                g.cols,
            )
            .unwrap();
            let out = runner
                .start_program(&p, 0, 1, false)
                .and_then(dlsys_shaders::Job::wait)
                .unwrap_or_else(|e| panic!("{}: {e}", p.id));
            // Against the eager step's own values of the group's output.
            let want = value(&plan, &arena, *g.nodes.last().unwrap());
            for (w, got) in want.iter().zip(&out.words) {
                let got = f32::from_bits(*got);
                assert!(
                    (got - w).abs() <= 1e-6 + 1e-5 * w.abs(),
                    "{} {activation:?}: {got} vs {w}",
                    p.id
                );
            }
        }
    }
}

/// The generated kernels for the hand-written `gelu-fused` and
/// `layernorm-fused` rungs' chains load and store what the rungs' traffic
/// models say (the instrumented builds count it; the LayerNorm rung where
/// it keeps the row in workgroup memory) and match the rungs' references.
#[test]
fn the_generated_kernels_move_the_hand_written_rungs_bytes() {
    use dlsys_core::compile::chain::{gelu_rung_chain, layernorm_rung_chain};
    use dlsys_core::kernels::{DeviceLimits, FusionKind, Kernel, Problem, fused_reference, plan};
    let Some(mut runner) = crate::support::runner("fusion_rungs") else {
        return;
    };
    let cases = [
        (gelu_rung_chain(), FusionKind::GeluFused, 65, 100),
        (layernorm_rung_chain(), FusionKind::LayerNormFused, 33, 1000),
    ];
    for (chain, kind, rows, cols) in cases {
        // Rows offset from one another, so a normalisation has a mean to take out.
        let x: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 37) % 800) as f32 / 100.0 - 4.0 + (i / cols) as f32)
            .collect();
        let p = program(&chain, x.clone(), Vec::new(), cols).unwrap();
        let out = runner
            .start_program(&p, 0, 1, true)
            .and_then(dlsys_shaders::Job::wait)
            .unwrap();
        let (_, rung) = plan(
            Kernel::Fusion(kind),
            Problem::new(rows as u32, cols as u32),
            DeviceLimits::TYPICAL,
        )
        .unwrap();
        assert_eq!(
            out.counted,
            Some((rung.bytes_read, rung.bytes_written)),
            "{}",
            p.id
        );
        let want = fused_reference(kind, &x, rows, cols);
        assert_eq!(out.words.len(), want.len());
        for (w, got) in want.iter().zip(&out.words) {
            let got = f32::from_bits(*got);
            let tolerance = 1e-6 + 1e-5 * w.abs().max(0.1);
            assert!((got - w).abs() <= tolerance, "{}: {got} vs {w}", p.id);
        }
    }
}

/// The fused step end to end: the MLP's and the CNN's captured steps run
/// with every group as its generated kernel on the adapter (the rest on
/// the CPU executor), loss and gradients within the stated tolerance of
/// the eager step.
#[test]
fn the_fused_step_runs_on_the_gpu_and_agrees_with_the_eager_step() {
    use dlsys_core::compile::captured::capture_step;
    use dlsys_core::compile::step::StepModel;
    use dlsys_core::memory::mlp::MlpSettings;
    use dlsys_shaders::fused_step::fused_on_gpu;
    let Some(mut runner) = crate::support::runner("fused_step") else {
        return;
    };
    for (model, sizes, batch) in [
        (StepModel::Mlp, "30,24,24,5", 33),
        (StepModel::Cnn, "784,10", 3),
    ] {
        let mlp = MlpSettings {
            sizes: sizes.to_owned(),
            batch,
            ..MlpSettings::default()
        };
        let step = capture_step(model, &mlp).unwrap();
        let f = fused_on_gpu(&mut runner, &step).unwrap();
        assert!(
            f.groups > 0 && f.launches_after <= f.launches_before,
            "{f:?}"
        );
        assert!(
            f.agreement.holds() && f.agreement.values > 100,
            "{model:?}: {f:?}"
        );
    }
}

/// Chains that start by normalising rows (LayerNorm, with and without its
/// affine map, and with an activation after it): one workgroup per row,
/// at one value per row, rows as long as a row kernel takes, and more
/// rows than one dimension of the grid — every third row with a hostile
/// value (NaN, ±inf, ±1e30: the row turns NaN or collapses, on both
/// sides), some rows offset by 10 (the mean subtracted before squaring;
/// a far larger offset is past what f32 sums hold to 1e-5, on any side).
#[test]
fn row_chains_normalise_on_the_gpu_as_on_the_cpu() {
    use dlsys_shaders::codegen::MAX_ROW;
    let Some(mut runner) = crate::support::runner("fusion_rows") else {
        return;
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x1a7e);
    let chains = [
        Chain {
            extras: Vec::new(),
            ops: vec![ChainOp::NormalizeRows],
        },
        Chain {
            extras: vec![Extra::Row, Extra::Row],
            ops: vec![ChainOp::NormalizeRows, ChainOp::Mul(0), ChainOp::Add(1)],
        },
        Chain {
            extras: vec![Extra::Row],
            ops: vec![ChainOp::NormalizeRows, ChainOp::Add(0), ChainOp::Gelu],
        },
    ];
    let shapes = [
        (1, 1),
        (3, 2),
        (65_537, 2),
        (5, MAX_ROW - 1),
        (4, MAX_ROW),
        (7, 100),
    ];
    for (case, (rows, cols)) in shapes.into_iter().enumerate() {
        let chain = &chains[case % chains.len()];
        let mut x: Vec<f32> = (0..rows * cols)
            .map(|i| rng.random_range(-4.0..4.0) + if (i / cols) % 4 == 1 { 10.0 } else { 0.0 })
            .collect();
        for r in (0..rows).step_by(3).skip(1) {
            x[r * cols + r % cols] = HOSTILE[r % 5];
        }
        let extras = (0..chain.extras.len())
            .map(|_| (0..cols).map(|_| rng.random_range(-2.0..2.0)).collect())
            .collect();
        let p = program(chain, x, extras, cols).unwrap_or_else(|e| panic!("{chain:?}: {e:?}"));
        let out = runner
            .start_program(&p, 0, 1, true)
            .and_then(dlsys_shaders::Job::wait)
            .unwrap_or_else(|e| panic!("{}: {e}", p.id));
        let checked = p.check(&out.words);
        assert!(checked.ok, "{} at {rows}×{cols}: {checked:?}", p.id);
        assert_eq!(
            out.counted,
            Some((p.traffic.bytes_read, p.traffic.bytes_written)),
            "{}: instrumented count vs the traffic model",
            p.id
        );
    }
    // Past the row cache, or not whole rows: refused before any GPU work.
    let norm = &chains[0];
    assert!(matches!(
        validated(norm, 2 * (MAX_ROW + 1), MAX_ROW + 1, false),
        Err(CodegenError::RowTooLong { .. })
    ));
    assert!(matches!(
        validated(norm, 7, 3, false),
        Err(CodegenError::Chain(ChainError::NotRows { n: 7, cols: 3 }))
    ));
    let late = Chain {
        extras: Vec::new(),
        ops: vec![ChainOp::Relu, ChainOp::NormalizeRows],
    };
    assert!(validated(&late, 4, 2, false).is_err());
}
