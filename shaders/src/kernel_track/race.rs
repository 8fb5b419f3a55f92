//! The learner's kernel against the built-in ladder: the same device, the
//! same problem, the ladder's own timer, warm-up and trials.

use dlsys_core::kernels::{
    AccessKind, FusionKind, GemmKind, Kernel, ReduceKind, ReduceOp, SoftmaxKind,
};
use rand::{SeedableRng as _, rngs::StdRng};

use super::KernelExercise;
use super::Layout;
use super::cases::{AttnInput, KernelCase, uniform};
use crate::KernelError;
use dlsys_core::names::Words;
/// One line of a race: a kernel and its median time on the bench problem.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Lap {
    /// `yours`, or the built-in kernel's id.
    pub kernel: String,
    pub median_ns: f64,
    /// Bytes each kernel must at least move (input read once, output written
    /// once) ÷ median time.
    pub gb_per_s: f64,
    /// How it was timed.
    pub timer: String,
}

/// The learner's kernel against the built-in ladder on one bench problem.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct KernelRace {
    pub problem: Words,
    /// The problem's size: rows × cols, or a GEMM's M × K by K × N (`k` > 0).
    pub rows: u32,
    pub cols: u32,
    pub k: u32,
    pub trials: u32,
    /// How the learner's kernel was timed (the ladder's laps say theirs).
    pub timer: String,
    #[serde(skip)]
    pub timer_kind: crate::TimerKind,
    /// Fastest first.
    pub laps: Vec<Lap>,
}

impl KernelRace {
    /// 1-based place of the learner's kernel.
    pub fn rank(&self) -> usize {
        self.laps
            .iter()
            .position(|l| l.kernel == "yours")
            .map_or(0, |i| i + 1)
    }
}

impl KernelExercise {
    /// The problem kernels race on: 1024 × 1024 values (4 MiB); a GEMM of
    /// 256 × 256 by 256 × 256.
    pub fn bench_case(&self) -> KernelCase {
        let mut rng = StdRng::seed_from_u64(11);
        if self.layout == Layout::Gemm {
            let name = Words::new("case.gemm", &[("m", &256), ("k", &256), ("n", &256)]);
            return KernelCase::gemm(&mut rng, name, 256, 256, 256);
        }
        if self.layout == Layout::Attention {
            // The longest a learner's loops run here within the guard.
            return KernelCase::attention(
                Words::new("case.attention", &[("n", &128), ("d", &64), ("keys", &128)]),
                128,
                64,
                128,
                11,
                AttnInput::Seeded,
            );
        }
        let (rows, cols) = (1024u32, 1024u32);
        let mut case = KernelCase::new(
            Words::new("case.matrix", &[("rows", &rows), ("cols", &cols)]),
            rows,
            cols,
            uniform(&mut rng, (rows * cols) as usize, -4.0, 4.0),
        );
        if self.layout == Layout::BiasRelu {
            case.bias = uniform(&mut rng, cols as usize, -1.0, 1.0);
        }
        case
    }

    /// The built-in kernels that do the same job (always with the copy
    /// kernel, the bandwidth ceiling).
    pub fn ladder(&self) -> Vec<Kernel> {
        let mut kernels = vec![Kernel::Copy];
        match self.layout {
            Layout::Sum => {
                kernels.extend(ReduceKind::ALL.map(|k| Kernel::Reduce(k, ReduceOp::Sum)));
            }
            // The ladder reduces the whole array; the bytes are the same.
            Layout::RowMax => {
                kernels.extend(ReduceKind::ALL.map(|k| Kernel::Reduce(k, ReduceOp::Max)));
            }
            Layout::RowSoftmax => kernels.extend(SoftmaxKind::ALL.map(Kernel::Softmax)),
            Layout::Gemm => kernels.extend(GemmKind::ALL.map(Kernel::Gemm)),
            Layout::LayerNorm => kernels.extend([
                Kernel::Fusion(FusionKind::LayerNormPasses),
                Kernel::Fusion(FusionKind::LayerNormFused),
            ]),
            // The attention rungs are programs, raced in the lesson.
            Layout::BiasRelu | Layout::Attention => {}
            Layout::Transpose => kernels.extend([
                Kernel::Access(AccessKind::TransposeNaive),
                Kernel::Access(AccessKind::TransposeTiled),
            ]),
        }
        kernels
    }

    /// Bytes the kernel must at least move on `case`.
    pub fn min_bytes(&self, case: &KernelCase) -> u64 {
        let input = case.x.len() + case.bias.len();
        (4 * (input + self.output_len(case))) as u64
    }
}

/// Why a race did not finish.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RaceError {
    #[serde(serialize_with = "crate::error::as_text")]
    pub reason: KernelError,
    /// The learner's kernel is still running on the device (it overran the
    /// budget), or the device is gone: do not use it again.
    pub abandon_device: bool,
}

impl std::fmt::Display for RaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.reason.fmt(f)
    }
}

impl RaceError {
    #[cfg(not(target_arch = "wasm32"))]
    fn new(reason: KernelError) -> Self {
        Self {
            reason,
            abandon_device: false,
        }
    }

    /// The thread timing the race stopped without a result.
    pub fn thread_stopped() -> Self {
        Self {
            reason: KernelError::TimingStopped,
            abandon_device: true,
        }
    }
}

/// Times the learner's (already checked) kernel and the ladder on the same
/// device and problem, with the ladder's timer there (GPU timestamps around
/// the dispatch on a GPU, the CPU clock from submission to completion on a
/// CPU adapter) and its warm-up. The input is uploaded once; each trial is
/// one dispatch in its own submission. Blocking: run it off the UI thread.
#[cfg(not(target_arch = "wasm32"))]
pub fn race_blocking(
    gpu: &crate::Gpu,
    exercise: &'static KernelExercise,
    source: &str,
    trials: u32,
    budget: web_time::Duration,
) -> Result<KernelRace, RaceError> {
    use crate::ladder::{Inputs, Ladder, Outcome, WARMUP};
    use crate::plumbing::{TimerKind, map_read, median, read_mapped, readback_buffer, ticks_to_ns};
    use dlsys_core::names::Named as _;
    use dlsys_core::text::Lang;

    let device = &gpu.device;
    let (pipeline, compiled) = super::checker::compile(gpu, exercise.layout, source, false);
    if let Some(Some(error)) = compiled.get() {
        return Err(RaceError::new(KernelError::RunRejected { error }));
    }
    let case = exercise.bench_case();
    let bound = exercise.bind(gpu, &pipeline, &case);
    let timer = TimerKind::for_gpu(gpu);
    let stamps = matches!(timer, TimerKind::Timestamps { .. }).then(|| {
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("your kernel's timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timestamps"),
            size: 16,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        (
            set,
            resolve,
            readback_buffer(device, "timestamps readback", 16),
        )
    });
    let wait = |index: wgpu::SubmissionIndex| {
        device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: Some(budget),
            })
            .map(|_| ())
            .map_err(|err| RaceError {
                reason: match err {
                    wgpu::PollError::Timeout => KernelError::RaceTimeout {
                        ms: budget.as_millis() as u64,
                        rows: case.rows,
                        cols: case.cols,
                    },
                    other => KernelError::Wait {
                        error: other.to_string(),
                    },
                },
                abandon_device: true,
            })
    };
    let mut times = Vec::new();
    for trial in 0..WARMUP + trials {
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("your kernel, timed"),
        });
        super::checker::dispatch(
            &mut encoder,
            &pipeline,
            &bound,
            stamps.as_ref().map(|(set, ..)| set),
        );
        if let Some((set, resolve, read)) = &stamps {
            encoder.resolve_query_set(set, 0..2, resolve, 0);
            encoder.copy_buffer_to_buffer(resolve, 0, read, 0, None);
        }
        let submitted = std::time::Instant::now();
        wait(gpu.queue.submit([encoder.finish()]))?;
        let mut ns = submitted.elapsed().as_nanos() as f64;
        if let (Some((_, _, read)), TimerKind::Timestamps { period_ns }) = (&stamps, timer) {
            let mapped = map_read(read);
            wait(gpu.queue.submit([]))?;
            mapped
                .recv()
                .map_err(|_| RaceError::new(KernelError::DeviceLost))?
                .map_err(|e| {
                    RaceError::new(KernelError::Readback {
                        error: e.to_string(),
                    })
                })?;
            let ticks: Vec<u64> = read_mapped(read).map_err(RaceError::new)?;
            ns = ticks_to_ns(ticks[0], ticks[1], period_ns);
        }
        if trial >= WARMUP {
            times.push(ns);
        }
    }
    let bytes = exercise.min_bytes(&case) as f64;
    let yours = median(&times);
    let mut laps = vec![Lap {
        kernel: "yours".to_owned(),
        median_ns: yours,
        gb_per_s: bytes / yours,
        timer: timer.name(Lang::En),
    }];
    let mut runner = crate::KernelRunner::new(gpu.clone());
    let problem = dlsys_core::kernels::Problem::new(case.rows, case.cols);
    let kernels = exercise
        .ladder()
        .into_iter()
        .filter(|k| runner.supports(*k).is_ok())
        .collect();
    // The ladder's GEMMs read B at a whole vec4: the same values, laid out so.
    let (inputs, gemm) = if exercise.layout == Layout::Gemm {
        let shape = dlsys_core::kernels::Problem::gemm(case.rows, case.cols, case.k);
        let a = (case.rows * case.k) as usize;
        let mut padded = case.x[..a].to_vec();
        padded.resize(dlsys_core::kernels::gemm_b_offset(shape) as usize, 0.0);
        padded.extend_from_slice(&case.x[a..]);
        let mut inputs = Inputs::shared(case.x.clone());
        inputs.gemm = std::sync::Arc::new(padded);
        (inputs, shape)
    } else {
        (Inputs::shared(case.x.clone()), crate::ladder::GEMM_SHAPE)
    };
    let ladder = Ladder::with_inputs(kernels, problem, inputs, trials).with_gemm_shape(gemm);
    for outcome in ladder.run_blocking(&mut runner) {
        match outcome {
            Outcome::Ran(row) => {
                let min_bytes = match row.kernel {
                    Kernel::Reduce(..) => (4 * (case.x.len() + 1)) as f64,
                    _ => bytes,
                };
                let ns = row.median_ms * 1e6;
                laps.push(Lap {
                    kernel: row.kernel.id(),
                    median_ns: ns,
                    gb_per_s: min_bytes / ns,
                    timer: row.timer.name(Lang::En),
                });
            }
            Outcome::Skipped { kernel, why } => {
                return Err(RaceError::new(KernelError::Skipped {
                    kernel: kernel.id(),
                    why: Box::new(why),
                }));
            }
            Outcome::Cpu(_) | Outcome::Program(_) => {}
        }
    }
    laps.sort_by(|a, b| a.median_ns.total_cmp(&b.median_ns));
    Ok(KernelRace {
        problem: case.name,
        rows: case.rows,
        cols: case.cols,
        k: case.k,
        trials,
        timer: timer.name(Lang::En),
        timer_kind: timer,
        laps,
    })
}
