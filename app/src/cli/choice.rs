//! Options whose value is one of a fixed set: clap lists the set in `--help`
//! and in the error for a bad value, and the set is the core's own list, so
//! the help cannot drift from what the code accepts.

use clap::builder::{PossibleValuesParser, TypedValueParser};

/// A value parser for one of `all`, each named by `id` (matched ignoring
/// ASCII case, as the core's `by_name` functions do).
pub fn choice<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    id: fn(&T) -> &'static str,
) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(all.iter().map(id)).try_map(move |name: String| {
        all.iter()
            .copied()
            .find(|value| id(value).eq_ignore_ascii_case(&name))
            .ok_or_else(|| format!("no value is named `{name}`"))
    })
}

/// A value parser for one of `all`'s names, kept as the text typed: for
/// settings the core itself reads by name.
pub fn name_of<T: 'static>(all: &'static [T], id: fn(&T) -> &'static str) -> PossibleValuesParser {
    PossibleValuesParser::new(all.iter().map(id))
}

/// `a, b, c`: a list for help texts.
pub fn list<T>(all: &[T], id: fn(&T) -> &'static str) -> String {
    all.iter().map(id).collect::<Vec<_>>().join(", ")
}
