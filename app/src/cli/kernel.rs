//! `dlsys-lab kernel softmax|reduce|matmul|attention`: one GPU kernel on your
//! own data (attention's in `kernel_attention.rs`).

use std::process::ExitCode;

use clap::Subcommand;
use dlsys_core::kernels::{GemmKind, Kernel, Problem, ReduceKind, ReduceOp, SoftmaxKind};
use dlsys_core::quant::gemm::{GemmShape, Int8Kernel};
use dlsys_shaders::Gpu;

use super::CliError;
use super::choice::choice;
use super::{t, tf};

/// The figures `kernel --help` names.
pub(super) fn help_values() -> Vec<(&'static str, String)> {
    vec![("wg", dlsys_core::kernels::WG.to_string())]
}

/// Past this many rows, a softmax that runs a workgroup per row is first
/// timed on [`SAMPLE_ROWS`] of them, and refused when the whole would take
/// longer than [`MAX_SECONDS`] (a CPU adapter spends tens of µs per workgroup).
const MANY_ROWS: u32 = 65_536;
const SAMPLE_ROWS: u32 = 4096;
const MAX_SECONDS: f64 = 60.0;

/// The reduction ops (the core has no list of them yet).
pub(super) const REDUCE_OPS: [ReduceOp; 2] = [ReduceOp::Sum, ReduceOp::Max];

#[derive(Clone, Debug, Subcommand)]
pub enum KernelCommand {
    Softmax {
        #[arg(long, value_parser = choice(&SoftmaxKind::ALL, |k| k.id()))]
        variant: Option<SoftmaxKind>,
        #[arg(long)]
        cols: u32,
    },
    Reduce {
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
    Matmul {
        #[arg(long)]
        m: u32,
        #[arg(long)]
        n: u32,
        #[arg(long)]
        k: u32,
        #[arg(
            long,
            default_value = GemmKind::Vec4(dlsys_core::kernels::BLOCK).id(),
            value_parser = choice(&GemmKind::EVERY, |k| k.id()),
        )]
        variant: GemmKind,
        #[arg(long, default_value = Dtype::F32.id(), value_parser = choice(&Dtype::ALL, |d| d.id()))]
        dtype: Dtype,
        #[arg(
            long,
            default_value = Int8Kernel::Dot4.short_id(),
            value_parser = choice(&Int8Kernel::ALL, |k| k.short_id()),
        )]
        int8_kernel: Int8Kernel,
    },
    Attention(super::kernel_attention::AttnKernelArgs),
}

/// The element type of `kernel matmul`'s operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    F32,
    /// Signed bytes in, the int32 accumulators out.
    Int8,
}

impl Dtype {
    pub const ALL: [Self; 2] = [Self::F32, Self::Int8];

    pub const fn id(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::Int8 => "int8",
        }
    }
}

pub(super) fn kernel_runner() -> Result<dlsys_shaders::KernelRunner, String> {
    let gpu = Gpu::request_blocking().map_err(|e| super::say(&e))?;
    if !gpu.supports_compute() {
        return Err(super::say(&dlsys_shaders::KernelError::NoCompute {
            adapter: gpu.adapter_info.name.clone(),
        }));
    }
    Ok(dlsys_shaders::KernelRunner::new(gpu))
}

/// Reads stdin's bytes, refusing more than `max_values` of `width` bytes
/// each before holding more than that in memory.
fn read_stdin(max_values: u64, width: u64) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(max_values.saturating_mul(width).saturating_add(width))
        .read_to_end(&mut bytes)
        .map_err(|err| tf("io.stdin", &[("error", &err)]))?;
    if bytes.len() as u64 > max_values.saturating_mul(width) {
        return Err(tf("kernel.too_many", &[("max", &max_values)]));
    }
    Ok(bytes)
}

/// Reads stdin as little-endian f32 (see [`read_stdin`]).
pub(super) fn read_stdin_f32(max_values: u64) -> Result<Vec<f32>, String> {
    let bytes = read_stdin(max_values, 4)?;
    if bytes.len() % 4 != 0 {
        return Err(tf("kernel.partial", &[("bytes", &bytes.len())]));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// Times `variant` on the first [`SAMPLE_ROWS`] rows and refuses the run
/// when all `rows` would take longer than [`MAX_SECONDS`], saying how long
/// and what runs many rows per workgroup instead.
fn refuse_slow(
    runner: &mut dlsys_shaders::KernelRunner,
    variant: SoftmaxKind,
    rows: u32,
    cols: u32,
    input: &[f32],
    subgroups: bool,
) -> Result<(), CliError> {
    let kernel = Kernel::Softmax(variant);
    let spec = dlsys_shaders::RunSpec {
        kernel,
        problem: Problem::new(SAMPLE_ROWS, cols),
        warmup: 1,
        trials: 1,
        instrumented: false,
    };
    let sample = &input[..(SAMPLE_ROWS as usize) * (cols as usize)];
    let timed = runner
        .start(spec, sample)
        .and_then(dlsys_shaders::Job::wait)
        .map_err(|e| super::say(&e))?;
    let sample_s = timed.median_ns() * 1e-9;
    let estimate_s = sample_s * f64::from(rows) / f64::from(SAMPLE_ROWS);
    if estimate_s <= MAX_SECONDS {
        return Ok(());
    }
    let instead = if subgroups {
        let per = runner.device().rows_per_workgroup();
        tf(
            "kernel.slow_instead",
            &[("variant", &SoftmaxKind::SubgroupRows.id()), ("per", &per)],
        )
    } else {
        t("kernel.slow_split").to_owned()
    };
    let show = dlsys_core::memory::show_seconds;
    Err(CliError::from(tf(
        "kernel.too_slow",
        &[
            ("variant", &variant.id()),
            ("rows", &rows),
            ("cols", &cols),
            ("estimate", &show(estimate_s)),
            ("sample", &SAMPLE_ROWS),
            ("sample_time", &show(sample_s)),
            ("limit", &show(MAX_SECONDS)),
            ("instead", &instead),
        ],
    )))
}

/// Runs the kernel once. Its output is the data itself (softmax: f32 on
/// stdout; reduce: the number), so there is no report and no `--json`.
pub fn run(which: &KernelCommand) -> Result<ExitCode, CliError> {
    if let KernelCommand::Attention(args) = which {
        return super::kernel_attention::run(args);
    }
    if let KernelCommand::Softmax { cols: 0, .. } = which {
        return Err(CliError::from(t("kernel.cols")));
    }
    if let KernelCommand::Matmul { m, n, k, .. } = *which
        && (m == 0 || n == 0 || k == 0)
    {
        return Err(CliError::from(t("kernel.matmul_empty")));
    }
    if let KernelCommand::Matmul {
        m,
        n,
        k,
        dtype: Dtype::Int8,
        int8_kernel,
        ..
    } = *which
    {
        return run_int8(m, n, k, int8_kernel);
    }
    // The device first: its buffers bound how much of stdin is read.
    let mut runner = kernel_runner()?;
    let max_values = runner.max_elements();
    let (kernel, problem, input) = match *which {
        KernelCommand::Softmax { variant, cols } => {
            let input = read_stdin_f32(max_values)?;
            if input.is_empty() || input.len() % cols as usize != 0 {
                return Err(CliError::from(tf(
                    "kernel.rows",
                    &[("count", &input.len()), ("cols", &cols)],
                )));
            }
            let rows = u32::try_from(input.len() / cols as usize)
                .map_err(|_| t("kernel.too_many_rows"))?;
            let subgroups = runner
                .supports(Kernel::Softmax(SoftmaxKind::SubgroupRows))
                .is_ok();
            let variant = variant.unwrap_or(SoftmaxKind::for_width(cols, subgroups));
            if variant.workgroup_per_row() && rows > MANY_ROWS {
                refuse_slow(&mut runner, variant, rows, cols, &input, subgroups)?;
            }
            (Kernel::Softmax(variant), Problem::new(rows, cols), input)
        }
        KernelCommand::Reduce { variant, op } => {
            let input = read_stdin_f32(max_values)?;
            if input.is_empty() {
                return Err(CliError::from(t("kernel.empty")));
            }
            let n = u32::try_from(input.len()).map_err(|_| t("kernel.too_many_rows"))?;
            (Kernel::Reduce(variant, op), Problem::new(1, n), input)
        }
        KernelCommand::Matmul {
            m, n, k, variant, ..
        } => {
            let problem = Problem::gemm(m, n, k);
            // The true count, even where K·(M + N) passes u64.
            let a = u64::from(m) * u64::from(k);
            let want = u128::from(a) + u128::from(k) * u128::from(n);
            let count = |key, count: &dyn std::fmt::Display, name| {
                shape_message(key, (m, n, k, want), (name, count))
            };
            if want > u128::from(max_values) {
                let message = count("kernel.matmul_too_large", &max_values, "max");
                return Err(CliError::from(message));
            }
            let input = read_stdin_f32(max_values)?;
            if input.len() as u128 != want {
                let message = count("kernel.matmul_len", &input.len(), "count");
                return Err(CliError::from(message));
            }
            // B starts at a whole vec4 in the kernel's buffer.
            let offset = dlsys_core::kernels::gemm_b_offset(problem) as usize;
            let mut laid = input;
            laid.splice(
                a as usize..a as usize,
                std::iter::repeat_n(0.0, offset - a as usize),
            );
            (Kernel::Gemm(variant), problem, laid)
        }
        // Routed before the device is asked for (it checks its sizes first).
        KernelCommand::Attention(ref args) => return super::kernel_attention::run(args),
    };
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
        .map_err(|e| super::say(&e))?;
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match which {
        KernelCommand::Softmax { .. } | KernelCommand::Matmul { .. } => {
            stdout.write_all(bytemuck::cast_slice(&out.output))?;
        }
        KernelCommand::Attention(_) => {}
        KernelCommand::Reduce { .. } => writeln!(
            stdout,
            "{}",
            out.output.first().copied().unwrap_or(f32::NAN)
        )?,
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A matmul's size message: its M, N, K, the values it wants, and one
/// figure more (`max` or `count`).
fn shape_message(
    key: &str,
    (m, n, k, want): (u32, u32, u32, u128),
    (name, value): (&str, &dyn std::fmt::Display),
) -> String {
    tf(
        key,
        &[
            ("m", &m),
            ("n", &n),
            ("k", &k),
            ("want", &want),
            (name, value),
        ],
    )
}

/// `kernel matmul --dtype int8`: A (M × K) then B (K × N) as signed bytes
/// on stdin, row-major; C's int32 accumulators to stdout, little-endian.
/// The GPU's C is checked against the core's integer reference before it
/// is written: a mismatch is an error, not output.
fn run_int8(m: u32, n: u32, k: u32, kernel: Int8Kernel) -> Result<ExitCode, CliError> {
    let shape = GemmShape::new(m, n, k).map_err(|e| super::say(&e))?;
    let mut runner = kernel_runner()?;
    // Packed four to a word, each operand takes a quarter of its values in
    // words; the output M·N words must fit too.
    let want = u128::from(m) * u128::from(k) + u128::from(k) * u128::from(n);
    let max_values = runner.max_elements().saturating_mul(4);
    let count = |key, count: &dyn std::fmt::Display, name| {
        shape_message(key, (m, n, k, want), (name, count))
    };
    if want > u128::from(max_values) || shape.outputs() > runner.max_elements() {
        return Err(CliError::from(count(
            "kernel.matmul_too_large",
            &max_values,
            "max",
        )));
    }
    let bytes = read_stdin(max_values, 1)?;
    if bytes.len() as u128 != want {
        return Err(CliError::from(count(
            "kernel.matmul_len",
            &bytes.len(),
            "count",
        )));
    }
    let values: Vec<i8> = bytes.iter().map(|&b| b as i8).collect();
    let (a, b) = values.split_at((u64::from(m) * u64::from(k)) as usize);
    let program =
        dlsys_shaders::int8_gemm::program(kernel, shape, a, b).map_err(|e| super::say(&e))?;
    let words = run_checked(&mut runner, &program, "kernel.int8_wrong", kernel.id())?;
    write_words(&words)
}

/// `program` run once and checked: its output words, or the error `wrong`
/// (naming `id` and the count of wrong values) when the check fails.
pub(super) fn run_checked(
    runner: &mut dlsys_shaders::KernelRunner,
    program: &dlsys_shaders::Program,
    wrong: &str,
    id: &str,
) -> Result<Vec<u32>, CliError> {
    let out = runner
        .start_program(program, 0, 1, false)
        .and_then(dlsys_shaders::Job::wait)
        .map_err(|e| super::say(&e))?;
    let checked = program.check(&out.words);
    if !checked.ok {
        return Err(CliError::from(tf(
            wrong,
            &[("id", &id), ("count", &checked.mismatches)],
        )));
    }
    Ok(out.words)
}

/// A checked result's words to stdout, little-endian, as they are.
pub(super) fn write_words(words: &[u32]) -> Result<ExitCode, CliError> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytemuck::cast_slice(words))?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}
