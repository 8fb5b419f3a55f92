//! `dlsys-lab progress`: the save file's overview, its export, and an
//! import that merges, replaces, or refuses a bad file and changes nothing.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs `dlsys-lab progress …` with its save file in `dir`.
fn progress(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dlsys-lab"))
        .arg("progress")
        .args(args)
        .env("DLSYS_LAB_DATA_DIR", dir)
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env("LANG", "C.UTF-8")
        .output()
        .expect("the dlsys-lab binary runs")
}

/// A save file holding one solved exercise.
fn save_with_a_solve(dir: &Path) {
    let mut state = dlsys_lab::persist::SavedState::default();
    let first = &dlsys_lessons::listed()[0];
    state.progress.entry(first.id, first.exercises[0].id).solved = true;
    let entries = std::collections::BTreeMap::from([(
        dlsys_lab::persist::STORAGE_KEY.to_owned(),
        state.to_ron().unwrap(),
    )]);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("app.ron"), ron::to_string(&entries).unwrap()).unwrap();
}

#[test]
fn progress_exports_imports_and_refuses_a_bad_file_unchanged() {
    let root = std::env::temp_dir().join(format!("dlsys-lab-cli-progress-{}", std::process::id()));
    let (here, there) = (root.join("here"), root.join("there"));
    let _ = std::fs::remove_dir_all(&root);
    save_with_a_solve(&here);
    let shown = progress(&here, &["show", "--json"]);
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(json["solved"], 1);
    assert_eq!(json["lessons"][0]["last_visit"], "undated");

    let file = root.join("mine.json");
    let out = progress(&here, &["export", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Into a fresh folder: the same figures.
    std::fs::create_dir_all(&there).unwrap();
    let out = progress(&there, &["import", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("0 here, 1 in the file, 1 after a merge"),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&progress(&there, &["show", "--json"]).stdout).unwrap();
    assert_eq!(json["solved"], 1);

    // A file cut short: one line saying why, the save file as it was.
    let before = std::fs::read(there.join("app.ron")).unwrap();
    let good = std::fs::read_to_string(&file).unwrap();
    let cut = root.join("cut.json");
    std::fs::write(&cut, &good[..good.len() / 3]).unwrap();
    let out = progress(&there, &["import", cut.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Nothing was imported") && err.contains("not valid JSON"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(std::fs::read(there.join("app.ron")).unwrap(), before);
    // A dry run says what would change and changes nothing.
    let out = progress(&there, &["import", "--dry-run", file.to_str().unwrap()]);
    assert!(out.status.success());
    assert_eq!(std::fs::read(there.join("app.ron")).unwrap(), before);
    let _ = std::fs::remove_dir_all(&root);
}
