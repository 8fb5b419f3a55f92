//! Every gradient compression trained the same steps on the same data as
//! the uncompressed run: the bytes each sends per step against the loss it
//! ends at and the test accuracy it reaches. What the data-parallel
//! lesson's table shows.

use serde::Serialize;

use super::compress::Compression;
use super::{CollectiveError, DpSettings, DpTrainer};
use crate::names::Words;
use crate::nn::{Dataset, evaluate};

/// The compressions compared, the uncompressed run first.
pub const COMPARED: [Compression; 6] = [
    Compression::None,
    Compression::Fp16,
    Compression::Bf16,
    Compression::TopK {
        fraction: 0.1,
        feedback: true,
    },
    Compression::TopK {
        fraction: 0.01,
        feedback: true,
    },
    Compression::TopK {
        fraction: 0.01,
        feedback: false,
    },
];

impl Compression {
    /// Its name in the learner's words.
    pub fn words(self) -> Words {
        match self {
            Self::None => Words::new("compression.none", &[]),
            Self::Fp16 => Words::new("compression.fp16", &[]),
            Self::Bf16 => Words::new("compression.bf16", &[]),
            Self::TopK { fraction, feedback } => Words::new(
                if feedback {
                    "compression.topk"
                } else {
                    "compression.topk_nofb"
                },
                &[("percent", &(100.0 * fraction))],
            ),
        }
    }
}

/// One compression's run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompressionRow {
    pub compression: Compression,
    pub bytes_per_step: u64,
    /// The mean loss of the last tenth of the steps.
    pub final_loss: f64,
    pub test_accuracy: f64,
    pub replicas_identical: bool,
}

/// Trains `settings` once per compression in [`COMPARED`] on `train`,
/// evaluated on `test`.
pub fn compare_compressions(
    settings: &DpSettings,
    train: &Dataset,
    test: &Dataset,
    threads: bool,
) -> Result<Vec<CompressionRow>, CollectiveError> {
    COMPARED
        .iter()
        .map(|compression| {
            let s = DpSettings {
                compression: *compression,
                ..settings.clone()
            };
            let mut trainer = DpTrainer::<f32>::new(&s, train, threads)?;
            while !trainer.done() {
                trainer.step()?;
            }
            let tail = (trainer.steps.len() / 10).max(1);
            let last = &trainer.steps[trainer.steps.len().saturating_sub(tail)..];
            let final_loss = last.iter().map(|x| x.loss).sum::<f64>() / last.len().max(1) as f64;
            let test_accuracy = evaluate(trainer.model(), test).1;
            let run = trainer.finish();
            Ok(CompressionRow {
                compression: *compression,
                bytes_per_step: run.bytes_per_step,
                final_loss,
                test_accuracy,
                replicas_identical: run.replicas_identical,
            })
        })
        .collect()
}
