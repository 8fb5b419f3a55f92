//! The int8 GEMM: why it accumulates in int32 (the 16-bit accumulator's
//! overflow on a concrete input, the longest K an int32 holds), and its two
//! WGSL rungs raced on the kernel ladder beside the f32 naive and coalesced
//! rungs on one M = N = K shape — each checked bit for bit against the
//! core's integer reference — with the bytes each moves per multiply–add
//! and every rung on the roofline.

use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::kernels::{Data, GemmKind, Problem};
use dlsys_core::quant::gemm::{GemmShape, Int8Kernel, MAX_K, dot_i16, int16_example, seeded_operands};
use dlsys_core::quant::QuantError;
use dlsys_core::text::Lang;
use dlsys_shaders::{LadderSettings, Outcome};

use super::{Settings, TEXT, t};
use crate::Env;
use crate::kit::background::Background;
use crate::kit::race::Race;
use crate::kit::table::{Header, headed};
use crate::kit::theme;

/// Whether the browser's WGSL has `dot4I8Packed` (`None` natively).
fn dot4_offered() -> Option<bool> {
    crate::kit::wgsl_features::offered("packed_4x8_integer_dot_product")
}

/// The race's seed for A and B.
const SEED: u64 = 35;
const TRIALS: u32 = 5;

type Built = (GemmShape, Result<Vec<dlsys_shaders::Program>, QuantError>);

#[derive(Default)]
pub struct GemmRace {
    race: Race,
    /// The int8 programs being made off the UI thread: the integer
    /// reference of an M = N = K = 1024 GEMM is a billion multiply–adds.
    building: Background<Built>,
    /// The shape of the last race (its results are that shape's).
    shape: Option<GemmShape>,
    error: Option<String>,
}

/// One rung's line: id, median ms, bytes moved, bytes per multiply–add,
/// Gop/s, and whether its output matched (None on the CPU path).
struct Line {
    id: String,
    ms: f64,
    bytes: u64,
    ops: f64,
    right: Option<bool>,
}

impl GemmRace {
    pub fn is_busy(&self) -> bool {
        self.race.is_busy() || self.building.is_running()
    }

    pub fn logic(&mut self, ctx: &egui::Context) {
        self.race.poll(ctx);
    }

    /// Makes the int8 programs in the background; the race starts when
    /// they are ready ([`Self::race_built`]).
    fn start(&mut self, size: u32, lang: Lang) {
        self.error = None;
        match GemmShape::new(size, size, size) {
            Ok(shape) => {
                // A browser whose WGSL lacks the extension races the
                // hand-unpacked rung alone.
                let kernels: &[Int8Kernel] = if dot4_offered() == Some(false) {
                    &[Int8Kernel::Extract]
                } else {
                    &Int8Kernel::ALL
                };
                self.building.start(move || {
                    let (a, b) = seeded_operands(shape, SEED);
                    (shape, dlsys_shaders::int8_gemm::programs(kernels, shape, &a, &b))
                });
            }
            Err(e) => self.error = Some(e.message(lang)),
        }
    }

    /// Races the f32 rungs and the int8 programs once they are made.
    fn race_built(&mut self, ctx: &egui::Context, env: &Env<'_>) {
        let Some((shape, programs)) = self.building.take(ctx) else {
            return;
        };
        let programs = match programs {
            Ok(p) => p,
            Err(e) => {
                self.error = Some(e.message(env.lang));
                return;
            }
        };
        let mut settings = LadderSettings::families(&[], Problem::new(1, 1 << 20), Data::Random, TRIALS);
        settings.gemm = vec![GemmKind::Naive, GemmKind::Coalesced];
        settings.gemm_shape = Problem::gemm(shape.m, shape.n, shape.k);
        settings.fma = true;
        self.shape = Some(shape);
        self.race.start_with(&settings, programs, env);
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, s: &mut Settings, env: &Env<'_>) {
        let lang = env.lang;
        ui.label(t(lang, "int8_gemm.intro"));
        let (a, b) = int16_example();
        let narrow = dot_i16(&a, &b);
        ui.label(TEXT.fill(
            lang,
            "int8_gemm.int16",
            &[
                ("k", &a.len()),
                ("x", &a[0]),
                ("exact", &narrow.exact),
                ("wrapped", &narrow.wrapped),
                ("at", &narrow.first_overflow.map_or(0, |p| p + 1)),
                ("max_k", &MAX_K),
            ],
        ));
        crate::kit::race::device_ui(ui, env);
        let dot4 = match dot4_offered() {
            None => "int8_gemm.dot4_native",
            Some(true) => "int8_gemm.dot4_offered",
            Some(false) => "int8_gemm.dot4_missing",
        };
        ui.small(t(lang, dot4));
        self.race_built(ui.ctx(), env);
        ui.horizontal_wrapped(|ui| {
            crate::kit::number_field(ui, t(lang, "int8_gemm.size"), &mut s.gemm_size, 4..=1024, 1.0);
            if self.building.is_running() {
                ui.spinner();
            } else if !self.race.progress_ui(ui, lang) && ui.button(t(lang, "int8_gemm.run")).clicked() {
                self.start(s.gemm_size, lang);
            }
        });
        if let Some(e) = &self.error {
            ui.colored_label(theme::bad(ui.visuals()), e);
            return;
        }
        let Some(shape) = self.shape else { return };
        if self.race.is_busy() || self.race.results.is_empty() {
            return;
        }
        let lines = lines(&self.race.results);
        if !lines.iter().any(|l| l.id.starts_with("int8/")) {
            // The CPU path times the built-in kernels only.
            ui.weak(t(lang, "int8_gemm.cpu"));
        }
        table(ui, &lines, shape, lang);
        let measured: Vec<_> = self.race.results.iter().filter_map(|o| o.measured()).collect();
        crate::kit::kernel_plots::roofline(ui, lang, &measured);
        ui.weak(t(lang, "int8_gemm.roof_note"));
    }
}

/// The GEMM rungs' lines (the copy and the FMA chain are the roofs, drawn
/// on the roofline, not listed).
fn lines(results: &[Outcome]) -> Vec<Line> {
    results
        .iter()
        .filter_map(|o| match o {
            Outcome::Ran(r) if r.kernel.family() == dlsys_core::kernels::Family::Gemm => Some(Line {
                id: r.kernel.id(),
                ms: r.median_ms,
                bytes: r.bytes,
                ops: r.kernel.ops(r.problem),
                right: Some(r.ok),
            }),
            Outcome::Cpu(c) if c.kernel.family() == dlsys_core::kernels::Family::Gemm => Some(Line {
                id: c.kernel.id(),
                ms: c.ms,
                bytes: c.bytes,
                ops: c.kernel.ops(c.problem),
                right: None,
            }),
            Outcome::Program(Ok(p)) => Some(Line {
                id: p.id.clone(),
                ms: p.median_ms,
                bytes: p.bytes,
                ops: p.ops,
                right: Some(p.check.ok),
            }),
            _ => None,
        })
        .collect()
}

fn table(ui: &mut egui::Ui, lines: &[Line], shape: GemmShape, lang: Lang) {
    ui.label(TEXT.fill(
        lang,
        "int8_gemm.shape",
        &[("m", &shape.m), ("n", &shape.n), ("k", &shape.k)],
    ));
    let cols = ["int8_gemm.col_rung", "int8_gemm.col_ms", "int8_gemm.col_bytes", "int8_gemm.col_per_mac", "int8_gemm.col_gops", "int8_gemm.col_right"];
    headed(
        ui,
        "quant_int8_gemm",
        lines,
        Header { text: &TEXT, lang, keys: &cols },
        |ui, l| {
            ui.monospace(&l.id);
        },
        |ui, l| {
            let macs = l.ops / 2.0;
            ui.monospace(format!("{} ms", show_sig(l.ms, 3)));
            ui.monospace(dlsys_core::memory::show_bytes(l.bytes));
            ui.monospace(show_sig(l.bytes as f64 / macs.max(1.0), 3));
            ui.monospace(show_sig(l.ops / (l.ms * 1e6), 3));
            match l.right {
                Some(true) => ui.colored_label(theme::good(ui.visuals()), t(lang, "int8_gemm.exact")),
                Some(false) => ui.colored_label(theme::bad(ui.visuals()), t(lang, "int8_gemm.wrong")),
                None => ui.weak(t(lang, "int8_gemm.on_cpu")),
            };
        },
    );
}
