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
use dlsys_core::compile::step::StepModel;
use dlsys_shaders::fused_step::{
    ChainTiming, ChainTotals, TRIALS, chain_timings, ratio, timing_programs,
};
use dlsys_shaders::{LadderSettings, Outcome};

use super::{TEXT, t};
use crate::Env;
use crate::kit::race::Race;
use crate::kit::table::{Header, headed};
use crate::kit::theme;

#[derive(Default)]
pub struct ChainRace {
    race: Race,
    /// The kernels of the last race (its results are theirs), and the
    /// capture they came from (model, MLP sizes, batch).
    timed: Vec<Timed>,
    from: Option<(StepModel, Vec<usize>, usize)>,
    /// The last race timed the fused kernels alone, once (the self-test).
    quick: bool,
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
        let fused = (self.race.results.iter())
            .filter(|o| matches!(o, Outcome::Program(Ok(r)) if r.check.ok))
            .count();
        Some(verdict.map(|ok| format!("{ok}; {fused} fused kernel right on the GPU")))
    }

    /// Times every group's kernels, op by op and fused, beside the copy
    /// and the FMA chain (the roofline's roofs); `quick` (the self-test):
    /// the longest group's fused kernel alone, once.
    pub fn start(&mut self, c: &Captured, quick: bool, env: &Env<'_>) {
        self.error = None;
        let longest = c.fusion.longest().map(|(i, _)| i);
        let timed: Vec<Timed> = (c.timed.iter())
            .filter(|t| !quick || (t.op.is_none() && Some(t.group) == longest))
            .cloned()
            .collect();
        match timing_programs(&timed) {
            Ok(programs) => {
                let trials = if quick { 1 } else { TRIALS };
                let mut settings =
                    LadderSettings::families(&[], Problem::new(1, 1 << 16), Data::Random, trials);
                settings.fma = !quick;
                self.timed = timed;
                self.from = Some((c.model, c.sizes.clone(), c.batch));
                self.quick = quick;
                self.race.start_with(&settings, programs, env);
            }
            Err(e) => self.error = Some(format!("{e:?}")),
        }
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, c: &Captured, env: &Env<'_>) {
        let lang = env.lang;
        ui.add_space(8.0);
        crate::kit::anchor(&ui.strong(t(lang, "time.heading")), "time");
        ui.label(t(lang, "time.explain"));
        crate::kit::race::device_ui(ui, env);
        if !self.race.progress_ui(ui, lang) && ui.button(t(lang, "time.run")).clicked() {
            self.start(c, false, env);
        }
        if let Some(e) = &self.error {
            ui.colored_label(theme::bad(ui.visuals()), e);
            return;
        }
        if self.race.is_busy() || self.race.results.is_empty() {
            return;
        }
        if self.from != Some((c.model, c.sizes.clone(), c.batch)) {
            ui.weak(t(lang, "time.stale"));
        }
        let chains = chain_timings(&self.timed, &self.race.results);
        if chains.is_empty() {
            // The self-test's quick race has no op-by-op times; the CPU
            // path times built-in kernels only.
            ui.weak(t(lang, if self.quick { "time.quick" } else { "time.none" }));
            return;
        }
        table(ui, &chains, lang);
        summary(ui, &chains, lang);
        let measured: Vec<_> = self.race.results.iter().filter_map(|o| o.measured()).collect();
        crate::kit::kernel_plots::roofline(ui, lang, &measured);
    }
}

fn table(ui: &mut egui::Ui, chains: &[ChainTiming], lang: Lang) {
    let cols = ["col.chain", "col.ops", "col.unfused", "col.fused", "col.ratio", "col.right"];
    let ms = |v: f64| format!("{} ms", show_sig(v, 3));
    headed(
        ui,
        "frameworks_chain_times",
        chains,
        Header { text: &TEXT, lang, keys: &cols },
        |ui, c| {
            ui.monospace(format!("g{}", c.group + 1));
        },
        |ui, c| {
            ui.monospace(c.ops.to_string());
            ui.monospace(ms(c.unfused_ms));
            ui.monospace(ms(c.fused_ms));
            // A chain of one op is the same kernel either way.
            match ratio(c.unfused_ms, c.fused_ms) {
                Some(r) if c.ops > 1 => {
                    ui.monospace(format!("{r:.2}×"));
                }
                _ => {
                    ui.weak(t(lang, "time.same"));
                }
            }
            let (key, colour) = if c.right {
                ("time.right", theme::good(ui.visuals()))
            } else {
                ("time.wrong", theme::bad(ui.visuals()))
            };
            ui.colored_label(colour, t(lang, key));
        },
    );
}

fn summary(ui: &mut egui::Ui, chains: &[ChainTiming], lang: Lang) {
    let s = ChainTotals::of(chains);
    let Some(r) = ratio(s.unfused_ms, s.fused_ms) else {
        return;
    };
    ui.label(TEXT.fill(
        lang,
        "time.summary",
        &[
            ("launches", &s.launches),
            ("groups", &s.groups),
            ("unfused", &show_sig(s.unfused_ms, 3)),
            ("fused", &show_sig(s.fused_ms, 3)),
            ("ratio", &format!("{r:.2}")),
            ("ubytes", &dlsys_core::memory::show_bytes(s.unfused_bytes)),
            ("fbytes", &dlsys_core::memory::show_bytes(s.fused_bytes)),
        ],
    ));
}
