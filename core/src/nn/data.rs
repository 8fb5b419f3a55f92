//! Data sets: the two real digit sets shipped under `assets/data/`, seeded
//! synthetic 2-D sets, loading by name, train/test splits and a seeded data
//! loader.

use rand::seq::SliceRandom as _;
use rand::{RngExt as _, SeedableRng as _};
use serde::{Deserialize, Serialize};

use super::DataError;

/// A classification data set: `count` rows of `features` f32 values.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    pub name: String,
    pub features: usize,
    pub classes: usize,
    pub x: Vec<f32>,
    pub y: Vec<usize>,
    /// Rows × columns when each example is an image.
    pub image: Option<(usize, usize)>,
}

impl Dataset {
    pub fn len(&self) -> usize {
        self.y.len()
    }

    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    pub fn example(&self, i: usize) -> &[f32] {
        &self.x[i * self.features..(i + 1) * self.features]
    }

    /// The rows at `indices`, as a batch.
    pub fn gather(&self, indices: &[usize]) -> (Vec<f32>, Vec<usize>) {
        let mut x = Vec::with_capacity(indices.len() * self.features);
        let mut y = Vec::with_capacity(indices.len());
        for &i in indices {
            x.extend_from_slice(self.example(i));
            y.push(self.y[i]);
        }
        (x, y)
    }

    fn subset(&self, indices: &[usize], suffix: &str) -> Self {
        let (x, y) = self.gather(indices);
        Self {
            name: format!("{} ({suffix})", self.name),
            x,
            y,
            ..self.clone()
        }
    }

    /// The first `n` rows (all of them when there are fewer).
    pub fn first(&self, n: usize) -> Self {
        let indices: Vec<usize> = (0..n.min(self.len())).collect();
        self.subset(&indices, "first")
    }

    /// A seeded shuffle, then the first `len − test` rows train and the rest test.
    pub fn split(&self, test_fraction: f64, seed: u64) -> (Self, Self) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
        let test = ((self.len() as f64) * test_fraction).round() as usize;
        let (train, test) = order.split_at(self.len() - test.min(self.len()));
        (self.subset(train, "train"), self.subset(test, "test"))
    }

    /// Reads a `.dlds` file (see `scripts/gen-datasets.py`): zlib-compressed
    /// header, labels and pixels; pixels are scaled to [0, 1].
    pub fn from_dlds(name: &str, compressed: &[u8]) -> Result<Self, DataError> {
        Ok(Packed::from_dlds(name, compressed)?.to_dataset())
    }
}

/// An image set as the file holds it: one label byte per example, then
/// every example's pixels as bytes (0 to `max_value`).
#[derive(Clone, Debug, PartialEq)]
pub struct Packed {
    pub name: String,
    pub rows: usize,
    pub cols: usize,
    pub classes: usize,
    pub max_value: u8,
    pub labels: Vec<u8>,
    pub pixels: Vec<u8>,
}

impl Packed {
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    pub fn features(&self) -> usize {
        self.rows * self.cols
    }

    /// Example `i`'s pixel bytes.
    pub fn pixels_of(&self, i: usize) -> &[u8] {
        let f = self.features();
        &self.pixels[i * f..(i + 1) * f]
    }

    /// A pixel byte as the data set holds it: scaled to [0, 1].
    pub fn decode(&self, byte: u8) -> f32 {
        f32::from(byte) / f32::from(self.max_value)
    }

    /// Decompresses and checks a `.dlds` file.
    pub fn from_dlds(name: &str, compressed: &[u8]) -> Result<Self, DataError> {
        let raw = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(compressed, 64 << 20)
            .map_err(|err| DataError::NotCompressed {
                name: name.to_owned(),
                detail: format!("{err:?}"),
            })?;
        let header = raw.get(..16).ok_or_else(|| DataError::TooShort {
            name: name.to_owned(),
        })?;
        if &header[..5] != b"DLDS1" {
            return Err(DataError::NotDlds {
                name: name.to_owned(),
            });
        }
        let count = u32::from_le_bytes([header[5], header[6], header[7], header[8]]) as usize;
        let rows = usize::from(u16::from_le_bytes([header[9], header[10]]));
        let cols = usize::from(u16::from_le_bytes([header[11], header[12]]));
        let classes = usize::from(u16::from_le_bytes([header[13], header[14]]));
        let max_value = header[15];
        let features = rows * cols;
        let body = &raw[16..];
        if body.len() != count * (1 + features) || max_value == 0 || classes == 0 {
            return Err(DataError::HeaderMismatch {
                name: name.to_owned(),
                count,
                rows,
                cols,
            });
        }
        let (labels, pixels) = body.split_at(count);
        if let Some(bad) = labels.iter().find(|l| usize::from(**l) >= classes) {
            return Err(DataError::Label {
                name: name.to_owned(),
                label: *bad,
            });
        }
        Ok(Self {
            name: name.to_owned(),
            rows,
            cols,
            classes,
            max_value,
            labels: labels.to_vec(),
            pixels: pixels.to_vec(),
        })
    }

    /// The data set: every pixel decoded.
    pub fn to_dataset(&self) -> Dataset {
        Dataset {
            name: self.name.clone(),
            features: self.features(),
            classes: self.classes,
            x: self.pixels.iter().map(|p| self.decode(*p)).collect(),
            y: self.labels.iter().map(|l| usize::from(*l)).collect(),
            image: Some((self.rows, self.cols)),
        }
    }
}

/// The names [`load`] accepts.
pub const NAMES: [&str; 6] = ["mnist", "digits", "spirals", "moons", "circles", "xor"];

/// Points in each synthetic set.
pub const SYNTHETIC_POINTS: usize = 1000;

/// The held-out fraction used everywhere (MNIST 10k: 8,000 / 2,000).
pub const TEST_FRACTION: f64 = 0.2;

/// The MNIST file, compiled in on native builds (the web build fetches it:
/// see the lessons crate).
#[cfg(not(target_arch = "wasm32"))]
const MNIST: Option<&[u8]> = Some(include_bytes!("../../../assets/data/mnist10k.dlds"));
#[cfg(target_arch = "wasm32")]
const MNIST: Option<&[u8]> = None;

const DIGITS: &[u8] = include_bytes!("../../../assets/data/digits.dlds");

/// Whether `name` is MNIST and this build does not have it compiled in (the
/// web build downloads it first).
pub fn needs_fetch(name: &str) -> bool {
    MNIST.is_none() && name.trim().eq_ignore_ascii_case("mnist")
}

/// Loads a data set by name (any case); `seed` seeds the synthetic ones.
pub fn load(name: &str, seed: u64) -> Result<Dataset, DataError> {
    match name.trim().to_ascii_lowercase().as_str() {
        "mnist" => {
            let bytes = MNIST.ok_or(DataError::NotCompiledIn)?;
            Dataset::from_dlds("mnist", bytes)
        }
        "digits" => Dataset::from_dlds("digits", DIGITS),
        other => Synthetic::ALL
            .into_iter()
            .find(|s| s.name() == other)
            .map(|s| s.generate(SYNTHETIC_POINTS, seed))
            .ok_or_else(|| DataError::Unknown {
                name: name.to_owned(),
                choices: NAMES.join(", "),
            }),
    }
}

/// Loads an image set by name as its file holds it (MNIST or digits).
pub fn load_packed(name: &str) -> Result<Packed, DataError> {
    match name.trim().to_ascii_lowercase().as_str() {
        "mnist" => Packed::from_dlds("mnist", MNIST.ok_or(DataError::NotCompiledIn)?),
        "digits" => Packed::from_dlds("digits", DIGITS),
        _ => Err(DataError::Unknown {
            name: name.to_owned(),
            choices: "mnist, digits".to_owned(),
        }),
    }
}

/// Loads a data set by name and splits it into (train, test) with
/// [`TEST_FRACTION`] held out, both seeded by `seed`.
pub fn load_split(name: &str, seed: u64) -> Result<(Dataset, Dataset), DataError> {
    Ok(load(name, seed)?.split(TEST_FRACTION, seed))
}

/// The 2-D synthetic sets, for decision boundaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Synthetic {
    Spirals,
    Moons,
    Circles,
    Xor,
}

impl Synthetic {
    pub const ALL: [Self; 4] = [Self::Spirals, Self::Moons, Self::Circles, Self::Xor];

    pub fn name(self) -> &'static str {
        match self {
            Self::Spirals => "spirals",
            Self::Moons => "moons",
            Self::Circles => "circles",
            Self::Xor => "xor",
        }
    }

    /// `count` seeded points in two classes, with a little Gaussian-ish noise.
    pub fn generate(self, count: usize, seed: u64) -> Dataset {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        fn noise(rng: &mut rand::rngs::StdRng, scale: f32) -> f32 {
            (rng.random::<f32>() + rng.random::<f32>() + rng.random::<f32>() - 1.5) * scale
        }
        let mut x = Vec::with_capacity(count * 2);
        let mut y = Vec::with_capacity(count);
        for i in 0..count {
            let class = i % 2;
            let t = (i / 2) as f32 / (count / 2).max(1) as f32; // 0..1 along the class
            let (px, py) = match self {
                Self::Spirals => {
                    let r = 0.1 + 0.9 * t;
                    let angle =
                        3.0 * std::f32::consts::PI * t + class as f32 * std::f32::consts::PI;
                    (
                        r * angle.cos() + noise(&mut rng, 0.04),
                        r * angle.sin() + noise(&mut rng, 0.04),
                    )
                }
                Self::Moons => {
                    let angle = std::f32::consts::PI * t;
                    if class == 0 {
                        (
                            angle.cos() + noise(&mut rng, 0.15),
                            angle.sin() + noise(&mut rng, 0.15),
                        )
                    } else {
                        (
                            1.0 - angle.cos() + noise(&mut rng, 0.15),
                            0.5 - angle.sin() + noise(&mut rng, 0.15),
                        )
                    }
                }
                Self::Circles => {
                    let angle = 2.0 * std::f32::consts::PI * t;
                    let r = if class == 0 { 0.4 } else { 1.0 };
                    (
                        r * angle.cos() + noise(&mut rng, 0.1),
                        r * angle.sin() + noise(&mut rng, 0.1),
                    )
                }
                Self::Xor => {
                    let (ax, ay) = (
                        rng.random_range(-1.0f32..1.0),
                        rng.random_range(-1.0f32..1.0),
                    );
                    let c = usize::from((ax > 0.0) != (ay > 0.0));
                    x.extend([ax, ay]);
                    y.push(c);
                    continue;
                }
            };
            x.extend([px, py]);
            y.push(class);
        }
        Dataset {
            name: self.name().to_owned(),
            features: 2,
            classes: 2,
            x,
            y,
            image: None,
        }
    }
}

/// Batches of indices: a seeded shuffle each epoch, then fixed-size batches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataLoader {
    pub len: usize,
    pub batch_size: usize,
    pub shuffle: bool,
    pub drop_last: bool,
    pub seed: u64,
}

impl DataLoader {
    /// The batches of epoch `epoch` (its shuffle is seeded by `seed` and the epoch).
    pub fn batches(&self, epoch: u64) -> Vec<Vec<usize>> {
        let mut order: Vec<usize> = (0..self.len).collect();
        if self.shuffle {
            let seed = self.seed ^ epoch.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
        }
        let size = self.batch_size.max(1);
        order
            .chunks(size)
            .filter(|chunk| !self.drop_last || chunk.len() == size)
            .map(<[usize]>::to_vec)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loader_shuffles_reproducibly_and_drops_the_last_partial_batch() {
        let loader = DataLoader {
            len: 10,
            batch_size: 4,
            shuffle: true,
            drop_last: true,
            seed: 3,
        };
        let a = loader.batches(0);
        assert_eq!(a, loader.batches(0));
        assert_ne!(a, loader.batches(1), "each epoch reshuffles");
        assert_eq!(a.len(), 2);
        let keep = DataLoader {
            drop_last: false,
            ..loader.clone()
        };
        let all: Vec<usize> = keep.batches(0).concat();
        let mut sorted = all.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..10).collect::<Vec<_>>(),
            "every example exactly once"
        );
        let plain = DataLoader {
            shuffle: false,
            ..keep
        };
        assert_eq!(plain.batches(5)[0], vec![0, 1, 2, 3]);
    }

    #[test]
    fn split_is_seeded_and_disjoint() {
        let data = Synthetic::Moons.generate(100, 1);
        let (train, test) = data.split(0.2, 9);
        assert_eq!((train.len(), test.len()), (80, 20));
        assert_eq!(data.split(0.2, 9).1, test);
        assert_ne!(data.split(0.2, 10).1, test);
    }

    #[test]
    fn shipped_data_sets_load() {
        let digits =
            Dataset::from_dlds("digits", include_bytes!("../../../assets/data/digits.dlds"));
        let digits = digits.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (digits.len(), digits.features, digits.classes),
            (1797, 64, 10)
        );
        assert!(digits.x.iter().all(|v| (0.0..=1.0).contains(v)));
        assert!(Dataset::from_dlds("junk", b"not zlib").is_err());
        let mut corrupt = include_bytes!("../../../assets/data/digits.dlds").to_vec();
        corrupt.truncate(1000);
        assert!(Dataset::from_dlds("cut", &corrupt).is_err());
    }

    #[test]
    fn every_name_loads() {
        for name in NAMES {
            let data = load(name, 1).unwrap_or_else(|e| panic!("{e}"));
            assert!(!data.is_empty());
            assert!(!needs_fetch(name));
        }
        assert_eq!(load(" Digits ", 1).map(|d| d.len()), Ok(1797));
        let err = load("cifar", 1).map(|d| d.len());
        assert!(matches!(&err, Err(DataError::Unknown { name, .. }) if name == "cifar"));
        assert_eq!(
            err.map_err(|e| e.to_string()),
            Err(
                "unknown data set `cifar`; use one of mnist, digits, spirals, moons, circles, xor"
                    .to_owned()
            )
        );
        let (train, test) = load_split("xor", 3).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(train.len() + test.len(), SYNTHETIC_POINTS);
    }

    #[test]
    fn synthetic_sets_are_balanced_and_seeded() {
        for set in Synthetic::ALL {
            let d = set.generate(200, 4);
            assert_eq!(d.len(), 200);
            assert_eq!(d, set.generate(200, 4));
            let ones = d.y.iter().filter(|y| **y == 1).count();
            assert!(
                (60..=140).contains(&ones),
                "{} has {ones} of class 1",
                set.name()
            );
        }
    }
}
