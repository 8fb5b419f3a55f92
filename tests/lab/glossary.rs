//! The glossary page: a filter in either language narrows the terms, and a
//! term's lesson link opens that lesson (at the section naming the term).

use egui::accesskit::Role;
use egui_kittest::kittest::Queryable as _;

use crate::common::{MemoryStorage, app_harness, shows};

/// Clicks the first link reading `title` (the sidebar has a button of the
/// same name, which must not stand in for it).
fn click_link(harness: &mut egui_kittest::Harness<'_, dlsys_lab::DlsysApp>, title: &str) {
    let link = harness
        .query_all_by_role_and_label(Role::Link, title)
        .next()
        .unwrap_or_else(|| panic!("no link `{title}`"));
    link.scroll_to_me();
    harness.run();
    harness
        .query_all_by_role_and_label(Role::Link, title)
        .next()
        .unwrap_or_else(|| panic!("no link `{title}`"))
        .click();
    harness.run_steps(2);
}

#[test]
fn the_filter_narrows_the_terms_and_a_link_opens_the_lesson() {
    let storage = MemoryStorage::default();
    let (mut harness, _) = app_harness("glossary", &storage, Some("glossary"));
    harness.run();
    harness.get_by_label("Filter:").focus();
    harness.run();
    harness.get_by_label("Filter:").type_text("分数矩阵");
    harness.run();
    assert!(
        harness.query_by_label_contains("1 of ").is_some(),
        "one term left"
    );
    shows(&harness, "score matrix");
    // Its only lesson: the attention kernels.
    click_link(&mut harness, "Attention kernels");
    harness.run();
    assert_eq!(harness.state().current_lesson(), "attention_kernels");

    // A term first named inside a section: its link's route is
    // `lesson/section`, and it opens the lesson.
    let all = dlsys_lessons::glossary::uses(&dlsys_lessons::listed());
    let (id, u) = all
        .iter()
        .find_map(|(id, found)| {
            found
                .iter()
                .find(|u| u.route.contains('/'))
                .map(|u| (id, u))
        })
        .expect("a term named inside a section");
    let term = dlsys_core::glossary::glossary().get(id).expect("a term");
    let (mut harness, _) = app_harness("glossary", &storage, Some("glossary"));
    harness.run();
    harness.get_by_label("Filter:").focus();
    harness.run();
    harness.get_by_label("Filter:").type_text(&term.en);
    harness.run();
    click_link(&mut harness, &u.titles.0);
    harness.run();
    assert_eq!(harness.state().current_lesson(), u.lesson);
}
