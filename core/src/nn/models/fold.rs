//! BatchNorm folded into the layer before it, for inference: in evaluation
//! BatchNorm is `γ·(z − μ)/√(σ² + ε) + β` per channel, an affine map, so it
//! can be merged into the conv's (or linear layer's) weights and bias:
//! `W′ = s·W`, `b′ = s·(b − μ) + β` with `s = γ/√(σ² + ε)` per output channel.

use crate::autograd::{Real, Tensor};

/// One BatchNorm's evaluation parameters, per channel.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchNormParams<T> {
    pub gamma: Vec<T>,
    pub beta: Vec<T>,
    pub running_mean: Vec<T>,
    pub running_var: Vec<T>,
}

impl<T: Real> BatchNormParams<T> {
    /// γ = 1, β = 0, mean 0 and variance 1: the identity before training.
    pub fn new(channels: usize) -> Self {
        Self {
            gamma: vec![T::ONE; channels],
            beta: vec![T::ZERO; channels],
            running_mean: vec![T::ZERO; channels],
            running_var: vec![T::ONE; channels],
        }
    }

    /// Each channel's scale s = γ/√(σ² + ε) and shift β − s·μ.
    pub fn scale_shift(&self) -> Vec<(T, T)> {
        let eps = T::from_f64(f64::from(crate::kernels::LAYERNORM_EPS));
        self.gamma
            .iter()
            .zip(&self.beta)
            .zip(self.running_mean.iter().zip(&self.running_var))
            .map(|((g, b), (m, v))| {
                let s = *g / (*v + eps).sqrt();
                (s, *b - s * *m)
            })
            .collect()
    }
}

/// A conv's `[OC, C·KH·KW]` weights and `[OC]` bias (zero when absent) with
/// the BatchNorm after it folded in.
pub fn fold_conv<T: Real>(
    weight: &Tensor<T>,
    bias: Option<&Tensor<T>>,
    bn: &BatchNormParams<T>,
) -> (Tensor<T>, Tensor<T>) {
    let (channels, patch) = weight.rows_cols();
    assert_eq!(
        bn.gamma.len(),
        channels,
        "fold_conv: BatchNorm has {} channels, the conv {channels}",
        bn.gamma.len()
    );
    let mut w = weight.clone();
    let mut b = Vec::with_capacity(channels);
    for (o, (s, shift)) in bn.scale_shift().into_iter().enumerate().take(channels) {
        for v in &mut w.data[o * patch..(o + 1) * patch] {
            *v *= s;
        }
        let old = bias.map_or(T::ZERO, |b| b.data[o]);
        b.push(s * old + shift);
    }
    (w, Tensor::new(b, &[channels]))
}

/// A linear layer's `[in, out]` weights and `[out]` bias with the
/// BatchNorm over its outputs folded in (each column scaled).
pub fn fold_linear<T: Real>(
    weight: &Tensor<T>,
    bias: &Tensor<T>,
    bn: &BatchNormParams<T>,
) -> (Tensor<T>, Tensor<T>) {
    let (_, outputs) = weight.rows_cols();
    let ss = bn.scale_shift();
    let w = Tensor::new(
        weight
            .data
            .iter()
            .enumerate()
            .map(|(i, v)| *v * ss[i % outputs].0)
            .collect(),
        &weight.shape,
    );
    let b = bias
        .data
        .iter()
        .zip(&ss)
        .map(|(b, (s, shift))| *s * *b + *shift)
        .collect();
    (w, Tensor::new(b, &[outputs]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::{Conv2d, Graph};

    fn seeded(n: usize, seed: u64) -> Vec<f64> {
        (0..n)
            .map(|i| ((i as f64 + 1.0) * (seed as f64 + 0.37)).sin())
            .collect()
    }

    #[test]
    fn a_folded_conv_equals_conv_then_batchnorm_in_evaluation() {
        let geometry = Conv2d {
            padding: 1,
            ..Conv2d::new(2, 3, (5, 4), 3)
        };
        let bn = BatchNormParams {
            gamma: vec![1.5, -0.7, 0.3],
            beta: vec![0.2, 0.0, -1.1],
            running_mean: vec![0.4, -0.3, 0.05],
            running_var: vec![2.0, 0.5, 1e-3],
        };
        let x = Tensor::new(
            seeded(2 * geometry.input_len(), 1),
            &[2, geometry.input_len()],
        );
        let w = Tensor::new(seeded(3 * geometry.patch(), 2), &[3, geometry.patch()]);
        let b = Tensor::new(vec![0.1, -0.2, 0.3], &[3]);
        let mut g = Graph::<f64>::new();
        let (xv, wv, bv) = (g.input(x.clone()), g.input(w.clone()), g.input(b.clone()));
        let z = g.conv2d(xv, wv, Some(bv), geometry);
        let (gamma, beta) = (
            g.input(Tensor::new(bn.gamma.clone(), &[3])),
            g.input(Tensor::new(bn.beta.clone(), &[3])),
        );
        let unfolded = g.batch_norm_eval(z, gamma, beta, 3, (&bn.running_mean, &bn.running_var));
        let (fw, fb) = fold_conv(&w, Some(&b), &bn);
        let (fwv, fbv) = (g.input(fw), g.input(fb));
        let folded = g.conv2d(xv, fwv, Some(fbv), geometry);
        let (a, f) = (g.value(unfolded), g.value(folded));
        let worst = crate::autograd::max_abs_diff(&a.data, &f.data);
        assert!(worst < 1e-12, "{worst}");
        // Without a bias, the folded bias is the shift alone.
        let (_, nb) = fold_conv(&w, None, &bn);
        assert_eq!(
            nb.data,
            bn.scale_shift().iter().map(|p| p.1).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_folded_linear_layer_equals_linear_then_batchnorm() {
        let bn = BatchNormParams {
            gamma: vec![0.9, 1.2],
            beta: vec![-0.4, 0.6],
            running_mean: vec![1.0, -2.0],
            running_var: vec![0.25, 4.0],
        };
        let x = Tensor::new(seeded(12, 3), &[4, 3]);
        let w = Tensor::new(seeded(6, 4), &[3, 2]);
        let b = Tensor::new(vec![0.5, -0.5], &[2]);
        let mut g = Graph::<f64>::new();
        let (xv, wv, bv) = (g.input(x), g.input(w.clone()), g.input(b.clone()));
        let z = g.matmul(xv, wv);
        let z = g.add(z, bv);
        let (gamma, beta) = (
            g.input(Tensor::new(bn.gamma.clone(), &[2])),
            g.input(Tensor::new(bn.beta.clone(), &[2])),
        );
        let unfolded = g.batch_norm_eval(z, gamma, beta, 2, (&bn.running_mean, &bn.running_var));
        let (fw, fb) = fold_linear(&w, &b, &bn);
        let (fwv, fbv) = (g.input(fw), g.input(fb));
        let folded = g.matmul(xv, fwv);
        let folded = g.add(folded, fbv);
        let (a, f) = (g.value(unfolded), g.value(folded));
        assert!(
            a.data
                .iter()
                .zip(&f.data)
                .all(|(a, f)| (a - f).abs() < 1e-12)
        );
    }
}
