//! The attention rungs on the GPU, each value within its stated bound of the
//! core's f64 reference on hostile inputs — huge logits, fully masked rows,
//! N = 1, N off every tile, a running max that rises in every tile — with
//! the instrumented build's count equal to the traffic model; every rung at
//! the longest sequence it accepts, and what it refuses refused by name.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dlsys_core::kernels::attention::{
    AttnError, AttnRung, AttnShape, MAX_SEQ, Qkv, Tiles, WORST_TILES, reference,
};
use dlsys_shaders::KernelRunner;
use dlsys_shaders::attention::{limits, program};

/// Runs every rung `shape` takes; with `count`, the instrumented build too,
/// its bytes held to the model.
fn check_all(
    runner: &mut KernelRunner,
    what: &str,
    shape: &AttnShape,
    tiles: Tiles,
    qkv: &Qkv,
    count: bool,
) {
    let r = reference(shape, qkv).unwrap();
    for rung in AttnRung::for_shape(shape) {
        let p = program(rung, shape, tiles, limits(runner), qkv, &r)
            .unwrap_or_else(|e| panic!("{what} {}: {e}", rung.id()));
        let out = runner
            .start_program(&p, 0, 1, count && p.counted.is_some())
            .and_then(dlsys_shaders::Job::wait)
            .unwrap_or_else(|e| panic!("{what} {}: {e}", rung.id()));
        let checked = p.check(&out.words);
        assert!(checked.ok, "{what} {}: {checked:?}", rung.id());
        if count && p.counted.is_some() {
            let model = (p.traffic.bytes_read, p.traffic.bytes_written);
            assert_eq!(
                out.counted,
                Some(model),
                "{what} {}: count vs model",
                rung.id()
            );
        }
    }
}

#[test]
fn every_rung_is_within_its_bound_on_hostile_inputs_and_counts_its_model() {
    let Some(mut runner) = crate::support::runner("attention_hostile") else {
        return;
    };
    let small = Tiles { br: 16, bc: 8 };
    // Two heads, N off every tile, one head padded, causal.
    let shape = AttnShape::new(2, 37, 32, true)
        .unwrap()
        .with_kv_len(vec![37, 20])
        .unwrap();
    check_all(
        &mut runner,
        "padded",
        &shape,
        small,
        &Qkv::seeded(&shape, 1),
        true,
    );
    // A head with no real key: zeros and a log-sum-exp of −inf.
    let shape = AttnShape::new(2, 9, 32, false)
        .unwrap()
        .with_kv_len(vec![0, 5])
        .unwrap();
    check_all(
        &mut runner,
        "fully masked",
        &shape,
        small,
        &Qkv::seeded(&shape, 2),
        true,
    );
    // Scores about ±1e4.
    let shape = AttnShape::new(1, 100, 64, false).unwrap();
    check_all(
        &mut runner,
        "huge logits",
        &shape,
        Tiles { br: 32, bc: 16 },
        &Qkv::huge_logits(&shape, 3),
        true,
    );
    // One query, the widest head.
    let shape = AttnShape::new(1, 1, 128, true).unwrap();
    check_all(
        &mut runner,
        "N = 1",
        &shape,
        Tiles { br: 16, bc: 16 },
        &Qkv::seeded(&shape, 4),
        true,
    );
    // The max rises in every tile, with and without the mask.
    for causal in [false, true] {
        let shape = AttnShape::new(1, 96, 32, causal).unwrap();
        check_all(
            &mut runner,
            "rising max",
            &shape,
            small,
            &Qkv::rising(&shape, 5),
            true,
        );
    }
    // The largest tiles a d of 64 fits on this device, on N off the tile.
    let shape = AttnShape::new(1, 150, 64, true).unwrap();
    let bc = Tiles::largest_bc(64, limits(&runner).workgroup_bytes).unwrap();
    check_all(
        &mut runner,
        "largest tiles",
        &shape,
        Tiles { br: 64, bc },
        &Qkv::seeded(&shape, 6),
        true,
    );
}

#[test]
fn every_rung_runs_at_the_longest_sequence_and_one_more_is_refused() {
    let Some(mut runner) = crate::support::runner("attention_cap") else {
        return;
    };
    let shape = AttnShape::new(1, MAX_SEQ, 32, true).unwrap();
    check_all(
        &mut runner,
        "N = MAX_SEQ",
        &shape,
        Tiles { br: 64, bc: 32 },
        &Qkv::seeded(&shape, 7),
        false,
    );
    // The invocations that loop longest: the widest head, the smallest
    // tiles (every block walks every tile; the causal mask halves the
    // arithmetic, not the loops).
    let wide = AttnShape::new(1, MAX_SEQ, 128, true).unwrap();
    let qkv = Qkv::seeded(&wide, 8);
    let r = reference(&wide, &qkv).unwrap();
    let p = program(
        AttnRung::Tiled,
        &wide,
        WORST_TILES,
        limits(&runner),
        &qkv,
        &r,
    )
    .unwrap();
    let out = runner
        .start_program(&p, 0, 1, false)
        .and_then(dlsys_shaders::Job::wait)
        .unwrap();
    let checked = p.check(&out.words);
    assert!(checked.ok, "worst tiles at MAX_SEQ: {checked:?}");
    assert!(matches!(
        AttnShape::new(1, MAX_SEQ + 1, 32, true),
        Err(AttnError::Seq { .. })
    ));
}

#[test]
fn what_the_device_cannot_hold_is_refused_with_the_reason() {
    let Some(runner) = crate::support::runner("attention_refused") else {
        return;
    };
    let device = limits(&runner);
    // K's and V's tiles of 64 keys at d = 128 are 64 KiB.
    let wide = AttnShape::new(1, 64, 128, false).unwrap();
    let qkv = Qkv::seeded(&wide, 8);
    let r = reference(&wide, &qkv).unwrap();
    let made = program(
        AttnRung::Tiled,
        &wide,
        Tiles { br: 16, bc: 64 },
        device,
        &qkv,
        &r,
    );
    if device.workgroup_bytes < 65536 {
        let err = made.unwrap_err();
        assert!(
            matches!(err, AttnError::TileMemory { bytes: 65536, .. }),
            "{err}"
        );
    } else {
        // A device with 64 KiB of workgroup memory takes them.
        assert!(made.is_ok());
    }
    // Score matrices past one binding.
    let heads = device.binding_bytes / (4 * u64::from(MAX_SEQ) * u64::from(MAX_SEQ)) + 1;
    let Ok(big) = AttnShape::new(heads as u32, MAX_SEQ, 32, false) else {
        // A binding that holds the scores of every head accepted.
        return;
    };
    assert!(matches!(
        big.check(AttnRung::Naive, Tiles::default(), device),
        Err(AttnError::Scores { .. })
    ));
    assert!(big.check(AttnRung::Tiled, Tiles::default(), device).is_ok());
}

/// The tiled rung without `rescale(&acc, exp(m_old − m_new))`: right while the max
/// stays put, wrong as soon as it rises — which the rising case makes it do
/// in every tile.
#[test]
fn a_merge_that_does_not_rescale_o_is_caught_by_the_rising_max() {
    let Some(mut runner) = crate::support::runner("attention_no_rescale") else {
        return;
    };
    let shape = AttnShape::new(1, 64, 32, false).unwrap();
    let tiles = Tiles { br: 16, bc: 8 };
    let qkv = Qkv::rising(&shape, 9);
    let r = reference(&shape, &qkv).unwrap();
    let mut p = program(AttnRung::Tiled, &shape, tiles, limits(&runner), &qkv, &r).unwrap();
    let right = "rescale(&acc, r);";
    assert!(p.source.contains(right));
    p.source = p.source.replace(right, "");
    let out = runner
        .start_program(&p, 0, 1, false)
        .and_then(dlsys_shaders::Job::wait)
        .unwrap();
    let checked = p.check(&out.words);
    assert!(!checked.ok && checked.mismatches > 100, "{checked:?}");
    // Its worst error is many times its bound; the right kernel's is inside it.
    assert!(checked.max_rel_error > 1e3, "{checked:?}");
}
