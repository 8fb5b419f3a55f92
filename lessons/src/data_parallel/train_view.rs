//! Data-parallel training for real: N replicas of the engine's MLP on the
//! two-moons data, the gradients all-reduced by the chosen algorithm, the
//! loss beside one worker with the whole batch, and one step on the
//! virtual clock per worker (compute, waiting, all-reduce).

use dlsys_core::names::{Named as _, Node};
use dlsys_core::collective::{
    AsyncRun, CollectiveError, Compression, DpRun, DpSettings, Straggler, train_async, train_single, train_sync,
};
use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::memory::{show_bytes, show_seconds};
use dlsys_core::nn::{Activation, OptimizerKind, data};
use dlsys_core::text::Lang;
use super::{Settings, TEXT, number, t};
use crate::kit::background::Background;
use crate::kit::{gantt, theme};
use crate::kit::theme::ReadableAxes as _;

/// What a finished run shows.
pub struct Trained {
    run: DpRun<f32>,
    single: Vec<f64>,
    /// The same examples (N × steps batches of b) asynchronously.
    asynchronous: AsyncRun<f32>,
}

type Outcome = (DpSettings, Result<Trained, CollectiveError>);

/// The run in flight and the last one made.
#[derive(Default)]
pub struct Training {
    job: Background<Outcome>,
    last: Option<Outcome>,
}

impl Training {
    pub fn logic(&mut self, ctx: &egui::Context) {
        if let Some(outcome) = self.job.take(ctx) {
            self.last = Some(outcome);
        }
    }

    pub fn is_running(&self) -> bool {
        self.job.is_running()
    }

    /// Trains the default settings, as the Train button does.
    pub fn start_self_test(&mut self) {
        let settings = dp_settings(&Settings::default());
        self.last = None;
        self.job.start(move || train(settings));
    }

    /// Whether the run trained, its replicas agree and its losses follow
    /// the one-worker run.
    pub fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        if self.job.is_running() {
            return None;
        }
        let failure = |why: String| Some(Err(crate::SelfTestFailure(why)));
        let Some((_, result)) = &self.last else {
            return failure("the training stopped without a result".to_owned());
        };
        let trained = match result {
            Ok(trained) => trained,
            Err(e) => return failure(e.to_string()),
        };
        let differs = largest_difference(trained);
        if !trained.run.replicas_identical || differs > 1e-4 {
            return failure(format!("replicas identical: {}, loss differs by {differs:e}", trained.run.replicas_identical));
        }
        Some(Ok(format!("{} steps, losses within {differs:.1e} of one worker", trained.run.steps.len())))
    }
}

/// The largest relative difference between the data-parallel losses and
/// the one-worker run's.
fn largest_difference(trained: &Trained) -> f64 {
    trained
        .run
        .steps
        .iter()
        .zip(&trained.single)
        .map(|(a, b)| (a.loss - b).abs() / b.abs().max(f64::MIN_POSITIVE))
        .fold(0.0, f64::max)
}

/// The run the settings describe.
pub(super) fn dp_settings(s: &Settings) -> DpSettings {
    DpSettings {
        hidden: vec![64, 64],
        activation: Activation::Tanh,
        // Plain SGD: under momentum, stale asynchronous gradients add up to
        // a larger effective momentum and the asynchronous run diverges.
        optimizer: OptimizerKind::Sgd,
        lr: 0.1,
        workers: s.workers,
        shard: s.shard,
        algorithm: s.algorithm,
        steps: s.steps,
        seed: 7,
        link: s.link(),
        flops_per_s: s.gflops * 1e9,
        straggler: s.straggler.then_some(Straggler {
            worker: s.workers - 1,
            slowdown: s.slowdown,
        }),
        compression: Compression::None,
    }
}

fn train(settings: DpSettings) -> Outcome {
    let result = (|| {
        let moons = data::load("moons", 7).map_err(|e| CollectiveError::Model { reason: e.to_string() })?;
        let (train_set, _) = moons.split(data::TEST_FRACTION, 7);
        let run = train_sync::<f32>(&settings, &train_set, cfg!(not(target_arch = "wasm32")))?;
        let (single, _) = train_single::<f32>(&settings, &train_set)?;
        let asynchronous = train_async::<f32>(
            &DpSettings {
                steps: settings.steps * settings.workers,
                ..settings.clone()
            },
            &train_set,
            cfg!(not(target_arch = "wasm32")),
        )?;
        Ok(Trained {
            run,
            single,
            asynchronous,
        })
    })();
    (settings, result)
}

pub fn ui(ui: &mut egui::Ui, s: &mut Settings, training: &mut Training, lang: Lang) {
    crate::kit::prose(ui, t(lang, "train.explain"));
    ui.horizontal_wrapped(|ui| {
        number(ui, t(lang, "train.shard"), &mut s.shard, 1..=64, 0.1);
        number(ui, t(lang, "train.steps"), &mut s.steps, 1..=200, 0.5);
        number(ui, t(lang, "train.rate"), &mut s.gflops, 0.01..=1e4, 0.05);
        ui.checkbox(&mut s.straggler, t(lang, "train.straggler"));
        if s.straggler {
            number(ui, t(lang, "train.slowdown"), &mut s.slowdown, 1.0..=10.0, 0.05);
        }
    });
    let wanted = dp_settings(s);
    ui.horizontal_wrapped(|ui| {
        let running = training.is_running();
        if ui.add_enabled(!running, egui::Button::new(t(lang, "train.run"))).clicked() {
            let settings = wanted.clone();
            training.job.start(move || train(settings));
            ui.ctx().request_repaint();
        }
        if running {
            ui.spinner();
            ui.label(t(lang, "train.running"));
        }
    });
    let Some((ran, result)) = &training.last else {
        return;
    };
    if *ran != wanted {
        ui.weak(t(lang, "train.stale"));
    }
    match result {
        Ok(trained) => results(ui, ran, trained, lang),
        Err(e) => {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
        }
    }
}

fn results(ui: &mut egui::Ui, ran: &DpSettings, trained: &Trained, lang: Lang) {
    use egui_plot::{Line, PlotPoints};
    let visuals = ui.visuals().clone();
    let dp: Vec<f64> = trained.run.steps.iter().map(|x| x.loss).collect();
    let differs = largest_difference(trained);
    let n = ran.workers;
    ui.label(TEXT.fill(
        lang,
        "train.same",
        &[
            ("n", &n),
            ("b", &ran.shard),
            ("nb", &(n * ran.shard)),
            ("steps", &dp.len()),
            ("rel", &show_sig(differs, 2)),
            ("identical", &t(lang, if trained.run.replicas_identical { "train.identical" } else { "train.not_identical" })),
        ],
    ));
    let curve = |losses: &[f64]| -> PlotPoints<'static> {
        losses.iter().enumerate().map(|(i, l)| [i as f64 + 1.0, *l]).collect::<Vec<_>>().into()
    };
    let dp_name = TEXT.fill(lang, "train.series_dp", &[("n", &n), ("b", &ran.shard)]);
    let single_name = TEXT.fill(lang, "train.series_single", &[("nb", &(n * ran.shard))]);
    let single_key = single_name.clone();
    crate::kit::figure::plot("dp_train_loss", 180.0, t(lang, "axis.step"), t(lang, "axis.loss"))
        .readable_x()
        .readable_y()
        .show(ui, |plot| {
            // Drawn wide and pale underneath: the data-parallel curve runs on top of it.
            plot.line(
                Line::new(single_name.clone(), curve(&trained.single))
                    .color(theme::series(&visuals, 1).gamma_multiply(0.6))
                    .width(5.0),
            );
            plot.line(Line::new(dp_name.clone(), curve(&dp)).color(theme::series(&visuals, 0)));
        });
    crate::kit::figure::legend(
        ui,
        "dp_train_loss",
        &[
            crate::kit::figure::Key::line(dp_name, theme::series(&visuals, 0)),
            crate::kit::figure::Key::line(single_key, theme::series(&visuals, 1).gamma_multiply(0.6)),
        ],
    );
    versus_async(ui, trained, lang);
    if let Some(step) = trained.run.steps.first() {
        step_timeline(ui, ran, step, lang);
        ui.label(TEXT.fill(
            lang,
            "train.bytes",
            &[
                ("bytes", &show_bytes(trained.run.bytes_per_step)),
                ("wall", &show_seconds(trained.run.wall_s)),
                ("how", &t(lang, if trained.run.threads { "train.threads" } else { "train.one_thread" })),
            ],
        ));
    }
}

/// Loss against virtual time: the synchronous run and the asynchronous one
/// over the same examples, and how stale the asynchronous gradients were.
fn versus_async(ui: &mut egui::Ui, trained: &Trained, lang: Lang) {
    use egui_plot::{Line, PlotPoints};
    let visuals = ui.visuals().clone();
    let ms = 1e3;
    let mut clock = 0.0;
    let sync: Vec<[f64; 2]> = trained
        .run
        .steps
        .iter()
        .map(|x| {
            clock += x.step_s;
            [clock * ms, x.loss]
        })
        .collect();
    // Each point the mean of N updates (the examples of one synchronous
    // step), at the time the last of them landed: single batches of b are
    // too noisy to read.
    let n = trained.run.steps.first().map_or(1, |x| x.compute_s.len()).max(1);
    let asynchronous: Vec<[f64; 2]> = trained
        .asynchronous
        .updates
        .chunks(n)
        .map(|c| {
            let mean = c.iter().map(|u| u.loss).sum::<f64>() / c.len() as f64;
            [c.last().map_or(0.0, |u| u.applied_s) * ms, mean]
        })
        .collect();
    let sync_end = sync.last().map_or(0.0, |p| p[0] / ms);
    let async_end = trained.asynchronous.updates.last().map_or(0.0, |u| u.applied_s);
    ui.label(TEXT.fill(
        lang,
        "train.async",
        &[
            ("updates", &trained.asynchronous.updates.len()),
            ("async_time", &show_seconds(async_end)),
            ("steps", &trained.run.steps.len()),
            ("sync_time", &show_seconds(sync_end)),
            ("mean", &show_sig(trained.asynchronous.mean_staleness(), 3)),
            ("max", &trained.asynchronous.max_staleness()),
        ],
    ));
    crate::kit::figure::plot("dp_async_loss", 180.0, t(lang, "axis.virtual_ms"), t(lang, "axis.loss"))
        .readable_x()
        .readable_y()
        .show(ui, |plot| {
            plot.line(Line::new(t(lang, "train.series_async"), PlotPoints::from(asynchronous)).color(theme::series(&visuals, 4)));
            plot.line(Line::new(t(lang, "train.series_sync"), PlotPoints::from(sync)).color(theme::series(&visuals, 0)).width(2.0));
        });
    crate::kit::figure::legend(
        ui,
        "dp_async_loss",
        &[
            crate::kit::figure::Key::line(t(lang, "train.series_sync"), theme::series(&visuals, 0)),
            crate::kit::figure::Key::line(t(lang, "train.series_async"), theme::series(&visuals, 4)),
        ],
    );
}

/// One step per worker on the virtual clock: its compute, its wait for
/// the slowest worker, then the all-reduce.
fn step_timeline(ui: &mut egui::Ui, ran: &DpSettings, step: &dlsys_core::collective::DpStep, lang: Lang) {
    let visuals = ui.visuals().clone();
    let (compute_color, wait_color, comm_color) = (
        theme::series(&visuals, 2),
        visuals.weak_text_color().gamma_multiply(0.5),
        theme::series(&visuals, 3),
    );
    gantt::legend(
        ui,
        "dp_step_gantt",
        &[
            (compute_color, t(lang, "train.compute")),
            (wait_color, t(lang, "train.wait")),
            (comm_color, t(lang, "train.allreduce")),
        ],
    );
    let slowest = step.compute_s.iter().copied().fold(0.0, f64::max);
    let rows: Vec<gantt::Row> = step
        .compute_s
        .iter()
        .enumerate()
        .map(|(w, &compute)| {
            let bar = |start_s, end_s, color| gantt::Bar { start_s, end_s, color };
            let mut bars = vec![bar(0.0, compute, compute_color)];
            if compute < slowest {
                bars.push(bar(compute, slowest, wait_color));
            }
            bars.push(bar(slowest, step.step_s, comm_color));
            gantt::Row {
                label: Node { index: w, workers: ran.workers }.name(lang),
                bars,
            }
        })
        .collect();
    let fastest = step.compute_s.iter().copied().fold(f64::INFINITY, f64::min);
    let summary = TEXT.fill(
        lang,
        "train.step",
        &[
            ("step", &show_seconds(step.step_s)),
            ("compute", &show_seconds(slowest)),
            ("comm", &show_seconds(step.comm_s)),
            ("wait", &show_seconds(slowest - fastest)),
        ],
    );
    gantt::draw(ui, &rows, (0.0, step.step_s), &summary);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_run_trains_and_matches_one_worker() {
        let mut training = Training::default();
        training.start_self_test();
        let ctx = egui::Context::default();
        let started = std::time::Instant::now();
        while training.is_running() && started.elapsed().as_secs() < 120 {
            training.logic(&ctx);
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        training.logic(&ctx);
        let outcome = training.self_test_outcome();
        assert!(matches!(outcome, Some(Ok(_))), "{outcome:?}");
        let Some((_, Ok(trained))) = &training.last else {
            panic!("no run");
        };
        let losses: Vec<f64> = trained.run.steps.iter().map(|x| x.loss).collect();
        assert_eq!(losses.len(), Settings::default().steps);
        assert!(losses[losses.len() - 1] < losses[0], "{losses:?}");
    }
}
