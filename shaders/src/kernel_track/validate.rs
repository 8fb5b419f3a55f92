//! naga's checks of a learner's kernel, with the diagnostic's line.

use super::{Diagnostic, KernelExercise};

fn location(loc: Option<naga::SourceLocation>) -> (Option<u32>, Option<u32>) {
    loc.map_or((None, None), |l| {
        (Some(l.line_number), Some(l.line_position))
    })
}

/// Parses and validates with naga, then checks the entry point the harness
/// calls: `main`, a compute shader with the exercise's workgroup size.
pub fn validate(exercise: &KernelExercise, source: &str) -> Result<(), Diagnostic> {
    let module = naga::front::wgsl::parse_str(source).map_err(|err| {
        let (line, column) = location(err.location(source));
        Diagnostic {
            line,
            column,
            message: err.message().to_owned(),
        }
    })?;
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|err| {
        let (line, column) = location(err.location(source));
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
    let want = exercise.layout.workgroup_size();
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
