//! Static against continuous batching, and continuous batching with chunked
//! prefill, on the virtual clock: the calculator section's model and device
//! serve a seeded Poisson stream; throughput, the p99 latency and the p99
//! time per output token against the arrival rate (a sweep around the
//! server's rough capacity), and every scheme at the learner's rate in a
//! table.

use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::inference::InferError;
use dlsys_core::inference::batching::{
    self, BatchingRun, BatchingSettings, KvCapacity, KvLayout, MAX_BATCH, MAX_LENGTH, RatePoint, Scheme,
};
use dlsys_core::memory::show_seconds;
use dlsys_core::names::Named as _;
use dlsys_core::text::Lang;
use serde::{Deserialize, Serialize};

use super::{Settings, TEXT, t};
use crate::kit::memo::Memo;
use crate::kit::table::{Header, headed};
use crate::kit::theme;

/// The learner's stream; the model and device are the calculator's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stream {
    pub rate: f64,
    pub requests: u32,
    pub max_batch: u32,
    pub max_wait_s: f64,
    /// Tokens an iteration of chunked prefill carries.
    pub chunk_tokens: u32,
    /// The KV cache paged (in section 4's blocks), or reserved per request.
    pub paged: bool,
    pub seed: u64,
}

impl Default for Stream {
    fn default() -> Self {
        Self {
            rate: 10.0,
            requests: 200,
            max_batch: 32,
            max_wait_s: 2.0,
            chunk_tokens: 512,
            paged: false,
            seed: 1,
        }
    }
}

/// Most requests the page simulates (the core takes more).
const PAGE_REQUESTS: u32 = 1000;

impl Stream {
    pub fn clamped(&mut self) {
        let d = Self::default();
        if !(self.rate.is_finite() && self.rate > 0.0) {
            self.rate = d.rate;
        }
        self.rate = self.rate.clamp(0.01, 1e4);
        self.requests = self.requests.clamp(1, PAGE_REQUESTS);
        self.max_batch = self.max_batch.clamp(1, MAX_BATCH);
        if !self.max_wait_s.is_finite() {
            self.max_wait_s = d.max_wait_s;
        }
        self.max_wait_s = self.max_wait_s.clamp(0.0, 60.0);
        self.chunk_tokens = self.chunk_tokens.clamp(self.max_batch + 1, MAX_LENGTH as u32);
    }

    /// The core's settings on the calculator's model and device.
    pub fn settings(&self, s: &Settings) -> BatchingSettings {
        BatchingSettings {
            requests: self.requests,
            max_batch: self.max_batch,
            max_wait_s: self.max_wait_s,
            chunk_tokens: self.chunk_tokens,
            kv: if self.paged { KvLayout::Paged } else { KvLayout::Contiguous },
            block_tokens: s.stream.block_tokens,
            seed: self.seed,
            ..BatchingSettings::new(s.serve(), self.rate)
        }
    }
}

/// The sweep and the learner's rate, for the settings they ran with, and
/// the KV memory beside the weights in tokens.
pub struct Study {
    sweep: Vec<RatePoint>,
    chosen: RatePoint,
    kv: KvCapacity,
}

fn study(s: &BatchingSettings) -> Result<Study, InferError> {
    let sweep = batching::sweep(s, &batching::sweep_rates(s)?)?;
    let chosen = batching::sweep(s, &[s.rate])?.remove(0);
    let kv = s.kv_capacity()?;
    Ok(Study {
        sweep,
        chosen,
        kv,
    })
}

#[derive(Default)]
pub struct Cache {
    memo: Memo<BatchingSettings, Result<Study, InferError>>,
}

impl Cache {
    pub fn compute(&mut self, s: &BatchingSettings) -> &Result<Study, InferError> {
        self.memo.get(s, study)
    }

    /// For the self-test: at the sweep's highest rate continuous batching,
    /// with and without chunked prefill, serves more than static.
    pub fn outcome(&self) -> Option<crate::SelfTestResult> {
        Some(match self.memo.last()? {
            Ok(study) => {
                let last = study.sweep.last()?;
                let (st, co) = (last.static_run.throughput, last.continuous.throughput);
                let ch = last.chunked.throughput;
                let detail = format!("at {:.1} requests/s: static {st:.0} vs continuous {co:.0} vs chunked {ch:.0} tokens/s", last.rate);
                if co > st && ch > st { Ok(detail) } else { Err(crate::SelfTestFailure(detail)) }
            }
            Err(e) => Err(crate::SelfTestFailure(e.to_string())),
        })
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, s: &mut Settings, lang: Lang) {
        ui.label(t(lang, "batching.explain"));
        let st = &mut s.batching;
        ui.horizontal_wrapped(|ui| {
            crate::kit::number_field(ui, t(lang, "batching.rate"), &mut st.rate, 0.01..=1e4, 0.1);
            crate::kit::number_field(ui, t(lang, "batching.max_batch"), &mut st.max_batch, 1..=MAX_BATCH, 0.2);
            crate::kit::number_field(ui, t(lang, "batching.max_wait"), &mut st.max_wait_s, 0.0..=60.0, 0.05);
            crate::kit::number_field(ui, t(lang, "batching.requests"), &mut st.requests, 1..=PAGE_REQUESTS, 1.0);
            let least = st.max_batch + 1;
            crate::kit::number_field(ui, t(lang, "batching.chunk"), &mut st.chunk_tokens, least..=MAX_LENGTH as u32, 4.0);
            crate::kit::number_field(ui, t(lang, "batching.seed"), &mut st.seed, 0..=u64::from(u32::MAX), 0.2);
            ui.checkbox(&mut st.paged, TEXT.fill(lang, "batching.paged", &[("block", &s.stream.block_tokens)]));
        });
        let settings = s.batching.settings(s);
        ui.label(TEXT.fill(
            lang,
            "batching.stream",
            &[
                ("model", &s.model.name()),
                ("device", &s.device.name()),
                ("plo", &settings.prompt.0),
                ("phi", &settings.prompt.1),
                ("olo", &settings.output.0),
                ("ohi", &settings.output.1),
            ],
        ));
        let study = match self.compute(&settings) {
            Ok(study) => study,
            Err(e) => {
                ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
                return;
            }
        };
        let memory_key = if settings.kv == KvLayout::Paged { "batching.memory_paged" } else { "batching.memory_contiguous" };
        ui.label(TEXT.fill(lang, memory_key, &dlsys_core::text::args(&study.kv.fields())));
        sweep_plots(ui, study, lang);
        let runs = [&study.chosen.static_run, &study.chosen.continuous, &study.chosen.chunked];
        results_table(ui, &runs, lang);
        let (st, co, ch) = (runs[0], runs[1], runs[2]);
        ui.label(TEXT.fill(
            lang,
            "batching.why",
            &[
                ("rate", &show_sig(settings.rate, 3)),
                ("ratio", &format!("{:.2}", co.throughput / st.throughput.max(1e-12))),
                ("pad", &format!("{:.0}", 100.0 * st.padding_share)),
                ("st_ttft", &show_seconds(st.ttft_p50)),
                ("co_ttft", &show_seconds(co.ttft_p50)),
            ],
        ));
        ui.label(TEXT.fill(
            lang,
            "batching.chunked_why",
            &[
                ("chunk", &settings.chunk_tokens),
                ("ch_tpot", &show_seconds(ch.tpot_p99)),
                ("co_tpot", &show_seconds(co.tpot_p99)),
                ("ch_ttft", &show_seconds(ch.ttft_p50)),
                ("co_ttft", &show_seconds(co.ttft_p50)),
                ("ch_tput", &show_sig(ch.throughput, 4)),
                ("co_tput", &show_sig(co.throughput, 4)),
            ],
        ));
    }
}

/// A plot of the sweep: its id, heading and y-axis keys, the value plotted
/// and whether on a log₁₀ scale.
type SweepPlot = (&'static str, &'static str, &'static str, fn(&BatchingRun) -> f64, bool);

/// Throughput, and the p99 end-to-end latency (log₁₀), against the arrival
/// rate for both schemes, with the learner's rate marked.
fn sweep_plots(ui: &mut egui::Ui, study: &Study, lang: Lang) {
    use egui_plot::{Line, Plot, PlotPoints, Points, VLine};
    let visuals = ui.visuals().clone();
    let colours = [theme::series(&visuals, 0), theme::series(&visuals, 1), theme::series(&visuals, 3)];
    let marker = theme::series(&visuals, 2);
    let run = |p: &RatePoint, scheme: Scheme| -> BatchingRun {
        match scheme {
            Scheme::Static => p.static_run.clone(),
            Scheme::Continuous => p.continuous.clone(),
            Scheme::Chunked => p.chunked.clone(),
        }
    };
    let chosen = study.chosen.rate;
    let plots: [SweepPlot; 3] = [
        ("infer_batching_tput", "plot.throughput_heading", "axis.throughput", |r| r.throughput, false),
        ("infer_batching_p99", "plot.latency_heading", "axis.seconds", |r| r.e2e_p99, true),
        ("infer_batching_tpot", "plot.tpot_heading", "axis.seconds", |r| r.tpot_p99, true),
    ];
    for (id, heading, y_label, value, log) in plots {
        ui.label(t(lang, heading));
        let mut plot = Plot::new(id)
            .height(180.0)
            .x_axis_label(t(lang, "axis.rate"))
            .y_axis_label(t(lang, y_label))
            .allow_scroll(false);
        plot = if log {
            // At least the decade from 1 s to 10 s, so two marks are labelled.
            plot.y_grid_spacer(theme::decade_grid())
                .y_axis_formatter(|mark, _| show_sig(10f64.powf(mark.value), 3))
                .include_y(0.0)
                .include_y(1.0)
        } else {
            plot.include_y(0.0)
        };
        plot.show(ui, |plot| {
            for (scheme, colour) in Scheme::ALL.into_iter().zip(colours) {
                let points: Vec<[f64; 2]> = study
                    .sweep
                    .iter()
                    .map(|p| {
                        let v = value(&run(p, scheme));
                        [p.rate, if log { v.max(1e-6).log10() } else { v }]
                    })
                    .collect();
                let name = scheme.name(lang);
                plot.line(Line::new(name.clone(), PlotPoints::from(points.clone())).color(colour));
                plot.points(Points::new(name, PlotPoints::from(points)).radius(3.0).color(colour));
            }
            // Wider than a grid line, which it may fall on.
            plot.vline(
                VLine::new(t(lang, "plot.your_rate"), chosen)
                    .color(marker)
                    .width(2.0)
                    .style(egui_plot::LineStyle::dashed_loose()),
            );
        });
        let keys: Vec<_> = Scheme::ALL
            .into_iter()
            .zip(colours)
            .map(|(scheme, colour)| crate::kit::figure::Key::line(scheme.name(lang), colour))
            .chain([crate::kit::figure::Key::rule(t(lang, "plot.your_rate"), marker)])
            .collect();
        crate::kit::figure::legend(ui, id, &keys);
    }
}

fn results_table(ui: &mut egui::Ui, runs: &[&BatchingRun], lang: Lang) {
    let keys = ["col.scheme", "col.throughput", "col.ttft_p50", "col.ttft_p99", "col.e2e_p50", "col.e2e_p99", "col.tpot_p99", "col.mean_batch", "col.padding", "col.kv_waste", "col.preempted"];
    headed(
        ui,
        "infer_batching_table",
        runs,
        Header { text: &TEXT, lang, keys: &keys },
        |ui, run| {
            ui.label(run.scheme.name(lang));
        },
        |ui, run| {
            ui.monospace(show_sig(run.throughput, 4));
            for seconds in [run.ttft_p50, run.ttft_p99, run.e2e_p50, run.e2e_p99, run.tpot_p99] {
                ui.monospace(show_seconds(seconds));
            }
            ui.monospace(format!("{:.1}", run.mean_batch));
            ui.monospace(format!("{:.1} %", 100.0 * run.padding_share));
            ui.monospace(format!("{:.1} %", 100.0 * run.kv_waste));
            ui.monospace(run.preempted.to_string());
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsys_core::inference::calc::DevicePreset;

    #[test]
    fn the_paged_box_runs_the_study_paged_and_it_runs_more_where_memory_binds() {
        let mut s = Settings {
            device: DevicePreset::Rtx4090,
            ..Settings::default()
        };
        s.batching.max_batch = 64;
        s.batching.rate = 20.0;
        let mut run = |paged: bool| {
            s.batching.paged = paged;
            let settings = s.batching.settings(&s);
            assert_eq!(settings.block_tokens, s.stream.block_tokens);
            let study = study(&settings).unwrap();
            (study.kv, study.chosen.continuous)
        };
        let (tokens, reserved) = run(false);
        let (same, paged) = run(true);
        assert_eq!(tokens, same);
        assert_eq!((reserved.kv, paged.kv), (KvLayout::Contiguous, KvLayout::Paged));
        assert!(paged.mean_batch > reserved.mean_batch && paged.kv_waste < reserved.kv_waste);
    }
}
