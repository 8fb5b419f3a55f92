//! "GPU softmax & reductions": the softmax and reduction ladders run as real
//! WGSL kernels, one after another without blocking a frame, with their time,
//! bytes moved and bandwidth against the copy kernel.

mod exercises;

use std::collections::{BTreeSet, VecDeque};
use std::sync::LazyLock;

use dlsys_core::float::show_sig;
use dlsys_core::kernels::{
    Data, Device, Kernel, Problem, ReduceKind, ReduceOp, SoftmaxKind, WG, plan,
};
use dlsys_core::text::{Catalog, Lang};
use dlsys_shaders::report::{Reference, Row, row};
use dlsys_shaders::{Job, KernelRunner, RunSpec};
use egui::RichText;
use egui_plot::{Bar, BarChart, HLine, Legend, Line, Plot, PlotPoints, Points};
use serde::{Deserialize, Serialize};

use crate::{Env, GpuStatus, Lesson, theme};

pub use exercises::EXERCISES;

static TEXT: LazyLock<Catalog> =
    LazyLock::new(|| Catalog::embedded(include_str!("../../../assets/lessons/gpu_kernels.ron")));

/// The lesson's prose.
pub fn text() -> &'static Catalog {
    &TEXT
}

/// What the learner chose (persisted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub rows: u32,
    pub cols: u32,
    pub data: Data,
    pub trials: u32,
    pub op: ReduceOp,
    /// Kernel ids to run (`softmax/online`, `reduce-sum/sequential`…).
    pub selected: BTreeSet<String>,
}

impl Default for Settings {
    fn default() -> Self {
        let mut selected: BTreeSet<String> = SoftmaxKind::ALL
            .iter()
            .map(|k| Kernel::Softmax(*k).id())
            .collect();
        selected.extend(
            ReduceKind::ALL
                .iter()
                .map(|k| Kernel::Reduce(*k, ReduceOp::Sum).id()),
        );
        Self {
            rows: 1024,
            cols: 1024,
            data: Data::Random,
            trials: 5,
            op: ReduceOp::Sum,
            selected,
        }
    }
}

/// One line of the results table.
#[derive(Clone, Debug)]
enum Outcome {
    Ran(Row),
    Skipped {
        kernel: String,
        why: String,
    },
    /// The CPU path: the reference implementation, timed on the CPU.
    Cpu {
        kernel: String,
        ms: f64,
        bytes: u64,
        passes: u32,
    },
}

/// A race in flight: kernels still to run, the one running, and the inputs.
struct Race {
    queue: VecDeque<Kernel>,
    current: Option<(Kernel, Job)>,
    total: usize,
    problem: Problem,
    softmax_input: Vec<f32>,
    reduce_input: Vec<f32>,
    copy_input: Vec<f32>,
    softmax_reference: Option<Reference>,
    copy_gb_per_s: Option<f64>,
}

#[derive(Default)]
pub struct GpuKernels {
    settings: Settings,
    runner: Option<KernelRunner>,
    race: Option<Race>,
    results: Vec<Outcome>,
    error: Option<String>,
}

impl GpuKernels {
    fn ensure_runner(&mut self, gpu: &GpuStatus) -> Option<&mut KernelRunner> {
        if self.runner.is_none()
            && let GpuStatus::Compute(gpu) = gpu
        {
            self.runner = Some(KernelRunner::new((**gpu).clone()));
        }
        self.runner.as_mut()
    }

    fn kernels(&self, all: bool) -> Vec<Kernel> {
        let s = &self.settings;
        let mut kernels = vec![Kernel::Copy];
        for kind in SoftmaxKind::ALL {
            let k = Kernel::Softmax(kind);
            if all || s.selected.contains(&k.id()) {
                kernels.push(k);
            }
        }
        for kind in ReduceKind::ALL {
            let k = Kernel::Reduce(kind, s.op);
            if all
                || s.selected
                    .contains(&Kernel::Reduce(kind, ReduceOp::Sum).id())
            {
                kernels.push(k);
            }
        }
        kernels
    }

    fn start(&mut self, env: &Env<'_>, all: bool) {
        self.results.clear();
        self.error = None;
        let s = self.settings.clone();
        let problem = Problem {
            rows: s.rows.max(1),
            cols: s.cols.max(1),
        };
        let n = problem.elements() as usize;
        let kernels = self.kernels(all);
        let softmax_input = s
            .data
            .generate(problem.rows as usize, problem.cols as usize, 1, false);
        let reduce_input = s.data.generate(1, n, 2, true);
        let copy_input = Data::Random.generate(1, (n / 4 * 4).max(4), 3, false);
        if self.ensure_runner(env.gpu).is_none() {
            self.run_on_cpu(&kernels, problem, &softmax_input, &reduce_input);
            return;
        }
        self.race = Some(Race {
            total: kernels.len(),
            queue: kernels.into(),
            current: None,
            problem,
            softmax_input,
            reduce_input,
            copy_input,
            softmax_reference: None,
            copy_gb_per_s: None,
        });
    }

    /// Without a compute GPU: the CPU references, timed, and every plan's bytes.
    fn run_on_cpu(
        &mut self,
        kernels: &[Kernel],
        problem: Problem,
        softmax: &[f32],
        reduce: &[f32],
    ) {
        let device = Device {
            cache_floats: 4096 - WG,
            subgroup_max: 32,
        };
        let time = |f: &mut dyn FnMut()| {
            let start = web_time::Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        };
        for kernel in kernels {
            let Ok((_, traffic)) = plan(*kernel, problem_for(*kernel, problem), device) else {
                continue;
            };
            let ms = match kernel {
                Kernel::Copy => time(&mut || drop(std::hint::black_box(reduce.to_vec()))),
                Kernel::Softmax(_) => time(&mut || {
                    std::hint::black_box(dlsys_core::kernels::softmax_reference(
                        softmax,
                        problem.rows as usize,
                        problem.cols as usize,
                    ));
                }),
                Kernel::Reduce(_, op) => time(&mut || {
                    std::hint::black_box(dlsys_core::kernels::reduce_reference(reduce, *op));
                }),
            };
            self.results.push(Outcome::Cpu {
                kernel: kernel.id(),
                ms,
                bytes: traffic.bytes(),
                passes: traffic.input_passes,
            });
        }
    }

    fn poll_race(&mut self) {
        let Some(runner) = self.runner.as_mut() else {
            return;
        };
        let Some(race) = self.race.as_mut() else {
            return;
        };
        if let Some((kernel, job)) = race.current.as_mut() {
            let Some(result) = job.poll() else { return };
            let kernel = *kernel;
            race.current = None;
            match result {
                Ok(out) => {
                    let reference = match kernel {
                        Kernel::Copy => Reference::Values(race.copy_input.clone()),
                        Kernel::Softmax(_) => race
                            .softmax_reference
                            .get_or_insert_with(|| {
                                Reference::compute(kernel, &race.softmax_input, race.problem)
                            })
                            .clone(),
                        Kernel::Reduce(_, op) => Reference::Scalar(
                            dlsys_core::kernels::reduce_reference(&race.reduce_input, op),
                        ),
                    };
                    let r = row(&out, &reference, race.copy_gb_per_s);
                    if kernel == Kernel::Copy {
                        race.copy_gb_per_s = Some(r.gb_per_s);
                    }
                    self.results.push(Outcome::Ran(r));
                }
                Err(why) => self.results.push(Outcome::Skipped {
                    kernel: kernel.id(),
                    why,
                }),
            }
        }
        while race.current.is_none() {
            let Some(kernel) = race.queue.pop_front() else {
                self.race = None;
                return;
            };
            let problem = problem_for(kernel, race.problem);
            let input: &[f32] = match kernel {
                Kernel::Copy => &race.copy_input,
                Kernel::Softmax(_) => &race.softmax_input,
                Kernel::Reduce(..) => &race.reduce_input,
            };
            let spec = RunSpec {
                kernel,
                problem,
                warmup: 2,
                trials: self.settings.trials.clamp(1, 50),
                instrumented: false,
            };
            match runner.start(spec, input) {
                Ok(job) => race.current = Some((kernel, job)),
                Err(why) => self.results.push(Outcome::Skipped {
                    kernel: kernel.id(),
                    why,
                }),
            }
        }
    }
}

/// The problem each family runs: softmax rows × cols; the others the same count of values.
fn problem_for(kernel: Kernel, problem: Problem) -> Problem {
    let n = problem.elements() as u32;
    match kernel {
        Kernel::Softmax(_) => problem,
        Kernel::Copy => Problem {
            rows: 1,
            cols: (n / 4 * 4).max(4),
        },
        Kernel::Reduce(..) => Problem { rows: 1, cols: n },
    }
}

impl Lesson for GpuKernels {
    fn id(&self) -> &'static str {
        "gpu_kernels"
    }

    fn title(&self, lang: Lang) -> String {
        TEXT.get(lang, "title").to_owned()
    }

    fn summary(&self, lang: Lang) -> String {
        TEXT.get(lang, "summary").to_owned()
    }

    fn logic(&mut self, ctx: &egui::Context, _env: &Env<'_>) {
        if self.race.is_some() {
            self.poll_race();
            ctx.request_repaint();
        }
    }

    fn is_busy(&self) -> bool {
        self.race.is_some()
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        let t = |key| TEXT.get(lang, key);
        ui.heading(t("title"));
        ui.label(t("intro"));
        ui.add_space(6.0);
        match env.gpu {
            GpuStatus::Compute(gpu) => {
                let info = gpu.info();
                let timer = if info.timestamp_query {
                    format!("GPU timestamps, tick {} ns", info.timestamp_period_ns)
                } else {
                    "wall clock".to_owned()
                };
                ui.weak(TEXT.fill(
                    lang,
                    "device",
                    &[
                        ("adapter", &info.adapter),
                        ("backend", &info.backend),
                        ("timer", &timer),
                    ],
                ));
            }
            GpuStatus::RenderOnly { reason, .. } | GpuStatus::Unavailable { reason } => {
                ui.colored_label(
                    theme::warn(ui.visuals()),
                    TEXT.fill(lang, "cpu_path", &[("reason", reason)]),
                );
            }
        }
        self.controls_ui(ui, env);
        if let Some(err) = &self.error {
            ui.colored_label(theme::bad(ui.visuals()), err);
        }
        self.results_ui(ui, lang);
        egui::CollapsingHeader::new(RichText::new(t("explain.heading")).strong())
            .default_open(false)
            .show(ui, |ui| {
                let mut keys = vec!["explain.copy".to_owned()];
                keys.extend(
                    SoftmaxKind::ALL
                        .iter()
                        .map(|k| format!("explain.softmax/{}", k.id())),
                );
                keys.extend(
                    ReduceKind::ALL
                        .iter()
                        .map(|k| format!("explain.reduce/{}", k.id())),
                );
                for key in keys {
                    ui.label(format!("• {}", TEXT.get(lang, &key)));
                }
            });
    }

    fn exercises(&self) -> &'static [dlsys_core::exercise::Exercise] {
        &EXERCISES
    }

    crate::persist_field!(settings);
}

impl GpuKernels {
    fn controls_ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        let t = |key| TEXT.get(lang, key);
        let busy = self.race.is_some();
        ui.add_enabled_ui(!busy, |ui| {
            let s = &mut self.settings;
            ui.horizontal_wrapped(|ui| {
                let label = ui.label(t("controls.rows"));
                ui.add(egui::DragValue::new(&mut s.rows).range(1..=200_000))
                    .labelled_by(label.id);
                let label = ui.label(t("controls.cols"));
                ui.add(egui::DragValue::new(&mut s.cols).range(1..=1_000_000))
                    .labelled_by(label.id);
                let label = ui.label(t("controls.data"));
                egui::ComboBox::from_id_salt("gpu_data")
                    .selected_text(TEXT.get(lang, &format!("data.{}", s.data.id())))
                    .show_ui(ui, |ui| {
                        for d in Data::ALL {
                            ui.selectable_value(
                                &mut s.data,
                                d,
                                TEXT.get(lang, &format!("data.{}", d.id())),
                            );
                        }
                    })
                    .response
                    .labelled_by(label.id);
                let label = ui.label(t("controls.trials"));
                ui.add(egui::DragValue::new(&mut s.trials).range(1..=50))
                    .labelled_by(label.id);
                let label = ui.label(t("controls.op"));
                ui.selectable_value(&mut s.op, ReduceOp::Sum, "sum")
                    .labelled_by(label.id);
                ui.selectable_value(&mut s.op, ReduceOp::Max, "max");
            });
            let mb = s.rows as f64 * s.cols as f64 * 4.0 / 1e6;
            ui.weak(TEXT.fill(
                lang,
                "controls.size",
                &[
                    ("rows", &s.rows),
                    ("cols", &s.cols),
                    ("mb", &show_sig(mb, 3)),
                    ("n", &(u64::from(s.rows) * u64::from(s.cols))),
                ],
            ));
            ui.horizontal_wrapped(|ui| {
                ui.strong(t("controls.softmax"));
                for kind in SoftmaxKind::ALL {
                    let id = Kernel::Softmax(kind).id();
                    toggle(ui, &mut s.selected, &id, kind.id());
                }
            });
            ui.horizontal_wrapped(|ui| {
                ui.strong(t("controls.reduce"));
                for kind in ReduceKind::ALL {
                    let id = Kernel::Reduce(kind, ReduceOp::Sum).id();
                    toggle(ui, &mut s.selected, &id, kind.id());
                }
            });
        });
        ui.horizontal(|ui| {
            if busy {
                if ui.button(t("controls.cancel")).clicked() {
                    self.race = None;
                }
                if let Some(race) = &self.race {
                    let done = race.total - race.queue.len() - usize::from(race.current.is_some());
                    let current = race.current.as_ref().map_or(String::new(), |(k, _)| k.id());
                    ui.add(
                        egui::ProgressBar::new(done as f32 / race.total.max(1) as f32)
                            .desired_width(200.0)
                            .text(TEXT.fill(
                                lang,
                                "controls.running",
                                &[
                                    ("current", &current),
                                    ("done", &done),
                                    ("total", &race.total),
                                ],
                            )),
                    );
                }
            } else {
                if ui.button(t("controls.run")).clicked() {
                    self.start(env, false);
                }
                if ui.button(t("controls.race")).clicked() {
                    self.start(env, true);
                }
            }
        });
    }

    fn results_ui(&self, ui: &mut egui::Ui, lang: Lang) {
        if self.results.is_empty() {
            return;
        }
        let t = |key| TEXT.get(lang, key);
        let visuals = ui.visuals().clone();
        egui::ScrollArea::horizontal()
            .id_salt("gpu_results")
            .show(ui, |ui| {
                egui::Grid::new("gpu_results_grid")
                    .striped(true)
                    .spacing([12.0, 4.0])
                    .show(ui, |ui| {
                        for key in [
                            "table.kernel",
                            "table.ok",
                            "table.median",
                            "table.spread",
                            "table.bytes",
                            "table.passes",
                            "table.dispatches",
                            "table.gbs",
                            "table.copy",
                            "table.error",
                        ] {
                            ui.strong(t(key));
                        }
                        ui.end_row();
                        for outcome in &self.results {
                            match outcome {
                                Outcome::Ran(r) => {
                                    ui.label(&r.kernel);
                                    let (status, color) = if r.ok {
                                        (t("status.ok").to_owned(), theme::good(&visuals))
                                    } else if r.kernel == "softmax/naive" {
                                        (t("status.overflow").to_owned(), theme::warn(&visuals))
                                    } else {
                                        (t("status.wrong").to_owned(), theme::bad(&visuals))
                                    };
                                    ui.colored_label(color, status);
                                    ui.monospace(show_sig(r.median_ms, 4));
                                    ui.monospace(format!(
                                        "{}–{}",
                                        show_sig(r.min_ms, 3),
                                        show_sig(r.max_ms, 3)
                                    ));
                                    ui.monospace(show_sig(r.bytes as f64 / 1e6, 4));
                                    ui.monospace(r.input_passes.to_string());
                                    ui.monospace(r.dispatches.to_string());
                                    ui.monospace(show_sig(r.gb_per_s, 3));
                                    ui.monospace(
                                        r.fraction_of_copy
                                            .map_or("—".to_owned(), |f| show_sig(f, 2)),
                                    );
                                    ui.monospace(show_sig(r.max_rel_error, 2));
                                }
                                Outcome::Skipped { kernel, why } => {
                                    ui.label(kernel);
                                    ui.weak(TEXT.fill(lang, "status.skipped", &[("why", why)]));
                                }
                                Outcome::Cpu {
                                    kernel,
                                    ms,
                                    bytes,
                                    passes,
                                } => {
                                    ui.label(kernel);
                                    ui.weak("CPU");
                                    ui.monospace(show_sig(*ms, 4));
                                    ui.monospace("—");
                                    ui.monospace(show_sig(*bytes as f64 / 1e6, 4));
                                    ui.monospace(passes.to_string());
                                }
                            }
                            ui.end_row();
                        }
                    });
            });
        let ran: Vec<&Row> = self
            .results
            .iter()
            .filter_map(|o| {
                if let Outcome::Ran(r) = o {
                    Some(r)
                } else {
                    None
                }
            })
            .collect();
        for r in &ran {
            if r.dispatch_ms.len() > 1 {
                let parts: Vec<String> = r
                    .dispatch_ms
                    .iter()
                    .map(|ms| format!("{} ms", show_sig(*ms, 3)))
                    .collect();
                ui.weak(TEXT.fill(
                    lang,
                    "dispatch.breakdown",
                    &[("kernel", &r.kernel), ("parts", &parts.join(" + "))],
                ));
            }
        }
        let best = ran
            .iter()
            .filter(|r| r.ok && r.kernel.starts_with("softmax/") && r.kernel != "softmax/naive")
            .min_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
        let three = ran.iter().find(|r| r.kernel == "softmax/three-pass");
        if let (Some(b), Some(t3)) = (best, three) {
            ui.label(
                TEXT.fill(
                    lang,
                    "summary.best",
                    &[
                        ("kernel", &b.kernel),
                        ("ms", &show_sig(b.median_ms, 3)),
                        (
                            "fraction",
                            &b.fraction_of_copy
                                .map_or("—".to_owned(), |f| show_sig(f, 2)),
                        ),
                        ("speedup", &show_sig(t3.median_ms / b.median_ms, 3)),
                    ],
                ),
            );
        }
        if ran.iter().any(|r| r.kernel == "softmax/naive" && !r.ok) {
            ui.colored_label(theme::warn(&visuals), t("summary.overflow"));
        }
        let copy = ran.iter().find(|r| r.kernel == "copy").map(|r| r.gb_per_s);
        ui.columns(2, |cols| {
            cols[0].label(t("plot.bandwidth"));
            let bars: Vec<Bar> = ran
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    Bar::new(i as f64, r.gb_per_s)
                        .name(&r.kernel)
                        .fill(theme::series(&visuals, i))
                })
                .collect();
            let names: Vec<String> = ran.iter().map(|r| r.kernel.clone()).collect();
            Plot::new("gpu_bandwidth")
                .height(240.0)
                .y_axis_label("GB/s")
                .x_axis_formatter(move |mark, _| {
                    names
                        .get(mark.value.round() as usize)
                        .filter(|_| mark.value.fract() == 0.0)
                        .cloned()
                        .unwrap_or_default()
                })
                .allow_scroll(false)
                .show(&mut cols[0], |plot| {
                    plot.bar_chart(BarChart::new("GB/s", bars));
                    if let Some(c) = copy {
                        plot.hline(HLine::new("copy", c).color(visuals.weak_text_color()));
                    }
                });
            cols[1].label(t("plot.roofline"));
            Plot::new("gpu_roofline")
                .height(240.0)
                .legend(Legend::default())
                .x_axis_label(t("plot.intensity"))
                .y_axis_label(t("plot.throughput"))
                .allow_scroll(false)
                .show(&mut cols[1], |plot| {
                    let mut max_ai: f64 = 1.0;
                    for (i, r) in ran.iter().enumerate() {
                        let Some(kernel) = Kernel::all().into_iter().find(|k| k.id() == r.kernel)
                        else {
                            continue;
                        };
                        let ops = kernel.ops_per_element();
                        if ops == 0.0 {
                            continue;
                        }
                        let elements = self.settings.rows as f64 * self.settings.cols as f64;
                        let ai = ops * elements / r.bytes as f64;
                        max_ai = max_ai.max(ai);
                        let gops = ops * elements / (r.median_ms * 1e6);
                        plot.points(
                            Points::new(r.kernel.clone(), PlotPoints::from(vec![[ai, gops]]))
                                .radius(4.0)
                                .color(theme::series(&visuals, i)),
                        );
                    }
                    if let Some(c) = copy {
                        let line: Vec<[f64; 2]> =
                            vec![[0.0, 0.0], [max_ai * 1.2, c * max_ai * 1.2]];
                        plot.line(
                            Line::new("memory roof (copy GB/s × ops/byte)", PlotPoints::from(line))
                                .color(visuals.weak_text_color()),
                        );
                    }
                });
        });
    }
}

fn toggle(ui: &mut egui::Ui, selected: &mut BTreeSet<String>, id: &str, label: &str) {
    let mut on = selected.contains(id);
    if ui.checkbox(&mut on, label).changed() {
        if on {
            selected.insert(id.to_owned());
        } else {
            selected.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_has_an_explanation_for_every_variant() {
        let catalog = Catalog::parse(include_str!("../../../assets/lessons/gpu_kernels.ron"))
            .unwrap_or_default();
        for k in SoftmaxKind::ALL {
            assert!(catalog.contains(&format!("explain.softmax/{}", k.id())));
        }
        for k in ReduceKind::ALL {
            assert!(catalog.contains(&format!("explain.reduce/{}", k.id())));
        }
        for d in Data::ALL {
            assert!(catalog.contains(&format!("data.{}", d.id())));
        }
    }

    #[test]
    fn without_a_gpu_the_cpu_path_reports_bytes_and_cpu_timings() {
        let mut lesson = GpuKernels::default();
        lesson.settings.rows = 64;
        lesson.settings.cols = 64;
        let gpu = GpuStatus::Unavailable {
            reason: "test".to_owned(),
        };
        lesson.start(
            &Env {
                gpu: &gpu,
                lang: Lang::En,
            },
            true,
        );
        assert!(lesson.race.is_none());
        let cpu = lesson
            .results
            .iter()
            .filter(|o| matches!(o, Outcome::Cpu { .. }))
            .count();
        assert_eq!(cpu, 1 + SoftmaxKind::ALL.len() + ReduceKind::ALL.len());
    }
}
