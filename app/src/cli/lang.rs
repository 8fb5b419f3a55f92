//! The CLI's language: `--lang en|zh`, else the system's (`LC_ALL`,
//! `LC_MESSAGES`, `LANG`), chosen once before parsing so `--help` speaks it
//! too. The words are in `assets/cli.ron`; JSON keys stay English.

use std::sync::{LazyLock, OnceLock};

use clap::{Arg, Command};
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

/// The text of a key made at run time, in this run's language.
pub fn catalog_text(key: &str) -> String {
    TEXT.get(lang(), key).to_owned()
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

/// The command's help in `lang`, every word from the catalog: each
/// command's summary (`help.<path>`), each argument's help
/// (`help.<path>.--<long>` for an option, `help.<path>.<id>` for a
/// positional; the global ones and clap's own `--help`/`--version` once, as
/// `help.--<long>`), the section headings, the help template, and the
/// default and possible values (clap's own `[default: …]` notes are hidden
/// and written again in `lang`). The command is built first, so clap's
/// generated arguments and `help` subcommand are there to be worded.
pub fn localize(mut command: Command, lang: Lang) -> Command {
    command.build();
    localize_command(command, lang, "")
}

/// The catalog key of a command's summary (`path` is its subcommand names
/// joined by dots; the root's is empty). clap's `help` subcommand has its
/// own words; its copies of the commands share the real ones'.
pub fn about_key(path: &str) -> String {
    if path.is_empty() {
        return "help.about".to_owned();
    }
    let parts: Vec<&str> = path.split('.').collect();
    if parts.last() == Some(&"help") {
        return "help.help".to_owned();
    }
    let real: Vec<&str> = parts.into_iter().filter(|p| *p != "help").collect();
    format!("help.{}", real.join("."))
}

/// The catalog key of an argument's help under the command at `path`:
/// `help.<path>.--<long>` (`help.<path>.<id>` for a positional), else the
/// shared `help.--<long>` (global arguments, `--help`, `--json`, `--seed`).
pub fn arg_key(path: &str, arg: &Arg) -> String {
    let name = match arg.get_long() {
        Some(long) => format!("--{long}"),
        None => arg.get_id().to_string(),
    };
    let own = format!("{}.{name}", about_key(path));
    if !path.is_empty() && TEXT.contains(&own) {
        own
    } else {
        format!("help.{name}")
    }
}

/// The catalog key of the text after a command's help, if it has one.
pub fn after_key(path: &str) -> String {
    format!("{}.after", about_key(path))
}

/// The figures help texts name (`{name}` in `help.*`): limits and defaults
/// from the code that holds them, and the lists of variants.
fn help_values() -> &'static [(&'static str, String)] {
    static VALUES: LazyLock<Vec<(&'static str, String)>> = LazyLock::new(|| {
        let mut values = super::train::help_values();
        values.extend(super::bench::help_values());
        values.extend(super::kernel::help_values());
        values.extend(super::memory::help_values());
        values.extend(super::pipeline::help_values());
        values.extend(super::quiz::help_values());
        values.extend(super::quant::help_values());
        values.extend(super::infer::help_values());
        values.extend(super::parallel::help_values());
        values
    });
    &VALUES
}

/// The text of a `help.*` key in `lang`, its figures filled in.
fn help_text(lang: Lang, key: &str) -> String {
    let args: Vec<(&str, &dyn std::fmt::Display)> = help_values()
        .iter()
        .map(|(name, value)| {
            let value: &dyn std::fmt::Display = value;
            (*name, value)
        })
        .collect();
    TEXT.fill(lang, key, &args)
}

fn localize_command(command: Command, lang: Lang, path: &str) -> Command {
    let mut command = command
        .about(help_text(lang, &about_key(path)))
        .long_about(None)
        .help_template(TEXT.get(lang, "help.template"))
        .subcommand_help_heading(TEXT.get(lang, "help.heading.commands"))
        .mut_args(|arg| localize_arg(arg, lang, path));
    let after = after_key(path);
    if TEXT.contains(&after) {
        command = command
            .after_help(help_text(lang, &after))
            .after_long_help(None);
    }
    command.mut_subcommands(|sub| {
        let name = sub.get_name().to_owned();
        let sub_path = if path.is_empty() {
            name
        } else {
            format!("{path}.{name}")
        };
        localize_command(sub, lang, &sub_path)
    })
}

fn localize_arg(arg: Arg, lang: Lang, path: &str) -> Arg {
    let mut help = help_text(lang, &arg_key(path, &arg));
    if arg.get_action().takes_values() {
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if !defaults.is_empty() && !arg.is_hide_default_value_set() {
            let value = defaults.join(" ");
            let note = TEXT.fill(lang, "help.default", &[("value", &value)]);
            help = format!("{help} {note}");
        }
        let values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_owned())
            .collect();
        if !values.is_empty() && !arg.is_hide_possible_values_set() {
            let values = values.join(", ");
            let note = TEXT.fill(lang, "help.possible", &[("values", &values)]);
            help = format!("{help} {note}");
        }
    }
    let takes_values = arg.get_action().takes_values();
    let heading = if arg.is_positional() {
        "help.heading.arguments"
    } else {
        "help.heading.options"
    };
    arg.help(help)
        .long_help(None)
        .hide_default_value(true)
        .hide_possible_values(true)
        // A value may be negative where the flag allows it; where it does
        // not, the value's own check says so (not "unexpected argument").
        .allow_negative_numbers(takes_values)
        .help_heading(TEXT.get(lang, heading))
}

/// The code the command line knows of, for the stray-English check: every
/// subcommand's name, every value a flag takes, the default values, the
/// lessons' and the WGSL exercises' ids, the kernels' ids.
pub fn identifiers() -> Vec<String> {
    use clap::CommandFactory as _;
    fn walk(cmd: &Command, out: &mut Vec<String>) {
        out.push(cmd.get_name().to_owned());
        for arg in cmd.get_arguments() {
            let values = arg.get_possible_values();
            out.extend(values.iter().map(|v| v.get_name().to_owned()));
            let defaults = arg.get_default_values().iter();
            out.extend(defaults.map(|v| v.to_string_lossy().into_owned()));
        }
        for sub in cmd.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut out = Vec::new();
    let mut command = super::Cli::command();
    command.build();
    walk(&command, &mut out);
    // The kernels' ids (the variant lists `bench kernels --help` names).
    for (_, list) in super::bench::help_values() {
        out.extend(list.split(", ").map(str::to_owned));
    }
    use dlsys_core::kernels::Kernel;
    out.extend([Kernel::Copy.id(), Kernel::Fma.id()]);
    out.extend(dlsys_lessons::all().iter().map(|l| l.id().to_owned()));
    let exercises = dlsys_shaders::kernel_track::EXERCISES.iter();
    out.extend(exercises.map(|e| e.id.to_owned()));
    out
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

/// Terminal columns `text` takes (a CJK character two).
pub fn columns(text: &str) -> usize {
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

    /// Every command's summary and every argument's help has its entry (in
    /// both languages, by the test below), and every `help.*` entry is used.
    #[test]
    fn every_help_text_comes_from_the_catalog_and_every_entry_is_used() {
        use clap::CommandFactory as _;
        fn walk(cmd: &Command, path: &str, keys: &mut Vec<String>) {
            keys.push(about_key(path));
            if cmd.get_after_help().is_some() {
                keys.push(after_key(path));
            }
            keys.extend(cmd.get_arguments().map(|arg| arg_key(path, arg)));
            for sub in cmd.get_subcommands() {
                let name = sub.get_name();
                let path = if path.is_empty() {
                    name.to_owned()
                } else {
                    format!("{path}.{name}")
                };
                walk(sub, &path, keys);
            }
        }
        let mut cmd = localize(crate::cli::Cli::command(), Lang::En);
        cmd.build();
        let mut keys = Vec::new();
        walk(&cmd, "", &mut keys);
        let missing: Vec<&String> = keys.iter().filter(|k| !TEXT.contains(k)).collect();
        assert!(missing.is_empty(), "no entry for {missing:?}");
        let fixed = [
            "help.template",
            "help.usage",
            "help.heading.options",
            "help.heading.arguments",
            "help.heading.commands",
            "help.default",
            "help.possible",
        ];
        let unused: Vec<&str> = TEXT
            .keys()
            .filter(|k| k.starts_with("help.") && !fixed.contains(k))
            .filter(|k| !keys.iter().any(|used| used == k))
            .collect();
        assert!(unused.is_empty(), "unused help entries: {unused:?}");
        // The figures are filled in: no `{name}` is left.
        let help = cmd.render_long_help().to_string();
        let train = cmd
            .find_subcommand_mut("train")
            .map(|c| c.render_long_help().to_string())
            .unwrap_or_default();
        for text in [&help, &train] {
            assert!(!text.contains('{') && text.contains("Options"), "{text}");
        }
        assert!(train.contains("(default 0.05 for the MLP"), "{train}");
    }

    /// No Chinese text of the CLI's catalog shows an English word.
    #[test]
    fn the_chinese_texts_leave_no_english() {
        let ids = super::identifiers();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut leaks = Vec::new();
        for (key, lang, text) in catalog().texts() {
            // The placeholders' names are not prose.
            let mut prose = text.to_owned();
            while let (Some(open), Some(close)) = (prose.find('{'), prose.find('}')) {
                if close < open {
                    break;
                }
                prose.replace_range(open..=close, " ");
            }
            let stray = dlsys_core::latin::stray_words(&prose, &ids);
            if lang == Lang::Zh && key != "help.template" && !stray.is_empty() {
                leaks.push(format!("{key}: {stray:?} in {text}"));
            }
        }
        assert!(leaks.is_empty(), "{}", leaks.join("\n"));
    }

    /// `dlsys-lab check` names every known-wrong solution through the
    /// catalog (`check.solution.<name>`): each Rust and WGSL one has its key.
    #[test]
    fn every_known_wrong_solution_has_a_name_in_the_catalog() {
        let mut names: Vec<&str> = dlsys_exercises::cases()
            .iter()
            .filter(|c| c.expect.is_some())
            .map(|c| c.solution)
            .collect();
        for ex in &dlsys_shaders::kernel_track::EXERCISES {
            names.extend(ex.wrong.iter().map(|w| w.name));
        }
        let missing: Vec<&str> = names
            .into_iter()
            .filter(|n| !catalog().contains(&format!("check.solution.{n}")))
            .collect();
        assert!(missing.is_empty(), "{missing:?}");
    }

    #[test]
    fn the_cli_catalog_has_chinese_for_every_entry() {
        let problems = dlsys_core::text::chinese_problems(catalog(), &[]);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
