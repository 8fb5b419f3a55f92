//! Renders every lesson, tall enough to see it whole, into PNG files — for
//! reviewing the UI as a user sees it, without a window:
//! `cargo run -p dlsys-lab-tests --example render_pages -- OUT_DIR [light|dark] [en|zh] [WIDTH]`
//! (the height from `H`, 2800 px unless set).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dlsys_core::text::Lang;
use dlsys_lab::{DlsysApp, Startup};
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().unwrap_or_else(|| ".".to_owned()));
    let theme = match args.next().as_deref() {
        Some("light") => egui::Theme::Light,
        _ => egui::Theme::Dark,
    };
    let lang = match args.next().as_deref() {
        Some("zh") => Lang::Zh,
        _ => Lang::En,
    };
    let width = args.next().and_then(|w| w.parse().ok()).unwrap_or(1280.0);
    std::fs::create_dir_all(&dir).unwrap();
    let mut harness = Harness::builder()
        .with_size(egui::vec2(
            width,
            std::env::var("H")
                .ok()
                .and_then(|h| h.parse().ok())
                .unwrap_or(2800.0),
        ))
        .with_theme(theme)
        .wgpu_setup(dlsys_lab::setup::wgpu_setup())
        .build_eframe(|cc| {
            DlsysApp::new(
                cc,
                Startup {
                    lang: Some(lang),
                    ..Startup::default()
                },
            )
        });
    for lesson in dlsys_lessons::all() {
        harness
            .get_by_role_and_label(Role::Button, &lesson.title(lang))
            .click();
        harness.run();
        // Show work the lesson can do, not just its controls: its own
        // self-test action (what its main button starts, at a small size).
        if harness.state_mut().start_self_test_action(lesson.id()) {
            harness.run_steps(2);
            while harness.state().lesson_busy(lesson.id()) {
                harness.run_steps(5);
            }
            harness.run_steps(3);
        }
        let path = dir.join(format!("{}.png", lesson.id()));
        harness.render().unwrap().save(&path).unwrap();
        println!("{}", path.display());
    }
}
