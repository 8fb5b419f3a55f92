//! The fused groups timed on the GPU: each group's generated kernels run
//! on the kernel ladder op by op (as the step launches them unfused) and
//! fused, on the captured step's own values — a table of the times and
//! bytes, and every kernel placed on the GPU lessons' one roofline under
//! the copy kernel's memory roof and the FMA chain's compute roof.

use dlsys_core::compile::captured::Captured;
use dlsys_core::compile::fused_run::Timed;
use dlsys_core::float::show_sig;
use dlsys_core::kernels::{Data, Problem};
use dlsys_core::text::Lang;
use dlsys_shaders::LadderSettings;
use dlsys_shaders::fused_step::{ChainTiming, chain_timings, timing_programs};

use super::{TEXT, t};
use crate::Env;
use crate::kit::race::Race;
use crate::kit::table::{Look, pinned};
use crate::kit::theme;

/// Timed trials of each kernel.
const TRIALS: u32 = 5;

#[derive(Default)]
pub struct ChainRace {
    race: Race,
    /// The kernels of the last race (its results are theirs).
    timed: Vec<Timed>,
    /// A generator bug, said as it is.
    error: Option<String>,
}

impl ChainRace {
    pub fn is_busy(&self) -> bool {
        self.race.is_busy()
    }

    pub fn logic(&mut self, ctx: &egui::Context) {
        self.race.poll(ctx);
    }

    /// For the self-test: the race's verdict (every kernel right), and how
    /// many chains were timed (none on the CPU path).
    pub fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        if let Some(e) = &self.error {
            return Some(Err(crate::SelfTestFailure(e.clone())));
        }
        let verdict = self.race.self_test_outcome()?;
        let chains = chain_timings(&self.timed, &self.race.results);
        Some(verdict.map(|ok| format!("{ok}; {} chains timed", chains.len())))
    }

    pub fn start(&mut self, c: &Captured, env: &Env<'_>) {
        self.error = None;
        match timing_programs(&c.timed) {
            Ok(programs) => {
                // The copy and the FMA chain give the roofline its roofs.
                let mut settings = LadderSettings::families(&[], Problem::new(1, 1 << 16), Data::Random, TRIALS);
                settings.fma = true;
                self.timed = c.timed.clone();
                self.race.start_with(&settings, programs, env);
            }
            Err(e) => self.error = Some(format!("{e:?}")),
        }
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, c: &Captured, env: &Env<'_>) {
        let lang = env.lang;
        ui.add_space(8.0);
        ui.strong(t(lang, "time.heading"));
        ui.label(t(lang, "time.explain"));
        crate::kit::race::device_ui(ui, env);
        if !self.race.progress_ui(ui, lang) && ui.button(t(lang, "time.run")).clicked() {
            self.start(c, env);
        }
        if let Some(e) = &self.error {
            ui.colored_label(theme::bad(ui.visuals()), e);
            return;
        }
        if self.race.is_busy() || self.race.results.is_empty() {
            return;
        }
        if self.timed != c.timed {
            ui.weak(t(lang, "time.stale"));
        }
        let chains = chain_timings(&self.timed, &self.race.results);
        if chains.is_empty() {
            // The CPU path times built-in kernels only.
            ui.weak(t(lang, "time.none"));
            return;
        }
        table(ui, &chains, lang);
        summary(ui, &chains, lang);
        let measured: Vec<_> = self.race.results.iter().filter_map(|o| o.measured()).collect();
        crate::kit::kernel_plots::roofline(ui, lang, &measured);
    }
}

fn table(ui: &mut egui::Ui, chains: &[ChainTiming], lang: Lang) {
    let cols = ["col.ops", "col.unfused", "col.fused", "col.ratio", "col.right"];
    let ms = |v: f64| format!("{} ms", show_sig(v, 3));
    pinned(
        ui,
        "frameworks_chain_times",
        chains.len() + 1,
        Look::default(),
        |ui, r| match r.checked_sub(1).and_then(|i| chains.get(i)) {
            None => {
                ui.strong(t(lang, "col.chain"));
            }
            Some(c) => {
                ui.monospace(format!("g{}", c.group + 1));
            }
        },
        |ui, r| match r.checked_sub(1).and_then(|i| chains.get(i)) {
            None => {
                for key in cols {
                    ui.strong(t(lang, key));
                }
            }
            Some(c) => {
                ui.monospace(c.ops.to_string());
                ui.monospace(ms(c.unfused_ms));
                ui.monospace(ms(c.fused_ms));
                // A chain of one op is the same kernel either way.
                if c.ops > 1 {
                    ui.monospace(format!("{:.2}×", c.unfused_ms / c.fused_ms));
                } else {
                    ui.weak(t(lang, "time.same"));
                }
                let (key, colour) = if c.right {
                    ("time.right", theme::good(ui.visuals()))
                } else {
                    ("time.wrong", theme::bad(ui.visuals()))
                };
                ui.colored_label(colour, t(lang, key));
            }
        },
    );
}

fn summary(ui: &mut egui::Ui, chains: &[ChainTiming], lang: Lang) {
    let sum = |f: fn(&ChainTiming) -> f64| chains.iter().map(f).sum::<f64>();
    let (unfused, fused) = (sum(|c| c.unfused_ms), sum(|c| c.fused_ms));
    let (ub, fb) = (
        chains.iter().map(|c| c.unfused_bytes).sum::<u64>(),
        chains.iter().map(|c| c.fused_bytes).sum::<u64>(),
    );
    ui.label(TEXT.fill(
        lang,
        "time.summary",
        &[
            ("launches", &chains.iter().map(|c| c.ops).sum::<usize>()),
            ("groups", &chains.len()),
            ("unfused", &show_sig(unfused, 3)),
            ("fused", &show_sig(fused, 3)),
            ("ratio", &format!("{:.2}", unfused / fused)),
            ("ubytes", &dlsys_core::memory::show_bytes(ub)),
            ("fbytes", &dlsys_core::memory::show_bytes(fb)),
        ],
    ));
}
