//! `dlsys-lab pipeline` run as a user runs it: the stage times, a row per
//! worker count with the measurement beside the model, and refusals.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::support::{dlsys_lab, fails_with_one_line, has_cjk, json_lines};

#[test]
fn pipeline_reports_each_worker_count_beside_the_model() {
    let lines = json_lines(&[
        "pipeline",
        "--workers",
        "1,2",
        "--batches",
        "12",
        "--dataset",
        "digits",
        "--extra-read-ms",
        "0.02",
        "--json",
    ]);
    assert_eq!(lines.len(), 3, "the setup, then one row per worker count");
    let stages = &lines[0]["stage_means_s"];
    assert!(stages["read_s"].as_f64().unwrap() > 0.0);
    // 32 samples × 20 µs of blocking at least.
    assert!(stages["extra_io_s"].as_f64().unwrap() >= 32.0 * 20e-6);
    for (row, k) in lines[1..].iter().zip([1, 2]) {
        assert_eq!(row["workers"], k);
        let u = row["measured_utilisation"].as_f64().unwrap();
        assert!(u > 0.0 && u <= 1.0, "{row}");
        assert!(row["predicted_samples_per_s"].as_f64().unwrap() > 0.0);
    }
    let text = dlsys_lab(&[
        "--lang",
        "zh",
        "pipeline",
        "--workers",
        "1",
        "--batches",
        "5",
        "--dataset",
        "digits",
    ]);
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(has_cjk(&text) && text.contains("预测利用率"), "{text}");
    fails_with_one_line(&[
        &["pipeline", "--workers", "0"],
        &["pipeline", "--workers", "1,9"],
        &["pipeline", "--batches", "0"],
        &["pipeline", "--batch", "0"],
        &["pipeline", "--prefetch", "99"],
        &["pipeline", "--extra-decode-ms", "-1"],
        &["pipeline", "--extra-read-ms", "nan"],
        &["pipeline", "--dataset", "moons"],
    ]);
}
