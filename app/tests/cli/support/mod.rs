//! Running the built binary, for the CLI tests.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::process::Command;

/// Runs the binary in English whatever this machine's locale is (the tests
/// of Chinese output ask for it).
pub fn dlsys_lab(args: &[&str]) -> std::process::Output {
    dlsys_lab_in("C.UTF-8", args)
}

pub fn dlsys_lab_in(lang: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dlsys-lab"))
        .args(args)
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env("LANG", lang)
        .output()
        .expect("the dlsys-lab binary runs")
}

/// The command succeeds (else its stderr is the failure): its output.
#[track_caller]
pub fn succeeds(args: &[&str]) -> std::process::Output {
    let out = dlsys_lab(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The command succeeds and prints JSON: its value.
#[track_caller]
pub fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_slice(&succeeds(args).stdout).expect("the output is JSON")
}

/// The command succeeds and prints one JSON value a line: the values.
#[track_caller]
pub fn json_lines(args: &[&str]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&succeeds(args).stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

pub fn has_cjk(text: &str) -> bool {
    text.chars().any(|c| ('\u{4E00}'..='\u{9FFF}').contains(&c))
}

/// The command fails with a one-line `error: …` on stderr.
pub fn assert_one_line_error(args: &[&str], out: &std::process::Output) {
    assert!(!out.status.success(), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error:") && err.trim().lines().count() == 1,
        "{args:?}: {err}"
    );
}

/// Every command line fails with a one-line error.
pub fn fails_with_one_line(commands: &[&[&str]]) {
    for args in commands {
        assert_one_line_error(args, &dlsys_lab(args));
    }
}

pub fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Whether a compute-capable adapter answers (on CI it must).
pub fn gpu_expected() -> bool {
    // On CI the software Vulkan adapter must be there; elsewhere a machine
    // without any adapter skips the GPU commands' success checks.
    let out = dlsys_lab(&["gpu-info", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let available = json["available"] == true && json["compute"] == true;
    assert!(
        available || !is_ci(),
        "CI=true but no compute-capable GPU adapter"
    );
    available
}

pub fn with_stdin(args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_dlsys-lab"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A command that rejects its arguments may exit before reading stdin:
    // a broken pipe here is not the test's failure; its output says what happened.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}
