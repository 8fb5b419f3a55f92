//! The layers' forward ops: GELU, dropout, LayerNorm, BatchNorm (training
//! and evaluation), convolution through im2col, pooling, and what attention
//! is built from (transpose, the causal mask, a head's columns, concat),
//! plus embedding lookup. Each records what its backward (in
//! `backward_layers.rs`) needs. Shapes are checked here: a wrong one is a
//! bug in the model's code, so it panics with the shapes, as `matmul` does.

use rand::{RngExt as _, SeedableRng as _};

use super::Graph;
use crate::autograd::conv::{Conv2d, Pool2d};
use crate::autograd::layer_math::{self as lm, moments};
use crate::autograd::op::{Op, Var};
use crate::autograd::tensor::{Real, Tensor};
use crate::kernels::gelu;

/// A dropout mask for `shape`: each element kept with probability 1 − p and
/// then scaled by 1/(1 − p) (so the expected output is the input), seeded.
pub fn dropout_mask<T: Real>(shape: &[usize], p: f64, seed: u64) -> Tensor<T> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let keep = T::from_f64(1.0 / (1.0 - p));
    let n = shape.iter().product();
    Tensor::new(
        (0..n)
            .map(|_| {
                if rng.random::<f64>() < p {
                    T::ZERO
                } else {
                    keep
                }
            })
            .collect(),
        shape,
    )
}

/// An attention block's output and, per head, its weights (the softmax
/// node: rows are queries, columns keys).
#[derive(Clone, Debug)]
pub struct Attention {
    pub output: Var,
    pub weights: Vec<Var>,
}

/// The mean and the biased variance a norm computes over `values` (what
/// LayerNorm takes per row, BatchNorm per channel in training).
pub fn mean_and_variance<T: Real>(values: &[T]) -> (T, T) {
    let (mean, _, var) = moments(values.iter().copied(), values.len());
    (mean, var)
}

impl<T: Real> Graph<T> {
    /// GELU in its tanh form, the one formula ([`crate::kernels::gelu`]).
    pub fn gelu(&mut self, a: Var) -> Var {
        self.unary(a, |x| T::from_f64(gelu(x.to_f64())), Op::Gelu(a))
    }

    /// Dropout in training: `x ⊙ mask` ([`dropout_mask`]). In evaluation a
    /// model skips it (the mask's scaling keeps the expectation).
    pub fn dropout(&mut self, input: Var, mask: Tensor<T>) -> Var {
        let x = self.value(input);
        assert_eq!(
            x.shape, mask.shape,
            "dropout: mask shape differs from the input's"
        );
        let value = x.zip_map(&mask, |x, m| x * m);
        self.push(value, Op::Dropout { input, mask })
    }

    /// Fake quantisation with the straight-through estimator
    /// ([`Op::FakeQuantise`]): `restored` is the input quantised and
    /// dequantised by the caller (`quant::qat` does it with the core's
    /// quantiser), `inside` is 1 where the input lay within its block's clip
    /// range and 0 where it was clipped.
    pub fn fake_quantise(&mut self, input: Var, restored: Tensor<T>, inside: Tensor<T>) -> Var {
        let x = self.value(input);
        assert!(
            x.shape == restored.shape && x.shape == inside.shape,
            "fake_quantise: the round trip and the mask must have the input's shape"
        );
        self.push(restored, Op::FakeQuantise { input, inside })
    }

    /// LayerNorm over each row of `[rows, cols]`, with `γ`, `β` of `[cols]`.
    pub fn layer_norm(&mut self, input: Var, gamma: Var, beta: Var) -> Var {
        let x = self.value(input).into_owned();
        let (rows, cols) = x.rows_cols();
        let (g, b) = (self.value(gamma), self.value(beta));
        assert!(
            g.numel() == cols && b.numel() == cols,
            "layer_norm: γ and β need {cols} values, not {} and {}",
            g.numel(),
            b.numel()
        );
        let mut xhat = x.clone();
        let mut inv_std = Vec::with_capacity(rows);
        let mut y = x.clone();
        for r in 0..rows {
            let row = x.row(r);
            let (mean, inv, _) = moments(row.iter().copied(), cols);
            inv_std.push(inv);
            for (c, v) in row.iter().enumerate() {
                let h = (*v - mean) * inv;
                xhat.data[r * cols + c] = h;
                y.data[r * cols + c] = g.data[c] * h + b.data[c];
            }
        }
        self.push(
            y,
            Op::LayerNorm {
                input,
                gamma,
                beta,
                xhat,
                inv_std,
            },
        )
    }

    /// BatchNorm in training over `[N, channels·S]`: each channel normalised
    /// with the batch's mean and biased variance. Returns the output and the
    /// batch's per-channel mean and (unbiased, as running statistics take
    /// it) variance.
    pub fn batch_norm_train(
        &mut self,
        input: Var,
        gamma: Var,
        beta: Var,
        channels: usize,
    ) -> (Var, Vec<T>, Vec<T>) {
        let x = self.value(input);
        let (n, spatial) = Self::channel_layout(&x, channels, "batch_norm_train");
        let m = n * spatial;
        let (means, biased) = lm::channel_moments(&x.data, channels, spatial);
        let unbiased = biased
            .iter()
            .map(|var| {
                if m > 1 {
                    *var * T::from_f64(m as f64 / (m - 1) as f64)
                } else {
                    *var
                }
            })
            .collect();
        let out = self.batch_norm_with(input, gamma, beta, channels, (&means, &biased), true);
        (out, means, unbiased)
    }

    /// BatchNorm in evaluation: each channel normalised with fixed (running)
    /// mean and variance — an affine map per channel, independent of the batch.
    pub fn batch_norm_eval(
        &mut self,
        input: Var,
        gamma: Var,
        beta: Var,
        channels: usize,
        (mean, var): (&[T], &[T]),
    ) -> Var {
        self.batch_norm_with(input, gamma, beta, channels, (mean, var), false)
    }

    fn batch_norm_with(
        &mut self,
        input: Var,
        gamma: Var,
        beta: Var,
        channels: usize,
        (mean, var): (&[T], &[T]),
        training: bool,
    ) -> Var {
        let x = self.value(input).into_owned();
        let (_, spatial) = Self::channel_layout(&x, channels, "batch_norm");
        let (g, b) = (self.value(gamma), self.value(beta));
        assert!(
            g.numel() == channels
                && b.numel() == channels
                && mean.len() == channels
                && var.len() == channels,
            "batch_norm: γ, β and the statistics need {channels} values"
        );
        let inv_std = lm::inverse_std(var);
        let mut xhat = x.clone();
        let mut y = x.clone();
        let layout = (channels, spatial);
        lm::normalise_into(&x.data, layout, mean, &inv_std, &mut xhat.data);
        lm::channel_affine_into(&xhat.data, layout, &g.data, &b.data, &mut y.data);
        self.push(
            y,
            Op::BatchNorm {
                input,
                gamma,
                beta,
                channels,
                training,
                xhat,
                inv_std,
            },
        )
    }

    /// `[N, channels·S]`: the batch and S, checked.
    pub(super) fn channel_layout(x: &Tensor<T>, channels: usize, op: &str) -> (usize, usize) {
        let (n, cols) = x.rows_cols();
        assert!(
            channels > 0 && cols % channels == 0,
            "{op}: {cols} values per row are not {channels} channels"
        );
        (n, cols / channels)
    }

    /// A convolution of `[N, C·H·W]` by `[OC, C·KH·KW]` filters, plus a
    /// bias of `[OC]`: per image, im2col then one GEMM.
    pub fn conv2d(&mut self, input: Var, weight: Var, bias: Option<Var>, geometry: Conv2d) -> Var {
        let x = self.value(input).into_owned();
        let w = self.value(weight).into_owned();
        let (n, len) = x.rows_cols();
        assert!(
            geometry.output().is_some(),
            "conv2d: the kernel does not fit {geometry:?}"
        );
        assert_eq!(
            len,
            geometry.input_len(),
            "conv2d: rows are not C·H·W of {geometry:?}"
        );
        assert_eq!(
            w.shape,
            [geometry.out_channels, geometry.patch()],
            "conv2d: weights are not OC × C·KH·KW"
        );
        let b = bias.map(|b| self.value(b).into_owned());
        let mut out = vec![T::ZERO; n * geometry.output_len()];
        let b = b.as_ref().map(|b| b.data.as_slice());
        lm::conv2d_into(&geometry, &x.data, &w.data, b, &mut out);
        let value = Tensor::new(out, &[n, geometry.output_len()]);
        self.push(
            value,
            Op::Conv2d {
                input,
                weight,
                bias,
                geometry,
            },
        )
    }

    fn pooled(&self, input: Var, geometry: Pool2d, op: &str) -> (Tensor<T>, usize) {
        let x = self.value(input).into_owned();
        let (n, len) = x.rows_cols();
        assert!(
            geometry.output().is_some() && len == geometry.input_len(),
            "{op}: rows of {len} are not {geometry:?}"
        );
        (x, n)
    }

    /// The maximum of each window (the first one on a tie).
    pub fn max_pool(&mut self, input: Var, geometry: Pool2d) -> Var {
        let (x, n) = self.pooled(input, geometry, "max_pool");
        let out_len = geometry.output_len();
        let mut out = vec![T::ZERO; n * out_len];
        let mut argmax = Vec::with_capacity(n * out_len);
        lm::max_pool_into(&geometry, &x.data, &mut out, Some(&mut argmax));
        let value = Tensor::new(out, &[n, out_len]);
        self.push(
            value,
            Op::MaxPool {
                input,
                geometry,
                argmax,
            },
        )
    }

    /// The mean of each window.
    pub fn avg_pool(&mut self, input: Var, geometry: Pool2d) -> Var {
        let (x, n) = self.pooled(input, geometry, "avg_pool");
        let out_len = geometry.output_len();
        let area = T::from_f64((geometry.kernel * geometry.kernel) as f64);
        let mut out = Vec::with_capacity(n * out_len);
        for r in 0..n {
            let row = x.row(r);
            for o in 0..out_len {
                out.push(geometry.window(o).fold(T::ZERO, |s, i| s + row[i]) / area);
            }
        }
        let value = Tensor::new(out, &[n, out_len]);
        self.push(value, Op::AvgPool { input, geometry })
    }

    /// A matrix transposed.
    pub fn transpose(&mut self, a: Var) -> Var {
        let x = self.value(a);
        let (rows, cols) = x.rows_cols();
        let mut data = vec![T::ZERO; x.numel()];
        for r in 0..rows {
            for c in 0..cols {
                data[c * rows + r] = x.data[r * cols + c];
            }
        }
        let value = Tensor::new(data, &[cols, rows]);
        self.push(value, Op::Transpose(a))
    }

    /// Entries above the diagonal of a square matrix set to −∞.
    pub fn causal_mask(&mut self, a: Var) -> Var {
        let x = self.value(a);
        let (rows, cols) = x.rows_cols();
        assert_eq!(rows, cols, "causal_mask: scores must be square");
        let mut value = x.into_owned();
        for r in 0..rows {
            for c in r + 1..cols {
                value.data[r * cols + c] = T::from_f64(f64::NEG_INFINITY);
            }
        }
        self.push(value, Op::CausalMask(a))
    }

    /// Rows `ids` of `table` (`[vocabulary, dim]`).
    pub fn embedding(&mut self, table: Var, ids: &[usize]) -> Var {
        let t = self.value(table);
        let (vocabulary, dim) = t.rows_cols();
        let mut data = Vec::with_capacity(ids.len() * dim);
        for id in ids {
            assert!(
                *id < vocabulary,
                "embedding: id {id} ≥ vocabulary {vocabulary}"
            );
            data.extend_from_slice(t.row(*id));
        }
        let value = Tensor::new(data, &[ids.len(), dim]);
        self.push(
            value,
            Op::Embedding {
                table,
                ids: ids.to_vec(),
            },
        )
    }

    /// Columns `start .. start + width` of a matrix.
    pub fn columns(&mut self, input: Var, start: usize, width: usize) -> Var {
        let x = self.value(input);
        let (rows, cols) = x.rows_cols();
        assert!(
            start + width <= cols,
            "columns: {start}+{width} past {cols}"
        );
        let mut data = Vec::with_capacity(rows * width);
        for r in 0..rows {
            data.extend_from_slice(&x.row(r)[start..start + width]);
        }
        let value = Tensor::new(data, &[rows, width]);
        self.push(value, Op::Columns { input, start })
    }

    /// Matrices with the same rows, side by side.
    pub fn concat(&mut self, parts: &[Var]) -> Var {
        let values: Vec<Tensor<T>> = parts.iter().map(|p| self.value(*p).into_owned()).collect();
        let rows = values.first().map_or(0, |v| v.rows_cols().0);
        assert!(
            values.iter().all(|v| v.rows_cols().0 == rows),
            "concat: parts have different numbers of rows"
        );
        let width: usize = values.iter().map(|v| v.rows_cols().1).sum();
        let mut data = Vec::with_capacity(rows * width);
        for r in 0..rows {
            for v in &values {
                data.extend_from_slice(v.row(r));
            }
        }
        let value = Tensor::new(data, &[rows, width]);
        self.push(value, Op::Concat(parts.to_vec()))
    }

    /// Scaled dot-product attention over one sequence: `q`, `k`, `v` are
    /// `[T, heads·d]`; head h attends with softmax(q_h·k_hᵀ/√d) (queries
    /// after their keys masked out when `causal`) over v_h; the heads'
    /// outputs side by side. Built from the ops above, each with its backward.
    pub fn attention(&mut self, q: Var, k: Var, v: Var, heads: usize, causal: bool) -> Attention {
        let (_, width) = self.value(q).rows_cols();
        assert!(
            heads > 0 && width % heads == 0,
            "attention: {width} columns are not {heads} heads"
        );
        let d = width / heads;
        let scale = T::from_f64(1.0 / (d as f64).sqrt());
        let mut outputs = Vec::with_capacity(heads);
        let mut weights = Vec::with_capacity(heads);
        for h in 0..heads {
            let qh = self.columns(q, h * d, d);
            let kh = self.columns(k, h * d, d);
            let vh = self.columns(v, h * d, d);
            let kt = self.transpose(kh);
            let scores = self.matmul(qh, kt);
            let mut scores = self.scale(scores, scale);
            if causal {
                scores = self.causal_mask(scores);
            }
            let p = self.softmax(scores);
            weights.push(p);
            outputs.push(self.matmul(p, vh));
        }
        let output = if heads == 1 {
            outputs[0]
        } else {
            self.concat(&outputs)
        };
        Attention { output, weights }
    }
}
