//! The whole app under egui_kittest: every lesson in Chinese at 1400 and
//! 800 px wide and in English at 800 px, snapshot-tested, with no text cut
//! off by the window and no table row that loses its label when scrolled.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use dlsys_core::text::Lang;
use egui::accesskit::Role;

/// Text and controls drawn past the window's right edge: cut off for a
/// sighted reader (a screen reader would still read them). egui gives its
/// panels no bounds in the AccessKit tree, so the window is the clip.
fn text_past_the_window(
    harness: &egui_kittest::Harness<'_, dlsys_lab::DlsysApp>,
    width: f32,
) -> Vec<String> {
    use egui_kittest::kittest::NodeT as _;
    let mut cut = Vec::new();
    for node in harness.root().children_recursive() {
        let data = node.accesskit_node();
        let text_like = matches!(
            data.role(),
            Role::Label | Role::Button | Role::CheckBox | Role::RadioButton | Role::ComboBox
        );
        // Content that scrolls sideways inside itself is reachable.
        let scrolls = std::iter::successors(data.parent(), |p| p.parent())
            .any(|p| p.role() == Role::ScrollView);
        if let (true, false, Some(bounds)) = (text_like, scrolls, data.bounding_box())
            && bounds.x1 > f64::from(width) + 1.0
        {
            let text = data.label().or_else(|| data.value()).unwrap_or_default();
            cut.push(format!(
                "{:?} `{}` spans x = {:.0}..{:.0}",
                data.role(),
                text.chars().take(48).collect::<String>(),
                bounds.x0,
                bounds.x1
            ));
        }
    }
    cut
}

/// Rows of a table that scrolls sideways past the window with no label left
/// in place: scrolled, such a row loses what it is about. A row's label is
/// text outside the scroll view, to its left, level with the row.
fn rows_without_a_pinned_label(
    harness: &egui_kittest::Harness<'_, dlsys_lab::DlsysApp>,
    width: f32,
) -> Vec<String> {
    use egui_kittest::kittest::NodeT as _;
    let text_like = |role| {
        matches!(
            role,
            Role::Label | Role::Button | Role::CheckBox | Role::RadioButton | Role::ComboBox
        )
    };
    let nodes: Vec<_> = harness
        .root()
        .children_recursive()
        .map(|n| n.accesskit_node())
        .collect();
    let mut missing = Vec::new();
    for view in nodes.iter().filter(|n| n.role() == Role::ScrollView) {
        let inside: Vec<_> = nodes
            .iter()
            .filter(|n| text_like(n.role()))
            .filter(|n| {
                std::iter::successors(n.parent(), |p| p.parent()).any(|p| p.id() == view.id())
            })
            .filter_map(|n| n.bounding_box().map(|b| (n, b)))
            .collect();
        if !inside.iter().any(|(_, b)| b.x1 > f64::from(width) + 1.0) {
            continue;
        }
        let left = inside
            .iter()
            .map(|(_, b)| b.x0)
            .fold(f64::INFINITY, f64::min);
        let labels: Vec<_> = nodes
            .iter()
            .filter(|n| text_like(n.role()))
            .filter(|n| {
                !std::iter::successors(n.parent(), |p| p.parent()).any(|p| p.id() == view.id())
            })
            .filter_map(|n| n.bounding_box())
            .filter(|b| b.x1 <= left + 1.0)
            .collect();
        for (node, b) in &inside {
            let level = |l: &egui::accesskit::Rect| l.y0 < b.y1 - 1.0 && b.y0 < l.y1 - 1.0;
            if !labels.iter().any(level) {
                let text = node.label().or_else(|| node.value()).unwrap_or_default();
                missing.push(format!(
                    "`{}` at y = {:.0} scrolls with no label beside it",
                    text.chars().take(40).collect::<String>(),
                    b.y0
                ));
                break;
            }
        }
    }
    missing
}

#[test]
fn every_lesson_fits_in_chinese_at_1400_and_800_px_and_in_english_at_800() {
    let mut failures = Vec::new();
    for (lang, width) in [(Lang::Zh, 1400.0), (Lang::Zh, 800.0), (Lang::En, 800.0)] {
        let (mut harness, gpu) =
            crate::common::app_harness_in("every_lesson_fits", lang, egui::vec2(width, 900.0));
        harness.run();
        let code = lang.id();
        crate::common::visit_every_lesson(&mut harness, lang, |harness, id| {
            for cut in text_past_the_window(harness, width)
                .into_iter()
                .chain(rows_without_a_pinned_label(harness, width))
            {
                failures.push(format!("{id} at {width} px, {code}: {cut}"));
            }
            let name = format!("{code}_{width}_{id}");
            if gpu && let Err(err) = crate::common::snapshot_lesson(harness, lang, id, &name) {
                failures.push(err);
            }
        });
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every word of the kernels' ids (`reduce/divergent`): identifiers the
/// pages show in tables and legends.
fn kernel_id_words() -> Vec<String> {
    dlsys_core::kernels::Kernel::all()
        .into_iter()
        .flat_map(|k| {
            k.id()
                .split(['/', '-'])
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The words of the catalogs' `code` spans (commands, identifiers): the
/// page draws them in the monospace font without their backticks, so the
/// page's text no longer marks them as code.
fn code_span_words() -> Vec<String> {
    let mut words = Vec::new();
    for (_, catalog) in dlsys_lessons::catalogs() {
        for (_, _, text) in catalog.texts() {
            for span in text.split('`').skip(1).step_by(2) {
                words.extend(
                    span.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                        .filter(|w| !w.is_empty())
                        .map(str::to_owned),
                );
            }
        }
    }
    words
}

/// Labels egui itself gives its widgets (not ours to translate).
const EGUI_OWN: &[&str] = &["Resize panel"];

/// Every lesson in Chinese, after its main action has run (its self-test
/// action, at its small size): no English prose anywhere on the page —
/// labels, buttons, plots' legends, verdicts, errors. What is shown comes
/// from the AccessKit tree, as a screen reader reads it; text the learner
/// typed (text inputs) is theirs.
#[test]
fn no_english_is_left_on_any_chinese_page_after_its_main_action() {
    use egui_kittest::kittest::NodeT as _;
    let mut ids = kernel_id_words();
    ids.extend(code_span_words());
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let (mut harness, _) =
        crate::common::app_harness_in("no_english", Lang::Zh, egui::vec2(1400.0, 900.0));
    harness.run();
    // The glossary page shows each term and its definition in both
    // languages by design: there the English ones are its data.
    let english: std::collections::BTreeSet<String> = dlsys_core::glossary::glossary()
        .terms()
        .flat_map(|(_, term)| [term.en.clone(), term.def.en.clone()])
        .collect();
    let mut found = std::collections::BTreeSet::new();
    crate::common::visit_every_lesson(&mut harness, Lang::Zh, |harness, id| {
        if harness.state_mut().start_self_test_action(id) {
            crate::common::run_while(harness, 4, 180, id, |h| h.state().lesson_busy(id));
            harness.run();
        }
        for node in harness.root().children_recursive() {
            let data = node.accesskit_node();
            let typed = |role| matches!(role, Role::TextInput | Role::MultilineTextInput);
            if typed(data.role())
                || std::iter::successors(data.parent(), |p| p.parent()).any(|p| typed(p.role()))
            {
                continue;
            }
            let text = data.label().or_else(|| data.value()).unwrap_or_default();
            if EGUI_OWN.contains(&text.as_str()) || (id == "glossary" && english.contains(&text)) {
                continue;
            }
            for word in dlsys_core::latin::stray_words(&text, &ids) {
                found.insert(format!(
                    "{id}: `{word}` in `{}`",
                    text.chars().take(80).collect::<String>()
                ));
            }
        }
    });
    assert!(
        found.is_empty(),
        "{} English words on Chinese pages:\n{}",
        found.len(),
        found.into_iter().collect::<Vec<_>>().join("\n")
    );
}
