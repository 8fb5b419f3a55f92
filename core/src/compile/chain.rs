//! An elementwise chain, the unit a fusion pass turns into one generated
//! kernel: `y = op_k(… op_1(x))`, each op reading only the running value
//! and, for a binary op, the same element of another buffer (or, for a
//! bias, the same column of one row). The chain is data: `shaders`
//! generates its WGSL; here are its meaning on the CPU ([`Chain::eval`],
//! the reference a generated kernel is checked against) and its traffic,
//! fused and as one kernel per op.

use serde::Serialize;

use crate::autograd::pointwise as pw;
use crate::kernels::{Traffic, gelu};

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
    /// them.
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
        }
    }

    /// Arithmetic per element (GELU as the fusion rungs count it).
    pub fn ops(&self) -> f64 {
        match self {
            Self::Gelu => 9.0,
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
        }
        Ok(())
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
        Ok(x.iter()
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
    /// extra input) and writes a new one.
    pub fn unfused_traffic(&self, n: usize) -> Traffic {
        let n = n as u64;
        let reads: u64 = self
            .ops
            .iter()
            .map(|o| 1 + u64::from(o.extra().is_some()))
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
