//! The "Progress" page: its figures after two solves and a mock test, and
//! the progress file — exported, imported into a fresh profile (the same
//! overview), and refused by name when it is corrupt, cut short, from a
//! newer version or too large, with nothing changed.

use dlsys_core::exercise::{AnswerKind, FIRST_SEED, Task};
use dlsys_core::text::Lang;
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;

use crate::common::{MemoryStorage, app_harness, click_visible, shows};

type App<'a> = Harness<'a, dlsys_lab::DlsysApp>;

/// Answers the open exercise (`task`) with its reference, on the page.
fn answer(harness: &mut App<'_>, task: &Task, input: &str, check: &str) {
    match &task.kind {
        AnswerKind::Choice { options } => {
            let k: usize = task.reference.parse().unwrap_or(1);
            click_visible(harness, &options[k - 1]);
        }
        _ => {
            harness
                .get_by_role_and_label(Role::TextInput, input)
                .scroll_to_me();
            harness.run();
            harness
                .get_by_role_and_label(Role::TextInput, input)
                .set_text_value_accesskit(&task.reference);
            harness.run();
            if !check.is_empty() {
                click_visible(harness, check);
            }
        }
    }
}

/// Types `path` into the page's file field and clicks `button`.
fn with_file(harness: &mut App<'_>, path: &std::path::Path, button: &str) {
    let field = harness.get_by_role_and_label(Role::TextInput, "File:");
    field.scroll_to_me();
    harness.run();
    harness
        .get_by_role_and_label(Role::TextInput, "File:")
        .set_text_value_accesskit(&path.display().to_string());
    harness.run();
    click_visible(harness, button);
    harness.run();
}

fn open_progress(harness: &mut App<'_>) {
    harness
        .get_by_role_and_label(Role::Button, "My progress")
        .click();
    harness.run();
    assert_eq!(harness.state().current_lesson(), "progress");
}

#[test]
fn the_overview_counts_two_solves_and_a_mock_test_and_travels_in_a_file() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("progress", &storage, Some("float_formats"));
    harness.run();
    // Two exercises of the float lesson solved: the first (open), then the second.
    let exercises = dlsys_lessons::listed()
        .into_iter()
        .find(|l| l.id == "float_formats")
        .map(|l| l.exercises)
        .unwrap_or_default();
    let task = |i: usize| (exercises[i].generate)(FIRST_SEED, Lang::En);
    answer(&mut harness, &task(0), "Answer:", "Check");
    let title =
        |i: usize, mark: &str| format!("{mark} {}. {}", i + 1, (exercises[i].title)(Lang::En));
    click_visible(&mut harness, &title(0, "✔"));
    click_visible(&mut harness, &title(1, "○"));
    answer(&mut harness, &task(1), "Answer:", "Check");
    shows(&harness, "2/8 exercises solved");

    // A mock test: the first question right, nine blank.
    // The sidebar scrolls: the button may be below the window.
    click_visible(&mut harness, "Mock test");
    click_visible(&mut harness, "Start the test");
    let listed = dlsys_lessons::listed();
    let drawn = dlsys_core::exercise::quiz::draw(&listed, 10, 1);
    let tasks = dlsys_core::exercise::quiz::tasks(&listed, &drawn, Lang::En);
    crate::common::hand_in_the_first_answered(&mut harness, &tasks);

    open_progress(&mut harness);
    assert!(
        harness.query_by_label("2/8").is_some(),
        "the float lesson's 2/8"
    );
    let solved = 2;
    let total: usize = listed.iter().map(|l| l.exercises.len()).sum();
    let totals = format!("In all: {solved} of {total} exercises solved; mock tests taken: 1.");
    assert!(harness.query_by_label(&totals).is_some(), "{totals}");
    // The first question's lesson: one right of those drawn from it.
    let lesson = &drawn[0].lesson;
    let from_it = drawn.iter().filter(|q| &q.lesson == lesson).count();
    let share = format!("1/{from_it} ({:.0} %)", 100.0 / from_it as f64);
    assert!(harness.query_by_label(&share).is_some(), "{share}");
    // Nine blank answers are due: the page suggests a review first.
    shows(&harness, "due for review: ");
    assert!(
        harness.query_by_label("2026-12-05").is_some(),
        "today's visit, dated"
    );
    let overview = harness.state().overview();
    assert_eq!(overview.row("float_formats").map(|r| r.solved), Some(2));
    assert_eq!(overview.rows.iter().map(|r| r.due).sum::<usize>(), 9);

    // Exported, then imported into a fresh profile: the same overview.
    let dir = tempfile_dir("progress_export");
    let file = dir.join("mine.json");
    with_file(&mut harness, &file, "Export…");
    shows(&harness, "Your progress was written to");
    let (mut fresh, _) = app_harness(
        "progress_import",
        &MemoryStorage::default(),
        Some("progress"),
    );
    fresh.run();
    with_file(&mut fresh, &file, "Import…");
    shows(
        &fresh,
        "Solved exercises: 0 here, 2 in the file, 2 after a merge",
    );
    click_visible(&mut fresh, "Merge into my progress");
    fresh.run();
    shows(&fresh, "merged into your progress");
    assert_eq!(fresh.state().overview(), overview);
    assert!(fresh.query_by_label(&totals).is_some());

    // Files that must change nothing, each refused with its reason.
    let good = std::fs::read(&file).unwrap_or_default();
    let bad: [(&str, Vec<u8>, &str); 4] = [
        (
            "corrupt.json",
            b"\x00\x01 not json".to_vec(),
            "not valid JSON",
        ),
        (
            "cut.json",
            good[..good.len() / 2].to_vec(),
            "not valid JSON",
        ),
        (
            "future.json",
            String::from_utf8_lossy(&good)
                .replacen("\"version\": 2", "\"version\": 3", 1)
                .into_bytes(),
            "written by a newer dlsys-lab",
        ),
        (
            "huge.json",
            vec![b' '; 10 * 1024 * 1024 + 1],
            "a progress file is at most 10 MiB",
        ),
    ];
    let before = fresh.state().saved_state();
    for (name, bytes, why) in bad {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
        with_file(&mut fresh, &path, "Import…");
        assert!(
            fresh
                .query_by_label_contains("Nothing was imported")
                .is_some(),
            "{name}"
        );
        assert!(
            fresh.query_by_label_contains(why).is_some(),
            "{name}: {why}"
        );
        assert!(
            fresh.query_by_label_contains("after a merge").is_none(),
            "{name}: no preview"
        );
        assert_eq!(
            fresh.state().saved_state(),
            before,
            "{name} changed the progress"
        );
        while fresh.query_all_by_label("Dismiss").next().is_some() {
            if let Some(dismiss) = fresh.query_all_by_label("Dismiss").next() {
                dismiss.click();
            }
            fresh.run();
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A fresh folder under the temporary directory for `test`.
fn tempfile_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dlsys-lab-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    dir
}

#[test]
fn a_version_1_save_loads_with_its_dates_unknown_and_is_kept() {
    let exercise = dlsys_lessons::listed()[0].exercises[0].id;
    let lesson = dlsys_lessons::listed()[0].id;
    let v1 = format!(
        "(lesson: \"progress\", progress: (exercises: {{\"{lesson}/{exercise}\": (seed: 1, solved: true, attempts: 1)}}))"
    );
    let storage = MemoryStorage::default();
    storage
        .map
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert("dlsys-lab/v1".to_owned(), v1.clone());
    let (mut harness, _) = app_harness("progress_v1", &storage, None);
    harness.run();
    assert_eq!(harness.state().current_lesson(), "progress");
    let row = harness
        .state()
        .overview()
        .row(lesson)
        .cloned()
        .expect("a row");
    assert_eq!((row.solved, row.solved_undated), (1, 1));
    assert_eq!(row.visit, dlsys_core::study::Visit::Undated);
    shows(&harness, "From before dates were kept");
    assert!(harness.query_all_by_label("date unknown").next().is_some());
    // Saved under this version's key; the old one as it was.
    let mut app = harness.into_state();
    eframe::App::save(&mut app, &mut storage.clone());
    let map = storage.map.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(map.get("dlsys-lab/v1"), Some(&v1));
    let v2 = map
        .get(dlsys_lab::persist::STORAGE_KEY)
        .cloned()
        .unwrap_or_default();
    let state: dlsys_lab::persist::SavedState = ron::from_str(&v2).unwrap_or_default();
    assert!(
        state
            .progress
            .get(lesson, exercise)
            .is_some_and(|p| p.solved && p.solved_on.is_none())
    );
}
