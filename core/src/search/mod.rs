//! Search over every page's text in both languages and the glossary: the
//! index is built once from the catalogs, a query is matched as substrings
//! (Chinese has no spaces; each space-separated word of a query must occur)
//! after folding case and full-width forms and dropping `{placeholders}` and
//! backticks, and the hits are ranked title > section heading > exercise >
//! glossary term > body, one per page section. An English glossary term
//! also finds the Chinese word for it. The app's search box and
//! `dlsys-lab bench search` both use it.

use crate::glossary::glossary;
use crate::text::{Catalog, Lang};

/// What a piece of text is on its page, most telling first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Title,
    Heading,
    Exercise,
    Term,
    Body,
}

impl Kind {
    fn weight(self) -> u32 {
        match self {
            Self::Title => 500,
            Self::Heading => 400,
            Self::Exercise => 300,
            Self::Term => 250,
            Self::Body => 100,
        }
    }
}

/// One piece of text: where it is, and what it says in each language.
#[derive(Clone, Debug)]
struct Doc {
    page: String,
    /// The section it opens at (`None`: the page's top).
    section: Option<String>,
    kind: Kind,
    /// As shown (placeholders and backticks dropped), English then Chinese.
    shown: [String; 2],
    /// As matched: [`fold`]ed, one char for each char of `shown`.
    folded: [String; 2],
}

/// A hit: where to go and what to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub page: String,
    pub section: Option<String>,
    pub kind: Kind,
    /// The route that opens it: `page` or `page/section`.
    pub route: String,
    /// The matching text in the asked language, around the match.
    pub snippet: String,
    pub score: u32,
}

/// The index (see the module's docs).
#[derive(Clone, Debug, Default)]
pub struct Index {
    docs: Vec<Doc>,
    /// Each glossary term's folded English word with its Chinese word.
    bridges: Vec<(String, String)>,
}

/// Case folded and full-width forms made half-width, one char for one char
/// (so a match's place in the folded text is its place in the shown text).
pub fn fold(text: &str) -> String {
    text.chars().map(fold_char).collect()
}

fn fold_char(c: char) -> char {
    let c = match c {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        '\u{3000}' => ' ',
        _ => c,
    };
    c.to_lowercase().next().unwrap_or(c)
}

/// `text` as a reader sees it: `{placeholders}` and backticks dropped,
/// runs of spaces made one.
fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0u32;
    for c in text.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            '`' => {}
            _ if depth > 0 => {}
            c if c.is_whitespace() => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

fn slot(lang: Lang) -> usize {
    match lang {
        Lang::En => 0,
        Lang::Zh => 1,
    }
}

impl Index {
    /// The index of `pages` (each page's id and catalog, in the sidebar's
    /// order) and of the glossary, whose terms open `glossary_page`.
    pub fn build(pages: &[(&str, &Catalog)], glossary_page: &str) -> Self {
        let mut docs = Vec::new();
        for (page, catalog) in pages {
            for key in catalog.keys() {
                let (kind, section) = place(catalog, key);
                let texts = [catalog.get(Lang::En, key), catalog.get(Lang::Zh, key)];
                docs.push(Doc::new(page, section, kind, texts));
            }
        }
        for (id, term) in glossary().terms() {
            let texts = [
                format!("{} — {}", term.en, term.definition(Lang::En)),
                format!("{} — {}", term.zh, term.definition(Lang::Zh)),
            ];
            let section = Some(format!("term-{id}"));
            docs.push(Doc::new(
                glossary_page,
                section,
                Kind::Term,
                [&texts[0], &texts[1]],
            ));
        }
        let bridges = glossary()
            .terms()
            .map(|(_, term)| (fold(&term.en), fold(&term.zh)))
            .collect();
        Self { docs, bridges }
    }

    /// Pieces of text indexed.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The best `limit` hits for `query`, one per page section, shown in `lang`.
    pub fn search(&self, query: &str, lang: Lang, limit: usize) -> Vec<Hit> {
        let query = fold(&shown(query));
        let words: Vec<&str> = query.split_whitespace().collect();
        if words.is_empty() || limit == 0 {
            return Vec::new();
        }
        // An English term asked for also finds its Chinese word.
        let bridged: Vec<&str> = self
            .bridges
            .iter()
            .filter(|(en, _)| *en == query)
            .map(|(_, zh)| zh.as_str())
            .collect();
        let mut best: Vec<(u32, usize, usize)> = Vec::new(); // score, doc, match in
        for (i, doc) in self.docs.iter().enumerate() {
            let Some((score, found_in)) = doc.score(&words, &bridged, slot(lang)) else {
                continue;
            };
            best.push((score, i, found_in));
        }
        // Highest first; the sidebar's order among equals.
        best.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut hits: Vec<Hit> = Vec::new();
        for (score, i, found_in) in best {
            let doc = &self.docs[i];
            if hits
                .iter()
                .any(|h| h.page == doc.page && h.section == doc.section)
            {
                continue;
            }
            hits.push(doc.hit(score, &words, &bridged, found_in, slot(lang)));
            if hits.len() == limit {
                break;
            }
        }
        hits
    }
}

/// What a catalog key is on its page, and the section it opens at: `title`
/// the page, `<s>.heading` its section, `ex.<id>.title` an exercise, any
/// other `<s>.…` the body of section `s` where the page has one.
fn place(catalog: &Catalog, key: &str) -> (Kind, Option<String>) {
    if key == "title" {
        return (Kind::Title, None);
    }
    if key.starts_with("ex.") && key.ends_with(".title") {
        return (Kind::Exercise, Some("exercises".to_owned()));
    }
    let Some((prefix, rest)) = key.split_once('.') else {
        return (Kind::Body, None);
    };
    let has_section = catalog.contains(&format!("{prefix}.heading"));
    let section = has_section.then(|| prefix.to_owned());
    if rest == "heading" {
        (Kind::Heading, section)
    } else {
        (Kind::Body, section)
    }
}

impl Doc {
    fn new(page: &str, section: Option<String>, kind: Kind, texts: [&str; 2]) -> Self {
        let shown = texts.map(shown);
        let folded = [fold(&shown[0]), fold(&shown[1])];
        Self {
            page: page.to_owned(),
            section,
            kind,
            shown,
            folded,
        }
    }

    /// The score of the doc for `words` (all in one language's text) or one
    /// of `bridged` (in the Chinese), and the language it matched in; the
    /// asked language's text first.
    fn score(&self, words: &[&str], bridged: &[&str], asked: usize) -> Option<(u32, usize)> {
        let all_in = |text: &str| words.iter().all(|w| text.contains(w));
        let found_in = [asked, 1 - asked]
            .into_iter()
            .find(|&l| all_in(&self.folded[l]))
            .or_else(|| {
                bridged
                    .iter()
                    .any(|b| self.folded[1].contains(b))
                    .then_some(1)
            })?;
        let text = &self.folded[found_in];
        let at = text
            .find(words[0])
            .or_else(|| bridged.iter().find_map(|b| text.find(b)));
        let mut score = self.kind.weight();
        // At the start, or a whole word: a closer match.
        match at {
            Some(0) => score += 60,
            Some(at) if !text[..at].ends_with(|c: char| c.is_alphanumeric()) => score += 30,
            _ => {}
        }
        if found_in == asked {
            score += 20;
        }
        // A short text that is mostly the query: what was asked for.
        let share = (words.iter().map(|w| w.len()).sum::<usize>() * 40 / text.len().max(1)) as u32;
        Some((score + share.min(40), found_in))
    }

    fn hit(
        &self,
        score: u32,
        words: &[&str],
        bridged: &[&str],
        found_in: usize,
        asked: usize,
    ) -> Hit {
        let route = match &self.section {
            Some(s) => format!("{}/{s}", self.page),
            None => self.page.clone(),
        };
        // The match's place, in chars, where it was in the asked language.
        let at = (found_in == asked)
            .then(|| {
                let text = &self.folded[asked];
                words
                    .first()
                    .and_then(|w| text.find(w))
                    .or_else(|| bridged.iter().find_map(|b| text.find(b)))
                    .map(|byte| text[..byte].chars().count())
            })
            .flatten()
            .unwrap_or(0);
        Hit {
            page: self.page.clone(),
            section: self.section.clone(),
            kind: self.kind,
            route,
            snippet: snippet(&self.shown[asked], at),
            score,
        }
    }
}

/// Chars of context a snippet shows around a match.
const SNIPPET_CHARS: usize = 72;

/// Up to [`SNIPPET_CHARS`] chars of `text` around char `at`, with "…" where cut.
fn snippet(text: &str, at: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let start = at.saturating_sub(SNIPPET_CHARS / 4);
    let start = if chars.len() <= SNIPPET_CHARS {
        0
    } else {
        start.min(chars.len() - SNIPPET_CHARS)
    };
    let end = (start + SNIPPET_CHARS).min(chars.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests;
