//! `dlsys-lab gpu-info`: the adapter dlsys-lab would use.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_shaders::{Gpu, GpuInfo};

use super::CliError;
use super::output::{Report, emit};

#[derive(Clone, Debug, clap::Args)]
pub struct GpuInfoArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
#[serde(untagged)]
enum GpuInfoReport {
    Available(Available),
    Missing(Missing),
}

#[derive(serde::Serialize)]
struct Available {
    available: bool,
    #[serde(flatten)]
    info: GpuInfo,
}

#[derive(serde::Serialize)]
struct Missing {
    available: bool,
    reason: String,
    /// Where the GPU lessons run instead: `cpu`.
    path: &'static str,
}

pub fn run(args: &GpuInfoArgs) -> Result<ExitCode, CliError> {
    let report = match Gpu::request_blocking() {
        Ok(gpu) => GpuInfoReport::Available(Available {
            available: true,
            info: gpu.info(),
        }),
        Err(err) => GpuInfoReport::Missing(Missing {
            available: false,
            reason: err.to_string(),
            path: "cpu",
        }),
    };
    emit(&report, args.json)
}

impl Report for GpuInfoReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let info = match self {
            Self::Available(Available { info, .. }) => info,
            Self::Missing(Missing { reason, .. }) => {
                writeln!(out, "no GPU: {reason}")?;
                return writeln!(out, "GPU lessons run on the CPU path.");
            }
        };
        writeln!(out, "adapter:      {}", info.adapter)?;
        writeln!(out, "backend:      {}", info.backend)?;
        writeln!(out, "device type:  {}", info.device_type)?;
        writeln!(out, "driver:       {} {}", info.driver, info.driver_info)?;
        writeln!(
            out,
            "compute:      {}",
            if info.compute {
                "yes"
            } else {
                "no (lessons use the CPU path)"
            }
        )?;
        writeln!(out, "timestamp period: {} ns", info.timestamp_period_ns)?;
        writeln!(
            out,
            "subgroup sizes:   {}–{}",
            info.subgroup_min_size, info.subgroup_max_size
        )?;
        writeln!(
            out,
            "limits: {} invocations/workgroup, {} B workgroup storage, {} B storage binding",
            info.max_compute_invocations_per_workgroup,
            info.max_compute_workgroup_storage_bytes,
            info.max_storage_buffer_binding_bytes
        )?;
        writeln!(out, "optional features:")?;
        for (name, enabled) in info.feature_flags() {
            writeln!(
                out,
                "  {name:<32} {}",
                if enabled { "enabled" } else { "not offered" }
            )?;
        }
        Ok(())
    }
}
