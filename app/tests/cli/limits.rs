//! Hostile command lines (issue 39, section 5): each is refused in one line
//! with a plain exit code 1 or 2 (never a panic's 101, never minutes of
//! allocation), and the message names the limit and the true figure asked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use crate::support::{dlsys_lab, f32_bytes, gpu_expected, with_stdin};

/// `args` fails at once, in one line, with every one of `words` in it.
fn refused(args: &[&str], words: &[&str]) -> String {
    let started = Instant::now();
    let out = dlsys_lab(args);
    refused_output(args, &out, words, started.elapsed())
}

fn refused_output(
    args: &[&str],
    out: &std::process::Output,
    words: &[&str],
    took: Duration,
) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        matches!(out.status.code(), Some(1 | 2)),
        "{args:?}: {:?} {err}",
        out.status
    );
    assert!(
        (err.starts_with("error:") || err.starts_with("错误：")) && err.trim().lines().count() == 1,
        "{args:?}: {err}"
    );
    for word in words {
        assert!(err.contains(word), "{args:?}: `{word}` missing from {err}");
    }
    assert!(took < Duration::from_secs(20), "{args:?} took {took:?}");
    err
}

const HUGE: &str = "18446744073709551615";

/// Items 1 and 3: batches, steps and epochs past the models' limits, in the
/// core's settings (the page refuses the same values).
#[test]
fn training_sizes_past_the_limits_are_refused_before_anything_is_allocated() {
    use dlsys_core::nn::models::{cnn_run, text_run};
    let text_batch = text_run::MAX_BATCH.to_string();
    let cnn_batch = cnn_run::MAX_BATCH.to_string();
    let steps = text_run::MAX_STEPS.to_string();
    let cnn_epochs = cnn_run::MAX_EPOCHS.to_string();
    let mlp_epochs = dlsys_core::nn::config::MAX_EPOCHS.to_string();
    let dp_steps = 1_000_000.to_string();
    for (args, words) in [
        (
            &["train", "--model", "transformer", "--batch", HUGE][..],
            &[text_batch.as_str(), HUGE][..],
        ),
        (
            &[
                "train",
                "--model",
                "transformer",
                "--batch",
                "100000000",
                "--steps",
                "1",
            ],
            &[&text_batch, "100000000"],
        ),
        (
            &["train", "--model", "transformer", "--batch", "65536"],
            &[&text_batch, "65536"],
        ),
        (
            &["train", "--model", "cnn", "--batch", HUGE],
            &[&cnn_batch, HUGE],
        ),
        (
            &["train", "--model", "transformer", "--steps", HUGE],
            &[&steps, HUGE],
        ),
        (
            &["train", "--model", "transformer", "--steps", "1000000000"],
            &[&steps, "1000000000"],
        ),
        (
            &["train", "--model", "cnn", "--epochs", HUGE],
            &[&cnn_epochs, HUGE],
        ),
        (
            &["train", "--workers", "2", "--epochs", HUGE],
            &[&mlp_epochs, HUGE],
        ),
        // Within the epochs, past the steps a data-parallel run draws up front.
        (
            &[
                "train",
                "--workers",
                "2",
                "--epochs",
                "10000",
                "--batch",
                "1",
            ],
            &[&dp_steps, "7190000"],
        ),
        (
            &[
                "train",
                "--workers",
                "2",
                "--async",
                "--epochs",
                "10000",
                "--batch",
                "1",
            ],
            &[&dp_steps, "14380000"],
        ),
    ] {
        refused(args, words);
    }
}

/// Item 2: K·(M + N) past u64 is counted exactly; the size is refused
/// before stdin is read, and a short stdin names the true count.
#[test]
fn a_matmul_larger_than_u64_names_its_true_size() {
    let args = [
        "kernel",
        "matmul",
        "--m",
        "4294967295",
        "--n",
        "131075",
        "--k",
        "4294836226",
    ];
    let started = Instant::now();
    let out = with_stdin(&args, &[0; 16]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(101), "panicked: {err}");
    if !gpu_expected() {
        return;
    }
    // 4294836226 · (4294967295 + 131075) = 2^64 + 4.
    refused_output(
        &args,
        &out,
        &["18446744073709551620", "33554432"],
        started.elapsed(),
    );
    let args = ["kernel", "matmul", "--m", "4", "--n", "4", "--k", "4"];
    let out = with_stdin(&args, &[0; 16]);
    refused_output(&args, &out, &["4 values", "take 32"], Duration::ZERO);
}

/// Item 4: the row-per-subgroup softmax states one rule whatever width was
/// asked: rows up to one width, or wider when a multiple of 4.
#[test]
fn row_per_subgroup_states_the_same_rule_for_every_width() {
    if !gpu_expected() {
        return;
    }
    let mut stated = Vec::new();
    // Past both limits on any subgroup size: 4 · 65,000 · 64 lanes.
    for cols in ["16777216", "16777217"] {
        let args = [
            "kernel",
            "softmax",
            "--variant",
            "row-per-subgroup",
            "--cols",
            cols,
        ];
        let n: usize = cols.parse().unwrap();
        let out = with_stdin(&args, &vec![0; 4 * n]);
        let err = refused_output(&args, &out, &["multiple of 4"], Duration::ZERO);
        stated.push(err[err.find("here it takes").unwrap()..].to_owned());
    }
    assert_eq!(stated[0], stated[1]);
}

/// Item 5: many short rows. Without `--variant`, narrow rows go to the
/// variant that takes many rows per workgroup; a variant that takes a
/// workgroup per row is refused on a CPU adapter with its estimated time.
#[test]
fn many_short_rows_run_many_to_a_workgroup_or_are_refused_with_the_time() {
    if !gpu_expected() {
        return;
    }
    let rows = 1 << 20;
    let started = Instant::now();
    let out = with_stdin(
        &["kernel", "softmax", "--cols", "1"],
        &f32_bytes(&vec![3.0; rows]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        out.stdout.len() == 4 * rows && out.stdout.chunks(4).all(|b| b == 1f32.to_le_bytes()),
        "a row of one is 1"
    );
    eprintln!("2^20 rows of 1: {:.1} s", started.elapsed().as_secs_f64());
    assert!(started.elapsed() < Duration::from_secs(60));

    let info: serde_json::Value =
        serde_json::from_slice(&dlsys_lab(&["gpu-info", "--json"]).stdout).unwrap();
    if info["device_type"] != "Cpu" {
        return;
    }
    // 2^24 rows take minutes a workgroup each on a CPU adapter (> 500 s on lavapipe).
    let args = ["kernel", "softmax", "--variant", "online", "--cols", "1"];
    let started = Instant::now();
    let out = with_stdin(&args, &vec![0; 4 << 24]);
    refused_output(
        &args,
        &out,
        &[
            "16777216 rows",
            "would take about",
            "4096 rows took",
            "row-per-subgroup",
        ],
        started.elapsed(),
    );
}

/// Item 6: options the command does not use are refused by name.
#[test]
fn options_that_do_not_apply_are_refused_by_name() {
    for (args, flag) in [
        (
            &["memory", "--mlp", "10,10", "--zero", "3", "--dp", "8"][..],
            "--zero",
        ),
        (&["memory", "--mlp", "10,10", "--seq", "8"], "--seq"),
        (
            &["memory", "--transformer", "llama-7b", "--checkpoint", "2"],
            "--checkpoint",
        ),
        (
            &["memory", "--transformer", "llama-7b", "--estimate-only"],
            "--estimate-only",
        ),
        (
            &["bench", "kernels", "--family", "memory", "--tile", "8"],
            "--tile",
        ),
        (
            &["bench", "kernels", "--family", "access", "--k", "64"],
            "--k",
        ),
        (
            &["bench", "kernels", "--family", "gemm", "--op", "sum"],
            "--op",
        ),
        (&["train", "--images", "100"], "--images"),
        (
            &["train", "--model", "transformer", "--images", "100"],
            "--images",
        ),
    ] {
        refused(args, &[flag]);
    }
}

/// Item 7: messages that say what is wrong, with the limit that applies.
#[test]
fn messages_name_the_limit_that_applies() {
    // A negative value: refused by the flag's own rule, not "unexpected argument".
    refused(
        &["memory", "--mlp", "10,10", "--batch", "-1"],
        &["--batch", "-1", "negative"],
    );
    refused(&["pipeline", "--workers", "-1"], &["--workers", "negative"]);
    refused(&["train", "--lr", "-1"], &["positive", "-1"]);
    refused(&["allreduce", "--alpha-us", "-1"], &["latency"]);
    let err = refused(&["--lang", "zh", "quiz", "--n", "-3"], &["--n", "-3"]);
    assert!(err.contains("负数"), "{err}");
    // A directory on stdin is a reading error.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dlsys-lab"))
        .args(["float", "--batch", "--to", "fp16"])
        .env("LANG", "C.UTF-8")
        .stdin(std::fs::File::open(std::env::temp_dir()).unwrap())
        .output()
        .unwrap();
    refused_output(
        &["float", "--batch"],
        &out,
        &["reading stdin"],
        Duration::ZERO,
    );
    // An MLP needs an input and an output size.
    refused(
        &["memory", "--mlp", "784"],
        &["input and an output", "1 was given"],
    );
    // The pipeline names only the limit broken.
    let err = refused(
        &["pipeline", "--prefetch", "0"],
        &["prefetch", "16", "not 0"],
    );
    assert!(
        !err.contains("learning rate") && !err.contains("workers 1"),
        "{err}"
    );
    refused(&["pipeline", "--batch", "5000"], &["1024", "5000"]);
    // Data-parallel ranks past any real run.
    refused(
        &["memory", "--transformer", "llama-7b", "--dp", HUGE],
        &["1048576", HUGE],
    );
    // α and β past the units' range in scientific notation.
    let out = dlsys_lab(&[
        "allreduce",
        "--elements",
        "4",
        "--alpha-us",
        "1e300",
        "--gbps",
        "1e-300",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("α = 1e300 µs") && text.contains("β = 1e-300 GB/s"),
        "{text}"
    );
    let out = dlsys_lab(&["allreduce", "--elements", "4", "--alpha-us", "1e-300"]);
    let tiny = String::from_utf8_lossy(&out.stdout);
    for text in [&text, &tiny] {
        let longest_number = text
            .split(|c: char| !c.is_ascii_digit())
            .map(str::len)
            .max()
            .unwrap_or(0);
        assert!(longest_number < 20, "{text}");
        assert!(!text.contains("0.00 ns"), "{text}");
    }
    // bench's size error names this adapter's buffer, not the absolute limit.
    if gpu_expected() {
        let info: serde_json::Value =
            serde_json::from_slice(&dlsys_lab(&["gpu-info", "--json"]).stdout).unwrap();
        let values = info["max_storage_buffer_binding_bytes"].as_u64().unwrap() / 4;
        let limit = values.min(u64::from(u32::MAX / 4)).to_string();
        refused(
            &["bench", "kernels", "--rows", "100000", "--cols", "100000"],
            &["10000000000", &limit],
        );
    }
}
