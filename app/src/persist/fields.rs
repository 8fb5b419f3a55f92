//! The fields of a saved state, one by one: a save from a newer dlsys-lab
//! may hold a value this build cannot read (a language it lacks, say), and
//! that must cost only that field, not the whole save.
//!
//! `ron::Value` cannot stand in here: it reads an enum variant such as
//! `Dark` as a bare unit and loses its name. So the top-level `(name: value,
//! …)` is split as text, and each value is read with its own type.

/// `(a: 1, b: "x, y", c: (d: [1, 2]))` → `[("a", "1"), ("b", "\"x, y\""), …]`;
/// `None` when the text is not a parenthesised list of `name: value`.
pub fn split_fields(text: &str) -> Option<Vec<(String, String)>> {
    let inner = text.trim().strip_prefix('(')?.strip_suffix(')')?;
    let mut fields = Vec::new();
    for part in split_top_level(inner)? {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (name, value) = part.split_once(':')?;
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        fields.push((name.to_owned(), value.trim().to_owned()));
    }
    Some(fields)
}

/// Splits at commas outside strings, chars and brackets; `None` when the
/// brackets or quotes do not balance.
fn split_top_level(text: &str) -> Option<Vec<&str>> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let (mut depth, mut start, mut i) = (0i32, 0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => i = skip_quoted(bytes, i, b'"')?,
            b'\'' => i = skip_quoted(bytes, i, b'\'')?,
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            b',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    (depth == 0).then(|| {
        parts.push(&text[start..]);
        parts
    })
}

/// The index of the quote that closes the one at `open`.
fn skip_quoted(bytes: &[u8], open: usize, quote: u8) -> Option<usize> {
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == quote => return Some(i),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_top_level_commas_only() {
        let fields =
            split_fields(r#"(a: 1, b: "x, \"y\"", c: (d: [1, 2], e: {"k": "v"}), f: 'c')"#);
        let fields = fields.unwrap_or_default();
        let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "f"]);
        assert_eq!(fields[1].1, r#""x, \"y\"""#);
        assert_eq!(fields[2].1, r#"(d: [1, 2], e: {"k": "v"})"#);
    }

    #[test]
    fn refuses_what_is_not_a_field_list() {
        for bad in ["", "(", "(a 1)", "(a: (1)", "(a: \"x)", "[a: 1]", "(a: 1))"] {
            assert!(split_fields(bad).is_none(), "{bad}");
        }
        assert_eq!(split_fields("()"), Some(Vec::new()));
        assert_eq!(split_fields("(a: 1,)").map(|f| f.len()), Some(1));
    }
}
