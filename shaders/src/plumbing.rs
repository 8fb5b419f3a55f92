//! GPU plumbing shared by the kernel runner ([`crate::run`]) and the
//! learner-kernel checker ([`crate::kernel_track`]): error scopes popped at
//! once in LIFO order (on the web too), readback buffers mapped through a
//! channel, the choice of timer, and timestamp ticks turned into nanoseconds.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::{Gpu, KernelError};

/// The clock that really timed a run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum TimerKind {
    /// GPU timestamps at the beginning and end of every pass (one pass per dispatch).
    Timestamps { period_ns: f32 },
    /// Each trial submitted alone and waited for, on the CPU clock (adapters
    /// that are the CPU, whose timestamps proved unreliable; and the web
    /// without timestamps).
    WallPerTrial,
}

impl TimerKind {
    /// How runs are timed, in `lang`, short (for a table's header).
    pub fn short_name(self, lang: dlsys_core::text::Lang) -> String {
        use dlsys_core::names::Named as _;
        let key = format!("{}_short", self.name_key());
        dlsys_core::names::catalog().fill(lang, &key, &[("tick", &self.tick_ns())])
    }

    fn tick_ns(self) -> f32 {
        match self {
            Self::Timestamps { period_ns } => period_ns,
            Self::WallPerTrial => 0.0,
        }
    }
}

/// How runs are timed, in full (`timer.*` in `assets/names.ron`).
impl dlsys_core::names::Named for TimerKind {
    fn name_key(&self) -> String {
        match self {
            Self::Timestamps { .. } => "timer.timestamps",
            Self::WallPerTrial => "timer.cpu",
        }
        .to_owned()
    }

    fn name(&self, lang: dlsys_core::text::Lang) -> String {
        dlsys_core::names::catalog().fill(lang, &self.name_key(), &[("tick", &self.tick_ns())])
    }
}

impl TimerKind {
    /// The timer runs on `gpu` use: timestamps on a real GPU that has them,
    /// else the CPU clock around each trial.
    pub fn for_gpu(gpu: &Gpu) -> Self {
        let is_cpu = gpu.adapter_info.device_type == wgpu::DeviceType::Cpu;
        if gpu.features().contains(wgpu::Features::TIMESTAMP_QUERY) && !is_cpu {
            Self::Timestamps {
                period_ns: gpu.queue.get_timestamp_period(),
            }
        } else {
            Self::WallPerTrial
        }
    }

    /// A short name for headers: `GPU timestamps, tick 1 ns` or `CPU clock per trial`.
    pub fn short(&self) -> String {
        match self {
            Self::Timestamps { period_ns } => format!("GPU timestamps, tick {period_ns} ns"),
            Self::WallPerTrial => "CPU clock per trial".to_owned(),
        }
    }
}

/// Nanoseconds between two timestamp ticks.
pub fn ticks_to_ns(begin: u64, end: u64, period_ns: f32) -> f64 {
    end.saturating_sub(begin) as f64 * f64::from(period_ns)
}

/// The median of the finite values (NaN when there are none).
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// What an error scope caught, once known: at once on native, later on the
/// web (the browser answers asynchronously). `None` inside: not known yet.
#[derive(Clone, Debug, Default)]
pub struct Pending(Arc<Mutex<Option<Option<String>>>>);

impl Pending {
    /// A result known now.
    pub fn known(error: Option<String>) -> Self {
        Self(Arc::new(Mutex::new(Some(error))))
    }

    /// `None` while unknown; `Some(None)` when nothing went wrong.
    pub fn get(&self) -> Option<Option<String>> {
        self.0.lock().ok().and_then(|g| g.clone())
    }
}

/// Validation, out-of-memory and internal errors are all caught, so none
/// reaches wgpu's default handler (which panics).
const FILTERS: [wgpu::ErrorFilter; 3] = [
    wgpu::ErrorFilter::Validation,
    wgpu::ErrorFilter::OutOfMemory,
    wgpu::ErrorFilter::Internal,
];

thread_local! {
    /// Scopes pushed and not yet popped on this thread (error scopes are a
    /// per-device stack: popping out of order crashes the browser's backend).
    static OPEN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Error scopes around some device calls; pop them with [`Scopes::pop`]
/// before pushing the next ones.
#[must_use = "pop the scopes before creating anything else"]
pub struct Scopes {
    guards: Vec<wgpu::ErrorScopeGuard>,
    depth: usize,
}

impl Scopes {
    /// Pushes a validation, an out-of-memory and an internal-error scope.
    pub fn push(device: &wgpu::Device) -> Self {
        let depth = OPEN.with(|open| {
            let depth = open.get();
            open.set(depth + 1);
            depth
        });
        Self {
            guards: FILTERS
                .iter()
                .map(|f| device.push_error_scope(*f))
                .collect(),
            depth,
        }
    }

    /// Pops the scopes right away (innermost first); the first error caught
    /// is the answer. Scopes must be popped in the reverse order of pushing,
    /// which holds as long as each `push` is popped before the next one.
    pub fn pop(self) -> Pending {
        let open = OPEN.with(|open| {
            let now = open.get();
            open.set(now.saturating_sub(1));
            now
        });
        debug_assert_eq!(open, self.depth + 1, "error scopes popped out of order");
        let futures: Vec<_> = self.guards.into_iter().rev().map(|g| g.pop()).collect();
        #[cfg(not(target_arch = "wasm32"))]
        {
            let first = futures
                .into_iter()
                .filter_map(pollster::block_on)
                .map(|e| e.to_string())
                .next();
            Pending::known(first)
        }
        #[cfg(target_arch = "wasm32")]
        {
            let pending = Pending::default();
            let cell = pending.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let mut first = None;
                for future in futures {
                    if let Some(err) = future.await {
                        first.get_or_insert(err.to_string());
                    }
                }
                if let Ok(mut slot) = cell.0.lock() {
                    *slot = Some(first);
                }
            });
            pending
        }
    }
}

/// A buffer the GPU copies into and the CPU maps to read.
pub fn readback_buffer(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(4),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// Asks for `buffer` to be mapped; the result arrives on the returned channel
/// (the callback runs when the device is polled on native, by the browser on the web).
pub fn map_read(buffer: &wgpu::Buffer) -> mpsc::Receiver<Result<(), wgpu::BufferAsyncError>> {
    let (sender, receiver) = mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, .., move |result| {
        // The receiver may be gone (the learner moved on); nothing to do then.
        let _ = sender.send(result);
    });
    receiver
}

/// Copies a mapped buffer out as plain values and unmaps it.
pub fn read_mapped<T: bytemuck::Pod>(buffer: &wgpu::Buffer) -> Result<Vec<T>, KernelError> {
    let view = buffer
        .get_mapped_range(..)
        .map_err(|e| KernelError::Readback {
            error: e.to_string(),
        })?;
    let values = bytemuck::cast_slice::<u8, T>(&view).to_vec();
    drop(view);
    buffer.unmap();
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_ignores_non_finite_values() {
        assert_eq!(median(&[3.0, f64::NAN, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn ticks_saturate_and_scale() {
        assert_eq!(ticks_to_ns(10, 30, 1.5), 30.0);
        assert_eq!(ticks_to_ns(30, 10, 1.0), 0.0);
    }
}
