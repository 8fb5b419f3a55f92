//! The search box in the top bar: Ctrl+K (⌘K on a Mac) puts the cursor in
//! it; hits from [`dlsys_core::search::Index`] show under it as you type;
//! ↑/↓ choose, Enter or a click opens the page at the section, Esc closes.

use dlsys_core::search::{Hit, Index};
use dlsys_core::text::{Catalog, Lang};
use dlsys_lessons::kit::text as shell_text;

/// Hits shown at most.
const SHOWN: usize = 8;

/// The box, its index and its hits.
pub struct SearchBar {
    index: Index,
    /// Every page's id and catalog, for the hits' titles.
    pages: Vec<(&'static str, &'static Catalog)>,
    query: String,
    /// The hits for `(query, lang)`, searched once per change.
    hits: Vec<Hit>,
    searched: Option<(String, Lang)>,
    selected: usize,
    /// Whether the hits are shown (the box was used and not closed since).
    open: bool,
    /// Where the hits were drawn last frame (a click there is not "outside").
    shown_at: Option<egui::Rect>,
}

impl SearchBar {
    /// Indexes every page's text (not the shell's labels) and the glossary.
    pub fn new() -> Self {
        let pages = dlsys_lessons::searchable();
        Self {
            index: dlsys_lessons::search_index(&pages),
            pages,
            query: String::new(),
            hits: Vec::new(),
            searched: None,
            selected: 0,
            open: false,
            shown_at: None,
        }
    }

    /// "Page › section" for a hit.
    fn place(&self, hit: &Hit, lang: Lang) -> String {
        let catalog = self
            .pages
            .iter()
            .find(|(id, _)| *id == hit.page)
            .map(|(_, c)| *c);
        let page = catalog.map_or(hit.page.as_str(), |c| c.get(lang, "title"));
        let section = match hit.section.as_deref() {
            None => return page.to_owned(),
            Some("exercises") => shell_text().get(lang, "search.exercises").to_owned(),
            Some(s) => match s.strip_prefix("term-") {
                Some(term) => dlsys_core::glossary::glossary()
                    .get(term)
                    .map_or_else(|| term.to_owned(), |t| t.word(lang).to_owned()),
                None => catalog.map_or_else(
                    || s.to_owned(),
                    |c| c.get(lang, &format!("{s}.heading")).to_owned(),
                ),
            },
        };
        format!("{page} › {section}")
    }

    /// Draws the box (and its hits); the route of the hit opened, if one was.
    pub fn ui(&mut self, ui: &mut egui::Ui, lang: Lang) -> Option<String> {
        let text = shell_text();
        let id = egui::Id::unique("search_box");
        let focus_key = ui.input_mut(|i| i.consume_key(egui::Modifiers::COMMAND, egui::Key::K));
        let focused = ui.memory(|m| m.has_focus(id));
        // ↑/↓ choose a hit, not move the cursor.
        let (down, up) = if focused && self.open {
            ui.input_mut(|i| {
                (
                    i.consume_key(egui::Modifiers::NONE, egui::Key::ArrowDown),
                    i.consume_key(egui::Modifiers::NONE, egui::Key::ArrowUp),
                )
            })
        } else {
            (false, false)
        };
        let label = ui.label(text.get(lang, "search.label"));
        let response = ui
            .add(
                egui::TextEdit::singleline(&mut self.query)
                    .id(id)
                    .hint_text(text.get(lang, "search.hint"))
                    .desired_width(170.0),
            )
            .labelled_by(label.id);
        if focus_key {
            response.request_focus();
            self.open = true;
        }
        if response.changed() || response.gained_focus() {
            self.open = true;
            self.selected = 0;
        }
        self.refresh(lang);
        let count = self.hits.len().min(SHOWN);
        if count > 0 && (down || up) {
            self.selected = if down {
                (self.selected + 1) % count
            } else {
                (self.selected + count - 1) % count
            };
            // The cursor stays in the box: say which hit is chosen.
            if let Some(hit) = self.hits.get(self.selected) {
                let said = format!("{}: {}", self.place(hit, lang), hit.snippet);
                let info = egui::WidgetInfo::labeled(egui::Role::Button, true, said);
                ui.ctx()
                    .output_mut(|o| o.events.push(egui::output::OutputEvent::FocusGained(info)));
            }
        }
        let enter = response.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        let escape = response.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Escape));
        if escape {
            self.open = false;
        }
        let mut opened = None;
        if enter && self.open {
            opened = self.hits.get(self.selected).map(|h| h.route.clone());
        }
        // A click anywhere else closes the hits.
        let clicked_away = ui.input(|i| {
            i.pointer.any_pressed()
                && i.pointer.interact_pos().is_some_and(|p| {
                    !response.rect.contains(p) && !self.shown_at.is_some_and(|r| r.contains(p))
                })
        });
        if clicked_away {
            self.open = false;
        }
        if self.open && !self.query.trim().is_empty() && opened.is_none() {
            opened = self.hits_ui(ui, response.rect, lang);
        } else {
            self.shown_at = None;
        }
        if opened.is_some() {
            self.open = false;
            self.shown_at = None;
            ui.memory_mut(|m| m.surrender_focus(id));
        }
        opened
    }

    /// Searches again when the query or the language changed.
    fn refresh(&mut self, lang: Lang) {
        let same = |(query, asked): &(String, Lang)| *query == self.query && *asked == lang;
        if !self.searched.as_ref().is_some_and(same) {
            self.hits = self.index.search(&self.query, lang, SHOWN);
            self.selected = self.selected.min(self.hits.len().saturating_sub(1));
            self.searched = Some((self.query.clone(), lang));
        }
    }

    /// The hits under the box; the route of one clicked.
    fn hits_ui(&mut self, ui: &egui::Ui, under: egui::Rect, lang: Lang) -> Option<String> {
        let mut opened = None;
        let width = (ui.ctx().content_rect().right() - under.left() - 8.0).clamp(220.0, 460.0);
        let shown = egui::Area::new(egui::Id::unique("search_hits"))
            .order(egui::Order::Foreground)
            .fixed_pos(under.left_bottom() + egui::vec2(0.0, 4.0))
            .show(ui.ctx(), |ui| {
                egui::Frame::popup(ui.style()).show(ui, |ui| {
                    ui.set_width(width);
                    if self.hits.is_empty() {
                        ui.weak(shell_text().get(lang, "search.none"));
                        return;
                    }
                    for (i, hit) in self.hits.iter().enumerate() {
                        let place = self.place(hit, lang);
                        // A title's or a heading's text is its place: said once.
                        let snippet =
                            (!place.ends_with(&hit.snippet)).then_some(hit.snippet.as_str());
                        // One widget per hit, its place and its text: a click
                        // anywhere on it opens it, a screen reader reads both.
                        let row = ui.selectable_label(
                            i == self.selected,
                            hit_text(ui, &place, snippet, width),
                        );
                        if row.clicked() {
                            opened = Some(hit.route.clone());
                        }
                    }
                });
            });
        self.shown_at = Some(shown.response.rect);
        opened
    }
}

/// A hit as one text: its place in strong, its snippet under it in weak,
/// wrapped to `width`.
fn hit_text(
    ui: &egui::Ui,
    place: &str,
    snippet: Option<&str>,
    width: f32,
) -> egui::text::LayoutJob {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let visuals = ui.visuals();
    let mut job = egui::text::LayoutJob::default();
    job.append(
        place,
        0.0,
        egui::TextFormat::simple(font.clone(), visuals.strong_text_color()),
    );
    if let Some(snippet) = snippet {
        job.append(
            &format!("\n{snippet}"),
            0.0,
            egui::TextFormat::simple(font, visuals.weak_text_color()),
        );
    }
    job.wrap.max_width = width - 16.0;
    job
}
