//! The GPU side's typed errors; their words are in `assets/errors.ron`.

use dlsys_core::catalog_error;
use dlsys_core::errors::Localized;
use dlsys_core::kernels::PlanError;
use dlsys_core::text::Lang;

catalog_error! {
    /// Why a WGSL kernel file could not be built.
    pub enum SourceError {
        NoFile { file: String } = "source.no_file",
        Unfilled { file: String, token: String } = "source.unfilled",
        /// naga's diagnostic, with the line and column.
        Invalid { diagnostic: String } = "source.invalid",
    }
}

catalog_error! {
    /// Why a kernel did not run, or did not come back.
    pub enum KernelError {
        /// No usable GPU (the reason is the adapter's own words).
        NoGpu { reason: String } = "kernel.no_gpu",
        NoCompute { adapter: String } = "kernel.no_compute",
        NeedsSubgroups { kernel: String } = "kernel.needs_subgroups",
        WrongLength { given: usize, expected: u64, rows: u32, cols: u32 } = "kernel.wrong_length",
        Plan { reason: PlanError } = "kernel.plan",
        TooLarge { values: u64, mib: String, limit: u64, limit_mib: String } = "kernel.too_large",
        Source { reason: SourceError } = "kernel.source",
        BadEntry { entry: String } = "kernel.bad_entry",
        NoEntryPoint { file: String, entry: String } = "kernel.no_entry_point",
        UnknownBinding { entry: String, binding: u32 } = "kernel.unknown_binding",
        /// The device's validation (or an out-of-memory or internal error).
        Rejected { entry: String, error: String } = "kernel.rejected",
        Readback { error: String } = "kernel.readback",
        Wait { error: String } = "kernel.wait",
        TrialsLost = "kernel.trials_lost",
        Thread { error: String } = "kernel.thread",
        /// The checker's last device was abandoned to a kernel that did not finish.
        DeviceAbandoned = "kernel.device_abandoned",
        DeviceLost = "kernel.device_lost",
        /// The device refused a learner's run (its validation's words).
        RunRejected { error: String } = "kernel.run_rejected",
        /// The learner's kernel overran the race's time budget.
        RaceTimeout { ms: u64, rows: u32, cols: u32 } = "kernel.race_timeout",
        TimingStopped = "kernel.timing_stopped",
        /// A program binds or reads a buffer it does not have.
        NoBuffer { program: String, name: String } = "kernel.no_buffer",
        /// A buffer's elements are not what the WGSL declares.
        BufferType { name: String, given: String, declared: String } = "kernel.buffer_type",
        /// A ladder kernel the race needs could not run here.
        Skipped { kernel: String, why: Box<KernelError> } = "kernel.skipped",
    }
}

impl dlsys_core::errors::Arg for Box<KernelError> {
    fn render(&self, lang: Lang) -> String {
        self.message(lang)
    }
}

impl From<PlanError> for KernelError {
    fn from(reason: PlanError) -> Self {
        Self::Plan { reason }
    }
}

impl From<SourceError> for KernelError {
    fn from(reason: SourceError) -> Self {
        Self::Source { reason }
    }
}

impl From<crate::GpuError> for KernelError {
    fn from(err: crate::GpuError) -> Self {
        Self::NoGpu {
            reason: err.to_string(),
        }
    }
}

/// Errors in JSON: their English message.
pub fn as_text<S: serde::Serializer, E: Localized>(err: &E, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&err.message(Lang::En))
}
