//! Overlap: one training step whose gradients are all-reduced in buckets
//! while backward still runs for the earlier layers, as PyTorch's DDP does,
//! beside the step that all-reduces everything after backward.
//!
//! Backward visits the layers last to first, and a layer's gradient is
//! ready when its backward ends. The gradients are packed into buckets in
//! that order (DDP's `bucket_cap_mb`): a bucket closes when the next layer
//! would take it past the cap, and a layer larger than the cap is a bucket
//! on its own. A bucket's all-reduce starts once its last layer's gradient
//! is ready and the bucket before it is through (one communication stream,
//! so buckets go in order), and takes whatever `comm` says a message of
//! that size takes. The step ends when backward and the last all-reduce
//! have both ended. Two things follow, and the tests hold them:
//! - the first layer's gradient is ready last, so its bucket's all-reduce
//!   always comes after backward: overlap never hides everything;
//! - every bucket pays the latency terms again, so smaller buckets start
//!   sooner but cost more in all.

use std::ops::Range;

use serde::Serialize;

use super::CollectiveError;

/// The most layers a plan takes (each is a bar on the lesson's timeline).
pub const MAX_LAYERS: usize = 4096;

/// One layer as backward meets it: how long its backward takes and how
/// many bytes of gradient it leaves.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LayerGrad {
    pub backward_s: f64,
    pub bytes: u64,
}

/// A step to time: the forward pass, the layers in backward order (the
/// last layer of the model first) and the bucket size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OverlapPlan {
    pub forward_s: f64,
    pub layers: Vec<LayerGrad>,
    pub bucket_bytes: u64,
}

/// One bucket: the layers in it (indices in backward order), its bytes,
/// when its last gradient was ready and when its all-reduce ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bucket {
    pub layers: Range<usize>,
    pub bytes: u64,
    pub ready_s: f64,
    pub start_s: f64,
    pub end_s: f64,
}

/// The step timed both ways.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OverlapStep {
    /// Each layer's backward, start and end, in backward order.
    pub backward: Vec<(f64, f64)>,
    pub buckets: Vec<Bucket>,
    /// When backward ended and when the overlapped step did.
    pub backward_end_s: f64,
    pub end_s: f64,
    /// The step without overlap: forward, backward, then one all-reduce of
    /// every gradient.
    pub no_overlap_s: f64,
    /// That one all-reduce, and the buckets' all-reduces added up.
    pub comm_whole_s: f64,
    pub comm_buckets_s: f64,
}

impl OverlapStep {
    /// The communication left after backward: what overlap did not hide.
    pub fn exposed_s(&self) -> f64 {
        self.end_s - self.backward_end_s
    }
}

/// `count` layers of equal backward time (`backward_s` in all) and as
/// equal gradients as whole bytes allow (`bytes` in all; the layers met
/// first hold the odd bytes); at least one layer.
pub fn equal_layers(count: usize, backward_s: f64, bytes: u64) -> Vec<LayerGrad> {
    let n = count.max(1) as u64;
    (0..n)
        .map(|i| LayerGrad {
            backward_s: backward_s / n as f64,
            bytes: bytes / n + u64::from(i < bytes % n),
        })
        .collect()
}

/// The layers grouped into buckets of at most `cap` bytes, in backward
/// order (a layer over the cap alone).
fn pack(layers: &[LayerGrad], cap: u64) -> Vec<Range<usize>> {
    let mut buckets = Vec::new();
    let (mut start, mut bytes) = (0, 0u64);
    for (i, layer) in layers.iter().enumerate() {
        if i > start && bytes.saturating_add(layer.bytes) > cap {
            buckets.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes = bytes.saturating_add(layer.bytes);
    }
    if start < layers.len() {
        buckets.push(start..layers.len());
    }
    buckets
}

/// Times `plan` with and without overlap; `comm(bytes)` is an all-reduce's
/// time for a message of that many bytes.
pub fn overlap_step(
    plan: &OverlapPlan,
    comm: &dyn Fn(u64) -> f64,
) -> Result<OverlapStep, CollectiveError> {
    let time_ok = |t: f64| t.is_finite() && t >= 0.0;
    let ok = !plan.layers.is_empty()
        && plan.layers.len() <= MAX_LAYERS
        && plan.bucket_bytes > 0
        && time_ok(plan.forward_s)
        && plan.layers.iter().all(|l| time_ok(l.backward_s));
    if !ok {
        return Err(CollectiveError::Overlap);
    }
    let mut clock = plan.forward_s;
    let backward: Vec<(f64, f64)> = plan
        .layers
        .iter()
        .map(|l| {
            let start = clock;
            clock += l.backward_s;
            (start, clock)
        })
        .collect();
    let backward_end_s = clock;
    let mut stream_free = 0.0f64;
    let mut comm_buckets_s = 0.0;
    let buckets: Vec<Bucket> = pack(&plan.layers, plan.bucket_bytes)
        .into_iter()
        .map(|layers| {
            let bytes = plan.layers[layers.clone()]
                .iter()
                .fold(0u64, |a, l| a.saturating_add(l.bytes));
            let ready_s = backward[layers.end - 1].1;
            let start_s = ready_s.max(stream_free);
            let took = comm(bytes);
            comm_buckets_s += took;
            stream_free = start_s + took;
            Bucket {
                layers,
                bytes,
                ready_s,
                start_s,
                end_s: stream_free,
            }
        })
        .collect();
    let total = plan
        .layers
        .iter()
        .fold(0u64, |a, l| a.saturating_add(l.bytes));
    let comm_whole_s = comm(total);
    if !buckets.iter().all(|b| time_ok(b.end_s - b.start_s)) || !time_ok(comm_whole_s) {
        return Err(CollectiveError::Overlap);
    }
    Ok(OverlapStep {
        backward,
        backward_end_s,
        end_s: backward_end_s.max(stream_free),
        no_overlap_s: backward_end_s + comm_whole_s,
        comm_whole_s,
        comm_buckets_s,
        buckets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{Algorithm, Link, comm_time, overlapped_step};
    use rand::{RngExt as _, SeedableRng as _};

    fn plan(forward_s: f64, layers: Vec<LayerGrad>, bucket_bytes: u64) -> OverlapPlan {
        OverlapPlan {
            forward_s,
            layers,
            bucket_bytes,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn one_bucket_is_no_overlap_at_all() {
        let link = Link::new(5.0, 25.0).unwrap();
        let comm = |b: u64| comm_time(Algorithm::Ring, 8, b as f64, link);
        let layers = equal_layers(12, 0.040, 100 << 20);
        let step = overlap_step(&plan(0.020, layers, u64::MAX), &comm).unwrap();
        assert_eq!(step.buckets.len(), 1);
        assert_eq!(step.end_s, step.no_overlap_s);
        assert!(close(step.no_overlap_s, 0.060 + comm(100 << 20)));
        assert!(close(step.exposed_s(), step.comm_whole_s));
    }

    #[test]
    fn only_the_last_bucket_shows_when_communication_keeps_up() {
        // α = 0: a bucket per layer, each all-reduce shorter than a
        // layer's backward, so each one ends before the next is ready.
        let link = Link::new(0.0, 10.0).unwrap();
        let comm = |b: u64| comm_time(Algorithm::Ring, 4, b as f64, link);
        let layers = equal_layers(10, 0.010, 10_000_000);
        let per_layer = comm(1_000_000);
        assert!(per_layer < 0.001, "{per_layer}");
        let step = overlap_step(&plan(0.005, layers, 1_000_000), &comm).unwrap();
        assert_eq!(step.buckets.len(), 10);
        assert!(close(step.end_s, 0.015 + per_layer), "{}", step.end_s);
        assert!(close(step.exposed_s(), per_layer));
    }

    #[test]
    fn communication_bound_steps_wait_for_the_stream() {
        // Each layer's all-reduce longer than its backward: the stream
        // starts after the first layer and never stops.
        let comm = |b: u64| b as f64 * 1e-8;
        let layers = equal_layers(5, 0.005, 5_000_000);
        let step = overlap_step(&plan(0.002, layers, 1_000_000), &comm).unwrap();
        assert!(
            close(step.end_s, 0.002 + 0.001 + 5.0 * 0.01),
            "{}",
            step.end_s
        );
        for pair in step.buckets.windows(2) {
            assert_eq!(pair[1].start_s, pair[0].end_s);
        }
    }

    #[test]
    fn buckets_hold_every_byte_in_backward_order_within_the_cap() {
        let layers = vec![
            LayerGrad {
                backward_s: 0.001,
                bytes: 30,
            },
            LayerGrad {
                backward_s: 0.001,
                bytes: 50,
            },
            LayerGrad {
                backward_s: 0.001,
                bytes: 200,
            },
            LayerGrad {
                backward_s: 0.001,
                bytes: 10,
            },
            LayerGrad {
                backward_s: 0.001,
                bytes: 10,
            },
        ];
        let step = overlap_step(&plan(0.0, layers, 100), &|b| b as f64).unwrap();
        let ranges: Vec<_> = step.buckets.iter().map(|b| b.layers.clone()).collect();
        assert_eq!(ranges, vec![0..2, 2..3, 3..5]);
        let bytes: Vec<_> = step.buckets.iter().map(|b| b.bytes).collect();
        assert_eq!(bytes, vec![80, 200, 20]);
        let split = equal_layers(3, 0.3, 10);
        assert_eq!(
            split.iter().map(|l| l.bytes).collect::<Vec<_>>(),
            vec![4, 3, 3]
        );
    }

    #[test]
    fn any_plan_lies_between_the_bounds() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(17);
        let link = Link::new(20.0, 5.0).unwrap();
        for _ in 0..300 {
            let n = rng.random_range(2..=16);
            let algo = Algorithm::ALL[rng.random_range(0..4)];
            let comm = |b: u64| comm_time(algo, n, b as f64, link);
            let layers: Vec<LayerGrad> = (0..rng.random_range(1..40))
                .map(|_| LayerGrad {
                    backward_s: rng.random_range(0.0..0.01),
                    bytes: rng.random_range(0..50_000_000),
                })
                .collect();
            let cap = rng.random_range(1..200_000_000);
            let p = plan(rng.random_range(0.0..0.02), layers, cap);
            let step = overlap_step(&p, &comm).unwrap();
            let backward: f64 = p.layers.iter().map(|l| l.backward_s).sum();
            let slack = 1e-12;
            // Never better than the books' best case, nor than backward
            // plus the last bucket, nor worse than no overlap with the
            // buckets' extra latency.
            assert!(
                step.end_s + slack >= overlapped_step(p.forward_s, backward, step.comm_buckets_s)
            );
            let last = step.buckets.last().unwrap();
            assert!(step.end_s + slack >= step.backward_end_s + comm(last.bytes));
            assert!(step.end_s <= step.backward_end_s + step.comm_buckets_s + slack);
            assert!(step.comm_buckets_s + slack >= step.comm_whole_s);
            let counted: u64 = step.buckets.iter().map(|b| b.bytes).sum();
            assert_eq!(counted, p.layers.iter().map(|l| l.bytes).sum::<u64>());
            for b in &step.buckets {
                assert!(b.bytes <= cap || b.layers.len() == 1);
                assert!(b.start_s >= b.ready_s);
            }
        }
    }

    #[test]
    fn bad_plans_are_refused() {
        let comm = |b: u64| b as f64;
        let good = equal_layers(2, 0.01, 100);
        assert!(overlap_step(&plan(0.0, vec![], 10), &comm).is_err());
        assert!(overlap_step(&plan(0.0, good.clone(), 0), &comm).is_err());
        assert!(overlap_step(&plan(f64::NAN, good.clone(), 10), &comm).is_err());
        let negative = vec![LayerGrad {
            backward_s: -1.0,
            bytes: 4,
        }];
        assert!(overlap_step(&plan(0.0, negative, 10), &comm).is_err());
        assert!(overlap_step(&plan(0.0, good.clone(), 10), &|_| f64::NAN).is_err());
        assert!(overlap_step(&plan(0.0, good.clone(), 10), &|_| -1.0).is_err());
        let many = equal_layers(MAX_LAYERS + 1, 0.01, 100);
        assert!(overlap_step(&plan(0.0, many, 10), &comm).is_err());
        assert!(overlap_step(&plan(0.0, good, 10), &comm).is_ok());
    }
}
