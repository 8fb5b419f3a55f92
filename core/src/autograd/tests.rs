use super::*;

#[test]
fn every_op_and_the_mlp_pass_gradcheck_in_f64() {
    for check in Check::every() {
        for seed in [1, 2, 3] {
            let report = check.run::<f64>(seed, None);
            assert!(
                report.max_rel_error <= 1e-7,
                "{} seed {seed}: max rel error {:e}",
                check.name(),
                report.max_rel_error
            );
            assert_eq!(report.band, Band::Good);
        }
    }
}

#[test]
fn planted_bugs_are_caught() {
    let cases = [
        (PlantedBug::BiasNotSummedOverBatch, Check::Add),
        (PlantedBug::BiasNotSummedOverBatch, Check::Mlp),
        (PlantedBug::SoftmaxMissingCoupling, Check::Softmax),
        (
            PlantedBug::CrossEntropyNotAveraged,
            Check::SoftmaxCrossEntropy,
        ),
        (PlantedBug::CrossEntropyNotAveraged, Check::Mlp),
        (PlantedBug::LayerNormMissingMean, Check::LayerNorm),
        (PlantedBug::BatchNormStatsAsConstants, Check::BatchNorm),
        (PlantedBug::MaxPoolToEveryInput, Check::MaxPool),
    ];
    for (bug, check) in cases {
        let report = check.run::<f64>(1, Some(bug));
        assert_eq!(
            report.band,
            Band::Wrong,
            "{bug:?} in {}: {:e}",
            check.name(),
            report.max_rel_error
        );
    }
    // Evaluation mode's statistics are constants: the training-mode bug
    // is its correct derivative there.
    let eval = Check::BatchNormEval.run::<f64>(1, Some(PlantedBug::BatchNormStatsAsConstants));
    assert_eq!(eval.band, Band::Good);
    // The bias bug hits the bias only; the other input is still right.
    let add = Check::Add.run::<f64>(1, Some(PlantedBug::BiasNotSummedOverBatch));
    assert!(add.tensors[0].max_rel_error < 1e-7 && add.tensors[1].max_rel_error > 1e-2);
}

#[test]
fn f32_checks_are_orders_of_magnitude_worse() {
    let f64_err = Check::Mlp.run::<f64>(1, None).max_rel_error;
    let f32_err = Check::Mlp.run::<f32>(1, None).max_rel_error;
    assert!(
        f32_err > 1e-5 && f32_err > 1000.0 * f64_err.max(1e-16),
        "f32 {f32_err:e} vs f64 {f64_err:e}"
    );
}

#[test]
fn the_narrower_the_arithmetic_the_worse_the_check_of_correct_gradients() {
    let median = |precision: &str| {
        let mut errors: Vec<f64> = Check::ALL
            .iter()
            .flat_map(|c| {
                let report = c
                    .run_in(precision, 1, None)
                    .unwrap_or_else(|e| panic!("{e}"));
                report
                    .tensors
                    .into_iter()
                    .flat_map(|t| t.elements)
                    .map(|e| e.rel_error)
            })
            .collect();
        errors.sort_by(f64::total_cmp);
        errors[errors.len() / 2]
    };
    let medians: Vec<f64> = ["f64", "f32", "bf16"].iter().map(|p| median(p)).collect();
    eprintln!("median relative errors f64, f32, bf16: {medians:?}");
    assert!(
        medians[0] < 1e-9 && medians[0] * 100.0 < medians[1] && medians[1] * 10.0 < medians[2],
        "{medians:?}"
    );
    // fp16's 10 mantissa bits put whole checks of correct ops outside the good band.
    let fp16_outside = Check::ALL
        .iter()
        .filter(|c| {
            c.run_in("fp16", 1, None)
                .is_ok_and(|r| r.band != Band::Good)
        })
        .count();
    assert!(fp16_outside >= Check::ALL.len() / 2, "{fp16_outside}");
    assert!(
        Check::Mlp
            .run_in("fp64", 1, None)
            .is_err_and(|e| e.to_string().contains("bf16"))
    );
}

#[test]
fn a_node_used_twice_accumulates_and_backward_twice_doubles() {
    let mut g = Graph::<f64>::new();
    let x = g.param(Tensor::scalar(3.0));
    let y = g.mul(x, x); // x used twice: dy/dx = 2x = 6
    let z = g.add(y, x); // and a third time: dz/dx = 2x + 1 = 7
    g.backward(z);
    assert_eq!(g.grad(x).as_deref().map(Tensor::item), Some(7.0));
    g.backward(z);
    assert_eq!(g.grad(x).as_deref().map(Tensor::item), Some(14.0));
    assert_eq!(g.grad(y).as_deref().map(Tensor::item), Some(2.0));
    g.zero_grad();
    assert!(g.grad(x).is_none());
    g.backward(z);
    assert_eq!(g.grad(x).as_deref().map(Tensor::item), Some(7.0));
}

#[test]
fn topological_order_puts_inputs_first_and_steps_follow_it_backwards() {
    let mut g = Graph::<f64>::new();
    let a = g.param(Tensor::scalar(2.0));
    let b = g.param(Tensor::scalar(-3.0));
    let c = g.mul(a, b);
    let d = g.tanh(c);
    let e = g.add(d, a);
    let order = g.topological_order(e);
    let pos = |v: Var| order.iter().position(|x| *x == v).unwrap_or(usize::MAX);
    assert!(pos(a) < pos(c) && pos(b) < pos(c) && pos(c) < pos(d) && pos(d) < pos(e));
    assert_eq!(order.len(), 5);
    let done = g.backward_steps(e, 2);
    assert_eq!(done, vec![e, d]);
    assert!(g.grad(c).is_none(), "c is not reached after two steps");
}

#[test]
fn a_stepped_backward_shows_what_each_node_has_received_so_far() {
    // y = x·x + x at x = 3: after y, x holds 1 from the add; after x·x, 1 + 2·3.
    let mut g = Graph::<f64>::new();
    let x = g.param(Tensor::scalar(3.0));
    let xx = g.mul(x, x);
    let y = g.add(xx, x);
    let received = |g: &mut Graph<f64>, steps: usize, v: Var| {
        g.zero_grad();
        g.backward_stepped(y, steps).received[v.0]
            .as_ref()
            .map(Tensor::item)
    };
    assert_eq!(
        received(&mut g, 0, y),
        Some(1.0),
        "the seed waits at the root"
    );
    assert_eq!(received(&mut g, 1, x), Some(1.0));
    assert_eq!(received(&mut g, 1, xx), Some(1.0));
    assert_eq!(received(&mut g, 2, x), Some(7.0));
    // Once x itself is done it has passed its gradient on into grad.
    let stepped = {
        g.zero_grad();
        g.backward_stepped(y, 3)
    };
    assert_eq!(stepped.done, vec![y, xx, x]);
    assert!(stepped.received[x.0].is_none());
    assert_eq!(g.grad(x).as_deref().map(Tensor::item), Some(7.0));
}

#[test]
fn bias_gradient_is_the_sum_over_the_batch() {
    let mut g = Graph::<f64>::new();
    let x = g.input(Tensor::from_f64(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]));
    let b = g.param(Tensor::from_f64(&[0.5, -0.5], &[2]));
    let y = g.add(x, b);
    let s = g.sum(y);
    g.backward(s);
    assert_eq!(g.grad(b).map(|t| t.data.clone()), Some(vec![3.0, 3.0]));
    assert!(
        g.grad(x).is_none(),
        "inputs without requires_grad get no gradient"
    );
}

#[test]
fn softmax_cross_entropy_is_stable_and_its_gradient_is_p_minus_y() {
    let mut g = Graph::<f32>::new();
    let z = g.param(Tensor::new(
        vec![1000.0, 0.0, -1000.0, 1.0, 2.0, 3.0],
        &[2, 3],
    ));
    let loss = g.softmax_cross_entropy(z, &[0, 2]);
    assert!(g.value(loss).item().is_finite());
    g.backward(loss);
    let grad = g.grad(z).map(|t| t.data.clone()).unwrap_or_default();
    let p = softmax_rows(&Tensor::new(vec![1.0f32, 2.0, 3.0], &[1, 3]));
    let expected = [
        0.0,
        0.0,
        0.0,
        p.data[0] / 2.0,
        p.data[1] / 2.0,
        (p.data[2] - 1.0) / 2.0,
    ];
    for (a, b) in grad.iter().zip(expected) {
        assert!((a - b).abs() < 1e-6, "{grad:?}");
    }
}

#[test]
fn output_hook_sees_every_op_output() {
    let mut g = Graph::<f32>::new();
    g.set_output_hook(Some(std::sync::Arc::new(|data: &mut [f32]| {
        for x in data {
            *x = x.round();
        }
    })));
    let a = g.param(Tensor::new(vec![0.4, 1.6], &[2]));
    let b = g.scale(a, 1.0);
    assert_eq!(g.value(a).data, vec![0.4, 1.6], "leaves are not rounded");
    assert_eq!(g.value(b).data, vec![0.0, 2.0]);
}
