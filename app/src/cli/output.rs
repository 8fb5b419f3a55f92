//! One way to print what a subcommand found: as text for a person, or as
//! JSON from the same value.

use super::CliError;
use std::io::{self, Write};
use std::process::ExitCode;

/// What one subcommand found, computed once and then printed either way.
pub trait Report: serde::Serialize {
    /// The report for a person.
    fn text(&self, out: &mut dyn Write) -> io::Result<()>;

    /// Whether the command succeeded: its exit status.
    fn ok(&self) -> bool {
        true
    }
}

/// Prints `report` on stdout, as pretty JSON or as text; the exit status is
/// its [`Report::ok`].
pub fn emit(report: &impl Report, json: bool) -> Result<ExitCode, CliError> {
    print(report, json.then_some(true))
}

/// As [`emit`], with the JSON on one line: for streams of reports.
pub fn emit_line(report: &impl Report, json: bool) -> Result<ExitCode, CliError> {
    print(report, json.then_some(false))
}

/// Prints the text of `report`, never JSON (what a JSON stream leaves out).
pub fn emit_text(report: &impl Report) -> Result<(), CliError> {
    print(report, None).map(drop)
}

fn print(report: &impl Report, json: Option<bool>) -> Result<ExitCode, CliError> {
    let mut out = io::stdout().lock();
    let written = match json {
        Some(pretty) => {
            let text = if pretty {
                serde_json::to_string_pretty(report)
            } else {
                serde_json::to_string(report)
            }
            .map_err(|err| super::tf("io.json", &[("error", &err)]))?;
            writeln!(out, "{text}")
        }
        None => report.text(&mut out),
    };
    written.and_then(|()| out.flush())?;
    Ok(exit_status(report.ok()))
}

pub fn exit_status(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// An error as `--json` prints it on stdout: `{"error": "..."}`.
pub fn error_json(message: &str) -> String {
    #[derive(serde::Serialize)]
    struct Error<'a> {
        error: &'a str,
    }
    serde_json::to_string(&Error { error: message })
        .unwrap_or_else(|_| r#"{"error": "could not write the error as JSON"}"#.to_owned())
}

/// One catalog line, filled, on `out`.
pub fn line(
    out: &mut dyn Write,
    key: &str,
    args: &[(&str, &dyn std::fmt::Display)],
) -> io::Result<()> {
    writeln!(out, "{}", super::tf(key, args))
}
