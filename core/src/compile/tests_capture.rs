//! Capture, replay and the compile cache: a replay equals the eager step
//! bit for bit; guards refuse what the capture did not see; the arena
//! never puts two live buffers in the same bytes.

use super::cache::{CacheEvent, Compiled};
use super::capture::{CaptureError, Kernel, capture};
use super::overhead::{self, batch};
use super::replay::{execute, layout, layout_in_place};
use crate::autograd::{Graph, Tensor};
use crate::nn::{Activation, Mlp};

fn eager(mlp: &Mlp<f32>, x: &[f32], y: &[usize]) -> (f32, Vec<Vec<f32>>) {
    let step = mlp.step(x, y);
    let loss = step.graph.value(step.loss).data[0];
    let grads = step
        .params
        .iter()
        .map(|p| step.graph.grad(*p).expect("a gradient").data.clone())
        .collect();
    (loss, grads)
}

/// Each capture's batch and whether it was symbolic.
fn captures(compiled: &Compiled) -> Vec<(usize, bool)> {
    compiled
        .log
        .iter()
        .filter_map(|e| match e {
            CacheEvent::Captured {
                batch, symbolic, ..
            } => Some((*batch, *symbolic)),
            _ => None,
        })
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn replay_equals_the_eager_step_bit_for_bit() {
    for (sizes, activation, rows) in [
        (vec![12, 9, 5], Activation::Relu, 1),
        (vec![20, 16, 16, 7], Activation::Relu, 33),
        (vec![8, 6, 4], Activation::Tanh, 5),
        (vec![10, 12, 3], Activation::Sigmoid, 64),
    ] {
        let mlp = Mlp::<f32>::new(&sizes, activation, 3).unwrap();
        let (x, y) = batch(rows, sizes[0], *sizes.last().unwrap(), 5);
        let (loss, grads) = eager(&mlp, &x, &y);
        let step = mlp.step(&x, &y);
        let ir = capture(&step.graph, step.loss, &step.params, step.data, false).unwrap();
        let params = mlp.params();
        let shape = [rows, sizes[0]];
        let mut inputs: Vec<(&[f32], &[usize])> = params
            .iter()
            .map(|p| (p.data.as_slice(), p.shape.as_slice()))
            .collect();
        inputs.push((&x, &shape));
        let got = execute(&ir, &inputs, &y).unwrap();
        assert_eq!(got.loss.to_bits(), loss.to_bits(), "{sizes:?} loss");
        assert_eq!(got.grads.len(), grads.len());
        for (g, want) in got.grads.iter().zip(&grads) {
            assert_eq!(bits(g), bits(want), "{sizes:?} {activation:?} gradient");
        }
        // The same with kernels written in place wherever allowed.
        let refs: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
        let plan = layout_in_place(&ir, &refs);
        assert!(plan.in_place > 0);
        let mut arena = Vec::new();
        let got = super::replay::run(&ir, &plan, &inputs, &y, &mut arena, false).unwrap();
        assert_eq!(got.loss.to_bits(), loss.to_bits());
        for (g, want) in got.grads.iter().zip(&grads) {
            assert_eq!(bits(g), bits(want), "{sizes:?} {activation:?} in place");
        }
        // Forward: per layer matmul, add, activation (none on the last);
        // softmax and the loss; backward has its own kernels.
        let layers = sizes.len() - 1;
        let forward = ir.nodes.iter().filter(|k| !k.is_backward()).count();
        assert_eq!(forward, 2 * layers + 1 + 3 * layers - 1 + 2);
        assert_eq!(ir.launches(), 7 * layers);
    }
}

#[test]
fn the_arena_keeps_live_buffers_apart_and_lies_between_its_bounds() {
    let mlp = Mlp::<f32>::new(&[30, 40, 20, 10], Activation::Relu, 1).unwrap();
    let (x, y) = batch(17, 30, 10, 2);
    let step = mlp.step(&x, &y);
    let ir = capture(&step.graph, step.loss, &step.params, step.data, false).unwrap();
    let shapes: Vec<Vec<usize>> = ir.guards.shapes.clone();
    let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    let chosen = layout(&ir, &refs);
    let plan = layout_in_place(&ir, &refs);
    assert!(chosen.arena <= plan.arena);
    assert!(plan.max_live <= plan.arena && plan.arena <= plan.no_reuse);
    assert!(plan.arena < plan.no_reuse, "nothing was reused");
    // Node i is written at i and read up to its last reader.
    let n = ir.nodes.len();
    let mut end: Vec<usize> = (1..=n).collect();
    for (i, k) in ir.nodes.iter().enumerate() {
        for j in k.inputs() {
            end[j] = end[j].max(i + 1);
        }
    }
    for out in ir.grads.iter().chain([&ir.loss]) {
        end[*out] = n;
    }
    let span = |i: usize| {
        let len: usize = plan.shapes[i].iter().product();
        (plan.offsets[i], plan.offsets[i] + len)
    };
    // ReLU over the bias add, and each ReLU gradient over its GEMM's
    // output, run in place.
    assert!(plan.in_place >= 4, "{}", plan.in_place);
    for a in 0..n {
        for b in a + 1..n {
            if plan.owner[a] == plan.owner[b] {
                // Written in place: b's running operand chain leads to a.
                assert_eq!(plan.offsets[a], plan.offsets[b]);
                continue;
            }
            let live_together = a < end[b] && b < end[a];
            let ((s1, e1), (s2, e2)) = (span(a), span(b));
            if live_together && s1 < e1 && s2 < e2 {
                assert!(e1 <= s2 || e2 <= s1, "nodes {a} and {b} overlap");
            }
        }
    }
}

#[test]
fn a_new_batch_fails_the_guard_then_a_symbolic_capture_serves_every_size() {
    let sizes = [16, 12, 4];
    let mlp = Mlp::<f32>::new(&sizes, Activation::Relu, 9).unwrap();
    let mut compiled = Compiled::new(mlp.clone());
    for (i, rows) in [8, 8, 5, 13, 5].into_iter().enumerate() {
        let (x, y) = batch(rows, 16, 4, i as u64);
        let got = compiled.step(&x, &y).unwrap();
        let (loss, grads) = eager(&mlp, &x, &y);
        assert_eq!(got.loss.to_bits(), loss.to_bits(), "batch {rows}");
        for (g, want) in got.grads.iter().zip(&grads) {
            assert_eq!(bits(g), bits(want), "batch {rows}");
        }
    }
    assert_eq!(compiled.captures(), 2);
    let captured = captures(&compiled);
    assert_eq!(captured, [(8, false), (5, true)]);
    // Batch 5 failed the static graph's guard on the data's shape.
    assert!(compiled.log.iter().any(|e| matches!(
        e,
        CacheEvent::GuardFailed { batch: 5, capture: 0, error: CaptureError::Guard { input, .. } } if input == "x"
    )));
    // 13 and the second 5 reused the symbolic graph.
    let reused = compiled
        .log
        .iter()
        .filter(|e| matches!(e, CacheEvent::Reused { capture: 1, .. }))
        .count();
    assert_eq!(reused, 2);
}

#[test]
fn a_symbolic_graph_still_guards_every_other_dimension() {
    let mlp = Mlp::<f32>::new(&[6, 5, 3], Activation::Relu, 1).unwrap();
    let (x, y) = batch(4, 6, 3, 1);
    let step = mlp.step(&x, &y);
    let ir = capture(&step.graph, step.loss, &step.params, step.data, true).unwrap();
    let mut shapes = ir.guards.shapes.clone();
    let data = shapes.len() - 1;
    shapes[data] = vec![9, 6];
    let ok: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    assert_eq!(ir.check(&ok), Ok(()));
    shapes[data] = vec![9, 7];
    let wide: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    let err = ir.check(&wide).unwrap_err();
    assert!(err.to_string().contains("[B, 6]"), "{err}");
    shapes[data] = vec![9, 6];
    shapes[0] = vec![6, 4];
    let weight: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    assert!(
        matches!(ir.check(&weight), Err(CaptureError::Guard { input, .. }) if input == "param0")
    );
}

#[test]
fn an_op_without_a_kernel_is_a_graph_break() {
    let mut g = Graph::<f32>::new();
    let w = g.param(Tensor::new(vec![0.5, -0.5], &[2, 1]));
    let x = g.input(Tensor::new(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]));
    let z = g.matmul(x, w);
    let e = g.exp(z);
    let loss = g.softmax_cross_entropy(e, &[0, 0]);
    g.backward(loss);
    let err = capture(&g, loss, &[w], x, false).unwrap_err();
    assert_eq!(
        err,
        CaptureError::GraphBreak {
            op: "exp".to_owned()
        }
    );
}

#[test]
fn overhead_is_measured_on_both_paths() {
    let o = overhead::measure(2, 8, 3).unwrap();
    // The math is what is left after the clock's own cost is taken off: on
    // a loaded machine that may round to 0, never below.
    assert!(o.eager_seconds > 0.0 && o.replay_seconds > 0.0);
    assert!(o.math_seconds >= 0.0 && o.math_seconds.is_finite());
    assert!(o.reps_eager >= 1 && o.reps_replay >= 1 && o.runs == 3);
    // Three layers: 3·3 + 1 kernels forward (matmul, add, ReLU but the
    // last, softmax, loss), 4·3 − 1 backward.
    assert_eq!(o.launches, 7 * 3);
    assert!(overhead::measure(0, 8, 1).is_err());
}

#[test]
fn a_step_the_capture_cannot_replay_exactly_is_refused() {
    use crate::autograd::PlantedBug;
    let mlp = Mlp::<f32>::new(&[6, 5, 3], Activation::Relu, 1).unwrap();
    let (x, y) = batch(4, 6, 3, 1);
    let mut g = Graph::<f32>::new();
    g.plant_bug(Some(PlantedBug::CrossEntropyNotAveraged));
    let data = g.input(Tensor::new(x.clone(), &[4, 6]));
    let (logits, params) = mlp.forward(&mut g, data);
    let loss = g.softmax_cross_entropy(logits, &y);
    g.backward(loss);
    assert_eq!(
        capture(&g, loss, &params, data, false),
        Err(CaptureError::NotPlain)
    );
    // The data listed as a parameter: it takes no gradient here.
    let step = mlp.step(&x, &y);
    let mut wrong = step.params.clone();
    wrong.push(step.data);
    assert_eq!(
        capture(&step.graph, step.loss, &wrong, step.data, false),
        Err(CaptureError::NotPlain)
    );
}

#[test]
fn a_label_past_the_classes_and_data_of_broken_rows_are_refused() {
    let mlp = Mlp::<f32>::new(&[6, 5, 3], Activation::Relu, 1).unwrap();
    let mut compiled = Compiled::new(mlp);
    let (x, mut y) = batch(4, 6, 3, 1);
    compiled.step(&x, &y).unwrap();
    y[2] = 3;
    assert_eq!(
        compiled.step(&x, &y).unwrap_err(),
        CaptureError::Label {
            label: 3,
            classes: 3
        }
    );
    assert!(matches!(
        compiled.step(&x[..23], &y),
        Err(CaptureError::Rows { .. })
    ));
}

#[test]
fn a_weight_used_twice_sums_its_two_gradients_as_the_tape_does() {
    let mut g = Graph::<f32>::new();
    let w = g.param(Tensor::new(
        (0..16).map(|i| (i as f32 - 7.0) / 9.0).collect(),
        &[4, 4],
    ));
    let x = g.input(Tensor::new(
        (0..12).map(|i| (i as f32) / 5.0 - 1.0).collect(),
        &[3, 4],
    ));
    let h = g.matmul(x, w);
    let a = g.tanh(h);
    let z = g.matmul(a, w);
    let loss = g.softmax_cross_entropy(z, &[0, 3, 1]);
    g.backward(loss);
    let ir = capture(&g, loss, &[w], x, false).unwrap();
    assert!(
        ir.nodes
            .iter()
            .any(|k| matches!(k, Kernel::Accumulate { .. }))
    );
    let (wv, xv) = (g.value(w).into_owned(), g.value(x).into_owned());
    let inputs: Vec<(&[f32], &[usize])> = vec![(&wv.data, &wv.shape), (&xv.data, &xv.shape)];
    let got = execute(&ir, &inputs, &[0, 3, 1]).unwrap();
    assert_eq!(bits(&got.grads[0]), bits(&g.grad(w).unwrap().data));
    assert_eq!(got.loss.to_bits(), g.value(loss).data[0].to_bits());
}

#[test]
fn a_batch_of_one_stays_static_and_the_next_size_turns_symbolic() {
    let mlp = Mlp::<f32>::new(&[5, 4, 3], Activation::Relu, 2).unwrap();
    let mut compiled = Compiled::new(mlp);
    for (i, rows) in [3, 1, 2, 7].into_iter().enumerate() {
        let (x, y) = batch(rows, 5, 3, i as u64);
        compiled.step(&x, &y).unwrap();
    }
    let symbolic = captures(&compiled);
    assert_eq!(symbolic, [(3, false), (1, false), (2, true)]);
}

#[test]
fn the_capture_view_replays_bit_for_bit_and_recaptures_once() {
    use crate::memory::mlp::MlpSettings;
    let mlp = MlpSettings {
        sizes: "20,12,5".to_owned(),
        batch: 9,
        ..MlpSettings::default()
    };
    let c = super::captured::captured(super::step::StepModel::Mlp, &mlp, 0).unwrap();
    assert!(c.bit_exact && c.calls_exact == c.batches.len());
    assert_eq!(
        (c.captures, c.batches.as_slice()),
        (2, [9, 9, 4, 18].as_slice())
    );
    assert_eq!(c.kernels.len(), 5 + c.launches);
    assert!(c.max_live <= c.arena && c.arena <= c.no_reuse);
    assert!(c.overhead.is_empty());
    let bad = MlpSettings {
        sizes: "20".to_owned(),
        ..mlp
    };
    assert!(super::captured::captured(super::step::StepModel::Mlp, &bad, 0).is_err());
}

#[test]
fn the_cnn_capture_view_goes_through_the_same_cache() {
    use super::step::StepModel;
    use crate::memory::mlp::MlpSettings;
    let settings = MlpSettings {
        batch: 4,
        ..MlpSettings::default()
    };
    let c = super::captured::captured(StepModel::Cnn, &settings, 3).unwrap();
    assert_eq!(c.model, StepModel::Cnn);
    assert!(c.bit_exact && c.calls_exact == c.batches.len());
    assert_eq!(
        (c.captures, c.batches.as_slice()),
        (2, [4, 4, 2, 8].as_slice())
    );
    // The branch and the overhead are the MLP's.
    assert!(c.branch_events.is_empty() && c.overhead.is_empty());
    assert!(c.kernels.iter().any(|k| k.key == "conv2d_grad_weight"));
    assert!(c.max_live <= c.arena && c.arena <= c.no_reuse);
    // BatchNorm's affine map reads per-channel operands: the generator has
    // no form for it, so the ReLU after it is not fused into it.
    let key = |i: usize| c.kernels[i].key;
    assert!(c.fusion.edges.iter().any(|e| {
        e.verdict == super::fuse::Verdict::NotGenerated
            && (key(e.from), key(e.to)) == ("bn_affine", "relu")
    }));
    assert!(matches!(
        super::captured::captured(StepModel::Transformer, &settings, 0),
        Err(super::captured::CapturedError::Capture(CaptureError::Model))
    ));
}

#[test]
fn a_branch_taken_the_other_way_fails_its_guard_and_is_captured_once_more() {
    let sizes = [16, 12, 4];
    let mlp = Mlp::<f32>::new(&sizes, Activation::Relu, 9).unwrap();
    let mut compiled = Compiled::branching(mlp.clone(), 0.5);
    let sides = [true, true, false, true, false];
    for (i, above) in sides.into_iter().enumerate() {
        let (mut x, y) = batch(8, 16, 4, i as u64);
        // Means near 0.75 or 0.25.
        x.iter_mut()
            .for_each(|v| *v = if above { 0.5 } else { 0.0 } + 0.5 * *v);
        let got = compiled.step(&x, &y).unwrap();
        // The eager model takes the branch on this batch.
        let mut eager_mlp = mlp.clone();
        eager_mlp.activation = if above {
            Activation::Relu
        } else {
            Activation::Tanh
        };
        assert_eq!(compiled.activation_for(&x), eager_mlp.activation);
        let (loss, grads) = eager(&eager_mlp, &x, &y);
        assert_eq!(got.loss.to_bits(), loss.to_bits(), "call {i}");
        for (g, want) in got.grads.iter().zip(&grads) {
            assert_eq!(bits(g), bits(want), "call {i}");
        }
    }
    // Two graphs, both static (no shape changed); each records its path.
    assert_eq!(captures(&compiled), [(8, false), (8, false)]);
    let graphs: Vec<_> = compiled.graphs().collect();
    assert!(
        graphs[0].nodes.contains(&Kernel::Relu(
            graphs[0]
                .nodes
                .iter()
                .position(|k| matches!(k, Kernel::Add { .. }))
                .unwrap()
        ))
    );
    assert!(graphs[1].nodes.iter().any(|k| matches!(k, Kernel::Tanh(_))));
    assert!(!graphs[1].nodes.iter().any(|k| matches!(k, Kernel::Relu(_))));
    assert_eq!(graphs[0].guards.branch.map(|b| b.above), Some(true));
    assert_eq!(graphs[1].guards.branch.map(|b| b.above), Some(false));
    // The third call failed graph 0's branch guard; the fifth too, then
    // reused graph 1.
    let failed: Vec<_> = compiled
        .log
        .iter()
        .filter_map(|e| match e {
            CacheEvent::GuardFailed { capture, error, .. } => Some((*capture, error.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(
        failed
            .iter()
            .all(|(c, e)| *c == 0 && matches!(e, CaptureError::BranchBelow { .. }))
    );
    assert!(matches!(
        compiled.log.last(),
        Some(CacheEvent::Reused { capture: 1, .. })
    ));
}

#[test]
fn the_cnn_step_replays_bit_for_bit_and_its_guard_refuses_another_batch() {
    use crate::nn::models::Cnn;
    let model = Cnn::new(4);
    let params = model.params();
    for symbolic in [false, true] {
        let (x, y) = crate::memory::models::cnn_batch(3, 7);
        let step = model.step(&x, &y);
        let ir = capture(&step.graph, step.loss, &step.params, step.data, symbolic).unwrap();
        // Every layer is in the graph: two convolutions and their two
        // gradients each but the first's input gradient (the data takes
        // none), BatchNorm as statistics, x̂ and the affine map, pooling.
        let count = |key: &str| ir.nodes.iter().filter(|k| k.key() == key).count();
        assert_eq!(count("conv2d"), 2);
        assert_eq!(count("conv2d_grad_weight"), 2);
        assert_eq!(count("conv2d_grad_input"), 1);
        assert_eq!(count("bn_stats"), 2);
        assert_eq!(count("maxpool_grad"), 2);
        assert_eq!(count("channel_sum"), 2);
        for (rows, seed) in [(3, 7), (5, 8)] {
            let (x, y) = crate::memory::models::cnn_batch(rows, seed);
            let shape = [rows, 784];
            let inputs = super::capture::slots(&params, &x, &shape);
            let got = execute(&ir, &inputs, &y);
            if rows != 3 && !symbolic {
                // A static capture refuses another batch, naming the guard.
                assert!(
                    matches!(&got, Err(CaptureError::Guard { input, .. }) if input == "x"),
                    "{got:?}"
                );
                continue;
            }
            let got = got.unwrap();
            let want = model.step(&x, &y);
            assert_eq!(
                got.loss.to_bits(),
                want.graph.value(want.loss).data[0].to_bits(),
                "loss at batch {rows}"
            );
            for (i, (g, p)) in got.grads.iter().zip(&want.params).enumerate() {
                let w = want.graph.grad(*p).expect("a gradient");
                assert_eq!(bits(g), bits(&w.data), "gradient {i} at batch {rows}");
            }
            // The planner's bounds hold on this graph too.
            let refs: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
            let plan = layout(&ir, &refs);
            assert!(plan.max_live <= plan.arena && plan.arena <= plan.no_reuse);
            assert!(plan.arena < plan.no_reuse);
        }
    }
}
