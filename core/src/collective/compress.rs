//! Gradient compression for data-parallel training: what each worker puts
//! on the wire instead of its f32 gradient.
//!
//! - **fp16 / bf16**: the gradient rounded to a 2-byte format and summed on
//!   the ring in that format (every partial sum rounded again, as a
//!   half-precision all-reduce does): half the bytes. fp16 flushes tiny
//!   gradients to zero and overflows past 65,504; bf16 keeps f32's range
//!   with 8 bits of significand.
//! - **Top-k with error feedback** (as in Lin et al. 2018, Deep Gradient
//!   Compression): each worker adds what it did not send before (its
//!   residual) to its gradient, sends only the k largest magnitudes as
//!   (index, value) pairs and keeps the rest as its new residual. The pairs
//!   are all-gathered on the ring (a sparse sum is not a ring all-reduce)
//!   and every worker adds them up in worker order, so all replicas hold
//!   the same sum. Without the feedback the dropped coordinates are lost.

use std::sync::OnceLock;

use serde::Serialize;

use super::exec::{Element, run};
use super::schedule::Schedule;
use super::{Algorithm, CollectiveError, Op};
use crate::autograd::Real;
use crate::float::{Format, Rounding};

/// What the workers send.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub enum Compression {
    /// The gradient as it is, summed by the chosen algorithm.
    #[default]
    None,
    Fp16,
    Bf16,
    /// The largest `fraction` of the coordinates (at least one), with or
    /// without error feedback.
    TopK {
        fraction: f64,
        feedback: bool,
    },
}

impl Compression {
    /// The flag's spelling: none, fp16, bf16, topk:F, topk-nofb:F.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().to_ascii_lowercase();
        match text.as_str() {
            "none" => return Some(Self::None),
            "fp16" => return Some(Self::Fp16),
            "bf16" => return Some(Self::Bf16),
            _ => {}
        }
        let (name, fraction) = text.split_once(':')?;
        let feedback = match name {
            "topk" => true,
            "topk-nofb" => false,
            _ => return None,
        };
        let fraction: f64 = fraction.parse().ok()?;
        (fraction > 0.0 && fraction <= 1.0).then_some(Self::TopK { fraction, feedback })
    }

    /// The coordinates top-k sends of `elements`.
    pub fn kept(fraction: f64, elements: usize) -> usize {
        ((fraction * elements as f64).round() as usize).clamp(1, elements.max(1))
    }
}

/// A value of a 2-byte format as the float emulator rounds it (its bit
/// pattern; `BF16` picks bf16 over fp16): what a half-precision
/// all-reduce carries, two bytes on the wire, each sum rounded once to
/// nearest-even.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Packed<const BF16: bool>(u16);

impl<const BF16: bool> Packed<BF16> {
    fn format() -> &'static Format {
        static FP16: OnceLock<Format> = OnceLock::new();
        static BF16_FORMAT: OnceLock<Format> = OnceLock::new();
        if BF16 {
            BF16_FORMAT.get_or_init(Format::bf16)
        } else {
            FP16.get_or_init(Format::fp16)
        }
    }

    pub fn from_f64(x: f64) -> Self {
        Self(Self::format().encode_f64(x, Rounding::NearestEven) as u16)
    }
}

impl<const BF16: bool> Element for Packed<BF16> {
    /// The two values' exact sum (two 2-byte values add exactly in f64),
    /// rounded once.
    fn add(self, other: Self) -> Self {
        Self::from_f64(self.to_f64() + other.to_f64())
    }
    fn to_f64(self) -> f64 {
        Self::format().decode(u32::from(self.0))
    }
}

/// The workers' gradients summed through the compression: the sum each
/// worker ends with (the same bits on all, or an error) and the bytes all
/// workers sent.
/// `residuals` holds each worker's top-k residual between steps.
pub fn compressed_sum<T: Real>(
    compression: Compression,
    algorithm: Algorithm,
    gradients: &[Vec<T>],
    residuals: &mut [Vec<T>],
) -> Result<(Vec<Vec<T>>, u64), CollectiveError> {
    match compression {
        Compression::None | Compression::Fp16 | Compression::Bf16 => {
            // A plain sum is the trainer's own all-reduce.
            let half = |g: &[T]| g.iter().map(|v| v.to_f64()).collect::<Vec<f64>>();
            let values: Vec<Vec<f64>> = gradients.iter().map(|g| half(g)).collect();
            match compression {
                Compression::Fp16 => ring_in(algorithm, &values, Packed::<false>::from_f64),
                Compression::Bf16 => ring_in(algorithm, &values, Packed::<true>::from_f64),
                _ => ring_in(algorithm, &values, |v| v as f32),
            }
        }
        Compression::TopK { fraction, feedback } => top_k(gradients, residuals, fraction, feedback),
    }
}

/// An all-reduce of `values` in the element type `E` (each value rounded
/// into it first).
fn ring_in<T: Real, E: Element>(
    algorithm: Algorithm,
    values: &[Vec<f64>],
    into: fn(f64) -> E,
) -> Result<(Vec<Vec<T>>, u64), CollectiveError> {
    let n = values.len();
    let elements = values.first().map_or(0, Vec::len);
    let schedule = Schedule::new(algorithm, Op::AllReduce, n, elements)?;
    let mut buffers: Vec<Vec<E>> = values
        .iter()
        .map(|v| v.iter().map(|x| into(*x)).collect())
        .collect();
    if schedule.nodes > n {
        buffers.push(vec![E::default(); elements]);
    }
    let sent = run(&schedule, &mut buffers)?.total_sent();
    let sums: Vec<Vec<T>> = buffers[..n]
        .iter()
        .map(|b| b.iter().map(|v| T::from_f64(v.to_f64())).collect())
        .collect();
    same_on_every_worker(sums, sent)
}

/// The workers' sums, when they hold the same bits.
fn same_on_every_worker<T: Real>(
    sums: Vec<Vec<T>>,
    sent: u64,
) -> Result<(Vec<Vec<T>>, u64), CollectiveError> {
    let bits = |s: &[T]| s.iter().map(|v| v.to_f64().to_bits()).collect::<Vec<u64>>();
    let first = sums.first().map(|s| bits(s)).unwrap_or_default();
    if sums.iter().any(|s| bits(s) != first) {
        return Err(CollectiveError::WorkerFailed);
    }
    Ok((sums, sent))
}

/// Top-k with (or without) error feedback; the pairs all-gathered on the
/// ring as f32 words (the index's bits, then the value).
fn top_k<T: Real>(
    gradients: &[Vec<T>],
    residuals: &mut [Vec<T>],
    fraction: f64,
    feedback: bool,
) -> Result<(Vec<Vec<T>>, u64), CollectiveError> {
    let n = gradients.len();
    let elements = gradients.first().map_or(0, Vec::len);
    let k = Compression::kept(fraction, elements);
    let mut buffers = vec![vec![0.0f32; n * 2 * k]; n];
    for (w, gradient) in gradients.iter().enumerate() {
        let residual = &mut residuals[w];
        residual.resize(elements, T::ZERO);
        let total: Vec<T> = gradient
            .iter()
            .zip(residual.iter())
            .map(|(g, r)| if feedback { *g + *r } else { *g })
            .collect();
        let mut order: Vec<usize> = (0..elements).collect();
        // Largest magnitude first; ties by index, so the choice is fixed.
        order.sort_by(|a, b| {
            total[*b]
                .to_f64()
                .abs()
                .total_cmp(&total[*a].to_f64().abs())
                .then(a.cmp(b))
        });
        let chosen = &order[..k];
        let chunk = &mut buffers[w][w * 2 * k..(w + 1) * 2 * k];
        for (slot, i) in chosen.iter().enumerate() {
            chunk[2 * slot] = f32::from_bits(*i as u32);
            chunk[2 * slot + 1] = total[*i].to_f64() as f32;
        }
        *residual = total;
        for i in chosen {
            residual[*i] = T::ZERO;
        }
        if !feedback {
            residual.iter_mut().for_each(|r| *r = T::ZERO);
        }
    }
    let schedule = Schedule::new(Algorithm::Ring, Op::AllGather, n, n * 2 * k)?;
    let sent = run(&schedule, &mut buffers)?.total_sent();
    // Every worker adds the pairs in worker order: the same sum on each.
    let sums: Vec<Vec<T>> = buffers
        .iter()
        .map(|pairs| {
            let mut sum = vec![T::ZERO; elements];
            for pair in pairs.chunks_exact(2) {
                let i = pair[0].to_bits() as usize;
                if let Some(s) = sum.get_mut(i) {
                    *s += T::from_f64(f64::from(pair[1]));
                }
            }
            sum
        })
        .collect();
    same_on_every_worker(sums, sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grads() -> Vec<Vec<f32>> {
        vec![
            vec![1.0, -4.0, 0.5, 0.0, 2.0, 1e-6],
            vec![-1.0, 3.0, 0.25, 8.0, -2.0, 1e-6],
            vec![0.5, 0.5, 0.5, 0.5, 0.5, 1e-6],
        ]
    }

    #[test]
    fn packed_values_are_two_bytes_and_add_as_the_half_crate_does() {
        assert_eq!(std::mem::size_of::<Packed<false>>(), 2);
        for (a, b) in [(1.0, 1e-3), (65_000.0, 100.0), (1e-7, 3e-8), (-2.5, 0.333)] {
            let sum = Packed::<false>::from_f64(a).add(Packed::<false>::from_f64(b));
            let want = half::f16::from_f64(a) + half::f16::from_f64(b);
            assert_eq!(
                sum.to_f64().to_bits(),
                f64::from(want).to_bits(),
                "{a} + {b}"
            );
            let sum = Packed::<true>::from_f64(a).add(Packed::<true>::from_f64(b));
            let want = half::bf16::from_f64(a) + half::bf16::from_f64(b);
            assert_eq!(
                sum.to_f64().to_bits(),
                f64::from(want).to_bits(),
                "{a} + {b}"
            );
        }
    }

    #[test]
    fn half_formats_send_half_the_bytes_and_round_the_sum() {
        let g = grads();
        let first = |c| {
            let mut r = vec![Vec::new(); 3];
            let (sums, bytes) = compressed_sum(c, Algorithm::Ring, &g, &mut r).unwrap();
            assert_eq!(sums.len(), 3);
            (sums[0].clone(), bytes)
        };
        let (full, full_bytes) = first(Compression::None);
        let (fp16, fp16_bytes) = first(Compression::Fp16);
        let (bf16, bf16_bytes) = first(Compression::Bf16);
        assert_eq!(fp16_bytes * 2, full_bytes);
        assert_eq!(bf16_bytes * 2, full_bytes);
        // 3 × 1e-6 survives in f32 and bf16; in fp16 1e-6 is a subnormal
        // (rounds to 1.013e-6) and the sum is rounded again.
        assert_eq!(&full[..5], &[0.5, -0.5, 1.25, 8.5, 0.5]);
        assert_eq!(&fp16[..5], &full[..5]);
        assert_eq!(&bf16[..5], &full[..5]);
        assert!((f64::from(fp16[5]) - 3e-6).abs() < 1e-7 && fp16[5] != full[5]);
    }

    #[test]
    fn top_k_sends_k_pairs_and_feeds_back_the_rest() {
        let g = grads();
        let mut residuals = vec![Vec::new(); 3];
        let topk = Compression::TopK {
            fraction: 2.0 / 6.0,
            feedback: true,
        };
        let (sum, bytes) = compressed_sum(topk, Algorithm::Ring, &g, &mut residuals).unwrap();
        // k = 2 pairs per worker, all-gathered: each worker sends the
        // other two workers' 2 × 2 words, 4 bytes each.
        assert_eq!(bytes, 3 * 2 * (2 * 2 * 4));
        // Worker 0 sends −4 and 2, worker 1 8 and 3, worker 2 its first
        // two 0.5s (ties by index).
        assert!(sum.iter().all(|s| s == &sum[0]));
        assert_eq!(sum[0], vec![0.5, -0.5, 0.0, 8.0, 2.0, 0.0]);
        assert_eq!(residuals[0], vec![1.0, 0.0, 0.5, 0.0, 0.0, 1e-6]);
        // Next step the residual is added back first.
        let zero = vec![vec![0.0f32; 6]; 3];
        let (again, _) = compressed_sum(topk, Algorithm::Ring, &zero, &mut residuals).unwrap();
        // Worker 0 sends its residual's 1 (index 0) and 0.5 (index 2),
        // worker 1 its −2 and −1 (indices 4, 0), worker 2 0.5 at 2 and 3.
        assert_eq!(again[2], vec![0.0, 0.0, 1.0, 0.5, -2.0, 0.0]);
        // Without feedback nothing is kept.
        let mut none = vec![Vec::new(); 3];
        let nofb = Compression::TopK {
            fraction: 2.0 / 6.0,
            feedback: false,
        };
        compressed_sum(nofb, Algorithm::Ring, &g, &mut none).unwrap();
        assert!(none.iter().all(|r| r.iter().all(|v| *v == 0.0)));
    }

    #[test]
    fn the_flag_parses() {
        assert_eq!(Compression::parse("bf16"), Some(Compression::Bf16));
        assert_eq!(
            Compression::parse("topk:0.01"),
            Some(Compression::TopK {
                fraction: 0.01,
                feedback: true
            })
        );
        assert_eq!(
            Compression::parse("topk-nofb:0.5"),
            Some(Compression::TopK {
                fraction: 0.5,
                feedback: false
            })
        );
        for bad in ["topk:0", "topk:2", "topk", "gzip", "topk:x"] {
            assert_eq!(Compression::parse(bad), None, "{bad}");
        }
    }
}
