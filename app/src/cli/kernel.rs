//! `dlsys-lab kernel softmax|reduce`: one GPU kernel on your own data.

use std::process::ExitCode;

use clap::Subcommand;
use dlsys_core::kernels::{Kernel, Problem, ReduceKind, ReduceOp, SoftmaxKind};
use dlsys_shaders::Gpu;

use super::CliError;
use super::choice::choice;

/// The reduction ops (the core has no list of them yet).
pub(super) const REDUCE_OPS: [ReduceOp; 2] = [ReduceOp::Sum, ReduceOp::Max];

#[derive(Clone, Debug, Subcommand)]
pub enum KernelCommand {
    /// Row-wise softmax of stdin (rows of `--cols` f32), written to stdout the same way.
    Softmax {
        /// The softmax variant.
        #[arg(
            long,
            default_value = SoftmaxKind::Online.id(),
            value_parser = choice(&SoftmaxKind::ALL, |k| k.id()),
        )]
        variant: SoftmaxKind,
        #[arg(long)]
        cols: u32,
    },
    /// Reduce the f32 values on stdin; prints the result.
    Reduce {
        /// The reduction variant.
        #[arg(
            long,
            default_value = ReduceKind::GridStride.id(),
            value_parser = choice(&ReduceKind::ALL, |k| k.id()),
        )]
        variant: ReduceKind,
        #[arg(
            long,
            default_value = ReduceOp::Sum.id(),
            value_parser = choice(&REDUCE_OPS, |op| op.id()),
        )]
        op: ReduceOp,
    },
}

pub(super) fn kernel_runner() -> Result<dlsys_shaders::KernelRunner, String> {
    let gpu = Gpu::request_blocking().map_err(|err| err.to_string())?;
    if !gpu.supports_compute() {
        return Err(format!(
            "{} cannot run compute shaders",
            gpu.adapter_info.name
        ));
    }
    Ok(dlsys_shaders::KernelRunner::new(gpu))
}

fn read_stdin_f32() -> Result<Vec<f32>, String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|err| format!("reading stdin: {err}"))?;
    if bytes.len() % 4 != 0 {
        return Err(format!(
            "stdin has {} bytes, not a whole number of f32 values",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// Runs the kernel once. Its output is the data itself (softmax: f32 on
/// stdout; reduce: the number), so there is no report and no `--json`.
pub fn run(which: &KernelCommand) -> Result<ExitCode, CliError> {
    let (kernel, problem, input) = match *which {
        KernelCommand::Softmax { variant, cols } => {
            if cols == 0 {
                return Err(CliError::from("--cols must be at least 1".to_owned()));
            }
            let input = read_stdin_f32()?;
            if input.is_empty() || input.len() % cols as usize != 0 {
                return Err(CliError::from(format!(
                    "{} values on stdin are not whole rows of {cols}",
                    input.len()
                )));
            }
            let rows = (input.len() / cols as usize) as u32;
            (Kernel::Softmax(variant), Problem { rows, cols }, input)
        }
        KernelCommand::Reduce { variant, op } => {
            let input = read_stdin_f32()?;
            if input.is_empty() {
                return Err(CliError::from("no values on stdin".to_owned()));
            }
            let n =
                u32::try_from(input.len()).map_err(|_| "too many values on stdin".to_owned())?;
            (
                Kernel::Reduce(variant, op),
                Problem { rows: 1, cols: n },
                input,
            )
        }
    };
    let mut runner = kernel_runner()?;
    let spec = dlsys_shaders::RunSpec {
        kernel,
        problem,
        warmup: 0,
        trials: 1,
        instrumented: false,
    };
    let out = runner
        .start(spec, &input)
        .and_then(dlsys_shaders::Job::wait)
        .map_err(|err| err.to_string())?;
    match which {
        KernelCommand::Softmax { .. } => {
            use std::io::Write as _;
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(bytemuck::cast_slice(&out.output))
                .and_then(|()| stdout.flush())
                .map_err(|err| format!("writing stdout: {err}"))?;
        }
        KernelCommand::Reduce { .. } => {
            println!("{}", out.output.first().copied().unwrap_or(f32::NAN));
        }
    }
    Ok(ExitCode::SUCCESS)
}
