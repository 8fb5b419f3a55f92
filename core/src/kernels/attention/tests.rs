#![allow(clippy::unwrap_used)]

use super::*;
use crate::autograd::{Graph, Tensor};

fn one_head(seq: u32, causal: bool) -> AttnShape {
    AttnShape::new(1, seq, 32, causal).unwrap()
}

/// The reference is the engine's attention (its f64 graph), masked or not.
#[test]
fn the_reference_is_the_engines_attention() {
    for causal in [false, true] {
        let shape = one_head(9, causal);
        let qkv = Qkv::seeded(&shape, 3);
        let ours = reference(&shape, &qkv).unwrap();
        let mut g = Graph::<f64>::new();
        let t = |x: &[f32]| Tensor::new(x.iter().map(|v| f64::from(*v)).collect(), &[9, 32]);
        let (q, k, v) = (g.param(t(&qkv.q)), g.param(t(&qkv.k)), g.param(t(&qkv.v)));
        let o = g.attention(q, k, v, 1, causal).output;
        let engine = g.value(o).data.clone();
        for (a, b) in ours.o.iter().zip(&engine) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }
}

#[test]
fn a_fully_masked_row_gives_zeros_and_minus_infinity() {
    let shape = one_head(5, false).with_kv_len(vec![0]).unwrap();
    let r = reference(&shape, &Qkv::seeded(&shape, 1)).unwrap();
    assert!(r.o.iter().all(|x| *x == 0.0));
    assert!(r.lse.iter().all(|x| *x == f64::NEG_INFINITY));
    let (want, bound) = r.expected(AttnRung::Tiled);
    assert_eq!(want.len(), 5 * 32 + 5);
    assert!(bound.iter().all(|b| *b == 0.0));
}

#[test]
fn huge_logits_have_a_finite_reference_and_a_wider_bound() {
    let shape = one_head(64, false);
    let calm = reference(&shape, &Qkv::seeded(&shape, 2)).unwrap();
    let huge = reference(&shape, &Qkv::huge_logits(&shape, 2)).unwrap();
    assert!(huge.o.iter().all(|x| x.is_finite()));
    assert!(huge.lse.iter().any(|x| *x > 3e3) && huge.lse.iter().any(|x| *x < -3e3));
    assert!(huge.o_bound[0] > 100.0 * calm.o_bound[0]);
    // Tight enough that a wrong mix of V's rows (|v| up to 1) fails.
    assert!(
        huge.o_bound.iter().all(|b| *b < 0.25),
        "{}",
        huge.o_bound[0]
    );
    assert!(calm.o_bound[0] < 1e-4);
}

#[test]
fn the_naive_rungs_traffic_by_hand() {
    // N = 16, d = 32, one tile: scores 2·16·32, softmax 2·256, P·V 256·32/16 + 16·32.
    let t = one_head(16, false).traffic(AttnRung::Naive, Tiles::default());
    assert_eq!(t.bytes_read, 4 * (1024 + 512 + 512 + 512));
    assert_eq!(t.bytes_written, 4 * (512 + 512));
    assert_eq!(t.dispatches, 3);
}

#[test]
fn the_tiled_rung_reads_k_and_v_once_per_block() {
    let (n, d) = (256u64, 32u64);
    let shape = one_head(256, false);
    for br in BR {
        let t = shape.traffic(AttnRung::Tiled, Tiles { br, bc: 16 });
        let blocks = n / u64::from(br);
        assert_eq!(t.bytes_read, 4 * (n * d + 2 * d * n * blocks));
        assert_eq!(t.bytes_written, 4 * n * (d + 1));
    }
    // The rows rung reads them once per row.
    let rows = shape.traffic(AttnRung::Rows, Tiles::default());
    assert_eq!(rows.bytes_read, 4 * (n * d + 2 * d * n * n));
}

#[test]
fn the_causal_rung_skips_the_tiles_above_the_diagonal() {
    let shape = one_head(64, true);
    let tiles = Tiles { br: 16, bc: 16 };
    // Four blocks of four tiles; block b keeps b + 1.
    assert_eq!(shape.tiles_skipped(tiles), (6, 16));
    let plain = shape.traffic(AttnRung::Tiled, tiles).bytes_read;
    let skip = shape.traffic(AttnRung::Causal, tiles).bytes_read;
    assert_eq!(plain - skip, 4 * 2 * 32 * 16 * 6);
    // Both compute the same unmasked pairs.
    assert_eq!(shape.flops(AttnRung::Tiled), shape.flops(AttnRung::Causal));
    assert_eq!(
        shape.flops(AttnRung::Causal),
        4.0 * 32.0 * (64.0 * 65.0 / 2.0)
    );
    assert_eq!(one_head(64, false).tiles_skipped(tiles), (0, 16));
}

#[test]
fn bad_sizes_are_refused_with_the_reason() {
    assert_eq!(
        AttnShape::new(1, MAX_SEQ + 1, 32, false),
        Err(AttnError::Seq {
            seq: MAX_SEQ + 1,
            max: MAX_SEQ
        })
    );
    assert!(AttnShape::new(1, MAX_SEQ, 32, false).is_ok());
    assert_eq!(
        AttnShape::new(1, 8, 48, false),
        Err(AttnError::HeadDim { d: 48 })
    );
    assert!(matches!(
        AttnShape::new(0, 8, 32, false),
        Err(AttnError::Heads { .. })
    ));
    let shape = AttnShape::new(2, 8, 32, false).unwrap();
    assert!(matches!(
        shape.clone().with_kv_len(vec![1]),
        Err(AttnError::KvLens { given: 1, heads: 2 })
    ));
    assert!(matches!(
        shape.with_kv_len(vec![1, 9]),
        Err(AttnError::KvLen {
            head: 1,
            len: 9,
            ..
        })
    ));
    // Three heads of 4,096: 192 MiB of scores past a 128 MiB binding.
    let big = AttnShape::new(3, 4096, 32, false).unwrap();
    let Err(AttnError::Scores { largest, .. }) =
        big.check(AttnRung::Naive, Tiles::default(), AttnLimits::WEBGPU)
    else {
        panic!("the scores fit")
    };
    assert_eq!(largest, 3344);
    assert!(
        big.check(AttnRung::Tiled, Tiles::default(), AttnLimits::WEBGPU)
            .is_ok()
    );
    assert_eq!(
        big.check(AttnRung::Causal, Tiles::default(), AttnLimits::WEBGPU),
        Err(AttnError::NotCausal)
    );
    // d = 128: tiles of 32 keys need 32 KiB; 16 fit a browser's 16 KiB.
    let wide = AttnShape::new(1, 64, 128, false).unwrap();
    let tiles = |bc| Tiles { br: 16, bc };
    assert!(matches!(
        wide.check(AttnRung::Tiled, tiles(32), AttnLimits::WEBGPU),
        Err(AttnError::TileMemory { bytes: 32768, .. })
    ));
    assert!(
        wide.check(AttnRung::Tiled, tiles(16), AttnLimits::WEBGPU)
            .is_ok()
    );
    assert_eq!(Tiles::largest_bc(128, 16 << 10), Some(16));
    assert_eq!(Tiles::largest_bc(32, 32 << 10), Some(64));
    assert!(matches!(
        wide.check(AttnRung::Tiled, tiles(12), AttnLimits::WEBGPU),
        Err(AttnError::Tile { .. })
    ));
    // Every rung's WGSL is built with the tiles: all refuse bad ones.
    let zero = Tiles { br: 0, bc: 16 };
    for rung in AttnRung::ALL {
        assert!(matches!(
            wide.check(rung, zero, AttnLimits::WEBGPU),
            Err(AttnError::Tile { .. })
        ));
    }
    assert_eq!(wide.tiles_skipped(zero), (0, 0));
    // 64 heads of 4,096 × 128: O and the log-sum-exp pass one binding.
    let many = AttnShape::new(64, 4096, 128, false).unwrap();
    assert!(matches!(
        many.check(AttnRung::Tiled, Tiles::default(), AttnLimits::WEBGPU),
        Err(AttnError::Buffer { .. })
    ));
}

#[test]
fn the_trace_ends_at_the_references_sums() {
    let shape = one_head(40, true);
    let qkv = Qkv::seeded(&shape, 5);
    let r = reference(&shape, &qkv).unwrap();
    let steps = trace(&shape, Tiles { br: 16, bc: 8 }, &qkv, true).unwrap();
    // Three blocks; five tiles each, the causal rung skipping some.
    assert_eq!(steps.len(), 15);
    assert_eq!(steps.iter().filter(|s| s.skipped).count() as u64, {
        shape.tiles_skipped(Tiles { br: 16, bc: 8 }).0
    });
    for block in 0..3 {
        let last = steps.iter().rev().find(|s| s.block == block).unwrap();
        for s in &last.state {
            let lse = s.m + s.l.ln();
            assert!((lse - r.lse[s.row as usize]).abs() < 1e-12);
        }
    }
}

#[test]
fn a_rising_max_rescales_in_every_tile() {
    let shape = one_head(32, false);
    let qkv = Qkv::rising(&shape, 4);
    let steps = trace(&shape, Tiles { br: 16, bc: 8 }, &qkv, false).unwrap();
    for step in steps.iter().filter(|s| s.keys.0 > 0) {
        assert!(step.state.iter().all(|s| s.rescale < 1.0), "{step:?}");
    }
}

#[test]
fn wrong_input_lengths_are_refused() {
    let shape = one_head(4, false);
    let mut qkv = Qkv::seeded(&shape, 1);
    qkv.v.pop();
    assert!(matches!(
        reference(&shape, &qkv),
        Err(AttnError::Input {
            len: 127,
            want: 128,
            ..
        })
    ));
}

#[test]
fn scores_past_f32s_range_are_refused() {
    let shape = one_head(2, false);
    let mut qkv = Qkv::seeded(&shape, 1);
    qkv.q.fill(1e30);
    qkv.k.fill(1e30);
    assert!(matches!(
        reference(&shape, &qkv),
        Err(AttnError::ScoreRange { row: 0, .. })
    ));
}

#[test]
fn a_non_finite_input_is_refused_by_name() {
    let shape = one_head(4, false);
    let mut qkv = Qkv::seeded(&shape, 1);
    qkv.k[7] = f32::NAN;
    assert!(matches!(
        reference(&shape, &qkv),
        Err(AttnError::NotFinite { index: 7, .. })
    ));
}

/// Every accepted configuration stays inside the loop budget, so the check
/// never refuses one; the worst is the tiled rung at the longest sequence,
/// the widest head and the smallest tiles (the GPU test runs it).
#[test]
fn every_accepted_configuration_fits_the_loop_budget() {
    let mut worst = (0, Tiles::default(), 0);
    for d in HEAD_DIMS {
        let shape = AttnShape::new(1, MAX_SEQ, d, true).unwrap();
        for br in BR {
            for bc in BC {
                let tiles = Tiles { br, bc };
                for rung in AttnRung::ALL {
                    let it = shape.loop_iterations(rung, tiles);
                    assert!(
                        it <= u64::from(crate::kernels::LOOP_BUDGET),
                        "{rung:?} {tiles:?} d={d}: {it}"
                    );
                    if it > worst.0 {
                        worst = (it, tiles, d);
                    }
                }
            }
        }
    }
    assert_eq!((worst.1, worst.2), (WORST_TILES, 128), "{worst:?}");
}

#[test]
fn the_textbook_counts() {
    // N = 1024, d = 64, 2-byte elements: 4·N·d + 4·N² elements.
    assert_eq!(
        standard_bytes(1024, 64, 2),
        2 * (4 * 1024 * 64 + 4 * 1024 * 1024)
    );
    assert_eq!(tile_rows_fit(128, 16 << 10), 16);
    assert_eq!(tile_rows_fit(64, 48 << 10), 96);
    assert_eq!(rescale_factor(f64::NEG_INFINITY, 3.0), 0.0);
    assert_eq!(rescale_factor(2.0, 1.0), 1.0);
    assert!((rescale_factor(1.0, 3.0) - (-2.0f64).exp()).abs() < 1e-15);
}
