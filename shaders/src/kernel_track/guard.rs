//! A counter in every loop of a learner's kernel, so an endless loop is
//! named by its line instead of passing for a slow or wrong kernel.
//!
//! Some drivers silently end an invocation's loops after 65,535 iterations
//! (llvmpipe), so an endless `loop {}` "finishes" there and the kernel looks
//! merely wrong; on others it runs until the time budget gives up. Each loop
//! body therefore starts with a call that counts the invocation's iterations
//! and, in the iteration that passes [`GUARD_LIMIT`], records the loop's
//! line in a buffer the checker reads back (later loops of that invocation,
//! cut short by the driver, do not overwrite it). The call changes no control flow (a `break` would make the
//! loop non-uniform and forbid the barriers inside it), and it is inserted
//! on the loop's own line, so the learner's line numbers stay as they are.

use super::Diagnostic;

/// Iterations, all loops of one invocation together, past which a loop
/// counts as endless: far above what any exercise's cases need (a few
/// thousand), and low enough to fire before llvmpipe's allowance of 65,535
/// runs out. That allowance is spent by iterations *and* loop exits; every
/// exit but those of top-level loops follows an iteration of an enclosing
/// loop, which the guard counts, so the driver has spent at most about twice
/// what the guard counted.
pub const GUARD_LIMIT: u32 = 32_000;

/// The binding the checker gives the guard's buffer.
pub const GUARD_BINDING: u32 = 7;

/// `source` with a counting call at the start of every loop body, and the
/// line number of every loop guarded.
pub fn guard_loops(source: &str) -> Result<(String, Vec<u32>), Diagnostic> {
    let module = naga::front::wgsl::parse_str(source).map_err(|err| Diagnostic {
        line: None,
        column: None,
        message: err.message().to_owned(),
    })?;
    let mut starts = Vec::new();
    for (_, function) in module.functions.iter() {
        loop_starts(&function.body, &mut starts);
    }
    for entry in &module.entry_points {
        loop_starts(&entry.function.body, &mut starts);
    }
    starts.sort_unstable();
    starts.dedup();
    let mut text = String::with_capacity(source.len() + starts.len() * 48 + 512);
    let mut lines = Vec::new();
    let mut copied = 0;
    for start in starts {
        let Some(brace) = body_brace(source, start) else {
            continue;
        };
        if brace < copied {
            continue;
        }
        let line = source[..start].matches('\n').count() as u32 + 1;
        text.push_str(&source[copied..=brace]);
        text.push_str(&format!(" dlsys_guard_loop({line}u);"));
        copied = brace + 1;
        lines.push(line);
    }
    text.push_str(&source[copied..]);
    text.push_str(&format!(
        "\n\n// Added by the checker: counts loop iterations (see guard.rs).\n\
         var<private> dlsys_guard_count: u32;\n\
         @group(0) @binding({GUARD_BINDING}) var<storage, read_write> dlsys_guard_line: atomic<u32>;\n\
         fn dlsys_guard_loop(line: u32) {{\n    \
             dlsys_guard_count += 1u;\n    \
             if (dlsys_guard_count == {GUARD_LIMIT}u + 1u) {{\n        \
                 atomicMax(&dlsys_guard_line, line);\n    \
             }}\n\
         }}\n"
    ));
    Ok((text, lines))
}

/// Byte offsets where the loops of `block` (and of blocks inside it) start.
fn loop_starts(block: &naga::Block, starts: &mut Vec<usize>) {
    for (statement, span) in block.span_iter() {
        match statement {
            naga::Statement::Loop {
                body, continuing, ..
            } => {
                if let Some(range) = span.to_range() {
                    starts.push(range.start);
                }
                loop_starts(body, starts);
                loop_starts(continuing, starts);
            }
            naga::Statement::Block(inner) => loop_starts(inner, starts),
            naga::Statement::If { accept, reject, .. } => {
                loop_starts(accept, starts);
                loop_starts(reject, starts);
            }
            naga::Statement::Switch { cases, .. } => {
                for case in cases {
                    loop_starts(&case.body, starts);
                }
            }
            _ => {}
        }
    }
}

/// The `{` that opens the body of the loop starting at `start`: the first
/// brace outside the header's parentheses, comments skipped.
fn body_brace(source: &str, start: usize) -> Option<usize> {
    let bytes = source.as_bytes();
    let mut depth: i32 = 0;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b'{' if depth <= 0 => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = "@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) tid: u32) {
    var t = 0.0;
    for (var i = tid; i < 10u; i += 64u) { // a comment {
        t += 1.0;
    }
    while (t < 3.0) /* { */ {
        t += 1.0;
    }
    loop {
        if (t > 5.0) { break; }
        t += 1.0;
    }
    y[tid] = t;
}
";

    #[test]
    fn every_loop_gets_a_counter_on_its_own_line_and_the_result_validates() {
        let (guarded, lines) = guard_loops(KERNEL).unwrap_or_default();
        assert_eq!(lines, vec![5, 8, 11]);
        for line in [5usize, 8, 11] {
            let text = guarded.lines().nth(line - 1).unwrap_or_default();
            assert!(
                text.contains(&format!("dlsys_guard_loop({line}u);")),
                "{text}"
            );
        }
        // Nothing moved to another line.
        for (a, b) in KERNEL.lines().zip(guarded.lines()) {
            assert!(b.starts_with(a.split('{').next().unwrap_or_default()));
        }
        let module = naga::front::wgsl::parse_str(&guarded).unwrap_or_else(|e| panic!("{e}"));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{e:?}"));
    }
}
