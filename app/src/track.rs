//! `dlsys-lab exercises`: your progress on the Rust exercise track.
//!
//! Your code in `exercises/learn/` is compiled by cargo, not by this binary
//! (a half-written exercise must never stop the app from building), so this
//! runs `cargo test -p dlsys-exercises` in the source checkout and reads its
//! report: which exercises pass, and the next one to do with the checker's
//! message and its hint.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::cli::CliError;
use dlsys_exercises::EXERCISES;

/// What the test run said about one exercise.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Outcome {
    pub passed: bool,
    /// The checker's message (failed exercises only).
    pub message: Option<String>,
}

/// Reads libtest's output: `test NAME ... ok|FAILED` lines, and for each
/// failure the checker's message from its `---- NAME stdout ----` section.
pub fn parse_test_output(output: &str) -> BTreeMap<String, Outcome> {
    let mut outcomes = BTreeMap::new();
    for line in output.lines() {
        let Some(rest) = line.strip_prefix("test ") else {
            continue;
        };
        let Some((name, result)) = rest.split_once(" ... ") else {
            continue;
        };
        let passed = match result.trim() {
            "ok" => true,
            "FAILED" => false,
            _ => continue,
        };
        outcomes.insert(
            name.trim().to_owned(),
            Outcome {
                passed,
                message: None,
            },
        );
    }
    // A failure's section holds "NAME (file):", then "  message", "  hint: …".
    let mut lines = output.lines();
    while let Some(line) = lines.next() {
        let Some(outcome) = line
            .split_once(" (")
            .filter(|_| line.ends_with("):"))
            .and_then(|(name, _)| outcomes.get_mut(name))
        else {
            continue;
        };
        if outcome.message.is_none()
            && let Some(message) = lines.next().and_then(|l| l.strip_prefix("  "))
        {
            outcome.message = Some(message.to_owned());
        }
    }
    outcomes
}

/// The checkout holding `exercises/learn/`: the current directory or one
/// above it, else the checkout this binary was built from.
fn find_root(root: Option<&Path>) -> Result<PathBuf, CliError> {
    use crate::cli::{t, tf};
    let has_track = |p: &Path| p.join("exercises/learn/mod.rs").is_file();
    if let Some(root) = root {
        return if has_track(root) {
            Ok(root.to_owned())
        } else {
            Err(tf("track.no_learn", &[("root", &root.display())]).into())
        };
    }
    let cwd = std::env::current_dir().map_err(|e| tf("track.cwd", &[("error", &e)]))?;
    if let Some(found) = cwd.ancestors().find(|p| has_track(p)) {
        return Ok(found.to_owned());
    }
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if has_track(&built_from) {
        return Ok(built_from);
    }
    Err(t("track.no_checkout").into())
}

/// How long the learner's tests may run (building them included).
const DEADLINE: std::time::Duration = std::time::Duration::from_secs(600);

/// Runs `command`, collecting its output; `None` if it ran past `deadline`
/// (then it is killed).
fn run_with_deadline(
    command: &mut Command,
    deadline: std::time::Duration,
) -> std::io::Result<Option<(std::process::ExitStatus, String, String)>> {
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    // Read both pipes while waiting, so a full pipe cannot stall the child.
    fn reader<R: std::io::Read + Send + 'static>(
        pipe: Option<R>,
    ) -> std::thread::JoinHandle<String> {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    }
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Ok(status.map(|status| (status, stdout, stderr)))
}

pub fn run(json: bool, root: Option<&Path>) -> Result<ExitCode, CliError> {
    let root = find_root(root)?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    if !json {
        let root_shown = root.display();
        eprintln!(
            "{}",
            crate::cli::tf("track.checking", &[("root", &root_shown)])
        );
    }
    let run = run_with_deadline(
        Command::new(&cargo)
            .current_dir(&root)
            .args([
                "test",
                "-p",
                "dlsys-exercises",
                "--test",
                "exercises",
                "--no-fail-fast",
            ])
            .args(["--", "--color", "never"])
            .env("CARGO_TERM_COLOR", "never")
            .env("RUST_BACKTRACE", "0")
            // The checkers' messages in the CLI's language.
            .env("DLSYS_LANG", crate::cli::lang().id()),
        DEADLINE,
    )
    .map_err(|e| {
        let cargo = cargo.to_string_lossy();
        crate::cli::tf("track.no_cargo", &[("cargo", &cargo), ("error", &e)])
    })?;
    let Some((status, stdout, stderr)) = run else {
        return Err(crate::cli::tf("track.deadline", &[("seconds", &DEADLINE.as_secs())]).into());
    };
    let outcomes = parse_test_output(&stdout);
    let tail = |text: &str| -> String {
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("Compiling") && !l.trim().is_empty())
            .collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    };
    if outcomes.is_empty() {
        return Err(if stderr.contains("could not compile") {
            crate::cli::tf("track.no_build", &[("cargo", &tail(&stderr))])
        } else {
            let output = tail(&format!("{stdout}\n{stderr}"));
            crate::cli::tf("track.stopped", &[("status", &status), ("output", &output)])
        }
        .into());
    }
    // Tests ran, but the run died before its summary (an abort).
    let crashed = (!stdout.contains("test result:"))
        .then(|| crate::cli::tf("track.crashed", &[("status", &status)]));
    let passed = EXERCISES
        .iter()
        .filter(|e| outcomes.get(e.id).is_some_and(|o| o.passed))
        .count();
    let next = EXERCISES
        .iter()
        .enumerate()
        .find(|(_, e)| !outcomes.get(e.id).is_some_and(|o| o.passed));
    let report = TrackReport {
        passed,
        total: EXERCISES.len(),
        next: next.map(|(_, e)| e.id),
        crashed,
        exercises: EXERCISES
            .iter()
            .map(|e| {
                let outcome = outcomes.get(e.id);
                TrackRow {
                    id: e.id,
                    file: e.file,
                    title: e.title(crate::cli::lang()),
                    hint: e.hint(crate::cli::lang()),
                    passed: outcome.is_some_and(|o| o.passed),
                    message: outcome.and_then(|o| o.message.clone()),
                }
            })
            .collect(),
    };
    crate::cli::output::emit(&report, json).map(|_| ExitCode::SUCCESS)
}

/// `dlsys-lab exercises`: each exercise of the Rust track, and the next one.
#[derive(serde::Serialize)]
struct TrackReport {
    passed: usize,
    total: usize,
    next: Option<&'static str>,
    crashed: Option<String>,
    exercises: Vec<TrackRow>,
}

#[derive(serde::Serialize)]
struct TrackRow {
    id: &'static str,
    file: &'static str,
    title: String,
    #[serde(skip)]
    hint: String,
    passed: bool,
    message: Option<String>,
}

impl crate::cli::output::Report for TrackReport {
    fn text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        for (i, e) in self.exercises.iter().enumerate() {
            let mark = if e.passed { "pass" } else { "    " };
            writeln!(out, "[{mark}] {:02} {:<32} {}", i + 1, e.id, e.title)?;
        }
        let total = crate::cli::tf(
            "track.total",
            &[("passed", &self.passed), ("total", &self.total)],
        );
        writeln!(out, "{total}")?;
        if let Some(note) = &self.crashed {
            writeln!(out, "{}", crate::cli::tf("check.note", &[("why", note)]))?;
        }
        let next = self
            .exercises
            .iter()
            .enumerate()
            .find(|(_, e)| Some(e.id) == self.next);
        match next {
            None => writeln!(out, "{}", crate::cli::t("track.done")),
            Some((i, e)) => {
                writeln!(out)?;
                let number = format!("{:02}", i + 1);
                let next = crate::cli::tf(
                    "track.next",
                    &[("number", &number), ("title", &e.title), ("file", &e.file)],
                );
                writeln!(out, "{next}")?;
                if let Some(message) = &e.message {
                    writeln!(
                        out,
                        "{}",
                        crate::cli::tf("track.checker", &[("message", message)])
                    )?;
                }
                writeln!(
                    out,
                    "{}",
                    crate::cli::tf("track.hint", &[("hint", &e.hint)])
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_passes_failures_and_the_checkers_message() {
        let output = "\
running 3 tests
test adam_step ... ok
test fp16_from_bits ... FAILED
test linear_backward ... FAILED

failures:

---- fp16_from_bits stdout ----

thread 'fp16_from_bits' panicked at exercises/tests/../learn/01_fp16_from_bits.rs:16:5:
not yet implemented

thread 'fp16_from_bits' panicked at exercises/tests/exercises.rs:20:9:

fp16_from_bits (exercises/learn/01_fp16_from_bits.rs):
  not implemented yet: the todo!() is still there
  hint: Split the 16 bits.

---- linear_backward stdout ----
stack backtrace:
   0: __rustc::rust_begin_unwind
linear_backward (exercises/learn/03_linear_backward.rs):
  db is the mean of dy over the batch
  hint: sum it.

test result: FAILED. 1 passed; 2 failed
";
        let outcomes = parse_test_output(output);
        assert_eq!(outcomes.len(), 3);
        assert!(outcomes["adam_step"].passed);
        assert!(!outcomes["fp16_from_bits"].passed);
        assert_eq!(
            outcomes["fp16_from_bits"].message.as_deref(),
            Some("not implemented yet: the todo!() is still there")
        );
        assert_eq!(
            outcomes["linear_backward"].message.as_deref(),
            Some("db is the mean of dy over the batch")
        );
    }
}
