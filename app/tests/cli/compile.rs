//! `dlsys-lab compile` run as a user runs it: a traced step planned and
//! allocated, its bounds in order, the allocator running out on a small
//! device, out of memory while memory is free, and bad input refused.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::support::{dlsys_lab, fails_with_one_line, gpu_expected, has_cjk, json};

#[test]
fn a_traced_step_plans_between_its_bounds_and_the_allocator_holds_more() {
    let v = json(&["compile", "--batch", "32", "--json"]);
    let m = &v["memory"];
    let field = |path: [&str; 2]| m[path[0]][path[1]].as_u64().unwrap();
    let (live, arena, sum) = (
        field(["plan", "max_live"]),
        field(["plan", "arena"]),
        field(["plan", "no_reuse"]),
    );
    assert!(
        0 < live && live <= arena && arena < sum,
        "{live} {arena} {sum}"
    );
    let reserved = m["allocator"]["stats"]["peak_reserved"].as_u64().unwrap();
    assert!(reserved >= m["allocator"]["stats"]["peak_allocated"].as_u64().unwrap());
    assert!(m["allocator"]["oom"].is_null());
    assert_eq!(v["settings"]["mlp"]["batch"], 32);
    let f = &v["fragmented"];
    assert!(f["cached_free"].as_u64().unwrap() > f["oom"]["requested"].as_u64().unwrap());
    // The CNN too, between the same bounds.
    let v = json(&["compile", "--model", "cnn", "--batch", "8", "--json"]);
    let p = &v["memory"]["plan"];
    assert!(
        p["max_live"].as_u64() <= p["arena"].as_u64()
            && p["arena"].as_u64() < p["no_reuse"].as_u64(),
        "{p}"
    );
    // On a 1 MiB device the allocator runs out, and says where.
    let out = dlsys_lab(&["compile", "--device-mib", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("out of memory at event"),
        "{text}"
    );
    // In Chinese: the step, the plan, the allocator, the fragmented case,
    // the sizes that change.
    let out = dlsys_lab(&["--lang", "zh", "compile"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.lines().count() == 5 && has_cjk(&text),
        "{text}"
    );
    // With expandable segments the changing sizes fit; without, they fail.
    let g = &json(&["compile", "--json"])["growing"];
    assert!(!g["plain"].is_null() && g["expandable"].is_null(), "{g}");
}

#[test]
fn bad_compile_input_is_refused_in_one_line() {
    fails_with_one_line(&[
        &["compile", "--mlp", "784,x,10"],
        &["compile", "--mlp", "784"],
        &["compile", "--batch", "0"],
        &["compile", "--device-mib", "0"],
        &["compile", "--precision", "fp7"],
        &["compile", "--model", "cnn", "--mlp", "784,10"],
        &["compile", "--model", "cnn", "--batch", "1000"],
        &["compile", "--model", "rnn"],
        &["compile", "--model", "transformer", "--capture"],
        &["compile", "--model", "transformer", "--fuse"],
        &["compile", "--runs", "3"],
        &["compile", "--model", "transformer", "--select", "bench"],
        &["compile", "--select", "fastest"],
    ]);
}

#[test]
fn plan_and_allocator_choose_the_memory_sections() {
    let text = |args: &[&str]| {
        let out = dlsys_lab(args);
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let plan = text(&["compile", "--plan"]);
    assert_eq!(plan.lines().count(), 2, "{plan}");
    assert!(
        plan.contains("planned ahead") && !plan.contains("caching allocator"),
        "{plan}"
    );
    let allocator = text(&["compile", "--allocator"]);
    assert_eq!(allocator.lines().count(), 4, "{allocator}");
    assert!(!allocator.contains("planned ahead"), "{allocator}");
    assert_eq!(
        text(&["compile", "--plan", "--allocator"]),
        text(&["compile"])
    );
}

#[test]
fn the_cnn_step_is_captured_and_replayed_bit_for_bit() {
    let v = json(&[
        "compile",
        "--model",
        "cnn",
        "--batch",
        "4",
        "--capture",
        "--fuse",
        "--json",
    ]);
    let c = &v["captured"];
    assert_eq!(c["model"], "Cnn", "{c}");
    assert_eq!(c["bit_exact"], true);
    assert_eq!(
        (c["captures"].as_u64(), c["calls_exact"].as_u64()),
        (Some(2), Some(4))
    );
    let keys: Vec<&str> = c["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key"].as_str().unwrap())
        .collect();
    for key in [
        "conv2d",
        "bn_stats",
        "maxpool",
        "conv2d_grad_weight",
        "maxpool_grad",
    ] {
        assert!(keys.contains(&key), "{key} in {keys:?}");
    }
    // The branch and the overhead are the MLP's; the text says so.
    assert!(c["branch_events"].as_array().unwrap().is_empty());
    let out = dlsys_lab(&["compile", "--model", "cnn", "--batch", "4", "--capture"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("the small CNN, batch 4") && text.contains("shown for the MLP"),
        "{text}"
    );
}

#[test]
fn a_captured_step_lists_its_kernels_and_the_cache_recaptures_once() {
    let v = json(&[
        "compile",
        "--mlp",
        "12,8,4",
        "--batch",
        "6",
        "--capture",
        "--runs",
        "1",
        "--json",
    ]);
    let c = &v["captured"];
    // Two layers: 5 inputs, 7 forward and 7 backward kernels.
    assert_eq!(c["kernels"].as_array().unwrap().len(), 5 + 14, "{c}");
    assert_eq!(c["launches"], 14);
    // Batches 6, 6, 3, 12: capture, reuse, guard failure + symbolic capture, reuse.
    assert_eq!(c["captures"], 2);
    let kinds: Vec<String> = c["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_object().unwrap().keys().next().unwrap().clone())
        .collect();
    assert_eq!(
        kinds,
        [
            "Captured",
            "Reused",
            "GuardFailed",
            "Captured",
            "GuardFailed",
            "Reused"
        ]
    );
    assert_eq!(c["overhead"].as_array().unwrap().len(), 2);
    let out = dlsys_lab(&[
        "--lang",
        "zh",
        "compile",
        "--mlp",
        "12,8,4",
        "--capture",
        "--runs",
        "0",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("守卫条件不成立") && text.contains("反向"),
        "{text}"
    );
}

#[test]
fn the_fusion_pass_joins_bias_and_activation_and_prints_its_kernel() {
    let v = json(&tiny(&["--fuse", "--json"]));
    let f = &v["captured"]["fusion"];
    // Two hidden layers: each bias add joins its ReLU.
    assert_eq!(f["launches_before"], 21, "{f}");
    assert_eq!(f["launches_after"], 19, "{f}");
    assert!(
        f["bytes_after"].as_u64() < f["bytes_before"].as_u64(),
        "{f}"
    );
    assert!(
        v["captured"]["overhead"].as_array().unwrap().is_empty(),
        "not timed without --capture"
    );
    let out = dlsys_lab(&["compile", "--mlp", "12,8,8,4", "--fuse"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("@compute") && text.contains("add → relu"),
        "{text}"
    );
    assert!(
        !text.contains("captured the fp32 step"),
        "the capture section only with --capture"
    );
}

/// `compile` on a tiny MLP (12-8-8-4, batch 5) with `rest`.
fn tiny<'a>(rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["compile", "--mlp", "12,8,8,4", "--batch", "5"];
    args.extend(rest);
    args
}

#[test]
fn bench_selection_times_each_shape_once_and_a_second_step_hits_the_cache() {
    let gpu = gpu_expected();
    let v = json(&tiny(&["--select", "bench", "--json"]));
    let s = &v["dispatch"]["selected"];
    // Three layers: a forward product each, a weight gradient each, an
    // input gradient for all but the first.
    let calls = s["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 8, "{s}");
    assert_eq!(s["second_hits"], 8, "{s}");
    assert_eq!(s["gpu"], gpu, "{s}");
    let entries = s["entries"].as_array().unwrap();
    assert_eq!(
        s["misses"].as_u64().unwrap() as usize,
        entries.len(),
        "each shape chosen once: {s}"
    );
    for entry in entries {
        let (call, sel) = (&entry[0], &entry[1]);
        let untransposed = call["a_t"] == false && call["b_t"] == false;
        for pair in sel["timings"].as_array().unwrap() {
            let on_gpu = pair[0].get("Gpu").is_some();
            let t = &pair[1];
            if on_gpu && !untransposed {
                assert_eq!(t, "Refused", "{entry}");
            } else if !on_gpu {
                assert!(t["Seconds"].as_f64().unwrap() > 0.0, "{entry}");
            }
        }
        // The winner is the fastest candidate timed.
        let fastest = sel["timings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p[1]["Seconds"].as_f64().map(|s| (&p[0], s)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert_eq!(&sel["winner"], fastest.0, "{entry}");
    }
    if gpu {
        assert_eq!(s["sweep"].as_array().unwrap().len(), 6, "{s}");
        assert!(
            s["sweep"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["gpu"].is_array()),
            "a GPU rung ran at every swept size: {s}"
        );
    }
    let chain = &s["chain"];
    for layer in ["front_end", "lookup", "choice", "kernel"] {
        assert!(chain[layer].as_f64().unwrap() > 0.0, "{chain}");
    }
}

#[test]
fn the_heuristic_times_nothing_and_says_its_rule() {
    let v = json(&tiny(&["--select", "heuristic", "--json"]));
    let s = &v["dispatch"]["selected"];
    for entry in s["entries"].as_array().unwrap() {
        // Tiny products: the rule keeps them on the CPU, untimed.
        assert_eq!(
            entry[1]["winner"],
            serde_json::json!({"Cpu": "Sgemm"}),
            "{entry}"
        );
        assert!(
            entry[1]["timings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p[1] == "NotTimed"),
            "{entry}"
        );
    }
    let out = dlsys_lab(&tiny(&["--select", "heuristic"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("the rule:"), "{text}");
}

#[test]
fn a_data_dependent_branch_is_guarded_and_captured_once_per_path() {
    let v = json(&tiny(&["--capture", "--runs", "0", "--json"]));
    let c = &v["captured"];
    assert_eq!(c["branch_captures"], 2, "{c}");
    assert_eq!(c["branch_exact"], 5, "{c}");
    let failed: Vec<&serde_json::Value> = c["branch_events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.get("GuardFailed"))
        .collect();
    assert_eq!(failed.len(), 2, "{c}");
    assert!(
        failed
            .iter()
            .all(|f| f["error"].as_str().unwrap().contains("mean")),
        "{c}"
    );
}

#[test]
fn the_fused_step_runs_on_the_adapter_and_agrees_with_the_eager_step() {
    let v = json(&[
        "compile", "--model", "cnn", "--batch", "3", "--fuse", "--json",
    ]);
    let f = &v["fused_gpu"];
    match f.get("Ok") {
        Some(ok) => {
            let a = &ok["step"]["agreement"];
            assert_eq!(a["off"], 0, "{f}");
            assert!(a["values"].as_u64().unwrap() > 1000, "{f}");
            assert!(ok["step"]["groups"].as_u64().unwrap() > 0, "{f}");
            // Every group's kernels timed, right, fused and op by op.
            let chains = ok["chains"].as_array().unwrap();
            assert_eq!(chains.len() as u64, ok["step"]["groups"].as_u64().unwrap());
            for c in chains {
                assert_eq!(c["right"], true, "{c}");
                assert!(c["fused_ms"].as_f64().unwrap() > 0.0, "{c}");
            }
        }
        None => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "CI=true but the fused step did not run on a GPU: {f}");
        }
    }
}
