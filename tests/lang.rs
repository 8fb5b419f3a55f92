//! The whole app in Chinese under egui_kittest: every lesson at 1400 and
//! 800 px wide, snapshot-tested, with no text cut off by the window.

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
fn every_lesson_in_chinese_fits_at_1400_and_800_px() {
    let mut failures = Vec::new();
    for width in [1400.0, 800.0] {
        let (mut harness, gpu) = common::app_harness_in(
            "every_lesson_in_chinese",
            Lang::Zh,
            egui::vec2(width, 900.0),
        );
        harness.run();
        common::visit_every_lesson(&mut harness, Lang::Zh, |harness, id| {
            for cut in text_past_the_window(harness, width) {
                failures.push(format!("{id} at {width} px: {cut}"));
            }
            if gpu && let Err(err) = harness.try_snapshot(format!("zh_{width}_{id}")) {
                failures.push(err.to_string());
            }
        });
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
