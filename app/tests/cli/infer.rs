//! `dlsys-lab infer` run as a user runs it: the serving calculator's
//! phases and bounds, the paged KV cache against contiguous reservation,
//! static against continuous batching, speculative decoding with its exactness test, and bad input refused in
//! one line of the learner's language.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::support::{dlsys_lab, fails_with_one_line, has_cjk, json};

#[test]
fn the_calculator_names_each_phase_bound_and_the_ridge_batch() {
    let v = json(&[
        "infer", "calc", "--model", "llama-7b", "--device", "h100-sxm", "--json",
    ]);
    assert_eq!(v["kv_per_token"].as_f64(), Some(524_288.0));
    let q = json(&[
        "infer",
        "calc",
        "--model",
        "llama-7b",
        "--device",
        "h100-sxm",
        "--kv-dtype",
        "int4",
        "--json",
    ]);
    // An int4 cache: half a byte a value, and an fp16 scale per head vector.
    assert_eq!(q["kv_per_token"].as_f64(), Some(131_072.0 + 4096.0));
    assert_eq!(v["prefill"]["bound"], "Compute");
    assert_eq!(v["decode"]["bound"], "Memory");
    // 989 TFLOP/s · 2 bytes ÷ (2 · 3,350 GB/s).
    let ridge = v["ridge_batch"].as_f64().unwrap();
    assert!((ridge - 989e12 / 3350e9).abs() < 1e-9, "{ridge}");
    let tps = v["tokens_per_s"].as_f64().unwrap();
    assert!(tps <= v["bandwidth_bound_tokens_per_s"].as_f64().unwrap() * (1.0 + 1e-12));
    // Past the ridge (at a short context) the decode step is compute-bound.
    let big = json(&[
        "infer",
        "calc",
        "--batch",
        "1024",
        "--context",
        "8",
        "--json",
    ]);
    assert_eq!(big["decode"]["bound"], "Compute");
    // 70B in fp16 does not fit one 80 GB device: said, in Chinese too.
    let out = dlsys_lab(&["--lang", "zh", "infer", "calc", "--model", "llama2-70b"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && has_cjk(&text) && text.contains("超过了设备"),
        "{text}"
    );
}

#[test]
fn paging_runs_more_requests_in_the_same_memory() {
    let v = json(&["infer", "paged", "--requests", "60", "--json"]);
    let waste = |scheme: &str| {
        let r = &v[scheme];
        let (reserved, used) = (
            r["reserved"].as_array().unwrap(),
            r["used"].as_array().unwrap(),
        );
        let (a, b) = reserved
            .iter()
            .zip(used)
            .fold((0.0, 0.0), |(a, b), (r, u)| {
                (a + r.as_f64().unwrap(), b + u.as_f64().unwrap())
            });
        1.0 - b / a
    };
    assert!(waste("contiguous") > 0.5 && waste("paged") < 0.05);
    assert_eq!(v["paged"]["finished"], 60);
    assert_eq!(v["contiguous"]["finished"], 60);
    let out = dlsys_lab(&["infer", "paged", "--requests", "20"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 3, "{text}");
}

#[test]
fn continuous_batching_serves_more_when_requests_crowd_in() {
    let v = json(&[
        "infer",
        "serve",
        "--rate",
        "50",
        "--requests",
        "100",
        "--json",
    ]);
    let runs = v["runs"].as_array().unwrap();
    let field = |i: usize, key: &str| runs[i][key].as_f64().unwrap();
    let schemes: Vec<_> = runs.iter().map(|r| r["scheme"].as_str()).collect();
    assert_eq!(
        schemes,
        [Some("Static"), Some("Continuous"), Some("Chunked")]
    );
    assert!(field(2, "tpot_p99") > 0.0 && field(2, "throughput") > 0.0);
    assert!(field(1, "throughput") > field(0, "throughput"));
    assert!(field(0, "padding_share") > 0.0);
    assert!(field(1, "e2e_p99") >= field(1, "e2e_p50") && field(1, "ttft_p50") > 0.0);
    // One scheme, in Chinese: the setup line and one run.
    let out = dlsys_lab(&[
        "--lang",
        "zh",
        "infer",
        "serve",
        "--batching",
        "continuous",
        "--requests",
        "20",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.lines().count() == 3 && text.contains("连续批处理"),
        "{text}"
    );
}

#[test]
fn a_paged_cache_runs_more_sequences_where_reservation_fills_the_memory() {
    // Llama 7B on a 24 GB card: reserving 1,024 tokens a request runs 19.
    let run = |paged: bool| {
        let mut args = vec![
            "infer",
            "serve",
            "--device",
            "rtx-4090",
            "--rate",
            "20",
            "--max-batch",
            "64",
            "--batching",
            "continuous",
            "--json",
        ];
        if paged {
            args.push("--paged");
        }
        json(&args)
    };
    let (reserved, paged) = (run(false), run(true));
    assert_eq!(reserved["kv_memory"], paged["kv_memory"]);
    assert_eq!(reserved["kv_memory"]["tokens"], 20_071);
    let field = |v: &serde_json::Value, key: &str| v["runs"][0][key].as_f64().unwrap();
    assert!(field(&reserved, "mean_batch") <= 19.0);
    assert!(field(&paged, "mean_batch") > 1.5 * field(&reserved, "mean_batch"));
    assert!(field(&paged, "throughput") > field(&reserved, "throughput"));
    assert!(field(&reserved, "kv_waste") > 0.4 && field(&paged, "kv_waste") < 0.05);
    assert_eq!(paged["runs"][0]["kv"], "Paged");
    assert!(field(&paged, "preempted") > 0.0 && field(&reserved, "preempted") == 0.0);
}

#[test]
fn generation_with_the_cache_writes_what_recomputing_writes() {
    let args = [
        "infer", "generate", "--steps", "5", "--tokens", "40", "--json",
    ];
    let with = json(&args);
    let without = json(&[&args[..], &["--no-kv-cache"]].concat());
    assert_eq!(with["text"], without["text"]);
    assert_eq!(with["text"].as_str().unwrap().chars().count(), 40);
    assert_eq!(with["step_s"].as_array().unwrap().len(), 39);
    // K and V of "Attention " and 39 generated characters: 2 · 49 · 32 · 4 bytes.
    assert_eq!(with["cache_bytes"], 2 * 49 * 32 * 4);
    assert_eq!(without["cache_bytes"], 0);
    // Sampled the same way, the two draw the same characters too.
    let hot = ["--temperature", "0.9", "--top-k", "12", "--top-p", "0.9"];
    let with = json(&[&args[..], &hot[..]].concat());
    let without = json(&[&args[..], &hot[..], &["--no-kv-cache"]].concat());
    assert_eq!(with["text"], without["text"]);
}

#[test]
fn speculation_is_exact_and_the_wrong_resampler_is_caught() {
    let v = json(&[
        "infer",
        "speculate",
        "--k",
        "3",
        "--rounds",
        "5000",
        "--json",
    ]);
    let (stat, critical) = (
        v["exact"]["statistic"].as_f64().unwrap(),
        v["exact"]["critical"].as_f64().unwrap(),
    );
    assert!(stat <= critical, "{stat} > {critical}");
    assert!(v["wrong"]["statistic"].as_f64().unwrap() > v["wrong"]["critical"].as_f64().unwrap());
    let (measured, formula, se) = (
        v["tokens_per_pass"].as_f64().unwrap(),
        v["formula"].as_f64().unwrap(),
        v["standard_error"].as_f64().unwrap(),
    );
    assert!((1.0..=4.0).contains(&measured) && se > 0.0 && formula > 1.0);
}

#[test]
fn speculation_on_the_engine_writes_the_models_own_greedy_text() {
    let v = json(&[
        "infer",
        "speculate",
        "--engine",
        "--steps",
        "5",
        "--tokens",
        "40",
        "--k",
        "3",
        "--rounds",
        "2000",
        "--json",
    ]);
    let engine = &v["engine"];
    assert_eq!(engine["same_as_plain"], true);
    // The prefill's token, then each round's: the 40 characters.
    let rounds: Vec<&str> = engine["rounds_text"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    let text = format!(
        "{}{}",
        engine["first_text"].as_str().unwrap(),
        rounds.concat()
    );
    assert_eq!(text, engine["text"].as_str().unwrap());
    assert_eq!(text.chars().count(), 40);
    // α is what the rounds kept of what they checked.
    let rounds = engine["rounds"].as_array().unwrap();
    let field = |r: &serde_json::Value, f: &str| r[f].as_u64().unwrap();
    let kept: u64 = rounds.iter().map(|r| field(r, "kept")).sum();
    let checked: u64 = rounds
        .iter()
        .map(|r| field(r, "kept") + u64::from(field(r, "kept") < field(r, "proposed")))
        .sum();
    let alpha = engine["alpha"].as_f64().unwrap();
    assert!((alpha - kept as f64 / checked as f64).abs() < 1e-12);
}

#[test]
fn a_shape_model_is_placed_on_the_cpus_roofline() {
    let v = json(&[
        "infer",
        "roofline",
        "--width",
        "256",
        "--prompt",
        "64",
        "--steps",
        "3",
        "--gemm",
        "128",
        "--read-mb",
        "8",
        "--json",
    ]);
    assert_eq!(v["decode"].as_array().unwrap().len(), 3);
    assert_eq!(v["config"]["width"], 256);
    let intensity = |p: &serde_json::Value| {
        p["cost"]["flops"].as_f64().unwrap() / p["cost"]["bytes"].as_f64().unwrap()
    };
    // Decode reads every weight for 2 FLOPs: far left of a 64-token prefill.
    assert!(intensity(&v["decode_median"]) < 0.6);
    assert!(intensity(&v["prefill"]) > 10.0 * intensity(&v["decode_median"]));
    assert!(v["roofs"]["roofline"]["bandwidth"].as_f64().unwrap() > 0.0);
    assert!(v["decode_bound_tokens_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn bad_serving_input_is_refused_in_one_line() {
    fails_with_one_line(&[
        &["infer", "calc", "--batch", "0"],
        &["infer", "calc", "--context", "99999999999"],
        &["infer", "calc", "--weight-bytes", "3"],
        &["infer", "calc", "--weight-bytes", "nan"],
        &["infer", "calc", "--kv-dtype", "int3"],
        &["infer", "calc", "--device", "tpu"],
        &["infer", "calc", "--model", "gpt-5"],
        &["infer", "paged", "--block", "0"],
        &["infer", "paged", "--memory", "100"],
        &["infer", "paged", "--requests", "0"],
        &["infer", "paged", "--reserve", "600"],
        &["infer", "speculate", "--k", "0"],
        &["infer", "speculate", "--k", "17"],
        &["infer", "speculate", "--rounds", "5"],
        &["infer", "speculate", "--k", "-1"],
        &["infer", "speculate", "--draft-cost", "-1"],
        &["infer", "roofline", "--width", "100"],
        &["infer", "roofline", "--steps", "0"],
        &["infer", "roofline", "--prompt", "5000"],
        &["infer", "roofline", "--gemm", "8"],
        &["infer", "roofline", "--read-mb", "0"],
        &["infer", "speculate", "--draft-cost", "nan"],
        &["infer", "speculate", "--engine", "--prompt", ""],
        &["infer", "speculate", "--engine", "--tokens", "300"],
        &[
            "infer",
            "speculate",
            "--engine",
            "--tokens",
            "5",
            "--k",
            "4",
        ],
        &["infer", "serve", "--rate", "0"],
        &["infer", "serve", "--rate", "nan"],
        &["infer", "serve", "--max-batch", "0"],
        &["infer", "serve", "--max-wait", "-1"],
        &["infer", "serve", "--requests", "0"],
        &["infer", "serve", "--batching", "dynamic"],
        &["infer", "serve", "--chunk", "32"],
        &["infer", "serve", "--paged", "--block", "0"],
        &[
            "infer",
            "serve",
            "--model",
            "llama2-70b",
            "--device",
            "rtx-4090",
        ],
    ]);
    let out = dlsys_lab(&["--lang", "zh", "infer", "speculate", "--k", "99"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(has_cjk(&err) && err.contains("16"), "{err}");
}
