//! The CLI's language: `--lang en|zh`, else the system's (`LC_ALL`,
//! `LC_MESSAGES`, `LANG`), chosen once before parsing so `--help` speaks it
//! too. The words are in `assets/cli.ron`; JSON keys stay English.

use std::sync::{LazyLock, OnceLock};

use clap::Command;
use dlsys_core::text::{Catalog, Lang};

static TEXT: LazyLock<Catalog> =
    LazyLock::new(|| Catalog::embedded(include_str!("../../../assets/cli.ron")));
static LANG: OnceLock<Lang> = OnceLock::new();

/// The CLI's catalog (for the coverage tests).
#[cfg(test)]
pub fn catalog() -> &'static Catalog {
    &TEXT
}

/// The language this run speaks (English until [`choose`] ran: tests).
pub fn lang() -> Lang {
    LANG.get().copied().unwrap_or_default()
}

/// The text of `key` in this run's language.
pub fn t(key: &'static str) -> &'static str {
    TEXT.get(lang(), key)
}

/// The text of `key` with its `{placeholders}` filled.
pub fn tf(key: &str, args: &[(&str, &dyn std::fmt::Display)]) -> String {
    TEXT.fill(lang(), key, args)
}

/// Fixes the language from the command line (`--lang X` or `--lang=X`,
/// anywhere, as clap reads a global option) or else the system's. A value
/// clap will refuse leaves the system's language for the error message.
pub fn choose(args: &[std::ffi::OsString]) -> Lang {
    let mut chosen = None;
    let mut iter = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(arg) = iter.next() {
        if arg == "--" {
            break;
        }
        let value = match arg.strip_prefix("--lang") {
            Some("") => iter.next().map(|v| v.into_owned()),
            Some(rest) => rest.strip_prefix('=').map(str::to_owned),
            None => None,
        };
        if let Some(value) = value {
            chosen = Lang::from_id(&value);
        }
    }
    let lang = chosen.unwrap_or_else(crate::system_lang);
    let _ = LANG.set(lang);
    lang
}

/// The command's help in `lang`: each subcommand's one-line summary and the
/// section headings from the catalog (clap's own words, such as "Usage",
/// come from the help template).
pub fn localize(mut command: Command, lang: Lang) -> Command {
    if lang == Lang::En {
        return command;
    }
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in names {
        let key = format!("help.{name}");
        if TEXT.contains(&key) {
            let about = TEXT.get(lang, &key).to_owned();
            command =
                command.mut_subcommand(&name, |s| s.about(about).help_template(template(lang)));
        }
    }
    command
        .about(TEXT.get(lang, "help.about").to_owned())
        .help_template(template(lang))
        .mut_arg("lang", |a| a.help(TEXT.get(lang, "help.lang").to_owned()))
        .mut_arg("lesson", |a| {
            a.help(TEXT.get(lang, "help.lesson").to_owned())
        })
}

fn template(lang: Lang) -> String {
    TEXT.get(lang, "help.template").to_owned()
}

/// Pads `text` on the right to `width` columns, counting a CJK character
/// as two (as a terminal draws it).
pub fn pad(text: &str, width: usize) -> String {
    format!("{text}{}", " ".repeat(width.saturating_sub(columns(text))))
}

/// Pads `text` on the left to `width` columns (right-aligned).
pub fn pad_left(text: &str, width: usize) -> String {
    format!("{}{text}", " ".repeat(width.saturating_sub(columns(text))))
}

fn columns(text: &str) -> usize {
    text.chars()
        .map(|c| if c >= '\u{2E80}' { 2 } else { 1 })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_counts_wide_characters_twice() {
        assert_eq!(pad("ab", 4), "ab  ");
        assert_eq!(pad("中文", 6), "中文  ");
        assert_eq!(pad("toolong", 3), "toolong");
        assert_eq!(pad_left("最小", 6), "  最小");
    }

    #[test]
    fn the_cli_catalog_has_chinese_for_every_entry() {
        let problems = dlsys_core::text::chinese_problems(catalog(), &[]);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
