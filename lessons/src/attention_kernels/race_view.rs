//! The race: N, d, the mask and the tiles; the four rungs on the ladder
//! (their programs made off the UI thread), each rung's time, bytes,
//! GFLOP/s, extra memory and its error against its bound — the rows
//! `bench kernels --family attention` prints — and the roofline.

use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::kernels::attention::{BC, BR, HEAD_DIMS, MAX_SEQ, Tiles};
use dlsys_core::memory::show_bytes;
use dlsys_core::names::Named as _;
use dlsys_core::text::Lang;
use dlsys_shaders::attention::{AttnRow, rows};

use super::{AttentionKernels, TEXT, build, ladder, split, t};
use crate::Env;
use crate::kit::table::{Header, headed};
use crate::kit::theme;

impl AttentionKernels {
    /// Makes the programs in the background; the race starts when they are
    /// ready. Without a compute GPU only the built-in kernels are timed.
    pub(super) fn start(&mut self, env: &Env<'_>) {
        self.error = None;
        self.raced = None;
        let shape = match self.settings.shape(self.settings.seq) {
            Ok(shape) => shape,
            Err(e) => {
                self.error = Some(e.message(env.lang));
                return;
            }
        };
        let tiles = self.settings.tiles();
        match self.race.runner(env.gpu).map(dlsys_shaders::attention::limits) {
            Some(limits) => self.building.start(move || build(shape, tiles, limits)),
            None => {
                self.raced = Some((shape, Vec::new()));
                self.race.start(&ladder(self.settings.trials, true), env);
            }
        }
    }

    /// Races the programs once they are made.
    pub(super) fn race_built(&mut self, ctx: &egui::Context, env: &Env<'_>) {
        let Some(built) = self.building.take(ctx) else {
            return;
        };
        let (shape, made) = match built {
            Ok(b) => b,
            Err(e) => {
                self.error = Some(e.message(env.lang));
                return;
            }
        };
        let (programs, refused) = split(made);
        self.raced = Some((shape, refused));
        self.race
            .start_with(&ladder(self.settings.trials, true), programs, env);
    }

    pub(super) fn race_ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        crate::kit::prose(ui, t(lang, "race.explain"));
        let busy = self.busy();
        ui.add_enabled_ui(!busy, |ui| controls(ui, &mut self.settings, lang));
        let workgroup = self
            .race
            .runner(env.gpu)
            .map(|r| dlsys_shaders::attention::limits(r).workgroup_bytes);
        if let Some(bytes) = workgroup {
            let tiles = self.settings.tiles();
            ui.weak(TEXT.fill(
                lang,
                "race.tile_memory",
                &[
                    ("bytes", &tiles.workgroup_bytes(self.settings.head_dim)),
                    ("limit", &bytes),
                    (
                        "largest",
                        &Tiles::largest_bc(self.settings.head_dim, bytes).unwrap_or(0),
                    ),
                ],
            ));
        }
        ui.horizontal_wrapped(|ui| {
            if self.building.is_running() {
                ui.spinner();
                ui.label(t(lang, "race.building"));
            } else if !self.race.progress_ui(ui, lang)
                && ui
                    .add_enabled(!busy, egui::Button::new(t(lang, "race.run")))
                    .clicked()
            {
                self.start(env);
            }
        });
        if let Some(e) = self.error.as_ref().or(self.race.error.as_ref()) {
            ui.colored_label(theme::bad(ui.visuals()), e);
            return;
        }
        let Some((shape, refused)) = &self.raced else {
            return;
        };
        for (rung, why) in refused {
            ui.colored_label(
                theme::warn(ui.visuals()),
                TEXT.fill(
                    lang,
                    "race.refused",
                    &[("rung", &rung.id()), ("why", &why.message(lang))],
                ),
            );
        }
        if self.race.is_busy() || self.race.results.is_empty() {
            return;
        }
        let lines = rows(&self.race.results, shape);
        if lines.is_empty() && refused.is_empty() {
            ui.weak(t(lang, "race.cpu"));
        }
        table(ui, &lines, lang);
        let time = |rung: dlsys_core::kernels::attention::AttnRung| {
            lines.iter().find(|l| l.id == rung.id()).map(|l| l.median_ms)
        };
        use dlsys_core::kernels::attention::AttnRung;
        if let (Some(naive), Some(tiled)) = (time(AttnRung::Naive), time(AttnRung::Tiled)) {
            ui.label(TEXT.fill(
                lang,
                "race.ratio",
                &[("ratio", &show_sig(naive / tiled, 3))],
            ));
        }
        let measured: Vec<_> = self.race.results.iter().filter_map(|o| o.measured()).collect();
        crate::kit::kernel_plots::roofline(ui, lang, &measured);
        ui.weak(t(lang, "race.roof_note"));
    }
}

fn controls(ui: &mut egui::Ui, s: &mut super::Settings, lang: Lang) {
    ui.horizontal_wrapped(|ui| {
        crate::kit::number_field(ui, t(lang, "race.seq"), &mut s.seq, 1..=MAX_SEQ, 4.0);
        crate::kit::choice(ui, "attn_head_dim", t(lang, "race.head_dim"), &mut s.head_dim, HEAD_DIMS, |&d| d.to_string());
        ui.checkbox(&mut s.causal, t(lang, "race.causal"));
    });
    ui.horizontal_wrapped(|ui| {
        for (key, value, choices) in [("race.br", &mut s.br, &BR[..]), ("race.bc", &mut s.bc, &BC[..])] {
            crate::kit::choice(ui, key, t(lang, key), value, choices.iter().copied(), |&c| c.to_string());
        }
        crate::kit::number_field(ui, t(lang, "race.trials"), &mut s.trials, 1..=20, 0.2);
    });
}

fn table(ui: &mut egui::Ui, lines: &[AttnRow], lang: Lang) {
    let cols = [
        "race.col_rung", "race.col_ms",
        "race.col_bytes",
        "race.col_gflops",
        "race.col_extra",
        "race.col_bound",
        "race.col_right",
    ];
    let rung = dlsys_core::kernels::attention::AttnRung::from_id;
    headed(
        ui,
        "attn_race",
        lines,
        Header { text: &TEXT, lang, keys: &cols },
        |ui, l| {
            let response = ui.monospace(&l.id);
            if let Some(rung) = rung(&l.id) {
                response.on_hover_text(rung.name(lang));
            }
        },
        |ui, l| {
            ui.monospace(format!("{} ms", show_sig(l.median_ms, 3)));
            ui.monospace(show_bytes(l.bytes));
            ui.monospace(show_sig(l.gflops, 3));
            ui.monospace(show_bytes(l.extra_bytes));
            ui.monospace(show_sig(l.share_of_bound, 2));
            if l.ok {
                ui.colored_label(theme::good(ui.visuals()), t(lang, "race.right"));
            } else {
                ui.colored_label(theme::bad(ui.visuals()), t(lang, "race.wrong"));
            }
        },
    );
}
