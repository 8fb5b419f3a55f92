//! The command line, run as a user runs it: the built binary.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::process::Command;

fn dlsys_lab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dlsys-lab"))
        .args(args)
        .output()
        .expect("the dlsys-lab binary runs")
}

fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
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
    let out = dlsys_lab(&["gpu-info", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
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
    assert_eq!(
        json["checked"].as_u64(),
        json["results"].as_array().map(|r| r.len() as u64)
    );
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
