//! A run through the pipeline: one worker first (its stage times are the
//! model's inputs), then the chosen workers; the loader and the trainer
//! drawn live; measured against predicted. Also the sweep over 1–8
//! workers the throughput plot shows.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dlsys_core::errors::Localized as _;
use dlsys_core::memory::show_seconds;
use dlsys_core::pipeline::{Costs, MAX_WORKERS, PipelineError, PipelineRun, StepRecord, predict, train_through};
use dlsys_core::text::Lang;

use super::{Settings, TEXT, cores, dataset_name, number, t};
use crate::kit::background::Background;
use crate::kit::{gantt, theme};

/// What a finished job leaves.
pub struct Finished {
    pub settings: Settings,
    /// One worker, then the chosen count (absent when it is one).
    pub one: PipelineRun,
    pub chosen: Option<PipelineRun>,
    /// A sweep: every worker count's run.
    pub sweep: Vec<PipelineRun>,
    /// Examples in the data set (an epoch).
    pub examples: usize,
}

impl Finished {
    pub fn costs(&self) -> Costs {
        self.one.costs()
    }

    /// The run the timeline shows: the chosen workers', or a sweep's last.
    pub fn main(&self) -> &PipelineRun {
        self.chosen.as_ref().or(self.sweep.last()).unwrap_or(&self.one)
    }

    /// Every run, by workers.
    pub fn all(&self) -> impl Iterator<Item = &PipelineRun> {
        std::iter::once(&self.one).chain(&self.sweep).chain(&self.chosen)
    }
}

/// The steps of the run in flight, for the live timeline.
#[derive(Default)]
struct Live {
    workers: usize,
    records: Vec<StepRecord>,
}

#[derive(Default)]
pub struct Runs {
    job: Background<Result<Finished, PipelineError>>,
    live: Arc<Mutex<Live>>,
    stop: Arc<AtomicBool>,
    pub last: Option<Result<Finished, PipelineError>>,
}

impl Runs {
    pub fn logic(&mut self, ctx: &egui::Context) {
        if let Some(outcome) = self.job.take(ctx) {
            self.last = Some(outcome);
        }
        if self.job.is_running() {
            ctx.request_repaint_after(web_time::Duration::from_millis(100));
        }
    }

    pub fn is_running(&self) -> bool {
        self.job.is_running()
    }

    /// Runs one worker then `s.workers` (or, for a sweep, every count from
    /// one to eight).
    pub fn start(&mut self, s: &Settings, sweep: bool) {
        self.stop.store(false, Ordering::Relaxed);
        self.last = None;
        let (live, stop, s) = (self.live.clone(), self.stop.clone(), s.clone());
        self.job.start(move || {
            let packed = Arc::new(
                dlsys_core::nn::data::load_packed(dataset_name()).map_err(|e| PipelineError::Data { reason: e.to_string() })?,
            );
            let run = |workers: usize| {
                if let Ok(mut l) = live.lock() {
                    *l = Live {
                        workers,
                        records: Vec::new(),
                    };
                }
                train_through(packed.clone(), &s.pipeline(workers), s.batches, stop.clone(), &mut |r| {
                    if let Ok(mut l) = live.lock() {
                        l.records.push(r.clone());
                    }
                    !stop.load(Ordering::Relaxed)
                })
            };
            let one = run(1)?;
            let counts: Vec<usize> = if sweep { (2..=MAX_WORKERS).collect() } else { vec![s.workers] };
            let mut runs = Vec::new();
            for k in counts.into_iter().filter(|k| *k > 1) {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                runs.push(run(k)?);
            }
            let (chosen, sweep_runs) = if sweep { (None, runs) } else { (runs.pop(), Vec::new()) };
            Ok(Finished {
                examples: packed.len(),
                settings: s,
                one,
                chosen,
                sweep: sweep_runs,
            })
        });
    }

    pub fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        if self.job.is_running() {
            return None;
        }
        let failure = |why: String| Some(Err(crate::SelfTestFailure(why)));
        let finished = match &self.last {
            Some(Ok(f)) => f,
            Some(Err(e)) => return failure(e.to_string()),
            None => return failure("the run stopped without a result".to_owned()),
        };
        let main = finished.main();
        let want = finished.settings.batches;
        if finished.one.records.len() != want || main.records.len() != want {
            return failure(format!("{} and {} steps, not {want}", finished.one.records.len(), main.records.len()));
        }
        let u = main.utilisation();
        if !(u > 0.0 && u <= 1.0) {
            return failure(format!("utilisation {u}"));
        }
        Some(Ok(format!("{want} batches with 1 and {} workers, utilisation {:.0}%", main.settings.workers, 100.0 * u)))
    }
}

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, runs: &mut Runs, lang: Lang) {
    ui.label(t(lang, "run.explain"));
    ui.horizontal_wrapped(|ui| {
        // The web has one cooperative worker and no queue to fill.
        if cfg!(not(target_arch = "wasm32")) {
            number(ui, t(lang, "run.workers"), &mut s.workers, 1..=MAX_WORKERS, 0.05);
            number(ui, t(lang, "run.prefetch"), &mut s.prefetch, 1..=dlsys_core::pipeline::MAX_PREFETCH, 0.05);
        }
        number(ui, t(lang, "run.batch"), &mut s.batch, 8..=256, 0.5);
        number(ui, t(lang, "run.batches"), &mut s.batches, 10..=super::MAX_RUN_BATCHES, 0.5);
    });
    ui.horizontal_wrapped(|ui| {
        ui.checkbox(&mut s.augment, t(lang, "run.augment"));
        number(ui, t(lang, "run.decode"), &mut s.decode_ms, 0.0..=5.0, 0.005);
        number(ui, t(lang, "run.read"), &mut s.read_ms, 0.0..=5.0, 0.005);
    });
    ui.horizontal_wrapped(|ui| {
        let running = runs.is_running();
        if ui.add_enabled(!running, egui::Button::new(t(lang, "run.run"))).clicked() {
            runs.start(s, false);
            ui.ctx().request_repaint();
        }
        if running {
            if ui.button(t(lang, "run.stop")).clicked() {
                runs.stop.store(true, Ordering::Relaxed);
            }
            ui.spinner();
            let (workers, done) = runs.live.lock().map_or((0, 0), |l| (l.workers, l.records.len()));
            ui.label(TEXT.fill(lang, "run.progress", &[("k", &workers), ("done", &done), ("of", &s.batches)]));
        }
    });
    if runs.is_running() {
        // A copy, so the trainer is not held up while the frame draws.
        let (workers, records) = runs.live.lock().map_or((0, Vec::new()), |l| {
            (l.workers, l.records[l.records.len().saturating_sub(WINDOW)..].to_vec())
        });
        timeline(ui, workers, &records, lang);
        return;
    }
    match &runs.last {
        Some(Ok(finished)) => {
            if !finished.settings.same_run(s) {
                ui.weak(t(lang, "run.stale"));
            }
            let main = finished.main();
            timeline(ui, main.settings.workers, &main.records, lang);
            results(ui, finished, lang);
        }
        Some(Err(e)) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
        }
        None => {}
    }
}

/// The batches the timeline shows: the last 40.
const WINDOW: usize = 40;

/// The loader's workers and the trainer over the last [`WINDOW`] batches
/// the trainer took: when each was built, when the trainer waited and when
/// it computed.
fn timeline(ui: &mut egui::Ui, workers: usize, records: &[StepRecord], lang: Lang) {
    let Some(last) = records.last() else {
        return;
    };
    let visuals = ui.visuals().clone();
    let (load, wait, compute) = (theme::series(&visuals, 2), visuals.weak_text_color().gamma_multiply(0.5), theme::series(&visuals, 0));
    gantt::legend(ui, "pipe_gantt", &[(load, t(lang, "run.load")), (wait, t(lang, "run.wait")), (compute, t(lang, "run.compute"))]);
    let window = &records[records.len().saturating_sub(WINDOW)..];
    let from = window.first().map_or(0.0, |r| r.asked_s);
    let bar = |start_s, end_s, color| gantt::Bar { start_s, end_s, color };
    let mut rows: Vec<gantt::Row> = (0..workers.max(1))
        .map(|w| gantt::Row {
            label: TEXT.fill(lang, "run.worker", &[("w", &w)]),
            bars: window.iter().filter(|r| r.worker == w).map(|r| bar(r.load_start_s, r.load_end_s, load)).collect(),
        })
        .collect();
    rows.push(gantt::Row {
        label: t(lang, "run.trainer").to_owned(),
        bars: window
            .iter()
            .flat_map(|r| [bar(r.asked_s, r.got_s, wait), bar(r.got_s, r.done_s, compute)])
            .collect(),
    });
    let busy: f64 = window.iter().map(StepRecord::compute_s).sum();
    let span = (last.done_s - from).max(f64::MIN_POSITIVE);
    let summary = TEXT.fill(
        lang,
        "run.timeline",
        &[
            ("n", &window.len()),
            ("span", &show_seconds(span)),
            ("util", &format!("{:.0}%", 100.0 * busy / span)),
        ],
    );
    gantt::draw(ui, &rows, (from, last.done_s), &summary);
}

/// Measured beside predicted for one worker and the chosen count, and the
/// stage times the prediction comes from.
fn results(ui: &mut egui::Ui, finished: &Finished, lang: Lang) {
    let costs = finished.costs();
    let cores = cores();
    let t1 = finished.one.mean_times();
    ui.label(TEXT.fill(
        lang,
        "run.stages",
        &[
            ("read", &show_seconds(t1.read_s)),
            ("decode", &show_seconds(t1.decode_s)),
            ("augment", &show_seconds(t1.augment_s)),
            ("extra_cpu", &show_seconds(t1.extra_cpu_s)),
            ("extra_io", &show_seconds(t1.extra_io_s)),
            ("collate", &show_seconds(t1.collate_s)),
            ("compute", &show_seconds(costs.compute_s)),
        ],
    ));
    theme::sideways(ui, "pipe_results", |ui| {
        egui::Grid::new("pipe_result_rows").striped(true).show(ui, |ui| {
            for key in ["col.workers", "col.util", "col.util_model", "col.rate", "col.rate_model", "col.bound"] {
                ui.label(egui::RichText::new(t(lang, key)).strong());
            }
            ui.end_row();
            for run in finished.all() {
                let k = run.settings.workers;
                let p = predict(costs, k, cores, run.settings.threads);
                ui.label(k.to_string());
                ui.label(format!("{:.1}%", 100.0 * run.utilisation()));
                ui.label(format!("{:.1}%", 100.0 * p.utilisation));
                ui.label(format!("{:.0}", run.samples_per_s()));
                ui.label(format!("{:.0}", p.samples_per_s(run.settings.batch)));
                ui.label(TEXT.get(lang, &format!("bound.{}", p.bound.key())));
                ui.end_row();
            }
        });
    });
    let k = finished.main().settings.workers;
    let threads = finished.main().settings.threads;
    let p = predict(costs, k, cores, threads);
    // One cooperative worker (the web): everything in turn, nothing overlaps.
    let formula = if threads { "run.formula" } else { "run.formula_serial" };
    ui.label(TEXT.fill(
        lang,
        formula,
        &[
            ("tc", &show_seconds(costs.compute_s)),
            ("tcpu", &show_seconds(costs.cpu_s)),
            ("tio", &show_seconds(costs.io_s)),
            ("k", &k),
            ("cores", &cores),
            ("period", &show_seconds(p.period_s)),
            ("util", &format!("{:.1}%", 100.0 * p.utilisation)),
        ],
    ));
    if !threads {
        ui.weak(t(lang, "run.coarse_clock"));
    }
}
