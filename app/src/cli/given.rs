//! The rule for optional flags: one that the run would pass over is
//! refused by name, never ignored. A command lists its flags with whether
//! each was given; these say which were, and refuse them.

use super::{CliError, tf};

/// A flag's name and whether it was given.
pub type Flag = (&'static str, bool);

/// The flags given, in their order.
pub fn given(flags: &[Flag]) -> Vec<&'static str> {
    flags
        .iter()
        .filter(|(_, on)| *on)
        .map(|(flag, _)| *flag)
        .collect()
}

/// Refuses the first flag given with `key`'s message: `{flag}` names it,
/// the other placeholders come from `args`.
pub fn refuse_any(
    flags: &[Flag],
    key: &str,
    args: &[(&str, &dyn std::fmt::Display)],
) -> Result<(), CliError> {
    let Some(flag) = given(flags).first().copied() else {
        return Ok(());
    };
    let mut all: Vec<(&str, &dyn std::fmt::Display)> = vec![("flag", &flag)];
    all.extend_from_slice(args);
    Err(CliError::from(tf(key, &all)))
}
