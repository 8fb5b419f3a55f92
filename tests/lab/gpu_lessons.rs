//! The GPU lessons in the whole app under egui_kittest: races run without
//! blocking frames and draw their plots; learner kernels are diagnosed,
//! checked and stopped when they run away.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::common::{MemoryStorage, app_harness, click_visible, run_while, shows};
use egui::accesskit::Role;
use egui_kittest::kittest::Queryable as _;

#[test]
fn the_kernel_race_runs_every_variant_without_blocking_frames() {
    let storage = MemoryStorage::default();
    let (mut harness, gpu) = app_harness("kernel_race", &storage, Some("gpu_kernels"));
    harness.run();
    harness
        .get_by_role_and_label(Role::SpinButton, "Rows:")
        .set_value_accesskit(64.0);
    harness
        .get_by_role_and_label(Role::SpinButton, "Columns:")
        .set_value_accesskit(300.0);
    harness.run();
    click_visible(&mut harness, "Race them all");
    let frames = run_while(&mut harness, 2, 300, "the race", |h| {
        h.state().lesson_busy("gpu_kernels")
    });
    harness.run();
    crate::common::plot_colours_are_distinct(&harness, &["gpu_bandwidth", "gpu_roofline"]);
    if gpu {
        assert!(frames > 2, "the race ran inside one frame");
        assert!(harness.query_all_by_label_contains("matches").count() >= 12);
        assert!(harness.query_by_label_contains("wrong").is_none());
    } else {
        assert!(harness.query_all_by_label("CPU").count() >= 10);
    }
}

#[test]
fn the_gemm_lesson_races_the_chosen_sizes_and_draws_every_plot() {
    let storage = MemoryStorage::default();
    let (mut harness, gpu) = app_harness("gemm_race", &storage, Some("gemm_fusion"));
    harness.run();
    for (label, value) in [
        ("M:", 33.0),
        ("N:", 40.0),
        ("K:", 20.0),
        ("Fusion and access rows:", 16.0),
        ("columns:", 512.0),
    ] {
        harness
            .get_by_role_and_label(Role::SpinButton, label)
            .set_value_accesskit(value);
    }
    harness.run();
    // The tile and block controls: radio groups named by their labels.
    for group in ["Tiled rung's tile:", "Register block:"] {
        assert!(
            harness
                .query_by_role_and_label(Role::RadioGroup, group)
                .is_some()
        );
    }
    // The first "8×8" is the tile's; "2×2" only the block's.
    harness.query_all_by_label("8×8").next().unwrap().click();
    harness.get_by_label("2×2").click();
    harness.run();
    for button in [
        "Race the GEMM ladder",
        "Race fused against unfused",
        "Race the access patterns",
    ] {
        click_visible(&mut harness, button);
        run_while(&mut harness, 2, 300, button, |h| {
            h.state().lesson_busy("gemm_fusion")
        });
        harness.run();
    }
    for id in ["gemm/tiled-8", "gemm/register-2x2", "gemm/vec4-2x2"] {
        assert!(harness.query_by_label(id).is_some(), "{id} did not race");
    }
    assert!(harness.query_by_label("gemm/tiled-16").is_none());
    crate::common::plot_colours_are_distinct(
        &harness,
        &[
            "gemm_gflops",
            "gpu_roofline",
            "fusion_ms",
            "access_layouts",
            "access_stride",
        ],
    );
    if gpu {
        assert!(harness.query_by_label_contains("wrong").is_none());
    }
}

#[test]
fn the_int8_gemm_races_beside_the_f32_rungs_and_every_output_is_right() {
    let storage = MemoryStorage::default();
    let (mut harness, gpu) = app_harness("int8_race", &storage, Some("quantisation"));
    harness.run();
    // 37: not a multiple of 4 (the last packed word is padded).
    harness
        .get_by_role_and_label(Role::SpinButton, "M = N = K:")
        .set_value_accesskit(37.0);
    harness.run();
    click_visible(&mut harness, "Race the int8 and f32 rungs");
    run_while(&mut harness, 2, 300, "the int8 race", |h| {
        h.state().lesson_busy("quantisation")
    });
    harness.run();
    shows(&harness, "37 × 37 by K = 37");
    for id in ["gemm/naive", "gemm/coalesced"] {
        assert!(harness.query_by_label(id).is_some(), "{id} did not race");
    }
    if gpu {
        for id in ["int8/dot4", "int8/extract"] {
            assert!(harness.query_by_label(id).is_some(), "{id} did not race");
        }
        assert_eq!(harness.query_all_by_label("right").count(), 4);
        assert!(harness.query_by_label("wrong").is_none());
    } else {
        shows(&harness, "int8 rungs run on a GPU only");
    }
}

#[test]
fn a_broken_kernel_shows_its_diagnostic_and_a_correct_one_passes() {
    use dlsys_shaders::kernel_track::exercise;
    let storage = MemoryStorage::default();
    let (mut harness, gpu) = app_harness("write_kernels", &storage, Some("write_kernels"));
    harness.run();
    let ex = exercise("sum_reduction").unwrap();
    let editor = "WGSL kernel for Sum reduction";
    // A type error on a known line: naga's diagnostic names it, no GPU needed.
    let broken = ex
        .reference()
        .replace("var total = 0.0;", "var total = 0u;");
    let line = broken
        .lines()
        .position(|l| l.contains("total += x[i]"))
        .unwrap()
        + 1;
    harness
        .get_by_role_and_label(Role::TextInput, editor)
        .set_text_value_accesskit(&broken);
    harness.run();
    click_visible(&mut harness, "Check");
    harness.run();
    assert!(
        harness
            .query_by_label_contains(&format!("does not compile: line {line}"))
            .is_some(),
        "no diagnostic at line {line}"
    );
    // The offending line itself is shown under the message.
    let excerpt = format!("line {line}: total += x[i];");
    assert!(harness.query_by_label(&excerpt).is_some(), "{excerpt}");
    if gpu {
        crate::common::snapshot_lesson(
            &mut harness,
            dlsys_core::text::Lang::En,
            "write_kernels",
            "write_kernels_diagnostic",
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
    // The learner's code is saved soon after the edit, without closing the app.
    let flushes = *storage.flushes.lock().unwrap();
    let mut frames = 0;
    while *storage.flushes.lock().unwrap() == flushes {
        std::thread::sleep(std::time::Duration::from_millis(50));
        harness.run_steps(1);
        frames += 1;
        assert!(frames < 200, "the edit was never saved");
    }
    let saved = storage
        .map
        .lock()
        .unwrap()
        .get(dlsys_lab::persist::STORAGE_KEY)
        .cloned()
        .unwrap();
    assert!(saved.contains("var total = 0u;"), "the edit is in the save");
    // A restart from that storage (as after a crash) brings the code back.
    {
        let (mut again, _) = app_harness("write_kernels_again", &storage, Some("write_kernels"));
        again.run();
        assert!(
            again
                .get_by_role_and_label(Role::TextInput, editor)
                .value()
                .is_some_and(|v| v.contains("var total = 0u;"))
        );
    }
    // Reset asks first; keeping the code keeps it.
    click_visible(&mut harness, "Reset to template…");
    harness.run();
    harness.get_by_label("Keep my code").click();
    harness.run();
    assert!(
        harness
            .get_by_role_and_label(Role::TextInput, editor)
            .value()
            .is_some_and(|v| v.contains("var total = 0u;"))
    );
    // Now a correct kernel: it runs on the GPU against every case.
    harness
        .get_by_role_and_label(Role::TextInput, editor)
        .set_text_value_accesskit(&ex.reference());
    harness.run();
    click_visible(&mut harness, "Check");
    run_while(&mut harness, 1, 120, "the check", |h| {
        h.state().lesson_busy("write_kernels")
    });
    harness.run();
    if gpu {
        assert!(
            harness
                .query_by_label_contains("Passed: passes all")
                .is_some(),
            "no pass shown"
        );
        shows(&harness, "✓ Sum reduction");
        // Timed against the built-in reduction ladder on the same device.
        assert!(
            harness.query_by_label("your kernel").is_some(),
            "no race table"
        );
        assert!(harness.query_by_label("reduce-sum/grid-stride").is_some());
        shows(&harness, "Yours ranks");
    } else {
        shows(&harness, "Valid WGSL");
    }
}

#[test]
fn a_runaway_kernel_does_not_freeze_the_app_and_the_device_is_replaced() {
    use dlsys_shaders::kernel_track::{exercise, runaway_kernel};
    let storage = MemoryStorage::default();
    let (mut harness, gpu) = app_harness("runaway_kernel", &storage, Some("write_kernels"));
    if !gpu {
        return; // Nothing runs without a device; `app_harness` fails under CI.
    }
    harness.run();
    let editor = "WGSL kernel for Sum reduction";
    harness
        .get_by_role_and_label(Role::TextInput, editor)
        .set_text_value_accesskit(&runaway_kernel());
    harness.run();
    click_visible(&mut harness, "Check");
    // Frames keep coming while the kernel runs: each step returns promptly.
    let started = std::time::Instant::now();
    let mut frames = 0;
    let mut slowest = std::time::Duration::ZERO;
    while harness
        .query_by_label_contains("did not finish within")
        .is_none()
    {
        let frame = std::time::Instant::now();
        harness.run_steps(1);
        slowest = slowest.max(frame.elapsed());
        frames += 1;
        assert!(started.elapsed().as_secs() < 120, "no timeout reported");
    }
    assert!(frames > 10, "only {frames} frames while the kernel ran");
    assert!(slowest.as_secs_f64() < 2.0, "a frame took {slowest:?}");
    // The device is replaced; the next check runs and passes.
    while harness.state().lesson_busy("write_kernels") {
        harness.run_steps(1);
        assert!(started.elapsed().as_secs() < 180, "recovery did not finish");
    }
    let ex = exercise("sum_reduction").unwrap();
    harness
        .get_by_role_and_label(Role::TextInput, editor)
        .set_text_value_accesskit(&ex.reference());
    harness.run();
    click_visible(&mut harness, "Check");
    while harness.state().lesson_busy("write_kernels") {
        harness.run_steps(1);
        assert!(
            started.elapsed().as_secs() < 240,
            "the check after recovery did not finish"
        );
    }
    harness.run();
    assert!(
        harness
            .query_by_label_contains("Passed: passes all")
            .is_some(),
        "after recovery"
    );
}
