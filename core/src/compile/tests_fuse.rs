//! The fusion pass and its chains: which edges fuse in a captured MLP, the
//! launches and bytes it saves, each group's chain equal to the kernels it
//! replaces, and the chain's CPU meaning on hostile values.

use super::capture::{Ir, Kernel, capture, slots};
use super::chain::{Chain, ChainError, ChainOp, Extra};
use super::fuse::{Verdict, fuse};
use super::overhead::batch;
use super::replay::{layout_keeping_all, run, value};
use crate::nn::{Activation, Mlp};

/// A captured MLP step, its node shapes, and every node's values.
fn captured(
    sizes: &[usize],
    activation: Activation,
    rows: usize,
) -> (Ir, Vec<Vec<usize>>, Vec<Vec<f32>>) {
    let mlp = Mlp::<f32>::new(sizes, activation, 4).unwrap();
    let (x, y) = batch(rows, sizes[0], *sizes.last().unwrap(), 8);
    let step = mlp.step(&x, &y);
    let ir = capture(&step.graph, step.loss, &step.params, step.data, false).unwrap();
    let params = mlp.params();
    let shape = [rows, sizes[0]];
    let inputs = slots(&params, &x, &shape);
    let refs: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
    let plan = layout_keeping_all(&ir, &refs);
    let mut arena = Vec::new();
    run(&ir, &plan, &inputs, &y, &mut arena, false).unwrap();
    let values = (0..ir.nodes.len())
        .map(|i| value(&plan, &arena, i).to_vec())
        .collect();
    (ir, plan.shapes, values)
}

#[test]
fn bias_and_activation_fuse_and_each_chain_equals_the_kernels_it_replaces() {
    for activation in [Activation::Relu, Activation::Tanh, Activation::Sigmoid] {
        let sizes = [20, 16, 16, 7];
        let (ir, shapes, values) = captured(&sizes, activation, 9);
        let f = fuse(&ir, &shapes);
        // Per hidden layer, the bias add joins its activation: 2 edges.
        let fused: Vec<_> = f
            .edges
            .iter()
            .filter(|e| e.verdict == Verdict::Fused)
            .collect();
        assert_eq!(fused.len(), 2, "{activation:?}");
        for e in &fused {
            assert!(matches!(ir.nodes[e.from], Kernel::Add { .. }));
        }
        assert_eq!(f.launches_after, f.launches_before - 2);
        // Each fused pair saves one write and one read of [9, 16] floats.
        assert_eq!(f.bytes_before - f.bytes_after, 2 * 2 * 4 * 9 * 16);
        // GEMM edges are never fused; the logits (read by the softmax
        // and the loss) and each ReLU gradient (read by its bias's sum and
        // two GEMMs) are shared, so written.
        assert!(f.edges.iter().any(|e| e.verdict == Verdict::Gemm));
        assert!(
            f.edges
                .iter()
                .filter(|e| e.verdict == Verdict::Shared)
                .count()
                >= 3
        );
        for g in &f.groups {
            let extras: Vec<&[f32]> = g.extras.iter().map(|e| values[*e].as_slice()).collect();
            let got = g.chain.eval(&values[g.input], &extras, g.cols).unwrap();
            let want = &values[*g.nodes.last().unwrap()];
            assert_eq!(got.len(), want.len());
            // The same f32 arithmetic (tanh through f64 in the chain's
            // reference, f32's in the engine: within an ulp or two).
            for (a, b) in got.iter().zip(want) {
                assert!(
                    (a - b).abs() <= 2.0 * f32::EPSILON * b.abs().max(1e-30),
                    "{activation:?} {a} {b}"
                );
            }
        }
    }
}

#[test]
fn a_chain_refuses_a_missing_or_short_input_and_turns_nan_to_zero_at_relu_as_the_engine_does() {
    let chain = Chain {
        extras: vec![Extra::Row],
        ops: vec![ChainOp::Add(0), ChainOp::Relu, ChainOp::Tanh, ChainOp::Exp],
    };
    let x = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 1e30, -3.0];
    let got = chain.eval(&x, &[&[0.5, -0.5, 0.0]], 3).unwrap();
    // ReLU turns NaN into 0 (as the engine's), then tanh 0, exp 1.
    assert_eq!(got[0], 1.0);
    assert_eq!(got[1], 1f32.exp());
    assert_eq!(got[2], 1.0);
    assert!(matches!(
        chain.eval(&x, &[&[0.5]], 3),
        Err(ChainError::Length {
            input: 1,
            want: 3,
            got: 1
        })
    ));
    let missing = Chain {
        extras: Vec::new(),
        ops: vec![ChainOp::Mul(0)],
    };
    assert_eq!(
        missing.check(),
        Err(ChainError::NoExtra { op: 0, extra: 0 })
    );
    // Fused: x and the bias per element, y once; unfused: four round trips.
    assert_eq!(chain.fused_traffic(6).bytes(), 4 * 6 * 3);
    assert_eq!(chain.unfused_traffic(6).bytes(), 4 * 6 * (5 + 4));
}

#[test]
fn a_value_read_twice_by_one_kernel_is_written_not_fused() {
    use crate::autograd::{Graph, Tensor};
    // s = a + a: the add reads a twice; backward accumulates its gradient
    // with itself.
    let mut g = Graph::<f32>::new();
    let w = g.param(Tensor::new(
        (0..12).map(|i| i as f32 / 7.0 - 0.8).collect(),
        &[4, 3],
    ));
    let x = g.input(Tensor::new(
        (0..8).map(|i| i as f32 / 3.0 - 1.0).collect(),
        &[2, 4],
    ));
    let h = g.matmul(x, w);
    let a = g.tanh(h);
    let s = g.add(a, a);
    let loss = g.softmax_cross_entropy(s, &[2, 0]);
    g.backward(loss);
    let ir = capture(&g, loss, &[w], x, false).unwrap();
    let shapes = ir.shapes(&[&[4, 3], &[2, 4]]);
    let f = fuse(&ir, &shapes);
    let mut twice = 0;
    for e in &f.edges {
        if ir.nodes[e.to]
            .inputs()
            .iter()
            .filter(|i| **i == e.from)
            .count()
            == 2
        {
            twice += 1;
            assert_ne!(e.verdict, Verdict::Fused, "{e:?}");
            // tanh → add (tanh, itself elementwise, read twice).
            if matches!(ir.nodes[e.from], Kernel::Tanh(_)) {
                assert_eq!(e.verdict, Verdict::Shared, "{e:?}");
            }
        }
    }
    assert_eq!(twice, 2, "the add and the accumulation of its gradient");
    let fused = f
        .edges
        .iter()
        .filter(|e| e.verdict == Verdict::Fused)
        .count();
    assert_eq!(f.launches_after, f.launches_before - fused);
}

/// The generator's version of the hand-written `gelu-fused` rung moves the
/// same bytes the rung's traffic model says, and computes its values.
#[test]
fn the_gelu_rung_as_a_chain_moves_the_rungs_bytes_and_its_values() {
    use crate::compile::chain::gelu_rung_chain;
    use crate::kernels::{DeviceLimits, FusionKind, Kernel, Problem, fused_reference, plan};
    let chain = gelu_rung_chain();
    for (rows, cols) in [(1, 1), (7, 33), (256, 1024)] {
        let problem = Problem::new(rows as u32, cols as u32);
        let (_, rung) = plan(
            Kernel::Fusion(FusionKind::GeluFused),
            problem,
            DeviceLimits::TYPICAL,
        )
        .unwrap();
        assert_eq!(chain.fused_traffic(rows * cols), rung, "{rows}×{cols}");
        let (_, unfused) = plan(
            Kernel::Fusion(FusionKind::GeluUnfused),
            problem,
            DeviceLimits::TYPICAL,
        )
        .unwrap();
        assert_eq!(
            chain.unfused_traffic(rows * cols).bytes(),
            unfused.bytes(),
            "{rows}×{cols}"
        );
    }
    let x: Vec<f32> = (0..2048).map(|i| (i as f32 - 1024.0) / 97.0).collect();
    let got = chain.eval(&x, &[], 64).unwrap();
    let want = fused_reference(FusionKind::GeluFused, &x, 32, 64);
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6 + 1e-5 * w.abs(), "{g} vs {w}");
    }
}

#[test]
fn the_fused_step_runs_end_to_end_and_a_wrong_group_kernel_is_caught() {
    use super::captured::capture_step;
    use super::fused_run::{agreement, cpu_group, run_fused};
    use super::step::StepModel;
    use crate::memory::mlp::MlpSettings;
    for (model, sizes) in [(StepModel::Mlp, "30,24,24,5"), (StepModel::Cnn, "784,10")] {
        let mlp = MlpSettings {
            sizes: sizes.to_owned(),
            batch: 5,
            ..MlpSettings::default()
        };
        let step = capture_step(model, &mlp).unwrap();
        let inputs = step.inputs();
        let (fusion, got) = run_fused(&step.ir, &inputs, &step.y, &mut cpu_group).unwrap();
        let a = agreement(&got, &step.eager);
        assert!(a.holds() && a.values > 100, "{model:?}: {a:?}");
        assert_eq!(got.launches, fusion.launches_after);
        // A group kernel that writes zeros is seen downstream.
        let mut zeros = |_: &super::fuse::Group, _: &[f32], _: &[&[f32]], out: &mut [f32]| {
            out.fill(0.0);
            Ok(())
        };
        let (_, wrong) = run_fused(&step.ir, &inputs, &step.y, &mut zeros).unwrap();
        assert!(!agreement(&wrong, &step.eager).holds(), "{model:?}");
    }
}

#[test]
fn a_row_chain_normalises_each_row_and_is_refused_out_of_place() {
    use super::chain::layernorm_rung_chain;
    let chain = layernorm_rung_chain();
    // Rows (1, 3) and (2, 2, 2, 2)… as two rows of 2: ±1 scaled by
    // 1/√(1 + ε); a constant row gives 0.
    let got = chain.eval(&[1.0, 3.0, 2.0, 2.0], &[], 2).unwrap();
    let one = (1.0 / (1.0 + f64::from(crate::kernels::LAYERNORM_EPS)).sqrt()) as f32;
    assert_eq!(got, vec![-one, one, 0.0, 0.0]);
    // A row of ±1e30 overflows f32's sum of squares, as the kernel's: 0.
    assert_eq!(chain.eval(&[1e30, -1e30], &[], 2).unwrap(), vec![0.0, 0.0]);
    assert_eq!(
        chain.eval(&[1.0, 2.0, 3.0], &[], 2),
        Err(ChainError::NotRows { n: 3, cols: 2 })
    );
    let late = Chain {
        extras: Vec::new(),
        ops: vec![ChainOp::Relu, ChainOp::NormalizeRows],
    };
    assert_eq!(late.check(), Err(ChainError::RowOpNotFirst { op: 1 }));
    // Fused it reads the row once (kept in workgroup memory); as the
    // passes rung, three times.
    assert_eq!(chain.fused_traffic(10).bytes(), 4 * 10 * 2);
    assert_eq!(chain.unfused_traffic(10).bytes(), 4 * 10 * 4);
}

#[test]
fn each_group_is_timed_fused_and_op_by_op_on_the_steps_own_values() {
    use super::captured::capture_step;
    use super::fused_run::timed_kernels;
    use super::step::StepModel;
    use crate::memory::mlp::MlpSettings;
    let mlp = MlpSettings {
        sizes: "30,24,24,5".to_owned(),
        batch: 7,
        ..MlpSettings::default()
    };
    let step = capture_step(StepModel::Mlp, &mlp).unwrap();
    let timed = timed_kernels(&step.ir, &step.inputs(), &step.y).unwrap();
    let eval = |t: &super::fused_run::Timed| {
        let extras: Vec<&[f32]> = t.extras.iter().map(Vec::as_slice).collect();
        t.chain.eval(&t.x, &extras, t.cols).unwrap()
    };
    let groups = timed.iter().map(|t| t.group).max().unwrap() + 1;
    let mut longest = 0;
    for g in 0..groups {
        let of: Vec<_> = timed.iter().filter(|t| t.group == g).collect();
        let (fused, ops) = (of[0], &of[1..]);
        assert_eq!(fused.op, None);
        assert_eq!(ops.len(), fused.chain.ops.len());
        longest = longest.max(ops.len());
        // Each op's output is the next op's input; the last one's is the
        // fused kernel's, bit for bit.
        for pair in ops.windows(2) {
            assert_eq!(eval(pair[0]), pair[1].x, "group {g}");
        }
        assert_eq!(eval(ops[ops.len() - 1]), eval(fused), "group {g}");
        assert_eq!(ops[0].x, fused.x);
    }
    assert!(longest >= 2, "a chain of two ops in the MLP's step");
}

#[test]
fn a_fused_run_refuses_a_plan_that_reuses_bytes() {
    use super::captured::capture_step;
    use super::fused_run::cpu_group;
    use super::replay::{layout, run_hooked};
    use super::step::StepModel;
    use crate::memory::mlp::MlpSettings;
    let mlp = MlpSettings {
        sizes: "30,24,24,5".to_owned(),
        batch: 5,
        ..MlpSettings::default()
    };
    let step = capture_step(StepModel::Mlp, &mlp).unwrap();
    let inputs = step.inputs();
    let shapes: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
    let plan = layout(&step.ir, &shapes);
    assert!(plan.arena < plan.no_reuse);
    let fusion = fuse(&step.ir, &plan.shapes);
    let mut kernel = cpu_group;
    let got = run_hooked(
        &step.ir,
        &plan,
        &inputs,
        &step.y,
        &mut Vec::new(),
        false,
        Some((&fusion, &mut kernel)),
    );
    assert!(
        matches!(got, Err(super::capture::CaptureError::Overlap)),
        "{got:?}"
    );
}
