//! A bad command line in one line, in this run's language: clap's common
//! errors (an unknown flag or subcommand, a bad value, arguments missing or
//! in conflict) worded from `assets/cli.ron` with clap's suggestion and
//! usage line; a negative number where the flag takes none said so; the
//! rare ones in clap's words.

use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::{t, tf};

/// The message for `err`, one line.
pub fn message(err: &clap::Error) -> String {
    let Some(text) = worded(err) else {
        return one_line(err);
    };
    let suggestion = [
        ContextKind::SuggestedArg,
        ContextKind::SuggestedValue,
        ContextKind::SuggestedSubcommand,
    ]
    .into_iter()
    .find_map(|kind| context(err, kind));
    let mut line = match suggestion {
        Some(s) => format!("{text}{}", tf("cli.suggest", &[("suggestion", &s)])),
        None => text,
    };
    if let Some(ContextValue::StyledStr(usage)) = err.get(ContextKind::Usage) {
        line = format!("{line} {}", usage_line(&usage.to_string()));
    }
    line
}

/// The words for the error kinds worded here.
fn worded(err: &clap::Error) -> Option<String> {
    let arg = context(err, ContextKind::InvalidArg).unwrap_or_default();
    let value = context(err, ContextKind::InvalidValue).unwrap_or_default();
    let flag = arg.split_whitespace().next().unwrap_or_default().to_owned();
    let negative = value
        .strip_prefix('-')
        .is_some_and(|v| v.parse::<f64>().is_ok());
    Some(match err.kind() {
        ErrorKind::InvalidValue | ErrorKind::ValueValidation if negative => {
            tf("cli.negative", &[("flag", &flag), ("value", &value)])
        }
        ErrorKind::InvalidValue if value.is_empty() => tf("cli.no_value", &[("arg", &arg)]),
        ErrorKind::InvalidValue => {
            let values = context(err, ContextKind::ValidValue).unwrap_or_default();
            let args: [(&str, &dyn std::fmt::Display); 3] =
                [("arg", &arg), ("value", &value), ("values", &values)];
            tf("cli.bad_choice", &args)
        }
        ErrorKind::ValueValidation => {
            let reason = reason(err);
            let args: [(&str, &dyn std::fmt::Display); 3] =
                [("arg", &arg), ("value", &value), ("reason", &reason)];
            tf("cli.bad_value", &args)
        }
        ErrorKind::UnknownArgument => tf("cli.unknown_arg", &[("arg", &arg)]),
        ErrorKind::InvalidSubcommand => {
            let name = context(err, ContextKind::InvalidSubcommand).unwrap_or_default();
            tf("cli.unknown_subcommand", &[("name", &name)])
        }
        ErrorKind::MissingRequiredArgument => tf("cli.missing", &[("args", &arg)]),
        ErrorKind::ArgumentConflict => match context(err, ContextKind::PriorArg) {
            Some(prior) if prior == arg => tf("cli.repeated", &[("arg", &arg)]),
            Some(prior) => tf("cli.conflict", &[("arg", &arg), ("prior", &prior)]),
            None => return None,
        },
        _ => return None,
    })
}

/// A context value as text (a list joined by commas).
fn context(err: &clap::Error, kind: ContextKind) -> Option<String> {
    match err.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(list) => Some(list.join(", ")),
        _ => None,
    }
}

/// Why a value did not parse: the number parsers' reasons in this run's
/// language, any other (the core's, already worded) as it is.
fn reason(err: &clap::Error) -> String {
    let source = std::error::Error::source(err)
        .map(ToString::to_string)
        .unwrap_or_default();
    if let Some((_, range)) = source.split_once(" is not in ") {
        return tf("cli.reason.range", &[("range", &range)]);
    }
    let key = match source.as_str() {
        "invalid digit found in string" => "cli.reason.not_integer",
        "number too large to fit in target type" => "cli.reason.too_large",
        "cannot parse integer from empty string" => "cli.reason.empty",
        "invalid float literal" => "cli.reason.not_number",
        _ => return source,
    };
    t(key).to_owned()
}

/// clap's message on one line: `invalid value 'x' for '--y <Y>' [possible
/// values: …]`, its usage line headed in this run's language.
pub fn one_line(err: &clap::Error) -> String {
    let text = err.render().to_string();
    let lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("For more information"))
        .map(usage_line)
        .collect();
    let joined = lines.join(" ");
    joined.strip_prefix("error: ").unwrap_or(&joined).to_owned()
}

/// `Usage: dlsys-lab …` with its heading in this run's language.
fn usage_line(line: &str) -> String {
    match line.trim().strip_prefix("Usage:") {
        Some(rest) => format!("{}{}", t("help.usage"), rest.trim_start()),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    fn error(args: &[&str]) -> String {
        let mut all = vec!["dlsys-lab"];
        all.extend(args);
        super::super::Cli::try_parse_from(all)
            .err()
            .map(|e| message(&e))
            .unwrap_or_default()
    }

    #[test]
    fn bad_command_lines_are_worded_with_the_facts() {
        let bad = error(&["kernel", "reduce", "--op", "mean"]);
        assert!(
            !bad.contains('\n') && bad.contains("mean") && bad.contains("sum, max"),
            "{bad}"
        );
        let unknown = error(&["train", "--foo"]);
        assert!(
            unknown.contains("'--foo'") && unknown.contains("Usage: dlsys-lab train"),
            "{unknown}"
        );
        let range = error(&["quiz", "--n", "99"]);
        assert!(
            range.contains("'99'") && range.contains("1..=50"),
            "{range}"
        );
        let digits = error(&["train", "--batch", "x"]);
        assert!(digits.contains("whole number"), "{digits}");
        let missing = error(&["kernel", "matmul", "--m", "2"]);
        assert!(missing.contains("--n <N>, --k <K>"), "{missing}");
        let sub = error(&["nosuch"]);
        assert!(sub.contains("'nosuch'"), "{sub}");
        let similar = error(&["memory", "--transformer", "gpt3"]);
        assert!(similar.contains("gpt3-175b"), "{similar}");
    }
}
