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
fn find_root(root: Option<&Path>) -> Result<PathBuf, String> {
    let has_track = |p: &Path| p.join("exercises/learn/mod.rs").is_file();
    if let Some(root) = root {
        return if has_track(root) {
            Ok(root.to_owned())
        } else {
            Err(format!(
                "{} holds no exercises/learn/: give the dlsys-lab source checkout",
                root.display()
            ))
        };
    }
    let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
    if let Some(found) = cwd.ancestors().find(|p| has_track(p)) {
        return Ok(found.to_owned());
    }
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if has_track(&built_from) {
        return Ok(built_from);
    }
    Err(
        "the Rust exercises live in a dlsys-lab source checkout (exercises/learn/); \
         run this inside one, or pass --root DIR"
            .to_owned(),
    )
}

pub fn run(json: bool, root: Option<&Path>) -> Result<ExitCode, String> {
    let root = find_root(root)?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    if !json {
        eprintln!(
            "checking your exercises: cargo test -p dlsys-exercises (in {})",
            root.display()
        );
    }
    let output = Command::new(&cargo)
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
        .output()
        .map_err(|e| format!("could not run cargo ({}): {e}", cargo.to_string_lossy()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let outcomes = parse_test_output(&stdout);
    if outcomes.is_empty() {
        // Nothing ran: most likely the learner's code does not compile.
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.trim_start().starts_with("Compiling") && !l.trim().is_empty())
            .take(40)
            .collect();
        return Err(format!(
            "your exercises did not build, so none could be checked; cargo said:\n{}",
            errors.join("\n")
        ));
    }
    let passed = EXERCISES
        .iter()
        .filter(|e| outcomes.get(e.id).is_some_and(|o| o.passed))
        .count();
    let next = EXERCISES
        .iter()
        .enumerate()
        .find(|(_, e)| !outcomes.get(e.id).is_some_and(|o| o.passed));
    if json {
        let rows: Vec<_> = EXERCISES
            .iter()
            .map(|e| {
                let outcome = outcomes.get(e.id);
                serde_json::json!({
                    "id": e.id,
                    "file": e.file,
                    "title": e.title,
                    "passed": outcome.is_some_and(|o| o.passed),
                    "message": outcome.and_then(|o| o.message.clone()),
                })
            })
            .collect();
        let value = serde_json::json!({
            "passed": passed,
            "total": EXERCISES.len(),
            "next": next.map(|(_, e)| e.id),
            "exercises": rows,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    }
    for (i, e) in EXERCISES.iter().enumerate() {
        let mark = if outcomes.get(e.id).is_some_and(|o| o.passed) {
            "pass"
        } else {
            "    "
        };
        println!("[{mark}] {:02} {:<32} {}", i + 1, e.id, e.title);
    }
    println!("{passed}/{} exercises pass", EXERCISES.len());
    match next {
        None => println!("Every exercise passes. Well done."),
        Some((i, e)) => {
            println!();
            println!("Next: {:02} {} — {}", i + 1, e.title, e.file);
            if let Some(message) = outcomes.get(e.id).and_then(|o| o.message.as_deref()) {
                println!("  checker: {message}");
            }
            println!("  hint: {}", e.hint);
        }
    }
    Ok(ExitCode::SUCCESS)
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
