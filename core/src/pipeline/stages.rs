//! One batch built sample by sample: read, decode, augment, the optional
//! extra costs, collate — each stage timed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;
use web_time::{Duration, Instant};

use super::PipelineSettings;
use crate::nn::data::Packed;

/// Seconds each stage took over one batch (summed over its samples).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct StageTimes {
    pub read_s: f64,
    pub decode_s: f64,
    pub augment_s: f64,
    pub extra_cpu_s: f64,
    pub extra_io_s: f64,
    pub collate_s: f64,
}

impl StageTimes {
    /// The time that keeps a core busy.
    pub fn cpu_s(&self) -> f64 {
        self.read_s + self.decode_s + self.augment_s + self.extra_cpu_s + self.collate_s
    }

    pub fn total_s(&self) -> f64 {
        self.cpu_s() + self.extra_io_s
    }

    pub fn add(&mut self, other: &Self) {
        self.read_s += other.read_s;
        self.decode_s += other.decode_s;
        self.augment_s += other.augment_s;
        self.extra_cpu_s += other.extra_cpu_s;
        self.extra_io_s += other.extra_io_s;
        self.collate_s += other.collate_s;
    }

    pub fn scaled(&self, by: f64) -> Self {
        Self {
            read_s: self.read_s * by,
            decode_s: self.decode_s * by,
            augment_s: self.augment_s * by,
            extra_cpu_s: self.extra_cpu_s * by,
            extra_io_s: self.extra_io_s * by,
            collate_s: self.collate_s * by,
        }
    }
}

/// A batch ready for the trainer: `x` holds `y.len()` rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// Its place in the run.
    pub index: usize,
    pub worker: usize,
    pub x: Vec<f32>,
    pub y: Vec<usize>,
    /// The examples it holds (indices into the data set).
    pub samples: Vec<usize>,
    pub times: StageTimes,
    /// When its worker started and finished it, seconds after the run began.
    pub start_s: f64,
    pub end_s: f64,
}

/// When a batch's work stops: the loader's own flag (raised when it is
/// dropped) or the caller's (a Stop button, seen within a sample).
#[derive(Clone, Debug, Default)]
pub struct Stop {
    own: Arc<AtomicBool>,
    asked: Arc<AtomicBool>,
}

impl Stop {
    pub fn new(asked: Arc<AtomicBool>) -> Self {
        Self {
            own: Arc::default(),
            asked,
        }
    }

    pub fn raised(&self) -> bool {
        self.own.load(Ordering::Relaxed) || self.asked()
    }

    /// Whether the caller asked to stop.
    pub fn asked(&self) -> bool {
        self.asked.load(Ordering::Relaxed)
    }

    pub(super) fn raise(&self) {
        self.own.store(true, Ordering::Relaxed);
    }
}

/// The largest shift, in pixels, and the noise's half-width.
const SHIFT: i64 = 2;
const NOISE: f32 = 0.05;

/// The augmentation of sample `index` in `epoch`: its own seed, so any
/// worker makes the same one.
fn sample_rng(seed: u64, epoch: u64, index: usize) -> rand::rngs::StdRng {
    // Its own constant, so no sample shares its seed with an epoch's shuffle.
    let mix = seed
        ^ 0x5a3f_a11d_0e2b_7c41
        ^ epoch.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (index as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    rand::rngs::StdRng::seed_from_u64(mix)
}

/// Shifts the image by up to two pixels each way (zeros come in) and adds
/// uniform noise, clamped to [0, 1].
fn augment(image: &[f32], rows: usize, cols: usize, rng: &mut rand::rngs::StdRng) -> Vec<f32> {
    let dy = rng.random_range(-SHIFT..=SHIFT);
    let dx = rng.random_range(-SHIFT..=SHIFT);
    let mut out = vec![0.0f32; image.len()];
    for r in 0..rows as i64 {
        for c in 0..cols as i64 {
            let (sr, sc) = (r - dy, c - dx);
            let v = if (0..rows as i64).contains(&sr) && (0..cols as i64).contains(&sc) {
                image[(sr * cols as i64 + sc) as usize]
            } else {
                0.0
            };
            let noise = rng.random_range(-NOISE..=NOISE);
            out[(r * cols as i64 + c) as usize] = (v + noise).clamp(0.0, 1.0);
        }
    }
    out
}

/// Work a core really does for `us` microseconds (a decoder's arithmetic),
/// or until `stop`.
fn burn(us: u64, stop: &Stop) -> u64 {
    let until = Instant::now() + Duration::from_micros(us);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    while Instant::now() < until && !stop.raised() {
        for _ in 0..64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
    }
    x
}

/// A wait that holds no core (a read from a slow disk or network), in
/// slices so `stop` is seen. The web has no blocking sleep: its one
/// cooperative worker waits by spinning, and says so.
fn block(us: u64, stop: &Stop) {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let until = Instant::now() + Duration::from_micros(us);
        while !stop.raised() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(5)));
        }
    }
    #[cfg(target_arch = "wasm32")]
    {
        std::hint::black_box(burn(us, stop));
    }
}

/// Builds the batch of `samples` (run position `index`, epoch `epoch`) on
/// worker `worker`; `None` when `stop` was raised on the way.
#[allow(clippy::too_many_arguments)]
pub fn make_batch(
    data: &Packed,
    samples: &[usize],
    index: usize,
    epoch: u64,
    worker: usize,
    settings: &PipelineSettings,
    origin: Instant,
    stop: &Stop,
) -> Option<Batch> {
    let start = Instant::now();
    let mut times = StageTimes::default();
    let features = data.features();
    let mut x = Vec::with_capacity(samples.len() * features);
    let mut y = Vec::with_capacity(samples.len());
    let lap = |since: &mut Instant| {
        let now = Instant::now();
        let took = now.duration_since(*since).as_secs_f64();
        *since = now;
        took
    };
    for &i in samples {
        if stop.raised() {
            return None;
        }
        let mut clock = Instant::now();
        let bytes = data.pixels_of(i).to_vec();
        let label = usize::from(data.labels[i]);
        times.read_s += lap(&mut clock);
        let mut image: Vec<f32> = bytes.iter().map(|b| data.decode(*b)).collect();
        times.decode_s += lap(&mut clock);
        if settings.augment {
            image = augment(
                &image,
                data.rows,
                data.cols,
                &mut sample_rng(settings.seed, epoch, i),
            );
            times.augment_s += lap(&mut clock);
        }
        if settings.extra_cpu_us > 0 {
            std::hint::black_box(burn(settings.extra_cpu_us, stop));
            times.extra_cpu_s += lap(&mut clock);
        }
        if settings.extra_io_us > 0 {
            block(settings.extra_io_us, stop);
            times.extra_io_s += lap(&mut clock);
        }
        x.extend_from_slice(&image);
        y.push(label);
        times.collate_s += lap(&mut clock);
    }
    if stop.raised() {
        return None;
    }
    Some(Batch {
        index,
        worker,
        x,
        y,
        samples: samples.to_vec(),
        times,
        start_s: start.duration_since(origin).as_secs_f64(),
        end_s: origin.elapsed().as_secs_f64(),
    })
}
