use super::*;
use crate::text::Catalog;

const GLOSSARY_RON: &str = include_str!("../../../assets/glossary.ron");

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}')
}

/// Every prose catalog in `assets/` (not the glossary itself): its name
/// (`lessons/<id>.ron` for a lesson's) and its raw text.
fn catalog_files() -> Vec<(String, String)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets");
    let mut files = Vec::new();
    for dir in ["", "lessons/"] {
        for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".ron") && name != "glossary.ron" {
                files.push((
                    format!("{dir}{name}"),
                    std::fs::read_to_string(&path).unwrap(),
                ));
            }
        }
    }
    assert!(files.len() >= 15, "{} catalogs found", files.len());
    files.sort();
    files
}

/// The raw (unexpanded) entries of a catalog file.
fn raw_entries(text: &str) -> BTreeMap<String, Entry> {
    ron::from_str(text).unwrap()
}

/// A unit or a count in brackets after a label ("梯度大小（MiB）："), not a gloss.
fn is_unit(inside: &str) -> bool {
    const UNITS: [&str; 14] = [
        "ms", "µs", "ns", "s", "B", "KB", "KiB", "MB", "MiB", "GB", "GiB", "GB/s", "GFLOP/s",
        "TFLOP/s",
    ];
    UNITS.contains(&inside.trim())
}

/// The English glosses in a Chinese text: in a bracket right after a Chinese
/// character, each part (between full-width commas) that holds Latin words
/// and nothing else (`轮（epoch）`, `就近舍入（偶数优先，RNE）`), units aside.
fn glosses(zh: &str) -> Vec<String> {
    let chars: Vec<char> = zh.chars().collect();
    let mut found = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        if !(c == '（' || c == '(') || i == 0 || !is_cjk(chars[i - 1]) {
            continue;
        }
        let close = if c == '（' { '）' } else { ')' };
        let Some(len) = chars[i + 1..].iter().position(|&d| d == close) else {
            continue;
        };
        let inside: String = chars[i + 1..i + 1 + len].iter().collect();
        for part in inside.split('，') {
            // Words, not a flag (`--workers`) or a formula.
            let latin_words = part
                .trim_start()
                .starts_with(|c: char| c.is_ascii_alphabetic())
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphabetic() || " -'.,&".contains(c))
                && part.chars().filter(char::is_ascii_alphabetic).count() >= 2;
            if latin_words && !is_unit(part) {
                found.push(part.trim().to_owned());
            }
        }
    }
    found
}

/// A control's label, where no gloss belongs: a key ending `label` or
/// `button`, an English text ending with a colon (the house writes a form
/// label "Learning rate:"), or a short Chinese text (≤ 16 characters outside
/// brackets) without sentence punctuation — a button, an option, a column
/// header, a heading, a legend, a name in a list.
fn is_label(key: &str, entry: &Entry) -> bool {
    let last = key.rsplit('.').next().unwrap_or(key);
    let mut depth = 0_i32;
    let outside_brackets = entry
        .zh
        .chars()
        .filter(|&c| {
            depth += i32::from(c == '（') - i32::from(c == '）');
            depth == 0 && c != '）'
        })
        .count();
    last.ends_with("label")
        || last.ends_with("button")
        || entry.en.trim_end().ends_with(':')
        || (outside_brackets <= 16 && !entry.zh.contains(['。', '，', '；', '！', '？']))
}

fn small_glossary() -> Glossary {
    Glossary::parse(
        r#"{
            "epoch": (en: "epoch", zh: "轮", def: (en: "a pass", zh: "一遍")),
            "subnormal": (en: "subnormal", zh: "非规格化数（次正规数）", def: (en: "tiny", zh: "很小")),
            "rne": (en: "round to nearest, ties to even", zh: "就近舍入（偶数优先）", gloss: "RNE", def: (en: "r", zh: "舍")),
        }"#,
    )
    .unwrap()
}

#[test]
fn tokens_expand_to_the_word_and_in_chinese_its_gloss() {
    let g = small_glossary();
    for (text, lang, expanded) in [
        ("one [[epoch]]", Lang::En, "one epoch"),
        ("一[[epoch]]", Lang::Zh, "一轮（epoch）"),
        ("two [[epoch|epochs]]", Lang::En, "two epochs"),
        ("[[epoch|轮数]]：", Lang::Zh, "轮数（epoch）："),
        // A word ending in a bracket takes the gloss inside it.
        (
            "[[subnormal]]",
            Lang::Zh,
            "非规格化数（次正规数，subnormal）",
        ),
        ("按[[rne]]舍入", Lang::Zh, "按就近舍入（偶数优先，RNE）舍入"),
        ("[[rne]]", Lang::En, "round to nearest, ties to even"),
    ] {
        assert_eq!(g.expand(text, lang).unwrap(), expanded, "{text}");
    }
    assert_eq!(g.expand("plain {x}", Lang::Zh).unwrap(), "plain {x}");
    assert_eq!(
        g.expand("[[nope]]", Lang::En),
        Err(TokenError::Unknown("nope".into()))
    );
    assert_eq!(g.expand("[[epoch", Lang::En), Err(TokenError::Unclosed));
    assert_eq!(tokens("[[epoch]] and [[rne|x]], [[open"), ["epoch", "rne"]);
}

#[test]
fn a_catalog_with_an_unknown_term_does_not_parse() {
    let err = Catalog::parse(r#"{"k": (en: "x", zh: "[[no-such-term]]")}"#).unwrap_err();
    assert!(err.to_string().contains("no-such-term"), "{err}");
}

#[test]
fn the_glossary_parses_and_every_term_is_whole() {
    let parsed = Glossary::parse(GLOSSARY_RON).unwrap();
    assert!(parsed.terms().count() >= 30);
    for (id, term) in parsed.terms() {
        assert!(
            id.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "term id `{id}`: lower-case ASCII, digits and _ only"
        );
        for text in [&term.en, &term.zh, &term.def.en, &term.def.zh] {
            assert!(!text.trim().is_empty(), "term `{id}` lacks a text");
        }
        assert!(
            term.def.zh.chars().any(is_cjk),
            "term `{id}`: its Chinese definition is not Chinese"
        );
        assert!(
            !term.def.en.chars().any(is_cjk),
            "term `{id}`: its English definition holds Chinese"
        );
    }
    assert_eq!(parsed.terms().count(), glossary().terms().count());
}

#[test]
fn every_token_names_a_term_and_every_term_is_used() {
    let glossary = glossary();
    let mut used = std::collections::BTreeSet::new();
    let mut problems = Vec::new();
    for (file, text) in catalog_files() {
        if let Err(err) = Catalog::parse(&text) {
            problems.push(format!("{file}: {err}"));
        }
        for (key, entry) in raw_entries(&text) {
            for id in tokens(&entry.en).into_iter().chain(tokens(&entry.zh)) {
                if glossary.get(id).is_none() {
                    problems.push(format!("{file}/{key}: [[{id}]] is no term"));
                }
                used.insert(id.to_owned());
            }
        }
    }
    for (id, _) in glossary.terms() {
        if !used.contains(id) {
            problems.push(format!("term `{id}` is used by no catalog"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_lesson_glosses_a_term_once() {
    let mut problems = Vec::new();
    for (file, text) in catalog_files() {
        if !file.starts_with("lessons/") {
            continue;
        }
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for (key, entry) in raw_entries(&text) {
            for id in tokens(&entry.zh) {
                if let Some(first) = seen.insert(id.to_owned(), key.clone()) {
                    problems.push(format!("{file}: [[{id}]] in both `{first}` and `{key}`"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn glosses_come_from_the_glossary_and_stay_out_of_labels() {
    let mut problems = Vec::new();
    for (file, text) in catalog_files() {
        let catalog = Catalog::parse(&text).unwrap();
        for (key, raw) in raw_entries(&text) {
            // Written by hand, a gloss would say the term a second time.
            for gloss in glosses(&raw.zh) {
                problems.push(format!(
                    "{file}/{key}: the gloss ({gloss}) is written by hand: use a [[term]] token"
                ));
            }
            let entry = Entry {
                en: catalog.get(Lang::En, &key).to_owned(),
                zh: catalog.get(Lang::Zh, &key).to_owned(),
            };
            if is_label(&key, &entry) && !glosses(&entry.zh).is_empty() {
                problems.push(format!(
                    "{file}/{key}: a control's label carries a gloss: `{}`",
                    entry.zh
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn glosses_are_found_and_units_are_not_glosses() {
    assert_eq!(glosses("学习率（learning rate）："), ["learning rate"]);
    assert_eq!(glosses("就近舍入（偶数优先，RNE）"), ["RNE"]);
    assert!(glosses("梯度大小（MiB）：").is_empty());
    assert!(glosses("E4M3（OCP FN）").is_empty());
    assert!(glosses("数据并行训练（--workers）").is_empty());
    assert!(glosses("每张卡（NVIDIA 上为 32 字节）").is_empty());
    let label = Entry {
        en: "Learning rate:".into(),
        zh: "学习率：".into(),
    };
    assert!(is_label("train.lr", &label));
    let prose = Entry {
        en: "A pass over the data.".into(),
        zh: "把整个训练集过一遍，叫作一轮。".into(),
    };
    assert!(!is_label("intro", &prose));
    let option = Entry {
        en: "sequential addressing".into(),
        zh: "顺序寻址（sequential addressing）".into(),
    };
    assert!(is_label("ex.b", &option));
}
