//! The quantisation page's training runs under egui_kittest: the
//! quantisation-aware fine-tune runs in the background, reports each epoch
//! and draws its curve against fp32.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::common::{MemoryStorage, app_harness, click_visible, run_while, shows};
use egui::accesskit::Role;
use egui_kittest::kittest::{NodeT as _, Queryable as _};

#[test]
fn quantisation_aware_training_runs_in_the_background_and_beats_ptq_at_two_bits() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("qat", &storage, Some("quantisation"));
    harness.run();
    harness
        .get_by_role_and_label(Role::SpinButton, "Epochs:")
        .set_value_accesskit(2.0);
    harness.run();
    click_visible(&mut harness, "Fine-tune with fake quantisation");
    run_while(&mut harness, 1, 600, "the fine-tune", |h| {
        h.state().lesson_busy("quantisation")
    });
    harness.run();
    let node = harness
        .query_by_label_contains("after 2 epochs of quantisation-aware training")
        .expect("the result line");
    let node = node.accesskit_node();
    let line = node.label().or_else(|| node.value()).unwrap_or_default();
    // "int2 per tensor: fp32 a %; post-training quantisation b %; … c %."
    let numbers: Vec<f64> = line
        .split('%')
        .filter_map(|part| part.rsplit(' ').find_map(|w| w.parse().ok()))
        .collect();
    assert_eq!(numbers.len(), 3, "{line}");
    assert!(numbers[2] > numbers[1] + 10.0, "{line}");
    crate::common::plot_colours_are_distinct(&harness, &["quant_qat"]);
}

#[test]
fn the_transformer_is_trained_and_quantised_a_frame_at_a_time() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("models", &storage, Some("quantisation"));
    harness.run();
    click_visible(&mut harness, "the CNN (MNIST)");
    click_visible(&mut harness, "the char transformer");
    click_visible(&mut harness, "Train and measure the table");
    // Trained in the frame loop (as in the browser): the page keeps drawing
    // and says how far it is.
    harness.run_steps(3);
    shows(&harness, "Training: step");
    run_while(&mut harness, 5, 600, "the transformer's table", |h| {
        h.state().lesson_busy("quantisation")
    });
    harness.run();
    let fp32 = harness
        .query_by_label_contains("fp32 held-out loss of the char transformer")
        .expect("the fp32 line");
    let fp32 = fp32.accesskit_node();
    let line = fp32.label().or_else(|| fp32.value()).unwrap_or_default();
    assert!(line.contains("nats per character"), "{line}");
    // Fourteen cells, each a loss and its change.
    for bits in [
        "int8 weights",
        "int6 weights",
        "int4 weights",
        "int3 weights",
    ] {
        assert!(harness.query_by_label(bits).is_some(), "{bits}");
    }
    assert!(
        harness
            .query_by_label("int8, activations int8 (W8A8)")
            .is_some()
    );
    crate::common::plot_colours_are_distinct(&harness, &["quant_models_plot"]);
    assert!(
        harness.query_all_by_label_contains(" (+").count()
            + harness.query_all_by_label_contains(" (-").count()
            >= 14
    );
}

#[test]
fn the_mx_formats_are_measured_on_click_beside_the_integer_groups() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("mx", &storage, Some("quantisation"));
    harness.run();
    click_visible(&mut harness, "Quantise into each MX format");
    run_while(&mut harness, 1, 600, "the MX table", |h| {
        h.state().lesson_busy("quantisation")
    });
    harness.run();
    for row in [
        "MXFP8, E4M3 elements",
        "MXFP6, E3M2 elements",
        "MXFP4, E2M1 elements",
        "MXINT8, int8 elements × 2⁻⁶",
        "int4, group of 32, fp16 scale",
    ] {
        assert!(harness.query_by_label(row).is_some(), "{row}");
    }
    // Bits per weight: 4.250 for MXFP4 (an 8-bit scale per 32), 4.500 for
    // int4 with fp16 scales.
    assert!(harness.query_by_label("4.250").is_some());
    assert!(harness.query_by_label("4.500").is_some());
}

#[test]
fn the_histogram_has_fp8s_grid_beside_int8s_with_both_round_trips() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("fp8_grid", &storage, Some("quantisation"));
    harness.run();
    let node = harness
        .query_by_label_contains("The same tensor on fp8 E4M3's grid (253 values")
        .expect("the comparison line");
    let node = node.accesskit_node();
    let line = node.label().or_else(|| node.value()).unwrap_or_default();
    assert!(
        line.contains("dB in fp8") && line.contains("dB in int8"),
        "{line}"
    );
    crate::common::plot_colours_are_distinct(&harness, &["quant_hist", "quant_fp8_grid"]);
}

#[test]
fn fp8_training_draws_every_recipe_and_shows_the_stale_scale() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("fp8", &storage, Some("quantisation"));
    harness.run();
    // Two formats' stale scale, from the core, before any run.
    assert_eq!(
        harness
            .query_all_by_label_contains("turns 12 into NaN or ±inf")
            .count(),
        2
    );
    harness
        .get_by_role_and_label(Role::SpinButton, "Training epochs:")
        .set_value_accesskit(1.0);
    harness.run();
    click_visible(&mut harness, "Train in fp32, bf16 and fp8");
    run_while(&mut harness, 1, 600, "the fp8 runs", |h| {
        h.state().lesson_busy("quantisation")
    });
    harness.run();
    for recipe in [
        "fp32:",
        "bf16:",
        "fp8-hybrid-current:",
        "fp8-hybrid-delayed:16:",
    ] {
        assert!(
            harness.query_by_label_contains(recipe).is_some(),
            "{recipe}"
        );
    }
    crate::common::plot_colours_are_distinct(&harness, &["quant_fp8"]);
}

#[test]
fn the_float_and_memory_lessons_link_to_quantisation() {
    let storage = MemoryStorage::default();
    for (from, link) in [
        (
            "float_formats",
            "fp8 with per-tensor scales, current and delayed, and training under it: the Quantisation lesson →",
        ),
        (
            "memory_compute",
            "The bytes of weights at int8 or int4, with their scales and zero points: the Quantisation lesson →",
        ),
    ] {
        let (mut harness, _) = app_harness("links", &storage, Some(from));
        harness.run();
        click_visible(&mut harness, link);
        harness.run();
        assert!(
            harness
                .query_by_label_contains("Post-training quantisation of the MLP")
                .is_some(),
            "{from}'s link did not open the quantisation lesson"
        );
    }
}
