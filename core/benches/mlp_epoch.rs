//! Benchmark (not a test): training throughput of a 784-128-10 MLP (ReLU,
//! SGD with momentum, batch 64) on MNIST 10k's 8,000 training images, one
//! epoch at a time. Prints samples per second (median over epochs).
//! `scripts/bench-mlp.sh` runs this and the NumPy reference in one go and
//! prints the ratio.

use std::time::Instant;

use dlsys_core::nn::{Dataset, Status, TrainConfig, Trainer};

fn main() {
    let epochs: u64 = std::env::var("EPOCHS")
        .ok()
        .and_then(|e| e.parse().ok())
        .unwrap_or(5);
    let data = Dataset::from_dlds("mnist", include_bytes!("../../assets/data/mnist10k.dlds"))
        .unwrap_or_else(|e| panic!("{e}"));
    let (train, test) = data.split(0.2, 1);
    let samples = train.len();
    let config = TrainConfig {
        hidden: vec![128],
        epochs,
        lr: 0.05,
        batch_size: 64,
        ..Default::default()
    };
    let mut trainer = Trainer::new(config, train, test).unwrap_or_else(|e| panic!("{e}"));
    let mut times = Vec::new();
    while trainer.status == Status::Running {
        let start = Instant::now();
        // The epoch's evaluation on the test set is included, as in the reference.
        trainer.run_epoch();
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let accuracy = trainer.history.last().map_or(f64::NAN, |h| h.test_accuracy);
    println!(
        "dlsys-core: {:.0} samples/s (median epoch {:.3} s over {} epochs, test acc {:.2}%)",
        samples as f64 / median,
        median,
        times.len(),
        100.0 * accuracy
    );
    println!("SAMPLES_PER_SECOND {}", samples as f64 / median);
}
