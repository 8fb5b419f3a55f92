//! Tensor parallelism as Megatron-LM does it (Shoeybi et al. 2019, §3),
//! run for real on threads: a transformer layer's attention and MLP, each
//! split over T workers, against the unsplit sublayer on the same input.
//!
//! - **MLP**: the first weight W₁ [h, 4h] by columns, its bias with it, so
//!   worker i computes its slice of GELU(X·W₁ + b₁) with no communication;
//!   the second W₂ [4h, h] by rows, so worker i's H_i·W₂ᵢ is a partial sum
//!   of the output, and one all-reduce (g) adds them. In backward every
//!   worker gets the whole output gradient and computes a partial input
//!   gradient; one all-reduce (f) adds them.
//! - **Attention**: W_q, W_k, W_v by columns a head at a time (the heads
//!   divided among the workers; heads not divisible by T are refused), the
//!   output projection W_o by rows, the same two all-reduces.
//!
//! What a worker computes from its own shard — its heads' outputs, its
//! slice of the hidden layer, every weight gradient — is the unsplit
//! sublayer's slice bit for bit: each element is the same dot product in
//! the same order. Only the all-reduced sums (the output and the input
//! gradient) differ: Σ over workers of partial dot products is the unsplit
//! dot product reassociated. Both are held to the f64 value of the same
//! terms within γ_K·Σ|terms| (γ_K = K·u/(1 − K·u), u = 2⁻²⁴, K terms: the
//! classic bound on a floating-point sum in any order), which is what
//! "only the summation order differs" means.
//!
//! The all-reduces run on the collective engine's ring over the workers'
//! real buffers, its bytes counted: 2(T − 1)/T of tokens × h per worker.
//! The second linears carry no bias (Megatron adds it after the all-reduce,
//! replicated on every worker; it takes no part in the split).

use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;

use super::cost::all_reduce_bytes;
use crate::autograd::{Graph, Tensor, Var};
use crate::collective::Op;

/// The most a run here takes: tokens, width, heads.
pub const MAX_TOKENS: usize = 256;
pub const MAX_HIDDEN: usize = 512;
pub const MAX_HEADS: usize = 64;

crate::catalog_error! {
    /// Why a tensor-parallel run cannot be set up.
    pub enum TensorError {
        /// The heads do not divide among the workers.
        Heads { heads: u64, workers: u64 } = "parallel.tp_heads",
        /// The width is not a whole number of heads.
        HeadWidth { hidden: u64, heads: u64 } = "parallel.tp_head_width",
        /// Sizes past what a run here takes, or workers outside 2..=16.
        Size { workers: u64, tokens: u64, hidden: u64, heads: u64 } = "parallel.tp_size",
        /// Sequence parallelism: the tokens do not divide among the workers.
        SpTokens { tokens: u64, workers: u64 } = "parallel.sp_tokens",
        /// A worker's thread or the all-reduce failed.
        WorkerFailed = "parallel.worker_failed",
    }
}

/// One tensor-parallel run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TpSettings {
    pub workers: usize,
    /// Tokens of one sequence (attention is causal over them).
    pub tokens: usize,
    pub hidden: usize,
    pub heads: usize,
    pub seed: u64,
}

impl Default for TpSettings {
    fn default() -> Self {
        Self {
            workers: 4,
            tokens: 16,
            hidden: 64,
            heads: 8,
            seed: 11,
        }
    }
}

impl TpSettings {
    pub fn validate(&self) -> Result<(), TensorError> {
        let ok = (crate::collective::MIN_WORKERS..=crate::collective::MAX_WORKERS)
            .contains(&self.workers)
            && (1..=MAX_TOKENS).contains(&self.tokens)
            && (1..=MAX_HIDDEN).contains(&self.hidden)
            && (1..=MAX_HEADS).contains(&self.heads);
        if !ok {
            return Err(TensorError::Size {
                workers: crate::collective::MAX_WORKERS as u64,
                tokens: MAX_TOKENS as u64,
                hidden: MAX_HIDDEN as u64,
                heads: MAX_HEADS as u64,
            });
        }
        if !self.hidden.is_multiple_of(self.heads) {
            return Err(TensorError::HeadWidth {
                hidden: self.hidden as u64,
                heads: self.heads as u64,
            });
        }
        if !self.heads.is_multiple_of(self.workers) {
            return Err(TensorError::Heads {
                heads: self.heads as u64,
                workers: self.workers as u64,
            });
        }
        Ok(())
    }
}

/// Which half of the layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Sublayer {
    Attention,
    Mlp,
}

impl crate::names::Named for Sublayer {
    fn name_key(&self) -> String {
        format!("tp.sublayer.{self:?}")
    }
}

/// A sublayer split over the workers, against the unsplit one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SublayerRun {
    pub sublayer: Sublayer,
    /// Each worker's weight shards' shapes, in order.
    pub shard_shapes: Vec<Vec<usize>>,
    /// Whether every worker's column-parallel activations (heads' outputs
    /// or hidden slice) equal the unsplit sublayer's slice bit for bit.
    pub activations_bitwise: bool,
    /// Whether every weight gradient equals the unsplit slice bit for bit.
    pub weight_grads_bitwise: bool,
    /// The all-reduced output and input gradient against the unsplit:
    /// the largest |Δ|, and the largest |Δ| ÷ its bound 2γ_K·Σ|terms|.
    pub output_max_difference: f32,
    pub output_over_bound: f64,
    pub input_grad_max_difference: f32,
    pub input_grad_over_bound: f64,
    /// Whether the split and the unsplit results both lie within
    /// γ_K·Σ|terms| of the f64 value of the same terms.
    pub both_within_f64_bound: bool,
    /// Bytes each worker sent in the forward and the backward all-reduce,
    /// counted by the collective engine; the ring's 2(T − 1)/T formula.
    pub sent_forward: Vec<u64>,
    pub sent_backward: Vec<u64>,
    pub formula_bytes: u64,
}

impl SublayerRun {
    /// Each shard's shape, "64 × 16, 64 × 16, …".
    pub fn shapes_text(&self) -> String {
        let shapes: Vec<String> = self
            .shard_shapes
            .iter()
            .map(|shape| {
                let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
                dims.join(" × ")
            })
            .collect();
        shapes.join(", ")
    }
}

/// The layer: both sublayers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TpRun {
    pub settings: TpSettings,
    pub sublayers: Vec<SublayerRun>,
    /// All-reduces per layer and the bytes one worker sends in them.
    pub all_reduces: usize,
    pub layer_bytes: u64,
}

/// Runs both sublayers split over `settings.workers` (on threads when
/// `threads`) and unsplit, on the same seeded input and output gradient.
pub fn run_tp(settings: &TpSettings, threads: bool) -> Result<TpRun, TensorError> {
    settings.validate()?;
    let sublayers = [Sublayer::Attention, Sublayer::Mlp]
        .into_iter()
        .map(|s| run_sublayer(settings, s, threads))
        .collect::<Result<Vec<_>, _>>()?;
    let layer_bytes = sublayers
        .iter()
        .map(|s| s.sent_forward[0] + s.sent_backward[0])
        .sum();
    Ok(TpRun {
        settings: settings.clone(),
        all_reduces: 2 * sublayers.len(),
        sublayers,
        layer_bytes,
    })
}

/// Seeded values uniform in [−scale, scale).
pub(super) fn uniform(rng: &mut rand::rngs::StdRng, shape: &[usize], scale: f32) -> Tensor<f32> {
    let n = shape.iter().product();
    Tensor::new(
        (0..n).map(|_| rng.random_range(-scale..scale)).collect(),
        shape,
    )
}

/// Columns `cols` of a `[rows, n]` matrix.
fn columns(t: &Tensor<f32>, cols: std::ops::Range<usize>) -> Tensor<f32> {
    let (rows, _) = t.rows_cols();
    let mut data = Vec::with_capacity(rows * cols.len());
    for r in 0..rows {
        data.extend_from_slice(&t.row(r)[cols.clone()]);
    }
    Tensor::new(data, &[rows, cols.len()])
}

/// Rows `rows` of a `[m, n]` matrix.
pub(super) fn rows(t: &Tensor<f32>, rows: std::ops::Range<usize>) -> Tensor<f32> {
    let (_, n) = t.rows_cols();
    Tensor::new(
        t.data[rows.start * n..rows.end * n].to_vec(),
        &[rows.len(), n],
    )
}

/// A sublayer's weights: attention's W_q, W_k, W_v, W_o, or the MLP's W₁,
/// b₁ (as [1, 4h]), W₂.
pub(super) struct Weights(pub(super) Vec<Tensor<f32>>);

impl Weights {
    pub(super) fn new(s: &TpSettings, sublayer: Sublayer, rng: &mut rand::rngs::StdRng) -> Self {
        let h = s.hidden;
        let scale = 1.0 / (h as f32).sqrt();
        Self(match sublayer {
            Sublayer::Attention => (0..4).map(|_| uniform(rng, &[h, h], scale)).collect(),
            Sublayer::Mlp => vec![
                uniform(rng, &[h, 4 * h], scale),
                uniform(rng, &[4 * h], 0.1),
                uniform(rng, &[4 * h, h], 0.5 * scale),
            ],
        })
    }

    /// Worker `i`'s shards: column slices of the first weights, a row
    /// slice of the last.
    pub(super) fn shard(&self, sublayer: Sublayer, i: usize, workers: usize) -> Self {
        let width = self.0[0].shape[1] / workers;
        let cols = i * width..(i + 1) * width;
        Self(match sublayer {
            Sublayer::Attention => vec![
                columns(&self.0[0], cols.clone()),
                columns(&self.0[1], cols.clone()),
                columns(&self.0[2], cols.clone()),
                rows(&self.0[3], cols),
            ],
            Sublayer::Mlp => vec![
                columns(&self.0[0], cols.clone()),
                Tensor::new(self.0[1].data[cols.clone()].to_vec(), &[width]),
                rows(&self.0[2], cols),
            ],
        })
    }
}

/// A sublayer recorded: its output, its column-parallel activations, its
/// input and weight leaves.
pub(super) struct Recorded {
    graph: Graph<f32>,
    input: Var,
    weights: Vec<Var>,
    activations: Var,
    output: Var,
}

/// Records `sublayer` with `weights` over `x` ([tokens, h]); `heads` of
/// them (the worker's share).
pub(super) fn record(
    sublayer: Sublayer,
    x: &Tensor<f32>,
    weights: &Weights,
    heads: usize,
) -> Recorded {
    let mut g = Graph::new();
    let input = g.param(x.clone());
    let w: Vec<Var> = weights.0.iter().map(|t| g.param(t.clone())).collect();
    let (activations, output) = match sublayer {
        Sublayer::Attention => {
            let q = g.matmul(input, w[0]);
            let k = g.matmul(input, w[1]);
            let v = g.matmul(input, w[2]);
            let o = g.attention(q, k, v, heads, true).output;
            (o, g.matmul(o, w[3]))
        }
        Sublayer::Mlp => {
            let z = g.matmul(input, w[0]);
            let z = g.add(z, w[1]);
            let hidden = g.gelu(z);
            (hidden, g.matmul(hidden, w[2]))
        }
    };
    Recorded {
        graph: g,
        input,
        weights: w,
        activations,
        output,
    }
}

/// What a sublayer gives back: activations, output, input gradient,
/// weight gradients.
pub(super) struct Grads {
    pub(super) activations: Tensor<f32>,
    pub(super) output: Tensor<f32>,
    pub(super) input: Tensor<f32>,
    pub(super) weights: Vec<Tensor<f32>>,
}

/// Forward, then backward from `dy`.
pub(super) fn forward_backward(mut r: Recorded, dy: &Tensor<f32>) -> Grads {
    let activations = r.graph.value(r.activations).into_owned();
    let output = r.graph.value(r.output).into_owned();
    r.graph.backward_from(r.output, dy.clone(), &mut |_, _| {});
    let input = r
        .graph
        .grad(r.input)
        .map_or_else(|| Tensor::zeros(&output.shape), |g| g.into_owned());
    Grads {
        activations,
        output,
        input,
        weights: r.graph.grads_or_zeros(&r.weights),
    }
}

/// All-reduces the workers' buffers on the ring; each worker's bytes sent.
fn all_reduce(buffers: &mut [Vec<f32>]) -> Result<Vec<u64>, TensorError> {
    let mut sent = vec![0; buffers.len()];
    super::workers::ring(Op::AllReduce, buffers, &mut sent).ok_or(TensorError::WorkerFailed)?;
    Ok(sent)
}

fn run_sublayer(
    s: &TpSettings,
    sublayer: Sublayer,
    threads: bool,
) -> Result<SublayerRun, TensorError> {
    let t = s.workers;
    let salt = match sublayer {
        Sublayer::Attention => 1,
        Sublayer::Mlp => 2,
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(s.seed ^ salt);
    let weights = Weights::new(s, sublayer, &mut rng);
    let x = uniform(&mut rng, &[s.tokens, s.hidden], 1.0);
    let dy = uniform(&mut rng, &[s.tokens, s.hidden], 1.0);
    let whole = forward_backward(record(sublayer, &x, &weights, s.heads), &dy);
    let shards: Vec<Weights> = (0..t).map(|i| weights.shard(sublayer, i, t)).collect();
    let heads = s.heads / t;
    // Each worker forward and backward on its own shard. The backward
    // needs only the output gradient, which is the same on every worker,
    // so forward and backward run in one go; the all-reduces of the
    // partial outputs and of the partial input gradients follow.
    let work = |w: &Weights| forward_backward(record(sublayer, &x, w, heads), &dy);
    let parts: Vec<Grads> =
        super::workers::each(threads, t, |i| work(&shards[i])).ok_or(TensorError::WorkerFailed)?;
    let mut outputs: Vec<Vec<f32>> = parts.iter().map(|p| p.output.data.clone()).collect();
    let sent_forward = all_reduce(&mut outputs)?;
    let mut inputs: Vec<Vec<f32>> = parts.iter().map(|p| p.input.data.clone()).collect();
    let sent_backward = all_reduce(&mut inputs)?;
    // Column-parallel activations and weight gradients: the slices.
    let width = whole.activations.shape[1] / t;
    let slice = |i: usize| i * width..(i + 1) * width;
    let activations_bitwise = parts
        .iter()
        .enumerate()
        .all(|(i, p)| same_bits(&p.activations, &columns(&whole.activations, slice(i))));
    let weight_grads_bitwise = parts.iter().enumerate().all(|(i, p)| {
        let want = Weights(whole.weights.clone()).shard(sublayer, i, t);
        p.weights.iter().zip(&want.0).all(|(a, b)| same_bits(a, b))
    });
    // The sums: the output is Σ_k act[r,k]·W_last[k,c]; the input gradient
    // Σ over the first weights of Σ_k grad_pre[r,k]·W[c,k], where grad_pre
    // (the gradient at each first matmul's output) is the same bits split
    // or not. Their terms, in f64, give the reference and the bound.
    let output_terms = terms_product(&whole.activations, &weights.0[weights.0.len() - 1]);
    let (out_diff, out_ratio, out_f64) = compare(&outputs[0], &whole.output.data, &output_terms);
    let input_terms = input_grad_terms(sublayer, &x, &weights, &dy, s.heads);
    let (in_diff, in_ratio, in_f64) = compare(&inputs[0], &whole.input.data, &input_terms);
    Ok(SublayerRun {
        sublayer,
        shard_shapes: shards[0].0.iter().map(|w| w.shape.clone()).collect(),
        activations_bitwise,
        weight_grads_bitwise,
        output_max_difference: out_diff,
        output_over_bound: out_ratio,
        input_grad_max_difference: in_diff,
        input_grad_over_bound: in_ratio,
        both_within_f64_bound: out_f64 && in_f64,
        sent_forward,
        sent_backward,
        formula_bytes: all_reduce_bytes(t, (s.tokens * s.hidden) as u64, 4),
    })
}

pub(super) fn same_bits(a: &Tensor<f32>, b: &Tensor<f32>) -> bool {
    a.shape == b.shape
        && a.data
            .iter()
            .zip(&b.data)
            .all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Per output element: the f64 sum of its terms, the sum of their
/// magnitudes, and the number of terms.
struct Terms {
    exact: Vec<f64>,
    magnitude: Vec<f64>,
    count: usize,
}

/// The terms of `a · b` ([m, k] · [k, n]).
fn terms_product(a: &Tensor<f32>, b: &Tensor<f32>) -> Terms {
    terms_sum(&[(a, b, false)])
}

/// The terms of Σ over `parts` of a · b (b transposed where flagged), all
/// [m, k] · [k, n] (or [n, k]ᵀ).
fn terms_sum(parts: &[(&Tensor<f32>, &Tensor<f32>, bool)]) -> Terms {
    let (m, _) = parts[0].0.rows_cols();
    let n = if parts[0].2 {
        parts[0].1.shape[0]
    } else {
        parts[0].1.shape[1]
    };
    let mut exact = vec![0.0; m * n];
    let mut magnitude = vec![0.0; m * n];
    let mut count = 0;
    for (a, b, transposed) in parts {
        let k = a.shape[1];
        count += k;
        for r in 0..m {
            for c in 0..n {
                for j in 0..k {
                    let bv = if *transposed {
                        b.data[c * k + j]
                    } else {
                        b.data[j * n + c]
                    };
                    let term = f64::from(a.data[r * k + j]) * f64::from(bv);
                    exact[r * n + c] += term;
                    magnitude[r * n + c] += term.abs();
                }
            }
        }
    }
    Terms {
        exact,
        magnitude,
        count,
    }
}

/// The input gradient's terms: the gradient at each first matmul's output
/// times that weight transposed, recomputed unsplit in the engine (the
/// same bits the workers' slices hold).
fn input_grad_terms(
    sublayer: Sublayer,
    x: &Tensor<f32>,
    weights: &Weights,
    dy: &Tensor<f32>,
    heads: usize,
) -> Terms {
    let first = match sublayer {
        Sublayer::Attention => 3,
        Sublayer::Mlp => 1,
    };
    let mut r = record(sublayer, x, weights, heads);
    // The first matmuls' outputs are the input's only consumers: their
    // gradients are what multiplies the weights.
    let consumers: Vec<Var> = (0..first)
        .map(|i| matmul_of(&r.graph, r.input, r.weights[i]))
        .collect();
    r.graph.backward_from(r.output, dy.clone(), &mut |_, _| {});
    let grads: Vec<Tensor<f32>> = consumers
        .iter()
        .map(|v| {
            r.graph
                .grad(*v)
                .map_or_else(|| Tensor::zeros(&[0]), |g| g.into_owned())
        })
        .collect();
    let parts: Vec<(&Tensor<f32>, &Tensor<f32>, bool)> = grads
        .iter()
        .zip(&weights.0)
        .map(|(g, w)| (g, w, true))
        .collect();
    terms_sum(&parts)
}

/// The node that multiplies `input` by `weight`.
fn matmul_of(g: &Graph<f32>, input: Var, weight: Var) -> Var {
    (0..g.len())
        .map(Var)
        .find(|v| matches!(g.node(*v).op, crate::autograd::Op::MatMul(a, b) if a == input && b == weight))
        .unwrap_or(input)
}

/// The largest |split − unsplit|, the largest |Δ| over 2γ_K·Σ|terms|, and
/// whether both lie within γ_K·Σ|terms| of the f64 sum.
fn compare(split: &[f32], whole: &[f32], terms: &Terms) -> (f32, f64, bool) {
    let u = f64::from(f32::EPSILON) / 2.0;
    let k = terms.count as f64 + 1.0;
    let gamma = k * u / (1.0 - k * u);
    let mut max = 0.0f32;
    let mut ratio = 0.0f64;
    let mut within = true;
    for i in 0..split.len().min(whole.len()) {
        let bound = gamma * terms.magnitude[i];
        let d = (split[i] - whole[i]).abs();
        max = max.max(d);
        if bound > 0.0 {
            ratio = ratio.max(f64::from(d) / (2.0 * bound));
        }
        let off = |v: f32| (f64::from(v) - terms.exact[i]).abs();
        within &= off(split[i]) <= bound && off(whole[i]) <= bound;
    }
    (max, ratio, within)
}
