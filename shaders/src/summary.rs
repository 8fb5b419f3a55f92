//! What a race comes to, computed once from its outcomes: the best softmax
//! and sum against the copy kernel, the compute roof, the best GEMM against
//! the naive one, fused against unfused, the transposes and the layouts.
//! `dlsys-lab bench kernels` prints it (and writes it as JSON); the GPU
//! lessons draw their summary lines from it.

use dlsys_core::kernels::{AccessKind, FusionKind, GemmKind, Kernel, ReduceOp, SoftmaxKind};
use serde::Serialize;

use crate::ladder::Outcome;

/// One kernel's figures as a summary reads them: timed on the GPU, or its
/// reference timed on the CPU (the CPU path has no check: counted as right).
#[derive(Clone, Copy, Debug)]
struct Figures {
    kernel: Kernel,
    ms: f64,
    bytes: u64,
    ok: bool,
    fraction_of_copy: Option<f64>,
    gflops: Option<f64>,
}

impl Figures {
    fn of(outcome: &Outcome) -> Option<Self> {
        let (kernel, problem, ms, bytes, ok, fraction_of_copy) = match outcome {
            Outcome::Ran(r) => (
                r.kernel,
                r.problem,
                r.median_ms,
                r.bytes,
                r.ok,
                r.fraction_of_copy,
            ),
            Outcome::Cpu(c) => (c.kernel, c.problem, c.ms, c.bytes, true, None),
            Outcome::Skipped { .. } | Outcome::Program(_) => return None,
        };
        let ops = kernel.ops(problem);
        let gflops = (ops > 0.0 && ms > 0.0).then(|| ops / (ms * 1e6));
        Some(Self {
            kernel,
            ms,
            bytes,
            ok,
            fraction_of_copy,
            gflops,
        })
    }

    fn gb_per_s(&self) -> f64 {
        self.bytes as f64 / (self.ms * 1e6)
    }
}

/// Two kernels compared: the slow one's time ÷ the fast one's, and bytes likewise.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Pair {
    pub slow_ms: f64,
    pub fast_ms: f64,
    pub slow_bytes: u64,
    pub fast_bytes: u64,
    pub speedup: f64,
    pub bytes_ratio: f64,
}

/// What a race comes to. Every figure is `None` when its kernels did not run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub best_softmax: Option<String>,
    pub best_softmax_fraction_of_copy: Option<f64>,
    pub best_softmax_ms: Option<f64>,
    pub best_sum: Option<String>,
    pub best_sum_fraction_of_copy: Option<f64>,
    pub best_vs_three_pass_speedup: Option<f64>,
    pub copy_gb_per_s: Option<f64>,
    /// The FMA chain's GFLOP/s: the compute roof of this adapter.
    pub compute_roof_gflops: Option<f64>,
    pub best_gemm: Option<String>,
    pub best_gemm_gflops: Option<f64>,
    pub best_gemm_vs_naive: Option<f64>,
    /// Unfused time ÷ fused time, and unfused bytes ÷ fused bytes.
    pub gelu_fused_speedup: Option<f64>,
    pub gelu_bytes_ratio: Option<f64>,
    pub layernorm_fused_speedup: Option<f64>,
    pub layernorm_bytes_ratio: Option<f64>,
    /// NHWC time ÷ NCHW time for the per-channel sum.
    pub nhwc_vs_nchw: Option<f64>,
    #[serde(skip)]
    pub gelu: Option<Pair>,
    #[serde(skip)]
    pub layernorm: Option<Pair>,
    /// The naive transpose against the tiled one, and NHWC against NCHW.
    #[serde(skip)]
    pub transpose: Option<Pair>,
    #[serde(skip)]
    pub layout: Option<Pair>,
    /// GB/s of the naive and the tiled transpose.
    #[serde(skip)]
    pub transpose_gb_per_s: Option<(f64, f64)>,
}

impl Summary {
    pub fn of(outcomes: &[Outcome]) -> Self {
        let figures: Vec<Figures> = outcomes.iter().filter_map(Figures::of).collect();
        let best = |family: fn(Kernel) -> bool| {
            figures
                .iter()
                .filter(|f| f.ok && family(f.kernel) && !f.kernel.expected_to_overflow())
                .min_by(|a, b| a.ms.total_cmp(&b.ms))
        };
        let find = |kernel: Kernel| figures.iter().find(|f| f.kernel == kernel && f.ok);
        let pair = |slow: Kernel, fast: Kernel| {
            find(slow).zip(find(fast)).map(|(s, f)| Pair {
                slow_ms: s.ms,
                fast_ms: f.ms,
                slow_bytes: s.bytes,
                fast_bytes: f.bytes,
                speedup: s.ms / f.ms,
                bytes_ratio: s.bytes as f64 / f.bytes.max(1) as f64,
            })
        };
        let best_gemm = best(|k| matches!(k, Kernel::Gemm(_)));
        let best_softmax = best(|k| matches!(k, Kernel::Softmax(_)));
        let best_sum = best(|k| matches!(k, Kernel::Reduce(_, ReduceOp::Sum)));
        let three_pass = figures
            .iter()
            .find(|f| f.kernel == Kernel::Softmax(SoftmaxKind::ThreePass));
        let gelu = pair(
            Kernel::Fusion(FusionKind::GeluUnfused),
            Kernel::Fusion(FusionKind::GeluFused),
        );
        let layernorm = pair(
            Kernel::Fusion(FusionKind::LayerNormPasses),
            Kernel::Fusion(FusionKind::LayerNormFused),
        );
        let transposes = (
            Kernel::Access(AccessKind::TransposeNaive),
            Kernel::Access(AccessKind::TransposeTiled),
        );
        let layout = pair(
            Kernel::Access(AccessKind::ChannelNhwc),
            Kernel::Access(AccessKind::ChannelNchw),
        );
        Self {
            best_softmax: best_softmax.map(|f| f.kernel.id()),
            best_softmax_fraction_of_copy: best_softmax.and_then(|f| f.fraction_of_copy),
            best_softmax_ms: best_softmax.map(|f| f.ms),
            best_sum: best_sum.map(|f| f.kernel.id()),
            best_sum_fraction_of_copy: best_sum.and_then(|f| f.fraction_of_copy),
            best_vs_three_pass_speedup: best_softmax.zip(three_pass).map(|(b, t)| t.ms / b.ms),
            copy_gb_per_s: find(Kernel::Copy).map(Figures::gb_per_s),
            compute_roof_gflops: find(Kernel::Fma).and_then(|f| f.gflops),
            best_gemm: best_gemm.map(|f| f.kernel.id()),
            best_gemm_gflops: best_gemm.and_then(|f| f.gflops),
            best_gemm_vs_naive: best_gemm
                .zip(find(Kernel::Gemm(GemmKind::Naive)))
                .map(|(b, n)| n.ms / b.ms),
            gelu_fused_speedup: gelu.map(|p| p.speedup),
            gelu_bytes_ratio: gelu.map(|p| p.bytes_ratio),
            layernorm_fused_speedup: layernorm.map(|p| p.speedup),
            layernorm_bytes_ratio: layernorm.map(|p| p.bytes_ratio),
            nhwc_vs_nchw: layout.map(|p| p.speedup),
            gelu,
            layernorm,
            transpose: pair(transposes.0, transposes.1),
            layout,
            transpose_gb_per_s: find(transposes.0)
                .zip(find(transposes.1))
                .map(|(n, t)| (n.gb_per_s(), t.gb_per_s())),
        }
    }
}
