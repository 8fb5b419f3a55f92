//! "Attention kernels": the softmax lesson's online softmax and the GEMM
//! lesson's tiles joined into FlashAttention. Four WGSL rungs raced on the
//! one ladder — the score matrix written out, fused rows streaming K and V,
//! FlashAttention-2's tiles in workgroup memory, and the causal rung that
//! skips tiles — each held to the core's f64 reference; their traffic from
//! the core's models (which the instrumented build verifies), the tile loop
//! replayed step by step, an N sweep where the naive rung's memory grows
//! with N², and the exercises. `dlsys-lab bench kernels --family attention`
//! races the same programs.

mod exercises;
mod loglog;
mod race_view;
mod sweep_view;
mod tiles_view;
mod traffic_view;

use dlsys_core::kernels::attention::{AttnError, AttnRung, AttnShape, Qkv, SEED, Tiles};
use dlsys_core::kernels::{Data, Problem};
use dlsys_shaders::LadderSettings;
use serde::{Deserialize, Serialize};

use crate::kit::background::Background;
use crate::kit::race::Race;
use crate::{Env, Lesson};

pub use exercises::EXERCISES;

crate::lesson_text!("attention_kernels");

/// What the learner set up; survives restarts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub seq: u32,
    pub head_dim: u32,
    pub causal: bool,
    pub br: u32,
    pub bc: u32,
    pub trials: u32,
    /// The longest N of the sweep.
    pub sweep_max: u32,
    /// The tile loop's step shown.
    pub step: usize,
}

impl Default for Settings {
    fn default() -> Self {
        let tiles = Tiles::default();
        Self {
            seq: 512,
            head_dim: 64,
            causal: true,
            br: tiles.br,
            bc: tiles.bc,
            trials: 3,
            sweep_max: 1024,
            step: 0,
        }
    }
}

impl Settings {
    fn shape(&self, seq: u32) -> Result<AttnShape, AttnError> {
        AttnShape::new(1, seq, self.head_dim, self.causal)
    }

    fn tiles(&self) -> Tiles {
        Tiles {
            br: self.br,
            bc: self.bc,
        }
    }
}

/// Programs made off the UI thread (the f64 reference is N²·d
/// multiply-adds): each rung's program, or why it is refused.
type Built = Result<(AttnShape, Vec<dlsys_shaders::attention::Made>), AttnError>;

/// Makes the programs for `shape` on a device with `limits`.
fn build(shape: AttnShape, tiles: Tiles, limits: dlsys_core::kernels::attention::AttnLimits) -> Built {
    let qkv = Qkv::seeded(&shape, SEED);
    let rungs = AttnRung::for_shape(&shape);
    dlsys_shaders::attention::programs(&rungs, &shape, tiles, limits, &qkv).map(|p| (shape, p))
}

/// The programs that were made, and the rungs refused with why.
fn split(
    made: Vec<dlsys_shaders::attention::Made>,
) -> (Vec<dlsys_shaders::Program>, Vec<(AttnRung, AttnError)>) {
    let mut programs = Vec::new();
    let mut refused = Vec::new();
    for (rung, program) in made {
        match program {
            Ok(p) => programs.push(p),
            Err(e) => refused.push((rung, e)),
        }
    }
    (programs, refused)
}

/// The built-in kernels raced beside the programs: the copy (the memory
/// roof) and, for the main race, the FMA chains (the compute roof).
fn ladder(trials: u32, fma: bool) -> LadderSettings {
    let mut settings = LadderSettings::families(&[], Problem::new(1, 1 << 20), Data::Random, trials);
    settings.fma = fma;
    settings
}

#[derive(Default)]
pub struct AttentionKernels {
    settings: Settings,
    race: Race,
    building: Background<Built>,
    /// The problem of the last race, and the rungs it refused.
    raced: Option<(AttnShape, Vec<(AttnRung, AttnError)>)>,
    error: Option<String>,
    sweep: sweep_view::Sweep,
    /// The tile loop's steps, for the mask they were replayed with.
    trace: crate::kit::memo::Memo<bool, Vec<dlsys_core::kernels::attention::TileStep>>,
    /// When the tile loop plays, the time of its last step.
    playing: Option<f64>,
}

impl AttentionKernels {
    fn busy(&self) -> bool {
        self.race.is_busy() || self.building.is_running() || self.sweep.is_busy()
    }
}

impl Lesson for AttentionKernels {
    crate::lesson_identity!(exercises: EXERCISES);

    fn logic(&mut self, ctx: &egui::Context, env: &Env<'_>) {
        self.race.poll(ctx);
        self.race_built(ctx, env);
        self.sweep.logic(ctx, env, &self.settings);
    }

    fn is_busy(&self) -> bool {
        self.busy()
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.add_space(4.0);
        crate::kit::race::device_ui(ui, env);
        use crate::kit::section;
        section(ui, &TEXT, lang, "race", |ui| self.race_ui(ui, env));
        section(ui, &TEXT, lang, "tiles", |ui| self.tiles_ui(ui, lang));
        section(ui, &TEXT, lang, "traffic", |ui| {
            traffic_view::ui(ui, &self.settings, lang);
        });
        section(ui, &TEXT, lang, "sweep", |ui| {
            self.sweep.ui(ui, &mut self.settings, env);
        });
    }

    crate::persist_field!(settings);

    /// The race through the same path as its button, cut to what a software
    /// GPU in a browser runs in seconds: N = 64, d = 32, one trial.
    fn self_test_start(&mut self, env: &Env<'_>) -> bool {
        self.settings = Settings {
            seq: 64,
            head_dim: 32,
            trials: 1,
            ..Settings::default()
        };
        self.start(env);
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        if self.building.is_running() {
            return None;
        }
        if let Some(e) = &self.error {
            return Some(Err(crate::SelfTestFailure(e.clone())));
        }
        self.race.self_test_outcome()
    }
}

#[cfg(test)]
mod tests;
