//! The whole app under egui_kittest: every lesson in Chinese at 1400 and
//! 800 px wide and in English at 800 px, snapshot-tested, with no text cut
//! off by the window.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

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

#[test]
fn every_lesson_fits_in_chinese_at_1400_and_800_px_and_in_english_at_800() {
    let mut failures = Vec::new();
    for (lang, width) in [(Lang::Zh, 1400.0), (Lang::Zh, 800.0), (Lang::En, 800.0)] {
        let (mut harness, gpu) =
            common::app_harness_in("every_lesson_fits", lang, egui::vec2(width, 900.0));
        harness.run();
        let code = lang.id();
        common::visit_every_lesson(&mut harness, lang, |harness, id| {
            for cut in text_past_the_window(harness, width) {
                failures.push(format!("{id} at {width} px, {code}: {cut}"));
            }
            let name = format!("{code}_{width}_{id}");
            if gpu && let Err(err) = common::snapshot_lesson(harness, lang, id, &name) {
                failures.push(err);
            }
        });
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The Latin words a Chinese screen may show (`tests/latin_allowlist.txt`).
/// With them, every word of the kernels' ids (`reduce/divergent`): ids.
fn allowed_latin() -> Vec<String> {
    let mut words: Vec<String> = include_str!("latin_allowlist.txt")
        .lines()
        .map(|l| {
            l.split('#')
                .next()
                .unwrap_or_default()
                .trim()
                .to_lowercase()
        })
        .filter(|l| !l.is_empty())
        .collect();
    for kernel in dlsys_core::kernels::Kernel::all() {
        words.extend(kernel.id().split(['/', '-']).map(str::to_owned));
    }
    words
}

/// English prose left in a text: each whitespace-separated piece made of
/// Latin letters only (a digit, `_`, `-`, `/`, `.`, `:` or an inner capital
/// make it code, an id, a flag or a formula), at least four of them, not on
/// the allow-list. First-use glosses in full-width brackets（…）and quoted
/// sample text “…” are not prose to translate.
fn english_words(text: &str, allowed: &[String]) -> Vec<String> {
    let mut prose = String::new();
    let mut depth = 0i32;
    for c in text.chars() {
        match c {
            '（' | '“' => {
                depth += 1;
                prose.push(' ');
            }
            '）' | '”' => depth = (depth - 1).max(0),
            _ if depth <= 0 => prose.push(c),
            _ => {}
        }
    }
    prose
        .split(|c: char| c.is_whitespace() || !c.is_ascii())
        // A call, `contiguous()`, is code.
        .filter(|piece| !piece.contains("()"))
        .map(|piece| {
            piece.trim_matches(|c: char| {
                matches!(
                    c,
                    ',' | ';' | '!' | '?' | '"' | '\'' | '`' | '*' | '(' | ')'
                )
            })
        })
        .filter(|piece| piece.len() >= 4 && piece.chars().all(|c| c.is_ascii_alphabetic()))
        .filter(|piece| {
            !piece.chars().skip(1).any(|c| c.is_ascii_uppercase())
                || piece.chars().all(|c| c.is_ascii_uppercase())
        })
        .filter(|piece| piece.chars().any(|c| c.is_ascii_lowercase()))
        .filter(|piece| !allowed.contains(&piece.to_lowercase()))
        .map(str::to_owned)
        .collect()
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
    let allowed = allowed_latin();
    let (mut harness, _) =
        common::app_harness_in("no_english", Lang::Zh, egui::vec2(1400.0, 900.0));
    harness.run();
    let mut found = std::collections::BTreeSet::new();
    common::visit_every_lesson(&mut harness, Lang::Zh, |harness, id| {
        if harness.state_mut().start_self_test_action(id) {
            common::run_while(harness, 4, 180, id, |h| h.state().lesson_busy(id));
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
            if EGUI_OWN.contains(&text.as_str()) {
                continue;
            }
            for word in english_words(&text, &allowed) {
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
