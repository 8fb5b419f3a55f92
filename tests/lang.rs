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
