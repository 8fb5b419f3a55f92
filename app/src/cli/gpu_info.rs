//! `dlsys-lab gpu-info`: the adapter dlsys-lab would use.

use std::io::{self, Write};
use std::process::ExitCode;

use dlsys_shaders::{Gpu, GpuInfo};

use super::CliError;
use super::lang::pad;
use super::output::{Report, emit, line};
use super::t;

#[derive(Clone, Debug, clap::Args)]
pub struct GpuInfoArgs {
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
            reason: super::say(&err),
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
                line(out, "gpu.none", &[("reason", reason)])?;
                return writeln!(out, "{}", t("gpu.cpu_path"));
            }
        };
        let label = |key| pad(&format!("{}:", t(key)), 17);
        writeln!(out, "{} {}", label("gpu.adapter"), info.adapter)?;
        writeln!(out, "{} {}", label("gpu.backend"), info.backend)?;
        writeln!(out, "{} {}", label("gpu.device_type"), info.device_type)?;
        let driver = label("gpu.driver");
        writeln!(out, "{driver} {} {}", info.driver, info.driver_info)?;
        let compute = t(if info.compute {
            "gpu.yes"
        } else {
            "gpu.no_compute"
        });
        writeln!(out, "{} {compute}", label("gpu.compute"))?;
        let period = info.timestamp_period_ns;
        writeln!(out, "{} {period} ns", label("gpu.timestamp"))?;
        writeln!(
            out,
            "{} {}–{}",
            label("gpu.subgroups"),
            info.subgroup_min_size,
            info.subgroup_max_size
        )?;
        line(
            out,
            "gpu.limits",
            &[
                ("invocations", &info.max_compute_invocations_per_workgroup),
                ("shared", &info.max_compute_workgroup_storage_bytes),
                ("binding", &info.max_storage_buffer_binding_bytes),
            ],
        )?;
        writeln!(out, "{}", t("gpu.features"))?;
        for (name, enabled) in info.feature_flags() {
            let state = t(if enabled {
                "gpu.enabled"
            } else {
                "gpu.not_offered"
            });
            writeln!(out, "  {name:<32} {state}")?;
        }
        Ok(())
    }
}
