//! The command line's data-parallel face, run as a user runs it:
//! `allreduce` and `train --workers`.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::support::{dlsys_lab, fails_with_one_line, json_lines, succeeds};

#[test]
fn allreduce_checks_the_sum_and_counts_the_bytes() {
    for algo in ["ring", "tree", "hd", "ps"] {
        let out = succeeds(&[
            "allreduce",
            "--algo",
            algo,
            "--workers",
            "6",
            "--elements",
            "1001",
            "--json",
        ]);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["correct"], true, "{algo}");
        assert_eq!(
            json["total_sent_bytes"], json["formula_total_sent_bytes"],
            "{algo}"
        );
        let nodes = json["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), if algo == "ps" { 7 } else { 6 });
        assert!(json["simulated_s"].as_f64().unwrap() > 0.0);
    }
    // The ring: 2(N−1)·S in all, the text says so and says the check.
    let out = dlsys_lab(&["allreduce", "--workers", "4", "--elements", "1024"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("correct on every worker, bit for bit"),
        "{text}"
    );
    assert!(text.contains("all nodes sent 24.0 KiB (24576 B)"), "{text}");
    let out = dlsys_lab(&[
        "--lang",
        "zh",
        "allreduce",
        "--op",
        "reduce-scatter",
        "--workers",
        "3",
        "--elements",
        "10",
    ]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("每个 worker 自己负责的那一块都是正确的和")
    );
    fails_with_one_line(&[
        &["allreduce", "--workers", "1"],
        &["allreduce", "--workers", "17"],
        &["allreduce", "--elements", "0"],
        &["allreduce", "--algo", "tree", "--op", "all-gather"],
        &["allreduce", "--gbps", "0"],
        &["allreduce", "--alpha-us", "nan"],
        &["allreduce", "--algo", "mesh"],
        &["allreduce", "--workers", "16", "--elements", "67108864"],
        &["allreduce", "--slow-link", "0.5"],
        &["allreduce", "--slow-link", "inf"],
    ]);
}

#[test]
fn a_slow_link_slows_the_ring_by_its_bandwidth_share() {
    // α = 0: the ring runs entirely at the slow link's bandwidth.
    let out = dlsys_lab(&[
        "allreduce",
        "--workers",
        "8",
        "--elements",
        "8192",
        "--alpha-us",
        "0",
        "--slow-link",
        "3",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let uniform = json["simulated_s"].as_f64().unwrap();
    let slow = json["slow_link_simulated_s"].as_f64().unwrap();
    assert!((slow / uniform - 3.0).abs() < 1e-9, "{slow} / {uniform}");
    let out = dlsys_lab(&["allreduce", "--workers", "4", "--slow-link", "2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("with w3's links at 1/2 of the bandwidth: virtual time"),
        "{text}"
    );
}

#[test]
fn train_with_workers_is_data_parallel_and_refuses_what_it_lacks() {
    let lines = json_lines(&[
        "train",
        "--workers",
        "4",
        "--batch",
        "16",
        "--epochs",
        "2",
        "--dataset",
        "moons",
        "--json",
    ]);
    assert_eq!(lines.len(), 3);
    assert!(lines[0]["comm_bytes"].as_u64().unwrap() > 0);
    assert!(lines[1]["train_loss"].as_f64().unwrap() < lines[0]["train_loss"].as_f64().unwrap());
    assert_eq!(lines[2]["replicas_identical"], true);
    let out = dlsys_lab(&[
        "train",
        "--workers",
        "3",
        "--epochs",
        "1",
        "--dataset",
        "xor",
        "--allreduce",
        "ps",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("parameter server all-reduce"),
        "{text}"
    );
    fails_with_one_line(&[
        &["train", "--workers", "4", "--precision", "bf16"],
        &["train", "--workers", "4", "--scenario", "fp16-no-scaling"],
        &["train", "--workers", "4", "--micro-batches", "2"],
        &["train", "--allreduce", "ring"],
        &["train", "--gbps", "10"],
        &["train", "--workers", "17"],
        &["train", "--workers", "4", "--gbps", "0"],
        &[
            "train",
            "--workers",
            "16",
            "--batch",
            "5000",
            "--dataset",
            "xor",
        ],
    ]);
}

#[test]
fn train_async_reports_staleness_per_epoch() {
    let lines = json_lines(&[
        "train",
        "--workers",
        "4",
        "--async",
        "--batch",
        "16",
        "--epochs",
        "2",
        "--dataset",
        "moons",
        "--json",
    ]);
    assert_eq!(lines.len(), 3);
    assert!(lines[1]["mean_staleness"].as_f64().unwrap() > 0.0);
    assert!(
        lines[1]["virtual_end_s"].as_f64().unwrap() > lines[0]["virtual_end_s"].as_f64().unwrap()
    );
    assert!(lines[2]["final_test_accuracy"].as_f64().unwrap() > 0.5);
    // Under the default momentum the text warns what staleness does to it.
    let out = dlsys_lab(&[
        "train",
        "--workers",
        "2",
        "--async",
        "--epochs",
        "1",
        "--dataset",
        "moons",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("larger effective momentum"), "{text}");
    fails_with_one_line(&[
        &["train", "--async"],
        &["train", "--workers", "4", "--async", "--allreduce", "ring"],
    ]);
}

#[test]
fn compressed_gradients_send_fewer_bytes_and_still_train() {
    let bytes = |compress: &str| -> (u64, f64) {
        let lines = json_lines(&[
            "train",
            "--workers",
            "4",
            "--epochs",
            "2",
            "--dataset",
            "moons",
            "--hidden",
            "16",
            "--compress",
            compress,
            "--json",
        ]);
        assert_eq!(lines[2]["replicas_identical"], true, "{compress}");
        (
            lines[0]["comm_bytes"].as_u64().unwrap(),
            lines[1]["train_loss"].as_f64().unwrap(),
        )
    };
    let (full, _) = bytes("none");
    let (half, loss) = bytes("bf16");
    assert_eq!(2 * half, full);
    assert!(loss.is_finite());
    let (sparse, _) = bytes("topk:0.01");
    assert!(sparse * 10 < full, "{sparse} of {full}");
    fails_with_one_line(&[
        &["train", "--compress", "fp16"],
        &["train", "--workers", "4", "--compress", "topk:0"],
        &["train", "--workers", "4", "--compress", "gzip"],
        &["train", "--workers", "4", "--async", "--compress", "fp16"],
    ]);
}
