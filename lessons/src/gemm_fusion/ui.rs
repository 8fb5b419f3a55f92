//! The lesson's page: the sizes, the three races with their tables, plots
//! and what they show, the CUDA ↔ WGSL vocabulary.

use dlsys_core::float::show_sig;
use dlsys_core::kernels::{AccessKind, Block, FusionKind, GemmKind, Kernel, Problem, STRIDES, Tile, largest_gemm_k};
use dlsys_core::text::Lang;
use dlsys_shaders::Outcome;
use dlsys_shaders::report::Measured;

use super::{GemmFusion, Section, TEXT};
use crate::kit::kernel_plots::{self, BarItem};
use crate::kit::race::Race;
use crate::Env;
use crate::kit::theme;
use crate::kit::theme::ReadableAxes as _;

fn t(lang: Lang, key: &str) -> String {
    TEXT.get(lang, key).to_owned()
}

/// A measured row's numbers, GPU or CPU path alike.
struct Shown {
    kernel: Kernel,
    problem: Problem,
    ok: Option<bool>,
    ms: f64,
    bytes: u64,
    dispatches: u32,
    error: Option<f64>,
}

fn shown(outcome: &Outcome) -> Option<Shown> {
    match outcome {
        Outcome::Ran(r) => Some(Shown {
            kernel: r.kernel,
            problem: r.problem,
            ok: Some(r.ok),
            ms: r.median_ms,
            bytes: r.bytes,
            dispatches: r.dispatches,
            error: Some(r.max_rel_error),
        }),
        Outcome::Cpu(c) => Some(Shown {
            kernel: c.kernel,
            problem: c.problem,
            ok: None,
            ms: c.ms,
            bytes: c.bytes,
            dispatches: 0,
            error: None,
        }),
        Outcome::Skipped { .. } | Outcome::Program(_) => None,
    }
}

impl Shown {
    fn gflops(&self) -> Option<f64> {
        let ops = self.kernel.ops(self.problem);
        (ops > 0.0 && self.ms > 0.0).then(|| ops / (self.ms * 1e6))
    }

    fn gb_per_s(&self) -> f64 {
        self.bytes as f64 / (self.ms * 1e6)
    }
}

impl GemmFusion {
    pub(super) fn page(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(4.0);
        crate::kit::race::device_ui(ui, env);
        let busy = self.busy();
        let device = self.gemm.device(env.gpu);
        let max_values = self.gemm.max_elements(env.gpu);
        ui.add_enabled_ui(!busy, |ui| self.controls_ui(ui, lang));
        ui.add_space(6.0);
        use crate::kit::section;
        section(ui, &TEXT, lang, "gemm", |ui| {
            ui.label(t(lang, "gemm.explain"));
            rungs_ui(ui, lang, (device, max_values), &self.settings);
            self.race_button(ui, env, Section::Gemm, "gemm.run", busy);
            gemm_results(ui, lang, &self.gemm);
        });
        section(ui, &TEXT, lang, "fusion", |ui| {
            ui.label(TEXT.fill(
                lang,
                "fusion.explain",
                &[("scale", &dlsys_core::kernels::GELU_SCALE), ("bias", &dlsys_core::kernels::GELU_BIAS)],
            ));
            for kind in FusionKind::ALL {
                ui.label(format!("• {}", t(lang, &format!("fusion.{}", kind.id()))));
            }
            self.race_button(ui, env, Section::Fusion, "fusion.run", busy);
            fusion_results(ui, lang, &self.fusion);
        });
        section(ui, &TEXT, lang, "access", |ui| {
            crate::kit::prose(ui, &t(lang, "access.explain"));
            self.race_button(ui, env, Section::Access, "access.run", busy);
            access_results(ui, lang, &self.access);
        });
        section(ui, &TEXT, lang, "vocab", |ui| super::vocab::table(ui, lang));
    }

    fn controls_ui(&mut self, ui: &mut egui::Ui, lang: Lang) {
        let s = &mut self.settings;
        ui.horizontal_wrapped(|ui| {
            crate::kit::number_field(ui, &t(lang, "controls.m"), &mut s.m, 1..=8192, 1.0);
            crate::kit::number_field(ui, &t(lang, "controls.n"), &mut s.n, 1..=8192, 1.0);
            crate::kit::number_field(ui, &t(lang, "controls.k"), &mut s.k, 1..=65_536, 1.0);
        });
        // Two radio groups, each named for screen readers by its label.
        let group = |key: &str| {
            egui::UiBuilder::new()
                .accessibility_role(egui::accesskit::Role::RadioGroup)
                .accessibility_label(t(lang, key))
        };
        ui.horizontal_wrapped(|ui| {
            ui.label(t(lang, "controls.tile")).on_hover_text(t(lang, "controls.tile_tip"));
            ui.scope_builder(group("controls.tile"), |ui| {
                ui.horizontal(|ui| {
                    for tile in Tile::ALL {
                        let e = tile.edge();
                        ui.radio_value(&mut s.tile, tile, format!("{e}×{e}"));
                    }
                });
            });
            ui.separator();
            ui.label(t(lang, "controls.block")).on_hover_text(t(lang, "controls.block_tip"));
            ui.scope_builder(group("controls.block"), |ui| {
                ui.horizontal(|ui| {
                    for block in Block::ALL {
                        let b = block.edge();
                        ui.radio_value(&mut s.block, block, format!("{b}×{b}"));
                    }
                });
            });
        });
        ui.horizontal_wrapped(|ui| {
            crate::kit::number_field(ui, &t(lang, "controls.rows"), &mut s.rows, 1..=16_384, 1.0);
            crate::kit::number_field(ui, &t(lang, "controls.cols"), &mut s.cols, 1..=1_048_576, 1.0);
            crate::kit::number_field(ui, &t(lang, "controls.trials"), &mut s.trials, 1..=20, 0.1);
        });
        let (m, n, k) = (f64::from(s.m), f64::from(s.n), f64::from(s.k));
        ui.weak(TEXT.fill(
            lang,
            "controls.size",
            &[
                ("gflop", &show_sig(2.0 * m * n * k / 1e9, 3)),
                ("mb", &show_sig(4.0 * (m * k + k * n + m * n) / 1e6, 3)),
                ("ai", &show_sig(2.0 * m * n * k / (4.0 * (m * k + k * n + m * n)), 3)),
            ],
        ));
    }

    fn race_button(&mut self, ui: &mut egui::Ui, env: &Env<'_>, section: Section, key: &str, busy: bool) {
        let lang = env.lang;
        if self.race(section).progress_ui(ui, lang) {
            return;
        }
        if ui.add_enabled(!busy, egui::Button::new(t(lang, key))).clicked() {
            self.start(section, env);
        }
        if let Some(err) = &self.race(section).error {
            ui.colored_label(theme::bad(ui.visuals()), err);
        }
    }
}

/// Each rung at the chosen sizes: what it changes (in CUDA's words too), the
/// largest K it accepts on this device under the loop budget, and what
/// limits M and N.
fn rungs_ui(
    ui: &mut egui::Ui,
    lang: Lang,
    (device, max_values): (dlsys_core::kernels::DeviceLimits, u64),
    s: &super::Settings,
) {
    egui::CollapsingHeader::new(t(lang, "gemm.rungs"))
        .id_salt("gemm_rungs")
        .default_open(false)
        .show(ui, |ui| {
            for kind in GemmKind::ladder(s.tile, s.block) {
                let (b, tile) = (s.block.edge(), s.block.tile());
                ui.label(TEXT.fill(
                    lang,
                    &format!("rung.{}", kind.rung()),
                    &[
                        ("largest", &largest_gemm_k(kind, device).to_string()),
                        ("t", &s.tile.edge().to_string()),
                        ("b", &b.to_string()),
                        ("tile", &tile.to_string()),
                        ("depth", &s.block.depth().to_string()),
                        ("kib", &(kind.workgroup_floats() * 4 / 1024).to_string()),
                        ("name", &kind.id().to_owned()),
                    ],
                ));
            }
            ui.label(TEXT.fill(lang, "gemm.mn_limit", &[("max", &max_values)]));
        });
}

/// The results table: the columns named by `columns` (catalog keys `col.*`).
fn table(ui: &mut egui::Ui, lang: Lang, id: &str, rows: &[Shown], columns: &[&str], roof: Option<f64>) {
    theme::sideways(ui, id, |ui| {
        egui::Grid::new(id).striped(true).spacing([12.0, 4.0]).show(ui, |ui| {
            for key in columns {
                crate::kit::column_header(ui, &TEXT, lang, &format!("col.{key}"));
            }
            ui.end_row();
            for r in rows {
                for key in columns {
                    let cell = match *key {
                        "kernel" => r.kernel.id(),
                        "check" => match r.ok {
                            Some(true) => t(lang, "check.ok"),
                            Some(false) => t(lang, "check.wrong"),
                            None => "CPU".to_owned(),
                        },
                        "ms" => show_sig(r.ms, 4),
                        "mb" => show_sig(r.bytes as f64 / 1e6, 4),
                        "gbs" => show_sig(r.gb_per_s(), 3),
                        "gflops" => r.gflops().map_or("—".to_owned(), |g| show_sig(g, 3)),
                        "roof" => r
                            .gflops()
                            .zip(roof)
                            .map_or("—".to_owned(), |(g, roof)| show_sig(g / roof, 2)),
                        "ai" => {
                            let ops = r.kernel.ops(r.problem);
                            if ops > 0.0 && r.bytes > 0 {
                                show_sig(ops / r.bytes as f64, 3)
                            } else {
                                "—".to_owned()
                            }
                        }
                        "dispatches" => r.dispatches.to_string(),
                        "error" => r.error.map_or("—".to_owned(), |e| {
                            if e.is_finite() { show_sig(e, 2) } else { t(lang, "check.nonfinite") }
                        }),
                        _ => String::new(),
                    };
                    if *key == "check" && r.ok == Some(false) {
                        ui.colored_label(theme::bad(ui.visuals()), cell);
                    } else if *key == "check" && r.ok == Some(true) {
                        ui.colored_label(theme::good(ui.visuals()), cell);
                    } else {
                        ui.monospace(cell);
                    }
                }
                ui.end_row();
            }
        });
    });
}

fn skipped_ui(ui: &mut egui::Ui, lang: Lang, race: &Race) {
    use dlsys_core::errors::Localized as _;
    for outcome in &race.results {
        if let Outcome::Skipped { kernel, why } = outcome {
            ui.weak(TEXT.fill(lang, "skipped", &[("kernel", &kernel.id()), ("why", &why.message(lang))]));
        }
    }
}

fn measured(race: &Race) -> Vec<Measured> {
    race.results.iter().filter_map(Outcome::measured).collect()
}

fn gemm_results(ui: &mut egui::Ui, lang: Lang, race: &Race) {
    let rows: Vec<Shown> = race.results.iter().filter_map(shown).collect();
    if rows.is_empty() {
        return;
    }
    let summary = dlsys_shaders::Summary::of(&race.results);
    let roof = summary.compute_roof_gflops;
    table(
        ui,
        lang,
        "gemm_results",
        &rows,
        &["kernel", "check", "ms", "gflops", "roof", "mb", "ai", "gbs", "error"],
        roof,
    );
    skipped_ui(ui, lang, race);
    let gemm: Vec<&Shown> = rows.iter().filter(|r| matches!(r.kernel, Kernel::Gemm(_))).collect();
    if let (Some(best), Some(ratio)) = (&summary.best_gemm, summary.best_gemm_vs_naive) {
        let gflops = summary.best_gemm_gflops;
        ui.label(TEXT.fill(
            lang,
            "gemm.summary",
            &[
                ("best", best),
                ("gflops", &gflops.map_or("—".to_owned(), |g| show_sig(g, 3))),
                ("ratio", &show_sig(ratio, 3)),
                ("roof", &roof.map_or("—".to_owned(), |r| show_sig(r, 3))),
                ("share", &gflops.zip(roof).map_or("—".to_owned(), |(g, r)| show_sig(100.0 * g / r, 2))),
            ],
        ));
    }
    ui.label(t(lang, "gemm.cache_note"));
    let ran = measured(race);
    kernel_plots::cpu_note(ui, lang, &ran);
    let items: Vec<BarItem> = gemm
        .iter()
        .filter_map(|r| {
            r.gflops().map(|g| BarItem {
                kernel: r.kernel,
                value: g,
                label: show_sig(g, 3),
            })
        })
        .collect();
    let rule = roof.map(|r| (t(lang, "plot.roof"), r));
    let wide = ui.available_width() >= 900.0;
    let gflops_bars = |ui: &mut egui::Ui| {
        ui.label(t(lang, "plot.gflops"));
        kernel_plots::bars(ui, lang, "gemm_gflops", "GFLOP/s", &items, rule.clone());
    };
    if wide {
        ui.columns(2, |cols| {
            gflops_bars(&mut cols[0]);
            kernel_plots::roofline(&mut cols[1], lang, &ran);
        });
    } else {
        gflops_bars(ui);
        kernel_plots::roofline(ui, lang, &ran);
    }
}

fn fusion_results(ui: &mut egui::Ui, lang: Lang, race: &Race) {
    let rows: Vec<Shown> = race.results.iter().filter_map(shown).collect();
    if rows.is_empty() {
        return;
    }
    table(ui, lang, "fusion_results", &rows, &["kernel", "check", "ms", "mb", "dispatches", "gbs", "error"], None);
    skipped_ui(ui, lang, race);
    let summary = dlsys_shaders::Summary::of(&race.results);
    for (pair, key) in [
        (summary.gelu, "fusion.gelu_summary"),
        (summary.layernorm, "fusion.layernorm_summary"),
    ] {
        if let Some(p) = pair {
            ui.label(TEXT.fill(
                lang,
                key,
                &[
                    ("speedup", &show_sig(p.speedup, 3)),
                    ("slow_mb", &show_sig(p.slow_bytes as f64 / 1e6, 3)),
                    ("fast_mb", &show_sig(p.fast_bytes as f64 / 1e6, 3)),
                    ("ratio", &show_sig(p.bytes_ratio, 3)),
                ],
            ));
        }
    }
    kernel_plots::cpu_note(ui, lang, &measured(race));
    ui.label(t(lang, "plot.fusion_ms"));
    let items: Vec<BarItem> = rows
        .iter()
        .filter(|r| matches!(r.kernel, Kernel::Fusion(_)))
        .map(|r| BarItem {
            kernel: r.kernel,
            value: r.ms,
            label: TEXT.fill(
                lang,
                "plot.ms_mb",
                &[("ms", &show_sig(r.ms, 3)), ("mb", &show_sig(r.bytes as f64 / 1e6, 3))],
            ),
        })
        .collect();
    kernel_plots::bars(ui, lang, "fusion_ms", "ms", &items, None);
}

fn access_results(ui: &mut egui::Ui, lang: Lang, race: &Race) {
    let rows: Vec<Shown> = race.results.iter().filter_map(shown).collect();
    if rows.is_empty() {
        return;
    }
    table(ui, lang, "access_results", &rows, &["kernel", "check", "ms", "mb", "gbs", "error"], None);
    skipped_ui(ui, lang, race);
    let summary = dlsys_shaders::Summary::of(&race.results);
    if let (Some(pair), Some((naive, tiled))) = (summary.transpose, summary.transpose_gb_per_s) {
        ui.label(TEXT.fill(
            lang,
            "access.transpose_summary",
            &[("naive", &show_sig(naive, 3)), ("tiled", &show_sig(tiled, 3)), ("ratio", &show_sig(pair.speedup, 3))],
        ));
    }
    let nchw = rows.iter().find(|r| r.kernel == Kernel::Access(AccessKind::ChannelNchw));
    if let (Some(layout), Some(nchw)) = (summary.layout, nchw) {
        let p = nchw.problem;
        ui.label(TEXT.fill(
            lang,
            "access.layout_summary",
            &[
                ("c", &p.rows),
                ("n", &(p.cols / p.k.max(1))),
                ("hw", &p.k),
                ("nchw", &show_sig(layout.fast_ms, 3)),
                ("nhwc", &show_sig(layout.slow_ms, 3)),
                ("ratio", &show_sig(layout.speedup, 3)),
            ],
        ));
    }
    kernel_plots::cpu_note(ui, lang, &measured(race));
    // Transposes and layouts side by side, in the bandwidth they reach.
    let items: Vec<BarItem> = [
        AccessKind::TransposeNaive,
        AccessKind::TransposeTiled,
        AccessKind::ChannelNchw,
        AccessKind::ChannelNhwc,
    ]
    .into_iter()
    .filter_map(|kind| rows.iter().find(|r| r.kernel == Kernel::Access(kind)))
    .map(|r| BarItem {
        kernel: r.kernel,
        value: r.gb_per_s(),
        label: TEXT.fill(
            lang,
            "plot.gbs_ms",
            &[("gbs", &show_sig(r.gb_per_s(), 3)), ("ms", &show_sig(r.ms, 3))],
        ),
    })
    .collect();
    if !items.is_empty() {
        ui.label(t(lang, "plot.layouts"));
        let copy = rows.iter().find(|r| r.kernel == Kernel::Copy).map(Shown::gb_per_s);
        kernel_plots::bars(ui, lang, "access_layouts", "GB/s", &items, copy.map(|c| (t(lang, "plot.copy"), c)));
    }
    let sweep: Vec<[f64; 2]> = STRIDES
        .iter()
        .filter_map(|s| {
            rows.iter()
                .find(|r| r.kernel == Kernel::Access(AccessKind::Strided(*s)))
                .map(|r| [f64::from(*s).log2(), r.gb_per_s()])
        })
        .collect();
    if !sweep.is_empty() {
        stride_plot(ui, lang, &sweep, rows.iter().find(|r| r.kernel == Kernel::Copy).map(Shown::gb_per_s));
        let shares: Vec<String> = STRIDES
            .iter()
            .map(|s| {
                let share = dlsys_core::kernels::sectors::useful_share(*s, 4, dlsys_core::kernels::sectors::SECTOR_BYTES);
                format!("s = {s}: {}", show_sig(share, 3))
            })
            .collect();
        ui.label(TEXT.fill(lang, "access.stride_note", &[("shares", &crate::kit::join(lang, &shares))]));
    }
}

/// GB/s against the stride, the stride on a log₂ axis.
fn stride_plot(ui: &mut egui::Ui, lang: Lang, sweep: &[[f64; 2]], copy: Option<f64>) {
    use egui_plot::{HLine, Line, Plot, PlotPoints, Points};
    let visuals = ui.visuals().clone();
    let color = kernel_plots::family_color(dlsys_core::kernels::Family::Access, &visuals);
    ui.label(t(lang, "plot.stride"));
    let points = sweep.to_vec();
    let copy_name = t(lang, "plot.copy");
    Plot::new("access_stride")
        .height(220.0)
        .x_axis_label(t(lang, "plot.stride_axis"))
        .y_axis_label("GB/s")
        .x_axis_formatter(|mark, _| {
            if mark.value.fract() == 0.0 && (0.0..=10.0).contains(&mark.value) {
                format!("{}", 2u32.pow(mark.value as u32))
            } else {
                String::new()
            }
        })
        .x_grid_spacer(theme::integer_grid())
        .readable_y()
        .include_y(0.0)
        .include_y(copy.unwrap_or(0.0) * 1.1)
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .show(ui, |plot| {
            plot.line(Line::new("GB/s", PlotPoints::from(points.clone())).color(color));
            plot.points(Points::new("GB/s", PlotPoints::from(points)).radius(4.0).color(color));
            if let Some(c) = copy {
                plot.hline(HLine::new(copy_name.clone(), c).color(visuals.weak_text_color()));
            }
        });
    let mut keys = vec![crate::kit::figure::Key::line(t(lang, "plot.stride_series"), color)];
    if copy.is_some() {
        keys.push(crate::kit::figure::Key::rule(copy_name, visuals.weak_text_color()));
    }
    crate::kit::figure::legend(ui, "access_stride", &keys);
}
