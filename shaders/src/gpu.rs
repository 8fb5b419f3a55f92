//! Adapter and device setup, and what the app tells learners about their GPU.

use serde::Serialize;

/// The optional features lessons use when the adapter offers them:
/// timestamps to time kernels, subgroups for the subgroup ladders, f16 math.
pub fn wanted_features() -> wgpu::Features {
    wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
        | wgpu::Features::SUBGROUP
        | wgpu::Features::SHADER_F16
}

/// The device every part of dlsys-lab asks for: the wanted features the
/// adapter offers, and the adapter's own limits (so lessons can show and use
/// the real ones). GL adapters get downlevel limits, because a GL context
/// cannot promise more.
pub fn device_descriptor(adapter: &wgpu::Adapter) -> wgpu::DeviceDescriptor<'static> {
    let info = adapter.get_info();
    let adapter_limits = adapter.limits();
    let required_limits = if info.backend == wgpu::Backend::Gl {
        let base = if cfg!(target_arch = "wasm32") {
            wgpu::Limits::downlevel_webgl2_defaults()
        } else {
            wgpu::Limits::downlevel_defaults()
        };
        base.using_resolution(adapter_limits.clone())
    } else {
        adapter_limits
    };
    wgpu::DeviceDescriptor {
        label: Some("dlsys-lab device"),
        required_features: adapter.features() & wanted_features(),
        required_limits,
        ..Default::default()
    }
}

dlsys_core::catalog_error! {
    /// Why no GPU could be used.
    pub enum GpuError {
        NoAdapter { why: String } = "gpu.no_adapter",
        /// Natively only OpenGL was found: its compute path is slow and can
        /// crash inside wgpu, so kernels take the CPU path instead.
        OnlyGl { adapter: String } = "gpu.only_gl",
        NoDevice { why: String } = "gpu.no_device",
    }
}

/// A device and queue, shared by the lessons' kernels.
/// Cloning is cheap: wgpu handles are reference-counted.
#[derive(Clone, Debug)]
pub struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub adapter_info: wgpu::AdapterInfo,
    pub downlevel: wgpu::DownlevelCapabilities,
}

impl Gpu {
    /// Wraps a device made elsewhere (eframe's, in the app).
    pub fn from_parts(adapter: &wgpu::Adapter, device: wgpu::Device, queue: wgpu::Queue) -> Self {
        Self {
            device,
            queue,
            adapter_info: adapter.get_info(),
            downlevel: adapter.get_downlevel_capabilities(),
        }
    }

    /// Finds an adapter and creates the device dlsys-lab wants.
    /// `WGPU_BACKEND` (e.g. `vulkan`, `gl`) and `WGPU_ADAPTER_NAME` select one.
    ///
    /// Natively an OpenGL adapter is refused ([`GpuError::OnlyGl`]) unless
    /// `WGPU_BACKEND` asks for it: wgpu's GL path ran a small kernel bench
    /// 500× slower than Vulkan here, and its device can panic.
    pub async fn request() -> Result<Self, GpuError> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        let chosen = wgpu::Backends::from_env().is_some();
        if !chosen {
            desc.backends = wgpu::Backends::PRIMARY | wgpu::Backends::GL;
        }
        let instance = wgpu::util::new_instance_with_webgpu_detection(desc).await;
        let adapter = pick_adapter(&instance).await?;
        let info = adapter.get_info();
        if !chosen && is_native_gl(&info) {
            return Err(GpuError::OnlyGl { adapter: info.name });
        }
        let (device, queue) = adapter
            .request_device(&device_descriptor(&adapter))
            .await
            .map_err(|err| GpuError::NoDevice {
                why: err.to_string(),
            })?;
        Ok(Self::from_parts(&adapter, device, queue))
    }

    /// Why kernels should not run on this device even though it exists: an
    /// OpenGL adapter natively (see [`Self::request`]).
    pub fn compute_refusal(&self) -> Option<GpuError> {
        let chosen = cfg!(not(target_arch = "wasm32")) && wgpu::Backends::from_env().is_some();
        (is_native_gl(&self.adapter_info) && !chosen).then(|| GpuError::OnlyGl {
            adapter: self.adapter_info.name.clone(),
        })
    }

    /// [`Self::request`], blocking (native only: the web has no blocking wait).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn request_blocking() -> Result<Self, GpuError> {
        pollster::block_on(Self::request())
    }

    pub fn features(&self) -> wgpu::Features {
        self.device.features()
    }

    pub fn limits(&self) -> wgpu::Limits {
        self.device.limits()
    }

    /// Whether compute shaders run here (WebGL2 cannot run them).
    pub fn supports_compute(&self) -> bool {
        self.downlevel
            .flags
            .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
            && self.limits().max_compute_invocations_per_workgroup > 0
    }

    pub fn info(&self) -> GpuInfo {
        GpuInfo::new(
            &self.adapter_info,
            self.features(),
            &self.limits(),
            self.supports_compute(),
            self.queue.get_timestamp_period(),
        )
    }
}

/// An OpenGL adapter outside the browser (in the browser, GL is WebGL2).
fn is_native_gl(info: &wgpu::AdapterInfo) -> bool {
    cfg!(not(target_arch = "wasm32")) && info.backend == wgpu::Backend::Gl
}

/// The adapter named by `WGPU_ADAPTER_NAME` (a substring, any case), else
/// the one wgpu prefers for high performance.
async fn pick_adapter(instance: &wgpu::Instance) -> Result<wgpu::Adapter, GpuError> {
    #[cfg(not(target_arch = "wasm32"))]
    if let Some(wanted) = std::env::var("WGPU_ADAPTER_NAME")
        .ok()
        .filter(|s| !s.is_empty())
    {
        let wanted = wanted.to_lowercase();
        let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        return adapters
            .into_iter()
            .find(|a| a.get_info().name.to_lowercase().contains(&wanted))
            .ok_or_else(|| GpuError::NoAdapter {
                why: format!("WGPU_ADAPTER_NAME={wanted} matches none of {names:?}"),
            });
    }
    instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::from_env()
                .unwrap_or(wgpu::PowerPreference::HighPerformance),
            ..Default::default()
        })
        .await
        .map_err(|err| GpuError::NoAdapter {
            why: err.to_string(),
        })
}

/// What "About this GPU" and `dlsys-lab gpu-info` report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuInfo {
    pub adapter: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub driver_info: String,
    pub compute: bool,
    pub timestamp_query: bool,
    pub timestamp_query_inside_encoders: bool,
    pub timestamp_query_inside_passes: bool,
    pub subgroup: bool,
    pub shader_f16: bool,
    pub subgroup_min_size: u32,
    pub subgroup_max_size: u32,
    pub timestamp_period_ns: f32,
    pub max_compute_invocations_per_workgroup: u32,
    pub max_compute_workgroup_storage_bytes: u32,
    pub max_storage_buffer_binding_bytes: u64,
    pub max_buffer_bytes: u64,
}

impl GpuInfo {
    pub fn new(
        info: &wgpu::AdapterInfo,
        features: wgpu::Features,
        limits: &wgpu::Limits,
        compute: bool,
        timestamp_period_ns: f32,
    ) -> Self {
        Self {
            adapter: info.name.clone(),
            backend: info.backend.to_string(),
            device_type: format!("{:?}", info.device_type),
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
            compute,
            timestamp_query: features.contains(wgpu::Features::TIMESTAMP_QUERY),
            timestamp_query_inside_encoders: features
                .contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS),
            timestamp_query_inside_passes: features
                .contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES),
            subgroup: features.contains(wgpu::Features::SUBGROUP),
            shader_f16: features.contains(wgpu::Features::SHADER_F16),
            subgroup_min_size: info.subgroup_min_size,
            subgroup_max_size: info.subgroup_max_size,
            timestamp_period_ns,
            max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
            max_compute_workgroup_storage_bytes: limits.max_compute_workgroup_storage_size,
            max_storage_buffer_binding_bytes: limits.max_storage_buffer_binding_size,
            max_buffer_bytes: limits.max_buffer_size,
        }
    }

    /// The named optional features and whether each is enabled, in a fixed order.
    pub fn feature_flags(&self) -> [(&'static str, bool); 5] {
        [
            ("TIMESTAMP_QUERY", self.timestamp_query),
            (
                "TIMESTAMP_QUERY_INSIDE_ENCODERS",
                self.timestamp_query_inside_encoders,
            ),
            (
                "TIMESTAMP_QUERY_INSIDE_PASSES",
                self.timestamp_query_inside_passes,
            ),
            ("SUBGROUP", self.subgroup),
            ("SHADER_F16", self.shader_f16),
        ]
    }
}
