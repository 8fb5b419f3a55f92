//! The glossary: one catalog of terms (`assets/glossary.ron`), each with its
//! English word, its Chinese word and a one-line definition in both
//! languages. It is the single source of the first-use glosses in the prose
//! catalogs, and of the study companion's glossary page.
//!
//! A catalog text names a term with a token, `[[id]]`, or `[[id|words]]` to
//! write the term with other words (a plural, another form of the Chinese).
//! When the catalog is parsed, the token expands to the term's English word
//! (or `words`) in English, and in Chinese to its Chinese word (or `words`)
//! followed by the English in full-width brackets — the gloss a reader sees
//! on the term's first use: `[[epoch]]` reads "epoch" and "轮（epoch）". A
//! term may give the gloss to show in Chinese (`gloss`, by default its
//! English), and a Chinese word that already ends in a bracket takes the
//! gloss inside it: "非规格化数（次正规数）" glossed "subnormal" reads
//! "非规格化数（次正规数，subnormal）".

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use crate::text::{Entry, Lang};

/// One term.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Term {
    /// The English word, as the English prose writes it.
    pub en: String,
    /// The Chinese word, as the glossary (`shared/GLOSSARY-zh.md`) settles it.
    pub zh: String,
    /// What the Chinese first use shows in brackets, when not `en` (empty:
    /// `en`).
    pub gloss: String,
    /// One line saying what the term means, in each language.
    pub def: Entry,
}

impl Term {
    /// The term's word in `lang`.
    pub fn word(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.en,
            Lang::Zh => &self.zh,
        }
    }

    /// Its one-line definition in `lang`.
    pub fn definition(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.def.en,
            Lang::Zh => &self.def.zh,
        }
    }

    /// What a token shows in `lang`: `words` (or the term's word), and in
    /// Chinese the English gloss in brackets.
    pub fn first_use(&self, lang: Lang, words: Option<&str>) -> String {
        let word = words.unwrap_or_else(|| self.word(lang));
        match lang {
            Lang::En => word.to_owned(),
            Lang::Zh => {
                let gloss = if self.gloss.is_empty() {
                    &self.en
                } else {
                    &self.gloss
                };
                match word.strip_suffix('）') {
                    Some(open) => format!("{open}，{gloss}）"),
                    None => format!("{word}（{gloss}）"),
                }
            }
        }
    }
}

/// Why a text's tokens did not expand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenError {
    /// `[[id]]` names no term.
    Unknown(String),
    /// `[[` without its `]]`.
    Unclosed,
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unknown(id) => write!(f, "`[[{id}]]` names no term of assets/glossary.ron"),
            Self::Unclosed => write!(f, "a `[[` without its `]]`"),
        }
    }
}

/// The glossary's terms by id.
#[derive(Clone, Debug, Default)]
pub struct Glossary {
    terms: BTreeMap<String, Term>,
}

static GLOSSARY: LazyLock<Glossary> = LazyLock::new(|| {
    Glossary::parse(include_str!("../../../assets/glossary.ron")).unwrap_or_else(|err| {
        log::warn!("glossary: {err}");
        Glossary::default()
    })
});

/// The app's glossary, `assets/glossary.ron`.
pub fn glossary() -> &'static Glossary {
    &GLOSSARY
}

impl Glossary {
    pub fn parse(ron_text: &str) -> Result<Self, ron::error::SpannedError> {
        Ok(Self {
            terms: ron::from_str(ron_text)?,
        })
    }

    pub fn get(&self, id: &str) -> Option<&Term> {
        self.terms.get(id)
    }

    /// Every `(id, term)`, by id.
    pub fn terms(&self) -> impl Iterator<Item = (&str, &Term)> {
        self.terms.iter().map(|(id, term)| (id.as_str(), term))
    }

    /// `text` with each token expanded for `lang`.
    pub fn expand(&self, text: &str, lang: Lang) -> Result<String, TokenError> {
        if !text.contains("[[") {
            return Ok(text.to_owned());
        }
        let mut out = String::with_capacity(text.len() + 16);
        let mut rest = text;
        while let Some(open) = rest.find("[[") {
            out.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            let close = after.find("]]").ok_or(TokenError::Unclosed)?;
            let (id, words) = split_token(&after[..close]);
            let term = self
                .get(id)
                .ok_or_else(|| TokenError::Unknown(id.to_owned()))?;
            out.push_str(&term.first_use(lang, words));
            rest = &after[close + 2..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// A token's term id and its own words, if any (`id|words`).
fn split_token(inside: &str) -> (&str, Option<&str>) {
    match inside.split_once('|') {
        Some((id, words)) => (id.trim(), Some(words)),
        None => (inside.trim(), None),
    }
}

/// The term ids a raw catalog text names with tokens (a malformed token
/// names nothing; expanding it is the error).
pub fn tokens(text: &str) -> Vec<&str> {
    let mut ids = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("[[") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("]]") else { break };
        ids.push(split_token(&after[..close]).0);
        rest = &after[close + 2..];
    }
    ids
}

#[cfg(test)]
mod tests;
