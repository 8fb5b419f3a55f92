//! The layers' local derivatives, written out: how a layer node's gradient
//! reaches its inputs (the ops of `layers.rs`).

use super::{Graph, PlantedBug};
use crate::autograd::Var;
use crate::autograd::layer_math::{self as lm, normalise_backward};
use crate::autograd::op::Op;
use crate::autograd::tensor::{Real, Tensor};
use crate::kernels::gelu_derivative;

/// Where a contribution goes: `give(input, gradient)`.
pub(super) type Give<'a, T> = dyn FnMut(Var, Tensor<T>) + 'a;

impl<T: Real> Graph<T> {
    /// Applies a layer node's local derivative.
    pub(super) fn propagate_layer(&self, v: Var, g: &Tensor<T>, give: &mut Give<'_, T>) {
        let value = |x: Var| self.value(x);
        match &self.nodes[v.0].op {
            Op::Gelu(a) => give(
                *a,
                g.zip_map(&value(*a), |g, x| {
                    g * T::from_f64(gelu_derivative(x.to_f64()))
                }),
            ),
            Op::Dropout { input, mask } => give(*input, g.zip_map(mask, |g, m| g * m)),
            // The straight-through estimator, clipped: ∂L/∂x = ∂L/∂x̂ inside
            // the clip range, 0 outside.
            Op::FakeQuantise { input, inside } => {
                give(*input, g.zip_map(inside, |g, m| g * m));
            }
            Op::LayerNorm {
                input,
                gamma,
                beta,
                xhat,
                inv_std,
            } => {
                let (rows, cols) = xhat.rows_cols();
                let gam = value(*gamma);
                let mut dx = Vec::with_capacity(g.numel());
                let keep_mean = self.planted_bug != Some(PlantedBug::LayerNormMissingMean);
                for (r, inv) in inv_std.iter().enumerate().take(rows) {
                    let ghat: Vec<T> = g
                        .row(r)
                        .iter()
                        .zip(&gam.data)
                        .map(|(g, w)| *g * *w)
                        .collect();
                    dx.extend(normalise_backward(
                        &ghat,
                        xhat.row(r),
                        *inv,
                        (keep_mean, true),
                    ));
                }
                give(*input, Tensor::new(dx, &[rows, cols]));
                give(*gamma, g.zip_map(xhat, |g, x| g * x).sum_rows());
                give(*beta, g.sum_rows());
            }
            Op::BatchNorm {
                input,
                gamma,
                beta,
                channels,
                training,
                xhat,
                inv_std,
            } => {
                let (channels, spatial) =
                    (*channels, g.numel() / g.rows_cols().0.max(1) / channels);
                let gam = value(*gamma);
                let constants =
                    !*training || self.planted_bug == Some(PlantedBug::BatchNormStatsAsConstants);
                let layout = (channels, spatial);
                let mut dx = vec![T::ZERO; g.numel()];
                let mut dgamma = vec![T::ZERO; channels];
                let mut dbeta = vec![T::ZERO; channels];
                lm::channel_sums_into(&g.data, layout, &mut dbeta);
                lm::channel_dots_into(&g.data, &xhat.data, layout, &mut dgamma);
                let keep = (!constants, !constants);
                lm::batch_norm_grad_input_into(
                    &g.data, &xhat.data, layout, &gam.data, inv_std, keep, &mut dx,
                );
                give(*input, Tensor::new(dx, &g.shape));
                give(*gamma, Tensor::new(dgamma, &value(*gamma).shape));
                give(*beta, Tensor::new(dbeta, &value(*beta).shape));
            }
            Op::Conv2d {
                input,
                weight,
                bias,
                geometry,
            } => {
                // Per image, Y = W·cols: dW += G·colsᵀ, dcols = Wᵀ·G, and
                // dcols goes back onto the image through col2im.
                let (x, w) = (value(*input), value(*weight));
                let mut dx = vec![T::ZERO; x.numel()];
                let mut dw = Tensor::zeros(&w.shape);
                let mut db = vec![T::ZERO; geometry.out_channels];
                lm::conv2d_grad_weight_into(geometry, &g.data, &x.data, &mut dw.data);
                lm::conv2d_grad_input_into(geometry, &g.data, &w.data, &mut dx);
                if bias.is_some() {
                    lm::conv2d_grad_bias_into(geometry, &g.data, &mut db);
                }
                give(*input, Tensor::new(dx, &x.shape));
                give(*weight, dw);
                if let Some(b) = bias {
                    give(*b, Tensor::new(db, &value(*b).shape));
                }
            }
            Op::MaxPool {
                input,
                geometry,
                argmax,
            } => {
                let x = value(*input);
                let mut dx = vec![T::ZERO; x.numel()];
                if self.planted_bug == Some(PlantedBug::MaxPoolToEveryInput) {
                    let (out_len, in_len) = (geometry.output_len(), geometry.input_len());
                    for (o, gv) in g.data.iter().enumerate() {
                        let base = (o / out_len) * in_len;
                        for i in geometry.window(o % out_len) {
                            dx[base + i] += *gv;
                        }
                    }
                } else {
                    lm::max_pool_grad_into(&g.data, argmax.iter().copied(), &mut dx);
                }
                give(*input, Tensor::new(dx, &x.shape));
            }
            Op::AvgPool { input, geometry } => {
                let x = value(*input);
                let mut dx = vec![T::ZERO; x.numel()];
                let area = T::from_f64((geometry.kernel * geometry.kernel) as f64);
                let (out_len, in_len) = (geometry.output_len(), geometry.input_len());
                for (o, gv) in g.data.iter().enumerate() {
                    let base = (o / out_len) * in_len;
                    for i in geometry.window(o % out_len) {
                        dx[base + i] += *gv / area;
                    }
                }
                give(*input, Tensor::new(dx, &x.shape));
            }
            Op::Transpose(a) => {
                let (rows, cols) = g.rows_cols();
                let mut data = vec![T::ZERO; g.numel()];
                for r in 0..rows {
                    for c in 0..cols {
                        data[c * rows + r] = g.data[r * cols + c];
                    }
                }
                give(*a, Tensor::new(data, &[cols, rows]));
            }
            Op::CausalMask(a) => {
                // Masked entries are constants: no gradient reaches them.
                let (_, cols) = g.rows_cols();
                let mut d = g.clone();
                for (i, v) in d.data.iter_mut().enumerate() {
                    if i % cols > i / cols {
                        *v = T::ZERO;
                    }
                }
                give(*a, d);
            }
            Op::Embedding { table, ids } => {
                let t = value(*table);
                let (_, dim) = t.rows_cols();
                let mut d = Tensor::zeros(&t.shape);
                for (r, id) in ids.iter().enumerate() {
                    for c in 0..dim {
                        d.data[id * dim + c] += g.data[r * dim + c];
                    }
                }
                give(*table, d);
            }
            Op::Columns { input, start } => {
                let x = value(*input);
                let (rows, cols) = x.rows_cols();
                let (_, width) = g.rows_cols();
                let mut d = Tensor::zeros(&[rows, cols]);
                for r in 0..rows {
                    d.data[r * cols + start..r * cols + start + width].copy_from_slice(g.row(r));
                }
                give(*input, d);
            }
            Op::Concat(parts) => {
                let (rows, cols) = g.rows_cols();
                let mut at = 0;
                for p in parts {
                    let width = self.shape(*p).last().copied().unwrap_or(1);
                    let mut data = Vec::with_capacity(rows * width);
                    for r in 0..rows {
                        data.extend_from_slice(&g.data[r * cols + at..r * cols + at + width]);
                    }
                    give(*p, Tensor::new(data, &[rows, width]));
                    at += width;
                }
            }
            // The core ops' rules are in backward.rs.
            _ => {}
        }
    }
}
