//! "Inference & serving": the engine's character model generating with
//! and without its KV cache, every step timed; the serving calculator (prefill vs decode, each
//! bound by compute or by bytes, the batch where decoding turns
//! compute-bound, the KV cache and how many sequences fit), the paged KV
//! cache against contiguous reservation on a seeded stream of requests,
//! static against continuous batching on the virtual clock, and
//! speculative decoding with its exactness test. Every number comes from
//! `dlsys_core::inference`; `dlsys-lab infer` prints the same values.

mod batching_view;
mod calc_view;
mod exercises;
mod generate_view;
mod gpu_roofline_view;
mod kv_grid_view;
mod paged_view;
mod roofline_view;
mod spec_engine_view;
mod spec_view;

use dlsys_core::quant::KvElement;
use dlsys_core::inference::calc::{DevicePreset, MAX_COUNT, ServeSettings};
use dlsys_core::inference::paged::{MAX_MEMORY_TOKENS, StreamSettings};
use dlsys_core::inference::speculative::MAX_K;
use dlsys_core::memory::transformer::Preset;
use serde::{Deserialize, Serialize};

use crate::{Env, Lesson};

pub use exercises::EXERCISES;

crate::lesson_text!("inference");

/// What the learner set up; survives restarts (clamped when read back).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub model: Preset,
    pub device: DevicePreset,
    /// Bytes per weight, and the cache's element type.
    pub weight_bytes: f64,
    pub kv: KvElement,
    /// A save from before the element type held the cache's bytes per
    /// value; read into `kv` when the page first draws, and kept in the
    /// save until then.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "bare_bytes",
        deserialize_with = "legacy_bytes"
    )]
    pub kv_bytes: Option<f64>,
    pub prompt: u64,
    pub context: u64,
    pub batch: u64,
    pub stream: StreamSettings,
    pub batching: batching_view::Stream,
    pub generation: generate_view::GenSettings,
    /// The shape model of the roofline section.
    pub shape: dlsys_core::inference::roofline::RooflineSettings,
    /// Proposals per round and the seed of the speculation.
    pub k: u32,
    pub spec_seed: u64,
    /// A draft step's cost in target steps, for the best k.
    pub draft_cost: f64,
}

/// An old save's `kv_bytes: 1` (a bare number, not `Some(1)`).
fn legacy_bytes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    f64::deserialize(d).map(Some)
}

/// Written back as it was read, until the page has turned it into `kv`.
fn bare_bytes<S: serde::Serializer>(bytes: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(bytes.unwrap_or(2.0))
}

impl Default for Settings {
    fn default() -> Self {
        let serve = ServeSettings::preset(Preset::Llama7b, DevicePreset::H100);
        Self {
            model: Preset::Llama7b,
            device: DevicePreset::H100,
            weight_bytes: serve.weight_bytes,
            kv: serve.kv,
            kv_bytes: None,
            prompt: serve.prompt,
            context: serve.context,
            batch: serve.batch,
            stream: StreamSettings::default(),
            batching: batching_view::Stream::default(),
            generation: generate_view::GenSettings::default(),
            shape: roofline_view::default_settings(),
            k: 4,
            spec_seed: 1,
            draft_cost: 0.1,
        }
    }
}

/// The weight formats the calculator offers: bytes per weight.
pub const WEIGHT_BYTES: [f64; 3] = [2.0, 1.0, 0.5];

impl Settings {
    fn clamped(&mut self) {
        let d = Self::default();
        if !WEIGHT_BYTES.contains(&self.weight_bytes) {
            self.weight_bytes = d.weight_bytes;
        }
        if let Some(bytes) = self.kv_bytes.take() {
            self.kv = match bytes {
                1.0 => KvElement::Int8,
                0.5 => KvElement::Int4,
                _ => KvElement::Fp16,
            };
        }
        self.prompt = self.prompt.clamp(1, MAX_COUNT);
        self.context = self.context.clamp(1, MAX_COUNT);
        self.batch = self.batch.clamp(1, MAX_COUNT);
        self.k = self.k.clamp(1, MAX_K);
        self.draft_cost = if self.draft_cost.is_finite() {
            self.draft_cost.clamp(0.0, spec_view::MAX_DRAFT_COST)
        } else {
            d.draft_cost
        };
        self.batching.clamped();
        self.generation.clamped();
        roofline_view::clamp(&mut self.shape);
        let st = &mut self.stream;
        st.block_tokens = st.block_tokens.clamp(1, 256);
        st.reserve = st.reserve.clamp(2, 1 << 16);
        st.memory_tokens = st.memory_tokens.clamp(st.reserve, MAX_MEMORY_TOKENS);
        st.requests = st.requests.clamp(1, 1000);
        // The lengths stay as drawn by the lesson: half the reserve each at most.
        let half = st.reserve / 2;
        st.prompt = (st.prompt.0.clamp(1, half), st.prompt.1.clamp(1, half));
        st.output = (st.output.0.clamp(1, half), st.output.1.clamp(1, half));
        if st.prompt.0 > st.prompt.1 {
            st.prompt = (st.prompt.1, st.prompt.0);
        }
        if st.output.0 > st.output.1 {
            st.output = (st.output.1, st.output.0);
        }
    }

    /// The calculator's settings.
    pub fn serve(&self) -> ServeSettings {
        ServeSettings {
            weight_bytes: self.weight_bytes,
            kv: self.kv,
            prompt: self.prompt,
            context: self.context,
            batch: self.batch,
            ..ServeSettings::preset(self.model, self.device)
        }
    }
}

#[derive(Default)]
pub struct Inference {
    settings: Settings,
    generate: generate_view::Job,
    roofline: roofline_view::Job,
    gpu_roof: gpu_roofline_view::GpuRace,
    paged: paged_view::Cache,
    batching: batching_view::Cache,
    spec: spec_view::Cache,
}

impl Lesson for Inference {
    crate::lesson_identity!(exercises: EXERCISES);

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        self.settings.clamped();
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(8.0);
        let Self { settings, generate, roofline, gpu_roof, paged, batching, spec } = self;
        crate::kit::section(ui, &TEXT, lang, "generate", |ui| generate.ui(ui, &mut settings.generation, lang));
        crate::kit::section(ui, &TEXT, lang, "roofline", |ui| {
            roofline.ui(ui, &mut settings.shape, lang);
            gpu_roof.ui(ui, env);
        });
        crate::kit::section(ui, &TEXT, lang, "calc", |ui| calc_view::ui(ui, settings, lang));
        crate::kit::section(ui, &TEXT, lang, "paged", |ui| paged.ui(ui, &mut settings.stream, lang));
        crate::kit::section(ui, &TEXT, lang, "batching", |ui| batching.ui(ui, settings, lang));
        crate::kit::section(ui, &TEXT, lang, "spec", |ui| spec.ui(ui, settings, generate.trained(), lang));
    }

    fn logic(&mut self, ctx: &egui::Context, env: &Env<'_>) {
        self.generate.logic(ctx);
        self.roofline.logic(ctx);
        self.gpu_roof.logic(ctx, env);
    }

    fn is_busy(&self) -> bool {
        self.generate.is_running()
            || self.generate.is_streaming()
            || self.roofline.is_running()
            || self.gpu_roof.is_running()
    }

    crate::persist_field!(settings);

    /// A short generation (a model trained 20 steps, 60 characters, with
    /// and without the cache), a small shape model on the roofline, the
    /// stream through both caches, both
    /// batching schemes and the speculation at the lesson's defaults, as
    /// the page computes them.
    fn self_test_start(&mut self, env: &Env<'_>) -> bool {
        let d = Settings::default();
        self.generate.start(&generate_view::GenSettings {
            steps: 20,
            tokens: 60,
            ..d.generation.clone()
        });
        // The roofline's passes at a size the self-test affords (the
        // page's shape model is hundreds of MB).
        let small = dlsys_core::inference::roofline::RooflineSettings { width: 128, prompt: 32, steps: 4, seed: 1 };
        self.roofline.start_sized(&small, (256, 8 << 20));
        self.gpu_roof.start_together(gpu_roofline_view::SMALL, env);
        self.paged.compute(&d.stream);
        self.batching.compute(&d.batching.settings(&d));
        self.spec.compute(&d);
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        let outcomes = [
            self.generate.outcome()?,
            self.roofline.outcome()?,
            self.gpu_roof.outcome()?,
            self.paged.outcome()?,
            self.batching.outcome()?,
            self.spec.outcome()?,
        ];
        let failed = outcomes.iter().any(Result::is_err);
        let detail = outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(|e| e.0))
            .collect::<Vec<_>>()
            .join("; ");
        Some(if failed { Err(crate::SelfTestFailure(detail)) } else { Ok(detail) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_garbage_is_clamped() {
        let mut lesson = Inference::default();
        lesson.settings.batch = 32;
        lesson.settings.device = DevicePreset::A100;
        assert_eq!(crate::reloaded(&lesson, "(batch: \"x\")").settings, lesson.settings);
        // A save from before int4 caches held the bytes as an integer.
        let mut old = Inference::default();
        assert!(old.load_state("(kv_bytes: 1)").is_ok());
        // Saved again before the page was opened, it is kept as it was.
        assert_eq!(crate::reloaded(&old, "(kv_bytes: \"x\")").settings.kv_bytes, Some(1.0));
        old.settings.clamped();
        assert_eq!((old.settings.kv, old.settings.kv_bytes), (KvElement::Int8, None));
        let mut wild = Settings {
            weight_bytes: f64::NAN,
            batch: 0,
            k: 99,
            draft_cost: f64::NAN,
            ..Settings::default()
        };
        wild.stream.block_tokens = 0;
        wild.stream.prompt = (900, 3);
        wild.batching.rate = f64::NAN;
        wild.batching.max_batch = 0;
        wild.clamped();
        assert!(wild.batching.settings(&wild).validate().is_ok());
        assert!(wild.serve().validate().is_ok());
        assert!(wild.stream.validate().is_ok(), "{:?}", wild.stream.validate());
        assert_eq!(wild.k, MAX_K);
        assert_eq!(wild.draft_cost, Settings::default().draft_cost);
        wild.draft_cost = -1.0;
        wild.clamped();
        assert_eq!(wild.draft_cost, 0.0);
    }
}
