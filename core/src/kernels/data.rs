//! The kernels' test inputs, seeded, each a hard case for some variant.

use rand::{RngExt as _, SeedableRng as _};
use serde::{Deserialize, Serialize};

/// Inputs for the kernels, each a hard case for some variant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Data {
    /// Normal-ish logits in about ±3 (uniform(0, 1) for reductions).
    #[default]
    Random,
    /// Logits of ±1e4: exp overflows unless the max is subtracted.
    HugeLogits,
    /// Some rows entirely −inf, others with a few −inf entries.
    NegInfRows,
    /// A few NaN and ±inf values sprinkled in.
    Specials,
}

impl Data {
    pub const ALL: [Self; 4] = [
        Self::Random,
        Self::HugeLogits,
        Self::NegInfRows,
        Self::Specials,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::Random => "random",
            Self::HugeLogits => "huge",
            Self::NegInfRows => "neg-inf",
            Self::Specials => "specials",
        }
    }

    /// `rows × cols` seeded values.
    pub fn generate(self, rows: usize, cols: usize, seed: u64, for_reduction: bool) -> Vec<f32> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut x: Vec<f32> = (0..rows * cols)
            .map(|_| {
                if for_reduction {
                    rng.random::<f32>()
                } else {
                    rng.random_range(-3.0f32..3.0)
                }
            })
            .collect();
        match self {
            Self::Random => {}
            Self::HugeLogits => {
                for v in &mut x {
                    *v *= 1e4 / 3.0;
                }
            }
            Self::NegInfRows => {
                for r in 0..rows {
                    let row = &mut x[r * cols..(r + 1) * cols];
                    if r % 3 == 1 {
                        row.fill(f32::NEG_INFINITY);
                    } else {
                        for v in row.iter_mut().step_by(5) {
                            *v = f32::NEG_INFINITY;
                        }
                        // Keep one finite value so the row has a maximum.
                        row[cols / 2] = rng.random_range(-3.0f32..3.0);
                    }
                }
            }
            Self::Specials => {
                for (i, v) in x.iter_mut().enumerate() {
                    match i % 997 {
                        3 => *v = f32::NAN,
                        500 => *v = f32::INFINITY,
                        700 => *v = f32::NEG_INFINITY,
                        _ => {}
                    }
                }
            }
        }
        x
    }
}
