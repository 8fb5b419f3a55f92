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
