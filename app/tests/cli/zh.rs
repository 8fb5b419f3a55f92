//! No English left in `dlsys-lab --lang zh`: every subcommand, run with
//! small valid arguments, and every command's `--help` show no Latin word
//! of four or more letters that is not code, a unit, a format name, a flag
//! or a term the glossary keeps in English (`dlsys_core::latin`, with the
//! allow-list in `assets/latin_allowlist.txt` the app's walk shares).
//! JSON stays English and is not asked; what the machine reports about
//! itself (the adapter's and the driver's names) and what the models
//! generate (the text model's prompt and continuation) are data, taken out
//! first; a WGSL template is code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use crate::support::{dlsys_lab, gpu_expected, with_stdin};

/// The stray English words in `text` (after taking out each of `data`).
fn stray(text: &str, data: &[String]) -> Vec<String> {
    let ids = dlsys_lab::cli::identifiers();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut text = text.to_owned();
    for d in data.iter().filter(|d| !d.is_empty()) {
        text = without_data(&text, d);
    }
    dlsys_core::latin::stray_words(&text, &ids)
}

/// `text` with each occurrence of `data` that starts a word taken out (the
/// prompt `Attention ` is data; the `Attention` inside `FlashAttention` is not).
fn without_data(text: &str, data: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(data) {
        let starts_word = !rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric());
        out.push_str(&rest[..at]);
        out.push_str(if starts_word { " " } else { data });
        rest = &rest[at + data.len()..];
    }
    out.push_str(rest);
    out
}

/// The strings the machine reports about its GPU: data, not prose.
fn adapter_strings() -> Vec<String> {
    let out = dlsys_lab(&["gpu-info", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    ["adapter", "backend", "driver_info", "driver", "device_type"]
        .iter()
        .filter_map(|k| json[k].as_str().map(str::to_owned))
        .collect()
}

/// Every subcommand's path, for `--help` (`["bench", "kernels"]`…).
fn command_paths() -> Vec<Vec<String>> {
    use clap::CommandFactory as _;
    fn walk(cmd: &clap::Command, path: &[String], out: &mut Vec<Vec<String>>) {
        out.push(path.to_vec());
        for sub in cmd.get_subcommands() {
            let mut p = path.to_vec();
            p.push(sub.get_name().to_owned());
            walk(sub, &p, out);
        }
    }
    let mut out = Vec::new();
    walk(&dlsys_lab::cli::Cli::command(), &[], &mut out);
    out
}

#[test]
fn every_help_in_chinese_leaves_no_english() {
    let mut leaks = Vec::new();
    let paths = command_paths();
    assert!(paths.len() > 15, "{paths:?}");
    for path in paths {
        for flag in ["--help", "-h"] {
            let mut args: Vec<&str> = vec!["--lang", "zh"];
            args.extend(path.iter().map(String::as_str));
            args.push(flag);
            let out = dlsys_lab(&args);
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && text.contains("用法"),
                "{args:?}: {text}"
            );
            let words = stray(&text, &[]);
            if !words.is_empty() {
                leaks.push(format!("{args:?}: {words:?}\n{text}"));
            }
        }
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n\n"));
}

#[test]
fn every_subcommand_in_chinese_leaves_no_english() {
    let gpu = gpu_expected();
    let mut data = adapter_strings();
    // The text model's prompt and its continuation are the model's data.
    let out = dlsys_lab(&["train", "--model", "transformer", "--steps", "20", "--json"]);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let json: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
        for key in ["prompt", "continuation"] {
            data.extend(json[key].as_str().map(str::to_owned));
        }
    }
    // The kernel `compile --fuse` generates is code.
    let out = dlsys_lab(&["compile", "--mlp", "12,8,8,4", "--batch", "6", "--fuse"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // (Up to its last closing brace: the fused step's lines follow it.)
    data.extend(
        text.split_once("(validated by naga):")
            .map(|(_, rest)| rest.rfind("\n}\n").map_or(rest, |end| &rest[..end + 3]))
            .map(str::to_owned),
    );
    let reference = std::env::temp_dir().join(format!("dlsys-zh-{}.wgsl", std::process::id()));
    let exercise = dlsys_shaders::kernel_track::exercise("row_max").unwrap();
    std::fs::write(&reference, exercise.reference()).unwrap();
    let reference = reference.to_string_lossy().into_owned();

    let mut runs: Vec<Vec<&str>> = vec![
        vec!["gpu-info"],
        vec!["check", "--seeds", "1"],
        vec!["float", "0.1"],
        vec![
            "float", "65520", "-f", "fp16", "-f", "fp8-e4m3", "--round", "rtz",
        ],
        vec!["gradcheck"],
        vec!["gradcheck", "--bug", "softmax-no-coupling"],
        vec!["train", "--epochs", "1"],
        vec![
            "train",
            "--epochs",
            "1",
            "--precision",
            "fp16",
            "--loss-scale",
            "dynamic",
        ],
        vec!["train", "--scenario", "fp16-no-scaling", "--epochs", "1"],
        vec!["train", "--workers", "2", "--epochs", "1"],
        vec!["train", "--workers", "2", "--async", "--epochs", "1"],
        vec![
            "train",
            "--workers",
            "2",
            "--epochs",
            "1",
            "--compress",
            "topk:0.1",
        ],
        vec!["train", "--model", "cnn", "--epochs", "1", "--images", "64"],
        vec!["train", "--model", "transformer", "--steps", "20"],
        vec!["memory", "--mlp", "784,128,10"],
        vec![
            "parallel",
            "pp",
            "--schedule",
            "interleaved",
            "--micro-batches",
            "8",
        ],
        vec!["parallel", "pp", "--schedule", "zb-h1", "--forward-ms", "1"],
        vec!["parallel", "tp", "--workers", "2", "--sp"],
        vec!["parallel", "fsdp", "--workers", "2", "--steps", "1"],
        vec!["parallel", "plan", "--gpus", "16", "--top", "1"],
        vec![
            "memory",
            "--mlp",
            "784,128,10",
            "--checkpoint",
            "--precision",
            "fp32",
        ],
        vec!["memory", "--mlp", "784,4096,10", "--estimate-only"],
        vec![
            "memory",
            "--transformer",
            "llama-7b",
            "--zero",
            "3",
            "--dp",
            "8",
            "--kv-dtype",
            "int8",
        ],
        vec!["memory", "--layers", "2", "--hidden", "64", "--heads", "4"],
        vec!["memory", "--transformer", "gpt2-small", "--flash-attention"],
        vec!["allreduce", "--elements", "1024", "--slow-link", "4"],
        vec!["allreduce", "--algo", "ps", "--elements", "64"],
        vec!["allreduce", "--op", "reduce-scatter", "--elements", "64"],
        vec!["pipeline", "--batches", "5", "--workers", "1,2"],
        vec!["quant", "--value", "0.37", "--range", "-1,1"],
        vec![
            "quant",
            "--epochs",
            "1",
            "--outlier",
            "200",
            "--grid",
            "--activations",
            "--mx",
        ],
        vec!["quant", "--model", "transformer", "--steps", "20", "--grid"],
        vec!["quiz", "--n", "50"],
        vec!["lessons"],
        vec!["compile", "--batch", "8"],
        vec![
            "compile",
            "--mlp",
            "12,8,8,4",
            "--batch",
            "6",
            "--capture",
            "--runs",
            "1",
            "--fuse",
        ],
        vec![
            "compile",
            "--mlp",
            "12,8,8,4",
            "--batch",
            "6",
            "--select",
            "heuristic",
        ],
        vec!["wgsl-exercise"],
        vec!["exercises", "--root", "/nonexistent"],
    ];
    if gpu {
        runs.extend([
            vec![
                "bench", "kernels", "--rows", "64", "--cols", "64", "--trials", "1",
            ],
            vec![
                "bench",
                "kernels",
                "--family",
                "all",
                "--rows",
                "64",
                "--cols",
                "64",
                "--m",
                "32",
                "--n",
                "32",
                "--k",
                "32",
                "--seq",
                "48",
                "--head-dim",
                "32",
                "--causal",
                "--trials",
                "1",
            ],
            vec![
                "bench",
                "kernels",
                "--family",
                "attention",
                "--sweep",
                "--seq",
                "128",
                "--head-dim",
                "32",
                "--trials",
                "1",
            ],
            vec!["wgsl-exercise", "row_max", &reference],
            vec![
                "compile", "--mlp", "12,8,8,4", "--batch", "6", "--select", "bench",
            ],
        ]);
    }
    let mut leaks = Vec::new();
    for run in &runs {
        let mut args = vec!["--lang", "zh"];
        args.extend(run);
        let started = Instant::now();
        let out = dlsys_lab(&args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("{:>6.2} s  {run:?}", started.elapsed().as_secs_f64());
        assert_ne!(out.status.code(), Some(101), "{args:?} panicked: {text}");
        assert!(crate::support::has_cjk(&text), "{args:?}: {text}");
        let words = stray(&text, &data);
        if !words.is_empty() {
            leaks.push(format!("{run:?}: {words:?}\n{text}"));
        }
    }
    // A batch on stdin, its bad line reported on stderr.
    let out = with_stdin(
        &["--lang", "zh", "float", "--batch", "--to", "bf16"],
        b"3f800000\nzz\n",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        crate::support::has_cjk(&err) && stray(&err, &[]).is_empty(),
        "{err}"
    );
    let _ = std::fs::remove_file(&reference);
    assert!(leaks.is_empty(), "{}", leaks.join("\n\n"));
}

/// Bad command lines too: clap's errors and the limits, in Chinese.
#[test]
fn bad_command_lines_in_chinese_leave_no_english() {
    const HUGE: &str = "18446744073709551615";
    let mut leaks = Vec::new();
    for run in [
        &["train", "--foo"][..],
        &["train", "--dataset", "nope"],
        &["train", "--batch", "x"],
        &["train", "--batch", "-1"],
        &["train", "--lr"],
        &["train", "--model", "transformer", "--batch", HUGE],
        &["train", "--model", "cnn", "--epochs", HUGE],
        &[
            "train",
            "--workers",
            "2",
            "--epochs",
            "10000",
            "--batch",
            "1",
        ],
        &["train", "--model", "cnn", "--hidden", "3"],
        &["quiz", "--n", "99"],
        &["kernel", "matmul", "--m", "2"],
        &["nosuch"],
        &["memory", "--transformer", "gpt3"],
        &["memory", "--mlp", "784"],
        &["memory", "--mlp", "10,10", "--zero", "3"],
        &["memory", "--transformer", "llama-7b", "--estimate-only"],
        &["memory", "--transformer", "llama-7b", "--dp", HUGE],
        &["pipeline", "--prefetch", "0"],
        &["bench", "kernels", "--family", "memory", "--tile", "8"],
        &["float", "0.1", "--to", "fp16"],
        &["exercises", "--root", "/nonexistent"],
    ] {
        let mut args = vec!["--lang", "zh"];
        args.extend(run);
        let out = dlsys_lab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(1 | 2)) && err.starts_with("错误："),
            "{args:?}: {err}"
        );
        // What was typed comes back as it was typed.
        let typed: Vec<String> = run.iter().map(|a| (*a).to_owned()).collect();
        let words = stray(&err, &typed);
        if !words.is_empty() {
            leaks.push(format!("{run:?}: {words:?}\n{err}"));
        }
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n\n"));
}
