//! `dlsys-lab kernel attention` and `bench kernels --family attention`: the
//! attention rungs from the command line, and what they refuse by name.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::support::{
    assert_one_line_error, dlsys_lab, f32_bytes, fails_with_one_line, gpu_expected, json,
    with_stdin,
};

/// O = softmax(Q·Kᵀ/√d)·V in f64, row by row, causal or not.
fn attention(q: &[f32], k: &[f32], v: &[f32], n: usize, d: usize, causal: bool) -> Vec<f64> {
    let mut out = vec![0.0; n * d];
    for i in 0..n {
        let keys = if causal { i + 1 } else { n };
        let s: Vec<f64> = (0..keys)
            .map(|j| {
                (0..d)
                    .map(|c| f64::from(q[i * d + c]) * f64::from(k[j * d + c]))
                    .sum::<f64>()
                    / (d as f64).sqrt()
            })
            .collect();
        let m = s.iter().fold(f64::NEG_INFINITY, |a, b| a.max(*b));
        let l: f64 = s.iter().map(|x| (x - m).exp()).sum();
        for (j, sj) in s.iter().enumerate() {
            let p = (sj - m).exp() / l;
            for c in 0..d {
                out[i * d + c] += p * f64::from(v[j * d + c]);
            }
        }
    }
    out
}

#[test]
fn every_rung_reads_q_k_v_and_writes_o() {
    if !gpu_expected() {
        return;
    }
    let (n, d) = (21usize, 32usize);
    let values: Vec<f32> = (0..3 * n * d)
        .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
        .collect();
    let (q, rest) = values.split_at(n * d);
    let (k, v) = rest.split_at(n * d);
    let input = f32_bytes(&values);
    for (rung, causal) in [
        ("naive", false),
        ("rows", true),
        ("tiled", false),
        ("causal", true),
    ] {
        let mut args = vec![
            "kernel",
            "attention",
            "--seq",
            "21",
            "--head-dim",
            "32",
            "--rung",
            rung,
        ];
        if causal {
            args.push("--causal");
        }
        let out = with_stdin(&args, &input);
        assert!(
            out.status.success(),
            "{rung}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let o: Vec<f32> = out
            .stdout
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let want = attention(q, k, v, n, d, causal);
        assert_eq!(o.len(), want.len(), "{rung}");
        for (g, w) in o.iter().zip(&want) {
            assert!((f64::from(*g) - w).abs() < 1e-5, "{rung}: {g} vs {w}");
        }
    }
    // --lse appends one log-sum-exp per row.
    let out = with_stdin(
        &[
            "kernel",
            "attention",
            "--seq",
            "21",
            "--head-dim",
            "32",
            "--lse",
        ],
        &input,
    );
    assert_eq!(out.stdout.len(), 4 * (n * d + n));
}

#[test]
fn bad_sizes_and_inputs_are_refused_by_name() {
    let attention = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut args = vec!["kernel", "attention", "--seq", "8", "--head-dim", "32"];
        args.extend_from_slice(extra);
        args
    };
    let refused = [
        vec!["kernel", "attention", "--seq", "4097", "--head-dim", "32"],
        vec!["kernel", "attention", "--seq", "8", "--head-dim", "48"],
        attention(&["--rung", "causal"]),
        attention(&["--rung", "naive", "--lse"]),
        attention(&["--bc", "12"]),
        vec!["bench", "kernels", "--family", "memory", "--seq", "64"],
    ];
    let refused: Vec<&[&str]> = refused.iter().map(Vec::as_slice).collect();
    fails_with_one_line(&refused);
    let err = |args: &[&str]| String::from_utf8_lossy(&dlsys_lab(args).stderr).into_owned();
    assert!(err(refused[0]).contains("4096"));
    assert!(err(refused[2]).contains("causal"));
    assert!(err(refused[5]).contains("attention"));
    if !gpu_expected() {
        return;
    }
    // Too few values, and a NaN.
    let args = ["kernel", "attention", "--seq", "4", "--head-dim", "32"];
    let out = with_stdin(&args, &f32_bytes(&[0.5; 3 * 4 * 32 - 1]));
    assert_one_line_error(&args, &out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("384"));
    let mut values = vec![0.5f32; 3 * 4 * 32];
    values[130] = f32::NAN;
    let out = with_stdin(&args, &f32_bytes(&values));
    assert_one_line_error(&args, &out);
    // Value 130 is K's third (Q holds 128).
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("K holds NaN at index 2"), "{text}");
}

#[test]
fn the_bench_races_every_rung_right_and_says_what_the_causal_rung_skips() {
    if !gpu_expected() {
        return;
    }
    let v = json(&[
        "bench",
        "kernels",
        "--family",
        "attention",
        "--seq",
        "80",
        "--head-dim",
        "32",
        "--causal",
        "--br",
        "16",
        "--bc",
        "8",
        "--trials",
        "1",
        "--rows",
        "16",
        "--cols",
        "64",
        "--json",
    ]);
    let rows = v["attention"]["rows"].as_array().unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["attn/naive", "attn/rows", "attn/tiled", "attn/causal"]
    );
    assert!(rows.iter().all(|r| r["ok"] == true), "{rows:?}");
    // Five blocks of ten tiles; block b keeps 2b + 2.
    assert_eq!(v["attention"]["tiles_skipped"], serde_json::json!([20, 50]));
    assert_eq!(v["failed"], 0);
    // The naive rung's scores are N² floats; the others keep N.
    assert_eq!(rows[0]["extra_bytes"], 4 * 80 * 80);
    assert_eq!(rows[2]["extra_bytes"], 4 * 80);
}

#[test]
fn the_memory_calculator_swaps_the_scores_for_the_log_sum_exp() {
    let plain = json(&["memory", "--transformer", "gpt2-small", "--json"]);
    let flash = json(&[
        "memory",
        "--transformer",
        "gpt2-small",
        "--flash-attention",
        "--json",
    ]);
    let (p, f) = (&plain["report"], &flash["report"]);
    assert_eq!(p["scores_per_layer"], f["scores_per_layer"]);
    let layers = plain["run"]["model"]["layers"].as_u64().unwrap();
    let saved =
        layers * (p["scores_per_layer"].as_u64().unwrap() - p["lse_per_layer"].as_u64().unwrap());
    assert_eq!(
        p["activations"].as_u64().unwrap() - f["activations"].as_u64().unwrap(),
        saved
    );
    fails_with_one_line(&[&["memory", "--flash-attention"]]);
}
