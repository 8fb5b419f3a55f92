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
