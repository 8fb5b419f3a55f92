//! Prefill and decode on the CPU's roofline: the CPU's roofs measured,
//! then a shape model (random weights, far larger than the CPU's caches)
//! prefilled and decoded a pass a frame; both placed on a log-log roofline
//! with the decode bound beside the measured rate
//! (`dlsys_core::inference::roofline`; `dlsys-lab infer roofline` prints
//! the same values).

use dlsys_core::errors::Localized as _;
use dlsys_core::float::show_sig;
use dlsys_core::inference::InferError;
use dlsys_core::inference::roofline::{
    self, CpuRoofs, MAX_SHAPE_CONTEXT, MAX_WIDTH, Point, RooflineReport, RooflineSettings, ShapeRun,
};
use dlsys_core::text::{Lang, args};
use web_time::Instant;

use super::{TEXT, t};
use crate::kit::frame_budget::FrameBudget;
use crate::kit::theme;

/// The shipped text's vocabulary, the shape model's (read once: the
/// weights' size is shown every frame).
static VOCAB: std::sync::LazyLock<usize> =
    std::sync::LazyLock::new(|| dlsys_core::nn::models::char_model::Corpus::shipped().vocab.len());

/// The page's defaults: the CLI's shape natively; in a browser (one
/// thread, a memory the tab shares) a 1,024-wide model (50 MB, still past
/// most last-level caches) and a shorter prompt, so no pass holds a frame
/// for seconds.
pub fn default_settings() -> RooflineSettings {
    if cfg!(target_arch = "wasm32") {
        RooflineSettings { width: 1024, prompt: 128, ..RooflineSettings::default() }
    } else {
        RooflineSettings::default()
    }
}

/// The roofs' measurement: the CLI's natively, a quarter of it in a browser.
fn roof_sizes() -> (usize, usize) {
    if cfg!(target_arch = "wasm32") {
        (roofline::GEMM_SIZE / 2, roofline::READ_BYTES / 4)
    } else {
        (roofline::GEMM_SIZE, roofline::READ_BYTES)
    }
}

/// The widest model and longest prompt the page takes: the CLI's limits
/// natively; in a browser 1,024 and 512 (a 4,096-wide model is 805 MB, and
/// its prefill would hold the tab for many seconds).
fn limits() -> (usize, usize) {
    if cfg!(target_arch = "wasm32") { (1024, 512) } else { (MAX_WIDTH, MAX_SHAPE_CONTEXT - 1) }
}

/// Brings wild saved settings back into range.
pub fn clamp(s: &mut RooflineSettings) {
    let (width, prompt) = limits();
    s.width = (s.width / 128).clamp(1, width / 128) * 128;
    s.prompt = s.prompt.clamp(1, prompt);
    s.steps = s.steps.clamp(1, MAX_SHAPE_CONTEXT - s.prompt);
}

#[derive(Default)]
pub struct Job {
    run: Option<(CpuRoofs, ShapeRun)>,
    done: Option<(CpuRoofs, RooflineReport)>,
    failed: Option<InferError>,
    /// The decode steps the last start asked for.
    steps_asked: usize,
    budget: FrameBudget,
}

impl Job {
    pub fn is_running(&self) -> bool {
        self.run.is_some()
    }

    /// Measures the roofs and builds the model (this frame), then runs a
    /// pass a frame in [`Job::logic`].
    pub fn start(&mut self, s: &RooflineSettings) {
        self.start_sized(s, roof_sizes());
    }

    /// [`Job::start`] with the roofs measured on a `gemm`³ product and a
    /// read of `bytes` (the self-test's are small).
    pub fn start_sized(&mut self, s: &RooflineSettings, (size, bytes): (usize, usize)) {
        self.done = None;
        self.failed = None;
        self.steps_asked = s.steps;
        let vocab = *VOCAB;
        let started = roofline::measure_cpu(size, bytes).and_then(|roofs| Ok((roofs, ShapeRun::new(s, vocab, &roofs)?)));
        match started {
            Ok(run) => self.run = Some(run),
            Err(e) => self.failed = Some(e),
        }
    }

    pub fn logic(&mut self, ctx: &egui::Context) {
        let Some((roofs, run)) = &mut self.run else {
            self.budget.pause();
            return;
        };
        // At least one pass a frame: the prefill alone may outlast a slice.
        let until = Instant::now() + self.budget.begin();
        let mut finished = None;
        loop {
            match run.step() {
                Ok(Some(report)) => {
                    finished = Some(Ok(report));
                    break;
                }
                Ok(None) if Instant::now() < until => {}
                Ok(None) => break,
                Err(e) => {
                    finished = Some(Err(e));
                    break;
                }
            }
        }
        self.budget.end();
        ctx.request_repaint();
        match finished {
            Some(Ok(report)) => self.done = Some((*roofs, report)),
            Some(Err(e)) => self.failed = Some(e),
            None => return,
        }
        self.run = None;
    }

    /// For the self-test: every pass ran, each with work and traffic, and
    /// the bound is a rate.
    pub fn outcome(&self) -> Option<crate::SelfTestResult> {
        if let Some(e) = &self.failed {
            return Some(Err(crate::SelfTestFailure(e.to_string())));
        }
        let (roofs, r) = self.done.as_ref()?;
        let detail = format!(
            "roofs {:.1} GFLOP/s, {:.1} GB/s; prefill {:.2} GFLOP/s at {:.1} FLOP/B; decode {:.0} tokens/s (bound {:.0})",
            roofs.roofline.peak,
            roofs.roofline.bandwidth,
            r.prefill.gflops(),
            r.prefill.cost.intensity(),
            r.decode_tokens_per_s,
            r.decode_bound_tokens_per_s
        );
        // Every step ran, each after the one before, and the counts put the
        // prefill right of every decode step.
        let whole = r.decode.len() == self.steps_asked
            && r.decode.windows(2).all(|w| w[1].cached == w[0].cached + 1)
            && r.decode.iter().all(|p| p.cost.intensity() < r.prefill.cost.intensity());
        Some(if whole { Ok(detail) } else { Err(crate::SelfTestFailure(detail)) })
    }

    pub fn ui(&mut self, ui: &mut egui::Ui, s: &mut RooflineSettings, lang: Lang) {
        ui.label(t(lang, "roofline.explain"));
        ui.horizontal_wrapped(|ui| {
            let (width, prompt) = limits();
            crate::kit::number_field(ui, t(lang, "roofline.width"), &mut s.width, 128..=width, 128.0);
            crate::kit::number_field(ui, t(lang, "roofline.prompt"), &mut s.prompt, 1..=prompt, 4.0);
            crate::kit::number_field(ui, t(lang, "roofline.steps"), &mut s.steps, 1..=256, 0.2);
        });
        clamp(s);
        let vocab = *VOCAB;
        let weights_mb = roofline::weight_bytes(&s.config(vocab)) / 1e6;
        ui.horizontal_wrapped(|ui| {
            if let Some((_, run)) = &self.run {
                if ui.button(t(lang, "roofline.stop")).clicked() {
                    self.run = None;
                    self.budget.pause();
                    return;
                }
                let (done, of) = (run.done(), run.passes());
                let label = TEXT.fill(lang, "roofline.progress", &[("done", &done), ("of", &of)]);
                ui.add(egui::ProgressBar::new(done as f32 / of.max(1) as f32).desired_width(260.0).text(label));
            } else {
                if ui.button(t(lang, "roofline.run")).clicked() {
                    self.start(s);
                }
                ui.weak(TEXT.fill(lang, "roofline.size", &[("mb", &show_sig(weights_mb, 3))]));
            }
        });
        if let Some(e) = &self.failed {
            ui.colored_label(theme::bad(ui.visuals()), e.message(lang));
        }
        let Some((roofs, report)) = &self.done else {
            return;
        };
        ui.label(TEXT.fill(lang, "roofline.cpu", &args(&roofs.fields())));
        ui.label(TEXT.fill(
            lang,
            "roofline.model",
            &[("width", &report.config.width), ("params", &report.parameters), ("mb", &show_sig(report.weight_bytes / 1e6, 4))],
        ));
        plot(ui, roofs, report, lang);
        let steps = report.decode.len();
        ui.label(TEXT.fill(lang, "roofline.prefill", &args(&report.prefill.fields(roofs, steps, lang))));
        ui.label(TEXT.fill(lang, "roofline.decode", &args(&report.decode_median.fields(roofs, steps, lang))));
        // A model that fits in the CPU's cache outruns the memory bound.
        let bound_key = if report.decode_tokens_per_s > report.decode_bound_tokens_per_s { "roofline.bound_cached" } else { "roofline.bound" };
        ui.label(TEXT.fill(lang, bound_key, &args(&report.bound_fields(roofs))));
        let rival = report.rival_fields();
        ui.label(TEXT.fill(lang, "roofline.gemv", &args(&rival)));
        ui.label(TEXT.fill(lang, "roofline.verify", &args(&rival)));
        // Which explanation fits is the measurement's call.
        let steps_per_pass = report.verify_s / report.last_step_s().max(f64::MIN_POSITIVE);
        ui.label(t(lang, if steps_per_pass <= 1.5 { "roofline.verify_cheap" } else { "roofline.verify_costly" }));
        if cfg!(target_arch = "wasm32") {
            ui.weak(t(lang, "roofline.browser"));
        }
    }
}

/// The CPU's plot: the prefill and every decode step.
fn plot(ui: &mut egui::Ui, roofs: &CpuRoofs, report: &RooflineReport, lang: Lang) {
    let at = |p: &Point| [p.cost.intensity(), p.gflops()];
    let visuals = ui.visuals().clone();
    let series = [
        (t(lang, "roofline.plot.prefill").to_owned(), vec![at(&report.prefill)], theme::series(&visuals, 1)),
        (t(lang, "roofline.plot.decode").to_owned(), report.decode.iter().map(at).collect(), theme::series(&visuals, 2)),
    ];
    roofline_plot(ui, "infer_roofline_plot", &roofs.roofline, t(lang, "roofline.plot.roof"), &series, lang);
}

/// Log-log: the memory roof rising to the ridge, the compute roof flat
/// after it, and each series' points (intensity in FLOP/byte, GFLOP/s).
pub(super) fn roofline_plot(
    ui: &mut egui::Ui,
    id: &str,
    roof: &dlsys_core::kernels::Roofline,
    roof_name: &str,
    series: &[(String, Vec<[f64; 2]>, egui::Color32)],
    lang: Lang,
) {
    use egui_plot::{Line, Plot, PlotPoints, Points};
    let log = |p: &[f64; 2]| [p[0].max(1e-9).log10(), p[1].max(1e-9).log10()];
    let logged: Vec<Vec<[f64; 2]>> = series.iter().map(|(_, ps, _)| ps.iter().map(log).collect()).collect();
    let all = || logged.iter().flatten();
    let ridge = roof.ridge().log10();
    let lo = all().map(|p| p[0]).fold(ridge, f64::min) - 0.5;
    let hi = all().map(|p| p[0]).fold(ridge, f64::max) + 0.5;
    let low_y = all().map(|p| p[1]).fold(roof.peak.log10(), f64::min);
    let roof_line = vec![[lo, roof.memory_roof(10f64.powf(lo)).log10()], [ridge, roof.peak.log10()], [hi, roof.peak.log10()]];
    let roof_colour = theme::series(ui.visuals(), 0);
    let decade = |mark: egui_plot::GridMark, _: &std::ops::RangeInclusive<f64>| {
        if mark.value.fract() == 0.0 { show_sig(10f64.powf(mark.value), 3) } else { String::new() }
    };
    ui.label(t(lang, "roofline.plot.heading"));
    Plot::new(id)
        .height(240.0)
        .x_axis_label(t(lang, "roofline.plot.x"))
        .y_axis_label(t(lang, "roofline.plot.y"))
        .x_grid_spacer(theme::decade_grid())
        .y_grid_spacer(theme::decade_grid())
        .x_axis_formatter(decade)
        .y_axis_formatter(decade)
        // Whole decades at both ends, so each axis names at least two marks.
        .include_x(lo.floor())
        .include_x(hi.ceil())
        .include_y(low_y.floor())
        .include_y(roof.peak.log10().ceil())
        .allow_scroll(false)
        .show(ui, |p| {
            p.line(Line::new(roof_name, PlotPoints::from(roof_line)).color(roof_colour).width(2.0));
            for ((name, _, colour), points) in series.iter().zip(&logged) {
                p.points(Points::new(name.as_str(), PlotPoints::from(points.clone())).color(*colour).radius(4.5));
            }
        });
    let mut keys = vec![crate::kit::figure::Key::line(roof_name, roof_colour)];
    keys.extend(series.iter().map(|(name, _, colour)| crate::kit::figure::Key::points(name.as_str(), *colour)));
    crate::kit::figure::legend(ui, id, &keys);
}
