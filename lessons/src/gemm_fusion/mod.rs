//! "GEMM, fusion & memory access": the compute-bound side of the GPU. A GEMM
//! ladder from one output per invocation to register blocking with vec4
//! loads, raced on one roofline with the memory-bound softmax and sum under
//! the copy kernel's memory roof and the FMA chains' compute roof; an
//! elementwise chain and a LayerNorm as separate kernels and fused; strided
//! reads, transposes and NCHW against NHWC — every kernel a real WGSL kernel
//! through the one `Ladder`, checked against its f64 reference, its bytes
//! from the traffic model the instrumented build verifies. And the CUDA
//! words for each WGSL one.

mod exercises;
mod ui;
mod vocab;

use dlsys_core::kernels::{Block, Family, GemmKind, Problem, ReduceKind, SoftmaxKind, Tile};
use dlsys_shaders::LadderSettings;
use serde::{Deserialize, Serialize};

use crate::kit::race::Race;
use crate::{Env, Lesson};

pub use exercises::EXERCISES;

crate::lesson_text!("gemm_fusion");

/// What the learner set up; survives restarts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The GEMM: C (m × n) = A (m × k) · B (k × n).
    pub m: u32,
    pub n: u32,
    pub k: u32,
    /// The tiled rung's tile edge and the register-blocked rungs' block.
    pub tile: Tile,
    pub block: Block,
    /// The fusion and access kernels' `rows × cols`.
    pub rows: u32,
    pub cols: u32,
    pub trials: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            m: 256,
            n: 256,
            k: 256,
            tile: dlsys_core::kernels::TILE,
            block: dlsys_core::kernels::BLOCK,
            rows: 1024,
            cols: 1024,
            trials: 3,
        }
    }
}

/// The most multiply-adds (M·N·K) a GEMM race of the page takes: its f64
/// reference is computed in the page's thread (about a second at 1024³);
/// `dlsys-lab bench kernels --family gemm` takes any size.
const MAX_PAGE_MACS: u64 = 1 << 30;

/// The three races of the lesson.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Section {
    Gemm,
    Fusion,
    Access,
}

impl Settings {
    /// The ladder of `section`: the copy kernel first (the memory roof);
    /// for the GEMM also the FMA chains (the compute roof) and one
    /// memory-bound softmax and sum, so both kinds share the roofline.
    fn ladder(&self, section: Section) -> LadderSettings {
        let problem = Problem::new(self.rows, self.cols);
        let family = match section {
            Section::Gemm => Family::Gemm,
            Section::Fusion => Family::Fusion,
            Section::Access => Family::Access,
        };
        let mut settings =
            LadderSettings::families(&[family], problem, dlsys_core::kernels::Data::Random, self.trials);
        if section == Section::Gemm {
            settings.gemm_shape = Problem::gemm(self.m, self.n, self.k);
            settings.gemm = GemmKind::ladder(self.tile, self.block).to_vec();
            settings.fma = true;
            settings.softmax = vec![SoftmaxKind::Online];
            settings.reduce = vec![ReduceKind::GridStride];
            settings.ops = vec![dlsys_core::kernels::ReduceOp::Sum];
        }
        settings
    }
}

#[derive(Default)]
pub struct GemmFusion {
    settings: Settings,
    gemm: Race,
    fusion: Race,
    access: Race,
}

impl GemmFusion {
    fn race(&mut self, section: Section) -> &mut Race {
        match section {
            Section::Gemm => &mut self.gemm,
            Section::Fusion => &mut self.fusion,
            Section::Access => &mut self.access,
        }
    }

    fn start(&mut self, section: Section, env: &Env<'_>) {
        let s = &self.settings;
        let macs = u64::from(s.m) * u64::from(s.n) * u64::from(s.k);
        if section == Section::Gemm && macs > MAX_PAGE_MACS {
            // The f64 reference runs in the page's thread, once per race.
            let race = self.race(section);
            race.results.clear();
            race.error = Some(TEXT.fill(
                env.lang,
                "gemm.too_big",
                &[("macs", &macs), ("max", &MAX_PAGE_MACS)],
            ));
            return;
        }
        let settings = self.settings.ladder(section);
        self.race(section).start(&settings, env);
    }

    fn busy(&self) -> bool {
        self.gemm.is_busy() || self.fusion.is_busy() || self.access.is_busy()
    }
}

impl Lesson for GemmFusion {
    crate::lesson_identity!(exercises: EXERCISES);

    fn logic(&mut self, ctx: &egui::Context, _env: &Env<'_>) {
        self.gemm.poll(ctx);
        self.fusion.poll(ctx);
        self.access.poll(ctx);
    }

    fn is_busy(&self) -> bool {
        self.busy()
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        self.page(ui, env);
    }

    crate::persist_field!(settings);

    /// The GEMM race through the same path as its button, cut to what a
    /// software GPU in a browser compiles in seconds: the copy kernel and the
    /// tiled rung on a ragged shape, one trial. (Every rung is held to its
    /// reference by the native tests; compiling all of them took 30 s on
    /// SwiftShader.)
    fn self_test_start(&mut self, env: &Env<'_>) -> bool {
        let quick = Settings {
            m: 67,
            n: 65,
            k: 33,
            rows: 64,
            cols: 256,
            trials: 1,
            ..Settings::default()
        };
        let mut ladder = quick.ladder(Section::Gemm);
        ladder.gemm.retain(|kind| matches!(kind, GemmKind::Tiled(_)));
        ladder.fma = false;
        ladder.softmax.clear();
        ladder.reduce.clear();
        self.gemm.start(&ladder, env);
        true
    }

    fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        self.gemm.self_test_outcome()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsys_core::kernels::{FusionKind, GemmKind};
    use crate::GpuStatus;
    use dlsys_core::text::Lang;
    use dlsys_shaders::Outcome;

    #[test]
    fn the_size_controls_choose_the_rungs_that_race() {
        use dlsys_core::kernels::{Block, Kernel, Tile};
        let s = Settings {
            tile: Tile::T8,
            block: Block::B2,
            ..Settings::default()
        };
        let kernels = s.ladder(Section::Gemm).kernels();
        for kind in [GemmKind::Tiled(Tile::T8), GemmKind::Register(Block::B2), GemmKind::Vec4(Block::B2)] {
            assert!(kernels.contains(&Kernel::Gemm(kind)), "{kind:?}");
        }
        let gemms = kernels.iter().filter(|k| matches!(k, Kernel::Gemm(_))).count();
        assert_eq!(gemms, GemmKind::ALL.len());
    }

    #[test]
    fn every_rung_and_kernel_has_its_explanation_in_the_catalog() {
        for k in GemmKind::ALL {
            assert!(TEXT.contains(&format!("rung.{}", k.rung())), "{k:?}");
        }
        for k in FusionKind::ALL {
            assert!(TEXT.contains(&format!("fusion.{}", k.id())), "{k:?}");
        }
    }

    #[test]
    fn without_a_gpu_every_section_is_timed_on_the_cpu_with_its_bytes() {
        let gpu = GpuStatus::Unavailable {
            reason: crate::NoGpu::NotWgpu,
        };
        let env = Env {
            gpu: &gpu,
            lang: Lang::En,
        };
        let mut lesson = GemmFusion {
            settings: Settings {
            m: 17,
            n: 9,
            k: 5,
            rows: 8,
            cols: 64,
            trials: 1,
            ..Settings::default()
            },
            ..GemmFusion::default()
        };
        for section in [Section::Gemm, Section::Fusion, Section::Access] {
            lesson.start(section, &env);
            let race = lesson.race(section);
            assert!(!race.is_busy());
            assert!(race.error.is_none(), "{:?}", race.error);
            assert!(
                race.results.iter().all(|o| matches!(o, Outcome::Cpu(c) if c.bytes > 0)),
                "{section:?}: {:?}",
                race.results
            );
        }
    }

    #[test]
    fn a_gemm_too_large_for_the_page_is_refused_with_the_cli_named() {
        let gpu = GpuStatus::Unavailable {
            reason: crate::NoGpu::NotWgpu,
        };
        let env = Env {
            gpu: &gpu,
            lang: Lang::En,
        };
        let mut lesson = GemmFusion {
            settings: Settings {
                m: 2048,
                n: 1024,
                k: 1024,
                ..Settings::default()
            },
            ..GemmFusion::default()
        };
        lesson.start(Section::Gemm, &env);
        assert!(lesson.gemm.results.is_empty());
        assert!(lesson.gemm.error.as_ref().is_some_and(|e| e.contains("bench kernels")));
    }

    #[test]
    fn settings_round_trip_and_garbage_is_an_error() {
        let mut lesson = GemmFusion::default();
        lesson.settings.k = 777;
        assert_eq!(crate::reloaded(&lesson, "(m: \"big\")").settings, lesson.settings);
    }
}
