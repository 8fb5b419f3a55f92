//! Dispatch: the captured step's matmuls through the op registry and the
//! selection cache. On the learner's button the GPU's WGSL rungs are
//! raced on each untransposed shape and the sweep's squares (the one
//! ladder, polled between frames), then the CPU kernels are timed and
//! every call dispatched in the background; the page shows the cache, the
//! first call's dispatch chain and the crossover.

use std::collections::BTreeMap;

use dlsys_core::compile::dispatch::{
    Call, Candidate, GPU_MIN_FLOPS, Mode, Selection, Timing, smallest_gpu_square,
};
use dlsys_core::kernels::Kernel;
use dlsys_core::compile::selected::{GpuTimes, Selected, gpu_calls, selected};
use dlsys_core::kernels::GemmKind;
use dlsys_core::memory::show_seconds;
use dlsys_core::text::Lang;
use dlsys_shaders::TimerKind;
use dlsys_shaders::selection::{gemm_seconds, ladder_for};

use super::{TEXT, t};
use crate::kit::background::Background;
use crate::kit::race::Race;
use crate::kit::table::{Header, headed};
use crate::kit::theme;
use crate::{Env, GpuStatus};

/// What a dispatch was run for: the step's calls and the mode.
type For = (Vec<Call>, Mode);

/// The GPU's timer: its name, and whether it reads GPU timestamps (kernel
/// time alone) rather than the CPU clock from submit to completion.
type Timer = Option<(String, bool)>;

pub struct Dispatch {
    mode: Mode,
    /// The run in progress: what it is for, the GPU rungs registered and
    /// the timer they are raced with, the calls still to race, the one
    /// racing, what the races gave.
    running: Option<Running>,
    race: Race,
    job: Background<(For, Selected, Timer)>,
    done: Option<(For, Selected, Timer)>,
    /// The background work ended without a result (a bug, said so).
    lost: bool,
}

struct Running {
    of: For,
    kinds: Vec<GemmKind>,
    timer: Timer,
    queue: Vec<Call>,
    current: Option<Call>,
    raced: BTreeMap<Call, GpuTimes>,
}

impl Default for Dispatch {
    fn default() -> Self {
        Self {
            mode: Mode::Bench,
            running: None,
            race: Race::default(),
            job: Background::default(),
            done: None,
            lost: false,
        }
    }
}

impl Dispatch {
    pub fn is_running(&self) -> bool {
        self.running.is_some() || self.job.is_running()
    }

    /// Starts dispatching `calls`: GPU races first when there is a compute GPU.
    pub fn start(&mut self, calls: &[Call], env: &Env<'_>) {
        // The rungs this device runs (a subgroup rung needs subgroups).
        let (kinds, timer) = match env.gpu {
            GpuStatus::Compute(gpu) => {
                let timer = TimerKind::for_gpu(gpu);
                let stamps = matches!(timer, TimerKind::Timestamps { .. });
                let kinds = GemmKind::ALL
                    .into_iter()
                    .filter(|k| self.race.supports(env.gpu, Kernel::Gemm(*k)))
                    .collect();
                (kinds, Some((timer.short_name(env.lang), stamps)))
            }
            _ => (Vec::new(), None),
        };
        let queue = gpu_calls(calls, self.mode, &kinds);
        self.lost = false;
        self.running = Some(Running {
            of: (calls.to_vec(), self.mode),
            kinds,
            timer,
            queue,
            current: None,
            raced: BTreeMap::new(),
        });
        self.advance(env);
    }

    /// Takes a finished race's times, starts the next race, or — when none
    /// is left — the background job that times the CPU and dispatches.
    fn advance(&mut self, env: &Env<'_>) {
        let Some(run) = self.running.as_mut() else {
            return;
        };
        if self.race.is_busy() {
            return;
        }
        if let Some(call) = run.current.take() {
            run.raced.insert(call, gemm_seconds(&self.race.results));
        }
        if !run.queue.is_empty() {
            let call = run.queue.remove(0);
            run.current = Some(call);
            self.race.start(&ladder_for(&call, &run.kinds), env);
            return;
        }
        let Some(run) = self.running.take() else {
            return;
        };
        self.job.start(move || {
            let s = selected(&run.of.0, run.of.1, &run.kinds, |c| {
                run.raced.get(c).cloned().unwrap_or_default()
            });
            (run.of, s, run.timer)
        });
    }

    pub fn logic(&mut self, ctx: &egui::Context, env: &Env<'_>) {
        if self.running.is_some() {
            self.race.poll(ctx);
            self.advance(env);
            ctx.request_repaint();
        }
        if let Some(done) = self.job.take(ctx) {
            self.done = Some(done);
        }
        self.lost |= self.job.take_lost();
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, calls: Option<&[Call]>, env: &Env<'_>) {
        let lang = env.lang;
        ui.label(t(lang, "dispatch.explain"));
        ui.horizontal_wrapped(|ui| {
            ui.label(t(lang, "dispatch.mode"));
            for mode in Mode::ALL {
                let label = TEXT.get(lang, &format!("dispatch.mode.{}", mode.key())).to_owned();
                ui.radio_value(&mut self.mode, mode, label);
            }
        });
        ui.horizontal_wrapped(|ui| {
            if self.is_running() {
                ui.spinner();
                if self.race.progress_ui(ui, lang) {
                    // Its Stop ends the race: stop the whole dispatch.
                    if !self.race.is_busy() {
                        self.running = None;
                    }
                } else {
                    ui.label(t(lang, "dispatch.timing"));
                }
            } else if let Some(calls) = calls {
                if ui.button(t(lang, "dispatch.run")).clicked() {
                    self.start(calls, env);
                }
            } else {
                ui.weak(t(lang, "dispatch.first"));
            }
        });
        if self.lost {
            ui.colored_label(theme::bad(ui.visuals()), t(lang, "dispatch.lost"));
        }
        let Some(((for_calls, for_mode), s, timer)) = &self.done else {
            return;
        };
        if calls != Some(for_calls.as_slice()) || *for_mode != self.mode {
            ui.weak(t(lang, "dispatch.stale"));
        }
        if !s.gpu {
            ui.colored_label(theme::warn(ui.visuals()), t(lang, "dispatch.cpu_only"));
        }
        summary(ui, s, lang);
        cache(ui, s, lang);
        chain(ui, s, lang);
        sweep(ui, s, timer.as_ref(), lang);
    }

    /// For the self-test: a heuristic dispatch of `calls` on the CPU's
    /// kernels alone (no GPU race), finished at once on the web.
    pub fn self_test_start(&mut self, calls: &[Call]) {
        self.mode = Mode::Heuristic;
        let of = (calls.to_vec(), Mode::Heuristic);
        self.job.start(move || {
            let s = selected(&of.0, of.1, &[], |_| Vec::new());
            (of, s, None)
        });
    }

    pub fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        if self.is_running() {
            return None;
        }
        let Some((_, s, _)) = &self.done else {
            return Some(Err(crate::SelfTestFailure("nothing dispatched".to_owned())));
        };
        let detail = format!(
            "{} matmuls dispatched, {} cache entries, second step {} hits",
            s.calls.len(),
            s.entries.len(),
            s.second_hits
        );
        Some(if s.second_hits == s.calls.len() && s.chain.is_some() {
            Ok(detail)
        } else {
            Err(crate::SelfTestFailure(detail))
        })
    }
}

fn timing(t_: &Timing, lang: Lang) -> String {
    match t_ {
        Timing::Seconds(s) => show_seconds(*s),
        Timing::Refused => t(lang, "dispatch.refused").to_owned(),
        Timing::Failed => t(lang, "dispatch.failed").to_owned(),
        Timing::TooSlow => t(lang, "dispatch.too_slow").to_owned(),
        Timing::NotTimed => t(lang, "dispatch.untimed").to_owned(),
    }
}

fn summary(ui: &mut egui::Ui, s: &Selected, lang: Lang) {
    let timed = s.calls.iter().filter(|(_, hit)| !hit).count();
    ui.label(TEXT.fill(
        lang,
        "dispatch.calls",
        &[
            ("calls", &s.calls.len()),
            ("timed", &timed),
            ("hits", &(s.calls.len() - timed)),
            ("second", &s.second_hits),
        ],
    ));
    if s.mode == Mode::Heuristic {
        ui.label(TEXT.fill(
            lang,
            "dispatch.rule",
            &[("flops", &format!("{GPU_MIN_FLOPS:.1e}")), ("n", &smallest_gpu_square())],
        ));
    }
}

/// The next fastest candidate after the winner, timed.
fn runner_up(sel: &Selection) -> Option<(Candidate, f64)> {
    sel.timings
        .iter()
        .filter(|(c, _)| *c != sel.winner)
        .filter_map(|(c, t)| match t {
            Timing::Seconds(s) => Some((*c, *s)),
            _ => None,
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

fn cache(ui: &mut egui::Ui, s: &Selected, lang: Lang) {
    ui.add_space(6.0);
    ui.strong(t(lang, "dispatch.cache"));
    let cols = ["col.call", "col.layout", "col.chosen", "col.its_time", "col.runner_up"];
    headed(
        ui,
        "frameworks_dispatch_cache",
        &s.entries,
        Header { text: &TEXT, lang, keys: &cols },
        |ui, (call, _)| {
            ui.monospace(call.to_string());
        },
        |ui, (call, sel)| {
            ui.monospace(call.layout());
            ui.monospace(sel.winner.id());
            ui.monospace(
                sel.winner_seconds()
                    .map_or_else(|| t(lang, "dispatch.untimed").to_owned(), show_seconds),
            );
            ui.monospace(
                runner_up(sel).map_or_else(String::new, |(c, secs)| {
                    format!("{} {}", c.id(), show_seconds(secs))
                }),
            );
        },
    );
    if s.mode == Mode::Bench {
        egui::CollapsingHeader::new(t(lang, "dispatch.every"))
            .id_salt("frameworks_dispatch_every")
            .show(ui, |ui| {
                for (call, sel) in &s.entries {
                    ui.strong(format!("{call} {}", call.layout()));
                    let all: Vec<String> = sel
                        .timings
                        .iter()
                        .map(|(c, time)| format!("{} {}", c.id(), timing(time, lang)))
                        .collect();
                    ui.label(all.join(" · "));
                }
            });
    }
}

fn chain(ui: &mut egui::Ui, s: &Selected, lang: Lang) {
    let (Some(c), Some((first, _))) = (&s.chain, s.calls.first()) else {
        return;
    };
    let Some(winner) = s.entries.iter().find(|(call, _)| call == first).map(|(_, sel)| sel.winner)
    else {
        return;
    };
    ui.add_space(6.0);
    let shape = format!("{first} {}", first.layout());
    ui.strong(TEXT.fill(lang, "dispatch.chain", &[("shape", &shape)]));
    let layers = c.layers();
    let total = c.total().max(f64::MIN_POSITIVE);
    headed(
        ui,
        "frameworks_dispatch_chain",
        &layers,
        Header { text: &TEXT, lang, keys: &["col.layer", "col.its_time", "col.share"] },
        |ui, (key, _)| {
            ui.label(TEXT.fill(lang, &format!("layer.{key}"), &[("kernel", &winner.id())]));
        },
        |ui, (_, secs)| {
            ui.monospace(show_seconds(*secs));
            ui.monospace(format!("{:.1} %", 100.0 * secs / total));
        },
    );
    ui.label(t(
        lang,
        match s.mode {
            Mode::Bench => "dispatch.chain_note",
            Mode::Heuristic => "dispatch.chain_note_heuristic",
        },
    ));
}

fn sweep(ui: &mut egui::Ui, s: &Selected, timer: Option<&(String, bool)>, lang: Lang) {
    if !s.gpu {
        return;
    }
    ui.add_space(6.0);
    ui.strong(t(lang, "dispatch.sweep"));
    let cols = ["col.n", "col.cpu", "col.gpu", "col.faster"];
    headed(
        ui,
        "frameworks_dispatch_sweep",
        &s.sweep,
        Header { text: &TEXT, lang, keys: &cols },
        |ui, row| {
            ui.monospace(row.n.to_string());
        },
        |ui, row| {
            ui.monospace(show_seconds(row.cpu));
            match row.gpu {
                Some((kind, secs)) => {
                    ui.monospace(format!("{} (gpu/{})", show_seconds(secs), kind.id()));
                    ui.monospace(if row.gpu_wins() { "GPU" } else { "CPU" });
                }
                None => {
                    ui.monospace(t(lang, "dispatch.failed"));
                    ui.monospace("CPU");
                }
            }
        },
    );
    let (name, stamps) = timer.cloned().unwrap_or_default();
    ui.label(match s.crossover {
        Some(n) => TEXT.fill(lang, "dispatch.crossover", &[("n", &n)]),
        None if s.gpu_never_ran() => t(lang, "dispatch.gpu_failed").to_owned(),
        None => t(lang, "dispatch.no_crossover").to_owned(),
    });
    // What the GPU's times include decides what the crossover means.
    let key = if stamps {
        "dispatch.timer_stamps"
    } else {
        "dispatch.timer_wall"
    };
    ui.label(TEXT.fill(lang, key, &[("timer", &name)]));
}
