//! An elementwise chain, the unit a fusion pass turns into one generated
//! kernel: `y = op_k(… op_1(x))`, each op reading only the running value
//! and, for a binary op, the same element of another buffer (or, for a
//! bias, the same column of one row) — after, optionally, a first op that
//! normalises each row (LayerNorm's reduction, leading the chain). The chain is data: `shaders`
//! generates its WGSL; here are its meaning on the CPU ([`Chain::eval`],
//! the reference a generated kernel is checked against) and its traffic,
//! fused and as one kernel per op.

use serde::Serialize;

use crate::autograd::pointwise as pw;
use crate::kernels::{LAYERNORM_EPS, Traffic, gelu};

/// What an extra input of a chain holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Extra {
    /// One value per element (another activation, a dropout mask).
    Full,
    /// One row of `cols` values, repeated over the rows (a bias).
    Row,
}

/// One op of a chain.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum ChainOp {
    /// `v + extra[k]`.
    Add(usize),
    /// `v · extra[k]` (a mask is a product with a buffer of 0 and 1/(1 − p)).
    Mul(usize),
    /// `v · s`.
    Scale(f32),
    /// `v + c` (a constant bias).
    Shift(f32),
    /// `v` where `v > 0`, else 0 (so NaN gives 0, as the engine's ReLU).
    Relu,
    /// GELU, tanh form, its tanh's argument clamped to ±20 ([`gelu`]).
    Gelu,
    /// tanh; NaN stays NaN.
    Tanh,
    Sigmoid,
    Exp,
    /// ReLU's backward: `v` where `extra[k] > 0` (ReLU's output), else 0.
    ReluGrad(usize),
    /// tanh's backward: `v · (1 − e²)`, `e = extra[k]` tanh's output.
    TanhGrad(usize),
    /// The sigmoid's backward: `v · e · (1 − e)`.
    SigmoidGrad(usize),
    /// Each row to mean 0 and variance 1, `(v − mean)/√(var + ε)` (LayerNorm
    /// without its affine map): a row op, so only first in a chain — the
    /// generated kernel then runs one workgroup per row, the row kept in
    /// workgroup memory.
    NormalizeRows,
}

impl ChainOp {
    pub fn key(&self) -> &'static str {
        match self {
            Self::Add(_) => "add",
            Self::Mul(_) => "mul",
            Self::Scale(_) => "scale",
            Self::Shift(_) => "shift",
            Self::Relu => "relu",
            Self::Gelu => "gelu",
            Self::Tanh => "tanh",
            Self::Sigmoid => "sigmoid",
            Self::Exp => "exp",
            Self::ReluGrad(_) => "relu_grad",
            Self::TanhGrad(_) => "tanh_grad",
            Self::SigmoidGrad(_) => "sigmoid_grad",
            Self::NormalizeRows => "normalize",
        }
    }

    /// The same op reading extra input `k` instead (an op without one as
    /// it is).
    pub fn reading(self, k: usize) -> Self {
        match self {
            Self::Add(_) => Self::Add(k),
            Self::Mul(_) => Self::Mul(k),
            Self::ReluGrad(_) => Self::ReluGrad(k),
            Self::TanhGrad(_) => Self::TanhGrad(k),
            Self::SigmoidGrad(_) => Self::SigmoidGrad(k),
            other => other,
        }
    }

    /// The extra input it reads, if any.
    pub fn extra(&self) -> Option<usize> {
        match self {
            Self::Add(k)
            | Self::Mul(k)
            | Self::ReluGrad(k)
            | Self::TanhGrad(k)
            | Self::SigmoidGrad(k) => Some(*k),
            _ => None,
        }
    }

    /// Its value on `v` (and the extra input's value `e`), in f32 as a
    /// GPU computes it: GELU, tanh and exp through f64, rounded to f32 at
    /// the end; the sigmoid and the backward rules as the engine computes
    /// them. (The row op [`Self::NormalizeRows`] is applied by [`Chain::eval`]
    /// per row; here it passes `v` on.)
    pub fn apply(&self, v: f32, e: f32) -> f32 {
        match self {
            Self::Add(_) => v + e,
            Self::Mul(_) => v * e,
            Self::Scale(s) => v * s,
            Self::Shift(c) => v + c,
            Self::Relu => pw::relu(v),
            Self::Gelu => gelu(f64::from(v)) as f32,
            Self::Tanh => f64::from(v).tanh() as f32,
            Self::Sigmoid => pw::sigmoid(v),
            Self::Exp => f64::from(v).exp() as f32,
            Self::ReluGrad(_) => pw::relu_grad(v, e),
            Self::TanhGrad(_) => pw::tanh_grad(v, e),
            Self::SigmoidGrad(_) => pw::sigmoid_grad(v, e),
            Self::NormalizeRows => v,
        }
    }

    /// Arithmetic per element (GELU and the normalisation as the fusion
    /// rungs count them).
    pub fn ops(&self) -> f64 {
        match self {
            Self::Gelu => 9.0,
            Self::NormalizeRows => 6.0,
            Self::Sigmoid | Self::TanhGrad(_) | Self::SigmoidGrad(_) => 3.0,
            _ => 1.0,
        }
    }
}

/// The chain the GEMM/fusion lesson's hand-written `gelu-fused` rung
/// computes, `gelu(x·GELU_SCALE + GELU_BIAS)`: the generator's kernel for
/// it is held to that rung's traffic and raced against it.
pub fn gelu_rung_chain() -> Chain {
    use crate::kernels::{GELU_BIAS, GELU_SCALE};
    Chain {
        extras: Vec::new(),
        ops: vec![
            ChainOp::Scale(GELU_SCALE),
            ChainOp::Shift(GELU_BIAS),
            ChainOp::Gelu,
        ],
    }
}

/// The chain the hand-written `layernorm-fused` rung computes: each row
/// normalised, no affine map.
pub fn layernorm_rung_chain() -> Chain {
    Chain {
        extras: Vec::new(),
        ops: vec![ChainOp::NormalizeRows],
    }
}

/// Each row of `x` (rows of `cols`) normalised with its mean and biased
/// variance (plus [`LAYERNORM_EPS`]): the sums taken in f64, the
/// statistics held in f32 where the kernel holds them (so a sum past
/// f32's range is infinite there too: a row of ±1e30 has an infinite
/// variance and normalises to 0), the rest in f64, rounded at the end —
/// the reference a GPU's f32 reductions are held to.
fn normalized_rows(x: &[f32], cols: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks_exact(cols.max(1)) {
        let n = row.len() as f32;
        let mean = row.iter().map(|v| f64::from(*v)).sum::<f64>() as f32 / n;
        let deviation = |v: &f32| f64::from(*v) - f64::from(mean);
        let var = row.iter().map(|v| deviation(v).powi(2)).sum::<f64>() as f32 / n;
        let inv = 1.0 / (f64::from(var) + f64::from(LAYERNORM_EPS)).sqrt();
        out.extend(row.iter().map(|v| (deviation(v) * inv) as f32));
    }
    out
}

/// A chain over `n` elements in rows of `cols`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Chain {
    pub extras: Vec<Extra>,
    pub ops: Vec<ChainOp>,
}

/// Why a chain cannot be made or run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainError {
    /// An op reads an extra input the chain does not have.
    NoExtra { op: usize, extra: usize },
    /// A row op ([`ChainOp::NormalizeRows`]) after the first op.
    RowOpNotFirst { op: usize },
    /// A row op over values that are not whole rows.
    NotRows { n: usize, cols: usize },
    /// An input's length is not what the chain needs.
    Length {
        input: usize,
        want: usize,
        got: usize,
    },
}

impl Chain {
    /// Checks that every op's extra input exists.
    pub fn check(&self) -> Result<(), ChainError> {
        for (op, o) in self.ops.iter().enumerate() {
            if let Some(extra) = o.extra().filter(|k| *k >= self.extras.len()) {
                return Err(ChainError::NoExtra { op, extra });
            }
            if op > 0 && *o == ChainOp::NormalizeRows {
                return Err(ChainError::RowOpNotFirst { op });
            }
        }
        Ok(())
    }

    /// Op `at` alone, as its own kernel (reading its own extra input, if
    /// any, as its only one).
    pub fn single(&self, at: usize) -> Chain {
        let op = self.ops[at];
        Chain {
            extras: op.extra().map(|e| vec![self.extras[e]]).unwrap_or_default(),
            ops: vec![op.reading(0)],
        }
    }

    /// Whether it starts with a row op (its kernel runs a workgroup per row).
    pub fn by_rows(&self) -> bool {
        self.ops.first() == Some(&ChainOp::NormalizeRows)
    }

    /// How long extra input `k` is over `n` elements in rows of `cols`.
    pub fn extra_len(&self, k: usize, n: usize, cols: usize) -> usize {
        match self.extras[k] {
            Extra::Full => n,
            Extra::Row => cols,
        }
    }

    /// The chain's output on `x` (rows of `cols`) and its extra inputs.
    pub fn eval(&self, x: &[f32], extras: &[&[f32]], cols: usize) -> Result<Vec<f32>, ChainError> {
        self.check()?;
        let n = x.len();
        let cols = cols.max(1);
        for (k, e) in extras.iter().enumerate().take(self.extras.len()) {
            let want = self.extra_len(k, n, cols);
            if e.len() != want {
                return Err(ChainError::Length {
                    input: k + 1,
                    want,
                    got: e.len(),
                });
            }
        }
        if extras.len() < self.extras.len() {
            return Err(ChainError::Length {
                input: extras.len() + 1,
                want: self.extra_len(extras.len(), n, cols),
                got: 0,
            });
        }
        let start = if self.by_rows() {
            if !n.is_multiple_of(cols) {
                return Err(ChainError::NotRows { n, cols });
            }
            normalized_rows(x, cols)
        } else {
            x.to_vec()
        };
        Ok(start
            .iter()
            .enumerate()
            .map(|(i, v)| {
                self.ops.iter().fold(*v, |v, op| {
                    let e = op.extra().map_or(0.0, |k| match self.extras[k] {
                        Extra::Full => extras[k][i],
                        Extra::Row => extras[k][i % cols],
                    });
                    op.apply(v, e)
                })
            })
            .collect())
    }

    /// Bytes of one fused kernel over `n` elements: `x` and each extra
    /// input read once per element (a bias too: every element loads its
    /// column's value, which the cache mostly serves), `y` written once.
    pub fn fused_traffic(&self, n: usize) -> Traffic {
        let n = n as u64;
        Traffic {
            bytes_read: 4 * n * (1 + self.extras_read() as u64),
            bytes_written: 4 * n,
            input_passes: 1,
            dispatches: 1,
        }
    }

    /// Bytes as one kernel per op: each reads the running value (and its
    /// extra input) and writes a new one; the normalisation as the
    /// `layernorm-passes` rung's three passes read the row (its few bytes
    /// of statistics per row left out).
    pub fn unfused_traffic(&self, n: usize) -> Traffic {
        let n = n as u64;
        let reads: u64 = self
            .ops
            .iter()
            .map(|o| match o {
                ChainOp::NormalizeRows => 3,
                _ => 1 + u64::from(o.extra().is_some()),
            })
            .sum();
        Traffic {
            bytes_read: 4 * n * reads,
            bytes_written: 4 * n * self.ops.len() as u64,
            input_passes: self.ops.len() as u32,
            dispatches: self.ops.len() as u32,
        }
    }

    /// Extra-input reads per element in the fused kernel (one per op that
    /// reads one: an input read twice is loaded twice).
    fn extras_read(&self) -> usize {
        self.ops.iter().filter(|o| o.extra().is_some()).count()
    }

    /// Arithmetic per element.
    pub fn ops_per_element(&self) -> f64 {
        self.ops.iter().map(ChainOp::ops).sum()
    }
}
