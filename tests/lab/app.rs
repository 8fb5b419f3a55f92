//! The whole app under egui_kittest: every registered lesson opens from the
//! sidebar and is snapshot-tested; no test code names a lesson.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::common::{MemoryStorage, app_harness, click_visible, run_while, shows};
use dlsys_core::text::Lang;
use egui::accesskit::Role;
use egui_kittest::kittest::Queryable as _;

#[test]
fn every_lesson_opens_from_the_sidebar_and_matches_its_snapshot() {
    let storage = MemoryStorage::default();
    let (mut harness, gpu) = app_harness("every_lesson_opens", &storage, None);
    harness.run();
    let mut failures = Vec::new();
    if gpu && let Err(err) = crate::common::snapshot_sidebar(&mut harness) {
        failures.push(err);
    }
    crate::common::visit_every_lesson(&mut harness, Lang::En, |harness, id| {
        if gpu
            && let Err(err) =
                crate::common::snapshot_lesson(harness, Lang::En, id, &format!("lesson_{id}"))
        {
            failures.push(err);
        }
    });
    // The plots every lesson draws before any run: no colour twice in one.
    let drawn = crate::common::plot_colours_are_distinct(&harness, crate::common::PLOTS_ON_OPENING);
    eprintln!("plots drawn on opening: {drawn:?}");
    assert!(
        failures.is_empty(),
        "snapshots differ:\n{}",
        failures.join("\n")
    );
}

#[test]
fn gpu_panel_lists_the_adapter_and_its_features() {
    let storage = MemoryStorage::default();
    let (mut harness, gpu) = app_harness("gpu_panel", &storage, Some("welcome"));
    harness.run();
    harness.get_by_label("About this GPU").click();
    harness.run();
    if gpu {
        assert!(
            harness
                .query_by_label("✔ TIMESTAMP_QUERY: enabled")
                .is_some()
        );
        assert!(matches!(
            harness.state().gpu_status(),
            dlsys_lessons::GpuStatus::Compute(_)
        ));
    } else {
        shows(&harness, "No GPU device");
    }
}

#[test]
fn an_unknown_route_is_reported_not_fatal() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("unknown_route", &storage, Some("#no_such_lesson"));
    harness.run();
    assert_eq!(harness.state().current_lesson(), "welcome");
    shows(&harness, "There is no lesson “no_such_lesson”");
}

#[test]
fn a_corrupt_save_starts_with_defaults_says_so_once_and_keeps_the_data() {
    let storage = MemoryStorage::default();
    storage.map.lock().unwrap().insert(
        dlsys_lab::persist::STORAGE_KEY.to_owned(),
        "(lesson: \"we".to_owned(),
    );
    let (mut harness, _) = app_harness("corrupt_save", &storage, None);
    harness.run();
    assert_eq!(harness.state().current_lesson(), "welcome");
    shows(&harness, "could not be read");
    let kept = harness.state().saved_state().unreadable;
    assert_eq!(
        kept.values().next().map(String::as_str),
        Some("(lesson: \"we")
    );
    // The kept copy can be taken out of the app.
    assert!(
        harness
            .query_by_label("Export the unreadable save…")
            .is_some()
    );
    harness.get_by_label("Dismiss").click();
    harness.run();
    assert!(
        harness
            .query_by_label_contains("could not be read")
            .is_none()
    );
}

#[test]
fn a_newer_save_is_left_untouched() {
    let storage = MemoryStorage::default();
    storage
        .map
        .lock()
        .unwrap()
        .insert("dlsys-lab/v3".to_owned(), "(future: true)".to_owned());
    let (mut harness, _) = app_harness("newer_save", &storage, None);
    harness.run();
    shows(&harness, "newer dlsys-lab");
    let mut app = harness.into_state();
    eframe::App::save(&mut app, &mut storage.clone());
    assert_eq!(
        storage
            .map
            .lock()
            .unwrap()
            .get("dlsys-lab/v3")
            .map(String::as_str),
        Some("(future: true)")
    );
}

#[test]
fn theme_and_zoom_persist_across_restarts() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("theme_zoom", &storage, None);
    harness.run();
    harness.get_by_label("Dark").click();
    harness.get_by_label("+").click();
    harness.run();
    let mut app = harness.into_state();
    eframe::App::save(&mut app, &mut storage.clone());
    let (mut again, _) = app_harness("theme_zoom_again", &storage, None);
    again.run();
    let state = again.state().saved_state();
    assert_eq!(state.theme, egui::ThemePreference::Dark);
    assert!(state.zoom > 1.05, "zoom {}", state.zoom);
}

/// A setting is written when it changes, not only at exit or by the 30 s
/// auto-save, so a crash loses at most half a second.
#[test]
fn a_changed_setting_is_saved_without_closing_the_app() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("save_on_change", &storage, None);
    harness.run();
    harness.get_by_label("Dark").click();
    let saved_dark = || {
        storage
            .map
            .lock()
            .unwrap()
            .get(dlsys_lab::persist::STORAGE_KEY)
            .is_some_and(|text| text.contains("theme:Dark"))
    };
    let start = std::time::Instant::now();
    while !saved_dark() {
        harness.step();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(start.elapsed().as_secs() < 5, "not saved after 5 s");
    }
    // Nothing was closed, and no auto-save interval passed.
    assert!(start.elapsed().as_secs() < 2);
}

/// Storage whose writes fail, the way a read-only disk's do.
#[derive(Default)]
struct FailingStore {
    writes: std::sync::Arc<std::sync::Mutex<u32>>,
    failed: bool,
}

impl dlsys_lab::persist::Store for FailingStore {
    fn get_string(&self, _key: &str) -> Option<String> {
        None
    }
    fn set_string(&mut self, _key: &str, _value: String) {}
    fn flush(&mut self) {
        *self.writes.lock().unwrap() += 1;
        self.failed = true;
    }
    fn take_failure(&mut self) -> Option<dlsys_lab::Notice> {
        std::mem::take(&mut self.failed).then(|| dlsys_lab::Notice::SaveFailed {
            path: "app.ron".to_owned(),
            error: "read-only".to_owned(),
        })
    }
}

/// A failed save is shown, not swallowed, and the next change tries again.
#[test]
fn a_failed_save_is_shown_to_the_learner() {
    let (builder, _) = crate::common::builder("failed_save");
    let store = FailingStore::default();
    let writes = store.writes.clone();
    let mut harness = builder.build_eframe(move |cc| {
        dlsys_lab::DlsysApp::new(
            cc,
            dlsys_lab::Startup {
                storage: Some(Box::new(store)),
                ..Default::default()
            },
        )
    });
    harness.run();
    harness.get_by_label("Dark").click();
    let start = std::time::Instant::now();
    while harness
        .query_by_label_contains("Could not save your progress")
        .is_none()
    {
        harness.step();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(start.elapsed().as_secs() < 5, "no notice after 5 s");
    }
    harness.get_by_label("Light").click();
    let before = *writes.lock().unwrap();
    let start = std::time::Instant::now();
    while *writes.lock().unwrap() == before {
        harness.step();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(
            start.elapsed().as_secs() < 5,
            "no retry after 5 s: theme {:?}, {} writes",
            harness.state().saved_state().theme,
            *writes.lock().unwrap()
        );
    }
}

#[test]
fn typing_a_value_updates_every_format() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("float_typing", &storage, Some("float_formats"));
    harness.run();
    harness
        .get_by_role_and_label(Role::TextInput, "Value:")
        .set_text_value_accesskit("65520");
    harness.run();
    // fp16 overflows to infinity; fp32 holds it exactly.
    assert!(harness.query_all_by_label("+inf").count() >= 1);
    assert!(harness.query_all_by_label("65520").count() >= 1);
    harness
        .get_by_role_and_label(Role::TextInput, "Value:")
        .set_text_value_accesskit("0x1.zp3");
    harness.run();
    shows(&harness, "Cannot read that");
}

#[test]
fn solving_an_exercise_saves_progress_immediately() {
    use dlsys_core::exercise::FIRST_SEED;
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("exercise_save", &storage, Some("float_formats"));
    harness.run();
    let lesson = dlsys_lessons::all()
        .into_iter()
        .find(|l| l.id() == "float_formats")
        .unwrap();
    let exercise = lesson.exercises()[0];
    let task = (exercise.generate)(FIRST_SEED, Lang::En);
    // A wrong answer first: feedback, no save.
    let wrong = &task.mistakes[0];
    harness
        .get_by_role_and_label(Role::TextInput, "Answer:")
        .set_text_value_accesskit(&wrong.answer);
    harness.run();
    click_visible(&mut harness, "Check");
    shows(&harness, &wrong.feedback);
    assert_eq!(*storage.flushes.lock().unwrap(), 0);
    // Then the right one: saved at once, and the sidebar counts it.
    harness
        .get_by_role_and_label(Role::TextInput, "Answer:")
        .set_text_value_accesskit(&task.reference);
    harness.run();
    click_visible(&mut harness, "Check");
    assert!(
        *storage.flushes.lock().unwrap() >= 1,
        "not saved on completion"
    );
    let saved = storage
        .map
        .lock()
        .unwrap()
        .get(dlsys_lab::persist::STORAGE_KEY)
        .cloned()
        .unwrap();
    let state: dlsys_lab::persist::SavedState = ron::from_str(&saved).unwrap();
    let entry = state.progress.get("float_formats", exercise.id).unwrap();
    assert!(entry.solved && entry.attempts == 2);
    shows(&harness, "1/8 exercises solved");
    // A restart from that storage keeps it.
    drop(harness);
    let (mut again, _) = app_harness("exercise_save_again", &storage, None);
    again.run();
    shows(&again, "1/8 exercises solved");
}

#[test]
fn training_runs_between_frames_and_finishes() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("training", &storage, Some("autograd_mlp"));
    harness.run();
    click_visible(&mut harness, "Train");
    // One frame at a time: a fast machine trains the epoch in a few frames.
    let frames = run_while(&mut harness, 1, 300, "training", |h| {
        h.query_by_label_contains("Done: test accuracy").is_none()
    });
    // Training took more than a frame: it never ran to completion inside one.
    assert!(frames > 1, "finished in {frames} frames");
    shows(&harness, "Decision boundary");
    crate::common::plot_colours_are_distinct(&harness, &["train_accuracy", "train_boundary"]);
}

#[test]
fn the_memory_lesson_measures_on_the_engine_beside_the_estimate() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("memory", &storage, Some("memory_compute"));
    harness.run();
    assert!(harness.query_by_label("measured").is_none());
    click_visible(&mut harness, "Measure on the engine");
    run_while(&mut harness, 2, 120, "the measurement", |h| {
        h.query_by_label_contains("Measured peak").is_none()
    });
    // The bar and the table's column.
    assert_eq!(harness.query_all_by_label("measured").count(), 2);
    crate::common::plot_colours_are_distinct(&harness, &["memory_timeline"]);
    shows(&harness, "\"Checkpointing is free\"");
}

#[test]
fn the_browser_selftest_sequence_passes_natively_too() {
    let (builder, gpu) = crate::common::builder("selftest");
    let mut harness = builder.build_eframe(|cc| {
        dlsys_lab::DlsysApp::new(
            cc,
            dlsys_lab::Startup {
                selftest: true,
                ..Default::default()
            },
        )
    });
    // The whole default race runs on the software adapter, a little each frame.
    run_while(&mut harness, 1, 300, "the self-test", |h| {
        h.state().selftest_report().is_none()
    });
    let report = harness.state().selftest_report().cloned().unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.lessons.len(), dlsys_lessons::all().len());
    // Every lesson's main action ran through its button's path.
    let names: Vec<&str> = report.checks.iter().map(|c| c.name.as_str()).collect();
    for lesson in [
        "autograd_mlp",
        "mixed_precision",
        "memory_compute",
        "gpu_kernels",
        "write_kernels",
    ] {
        assert!(
            names.contains(&format!("lesson:{lesson}").as_str()),
            "{names:?}"
        );
    }
    let detail = |name: &str| {
        report
            .checks
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.detail.clone())
            .unwrap_or_default()
    };
    assert!(
        detail("lesson:autograd_mlp").contains("1 epoch(s)"),
        "{report:?}"
    );
    assert!(
        detail("lesson:memory_compute").contains("estimate matched"),
        "{report:?}"
    );
    if gpu {
        assert_ne!(report.backend, "cpu");
        assert!(
            detail("lesson:write_kernels").contains("passes all"),
            "{report:?}"
        );
        assert!(
            detail("lesson:gpu_kernels").contains("rungs ran on the GPU"),
            "{report:?}"
        );
    }
}

#[test]
fn a_mixed_precision_scenario_trains_both_sides_and_shows_what_was_lost() {
    let storage = MemoryStorage::default();
    let (mut harness, gpu) = app_harness("mixed_scenario", &storage, Some("mixed_precision"));
    harness.run();
    click_visible(&mut harness, "fp16, no loss scaling");
    let frames = run_while(&mut harness, 5, 300, "the scenario", |h| {
        h.state().lesson_busy("mixed_precision")
    });
    harness.run();
    assert!(frames > 5, "finished in {frames} frames");
    // Both sides finished, and the per-layer counts of flushed gradients are shown.
    assert_eq!(
        harness
            .query_all_by_label_contains("finished; test accuracy")
            .count(),
        2
    );
    assert!(harness.query_all_by_label_contains("became 0").count() >= 2);
    harness
        .get_by_label_contains("Weight gradients as they reach")
        .scroll_to_me();
    harness.run();
    crate::common::plot_colours_are_distinct(
        &harness,
        &["mixed_loss", "mixed_scale", "mixed_hist"],
    );
    if gpu {
        crate::common::snapshot_lesson(
            &mut harness,
            Lang::En,
            "mixed_precision",
            "mixed_precision_fp16_no_scaling",
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn the_mock_test_page_draws_what_the_cli_draws_and_marks_the_paper() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("mock_test", &storage, Some("mock_test"));
    harness.run();
    click_visible(&mut harness, "Start the test");
    // Seed 1, 10 questions: the draw `dlsys-lab quiz --seed 1` prints.
    let listed = dlsys_lessons::listed();
    let drawn = dlsys_core::exercise::quiz::draw(&listed, 10, 1);
    let tasks = dlsys_core::exercise::quiz::tasks(&listed, &drawn, Lang::En);
    for (i, found) in tasks.iter().enumerate() {
        let (_, lesson, title) = found.as_ref().unwrap();
        let heading = format!("{}. {lesson} — {title}", i + 1);
        assert!(harness.query_by_label(&heading).is_some(), "{heading}");
    }
    crate::common::hand_in_the_first_answered(&mut harness, &tasks);
    shows(&harness, "9 due for review");
}

#[test]
fn the_layers_lesson_trains_its_cnn_and_transformer_between_frames() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("layers", &storage, Some("layers"));
    harness.run();
    // Each training starts from its button, runs between frames, and its
    // Stop stops it. (What the CNN's full run reaches, and its two bugs,
    // are `core/tests/cnn.rs`'s: the same run, `CnnRun`'s defaults.)
    for button in ["Train the CNN", "Train the transformer (400 steps)"] {
        click_visible(&mut harness, button);
        harness.run_steps(3);
        assert!(
            harness.state().lesson_busy("layers"),
            "{button} did not start"
        );
        harness.get_by_label("Stop").click();
        harness.run_steps(2);
        assert!(
            !harness.state().lesson_busy("layers"),
            "{button}: Stop did not stop it"
        );
    }
    assert!(harness.query_by_label_contains("Test accuracy").is_none());
    let button = "Train the transformer (400 steps)";
    click_visible(&mut harness, button);
    let frames = run_while(&mut harness, 2, 300, button, |h| {
        h.state().lesson_busy("layers")
    });
    assert!(frames > 2, "{button} ran inside one frame");
    harness.run();
    // The transformer's loss fell, and its continuation is shown.
    shows(&harness, "Greedy continuation");
    crate::common::plot_colours_are_distinct(
        &harness,
        &["attn_flops", "attn_kv", "layers_gradcheck_plot"],
    );
}
