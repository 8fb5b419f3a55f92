//! What the GPU can do for lessons, decided once at start-up, and how it is
//! said to learners.

use dlsys_core::text::Lang;
use dlsys_shaders::{Gpu, GpuInfo};

/// What the GPU can do for lessons, decided once at start-up.
#[derive(Clone, Debug)]
pub enum GpuStatus {
    /// A device that runs compute shaders.
    Compute(Box<Gpu>),
    /// A device that renders the UI but cannot run compute (WebGL2, old GL).
    RenderOnly { info: GpuInfo, reason: NoGpu },
    /// No wgpu device at all (or the app runs with another renderer).
    Unavailable { reason: NoGpu },
}

/// Why the GPU lessons take the CPU path, in either language.
#[derive(Clone, Debug, PartialEq)]
pub enum NoGpu {
    /// The GPU layer refused (e.g. native OpenGL, declined for compute).
    Gpu(dlsys_shaders::GpuError),
    /// The adapter cannot run compute shaders (WebGL2).
    Kernel(dlsys_shaders::KernelError),
    /// The app renders without wgpu, so there is no device to share.
    NotWgpu,
}

impl NoGpu {
    pub fn message(&self, lang: Lang) -> String {
        use dlsys_core::errors::Localized as _;
        match self {
            Self::Gpu(err) => err.message(lang),
            Self::Kernel(err) => err.message(lang),
            Self::NotWgpu => super::text().get(lang, "app.not_wgpu").to_owned(),
        }
    }
}

impl GpuStatus {
    /// The device to run kernels on, if any.
    pub fn compute(&self) -> Option<&Gpu> {
        match self {
            Self::Compute(gpu) => Some(gpu),
            Self::RenderOnly { .. } | Self::Unavailable { .. } => None,
        }
    }

    pub fn info(&self) -> Option<GpuInfo> {
        match self {
            Self::Compute(gpu) => Some(gpu.info()),
            Self::RenderOnly { info, .. } => Some(info.clone()),
            Self::Unavailable { .. } => None,
        }
    }

    /// One line for learners: which path GPU lessons take and why.
    pub fn summary(&self, lang: Lang) -> String {
        let text = super::text();
        match self {
            Self::Compute(gpu) => {
                let info = gpu.info();
                text.fill(
                    lang,
                    "app.gpu_summary",
                    &[
                        ("adapter", &adapter_label(&info, lang)),
                        ("backend", &info.backend),
                    ],
                )
            }
            Self::RenderOnly { reason, .. } | Self::Unavailable { reason } => text.fill(
                lang,
                "app.cpu_summary",
                &[("reason", &reason.message(lang))],
            ),
        }
    }
}

/// The adapter's name for learners. Browsers hide it (WebGPU reports an
/// empty name), so then it says whose adapter it is and what it does report.
pub fn adapter_label(info: &GpuInfo, lang: Lang) -> String {
    if info.adapter.trim().is_empty() {
        super::text().fill(lang, "app.browser_adapter", &[("kind", &info.device_type)])
    } else {
        info.adapter.clone()
    }
}
