//! The top bar: the lessons toggle, the title, the progress page, theme,
//! zoom, "About this GPU", read-aloud and the language.

use dlsys_core::text::Lang;
use dlsys_lessons::kit::text as shell_text;

use super::DlsysApp;

/// The progress page's id (its route).
const PROGRESS: &str = "progress";

impl DlsysApp {
    pub(super) fn top_bar_ui(&mut self, ui: &mut egui::Ui) {
        let lang = self.shown_lang;
        let text = shell_text();
        // Wrapped: at 800 px the language buttons go to a second line
        // rather than past the window's edge.
        ui.horizontal_wrapped(|ui| {
            ui.toggle_value(
                &mut self.state.sidebar,
                format!("☰ {}", text.get(lang, "app.lessons")),
            )
            .on_hover_text(text.get(lang, "app.sidebar"));
            ui.strong(text.get(lang, "app.title"));
            ui.separator();
            // The record summed up, one click from anywhere.
            let progress = self.state.lesson == PROGRESS;
            if ui
                .selectable_label(progress, text.get(lang, "app.progress_page"))
                .on_hover_text(text.get(lang, "app.progress_page_hint"))
                .clicked()
                && !progress
            {
                self.go_to(PROGRESS);
            }
            ui.separator();
            if let Some(route) = self.search.ui(ui, lang) {
                self.searched = Some(route);
            }
            ui.separator();
            ui.label(text.get(lang, "app.theme"));
            let mut theme = self.state.theme;
            ui.selectable_value(
                &mut theme,
                egui::ThemePreference::System,
                text.get(lang, "app.theme_system"),
            );
            ui.selectable_value(
                &mut theme,
                egui::ThemePreference::Light,
                text.get(lang, "app.theme_light"),
            );
            ui.selectable_value(
                &mut theme,
                egui::ThemePreference::Dark,
                text.get(lang, "app.theme_dark"),
            );
            if theme != self.state.theme {
                self.state.theme = theme;
                ui.ctx().set_theme(theme);
            }
            ui.separator();
            let zoom = ui.ctx().zoom_factor();
            if ui
                .button("−")
                .on_hover_text(text.get(lang, "app.zoom_out"))
                .clicked()
            {
                egui::gui_zoom::zoom_out(ui.ctx());
            }
            if ui
                .button(format!("{:.0} %", zoom * 100.0))
                .on_hover_text(text.get(lang, "app.zoom_reset"))
                .clicked()
            {
                ui.ctx().set_zoom_factor(1.0);
            }
            if ui
                .button("+")
                .on_hover_text(text.get(lang, "app.zoom_in"))
                .clicked()
            {
                egui::gui_zoom::zoom_in(ui.ctx());
            }
            ui.separator();
            ui.toggle_value(&mut self.show_gpu_window, text.get(lang, "app.about_gpu"));
            ui.separator();
            // Desktop screen readers read the AccessKit tree; the web's canvas
            // has none, so eframe speaks focused controls when asked to.
            if cfg!(target_arch = "wasm32") {
                let toggle = ui
                    .toggle_value(&mut self.state.speak, text.get(lang, "app.speak"))
                    .on_hover_text(text.get(lang, "app.speak_hint"));
                if toggle.changed() {
                    let speak = self.state.speak;
                    ui.ctx().options_mut(|o| o.screen_reader = speak);
                }
                ui.separator();
            }
            // Each language is named in itself, so anyone can find theirs.
            ui.label(text.get(lang, "app.language"));
            for choice in Lang::ALL {
                let label = egui::RichText::new(choice.native_name())
                    .family(egui::FontFamily::Proportional);
                if ui
                    .selectable_label(self.state.lang == choice, label)
                    .clicked()
                {
                    self.state.lang = choice;
                }
            }
            // Only while the font is really missing (the web, downloading): not
            // for the one frame in which the choice changed.
            if self.state.lang != lang && !dlsys_lessons::kit::fonts::cjk_ready(ui.ctx()) {
                let note = dlsys_lessons::kit::fonts::cjk_failure().map_or_else(
                    || text.get(lang, "app.loading_font").to_owned(),
                    |why| text.fill(lang, "app.font_failed", &[("why", &why)]),
                );
                ui.weak(note);
            }
        });
    }
}
