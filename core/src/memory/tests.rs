//! The estimate held against the engine's measured bytes, and
//! checkpointing against normal training.

use super::*;
use crate::nn::{Dataset, OptimizerKind, TrainConfig, Trainer};

fn optimizers() -> [OptimizerKind; 3] {
    [
        OptimizerKind::Sgd,
        OptimizerKind::Momentum {
            mu: 0.9,
            nesterov: false,
        },
        OptimizerKind::adam(),
    ]
}

fn shape(
    sizes: &[usize],
    batch: usize,
    optimizer: OptimizerKind,
    precision: Precision,
    checkpoint: usize,
) -> MlpShape {
    MlpShape {
        sizes: sizes.to_vec(),
        batch,
        optimizer,
        precision,
        checkpoint,
    }
}

#[test]
fn estimated_bytes_equal_the_measured_under_every_optimizer_and_precision() {
    // The last: a weight matrix longer than the optimizer's state block.
    for sizes in [
        &[20usize, 32, 16, 5][..],
        &[64, 48, 10],
        &[20, 16, 16, 16, 5],
        &[80, 64, 10],
    ] {
        for optimizer in optimizers() {
            for precision in Precision::ALL {
                // None, every layer, segments of two and three (the 4-layer
                // net's last segment then holds a hidden layer too).
                for checkpoint in [0, 1, 2, 3] {
                    let s = shape(sizes, 12, optimizer, precision, checkpoint);
                    let est = estimate_mlp(&s).expect("valid shape");
                    let got = measure_step(&s).expect("trains");
                    let what = format!("{s:?}");
                    for c in [
                        Component::Parameters,
                        Component::Gradients,
                        Component::OptimizerState,
                        Component::MasterWeights,
                        Component::Inputs,
                        Component::EmulationOverhead,
                    ] {
                        assert_eq!(
                            est.components.get(c),
                            got.components.get(c),
                            "{c:?} of {what}"
                        );
                    }
                    // The activations are modelled node by node: they agree
                    // exactly too (the 5 % the lesson allows is not needed).
                    assert_eq!(
                        est.components.get(Component::Activations),
                        got.components.get(Component::Activations),
                        "activations of {what}"
                    );
                    assert_eq!(
                        got.components.get(Component::EmulationOverhead) == 0,
                        precision == Precision::Fp32,
                        "overhead of {what}"
                    );
                    assert!(got.components.get(Component::Temporaries) > 0, "{what}");
                }
            }
        }
    }
}

#[test]
fn a_tiny_network_holds_what_a_hand_count_says() {
    // 2 → 3 → 2, batch 1, SGD in fp32: no optimizer state. Counted by hand:
    // x 2; W1 6, b1 3; x·W1, + b1, relu 3 each; W2 6, b2 2; x·W2, logits 2
    // each; loss 1; probabilities 2: 35 floats, and the labels twice.
    let u = std::mem::size_of::<usize>() as u64;
    let plain = measure_step(&shape(
        &[2, 3, 2],
        1,
        OptimizerKind::Sgd,
        Precision::Fp32,
        0,
    ))
    .expect("trains");
    let forward = |m: &Measured| {
        m.phases
            .iter()
            .find(|p| p.phase == measure::Phase::Forward)
            .map(|p| p.peak)
    };
    assert_eq!(forward(&plain), Some(35 * 4 + 2 * u));
    // Checkpointed, the last segment's forward is the most: its input (the
    // relu's 3), W2 6, b2 2, x·W2 2, logits 2, loss 1, probabilities 2; the
    // data kept (2) and the first layer's weights waiting (9): 29 floats.
    let ckpt = measure_step(&shape(
        &[2, 3, 2],
        1,
        OptimizerKind::Sgd,
        Precision::Fp32,
        1,
    ))
    .expect("trains");
    assert_eq!(forward(&ckpt), Some(29 * 4 + 2 * u));
}

#[test]
fn too_large_or_too_deep_measurements_are_refused_and_estimates_still_made() {
    let wide = shape(
        &[8192, 8192, 8192, 8192],
        65_536,
        OptimizerKind::adam(),
        Precision::Fp32,
        0,
    );
    assert!(estimate_mlp(&wide).is_ok());
    assert!(matches!(
        measure_step(&wide),
        Err(MemoryError::TooLargeToMeasure { .. })
    ));
    let deep: Vec<usize> = std::iter::repeat_n(4, 100).collect();
    let deep = shape(&deep, 2, OptimizerKind::Sgd, Precision::Fp32, 1);
    assert!(estimate_mlp(&deep).is_ok());
    assert!(matches!(
        measure_step(&deep),
        Err(MemoryError::TooDeepToMeasure { .. })
    ));
    let deeper: Vec<usize> = std::iter::repeat_n(4, mlp::MAX_LAYERS + 2).collect();
    assert!(matches!(
        estimate_mlp(&shape(&deeper, 2, OptimizerKind::Sgd, Precision::Fp32, 1)),
        Err(MemoryError::TooManyLayers { .. })
    ));
}

#[test]
fn checkpointing_lowers_the_measured_peak_of_activations() {
    let sizes = [784, 512, 512, 512, 10];
    let plain = measure_step(&shape(
        &sizes,
        64,
        OptimizerKind::adam(),
        Precision::Fp32,
        0,
    ))
    .expect("trains");
    let ckpt = measure_step(&shape(
        &sizes,
        64,
        OptimizerKind::adam(),
        Precision::Fp32,
        1,
    ))
    .expect("trains");
    let (a, b) = (
        plain.components.get(Component::Activations),
        ckpt.components.get(Component::Activations),
    );
    // Three saved values per hidden layer (3 × 3 × 64 × 512 floats) shrink
    // to the segment outputs and one recomputed layer.
    let saved = |x: u64| x as f64 / a as f64;
    eprintln!(
        "checkpointing: saved activations {a} B -> {b} B ({:+.1} %), peak {} B -> {} B",
        100.0 * (saved(b) - 1.0),
        plain.peak,
        ckpt.peak
    );
    assert!(
        saved(b) < 0.6,
        "checkpointed activations {b} B vs {a} B ({:.0} %)",
        100.0 * saved(b)
    );
    assert!(ckpt.peak < plain.peak, "{} vs {}", ckpt.peak, plain.peak);
}

#[test]
fn mixed_precision_does_not_halve_adam_memory() {
    let sizes = [256, 256, 10];
    let c = |p| {
        let e = estimate_mlp(&shape(&sizes, 1, OptimizerKind::adam(), p, 0)).expect("valid");
        e.components.training_state()
    };
    let n = estimate_mlp(&shape(&sizes, 1, OptimizerKind::adam(), Precision::Fp32, 0))
        .expect("valid")
        .parameters;
    assert_eq!(c(Precision::Fp32), 16 * n);
    assert_eq!(c(Precision::MixedFp16), 16 * n);
    assert_eq!(c(Precision::PureBf16), 8 * n);
}

/// The graph really keeps fp16 values in 2 bytes: where activations
/// dominate, the measured peak under mixed precision is below fp32's, the
/// saved values take half the bytes (the softmax's fp32 probabilities
/// aside), and the only f32 buffer left is the gradients the optimizer reads.
#[test]
fn packed_fp16_lowers_the_measured_peak() {
    let s = |p| shape(&[64, 256, 256, 10], 256, OptimizerKind::Sgd, p, 0);
    let fp32 = measure_step(&s(Precision::Fp32)).expect("trains");
    let mixed = measure_step(&s(Precision::MixedFp16)).expect("trains");
    assert!(mixed.peak < fp32.peak, "{} vs {}", mixed.peak, fp32.peak);
    // Aside from the probabilities, the scalars: the loss in fp32; the loss
    // and the scaled loss, 2 bytes each, under mixed precision.
    let (probs, scalars) = (256 * 10 * 4, 4);
    let act = |m: &Measured| m.components.get(Component::Activations) - probs - scalars;
    assert_eq!(2 * act(&mixed), act(&fp32));
    let params = estimate_mlp(&s(Precision::Fp32)).expect("valid").parameters;
    assert_eq!(
        mixed.components.get(Component::EmulationOverhead),
        2 * params,
        "the gradient buffer's extra 2 bytes a parameter, nothing else"
    );
}

#[test]
fn flops_count_the_first_layer_without_its_input_gradient() {
    let e = estimate_mlp(&shape(
        &[784, 128, 10],
        64,
        OptimizerKind::Sgd,
        Precision::Fp32,
        0,
    ))
    .expect("valid");
    let (l1, l2) = (2 * 64 * 784 * 128u64, 2 * 64 * 128 * 10u64);
    assert_eq!(e.flops_forward, l1 + l2);
    assert_eq!(e.flops_backward, l1 + 2 * l2);
    assert_eq!(e.flops_recompute, 0);
    let c = estimate_mlp(&shape(
        &[784, 128, 10],
        64,
        OptimizerKind::Sgd,
        Precision::Fp32,
        1,
    ))
    .expect("valid");
    assert_eq!(c.flops_recompute, l1);
}

fn data(features: usize, classes: usize, rows: usize) -> Dataset {
    let mut state = 0x2545_f491_u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    Dataset {
        name: "test".to_owned(),
        features,
        classes,
        x: (0..rows * features)
            .map(|_| (next() % 1000) as f32 / 1000.0)
            .collect(),
        y: (0..rows).map(|_| next() as usize % classes).collect(),
        image: None,
    }
}

#[test]
fn checkpointed_training_gives_bit_identical_weights() {
    let nesterov = OptimizerKind::Momentum {
        mu: 0.9,
        nesterov: true,
    };
    // (hidden, micro-batches, loss weight): one layer, two, accumulation,
    // a weighted loss (which gives fp32 a policy state and a scale node).
    let setups: [(&[usize], u32, f32); 4] = [
        (&[], 1, 1.0),
        (&[24, 16], 1, 1.0),
        (&[12], 2, 1.0),
        (&[12], 1, 0.5),
    ];
    for (hidden, micro_batches, loss_weight) in setups {
        for precision in Precision::ALL {
            for optimizer in optimizers().into_iter().chain([nesterov]) {
                let run = |checkpoint: usize| {
                    let config = TrainConfig {
                        hidden: hidden.to_vec(),
                        optimizer,
                        lr: 0.01,
                        batch_size: 16,
                        epochs: 2,
                        policy: precision.policy(),
                        micro_batches,
                        loss_weight,
                        checkpoint,
                        ..TrainConfig::default()
                    };
                    let mut t =
                        Trainer::new(config, data(30, 4, 96), data(30, 4, 20)).expect("valid");
                    t.run();
                    let bits: Vec<u32> = t
                        .model
                        .params()
                        .iter()
                        .flat_map(|p| p.data.iter().map(|x| x.to_bits()))
                        .collect();
                    (bits, t.losses.clone(), t.mixed_report())
                };
                let plain = run(0);
                // Every layer its own segment, and segments of two.
                for k in [1, 2] {
                    let ckpt = run(k);
                    let what = format!(
                        "{hidden:?}, {micro_batches} micro-batches, weight {loss_weight}, {precision:?}, {optimizer:?}, segments of {k}"
                    );
                    assert_eq!(plain.0, ckpt.0, "weights: {what}");
                    assert_eq!(plain.1, ckpt.1, "losses: {what}");
                    assert_eq!(plain.2, ckpt.2, "policy tallies: {what}");
                }
            }
        }
    }
}

#[test]
fn bad_mlp_shapes_are_errors() {
    let bad = |sizes: &[usize], batch| {
        estimate_mlp(&shape(sizes, batch, OptimizerKind::Sgd, Precision::Fp32, 0)).is_err()
    };
    assert!(bad(&[10], 4));
    assert!(bad(&[10, 0, 2], 4));
    assert!(bad(&[10, 2], 0));
    assert!(bad(&[10, 9000, 2], 4));
    assert!(measure_step(&shape(&[10, 2], 0, OptimizerKind::Sgd, Precision::Fp32, 0)).is_err());
}

/// The allocation trace: a buffer appears as an alloc, a resized one as a
/// free and an alloc, a gone one as a free; replaying the events gives
/// back exactly what was held at every point.
#[test]
fn the_trace_replays_what_was_held_at_every_point() {
    use super::measure::{Held, Phase};
    use super::trace::{BufKey, EventKind, Trace};
    let mut trace = Trace::default();
    let mut a = Held::default();
    a.f32s(BufKey::Param(0), Component::Parameters, 10, 4);
    a.f32s(BufKey::Param(1), Component::Parameters, 3, 2);
    let mut b = a.clone();
    b.exact(BufKey::Labels, Component::Inputs, 4, 8);
    let mut c = Held::default();
    c.f32s(BufKey::Param(0), Component::Parameters, 10, 4);
    c.f32s(BufKey::Param(1), Component::Parameters, 5, 2);
    let points = [
        (Phase::Forward, a),
        (Phase::Backward, b),
        (Phase::Optimizer, c),
    ];
    for (phase, held) in &points {
        trace.record(*phase, held);
    }
    let kinds: Vec<(u32, EventKind, u64)> = trace
        .events
        .iter()
        .map(|e| (e.op, e.kind, e.bytes))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (0, EventKind::Alloc, 40),
            (0, EventKind::Alloc, 12),
            (1, EventKind::Alloc, 32),
            // Param(1) grew from 3 to 5 values: freed and made again; the labels went.
            (2, EventKind::Free, 12),
            (2, EventKind::Free, 32),
            (2, EventKind::Alloc, 20),
        ]
    );
    let replayed = trace.replay();
    for ((phase, held), (p, r)) in points.iter().zip(&replayed) {
        assert_eq!(phase, p);
        assert_eq!((held.format, held.overhead), (r.format, r.overhead));
    }
    assert_eq!(trace.peak(), 40 + 12 + 32);
}

/// The CNN's and the character model's steps are traced too: every buffer
/// allocated is a real one of the step, the weights and the optimizer's
/// state are held throughout, and the peak is above both.
#[test]
fn the_cnn_and_the_char_model_have_a_traced_peak() {
    use super::models::{measure_char_step, measure_cnn_step};
    for (name, measured) in [
        ("cnn", measure_cnn_step(8, 1)),
        ("char", measure_char_step(4, 1)),
    ] {
        let m = measured.unwrap_or_else(|e| panic!("{name}: {e}"));
        let weights = m.components.get(Component::Parameters);
        let state = m.components.get(Component::OptimizerState);
        // The model's weights and the graph's copies of them: 2 × P; Adam's
        // two moments: 2 × P.
        assert!(
            weights > 0 && state == weights,
            "{name}: {weights} vs {state}"
        );
        assert!(
            m.peak > weights + state,
            "{name}: peak {} vs {weights} + {state}",
            m.peak
        );
        assert!(!m.events.is_empty(), "{name}");
        assert!(super::models::measure_cnn_step(0, 1).is_err());
    }
}

/// Workers on their own threads each keep their own trace: the gradient is
/// the unmetered one, bit for bit, and two workers with equal shards hold
/// equal bytes at every point.
#[test]
fn each_worker_on_its_own_thread_traces_its_own_step() {
    use super::measure::{Measured, Meter};
    use super::models::metered_gradient;
    let model = crate::nn::Mlp::<f32>::new(&[6, 5, 3], crate::nn::Activation::Relu, 7)
        .unwrap_or_else(|e| panic!("{e}"));
    let shard = |w: usize| -> (Vec<f32>, Vec<usize>) {
        let x = (0..4 * 6)
            .map(|i| ((i * 7 + w * 13) % 11) as f32 / 11.0)
            .collect();
        (x, vec![w % 3, 1, 2, 0])
    };
    let traced: Vec<(f64, Vec<f32>, Measured)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|w| {
                let model = &model;
                s.spawn(move || {
                    let (x, y) = shard(w);
                    let mut meter = Meter::default();
                    let (loss, grad) = metered_gradient(model, &x, &y, &mut meter);
                    (loss, grad, Measured::from_meter(meter, 0.0, 0))
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    assert_eq!(traced.len(), 2);
    for (w, (loss, grad, measured)) in traced.iter().enumerate() {
        let (x, y) = shard(w);
        let (plain_loss, plain_grad) = model.gradient(&x, &y);
        assert_eq!((*loss, grad), (plain_loss, &plain_grad), "worker {w}");
        assert!(measured.peak > 0 && !measured.events.is_empty());
    }
    assert_eq!(traced[0].2.timeline, traced[1].2.timeline);
}
