//! The GPU side of section 2: the GEMM ladder's rungs at M = 1 (a decode
//! step's product: one row against the weights, a GEMV) and at a prefill's
//! M, the same N × K weights, timed on the ladder with the copy (the memory
//! roof) and the FMA chains (the compute roof) in the same race; each rung
//! at both shapes placed on the GPU's roofline. The races run one after
//! the other, so they never share the GPU.

use dlsys_core::float::show_sig;
use dlsys_core::inference::calc::Bound;
use dlsys_core::names::Named as _;
use dlsys_core::kernels::{BLOCK, Data, Family, GemmKind, Kernel, Problem, Roofline};
use dlsys_shaders::LadderSettings;

use super::{TEXT, t};
use crate::Env;
use crate::kit::race::{self, Race};
use crate::kit::theme;

/// The page's rungs: one output per invocation (each a dot product over
/// K, much as a GEMV computes), and the register-blocked vec4 kernel built
/// for large M.
const RUNGS: [GemmKind; 2] = [GemmKind::Coalesced, GemmKind::Vec4(BLOCK)];

/// The weights' N × K, the prefill's M, and the values the copy and the
/// FMA chains (the roofs) run on, with the trials each kernel is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub prefill_m: u32,
    pub n: u32,
    pub k: u32,
    pub roof_values: Problem,
    pub trials: u32,
    pub rungs: &'static [GemmKind],
    /// Whether the FMA chains run (the compute roof; the plot needs it).
    pub compute_roof: bool,
}

/// The page's: 16 MB of f32 weights, and a 256-token prefill (2³⁰
/// multiply-adds, the most the page's f64 reference takes).
pub const PAGE: Shape =
    Shape { prefill_m: 256, n: 2048, k: 2048, roof_values: Problem::new(1024, 1024), trials: 3, rungs: &RUNGS, compute_roof: true };
/// The self-test's: one rung and no FMA chains, small enough for a
/// software GPU to race in a few seconds (each kernel it runs costs it most
/// of a second); its results are checked, not plotted.
pub const SMALL: Shape = Shape {
    prefill_m: 16,
    n: 256,
    k: 256,
    roof_values: Problem::new(64, 256),
    trials: 1,
    rungs: &[GemmKind::Coalesced],
    compute_roof: false,
};

fn settings(m: u32, shape: Shape, roofs: bool) -> LadderSettings {
    let families: &[Family] = if roofs && shape.compute_roof { &[Family::Gemm, Family::Compute] } else { &[Family::Gemm] };
    let mut s = LadderSettings::families(families, shape.roof_values, Data::Random, shape.trials);
    s.gemm = shape.rungs.to_vec();
    s.gemm_shape = Problem::gemm(m, shape.n, shape.k);
    s
}

#[derive(Default)]
pub struct GpuRace {
    decode: Race,
    prefill: Race,
    /// The prefill's race, to start once the decode's ends.
    pending: Option<Shape>,
    shape: Option<Shape>,
}

impl GpuRace {
    pub fn is_running(&self) -> bool {
        self.decode.is_busy() || self.prefill.is_busy() || self.pending.is_some()
    }

    pub fn start(&mut self, shape: Shape, env: &Env<'_>) {
        self.prefill = Race::default();
        self.shape = Some(shape);
        self.decode.start(&settings(1, shape, true), env);
        self.pending = Some(shape);
    }

    /// Both races at once, for the self-test: at its size the results are
    /// checked, not the times (which sharing the GPU would skew), and a
    /// software GPU answers each kernel a few frames late, so two in turn
    /// would take twice as long.
    pub fn start_together(&mut self, shape: Shape, env: &Env<'_>) {
        self.shape = Some(shape);
        self.pending = None;
        self.decode.start(&settings(1, shape, true), env);
        self.prefill.start(&settings(shape.prefill_m, shape, false), env);
    }

    pub fn logic(&mut self, ctx: &egui::Context, env: &Env<'_>) {
        self.decode.poll(ctx);
        self.prefill.poll(ctx);
        if !self.decode.is_busy()
            && let Some(shape) = self.pending.take()
            && self.decode.error.is_none()
        {
            self.prefill.start(&settings(shape.prefill_m, shape, false), env);
            ctx.request_repaint();
        }
    }

    /// For the self-test: both races' rungs ran and match their references.
    pub fn outcome(&self) -> Option<crate::SelfTestResult> {
        if self.pending.is_some() {
            return None;
        }
        if let Some(e) = &self.decode.error {
            return Some(Err(crate::SelfTestFailure(e.clone())));
        }
        let decode = self.decode.self_test_outcome()?;
        let prefill = self.prefill.self_test_outcome()?;
        Some(match (decode, prefill) {
            (Ok(a), Ok(b)) => Ok(format!("GEMM at M = 1: {a}; at the prefill's M: {b}")),
            (Err(e), _) | (_, Err(e)) => Err(e),
        })
    }

    /// The roofs of the decode race: the copy's GB/s and the FMA chains'
    /// GFLOP/s.
    fn roofs(&self) -> Option<Roofline> {
        let measured: Vec<_> = self.decode.results.iter().filter_map(|o| o.measured()).collect();
        let bandwidth = measured.iter().find(|m| m.kernel == Some(Kernel::Copy))?.gb_per_s;
        let peak = measured.iter().find(|m| m.kernel == Some(Kernel::Fma))?.roofline?.1;
        (bandwidth > 0.0 && peak > 0.0).then_some(Roofline { peak, bandwidth })
    }

    /// Each rung's (intensity, GFLOP/s) in `race`.
    fn points(race: &Race) -> Vec<(GemmKind, [f64; 2])> {
        race.results
            .iter()
            .filter_map(|o| o.measured())
            .filter_map(|m| match (m.kernel, m.roofline) {
                (Some(Kernel::Gemm(g)), Some((ai, gflops))) => Some((g, [ai, gflops])),
                _ => None,
            })
            .collect()
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        ui.add_space(6.0);
        crate::kit::anchor(&ui.strong(t(lang, "gpu_roof.heading")), "gpu_roof");
        let shape = PAGE;
        ui.label(TEXT.fill(lang, "gpu_roof.explain", &[("m", &shape.prefill_m), ("n", &shape.n), ("k", &shape.k)]));
        race::device_ui(ui, env);
        let decoding = self.decode.is_busy();
        let busy = self.decode.progress_ui(ui, lang) | self.prefill.progress_ui(ui, lang);
        // Stopped by the learner (only the Stop button ends a race here):
        // the prefill's race is not started after it.
        if decoding && !self.decode.is_busy() {
            self.pending = None;
        }
        if !busy && self.pending.is_none() && ui.button(t(lang, "gpu_roof.run")).clicked() {
            self.start(shape, env);
        }
        for error in [&self.decode.error, &self.prefill.error].into_iter().flatten() {
            ui.colored_label(theme::bad(ui.visuals()), error);
        }
        let (Some(roof), Some(ran)) = (self.roofs(), self.shape) else {
            return;
        };
        let visuals = ui.visuals().clone();
        let mut series = Vec::new();
        let mut lines = Vec::new();
        for (m, race) in [(1, &self.decode), (ran.prefill_m, &self.prefill)] {
            for (i, (rung, point)) in Self::points(race).into_iter().enumerate() {
                let name = TEXT.fill(lang, "gpu_roof.point", &[("rung", &rung.id()), ("m", &m)]);
                let colour = theme::series(&visuals, 1 + i + if m == 1 { 0 } else { ran.rungs.len() });
                let bound = Bound::at(&roof, point[0]).name(lang);
                lines.push(TEXT.fill(
                    lang,
                    "gpu_roof.line",
                    &[
                        ("name", &name),
                        ("gflops", &show_sig(point[1], 3)),
                        ("intensity", &show_sig(point[0], 3)),
                        ("roof", &show_sig(roof.attainable(point[0]), 3)),
                        ("bound", &bound),
                    ],
                ));
                series.push((name, vec![point], colour));
            }
        }
        // Without a compute GPU the ladder times its kernels on the CPU.
        let on_gpu = matches!(env.gpu, crate::GpuStatus::Compute(_));
        let (roofs_name, roofs_line) =
            if on_gpu { ("gpu_roof.roofs", "gpu_roof.roofs_line") } else { ("gpu_roof.cpu_roofs", "gpu_roof.cpu_roofs_line") };
        super::roofline_view::roofline_plot(ui, "infer_gpu_roofline_plot", &roof, t(lang, roofs_name), &series, lang);
        ui.label(TEXT.fill(
            lang,
            roofs_line,
            &[("bandwidth", &show_sig(roof.bandwidth, 3)), ("peak", &show_sig(roof.peak, 3)), ("ridge", &show_sig(roof.ridge(), 3))],
        ));
        for line in lines {
            ui.label(line);
        }
    }
}
