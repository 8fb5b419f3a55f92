//! Lesson prose, kept out of code: RON catalogs keyed by language.
//!
//! A catalog maps a key to a text in each language; `{name}` placeholders are
//! filled at run time with values a core computed, so prose never carries a
//! typed-in number.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The languages the prose is written in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Lang {
    #[default]
    En,
    Zh,
}

impl Lang {
    pub const ALL: [Self; 2] = [Self::En, Self::Zh];

    /// The language's own name, as shown in the language picker.
    pub fn native_name(self) -> &'static str {
        match self {
            Self::En => "English",
            Self::Zh => "中文",
        }
    }

    /// The short id (`en`, `zh`) the CLI's `--lang` and `?lang=` use.
    pub fn id(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::Zh => "zh",
        }
    }

    /// The language named by its short id (`en`, `zh`; any case).
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|l| l.id().eq_ignore_ascii_case(id))
    }

    /// The process's locale language: the first of `LC_ALL`, `LC_MESSAGES`,
    /// `LANG` that is set decides, as for every POSIX program (`None` when
    /// none is, or it is `C`/`POSIX`).
    pub fn from_env() -> Option<Self> {
        ["LC_ALL", "LC_MESSAGES", "LANG"]
            .into_iter()
            .filter_map(|var| std::env::var(var).ok())
            .find(|value| !value.is_empty())
            .and_then(|value| Self::from_locale(&value))
    }

    /// The language of a locale such as `zh_CN.UTF-8`, `zh-Hans` or
    /// `en-US` (`None` for `C`, `POSIX` or an empty one): Chinese for any
    /// `zh`, English for every other language.
    pub fn from_locale(locale: &str) -> Option<Self> {
        let language = locale
            .split(['_', '-', '.', '@'])
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        match language.as_str() {
            "" | "c" | "posix" => None,
            "zh" => Some(Self::Zh),
            _ => Some(Self::En),
        }
    }
}

/// One entry: the English text (always present) and its translations.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Entry {
    pub en: String,
    pub zh: String,
}

/// A parsed catalog.
/// Why a catalog did not parse. Its words stay English: they are for the
/// developer who broke a catalog (the error catalog is a catalog too).
#[derive(Clone, Debug, PartialEq)]
pub enum CatalogError {
    Syntax(ron::error::SpannedError),
    NoEnglish(String),
    /// A key written twice (the second would silently replace the first).
    Duplicate(String),
    /// A `[[term]]` token of the key's text did not expand.
    Term(String, crate::glossary::TokenError),
}

impl std::fmt::Display for CatalogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Syntax(err) => write!(f, "catalog: {err}"),
            Self::NoEnglish(key) => write!(f, "catalog: key `{key}` has no English text"),
            Self::Duplicate(key) => write!(f, "catalog: key `{key}` is written twice"),
            Self::Term(key, err) => write!(f, "catalog: key `{key}`: {err}"),
        }
    }
}

impl std::error::Error for CatalogError {}

/// A catalog's entries in the order written, duplicates kept (a map would
/// keep only the last).
struct Pairs(Vec<(String, Entry)>);

impl<'de> Deserialize<'de> for Pairs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Pairs;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of keys to (en, zh) entries")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Pairs, M::Error> {
                let mut pairs = Vec::new();
                while let Some(pair) = map.next_entry()? {
                    pairs.push(pair);
                }
                Ok(Pairs(pairs))
            }
        }
        d.deserialize_map(Visit)
    }
}

#[derive(Clone, Debug, Default)]
pub struct Catalog {
    entries: BTreeMap<String, Entry>,
    /// Each glossary term a `[[term]]` token names, and the first key
    /// (in key order) whose text names it.
    terms: BTreeMap<String, String>,
}

impl Catalog {
    /// Parses a catalog; a malformed file is an error naming the line.
    /// Each `[[term]]` token expands to the glossary's term, glossed in
    /// Chinese (see [`crate::glossary`]); a token naming no term is an error.
    pub fn parse(ron_text: &str) -> Result<Self, CatalogError> {
        let pairs: Pairs = ron::from_str(ron_text).map_err(CatalogError::Syntax)?;
        let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
        for (key, entry) in pairs.0 {
            if entries.contains_key(&key) {
                return Err(CatalogError::Duplicate(key));
            }
            entries.insert(key, entry);
        }
        let glossary = crate::glossary::glossary();
        let mut terms: BTreeMap<String, String> = BTreeMap::new();
        for (key, entry) in &entries {
            for id in crate::glossary::tokens(&entry.en)
                .into_iter()
                .chain(crate::glossary::tokens(&entry.zh))
            {
                terms.entry(id.to_owned()).or_insert_with(|| key.clone());
            }
        }
        for (key, entry) in &mut entries {
            if entry.en.trim().is_empty() {
                return Err(CatalogError::NoEnglish(key.clone()));
            }
            for (lang, text) in [(Lang::En, &mut entry.en), (Lang::Zh, &mut entry.zh)] {
                *text = glossary
                    .expand(text, lang)
                    .map_err(|err| CatalogError::Term(key.clone(), err))?;
            }
        }
        Ok(Self { entries, terms })
    }

    /// The glossary terms this catalog's text names, each with the first
    /// key that names it.
    pub fn terms(&self) -> impl Iterator<Item = (&str, &str)> {
        self.terms
            .iter()
            .map(|(id, key)| (id.as_str(), key.as_str()))
    }

    /// Parses a catalog that ships inside the binary; a broken one is a bug
    /// caught by the tests, so here it only degrades to showing keys.
    pub fn embedded(ron_text: &str) -> Self {
        Self::parse(ron_text).unwrap_or_else(|err| {
            log::warn!("{err}");
            Self::default()
        })
    }

    /// The text for `key` in `lang`, falling back to English, then to the key.
    pub fn get<'a>(&'a self, lang: Lang, key: &'a str) -> &'a str {
        match self.entries.get(key) {
            Some(entry) => match lang {
                Lang::Zh if !entry.zh.is_empty() => &entry.zh,
                _ => &entry.en,
            },
            None => key,
        }
    }

    /// The text for `key` with each `{name}` replaced by its value.
    pub fn fill(&self, lang: Lang, key: &str, args: &[(&str, &dyn std::fmt::Display)]) -> String {
        fill_placeholders(self.get(lang, key), args)
    }

    pub fn contains(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Every `(key, language, text)` present.
    pub fn texts(&self) -> impl Iterator<Item = (&str, Lang, &str)> {
        self.entries.iter().flat_map(|(key, entry)| {
            [(Lang::En, entry.en.as_str()), (Lang::Zh, entry.zh.as_str())]
                .into_iter()
                .filter(|(_, text)| !text.is_empty())
                .map(move |(lang, text)| (key.as_str(), lang, text))
        })
    }

    /// Keys with no text in `lang` (English always has text).
    pub fn missing(&self, lang: Lang) -> Vec<&str> {
        self.entries
            .iter()
            .filter(|(_, entry)| lang == Lang::Zh && entry.zh.is_empty())
            .map(|(key, _)| key.as_str())
            .collect()
    }
}

/// Words the glossary (`shared/GLOSSARY-zh.md`) rules out, and what to
/// write instead.
const RULED_OUT: [(&str, &str); 3] = [
    ("内核", "核函数 or kernel: 内核 is the OS kernel"),
    ("平局", "中点情形 for a tie, 就近舍入（偶数优先） for RNE"),
    ("快了", "是 … 的 N 倍: 快了 N 倍 is ambiguous by one"),
];

/// What is wrong with a catalog's Chinese, one line per problem: no Chinese;
/// Chinese that is still English prose (a word of four or more letters
/// outside `{placeholders}` and without a CJK character, e.g. a copy of the
/// English), unless its key is in `code_only`; or a word the glossary rules
/// out (内核 for a GPU kernel, 平局 for a tie, 快了 N 倍). Formulas, units and
/// placeholders alone (`{mb} MB ÷ {ms} ms = {answer} GB/s。`) are fine.
pub fn chinese_problems(catalog: &Catalog, code_only: &[&str]) -> Vec<String> {
    let is_cjk = |c: char| matches!(c, '\u{3400}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}');
    // English words Chinese engineers write as they are (the glossary's).
    const KEPT: [&str; 1] = ["kernel"];
    let mut problems = Vec::new();
    for (key, entry) in &catalog.entries {
        let zh = entry.zh.as_str();
        if zh.trim().is_empty() {
            problems.push(format!("{key}: no Chinese"));
        } else if !code_only.contains(&key.as_str()) && !zh.chars().any(is_cjk) {
            // The placeholders' names are not prose.
            let mut prose = zh.to_owned();
            while let (Some(open), Some(close)) = (prose.find('{'), prose.find('}')) {
                if close < open {
                    break;
                }
                prose.replace_range(open..=close, " ");
            }
            let word = prose
                .split(|c: char| !c.is_ascii_alphabetic())
                .find(|w| w.len() >= 4 && !KEPT.contains(&w.to_ascii_lowercase().as_str()));
            if let Some(word) = word {
                let what = if zh == entry.en {
                    "a copy of the English"
                } else {
                    "English"
                };
                problems.push(format!("{key}: {what} (`{word}`) in `{zh}`"));
            }
        }
        for (word, instead) in RULED_OUT {
            if zh.contains(word) {
                problems.push(format!("{key}: {word} (write {instead})"));
            }
        }
    }
    problems
}

/// Replaces `{name}` with the matching argument; unknown names stay visible.
/// `{name|one|other}` is an English plural: `one` where the argument shows
/// as `1`, `other` otherwise (`{k} {k|worker|workers}`); the number itself is
/// written by its own `{name}`.
/// Owned named values as the arguments [`Catalog::fill`] takes: a core
/// value's fields, formatted once for both the page and the CLI.
pub fn args<'a>(
    fields: &'a [(&'static str, String)],
) -> Vec<(&'static str, &'a dyn std::fmt::Display)> {
    fields
        .iter()
        .map(|(k, v)| -> (&'static str, &'a dyn std::fmt::Display) { (k, v) })
        .collect()
}

pub fn fill_placeholders(template: &str, args: &[(&str, &dyn std::fmt::Display)]) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                let (name, forms) = match after[..close].split_once('|') {
                    Some((name, forms)) => (name, forms.split_once('|')),
                    None => (&after[..close], None),
                };
                match args.iter().find(|(arg, _)| *arg == name) {
                    Some((_, value)) => match forms {
                        Some((one, other)) => {
                            out.push_str(if value.to_string() == "1" { one } else { other });
                        }
                        None => out.push_str(&value.to_string()),
                    },
                    None => {
                        out.push('{');
                        out.push_str(&after[..close]);
                        out.push('}');
                    }
                }
                rest = &after[close + 1..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_written_twice_is_refused() {
        let err =
            Catalog::parse(r#"{"a": (en: "x"), "b": (en: "y"), "a": (en: "z")}"#).unwrap_err();
        assert!(
            matches!(err, CatalogError::Duplicate(ref key) if key == "a"),
            "{err}"
        );
        assert!(Catalog::parse(r#"{"a": (en: "x"), "b": (en: "y")}"#).is_ok());
    }

    #[test]
    fn chinese_problems_are_named() {
        let catalog = Catalog::parse(
            r#"{"a": (en: "Hi"), "b": (en: "Hello", zh: "Hello"), "c": (en: "x", zh: "内核"), "d": (en: "ok", zh: "好"), "e": (en: "{n} ms", zh: "{n} ms"), "t": (en: "a tie", zh: "平局取偶"), "x": (en: "3× faster", zh: "快了 3 倍")}"#,
        )
        .unwrap();
        let problems = chinese_problems(&catalog, &["e"]);
        assert_eq!(problems.len(), 5, "{problems:?}");
        assert!(problems[0].starts_with("a: no Chinese"));
        assert!(
            problems[1].starts_with("b: a copy of the English"),
            "{problems:?}"
        );
        assert!(problems[2].starts_with("c: 内核"));
        assert!(problems[3].starts_with("t: 平局"));
        assert!(problems[4].starts_with("x: 快了"));
        // Formulas, units and the glossary's English words are not prose.
        let catalog = Catalog::parse(
            r#"{"f": (en: "{mb} MB in {ms} ms", zh: "{mb} MB ÷ {ms} ms = {answer} GB/s。"), "k": (en: "kernel", zh: "kernel"), "w": (en: "{x} copy", zh: "{x} copy")}"#,
        )
        .unwrap();
        let problems = chinese_problems(&catalog, &[]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("w: a copy of the English (`copy`)"));
    }

    #[test]
    fn locales_name_their_language() {
        for (locale, lang) in [
            ("zh_CN.UTF-8", Some(Lang::Zh)),
            ("zh-Hans-CN", Some(Lang::Zh)),
            ("ZH", Some(Lang::Zh)),
            ("en_US.UTF-8", Some(Lang::En)),
            ("de-DE", Some(Lang::En)),
            ("C.UTF-8", None),
            ("POSIX", None),
            ("", None),
        ] {
            assert_eq!(Lang::from_locale(locale), lang, "{locale}");
        }
    }

    #[test]
    fn fills_and_falls_back() {
        let catalog = Catalog::parse(
            r#"{ "a": (en: "max {v} of {fmt}", zh: "{fmt} 最大 {v}"), "b": (en: "only english") }"#,
        )
        .unwrap_or_default();
        assert_eq!(
            catalog.fill(Lang::En, "a", &[("v", &65504), ("fmt", &"fp16")]),
            "max 65504 of fp16"
        );
        assert_eq!(
            catalog.fill(Lang::Zh, "a", &[("v", &1), ("fmt", &"bf16")]),
            "bf16 最大 1"
        );
        assert_eq!(catalog.get(Lang::Zh, "b"), "only english");
        assert_eq!(catalog.get(Lang::En, "nope"), "nope");
        assert_eq!(catalog.missing(Lang::Zh), vec!["b"]);
    }

    #[test]
    fn keeps_unknown_placeholders_and_unclosed_braces() {
        assert_eq!(fill_placeholders("{x} {y", &[("x", &1)]), "1 {y");
        assert_eq!(fill_placeholders("{z}", &[]), "{z}");
        assert_eq!(fill_placeholders("{z|a|b}", &[]), "{z|a|b}");
    }

    #[test]
    fn plural_forms_follow_the_number() {
        let text = "{k} {k|worker|workers}";
        assert_eq!(fill_placeholders(text, &[("k", &1)]), "1 worker");
        assert_eq!(fill_placeholders(text, &[("k", &0)]), "0 workers");
        assert_eq!(fill_placeholders(text, &[("k", &2)]), "2 workers");
        assert_eq!(fill_placeholders(text, &[("k", &"1.0")]), "1.0 workers");
    }

    #[test]
    fn rejects_malformed_and_empty() {
        assert!(Catalog::parse("{ \"a\": (en: ").is_err());
        assert!(Catalog::parse(r#"{ "a": (zh: "x") }"#).is_err());
    }
}
