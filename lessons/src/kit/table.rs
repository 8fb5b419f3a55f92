//! A table wider than the page keeps its first column (the rows' labels) in
//! place while the other columns scroll sideways, so no row loses its label
//! at 800 px. The two halves are two grids side by side with one row height:
//! the tallest row either drew last frame, so they line up from the second
//! frame on (rows do not change height between frames in these tables).

use super::theme;

/// How a pinned table looks.
#[derive(Clone, Copy, Debug)]
pub struct Look {
    pub spacing: egui::Vec2,
    pub striped: bool,
}

impl Default for Look {
    fn default() -> Self {
        Self {
            spacing: egui::vec2(14.0, 4.0),
            striped: true,
        }
    }
}

/// `rows` rows: `first(ui, r)` adds row `r`'s label cell(s), `rest(ui, r)`
/// the cells that scroll (row 0 is the header where the caller has one).
pub fn pinned(
    ui: &mut egui::Ui,
    id: &str,
    rows: usize,
    look: Look,
    mut first: impl FnMut(&mut egui::Ui, usize),
    mut rest: impl FnMut(&mut egui::Ui, usize),
) {
    let height_id = egui::Id::unique("pinned_row_height").with(id);
    let row_height = ui
        .ctx()
        .data(|d| d.get_temp::<f32>(height_id))
        .unwrap_or(0.0);
    let mut tallest = row_height;
    let mut grid = |ui: &mut egui::Ui, half: &str, cells: &mut dyn FnMut(&mut egui::Ui, usize)| {
        egui::Grid::new((id, half))
            .striped(look.striped)
            .spacing(look.spacing)
            .min_row_height(row_height)
            .show(ui, |ui| {
                for r in 0..rows {
                    let top = ui.cursor().top();
                    cells(ui, r);
                    ui.end_row();
                    tallest = tallest.max(ui.cursor().top() - top - look.spacing.y);
                }
            });
    };
    ui.horizontal_top(|ui| {
        ui.spacing_mut().item_spacing.x = look.spacing.x;
        grid(ui, "first", &mut first);
        theme::sideways(ui, id, |ui| grid(ui, "rest", &mut rest));
    });
    if tallest > row_height + 0.5 {
        ui.ctx().data_mut(|d| d.insert_temp(height_id, tallest));
        ui.ctx().request_discard("a pinned table's rows grew");
    }
}

/// A header row: catalog keys, the first heading the pinned column and the
/// rest the columns that scroll, each drawn by [`super::column_header`]
/// (its `<key>.tip` as the tooltip where the catalog has one).
#[derive(Clone, Copy)]
pub struct Header<'a> {
    pub text: &'a dlsys_core::text::Catalog,
    pub lang: dlsys_core::text::Lang,
    pub keys: &'a [&'a str],
}

/// [`pinned`] over `rows` under `header`, in the default look: `first(ui,
/// row)` draws a row's label cell, `rest(ui, row)` the cells that scroll.
pub fn headed<T>(
    ui: &mut egui::Ui,
    id: &str,
    rows: &[T],
    header: Header<'_>,
    mut first: impl FnMut(&mut egui::Ui, &T),
    mut rest: impl FnMut(&mut egui::Ui, &T),
) {
    let Header { text, lang, keys } = header;
    let (pinned_key, scrolled) = keys.split_first().unwrap_or((&"", &[]));
    let row = |r: usize| r.checked_sub(1).and_then(|i| rows.get(i));
    pinned(
        ui,
        id,
        rows.len() + 1,
        Look::default(),
        |ui, r| match row(r) {
            None => super::column_header(ui, text, lang, pinned_key),
            Some(row) => first(ui, row),
        },
        |ui, r| match row(r) {
            None => {
                for key in scrolled {
                    super::column_header(ui, text, lang, key);
                }
            }
            Some(row) => rest(ui, row),
        },
    );
}
