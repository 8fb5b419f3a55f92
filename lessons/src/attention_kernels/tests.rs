#![allow(clippy::unwrap_used)]

use super::*;
use crate::GpuStatus;
use dlsys_core::text::Lang;
use dlsys_shaders::Outcome;

fn no_gpu() -> GpuStatus {
    GpuStatus::Unavailable {
        reason: crate::NoGpu::NotWgpu,
    }
}

/// Without a compute GPU the race times the built-in kernels on the CPU
/// and makes no programs; the page says why.
#[test]
fn without_a_gpu_the_race_times_the_roofs_on_the_cpu() {
    let gpu = no_gpu();
    let env = Env { gpu: &gpu, lang: Lang::En };
    let mut lesson = AttentionKernels::default();
    lesson.settings.trials = 1;
    lesson.start(&env);
    assert!(!lesson.building.is_running());
    assert!(lesson.race.results.iter().all(|o| matches!(o, Outcome::Cpu(_))));
    assert!(!lesson.race.results.is_empty());
}

#[test]
fn a_bad_size_is_refused_with_the_reason() {
    let gpu = no_gpu();
    let env = Env { gpu: &gpu, lang: Lang::Zh };
    let mut lesson = AttentionKernels::default();
    lesson.settings.seq = dlsys_core::kernels::attention::MAX_SEQ + 1;
    lesson.start(&env);
    let e = lesson.error.clone().unwrap();
    assert!(e.contains("4096"), "{e}");
}

#[test]
fn the_programs_for_the_settings_are_every_rung_the_mask_allows() {
    let s = Settings { seq: 48, head_dim: 32, ..Settings::default() };
    let built = build(s.shape(48).unwrap(), s.tiles(), dlsys_core::kernels::attention::AttnLimits::WEBGPU).unwrap();
    assert_eq!(built.1.len(), 4);
    assert!(built.1.iter().all(|(_, p)| p.is_ok()));
    let plain = Settings { causal: false, ..s };
    let built = build(plain.shape(48).unwrap(), plain.tiles(), dlsys_core::kernels::attention::AttnLimits::WEBGPU).unwrap();
    assert_eq!(built.1.len(), 3);
}
