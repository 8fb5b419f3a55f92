//! naga's checks of a learner's kernel, with the diagnostic's line.

use super::{Diagnostic, KernelExercise};

/// A location as the learner counts: 1-based line, and column in
/// characters (naga counts bytes, so `−` or `é` would shift it).
fn location(source: &str, loc: Option<naga::SourceLocation>) -> (Option<u32>, Option<u32>) {
    let Some(loc) = loc else {
        return (None, None);
    };
    let offset = (loc.offset as usize).min(source.len());
    position(source, offset)
}

/// Line and character column of a byte offset.
fn position(source: &str, offset: usize) -> (Option<u32>, Option<u32>) {
    let offset = (0..=offset)
        .rev()
        .find(|&i| source.is_char_boundary(i))
        .unwrap_or(0);
    let before = &source[..offset];
    let line = before.matches('\n').count() as u32 + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = source[line_start..offset].chars().count() as u32 + 1;
    (Some(line), Some(column))
}

/// Where a missing token belongs: right after the code before the place
/// naga noticed it (which is the next token, often on the next line), with
/// white space and `//` comments in between skipped.
fn after_previous_code(source: &str, offset: usize) -> usize {
    let mut end = offset.min(source.len());
    while end > 0 {
        let head = source[..end].trim_end();
        let line_start = head.rfind('\n').map_or(0, |i| i + 1);
        let line = &head[line_start..];
        let code = line.find("//").map_or(line, |c| &line[..c]).trim_end();
        if !code.is_empty() {
            return line_start + code.len();
        }
        end = line_start;
    }
    0
}

/// Parses and validates with naga, then checks the entry point the harness
/// calls: `main`, a compute shader with the exercise's workgroup size.
pub fn validate(exercise: &KernelExercise, source: &str) -> Result<(), Diagnostic> {
    let module = parse_and_validate(source)?;
    check_entry(&module, exercise.layout.workgroup_size())
}

/// naga's parse and validation of WGSL, the diagnostic at its line.
pub fn parse_and_validate(source: &str) -> Result<naga::Module, Diagnostic> {
    let module = naga::front::wgsl::parse_str(source).map_err(|err| {
        let message = err.message().to_owned();
        let (line, column) = match err.location(source) {
            // "expected `;`": point at the end of the statement that lacks it.
            Some(loc) if message.contains("expected `;`") => {
                position(source, after_previous_code(source, loc.offset as usize))
            }
            loc => location(source, loc),
        };
        Diagnostic {
            line,
            column,
            message,
        }
    })?;
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|err| {
        let (line, column) = location(source, err.location(source));
        let mut message = err.as_inner().to_string();
        let mut source_err = std::error::Error::source(err.as_inner());
        while let Some(inner) = source_err {
            message.push_str(": ");
            message.push_str(&inner.to_string());
            source_err = inner.source();
        }
        Diagnostic {
            line,
            column,
            message,
        }
    })?;
    Ok(module)
}

fn check_entry(module: &naga::Module, want: [u32; 3]) -> Result<(), Diagnostic> {
    let entry = module
        .entry_points
        .iter()
        .find(|e| e.name == "main" && e.stage == naga::ShaderStage::Compute)
        .ok_or_else(|| Diagnostic {
            line: None,
            column: None,
            message: "the harness calls a compute entry point named `main`; there is none"
                .to_owned(),
        })?;
    if entry.workgroup_size != want {
        let shown = match want {
            [x, 1, 1] => format!("{x}"),
            [x, y, _] => format!("{x}, {y}"),
        };
        return Err(Diagnostic {
            line: None,
            column: None,
            message: format!(
                "the harness dispatches @workgroup_size({shown}); `main` has {:?}",
                entry.workgroup_size
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_track::exercise;

    #[test]
    fn a_missing_semicolon_is_reported_where_it_is_missing() {
        let Some(ex) = exercise("sum_reduction") else {
            panic!("no sum_reduction")
        };
        let source = ex
            .reference()
            .replace("var total = 0.0;", "var total = 0.0 // sum");
        let line = source
            .lines()
            .position(|l| l.contains("var total = 0.0 //"))
            .map_or(0, |i| i as u32 + 1);
        let err = validate(ex, &source)
            .err()
            .unwrap_or_else(|| panic!("accepted"));
        assert_eq!(err.line, Some(line), "{err}");
        let text = source.lines().nth(line as usize - 1).unwrap_or_default();
        let column = text.find(" //").map_or(0, |c| c as u32 + 1);
        assert_eq!(err.column, Some(column), "{err}");
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let Some(ex) = exercise("sum_reduction") else {
            panic!("no sum_reduction")
        };
        // `é` and `−` take two and three bytes; the column counts each once.
        let bad = "    /* é − */ var q: u32 = bogus;";
        let source = ex.reference().replace(
            "    var total = 0.0;",
            &format!("{bad}\n    var total = 0.0;"),
        );
        let err = validate(ex, &source)
            .err()
            .unwrap_or_else(|| panic!("accepted"));
        let column = bad
            .chars()
            .position(|c| c == 'b')
            .map_or(0, |c| c as u32 + 1);
        assert_eq!(err.column, Some(column), "{err}");
    }
}
