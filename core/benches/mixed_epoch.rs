//! Benchmark (not a test): one MNIST epoch (784-128-10, batch 64, SGD with
//! momentum) in plain fp32 and under emulated bf16 and fp16 policies (fp32
//! master weights, dynamic loss scaling), in the same run: the three trainers
//! take turns, one epoch each per round, and the medians are compared.
//! `cargo bench -p dlsys-core --bench mixed_epoch`

use std::time::Instant;

use dlsys_core::mixed::{LossScale, MasterWeights, Policy};
use dlsys_core::nn::{Dataset, TrainConfig, Trainer};

const ROUNDS: usize = 7;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let (train, test) =
        Dataset::from_dlds("mnist", include_bytes!("../../assets/data/mnist10k.dlds"))
            .unwrap_or_else(|e| panic!("{e}"))
            .split(0.2, 1);
    let policies = [
        ("fp32", Policy::default()),
        (
            "bf16",
            Policy::uniform("bf16", LossScale::dynamic(), MasterWeights::Fp32),
        ),
        (
            "fp16",
            Policy::uniform("fp16", LossScale::dynamic(), MasterWeights::Fp32),
        ),
    ];
    let mut trainers: Vec<Trainer> = policies
        .iter()
        .map(|(_, policy)| {
            let config = TrainConfig {
                hidden: vec![128],
                epochs: ROUNDS as u64,
                lr: 0.05,
                batch_size: 64,
                policy: policy.clone(),
                ..Default::default()
            };
            Trainer::new(config, train.clone(), test.clone()).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    let mut times = vec![Vec::new(); trainers.len()];
    for _ in 0..ROUNDS {
        for (trainer, times) in trainers.iter_mut().zip(&mut times) {
            let start = Instant::now();
            trainer.run_epoch();
            times.push(start.elapsed().as_secs_f64());
        }
    }
    let medians: Vec<f64> = times.into_iter().map(median).collect();
    println!(
        "one epoch of {} examples, median of {ROUNDS} interleaved rounds:",
        train.len()
    );
    for ((name, _), t) in policies.iter().zip(&medians) {
        println!(
            "  {name} policy: {:7.1} ms   ratio to fp32: {:.2}x",
            t * 1e3,
            t / medians[0]
        );
    }
}
