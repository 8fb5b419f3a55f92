//! `dlsys-lab memory`, run as a user runs it: the built binary.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::support::{assert_one_line_error, dlsys_lab, json, succeeds};

#[test]
fn memory_estimates_an_mlp_and_measures_the_same_bytes() {
    let out = succeeds(&[
        "memory",
        "--mlp",
        "784,128,10",
        "--batch",
        "64",
        "--optimizer",
        "adam",
        "--precision",
        "mixed-fp16",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let n = 784 * 128 + 128 + 128 * 10 + 10;
    assert_eq!(json["estimate"]["parameters"], n);
    for (key, bytes) in [
        ("parameters", 2 * n),
        ("gradients", 2 * n),
        ("master_weights", 4 * n),
        ("optimizer_state", 8 * n),
    ] {
        assert_eq!(json["estimate"]["components"][key], bytes, "{key}");
        assert_eq!(json["measured"]["components"][key], bytes, "{key}");
    }
    assert!(json["measured"]["peak"].as_u64().unwrap_or(0) > 16 * n);
    let text = dlsys_lab(&["memory", "--mlp", "20,8,3", "--checkpoint"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("estimated") && text.contains("measured peak"),
        "{text}"
    );
    // Segments of two layers: the first two of three are recomputed.
    let k2 = |k: &str| {
        let out = succeeds(&["memory", "--mlp", "20,8,8,3", "--checkpoint", k, "--json"]);
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("JSON on stdout")
    };
    let (one, two) = (k2("1"), k2("2"));
    let recomputed = |j: &serde_json::Value| j["estimate"]["flops_recompute"].as_u64().unwrap_or(0);
    // Batch 64: layer 1 is 2·64·20·8 FLOPs, layer 2 2·64·8·8.
    // Both recompute the first two layers; one layer a segment keeps both
    // their inputs, two layers a segment recomputes both at once.
    assert_eq!(recomputed(&two), 2 * 64 * (20 * 8 + 8 * 8));
    assert_eq!(recomputed(&one), recomputed(&two));
    let activations = |j: &serde_json::Value| {
        j["measured"]["components"]["activations"]
            .as_u64()
            .unwrap_or(0)
    };
    assert!(activations(&one) != activations(&two), "{one} {two}");
    assert_eq!(recomputed(&k2("3")), 0, "one segment: nothing recomputed");
    let args = ["memory", "--mlp", "20,8,3", "--checkpoint", "0"];
    assert_one_line_error(&args, &dlsys_lab(&args));
}

#[test]
fn memory_of_a_transformer_preset_and_its_errors() {
    let out = succeeds(&["memory", "--transformer", "llama-7b", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(json["report"]["parameters"], 6_738_415_616_u64);
    assert_eq!(json["report"]["kv_cache_per_token"], 512 * 1024);
    let out = dlsys_lab(&[
        "memory",
        "--transformer",
        "llama2-70b",
        "--zero",
        "3",
        "--dp",
        "8",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("68.98B") && text.contains("320 KiB"),
        "{text}"
    );
    for args in [
        &["memory"][..],
        &["memory", "--layers", "0", "--hidden", "64", "--heads", "4"],
        &["memory", "--layers", "2", "--hidden", "10", "--heads", "3"],
        &[
            "memory",
            "--transformer",
            "gpt3-175b",
            "--batch",
            "18446744073709551615",
        ],
        &["memory", "--transformer", "gpt-9"],
        &["memory", "--transformer", "llama-7b", "--zero", "4"],
        &["memory", "--mlp", "784,x,10"],
        &["memory", "--mlp", "784"],
        &["memory", "--mlp", "10,2", "--transformer", "llama-7b"][..],
        &["memory", "--layers", "2", "--hidden", "64"],
        &["memory", "--transformer", "gpt2-small", "--seq", "2048"],
        &["memory", "--mlp", "8192,8192,8192,8192", "--batch", "65536"],
    ] {
        assert_one_line_error(args, &dlsys_lab(args));
    }
}

#[test]
fn memory_estimates_what_it_will_not_measure() {
    let out = succeeds(&[
        "memory",
        "--mlp",
        "8192,8192,8192,8192",
        "--batch",
        "65536",
        "--estimate-only",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert!(json["measured"].is_null());
    assert_eq!(json["estimate"]["parameters"], 3 * (8192 * 8192 + 8192));
    let out = dlsys_lab(&["memory", "--layers", "2", "--hidden", "64"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--heads"));
}

#[test]
fn the_kv_cache_takes_the_quantisation_lessons_element_types() {
    let at = |dtype: &str| {
        json(&[
            "memory",
            "--transformer",
            "llama-7b",
            "--kv-dtype",
            dtype,
            "--json",
        ])["report"]["kv_cache_context"]
            .as_u64()
            .unwrap()
    };
    // 2,048 tokens of LLaMA-7B: 1 GiB in fp16; int8 halves the values and
    // adds an fp16 scale per 128-value head vector (1/64 of them).
    assert_eq!(at("fp16"), 1 << 30);
    assert_eq!(at("int8"), (1 << 29) + (1 << 23));
    assert_eq!(at("int4"), (1 << 28) + (1 << 23));
    assert_eq!(at("fp8"), (1 << 29) + 256);
    let args = ["memory", "--mlp", "784,10", "--kv-dtype", "int8"];
    assert_one_line_error(&args, &dlsys_lab(&args));
}
