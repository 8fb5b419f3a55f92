//! The memory calculator's fully sharded (ZeRO-3 / FSDP) term for an MLP:
//! what one worker holds at the worst point of a step, from the sizes
//! alone. `parallel::sharded` measures the same step from its allocation
//! trace; its tests hold the two equal.
//!
//! A worker keeps, all step long, its shard of every layer's parameters,
//! of their gradients and of the momentum (chunk w of each layer's P_l
//! values, f32). On top, while layer l runs:
//! - forward: the gathered layer (P_l; with prefetch the next one too),
//!   the inputs of layers 0..=l (the batch as layer 0's) and the output;
//! - backward: the gathered layer (with prefetch the one below too), the
//!   inputs of layers 0..=l, and in flight the output's gradient
//!   (rows × out_l), the layer's whole gradient (P_l) before its
//!   reduce-scatter and, but for layer 0, the input's gradient.
//!
//! The peak is the largest of those points.

use crate::collective::chunk_range;

/// Bytes of an f32.
const F32: u64 = 4;

/// One worker's peak bytes in a sharded step of the MLP `sizes` (inputs,
/// widths…, outputs) on `rows` examples, `workers` sharing each layer,
/// `prefetch`ing the next layer's gather or not; `worker` picks whose
/// chunks (the first ones are the larger when N does not divide P_l).
pub fn fsdp_peak(
    sizes: &[usize],
    rows: usize,
    workers: usize,
    worker: usize,
    prefetch: bool,
) -> u64 {
    let layers = sizes.len().saturating_sub(1);
    let params = |l: usize| (sizes[l] * sizes[l + 1] + sizes[l + 1]) as u64;
    // Parameters, gradients and momentum: three shards of every layer.
    let shards: u64 = (0..layers)
        .map(|l| 3 * chunk_range(worker, workers, params(l) as usize).len() as u64)
        .sum();
    let activation = |l: usize| (rows * sizes[l]) as u64;
    let inputs = |l: usize| (0..=l).map(activation).sum::<u64>();
    let gathered =
        |l: usize, other: Option<usize>| params(l) + other.filter(|_| prefetch).map_or(0, params);
    let forward = (0..layers).map(|l| {
        let next = (l + 1 < layers).then_some(l + 1);
        gathered(l, next) + inputs(l) + activation(l + 1)
    });
    let backward = (0..layers).map(|l| {
        let below = l.checked_sub(1);
        let input_grad = if l > 0 { activation(l) } else { 0 };
        gathered(l, below) + inputs(l) + activation(l + 1) + params(l) + input_grad
    });
    let worst = forward.chain(backward).max().unwrap_or(0);
    F32 * (shards + worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_layer_by_hand() {
        // 2 → 3: P = 9, over 3 workers 3 each; 4 rows.
        // Shards 3 × 3 = 9. Forward: 9 + 8 (batch) + 12 (output) = 29;
        // backward: 9 + 8 + 12 (output's gradient) + 9 (whole gradient) = 38.
        assert_eq!(fsdp_peak(&[2, 3], 4, 3, 0, false), 4 * (9 + 38));
        // Prefetch has no other layer to fetch.
        assert_eq!(fsdp_peak(&[2, 3], 4, 3, 0, true), 4 * (9 + 38));
    }
}
