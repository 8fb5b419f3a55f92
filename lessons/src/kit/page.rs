//! The pieces of a lesson page: its heading, its sections (each with a
//! stable id a search result can scroll to), number fields named for
//! screen readers, and column headers with their tooltips.

use dlsys_core::text::{Catalog, Lang};

/// A lesson page's heading and introduction: `title` and `intro` from its catalog.
pub fn header_ui(ui: &mut egui::Ui, text: &Catalog, lang: Lang) {
    ui.heading(text.get(lang, "title"));
    prose(ui, text.get(lang, "intro"));
}

/// A wrapped paragraph whose `backticked` spans (commands, code) are drawn
/// in the monospace font, without the backticks.
pub fn prose(ui: &mut egui::Ui, text: &str) -> egui::Response {
    if !text.contains('`') {
        return ui.label(text);
    }
    let style = ui.style();
    let color = ui.visuals().text_color();
    let body = egui::TextStyle::Body.resolve(style);
    let mono = egui::TextStyle::Monospace.resolve(style);
    let mut job = egui::text::LayoutJob::default();
    for (i, part) in text.split('`').enumerate() {
        let font = if i % 2 == 1 {
            mono.clone()
        } else {
            body.clone()
        };
        job.append(part, 0.0, egui::TextFormat::simple(font, color));
    }
    job.wrap.max_width = ui.available_width();
    ui.label(job)
}

/// The sections drawn so far, by id (`<lesson catalog's key prefix>`), in
/// the order drawn: for tests and for search.
#[derive(Clone, Debug, Default)]
struct Seen(Vec<String>);

/// The section a search asked to show, until it has been scrolled to.
#[derive(Clone, Debug, Default)]
struct Wanted(Option<String>);

/// Asks the page to scroll to section `id` when it is next drawn.
pub fn request_scroll(ctx: &egui::Context, id: &str) {
    ctx.data_mut(|d| d.insert_temp(egui::Id::NULL, Wanted(Some(id.to_owned()))));
}

/// The section or term a page is asked to open at, until it is drawn.
pub fn scroll_wanted(ctx: &egui::Context) -> Option<String> {
    ctx.data(|d| d.get_temp::<Wanted>(egui::Id::NULL))
        .and_then(|w| w.0)
}

/// Called once the page is drawn: a section asked for that the page did
/// not draw (one that shows only after a run) is forgotten, and `true`
/// says the page should open at its top instead.
pub fn scroll_missed(ctx: &egui::Context) -> bool {
    let missed = scroll_wanted(ctx).is_some();
    if missed {
        ctx.data_mut(|d| d.insert_temp(egui::Id::NULL, Wanted(None)));
    }
    missed
}

/// The ids of every section drawn since the app started, in order of first drawing.
pub fn sections_seen(ctx: &egui::Context) -> Vec<String> {
    ctx.data(|d| d.get_temp::<Seen>(egui::Id::NULL))
        .unwrap_or_default()
        .0
}

/// A section of a lesson page: a heading from the catalog's `<id>.heading`,
/// open by default, collapsible, with the stable `id` as its anchor (the
/// header scrolls into view when [`request_scroll`] asked for it).
pub fn section<R>(
    ui: &mut egui::Ui,
    text: &Catalog,
    lang: Lang,
    id: &str,
    add: impl FnOnce(&mut egui::Ui) -> R,
) -> Option<R> {
    section_opened(ui, text, lang, id, true, add)
}

/// A [`section`] that starts closed unless `open`.
pub fn section_opened<R>(
    ui: &mut egui::Ui,
    text: &Catalog,
    lang: Lang,
    id: &str,
    open: bool,
    add: impl FnOnce(&mut egui::Ui) -> R,
) -> Option<R> {
    let title = egui::RichText::new(text.get(lang, &format!("{id}.heading"))).strong();
    // Salted with the lesson's own title: two lessons' "check" sections
    // keep their own open or closed state.
    let shown = egui::CollapsingHeader::new(title)
        .id_salt(("section", text.get(Lang::En, "title"), id))
        .default_open(open)
        .show(ui, add);
    anchor(&shown.header_response, id);
    shown.body_returned
}

/// Makes `response` the place section `id` scrolls to (a search's hit, a
/// glossary link): scrolled into view when [`request_scroll`] asked for it.
pub fn anchor(response: &egui::Response, id: &str) {
    let ctx = &response.ctx;
    ctx.data_mut(|d| {
        let seen = d.get_temp_mut_or_default::<Seen>(egui::Id::NULL);
        if !seen.0.iter().any(|s| s == id) {
            seen.0.push(id.to_owned());
        }
    });
    if scroll_wanted(ctx).as_deref() == Some(id) {
        response.scroll_to_me(Some(egui::Align::TOP));
        ctx.data_mut(|d| d.insert_temp(egui::Id::NULL, Wanted(None)));
    }
}

/// A table's column header, with the catalog's `<key>.tip` as its tooltip
/// where there is one (what the column means, how it is computed).
pub fn column_header(ui: &mut egui::Ui, text: &Catalog, lang: Lang, key: &str) {
    let header = ui.strong(text.get(lang, key));
    let tip = format!("{key}.tip");
    if text.contains(&tip) {
        header.on_hover_text(text.get(lang, &tip));
    }
}

/// A number field with its label, the label naming it for screen readers.
pub fn number_field<T: egui::emath::Numeric>(
    ui: &mut egui::Ui,
    label: &str,
    value: &mut T,
    range: std::ops::RangeInclusive<T>,
    speed: f64,
) {
    let label = ui.label(label);
    ui.add(egui::DragValue::new(value).range(range).speed(speed))
        .labelled_by(label.id);
}

/// A drop-down with its label, the label naming it for screen readers:
/// it chooses `value` among `options`, each shown as `name(option)`.
pub fn choice<T: PartialEq, N: Into<egui::WidgetText>>(
    ui: &mut egui::Ui,
    id: impl egui::AsIdSalt,
    label: &str,
    value: &mut T,
    options: impl IntoIterator<Item = T>,
    name: impl Fn(&T) -> N,
) -> egui::Response {
    choice_tipped(ui, id, label, value, options, name, |_| None)
}

/// [`choice`] of one of `names`, the value being the name itself.
pub fn choice_of_names(
    ui: &mut egui::Ui,
    id: impl egui::AsIdSalt,
    label: &str,
    value: &mut String,
    names: &[&str],
) -> egui::Response {
    let options = names.iter().map(|name| (*name).to_owned());
    choice(ui, id, label, value, options, String::clone)
}

/// [`choice`], each option (and the box, for the chosen one) with
/// `tip(option)` as its tooltip where that gives one.
pub fn choice_tipped<T: PartialEq, N: Into<egui::WidgetText>>(
    ui: &mut egui::Ui,
    id: impl egui::AsIdSalt,
    label: &str,
    value: &mut T,
    options: impl IntoIterator<Item = T>,
    name: impl Fn(&T) -> N,
    tip: impl Fn(&T) -> Option<String>,
) -> egui::Response {
    let label = ui.label(label);
    let response = egui::ComboBox::from_id_salt(id)
        .selected_text(name(value))
        .show_ui(ui, |ui| {
            for option in options {
                let (text, hint) = (name(&option), tip(&option));
                let item = ui.selectable_value(value, option, text);
                if let Some(hint) = hint {
                    item.on_hover_text(hint);
                }
            }
        })
        .response
        .labelled_by(label.id);
    match tip(value) {
        Some(hint) => response.on_hover_text(hint),
        None => response,
    }
}

/// A link to another lesson, by its route (never by importing it): a
/// button reading `label`; a click leaves the route in `request` for the
/// lesson's `take_open_request`.
pub fn lesson_link(
    ui: &mut egui::Ui,
    label: &str,
    route: &'static str,
    request: &mut Option<String>,
) {
    if ui.link(label).clicked() {
        *request = Some(route.to_owned());
    }
}
