//! Each op's local derivative, written out: how a node's gradient reaches
//! its inputs (the rules [`Graph`]'s backward pass applies, one per op).

use super::{Graph, PlantedBug};
use crate::autograd::Var;
use crate::autograd::op::Op;
use crate::autograd::pointwise;
use crate::autograd::tensor::{Real, Tensor, matmul};

impl<T: Real> Graph<T> {
    /// Applies one node's local derivative: adds `g`'s contribution to its inputs.
    pub(super) fn propagate(
        &self,
        v: Var,
        g: &Tensor<T>,
        pending: &mut [Option<Tensor<T>>],
        needs: &[bool],
        in_flight: &mut usize,
    ) {
        let node = &self.nodes[v.0];
        let value = |x: Var| self.value(x);
        let shape = |x: Var| self.shape(x);
        let mut give = |to: Var, mut contribution: Tensor<T>| {
            if !needs[to.0] {
                return;
            }
            if let Some(hook) = &self.grad_hook {
                hook(to, &mut contribution.data);
            }
            match &mut pending[to.0] {
                Some(acc) => acc.add_assign(&contribution),
                slot @ None => {
                    *in_flight += contribution.numel();
                    *slot = Some(contribution);
                }
            }
        };
        match &node.op {
            Op::Leaf { .. } => {}
            Op::Add(a, b) => {
                give(*a, g.clone());
                give(*b, self.reduce_to(g.clone(), shape(*b)));
            }
            Op::Sub(a, b) => {
                give(*a, g.clone());
                give(*b, self.reduce_to(g.map(|x| -x), shape(*b)));
            }
            Op::Mul(a, b) => {
                // d(a⊙b) = g⊙b for a, and g⊙a summed back to b's shape for b.
                let (av, bv) = (value(*a), value(*b));
                let b_full = self.expand_like(&bv, &av);
                give(*a, g.zip_map(&b_full, |x, y| x * y));
                give(*b, self.reduce_to(g.zip_map(&av, |x, y| x * y), &bv.shape));
            }
            Op::MatMul(a, b) => {
                // Y = A·B: dA = G·Bᵀ, dB = Aᵀ·G.
                if needs[a.0] {
                    give(*a, matmul(g, false, &value(*b), true));
                }
                if needs[b.0] {
                    give(*b, matmul(&value(*a), true, g, false));
                }
            }
            Op::Relu(a) => give(*a, g.zip_map(&value(v), pointwise::relu_grad)),
            Op::Tanh(a) => give(*a, g.zip_map(&value(v), pointwise::tanh_grad)),
            Op::Sigmoid(a) => give(*a, g.zip_map(&value(v), pointwise::sigmoid_grad)),
            Op::Exp(a) => give(*a, g.zip_map(&value(v), |g, y| g * y)),
            Op::Log(a) => give(*a, g.zip_map(&value(*a), |g, x| g / x)),
            Op::Scale(a, s) => give(*a, g.map(|g| g * *s)),
            Op::Sum(a) => give(*a, Tensor::full(shape(*a), g.item())),
            Op::Mean(a) => {
                let n = T::from_f64(shape(*a).iter().product::<usize>() as f64);
                give(*a, Tensor::full(shape(*a), g.item() / n));
            }
            Op::Softmax(a) => {
                // dz_k = p_k (g_k − Σ_j p_j g_j), row by row.
                let p = value(v);
                let (rows, cols) = p.rows_cols();
                let mut out = vec![T::ZERO; p.numel()];
                for r in 0..rows {
                    let (pr, gr) = (p.row(r), g.row(r));
                    let dot = if self.planted_bug == Some(PlantedBug::SoftmaxMissingCoupling) {
                        T::ZERO
                    } else {
                        pr.iter().zip(gr).fold(T::ZERO, |s, (p, g)| s + *p * *g)
                    };
                    for c in 0..cols {
                        out[r * cols + c] = pr[c] * (gr[c] - dot);
                    }
                }
                give(
                    *a,
                    Tensor {
                        data: out,
                        shape: p.shape.clone(),
                    },
                );
            }
            Op::LogSoftmax(a) => {
                // y = log p: dz_k = g_k − p_k Σ_j g_j.
                let y = value(v);
                let (rows, cols) = y.rows_cols();
                let mut out = vec![T::ZERO; y.numel()];
                for r in 0..rows {
                    let sum_g = g.row(r).iter().fold(T::ZERO, |s, x| s + *x);
                    for c in 0..cols {
                        out[r * cols + c] = g.row(r)[c] - y.row(r)[c].exp() * sum_g;
                    }
                }
                give(
                    *a,
                    Tensor {
                        data: out,
                        shape: y.shape.clone(),
                    },
                );
            }
            Op::SoftmaxCrossEntropy {
                logits,
                labels,
                probs,
            } => {
                // ∂L/∂z = (p − y)/batch: the Jacobian's coupling cancels against the one-hot.
                let (rows, cols) = probs.rows_cols();
                let divisor = if self.planted_bug == Some(PlantedBug::CrossEntropyNotAveraged) {
                    T::ONE
                } else {
                    T::from_f64(rows as f64)
                };
                let mut out = vec![T::ZERO; probs.numel()];
                pointwise::cross_entropy_grad_into(
                    &probs.data,
                    cols,
                    labels,
                    g.item() / divisor,
                    &mut out,
                );
                give(
                    *logits,
                    Tensor {
                        data: out,
                        shape: probs.shape.clone(),
                    },
                );
            }
            Op::Mse(a, b) => {
                let (av, bv) = (value(*a), value(*b));
                let n = T::from_f64(av.numel() as f64);
                let two = T::from_f64(2.0);
                let d = av.zip_map(&bv, |x, y| two * (x - y) * g.item() / n);
                give(*b, d.map(|x| -x));
                give(*a, d);
            }
            Op::Gelu(_)
            | Op::Dropout { .. }
            | Op::FakeQuantise { .. }
            | Op::LayerNorm { .. }
            | Op::BatchNorm { .. }
            | Op::Conv2d { .. }
            | Op::MaxPool { .. }
            | Op::AvgPool { .. }
            | Op::Transpose(_)
            | Op::CausalMask(_)
            | Op::Embedding { .. }
            | Op::Columns { .. }
            | Op::Concat(_) => self.propagate_layer(v, g, &mut give),
        }
    }

    /// Sums a gradient back down to a broadcast operand's shape.
    fn reduce_to(&self, g: Tensor<T>, shape: &[usize]) -> Tensor<T> {
        if g.shape == shape {
            return g;
        }
        let numel: usize = shape.iter().product();
        if numel == 1 {
            return Tensor {
                data: vec![g.sum()],
                shape: shape.to_vec(),
            };
        }
        // A row broadcast over the batch: its gradient is the sum over rows.
        let mut summed = if self.planted_bug == Some(PlantedBug::BiasNotSummedOverBatch) {
            let (_, cols) = g.rows_cols();
            Tensor {
                data: g.data[..cols].to_vec(),
                shape: vec![cols],
            }
        } else {
            g.sum_rows()
        };
        summed.shape = shape.to_vec();
        summed
    }

    /// `b` repeated to `a`'s shape (for the other side of a broadcast product).
    fn expand_like(&self, b: &Tensor<T>, a: &Tensor<T>) -> Tensor<T> {
        if b.shape == a.shape {
            return b.clone();
        }
        let (_, cols) = a.rows_cols();
        let data = (0..a.numel())
            .map(|i| {
                if b.numel() == 1 {
                    b.data[0]
                } else {
                    b.data[i % cols]
                }
            })
            .collect();
        Tensor {
            data,
            shape: a.shape.clone(),
        }
    }
}
