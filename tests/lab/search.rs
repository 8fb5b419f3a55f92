//! The search box: Ctrl+K, a query in either language (a Chinese pair of
//! characters inside a longer word too), ↓ and Enter open the page at the
//! hit's section; Esc closes the hits and opens nothing.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use dlsys_core::search::Hit;
use dlsys_core::text::Lang;
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;

use crate::common::{app_harness_in, shows};

type App<'a> = Harness<'a, dlsys_lab::DlsysApp>;

/// The hits the box should show: the core's index over the same catalogs.
fn hits(query: &str, lang: Lang) -> Vec<Hit> {
    dlsys_lessons::search_index(&dlsys_lessons::searchable()).search(query, lang, 8)
}

/// Ctrl+K, then `query` typed into the box.
fn type_query(harness: &mut App<'_>, query: &str, label: &str) {
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::K);
    harness.run();
    let field = harness.get_by_role_and_label(Role::TextInput, label);
    assert!(field.is_focused(), "Ctrl+K puts the cursor in the box");
    field.type_text(query);
    harness.run();
}

/// Whether the heading of `hit`'s section lies inside the window.
fn section_in_view(harness: &App<'_>, hit: &Hit, lang: Lang) -> bool {
    let Some(section) = hit.section.as_deref() else {
        return true;
    };
    let catalog = dlsys_lessons::catalogs()
        .into_iter()
        .find(|(id, _)| *id == hit.page)
        .map(|(_, c)| c)
        .expect("the hit's page");
    let key = format!("{section}.heading");
    let heading = catalog.get(lang, &key);
    let window = harness.ctx.content_rect();
    harness
        .query_all_by_label(heading)
        .any(|node| window.contains_rect(node.rect()))
}

#[test]
fn a_search_in_either_language_opens_the_page_at_the_section() {
    for (lang, query, label, route) in [
        (Lang::En, "memory planning", "Search", "frameworks/plan"),
        // 分配 inside 缓存分配器, the heading of the allocator's section.
        (Lang::Zh, "分配", "搜索", "frameworks/allocator"),
    ] {
        // The first hit that opens a lesson's section, chosen with ↓.
        let expected = hits(query, lang);
        let at = expected
            .iter()
            .position(|h| {
                h.section
                    .as_deref()
                    .is_some_and(|s| !s.starts_with("term-") && s != "exercises")
            })
            .unwrap_or_else(|| panic!("{query}: no hit opens a section: {expected:?}"));
        let first = expected[at].clone();
        assert_eq!(first.route, route, "{query}");
        let (mut harness, _) = app_harness_in("search", lang, egui::vec2(1100.0, 760.0));
        harness.run();
        type_query(&mut harness, query, label);
        assert!(
            harness
                .query_all_by_label_contains(&first.snippet)
                .next()
                .is_some(),
            "{first:?}"
        );
        for _ in 0..at {
            harness.key_press(egui::Key::ArrowDown);
            harness.run();
        }
        harness.key_press(egui::Key::Enter);
        harness.run();
        assert_eq!(harness.state().current_lesson(), first.page);
        harness.run();
        assert!(
            section_in_view(&harness, &first, lang),
            "{query}: {first:?} not in view"
        );
    }
}

#[test]
fn arrows_choose_a_hit_and_escape_opens_nothing() {
    let query = "softmax";
    let expected = hits(query, Lang::En);
    assert!(expected.len() >= 2);
    let (mut harness, _) = app_harness_in("search_keys", Lang::En, egui::vec2(1100.0, 760.0));
    harness.run();
    let start = harness.state().current_lesson().to_owned();
    type_query(&mut harness, query, "Search");
    harness.key_press(egui::Key::Escape);
    harness.run();
    assert_eq!(harness.state().current_lesson(), start);
    // A hit's place reads "page › section": none is left on screen.
    assert!(expected.iter().any(|h| h.section.is_some()));
    assert!(
        harness.query_by_label_contains(" › ").is_none(),
        "Esc closes the hits"
    );
    type_query(&mut harness, "", "Search");
    harness.key_press(egui::Key::ArrowDown);
    harness.run();
    harness.key_press(egui::Key::Enter);
    harness.run();
    assert_eq!(harness.state().current_lesson(), expected[1].page);
}

#[test]
fn a_term_the_glossary_filter_hides_clears_the_filter_when_asked_for() {
    let query = "log-sum-exp";
    let expected = hits(query, Lang::En);
    let at = expected
        .iter()
        .position(|h| h.section.as_deref().is_some_and(|s| s.starts_with("term-")))
        .unwrap_or_else(|| panic!("{query}: no glossary hit: {expected:?}"));
    let id = expected[at]
        .section
        .as_deref()
        .and_then(|s| s.strip_prefix("term-"))
        .unwrap_or_default();
    let word = dlsys_core::glossary::glossary()
        .get(id)
        .expect("the hit's term")
        .word(Lang::En)
        .to_owned();
    let (mut harness, _) = app_harness_in("search_term", Lang::En, egui::vec2(1100.0, 760.0));
    harness.run();
    harness.state_mut().open_route("glossary");
    harness.run();
    harness.get_by_label("Filter:").focus();
    harness.run();
    // A filter that leaves one other term.
    harness.get_by_label("Filter:").type_text("分数矩阵");
    harness.run();
    shows(&harness, "1 of ");
    type_query(&mut harness, query, "Search");
    for _ in 0..at {
        harness.key_press(egui::Key::ArrowDown);
        harness.run();
    }
    harness.key_press(egui::Key::Enter);
    harness.run();
    harness.run();
    assert_eq!(harness.state().current_lesson(), "glossary");
    let window = harness.ctx.content_rect();
    assert!(
        harness
            .query_all_by_label(&word)
            .any(|n| window.contains_rect(n.rect())),
        "{word} not in view"
    );
    assert!(
        harness.query_by_label_contains("1 of ").is_none(),
        "the filter is cleared"
    );
}

/// The hits under the box, in both languages at 800 and 1400 px, and the
/// Progress and Glossary pages in English at 1400.
#[test]
fn the_hits_and_the_study_pages_fit_in_both_languages_and_widths() {
    let mut failures = Vec::new();
    for (lang, query, label) in [(Lang::En, "memory", "Search"), (Lang::Zh, "显存", "搜索")] {
        for width in [800.0, 1400.0] {
            let (mut harness, gpu) = app_harness_in("search_shots", lang, egui::vec2(width, 700.0));
            harness.run();
            type_query(&mut harness, query, label);
            assert!(
                harness.query_all_by_label_contains(" › ").next().is_some(),
                "{query}: hits shown"
            );
            let name = format!("search_{}_{width}", lang.id());
            if gpu && let Err(err) = harness.try_snapshot(&name) {
                failures.push(err.to_string());
            }
        }
    }
    // The study pages in English at 1400 px, which the Chinese pages' walk
    // (Chinese at 800 and 1400, English at 800) leaves out.
    for (page, title) in [("progress", "Progress"), ("glossary", "Glossary")] {
        let (mut harness, gpu) = app_harness_in("study_1400", Lang::En, egui::vec2(1400.0, 900.0));
        harness.run();
        crate::common::click_visible(&mut harness, title);
        assert_eq!(harness.state().current_lesson(), page);
        let name = format!("en_1400_{page}");
        if gpu && let Err(err) = crate::common::snapshot_lesson(&mut harness, Lang::En, page, &name)
        {
            failures.push(err);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
