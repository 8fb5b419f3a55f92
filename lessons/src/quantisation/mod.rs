//! "Quantisation": a trained weight tensor on the integer grid with a clip
//! the learner drags (error and SQNR from the core), post-training
//! quantisation of the engine's MLP measured cell by cell, the planted
//! outlier channel, quantisation-aware training, fp8 training with its
//! scales, the int8 GEMM raced on
//! the GPU, and the bytes of a
//! quantised model. Every number comes
//! from `dlsys_core::quant`; `dlsys-lab quant` prints the same values.

mod bits_plot;
mod bytes_view;
mod exercises;
mod fp8_view;
mod gemm_view;
mod grid_view;
mod models_view;
mod mx_view;
mod qat_view;
mod runs;

use dlsys_core::float::Rounding;
use dlsys_core::quant::Mapping;
use serde::{Deserialize, Serialize};

use crate::{Env, Lesson};

pub use exercises::EXERCISES;

crate::lesson_text!("quantisation");

/// What the learner set up; survives restarts (clamped when read back).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The histogram: which layer's weights, bits, mapping, and the clip as
    /// a fraction of the tensor's amax.
    pub layer: usize,
    pub bits: u32,
    pub mapping: Mapping,
    /// Nearest-even or stochastic (seed 1).
    pub rounding: Rounding,
    pub clip: f64,
    /// The table's group size along K.
    pub group: usize,
    /// The tables' clip for the weights.
    pub table_calibration: dlsys_core::quant::Calibration,
    /// The model of the weight-only table beside the MLP's.
    pub ptq_model: dlsys_core::quant::models::ModelKind,
    /// The outlier's magnitude M: the feature becomes M · (x + 1).
    pub outlier: f64,
    /// The bytes calculator: parameters in billions, bits, group size
    /// (0: one scale per tensor), bytes per scale, zero points.
    pub params_billions: f64,
    pub calc_bits: u32,
    pub calc_group: u64,
    pub scale_bytes: u32,
    pub zero_points: bool,
    /// The int8 GEMM race's M = N = K.
    pub gemm_size: u32,
    /// Quantisation-aware training: the weights' bits (per tensor) and epochs.
    pub qat_bits: u32,
    pub qat_epochs: u64,
    /// The fp8 training comparison's epochs.
    pub fp8_epochs: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            layer: 0,
            bits: 4,
            mapping: Mapping::Symmetric,
            rounding: Rounding::NearestEven,
            clip: 1.0,
            group: 32,
            ptq_model: dlsys_core::quant::models::ModelKind::default(),
            table_calibration: dlsys_core::quant::Calibration::MinMax,
            outlier: 200.0,
            params_billions: 70.0,
            calc_bits: 4,
            calc_group: 128,
            scale_bytes: 2,
            zero_points: false,
            gemm_size: 256,
            qat_bits: 2,
            qat_epochs: 5,
            fp8_epochs: 10,
        }
    }
}

impl Settings {
    fn clamped(&mut self) {
        let d = Self::default();
        let finite = |x: f64, lo: f64, hi: f64, fallback: f64| {
            if x.is_finite() { x.clamp(lo, hi) } else { fallback }
        };
        self.layer = self.layer.min(1);
        if !ROUNDINGS.contains(&self.rounding) {
            self.rounding = Rounding::NearestEven;
        }
        self.bits = self.bits.clamp(dlsys_core::quant::MIN_BITS, dlsys_core::quant::MAX_BITS);
        self.clip = finite(self.clip, 0.05, 1.0, d.clip);
        self.group = self.group.clamp(1, 128);
        if !TABLE_CALIBRATIONS.contains(&self.table_calibration) {
            self.table_calibration = d.table_calibration;
        }
        self.outlier = finite(self.outlier, 1.0, 1000.0, d.outlier);
        self.params_billions = finite(self.params_billions, 0.001, 10_000.0, d.params_billions);
        self.calc_bits = self.calc_bits.clamp(2, 16);
        self.calc_group = self.calc_group.min(1 << 20);
        self.scale_bytes = self.scale_bytes.clamp(1, 4);
        self.gemm_size = self.gemm_size.clamp(4, 1024);
        self.qat_bits = self.qat_bits.clamp(dlsys_core::quant::MIN_BITS, dlsys_core::quant::MAX_BITS);
        self.qat_epochs = self.qat_epochs.clamp(1, 20);
        self.fp8_epochs = self.fp8_epochs.clamp(1, 30);
    }
}

/// The clips the tables offer (not the entropy clip: a channel's or a
/// group's few values cannot fill its histogram, and the core refuses it).
pub const TABLE_CALIBRATIONS: [dlsys_core::quant::Calibration; 3] = [
    dlsys_core::quant::Calibration::MinMax,
    dlsys_core::quant::Calibration::Percentile { pct: 99.9 },
    dlsys_core::quant::Calibration::Mse,
];

/// The roundings the histogram offers.
const ROUNDINGS: [Rounding; 2] = [Rounding::NearestEven, Rounding::Stochastic];

#[derive(Default)]
pub struct Quantisation {
    settings: Settings,
    runs: runs::Runs,
    models: models_view::ModelsRun,
    gemm: gemm_view::GemmRace,
    qat: qat_view::QatRun,
    mx: mx_view::MxRuns,
    fp8: fp8_view::Fp8Runs,
    /// The histogram's layer on fp8's grid and int8's, per layer shown.
    grids: grid_view::Grids,
}

impl Lesson for Quantisation {
    crate::lesson_identity!(exercises: EXERCISES);

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        self.settings.clamped();
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(8.0);
        let (s, runs) = (&mut self.settings, &mut self.runs);
        let grids = &mut self.grids;
        crate::kit::section(ui, &TEXT, lang, "grid", |ui| grid_view::ui(ui, s, runs, grids, lang));
        crate::kit::section(ui, &TEXT, lang, "table", |ui| runs.table_ui(ui, s, lang));
        let models = &mut self.models;
        crate::kit::section(ui, &TEXT, lang, "models", |ui| models.ui(ui, s, lang));
        crate::kit::section(ui, &TEXT, lang, "outlier", |ui| runs.outlier_ui(ui, s, lang));
        let trained = runs.trained();
        let qat = &mut self.qat;
        crate::kit::section(ui, &TEXT, lang, "qat", |ui| qat.ui(ui, s, &trained, lang));
        let mx = &mut self.mx;
        crate::kit::section(ui, &TEXT, lang, "mx", |ui| mx.ui(ui, &trained, lang));
        let fp8 = &mut self.fp8;
        crate::kit::section(ui, &TEXT, lang, "fp8", |ui| fp8.ui(ui, s, lang));
        crate::kit::section(ui, &TEXT, lang, "int8_gemm", |ui| self.gemm.ui(ui, s, env));
        crate::kit::section(ui, &TEXT, lang, "bytes", |ui| bytes_view::ui(ui, s, lang));
    }

    fn logic(&mut self, ctx: &egui::Context, _env: &Env<'_>) {
        self.runs.logic(ctx);
        self.models.logic(ctx);
        self.gemm.logic(ctx);
        self.qat.logic(ctx);
        self.mx.logic(ctx);
        self.fp8.logic(ctx);
    }

    fn is_busy(&self) -> bool {
        self.runs.is_running() || self.models.is_running() || self.gemm.is_busy() || self.qat.is_running() || self.mx.is_running() || self.fp8.is_running()
    }

    crate::persist_field!(settings);

    /// The table, as its button runs it.
    fn self_test_start(&mut self, _env: &Env<'_>) -> bool {
        self.runs.start_table(&Settings::default(), true);
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        self.runs.self_test_outcome()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_garbage_is_clamped() {
        let mut lesson = Quantisation::default();
        lesson.settings.bits = 3;
        assert_eq!(crate::reloaded(&lesson, "(bits: \"x\")").settings, lesson.settings);
        let mut wild = Settings {
            bits: 40,
            clip: f64::NAN,
            group: 0,
            outlier: -1.0,
            ..Settings::default()
        };
        wild.clamped();
        assert_eq!((wild.bits, wild.clip, wild.group, wild.outlier), (8, 1.0, 1, 1.0));
    }
}
