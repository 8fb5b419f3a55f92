//! The N sweep: every rung at N = 128, 256, … up to the chosen length, one
//! race per length (the programs made off the UI thread), the median time
//! of each against N on log-log axes — the naive rung's grows with its N²
//! score matrix. `dlsys-lab bench kernels --family attention --sweep`
//! prints the same races.

use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::kernels::attention::{AttnRung, AttnShape, sweep_lengths};
use dlsys_core::names::Named as _;
use dlsys_shaders::attention::{AttnRow, rows};

use super::loglog::{Series, plot};
use super::{Built, Settings, TEXT, build, ladder, split, t};
use crate::Env;
use crate::kit::background::Background;
use crate::kit::race::Race;
use crate::kit::theme;

#[derive(Default)]
pub struct Sweep {
    race: Race,
    building: Background<Built>,
    /// Lengths still to run, and the one racing.
    pending: Vec<u32>,
    current: Option<AttnShape>,
    /// Each length's rows.
    pub done: Vec<(u32, Vec<AttnRow>)>,
    /// (N, rung, why) for each refusal.
    refused: Vec<(u32, AttnRung, String)>,
    error: Option<String>,
}

impl Sweep {
    pub fn is_busy(&self) -> bool {
        !self.pending.is_empty() || self.current.is_some() || self.building.is_running()
    }

    fn start(&mut self, s: &Settings) {
        self.done.clear();
        self.refused.clear();
        self.error = None;
        self.current = None;
        self.pending = sweep_lengths()
            .into_iter()
            .filter(|n| *n <= s.sweep_max)
            .rev()
            .collect();
    }

    /// Advances the sweep: reads a finished race, starts the next length.
    pub fn logic(&mut self, ctx: &egui::Context, env: &Env<'_>, s: &Settings) {
        self.race.poll(ctx);
        if let Some(built) = self.building.take(ctx) {
            match built {
                Ok((shape, made)) => {
                    let (programs, refused) = split(made);
                    self.refused.extend(
                        refused
                            .into_iter()
                            .map(|(rung, e)| (shape.seq, rung, e.message(env.lang))),
                    );
                    self.current = Some(shape);
                    self.race.start_with(&ladder(1, false), programs, env);
                }
                Err(e) => {
                    self.error = Some(e.message(env.lang));
                    self.pending.clear();
                }
            }
            return;
        }
        if self.race.is_busy() || self.building.is_running() {
            return;
        }
        if let Some(shape) = self.current.take() {
            self.done.push((shape.seq, rows(&self.race.results, &shape)));
        }
        let Some(n) = self.pending.pop() else {
            return;
        };
        let limits = self.race.runner(env.gpu).map(dlsys_shaders::attention::limits);
        match (limits, s.shape(n)) {
            (Some(limits), Ok(shape)) => {
                let tiles = s.tiles();
                self.building.start(move || build(shape, tiles, limits));
            }
            (None, _) => {
                self.error = Some(t(env.lang, "sweep.needs_gpu").to_owned());
                self.pending.clear();
            }
            (_, Err(e)) => {
                self.error = Some(e.message(env.lang));
                self.pending.clear();
            }
        }
        ctx.request_repaint();
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, s: &mut Settings, env: &Env<'_>) {
        let lang = env.lang;
        crate::kit::prose(ui, t(lang, "sweep.explain"));
        ui.horizontal_wrapped(|ui| {
            ui.add_enabled_ui(!self.is_busy(), |ui| {
                let label = t(lang, "sweep.max");
                crate::kit::choice(ui, "attn_sweep_max", label, &mut s.sweep_max, sweep_lengths(), u32::to_string);
            });
            if self.is_busy() {
                ui.spinner();
                let total = sweep_lengths().iter().filter(|n| **n <= s.sweep_max).count();
                ui.label(TEXT.fill(
                    lang,
                    "sweep.progress",
                    &[("done", &self.done.len()), ("total", &total)],
                ));
                if ui.button(t(lang, "sweep.stop")).clicked() {
                    self.pending.clear();
                }
            } else if ui.button(t(lang, "sweep.run")).clicked() {
                self.start(s);
            }
        });
        if let Some(e) = &self.error {
            ui.colored_label(theme::bad(ui.visuals()), e);
        }
        for (n, rung, why) in &self.refused {
            ui.colored_label(
                theme::warn(ui.visuals()),
                TEXT.fill(lang, "sweep.refused", &[("n", n), ("rung", &rung.id()), ("why", why)]),
            );
        }
        if self.done.is_empty() {
            return;
        }
        let series: Vec<Series> = AttnRung::ALL
            .into_iter()
            .enumerate()
            .map(|(i, rung)| Series {
                name: rung.name(lang),
                color: theme::series(ui.visuals(), i),
                points: self
                    .done
                    .iter()
                    .filter_map(|(n, rows)| {
                        let row = rows.iter().find(|r| r.id == rung.id() && r.ok)?;
                        Some((f64::from(*n), row.median_ms))
                    })
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        plot(
            ui,
            "attn_sweep",
            (t(lang, "traffic.axis_n"), t(lang, "sweep.axis_ms")),
            |ms| show_sig(ms, 3),
            &series,
        );
        let wrong = self.done.iter().flat_map(|(_, rows)| rows).filter(|r| !r.ok).count();
        if wrong > 0 {
            ui.colored_label(
                theme::bad(ui.visuals()),
                TEXT.fill(lang, "sweep.wrong", &[("count", &wrong)]),
            );
        }
        crate::kit::prose(ui, t(lang, "sweep.note"));
    }
}

