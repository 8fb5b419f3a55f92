//! Keys between lessons: Alt+↓ opens the next lesson, Alt+↑ the previous,
//! wrapping around at either end.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use dlsys_core::text::Lang;

#[test]
fn alt_arrows_move_between_lessons_and_wrap() {
    let ids: Vec<&str> = dlsys_lessons::all().iter().map(|l| l.id()).collect();
    assert!(ids.len() >= 2, "needs two lessons to move between");
    let (mut harness, _gpu) =
        crate::common::app_harness_in("lesson_keys", Lang::En, egui::vec2(1100.0, 760.0));
    harness.run();
    assert_eq!(harness.state().current_lesson(), ids[0]);
    let alt = egui::Modifiers::ALT;
    harness.key_press_modifiers(alt, egui::Key::ArrowDown);
    harness.run();
    assert_eq!(harness.state().current_lesson(), ids[1]);
    harness.key_press_modifiers(alt, egui::Key::ArrowUp);
    harness.run();
    harness.key_press_modifiers(alt, egui::Key::ArrowUp);
    harness.run();
    assert_eq!(
        harness.state().current_lesson(),
        *ids.last().unwrap(),
        "Alt+↑ on the first lesson wraps to the last"
    );
    // Without Alt an arrow key is the page's, not a lesson change.
    harness.key_press(egui::Key::ArrowDown);
    harness.run();
    assert_eq!(harness.state().current_lesson(), *ids.last().unwrap());
}

/// Whether lesson `index`'s heading on the page (not its sidebar entry)
/// lies inside the window.
fn heading_in_view(harness: &egui_kittest::Harness<'_, dlsys_lab::DlsysApp>, index: usize) -> bool {
    use egui_kittest::kittest::{NodeT as _, Queryable as _};
    let title = dlsys_lessons::all()[index].title(Lang::En);
    let window = harness.ctx.content_rect();
    harness
        .query_all_by_label(&title)
        .filter(|n| n.accesskit_node().role() != egui::accesskit::Role::Button)
        .any(|n| window.contains_rect(n.rect()))
}

#[test]
fn a_lesson_opens_at_its_top_wherever_the_last_one_was_scrolled() {
    use egui_kittest::kittest::Queryable as _;
    let (mut harness, _gpu) =
        crate::common::app_harness_in("lesson_scroll", Lang::En, egui::vec2(1100.0, 500.0));
    harness.run();
    let alt = egui::Modifiers::ALT;
    // The welcome page first; then the first lesson, scrolled to its last button.
    harness.key_press_modifiers(alt, egui::Key::ArrowDown);
    harness.run();
    assert!(heading_in_view(&harness, 1), "a lesson opens at its top");
    let lowest = harness
        .query_all_by_role(egui::accesskit::Role::Button)
        .max_by(|a, b| a.rect().max.y.total_cmp(&b.rect().max.y))
        .expect("a button");
    lowest.scroll_to_me();
    harness.run();
    assert!(
        !heading_in_view(&harness, 1),
        "scrolled down, the heading is out of view"
    );
    harness.key_press_modifiers(alt, egui::Key::ArrowDown);
    harness.run();
    assert!(
        heading_in_view(&harness, 2),
        "the next lesson opens at its top"
    );
    harness.key_press_modifiers(alt, egui::Key::ArrowUp);
    harness.run();
    assert!(
        heading_in_view(&harness, 1),
        "and so does the first, opened again"
    );
}
