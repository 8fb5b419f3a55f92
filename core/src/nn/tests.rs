use super::*;
use crate::autograd::Tensor;

fn mnist() -> Dataset {
    Dataset::from_dlds(
        "mnist",
        include_bytes!("../../../assets/data/mnist10k.dlds"),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn digits() -> Dataset {
    Dataset::from_dlds("digits", include_bytes!("../../../assets/data/digits.dlds"))
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn optimizers_follow_their_update_rules() {
    let grads = [Tensor::new(vec![0.5f64, -2.0], &[2])];
    let run = |kind: OptimizerKind, steps: usize| {
        let mut p = Tensor::new(vec![1.0f64, 1.0], &[2]);
        let mut opt = Optimizer::new(kind, 0.1, 0.0);
        for _ in 0..steps {
            opt.step(&mut [&mut p], &grads);
        }
        p.data
    };
    assert_eq!(run(OptimizerKind::Sgd, 1), vec![1.0 - 0.05, 1.0 + 0.2]);
    // Momentum, two steps: v1 = −ηg, v2 = μv1 − ηg; θ = 1 + v1 + v2.
    let m = run(
        OptimizerKind::Momentum {
            mu: 0.9,
            nesterov: false,
        },
        2,
    );
    assert!((m[0] - (1.0 - 0.05 - (0.9 * 0.05 + 0.05))).abs() < 1e-12);
    // Nesterov's first step: θ += (1 + μ)·v1.
    let n = run(
        OptimizerKind::Momentum {
            mu: 0.9,
            nesterov: true,
        },
        1,
    );
    assert!((n[0] - (1.0 - 1.9 * 0.05)).abs() < 1e-12);
    // Adam's first step moves each parameter by ≈ lr against the sign of its gradient.
    let a = run(OptimizerKind::adam(), 1);
    assert!(
        (a[0] - 0.9).abs() < 1e-6 && (a[1] - 1.1).abs() < 1e-6,
        "{a:?}"
    );
    // Weight decay adds λθ to the gradient.
    let mut p = Tensor::new(vec![2.0f64], &[1]);
    Optimizer::new(OptimizerKind::Sgd, 0.1, 0.5)
        .step(&mut [&mut p], &[Tensor::new(vec![0.0], &[1])]);
    assert!((p.data[0] - (2.0 - 0.1 * 0.5 * 2.0)).abs() < 1e-12);
}

#[test]
fn initial_loss_of_a_ten_class_classifier_is_about_ln_10() {
    let (train, test) = digits().split(0.2, 1);
    let trainer = Trainer::new(
        TrainConfig {
            hidden: vec![32],
            ..Default::default()
        },
        train,
        test,
    );
    let trainer = trainer.unwrap_or_else(|e| panic!("{e}"));
    let (loss, _) = trainer.evaluate(&trainer.test);
    assert!((loss - 10f64.ln()).abs() < 0.5, "initial loss {loss}");
}

#[test]
fn mnist_one_hidden_layer_reaches_95_percent_on_held_out_digits() {
    let (train, test) = mnist().split(0.2, 1);
    assert_eq!((train.len(), test.len()), (8000, 2000));
    let config = TrainConfig {
        hidden: vec![128],
        epochs: 15,
        lr: 0.05,
        batch_size: 64,
        ..Default::default()
    };
    let accuracy = final_test_accuracy(config, train, test);
    assert!(accuracy >= 0.95, "MNIST test accuracy {accuracy:.4}");
}

/// Trains to the end and returns the last epoch's test accuracy.
fn final_test_accuracy(config: TrainConfig, train: Dataset, test: Dataset) -> f64 {
    let mut trainer = Trainer::new(config, train, test).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(trainer.run(), &Status::Finished);
    let last = trainer
        .history
        .last()
        .unwrap_or_else(|| panic!("no epochs"));
    last.test_accuracy
}

#[test]
fn optical_digits_reach_96_percent() {
    let (train, test) = digits().split(0.2, 1);
    let config = TrainConfig {
        hidden: vec![128],
        epochs: 40,
        lr: 0.05,
        batch_size: 32,
        ..Default::default()
    };
    let accuracy = final_test_accuracy(config, train, test);
    assert!(accuracy >= 0.96, "digits test accuracy {accuracy:.4}");
}

#[test]
fn two_spirals_are_learned() {
    let data = Synthetic::Spirals.generate(1000, 1);
    let (train, test) = data.split(0.2, 1);
    let config = TrainConfig {
        hidden: vec![64, 64],
        activation: Activation::Tanh,
        optimizer: OptimizerKind::adam(),
        lr: 0.01,
        epochs: 200,
        batch_size: 32,
        ..Default::default()
    };
    let mut trainer = Trainer::new(config, train, test).unwrap_or_else(|e| panic!("{e}"));
    trainer.run();
    let (_, train_accuracy) = trainer.evaluate(&trainer.train);
    assert!(
        train_accuracy >= 0.98,
        "spirals train accuracy {train_accuracy:.4}"
    );
}

#[test]
fn divergence_stops_training_with_the_step() {
    let (train, test) = digits().split(0.2, 1);
    let config = TrainConfig {
        lr: 1e30,
        optimizer: OptimizerKind::Sgd,
        epochs: 3,
        ..Default::default()
    };
    let mut trainer = Trainer::new(config, train, test).unwrap_or_else(|e| panic!("{e}"));
    match trainer.run().clone() {
        Status::Diverged { step, .. } => {
            assert!((1..50).contains(&step), "diverged at step {step}");
        }
        other => panic!("expected divergence, got {other:?}"),
    }
}

#[test]
fn bad_configs_are_errors() {
    let (train, test) = Synthetic::Xor.generate(50, 1).split(0.2, 1);
    for config in [
        TrainConfig {
            lr: f64::NAN,
            ..Default::default()
        },
        TrainConfig {
            lr: -1.0,
            ..Default::default()
        },
        TrainConfig {
            batch_size: 0,
            ..Default::default()
        },
        TrainConfig {
            hidden: vec![0],
            ..Default::default()
        },
        TrainConfig {
            epochs: 0,
            ..Default::default()
        },
    ] {
        assert!(Trainer::new(config, train.clone(), test.clone()).is_err());
    }
}

#[test]
fn training_is_reproducible_for_a_seed() {
    let run = || {
        let (train, test) = Synthetic::Moons.generate(200, 3).split(0.2, 3);
        let mut t = Trainer::new(
            TrainConfig {
                hidden: vec![8],
                epochs: 3,
                ..Default::default()
            },
            train,
            test,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        t.run();
        t.losses.clone()
    };
    assert_eq!(run(), run());
}

#[test]
fn every_optimizer_name_reads_back_as_itself() {
    for name in OptimizerKind::NAMES {
        assert_eq!(
            OptimizerKind::by_name(name).map(OptimizerKind::name),
            Ok(name)
        );
    }
}

/// State packed in bf16 (decoded block by block) steps exactly like the
/// same rounded state kept whole, across block edges, for every rule.
#[test]
fn packed_optimizer_state_steps_exactly_like_rounded_whole_state() {
    use std::sync::Arc;
    let kinds = [
        OptimizerKind::Momentum {
            mu: 0.9,
            nesterov: false,
        },
        OptimizerKind::Momentum {
            mu: 0.9,
            nesterov: true,
        },
        OptimizerKind::adam(),
    ];
    let n = optimizers::STATE_BLOCK + 905;
    let values = |seed: u32, len: usize| -> Vec<f32> {
        (0..len as u32)
            .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 1000.0 - 1.0)
            .collect()
    };
    for kind in kinds {
        let run = |pack: bool| {
            let rounder = crate::mixed::Rounder::by_name("bf16").expect("bf16");
            let mut o = optimizers::Optimizer::<f32>::new(kind, 0.01, 0.001);
            o.state_hook = Some(Arc::new(move |d: &mut [f32]| rounder.round_slice(d)));
            o.state_packing = pack.then_some(crate::autograd::Half::Bf16);
            let mut w = Tensor::new(values(1, n), &[n]);
            let mut b = Tensor::new(values(2, 7), &[7]);
            for step in 0..3 {
                let grads = [
                    Tensor::new(values(10 + step, n), &[n]),
                    Tensor::new(values(20 + step, 7), &[7]),
                ];
                o.step(&mut [&mut w, &mut b], &grads);
            }
            let bits: Vec<u32> = w.data.iter().chain(&b.data).map(|x| x.to_bits()).collect();
            (bits, o.state_packed(), o.scratch_elements())
        };
        let (whole, packed) = (run(false), run(true));
        assert_eq!(whole.0, packed.0, "{kind:?}");
        assert!(!whole.1 && packed.1, "{kind:?}");
        assert_eq!(whole.2, 0);
        assert_eq!(
            packed.2,
            kind.states() * optimizers::STATE_BLOCK,
            "{kind:?}"
        );
    }
}

/// Packing without a rounding hook: state that leaves the format is kept
/// whole, state that stays in it (a parameter whose gradient is zero)
/// stays packed, and every update lands either way.
#[test]
fn packed_state_without_a_hook_loses_no_update() {
    let run = |pack: bool| {
        let mut o = optimizers::Optimizer::<f32>::new(OptimizerKind::adam(), 0.01, 0.0);
        o.state_packing = pack.then_some(crate::autograd::Half::Bf16);
        let mut w = Tensor::new(vec![0.3f32, -0.7, 1.1], &[3]);
        let mut b = Tensor::new(vec![0.25f32; 2], &[2]);
        let grads = [
            Tensor::new(vec![0.1f32, -0.2, 0.3], &[3]),
            Tensor::zeros(&[2]),
        ];
        for _ in 0..3 {
            o.step(&mut [&mut w, &mut b], &grads);
        }
        let packed: Vec<bool> = o
            .state_tensors()
            .map(crate::autograd::Stored::is_packed)
            .collect();
        (w.data, b.data, packed)
    };
    let (plain, packed) = (run(false), run(true));
    assert_eq!(plain.0, packed.0);
    assert_eq!(plain.1, packed.1);
    // m and v of W left bf16; those of b (zero) did not.
    assert_eq!(packed.2, vec![false, true, false, true]);
}
