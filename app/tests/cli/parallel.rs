//! `dlsys-lab parallel pp|tp|fsdp`: a pipeline schedule timed, its bubble against
//! the closed form, and bad shapes refused in one line.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::support::{dlsys_lab, fails_with_one_line, json};

#[test]
fn each_schedule_meets_its_closed_form_bubble_with_free_transfers() {
    for (schedule, extra, formula) in [
        ("gpipe", vec![], 3.0 / 11.0),
        ("1f1b", vec![], 3.0 / 11.0),
        ("interleaved", vec!["--virtual", "2"], 3.0 / 19.0),
        // T_F = T_B = T_W = 1 ms: idle 3 × 1 against a stage's 8 × 3 busy.
        ("zb-h1", vec![], 1.0 / 9.0),
    ] {
        let mut args = vec![
            "parallel",
            "pp",
            "--schedule",
            schedule,
            "--forward-ms",
            "1",
            "--json",
        ];
        args.extend(extra);
        let v = json(&args);
        let run = &v["run"];
        assert!(
            (run["formula"].as_f64().unwrap() - formula).abs() < 1e-12,
            "{v}"
        );
        for row in run["rows"].as_array().unwrap() {
            let bubble = row["bubble"].as_f64().unwrap();
            assert!((bubble - formula).abs() < 1e-9, "{schedule}: {row}");
        }
    }
    // 1F1B holds P − s micro-batches' activations, GPipe all M.
    let peak = |schedule: &str| -> Vec<u64> {
        json(&[
            "parallel",
            "pp",
            "--schedule",
            schedule,
            "--ideal",
            "--json",
        ])["run"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["peak_in_flight"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(peak("1f1b"), [4, 3, 2, 1]);
    assert_eq!(peak("gpipe"), [8, 8, 8, 8]);
    // ZB-H1: P − s until B, s more W's delayed.
    assert_eq!(peak("zb-h1"), [4, 4, 4, 4]);
    // Text: a line for the run, one per stage, the closed form.
    let out = dlsys_lab(&["parallel", "pp", "--transfer-ms", "0.5"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.lines().count() == 6, "{text}");
}

#[test]
fn the_model_on_real_data_matches_unsplit_accumulation_and_ideal_meets_the_form() {
    for schedule in ["gpipe", "1f1b", "interleaved", "zb-h1"] {
        let v = json(&[
            "parallel",
            "pp",
            "--schedule",
            schedule,
            "--ideal",
            "--json",
        ]);
        let training = &v["training"];
        assert_eq!(training["differing"], 0, "{schedule}: {v}");
        assert!(training["elements"].as_u64().unwrap() > 0);
        let formula = v["run"]["formula"].as_f64().unwrap();
        for row in v["run"]["rows"].as_array().unwrap() {
            let bubble = row["bubble"].as_f64().unwrap();
            if schedule == "zb-h1" {
                // The first layer needs no input gradient, so the mean B is
                // shorter than W: ZB-H1's form is then only a floor.
                assert!(bubble > formula, "{row}");
            } else {
                assert!((bubble - formula).abs() < 1e-9, "{schedule}: {row}");
            }
        }
        let held = training["held"].as_array().unwrap().clone();
        let peaks: Vec<_> = v["run"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["peak_in_flight"].clone())
            .collect();
        assert_eq!(held, peaks, "{schedule}");
    }
    // Without --ideal the first and last layers make unequal stages and the
    // link costs time: the bubble is above the form. Text: a run line, the
    // model and its bits, a line per stage, the closed form.
    let v = json(&["parallel", "pp", "--json"]);
    assert!(v["run"]["rows"][0]["bubble"].as_f64() > v["run"]["formula"].as_f64());
    let out = dlsys_lab(&["parallel", "pp"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.lines().count() == 8, "{text}");
}

#[test]
fn bad_pipelines_are_refused_in_one_line() {
    fails_with_one_line(&[
        &["parallel", "pp", "--stages", "0"],
        &["parallel", "pp", "--stages", "65"],
        &[
            "parallel",
            "pp",
            "--schedule",
            "interleaved",
            "--micro-batches",
            "6",
        ],
        &["parallel", "pp", "--virtual", "2"],
        &["parallel", "pp", "--forward-ms", "-1"],
        &["parallel", "pp", "--forward-ms", "0", "--backward-ms", "0"],
        &["parallel", "pp", "--schedule", "zb-h2"],
        &["parallel", "pp", "--schedule", "zb-h1", "--weight-ms", "3"],
        &["parallel", "pp", "--stages", "9"],
        &["parallel", "pp", "--width", "5000"],
        &["parallel", "pp", "--gbps", "0"],
        &["parallel", "pp", "--micro-batches", "65"],
    ]);
}

#[test]
fn tensor_parallel_splits_a_layer_and_counts_its_all_reduces() {
    for workers in ["2", "4", "8"] {
        let v = json(&["parallel", "tp", "--workers", workers, "--json"]);
        let run = &v["run"];
        assert_eq!(run["all_reduces"], 4, "{v}");
        let mut total = 0;
        for sub in run["sublayers"].as_array().unwrap() {
            assert_eq!(sub["activations_bitwise"], true, "{sub}");
            assert_eq!(sub["weight_grads_bitwise"], true, "{sub}");
            assert_eq!(sub["both_within_f64_bound"], true, "{sub}");
            let formula = sub["formula_bytes"].as_u64().unwrap();
            for sent in ["sent_forward", "sent_backward"] {
                for bytes in sub[sent].as_array().unwrap() {
                    assert_eq!(bytes.as_u64(), Some(formula), "{sub}");
                }
                total += formula;
            }
        }
        assert_eq!(run["layer_bytes"].as_u64(), Some(total));
    }
    fails_with_one_line(&[
        &["parallel", "tp", "--workers", "3"],
        &["parallel", "tp", "--workers", "1"],
        &["parallel", "tp", "--hidden", "60"],
        &["parallel", "tp", "--tokens", "0"],
        &["parallel", "tp", "--hidden", "4096"],
    ]);
}

#[test]
fn fully_sharded_training_is_data_parallel_with_three_collectives() {
    for (workers, prefetch) in [("4", true), ("3", false)] {
        let mut args = vec!["parallel", "fsdp", "--workers", workers, "--steps", "2"];
        if prefetch {
            args.push("--prefetch");
        }
        args.push("--json");
        let v = json(&args);
        let run = &v["run"];
        assert_eq!(run["differing"], 0, "{v}");
        assert_eq!(run["losses"], run["dp_losses"], "{v}");
        assert_eq!(run["peak"], run["estimate"], "{v}");
        let n: u64 = workers.parse().unwrap();
        let psi = 4 * run["parameters"].as_u64().unwrap();
        let total = |key: &str| -> u64 {
            run[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_u64().unwrap())
                .sum()
        };
        assert_eq!(total("sent"), 3 * (n - 1) * psi, "{v}");
        assert_eq!(total("dp_sent"), 2 * (n - 1) * psi, "{v}");
        // The prefetched step is the shorter.
        let (step, other) = (
            run["step_s"].as_f64().unwrap(),
            run["other_step_s"].as_f64().unwrap(),
        );
        assert_eq!(step < other, prefetch, "{v}");
    }
    let out = dlsys_lab(&["parallel", "fsdp"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("0 of 1972 weights differ"), "{text}");
    fails_with_one_line(&[
        &["parallel", "fsdp", "--workers", "1"],
        &["parallel", "fsdp", "--workers", "17"],
        &["parallel", "fsdp", "--layers", "0"],
        &["parallel", "fsdp", "--steps", "21"],
        &["parallel", "fsdp", "--gbps", "0"],
    ]);
}

#[test]
fn the_planner_ranks_what_fits_and_says_why_the_rest_does_not() {
    let v = json(&["parallel", "plan", "--json"]);
    let plans = v["plans"].as_array().unwrap();
    assert_eq!(plans.len(), 28, "{v}");
    let fits = |p: &serde_json::Value| p["refusal"].is_null();
    let speed = |p: &serde_json::Value| p["estimate"]["tokens_per_s"].as_f64().unwrap();
    let fitting: Vec<_> = plans.iter().filter(|p| fits(p)).collect();
    assert!(!fitting.is_empty());
    assert!(fitting.windows(2).all(|w| speed(w[0]) >= speed(w[1])));
    for p in &fitting {
        let e = &p["estimate"];
        let t = &e["time"];
        let sum: f64 = ["compute", "bubble", "tp", "pp", "dp_exposed"]
            .iter()
            .map(|k| t[k].as_f64().unwrap())
            .sum();
        assert!((sum - t["step"].as_f64().unwrap()).abs() < 1e-9, "{p}");
        assert!(e["mfu"].as_f64().unwrap() < e["hfu"].as_f64().unwrap());
    }
    // The text: the settings, a count, the top plans, every refusal.
    let out = dlsys_lab(&["parallel", "plan", "--top", "2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.lines().count(), 2 + 2 + (28 - fitting.len()), "{text}");
    assert!(
        text.contains("80 layers do not divide among PP 32 stages"),
        "{text}"
    );
    fails_with_one_line(&[
        &["parallel", "plan", "--gpus", "0"],
        &["parallel", "plan", "--cluster", "tpu"],
        &["parallel", "plan", "--zero", "4"],
        &["parallel", "plan", "--efficiency", "0"],
        &["parallel", "plan", "--usable", "1.5"],
        &["parallel", "plan", "--model", "gpt5"],
    ]);
}

#[test]
fn sequence_parallelism_sends_the_same_bytes_and_keeps_a_t_th() {
    let v = json(&["parallel", "tp", "--sp", "--json"]);
    let sp = &v["sequence"];
    assert_eq!(sp["output_bitwise"], true, "{v}");
    assert_eq!(sp["input_grad_bitwise"], true, "{v}");
    assert_eq!(sp["sp_sent"], sp["tp_sent"], "{v}");
    assert_eq!(
        sp["tp_kept"].as_u64(),
        sp["sp_kept"].as_u64().map(|k| 4 * k)
    );
    assert!(json(&["parallel", "tp", "--json"])["sequence"].is_null());
    fails_with_one_line(&[&["parallel", "tp", "--sp", "--tokens", "15"]]);
}

#[test]
fn a_backward_shorter_than_a_millisecond_takes_w_with_it() {
    // W defaults to 1 ms, or to the whole backward when that is shorter.
    for schedule in ["1f1b", "zb-h1"] {
        let v = json(&[
            "parallel",
            "pp",
            "--schedule",
            schedule,
            "--backward-ms",
            "0.5",
            "--json",
        ]);
        assert_eq!(v["run"]["times"]["weight"].as_f64(), Some(0.5e-3), "{v}");
    }
}
