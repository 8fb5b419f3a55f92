//! How the app (and the tests, which must run what the app runs) get their
//! wgpu device: eframe's setup with dlsys-lab's device descriptor, which asks
//! for timestamps, subgroups and f16 whenever the adapter offers them.

use std::sync::Arc;

use dlsys_lessons::{GpuStatus, NoGpu};
use dlsys_shaders::Gpu;

/// eframe's wgpu setup, with our device descriptor.
pub fn wgpu_setup() -> eframe::egui_wgpu::WgpuSetup {
    let mut create_new = eframe::egui_wgpu::WgpuSetupCreateNew::without_display_handle();
    create_new.device_descriptor = Arc::new(dlsys_shaders::gpu::device_descriptor);
    eframe::egui_wgpu::WgpuSetup::CreateNew(create_new)
}

/// The whole wgpu configuration for [`eframe::NativeOptions::wgpu_options`].
pub fn wgpu_configuration() -> eframe::egui_wgpu::WgpuConfiguration {
    eframe::egui_wgpu::WgpuConfiguration {
        wgpu_setup: wgpu_setup(),
        ..Default::default()
    }
}

/// What the GPU can do for lessons, decided once from eframe's render state.
pub fn gpu_status(render_state: Option<&eframe::egui_wgpu::RenderState>) -> GpuStatus {
    let Some(render_state) = render_state else {
        return GpuStatus::Unavailable {
            reason: NoGpu::NotWgpu,
        };
    };
    let gpu = Gpu::from_parts(
        &render_state.adapter,
        render_state.device.clone(),
        render_state.queue.clone(),
    );
    if let Some(refusal) = gpu.compute_refusal() {
        GpuStatus::RenderOnly {
            info: gpu.info(),
            reason: NoGpu::Gpu(refusal),
        }
    } else if gpu.supports_compute() {
        GpuStatus::Compute(Box::new(gpu))
    } else {
        GpuStatus::RenderOnly {
            info: gpu.info(),
            reason: NoGpu::Kernel(dlsys_shaders::KernelError::NoCompute {
                adapter: format!("{} ({})", gpu.adapter_info.name, gpu.adapter_info.backend),
            }),
        }
    }
}
