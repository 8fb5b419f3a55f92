//! The command line, run as a user runs it: the built binary.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::process::Command;

use crate::support::{
    assert_one_line_error, dlsys_lab, f32_bytes, fails_with_one_line, gpu_expected, json, succeeds,
    with_stdin,
};

use crate::support::is_ci;

/// True (and a skip outside CI) when the command failed for want of an adapter.
fn gpu_missing(out: &std::process::Output) -> bool {
    let missing = String::from_utf8_lossy(&out.stderr).contains("needs a GPU adapter");
    if missing {
        assert!(!is_ci(), "CI=true but no GPU adapter");
        eprintln!("SKIPPED (not CI, no GPU adapter)");
    }
    missing
}

#[test]
fn version_and_help() {
    let out = dlsys_lab(&["--version"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("dlsys-lab "));
    let out = dlsys_lab(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for sub in ["gpu-info", "check", "lessons"] {
        assert!(help.contains(sub), "{help}");
    }
}

#[test]
fn gpu_info_json_reports_the_adapter_and_features() {
    let json = json(&["gpu-info", "--json"]);
    if json["available"] == true {
        assert!(json["adapter"].as_str().is_some_and(|a| !a.is_empty()));
        assert!(json["timestamp_query"].is_boolean());
        if is_ci() {
            // CI's adapter is Mesa's software Vulkan driver, which offers timestamps.
            assert!(
                json["adapter"]
                    .as_str()
                    .is_some_and(|a| a.contains("llvmpipe")),
                "{json}"
            );
            assert_eq!(json["timestamp_query"], true);
        }
    } else {
        assert!(!is_ci(), "CI=true but no GPU adapter: {json}");
        assert_eq!(json["path"], "cpu");
    }
}

#[test]
fn check_passes_and_reports_json() {
    let out = dlsys_lab(&["check", "--json", "--seeds", "3"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert!(out.status.success(), "{json}");
    assert_eq!(json["failed"], 0);
    let lessons = json["results"].as_array().map_or(0, Vec::len);
    let code = json["code_exercises"].as_array().map_or(0, Vec::len);
    assert_eq!(json["checked"].as_u64(), Some((lessons + code) as u64));
    // Every WGSL exercise, when there is an adapter (CI has one: it must be used).
    if is_ci() {
        assert!(
            json["code_not_checked"].is_null(),
            "{}",
            json["code_not_checked"]
        );
    }
    if json["code_not_checked"].is_null() {
        for ex in &dlsys_shaders::kernel_track::EXERCISES {
            let rows = || {
                json["code_exercises"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|r| r["track"] == "wgsl" && r["exercise"] == ex.id)
            };
            assert!(
                rows().any(|r| r["solution"] == "reference" && r["ok"] == true),
                "{}",
                ex.id
            );
            assert!(
                rows().any(|r| r["expect"].is_string() && r["ok"] == true),
                "{}",
                ex.id
            );
        }
    }
    // Every Rust exercise: its reference passes and a known-wrong one fails.
    for info in dlsys_exercises::EXERCISES {
        let rows: Vec<&serde_json::Value> = json["code_exercises"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["track"] == "rust" && r["exercise"] == info.id)
            .collect();
        assert!(
            rows.iter()
                .any(|r| r["solution"] == "reference" && r["ok"] == true),
            "{}: reference",
            info.id
        );
        assert!(
            rows.iter().any(|r| r["expect"].is_string()
                && r["ok"] == true
                && r["message"].as_str().is_some_and(|m| !m.is_empty())),
            "{}: a known-wrong solution rejected with a message",
            info.id
        );
    }
}

#[test]
fn wgsl_exercise_prints_the_template_and_checks_a_file() {
    let out = dlsys_lab(&["wgsl-exercise", "row_max"]);
    assert!(out.status.success());
    let template = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(template.contains("@workgroup_size(256)"));
    let dir = std::env::temp_dir().join(format!("dlsys-wgsl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("row_max.wgsl");
    std::fs::write(&file, &template).unwrap();
    let out = dlsys_lab(&["wgsl-exercise", "row_max", file.to_str().unwrap(), "--json"]);
    if gpu_missing(&out) {
        return;
    }
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert!(
        !out.status.success(),
        "the template is not a solution: {json}"
    );
    assert!(
        json["message"].as_str().unwrap().contains("expected"),
        "{json}"
    );
    std::fs::write(&file, template.replace("fn main(", "fn main(,")).unwrap();
    let out = dlsys_lab(&["wgsl-exercise", "row_max", file.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("does not compile: line"));
    let out = dlsys_lab(&["wgsl-exercise", "no_such"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("sum_reduction"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn exercises_with_a_wrong_root_is_a_clear_error() {
    // The real run (cargo inside cargo) is exercised by `.ci/run` after the
    // tests; here, a wrong root is a clear error, not a panic.
    let out = dlsys_lab(&["exercises", "--root", "/nonexistent-dir"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("exercises/learn"));
}

#[test]
fn lessons_lists_the_registry() {
    let out = dlsys_lab(&["lessons", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let ids: Vec<&str> = json
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["id"].as_str())
        .collect();
    let expected: Vec<&str> = dlsys_lessons::all().iter().map(|l| l.id()).collect();
    assert_eq!(ids, expected);
}

#[test]
fn bad_input_exits_non_zero_with_a_message() {
    let out = dlsys_lab(&["no-such-command"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("error"));
    let out = dlsys_lab(&["check", "--seeds", "0"]);
    assert!(!out.status.success());
}

#[test]
fn float_shows_every_format_and_json_agrees() {
    let out = succeeds(&["float", "65520", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let formats = json["formats"].as_array().unwrap();
    let names: Vec<&str> = formats
        .iter()
        .filter_map(|f| f["format"].as_str())
        .collect();
    assert_eq!(
        names,
        ["fp32", "fp16", "bf16", "tf32", "fp8-e4m3", "fp8-e5m2"]
    );
    let fp16 = &formats[1];
    assert_eq!(fp16["hex"], "0x7c00");
    assert_eq!(fp16["class"], "Infinite");
    assert_eq!(fp16["range"]["max_finite"], 65504.0);

    let out = dlsys_lab(&[
        "float", "-6.1e-5", "-f", "fp16", "-f", "e6m9", "--round", "rtz",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("fp16") && text.contains("e6m9") && text.contains("toward zero"),
        "{text}"
    );

    let out = dlsys_lab(&["float", "fp16:0x0001", "-f", "fp16", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["formats"][0]["class"], "Subnormal");
    assert_eq!(json["input_value"].as_f64(), Some(2f64.powi(-24)));
}

#[test]
fn float_rejects_bad_input_with_one_line() {
    fails_with_one_line(&[
        &["float", "0x1.zp3"][..],
        &["float", "1.5", "-f", "fp64"],
        &["float", "1.5", "--round", "nearest"],
        &["float"],
    ]);
}

#[test]
fn float_batch_answers_every_line_and_reports_bad_ones() {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_dlsys-lab"))
        .args(["float", "--batch", "--to", "bf16"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"0x3f800000\n0x3f808000\nnot hex\n0x3f818000\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    // 1.0; a tie that goes to even (1.0); invalid; a tie that goes up to 0x3f82.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "0x3f80\n0x3f80\ninvalid\n0x3f82\n"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 3:"), "{err}");
}

#[test]
fn gradcheck_passes_and_catches_a_planted_bug() {
    let out = dlsys_lab(&["gradcheck", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["outside_good_band"], 0);
    let checks = json["checks"].as_array().unwrap();
    assert!(checks.len() >= 27);
    for layer in [
        "layernorm",
        "conv2d",
        "attention",
        "batchnorm (training)",
        "embedding",
    ] {
        assert!(
            checks
                .iter()
                .any(|c| c["check"].as_str().is_some_and(|n| n.starts_with(layer))),
            "{layer} is not checked"
        );
    }
    assert!(
        checks
            .iter()
            .all(|c| c["max_rel_error"].as_f64().is_some_and(|e| e <= 1e-7))
    );

    let out = dlsys_lab(&["gradcheck", "--bug", "bias-not-summed"]);
    assert!(!out.status.success(), "a planted bug must fail the check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("wrong") && text.contains("b1"), "{text}");

    // A layer's planted bug is caught on its own check.
    let out = dlsys_lab(&["gradcheck", "--bug", "layernorm-no-mean", "--json"]);
    assert!(!out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let wrong: Vec<&str> = json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["band"] == "wrong")
        .filter_map(|c| c["check"].as_str())
        .collect();
    assert_eq!(wrong, ["layernorm"], "{json}");

    let out = dlsys_lab(&["gradcheck", "--bug", "nonsense"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nonsense")
            && err.contains("bias-not-summed")
            && err.contains("ce-not-averaged"),
        "a bad --bug names the real choices: {err}"
    );
}

#[test]
fn train_prints_epochs_and_rejects_bad_arguments() {
    let out = succeeds(&[
        "train",
        "--dataset",
        "xor",
        "--hidden",
        "8",
        "--epochs",
        "3",
        "--json",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "three epochs and a final line: {text}");
    assert_eq!(lines[2]["epoch"], 3);
    assert!(lines[3]["final_test_accuracy"].as_f64().is_some());

    fails_with_one_line(&[
        &["train", "--dataset", "cifar"][..],
        &["train", "--lr", "-1"],
        &["train", "--hidden", "12,x"],
        &["train", "--optimizer", "lbfgs"],
        &["train", "--batch", "0"],
    ]);
    let out = dlsys_lab(&[
        "train",
        "--dataset",
        "digits",
        "--lr",
        "1e30",
        "--optimizer",
        "sgd",
        "--epochs",
        "1",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("diverged at step"));
}

#[test]
fn train_under_a_precision_policy_reports_underflow_and_the_loss_scale() {
    let epoch_json = |scale: &str| {
        let out = succeeds(&[
            "train",
            "--dataset",
            "digits",
            "--hidden",
            "64",
            "--optimizer",
            "adam",
            "--lr",
            "0.003",
            "--batch",
            "32",
            "--epochs",
            "2",
            "--precision",
            "fp16",
            "--loss-weight",
            "2^-16",
            "--loss-scale",
            scale,
            "--json",
        ]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        first["mixed"].clone()
    };
    let none = epoch_json("none");
    assert_eq!(none["loss_scale"], 1.0);
    assert!(none["underflow_fraction"].as_f64().unwrap() > 0.1, "{none}");
    let dynamic = epoch_json("dynamic");
    assert!(
        dynamic["loss_scale"].as_f64().unwrap() >= 65536.0,
        "{dynamic}"
    );
    assert!(
        dynamic["underflow_fraction"].as_f64().unwrap() < 0.01,
        "{dynamic}"
    );

    let out = dlsys_lab(&["train", "--scenario", "bf16-no-scaling", "--epochs", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("precision policy: compute bf16"),
        "{text}"
    );
    assert!(text.contains("underflowed"), "{text}");

    fails_with_one_line(&[
        &["train", "--precision", "fp7"][..],
        &["train", "--loss-scale", "-3"],
        &["train", "--optimizer-state", "e0m3"],
        &["train", "--scenario", "fp64"],
        &["train", "--micro-batches", "0"],
    ]);
}

#[test]
fn gradcheck_in_fp16_shows_why_checks_run_in_f64() {
    let out = dlsys_lab(&["gradcheck", "--precision", "fp16", "--json"]);
    assert!(
        !out.status.success(),
        "correct gradients look wrong in fp16"
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["precision"], "fp16");
    assert!(json["outside_good_band"].as_u64().unwrap() > 0);
    let out = dlsys_lab(&["gradcheck", "--precision", "fp64"]);
    assert!(!out.status.success());
}

#[test]
fn bench_kernels_reports_every_variant() {
    if !gpu_expected() {
        return;
    }
    let json = json(&[
        "bench", "kernels", "--rows", "32", "--cols", "256", "--trials", "2", "--json",
    ]);
    assert_eq!(json["failed"], 0, "{json}");
    let results = json["results"].as_array().unwrap();
    assert!(results.len() >= 15);
    for r in results {
        assert!(r["median_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{r}");
        assert!(r["bytes"].as_u64().is_some_and(|b| b > 0), "{r}");
    }
    assert!(json["summary"]["best_softmax"].is_string());
}

#[test]
fn kernel_commands_read_stdin_and_reject_bad_sizes() {
    if !gpu_expected() {
        return;
    }
    let input = f32_bytes(&[1.0, 2.0, 3.0, 0.0, 0.0, 0.0]);
    let out = with_stdin(
        &[
            "kernel",
            "softmax",
            "--variant",
            "three-pass",
            "--cols",
            "3",
        ],
        &input,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let values: Vec<f32> = out
        .stdout
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(values.len(), 6);
    assert!((values[0..3].iter().sum::<f32>() - 1.0).abs() < 1e-6);
    assert!(values[3..].iter().all(|v| (v - 1.0 / 3.0).abs() < 1e-6));

    let out = with_stdin(
        &["kernel", "reduce", "--variant", "sequential", "--op", "max"],
        &f32_bytes(&[3.0, -1.0, 7.5]),
    );
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "7.5");

    for (args, input) in [
        (&["kernel", "softmax", "--cols", "0"][..], f32_bytes(&[1.0])),
        (
            &["kernel", "softmax", "--cols", "3"],
            f32_bytes(&[1.0, 2.0]),
        ),
        (&["kernel", "softmax", "--cols", "2"], vec![0u8; 7]),
        (
            &["kernel", "softmax", "--cols", "2", "--variant", "fastest"],
            f32_bytes(&[1.0, 2.0]),
        ),
        (&["kernel", "reduce", "--op", "mean"], f32_bytes(&[1.0])),
        (&["kernel", "reduce"], Vec::new()),
    ] {
        let out = with_stdin(args, &input);
        assert_one_line_error(args, &out);
    }
}

#[test]
fn enumerated_options_list_every_real_variant() {
    use dlsys_core::kernels::{ReduceKind, SoftmaxKind};
    let out = dlsys_lab(&["kernel", "softmax", "--variant", "bogus", "--cols", "4"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for kind in SoftmaxKind::ALL {
        assert!(err.contains(kind.id()), "{} missing from: {err}", kind.id());
    }
    let out = dlsys_lab(&["bench", "kernels", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for id in SoftmaxKind::ALL
        .map(SoftmaxKind::id)
        .into_iter()
        .chain(ReduceKind::ALL.map(ReduceKind::id))
    {
        assert!(help.contains(id), "{id} missing from: {help}");
    }
}

#[test]
fn bench_kernels_refuses_absurd_sizes_before_allocating() {
    let out = dlsys_lab(&[
        "bench",
        "kernels",
        "--rows",
        "4294967295",
        "--cols",
        "4294967295",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("more than one buffer holds"), "{err}");
    let out = dlsys_lab(&["bench", "kernels", "--trials", "0"]);
    assert!(!out.status.success());
    // 65536² used to allocate 16 GB for 40 s, then blame a u32 truncation.
    let started = std::time::Instant::now();
    let out = dlsys_lab(&["bench", "kernels", "--rows", "65536", "--cols", "65536"]);
    assert!(!out.status.success());
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    assert!(String::from_utf8_lossy(&out.stderr).contains("4294967296 values"));
    if gpu_expected() {
        // Within the absolute limit but over this adapter's buffers: refused
        // before the inputs are generated (llvmpipe holds 128 MiB per buffer).
        let started = std::time::Instant::now();
        let out = dlsys_lab(&["bench", "kernels", "--rows", "16384", "--cols", "16384"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(err.contains("at most") && err.contains("values"), "{err}");
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    }
}

/// `dlsys-lab … | head`: the reader went away; the command stops quietly.
#[test]
fn a_closed_pipe_ends_a_command_quietly() {
    for args in [
        &["train", "--dataset", "xor", "--epochs", "3"][..],
        &["gradcheck"],
        &["check"],
        &["lessons"],
        &["float", "0.1"],
        &["allreduce", "--elements", "1000"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dlsys-lab"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte, then close our end, as `head -c 1` does.
        let mut stdout = child.stdout.take().unwrap();
        let mut byte = [0u8; 1];
        let _ = std::io::Read::read(&mut stdout, &mut byte);
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
    }
}

/// Options that do not apply are refused, not silently ignored.
#[test]
fn options_that_do_not_apply_are_refused() {
    fails_with_one_line(&[
        &["float", "--batch", "--to", "fp16", "--json"],
        &["float", "--batch", "--to", "fp16", "-f", "bf16"],
        &["float", "0.1", "--to", "fp16"],
        &["--lesson", "welcome", "lessons"],
        &["train", "--precision", "fp16", "--loss-scale", "1e300"],
        &["train", "--precision", "fp16", "--loss-scale", "1e-50"],
        &["train", "--loss-weight", "1e-50"],
    ]);
    let out = dlsys_lab(&["train", "--loss-weight", "1e-50"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("becomes 0 in fp32"), "{err}");
}

/// Without a Vulkan driver wgpu falls back to OpenGL, whose compute path is
/// slow and can panic: kernels decline it at once, saying what to install.
#[test]
fn without_vulkan_kernels_decline_opengl_with_a_clear_message() {
    let started = std::time::Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dlsys-lab"))
        .args(["kernel", "softmax", "--variant", "workgroup", "--cols", "7"])
        .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
        .env("VK_DRIVER_FILES", "/nonexistent/icd.json")
        .env_remove("WGPU_BACKEND")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(mut stdin) = child.stdin.take() {
        let _ = std::io::Write::write_all(&mut stdin, &f32_bytes(&[1.0; 7]));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_ne!(out.status.code(), Some(101), "panicked: {err}");
    assert!(
        err.starts_with("error:") && err.trim().lines().count() == 1,
        "{err}"
    );
    assert!(err.contains("mesa-vulkan-drivers"), "{err}");
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
}
