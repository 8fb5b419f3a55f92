//! The data sets lessons and the CLI train on, by name.

use dlsys_core::nn::{Dataset, Synthetic};

/// The names `--dataset` and the trainer accept.
pub const NAMES: [&str; 6] = ["mnist", "digits", "spirals", "moons", "circles", "xor"];

/// The MNIST file, compiled in on native builds (the web build fetches it).
#[cfg(not(target_arch = "wasm32"))]
const MNIST: Option<&[u8]> = Some(include_bytes!("../../assets/data/mnist10k.dlds"));
#[cfg(target_arch = "wasm32")]
const MNIST: Option<&[u8]> = None;

const DIGITS: &[u8] = include_bytes!("../../assets/data/digits.dlds");

/// Points in each synthetic set.
pub const SYNTHETIC_POINTS: usize = 1000;

/// Loads a data set by name; `seed` seeds the synthetic ones.
pub fn load(name: &str, seed: u64) -> Result<Dataset, String> {
    match name.trim().to_ascii_lowercase().as_str() {
        "mnist" => match MNIST {
            Some(bytes) => Dataset::from_dlds("mnist", bytes),
            None => Err("MNIST is fetched on demand in the web build".to_owned()),
        },
        "digits" => Dataset::from_dlds("digits", DIGITS),
        other => Synthetic::ALL
            .into_iter()
            .find(|s| s.name() == other)
            .map(|s| s.generate(SYNTHETIC_POINTS, seed))
            .ok_or_else(|| format!("unknown data set `{name}`; use one of {}", NAMES.join(", "))),
    }
}

/// The held-out fraction used everywhere (MNIST 10k: 8,000 / 2,000).
pub const TEST_FRACTION: f64 = 0.2;

#[cfg(test)]
mod tests {
    #[test]
    fn every_name_loads() {
        for name in super::NAMES {
            let data = super::load(name, 1).unwrap_or_else(|e| panic!("{e}"));
            assert!(!data.is_empty());
        }
        assert!(super::load("cifar", 1).is_err());
    }
}
