//! English left in Chinese text: the check the CLI's and the app's tests
//! run over everything a Chinese learner sees. A *stray word* is a Latin
//! word of four or more letters that is not code, not an identifier the
//! caller names, and not in the reviewed allow-list
//! (`assets/latin_allowlist.txt`: the glossary's terms kept in English,
//! units, names of formats and tools — each group with its reason).
//!
//! Code is never prose: text in `backticks`; flags (`--batch`, `-h`);
//! `<PLACEHOLDERS>` and `[PLACEHOLDERS]`; tokens with a digit or one of `_ . / : = # @ ^ [ ]`
//! inside (`fp16`, `log_softmax`, `softmax/online`, `x.y`, `bias[i]`); and
//! a gloss, Latin words in full-width brackets right after a Chinese
//! character (`轮（epoch）`), which the glossary asks for on first use; a
//! call (`contiguous()`); and quoted sample text (“…”: a model's output,
//! the learner's prompt).

use std::collections::HashSet;
use std::sync::LazyLock;

static ALLOWED: LazyLock<HashSet<String>> = LazyLock::new(|| {
    include_str!("../../assets/latin_allowlist.txt")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_lowercase)
        .collect()
});

/// Whether the allow-list has `word` (any case).
pub fn allowed(word: &str) -> bool {
    ALLOWED.contains(&word.to_lowercase())
}

/// The stray English words in `text`, in order (each once). `identifiers`
/// are code the caller knows of (the values a flag takes, lesson ids…),
/// matched exactly (`digits` the data set, not `Digits`).
pub fn stray_words(text: &str, identifiers: &[&str]) -> Vec<String> {
    let known: HashSet<&str> = identifiers.iter().copied().collect();
    let ok = |word: &str| allowed(word) || known.contains(word);
    let mut stray: Vec<String> = Vec::new();
    let prose = prose(text);
    for (at, token) in tokens(&prose) {
        // A variable of a formula (`index = 2·s·tid`) is code too.
        let after = prose[at + token.len()..].trim_start_matches([' ', '\'']);
        let call = prose[at + token.len()..].starts_with('(');
        if is_code(token) || after.starts_with('=') || call {
            continue;
        }
        let word = token.trim_matches(|c: char| matches!(c, '-' | '\''));
        if ok(word) {
            continue;
        }
        // Hyphenated words one part at a time (`row-per-subgroup` is known
        // whole; `half-precision` is two words).
        for part in word.split(['-', '\'']) {
            let letters = part.chars().filter(char::is_ascii_alphabetic).count();
            if letters >= 4 && !ok(part) && !stray.iter().any(|s| s == part) {
                stray.push(part.to_owned());
            }
        }
    }
    stray
}

/// `text` without its code spans and glosses (each replaced by a space).
fn prose(text: &str) -> String {
    let is_cjk = |c: char| matches!(c, '\u{3400}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}');
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut last = ' ';
    while let Some(c) = chars.next() {
        if c == '`' || c == '“' {
            // To the closing backtick or quote (or the end).
            let close = if c == '`' { '`' } else { '”' };
            for d in chars.by_ref() {
                if d == close {
                    break;
                }
            }
            out.push(' ');
            last = ' ';
            continue;
        }
        if c == '（' && (is_cjk(last) || last == ' ') {
            // A gloss: Latin words in full-width brackets after Chinese, maybe
            // beside Chinese words (次正规数，subnormal), each part one or the other.
            let inner: String = chars.clone().take_while(|&d| d != '）').collect();
            let closed = chars.clone().nth(inner.chars().count()) == Some('）');
            let latin = |p: &str| {
                p.chars()
                    .all(|d| d.is_ascii_alphabetic() || matches!(d, ' ' | '-' | '\''))
            };
            let gloss = closed
                && inner.chars().any(|d| d.is_ascii_alphabetic())
                && inner
                    .split(['，', '、'])
                    .all(|p| latin(p.trim()) || !p.chars().any(|d| d.is_ascii_alphabetic()));
            if gloss {
                for _ in 0..=inner.chars().count() {
                    chars.next();
                }
                out.push(' ');
                last = '）';
                continue;
            }
        }
        out.push(c);
        last = c;
    }
    out
}

/// Runs of ASCII letters, digits and the characters identifiers are made
/// of, each with where it starts in `text` (sentence punctuation trimmed).
fn tokens(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let part = |c: char| c.is_ascii_alphanumeric() || "_-./:=#@^[]<>'".contains(c);
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (start, part(c)) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    out.into_iter().filter_map(|(at, t)| {
        // `[VALUE]`, `[OPTIONS]`: a placeholder of a usage line.
        let inner = t.strip_prefix('[').and_then(|t| t.strip_suffix(']'));
        if inner.is_some_and(|i| !i.is_empty() && !i.contains(|c: char| c.is_ascii_lowercase())) {
            return None;
        }
        let trimmed = t.trim_start_matches(['\'', '[']);
        let at = at + (t.len() - trimmed.len());
        let t = trimmed.trim_end_matches(['.', ':', '\'', ']']);
        (!t.is_empty()).then_some((at, t))
    })
}

/// A flag, a placeholder, or an identifier (a digit or a code character inside).
fn is_code(token: &str) -> bool {
    let flag = token.starts_with('-')
        && token
            .trim_start_matches('-')
            .starts_with(|c: char| c.is_ascii_alphabetic());
    // camelCase and inner capitals (blockDim, GradScaler): an API's name.
    let inner_capital = token.chars().skip(1).any(|c| c.is_ascii_uppercase())
        && token.chars().any(|c| c.is_ascii_lowercase());
    flag || inner_capital
        || token.starts_with('<')
        || token
            .chars()
            .any(|c| c.is_ascii_digit() || "_./:=#@^[]<>".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_prose_is_stray_and_code_is_not() {
        assert_eq!(
            stray_words("精度策略：compute fp16, grads fp16", &[]),
            ["compute", "grads"]
        );
        // Code, units, glossary terms, glosses and known identifiers pass.
        let fine = "用 `cargo test` 跑 --batch <BATCH>：fp16、log_softmax、softmax/online、\
                    6.1e-5、x.y，轮（epoch）、在线 softmax、26.2 MFLOP、3.8 nats、GEMM；row-per-subgroup";
        assert!(
            stray_words(fine, &["row-per-subgroup"]).is_empty(),
            "{:?}",
            stray_words(fine, &["row-per-subgroup"])
        );
        // A gloss only right after Chinese, and only of Latin words.
        assert_eq!(stray_words("dropout (fixed mask)", &[]), ["fixed", "mask"]);
        assert_eq!(stray_words("计算（fixed mask 2）", &[]), ["fixed", "mask"]);
        // Hyphenated words part by part; sentence punctuation is not code.
        assert_eq!(
            stray_words("half-precision. 'Quoted'", &[]),
            ["half", "precision", "Quoted"]
        );
        assert_eq!(stray_words("WRONG WRONG", &[]), ["WRONG"]);
        // Usage placeholders are code; a bracketed word in prose is not.
        assert!(stray_words("用法：[OPTIONS] [VALUE]", &[]).is_empty());
        assert_eq!(stray_words("见 [notes]", &[]), ["notes"]);
        // A formula's variable is code.
        assert!(stray_words("其中 index = 2·s·tid，v' = -0.175", &[]).is_empty());
        // Merged glosses, API names with inner capitals.
        assert!(
            stray_words(
                "非规格化数（次正规数，subnormal）、threadIdx、GradScaler",
                &[]
            )
            .is_empty()
        );
        assert_eq!(
            stray_words("模型（两层，small model）", &[]),
            Vec::<String>::new()
        );
        assert_eq!(stray_words("（混 mixed 中文）", &[]), ["mixed"]);
        // Calls and quoted samples are not prose.
        assert!(stray_words("先调用 contiguous()，续写：“the quick brown”", &[]).is_empty());
        // Three letters or fewer are not asked about.
        assert!(stray_words("the run, yes/no, NaN, all", &[]).is_empty());
        assert!(allowed("softmax") && allowed("Softmax") && !allowed("compute"));
    }
}
