use super::*;

fn catalog(ron_text: &str) -> &'static Catalog {
    Box::leak(Box::new(
        Catalog::parse(ron_text).unwrap_or_else(|e| panic!("{e}")),
    ))
}

impl Index {
    /// Every hit, not a page's worth.
    fn search_all(&self, query: &str, lang: Lang, _limit: usize) -> Vec<Hit> {
        self.search(query, lang, usize::MAX)
    }
}

fn index() -> Index {
    let memory = catalog(
        r#"{
        "title": (en: "Memory & compute", zh: "显存与算力"),
        "summary": (en: "Where the memory of training goes", zh: "训练的显存都去哪了"),
        "act.heading": (en: "Activations", zh: "激活值"),
        "act.body": (en: "Activation memory grows with the batch; {n} layers", zh: "激活值占用的显存随批大小增长；共 {n} 层"),
        "ex.peak.title": (en: "Peak activation bytes", zh: "激活值峰值字节数"),
        "table.solved": (en: "Done {solved}", zh: "完成 {solved}"),
    }"#,
    );
    let floats = catalog(
        r#"{
        "title": (en: "Floating-point formats", zh: "浮点格式"),
        "sub.heading": (en: "Subnormals", zh: "非规格化数"),
        "sub.text": (en: "Below the smallest normal, GEMM or not", zh: "比最小的规格化数还小的数"),
    }"#,
    );
    Index::build(&[("memory", memory), ("float", floats)], "glossary")
}

/// The routes of the hits on the test's pages (the real glossary's terms,
/// always indexed, left out).
fn routes(hits: &[Hit]) -> Vec<&str> {
    hits.iter()
        .map(|h| h.route.as_str())
        .filter(|r| !r.starts_with("glossary/"))
        .collect()
}

#[test]
fn a_title_outranks_a_heading_outranks_the_body_one_hit_per_section() {
    let index = index();
    let hits = index.search_all("memory", Lang::En, 10);
    assert_eq!(hits.first().map(|h| h.kind), Some(Kind::Title));
    assert_eq!(routes(&hits), ["memory", "memory/act"]);
    // The heading and the body of one section: one hit, the heading's.
    let hits = index.search_all("activation", Lang::En, 10);
    assert_eq!(hits[0].kind, Kind::Heading);
    assert_eq!(routes(&hits), ["memory/act", "memory/exercises"]);
    // Every word must occur, in any order.
    assert_eq!(
        routes(&index.search_all("batch activation", Lang::En, 10)),
        ["memory/act"]
    );
    assert!(routes(&index.search_all("batch floating", Lang::En, 10)).is_empty());
}

#[test]
fn chinese_matches_inside_a_longer_word_and_shows_the_asked_language() {
    let index = index();
    // Two characters inside 非规格化数.
    let hits = index.search_all("规格", Lang::Zh, 10);
    assert_eq!(routes(&hits), ["float/sub"]);
    assert_eq!(hits[0].snippet, "非规格化数");
    // Found in English, shown in Chinese; and the other way round.
    assert_eq!(
        index.search_all("subnormal", Lang::Zh, 10)[0].snippet,
        "非规格化数"
    );
    assert_eq!(
        index.search_all("激活值", Lang::En, 1)[0].snippet,
        "Activations"
    );
}

#[test]
fn case_full_width_placeholders_and_empty_queries() {
    let index = index();
    assert_eq!(
        routes(&index.search_all("ＧＥＭＭ", Lang::En, 10)),
        ["float/sub"]
    );
    assert_eq!(
        routes(&index.search_all("gemm", Lang::En, 10)),
        ["float/sub"]
    );
    // A placeholder is not text: `{solved}` is not found by "solved".
    assert!(routes(&index.search_all("solved", Lang::En, 10)).is_empty());
    assert!(routes(&index.search_all("{n}", Lang::En, 10)).is_empty());
    assert!(routes(&index.search_all("   ", Lang::En, 10)).is_empty());
    assert_eq!(index.search("a", Lang::En, 2).len(), 2);
    assert!(index.search("a", Lang::En, 0).is_empty());
}

#[test]
fn an_english_term_finds_its_chinese_word_and_the_glossary_entry() {
    // A term whose Chinese word holds no English.
    let (id, term) = glossary()
        .terms()
        .find(|(_, t)| t.zh.chars().all(|c| !c.is_ascii_alphabetic()) && t.zh.chars().count() >= 2)
        .expect("a term written in Chinese");
    let page = catalog(&format!(
        r#"{{ "title": (en: "Page", zh: "页面"), "s.heading": (en: "Part", zh: "部分"), "s.text": (en: "nothing here", zh: "这里讲{}。") }}"#,
        term.zh
    ));
    let index = Index::build(&[("page", page)], "glossary");
    let hits = index.search_all(&term.en, Lang::Zh, 10);
    let found: Vec<&str> = hits.iter().map(|h| h.route.as_str()).collect();
    assert!(found.contains(&"page/s"), "{found:?}");
    assert!(
        found.contains(&format!("glossary/term-{id}").as_str()),
        "{found:?}"
    );
}

#[test]
fn a_snippet_is_cut_around_the_match() {
    let long = format!("{}needle{}", "word ".repeat(40), " tail".repeat(40));
    let cut = snippet(&long, long.find("needle").unwrap_or(0));
    assert!(
        cut.starts_with('…') && cut.ends_with('…') && cut.contains("needle"),
        "{cut}"
    );
    assert!(cut.chars().count() <= SNIPPET_CHARS + 2);
    assert_eq!(shown("a  {x}`b`\n c"), "a b c");
    assert_eq!(fold("ＡbＣ　Ä"), "abc ä");
}
