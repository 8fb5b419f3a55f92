//! The layers' math on plain slices, said once: convolution through im2col
//! and its two gradients, BatchNorm's statistics, normalisation, affine map
//! and gradients, max pooling and its gradient. The tape
//! ([`super::Graph`]) runs them on its tensors and the executor of a
//! captured graph ([`crate::compile::replay`]) on its arena — the same
//! code, so a replayed CNN step equals the eager one bit for bit (as
//! [`super::pointwise`] does for the elementwise ops).

use super::conv::{Conv2d, Pool2d};
use super::tensor::Real;
use crate::kernels::LAYERNORM_EPS;

/// The ε added to a variance before its square root (LayerNorm's and
/// BatchNorm's, as the GPU LayerNorm kernel's).
pub fn eps<T: Real>() -> T {
    T::from_f64(f64::from(LAYERNORM_EPS))
}

/// Mean, 1/√(var + ε) and the biased variance of `values`.
pub fn moments<T: Real>(values: impl Iterator<Item = T> + Clone, n: usize) -> (T, T, T) {
    let count = T::from_f64(n as f64);
    let mean = values.clone().fold(T::ZERO, |s, x| s + x) / count;
    let var = values.fold(T::ZERO, |s, x| s + (x - mean) * (x - mean)) / count;
    (mean, T::ONE / (var + eps()).sqrt(), var)
}

/// Where channel `c`'s values are in `[rows, channels·S]`: each row's run
/// `c·S .. (c + 1)·S` (BatchNorm's group, forward and backward).
pub fn channel_indices(
    rows: usize,
    channels: usize,
    spatial: usize,
    c: usize,
) -> impl Iterator<Item = usize> + Clone {
    (0..rows).flat_map(move |r| {
        let start = (r * channels + c) * spatial;
        start..start + spatial
    })
}

/// The rows of `x` when each holds `channels·spatial` values.
fn rows_of(len: usize, channels: usize, spatial: usize) -> usize {
    len / (channels * spatial).max(1)
}

/// The normalisation's backward for one group of values (a LayerNorm row, a
/// BatchNorm channel): with ĝ = g·γ, dx = (1/σ)·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)).
/// The two means are how the group's mean and variance depend on each of
/// its inputs; `keep_mean` and `keep_variance` drop them (the planted bugs,
/// and evaluation mode, where the statistics are constants).
pub fn normalise_backward<T: Real>(
    ghat: &[T],
    xhat: &[T],
    inv_std: T,
    (keep_mean, keep_variance): (bool, bool),
) -> Vec<T> {
    let n = T::from_f64(ghat.len() as f64);
    let mean_g = if keep_mean {
        ghat.iter().fold(T::ZERO, |s, g| s + *g) / n
    } else {
        T::ZERO
    };
    let mean_gx = if keep_variance {
        ghat.iter().zip(xhat).fold(T::ZERO, |s, (g, x)| s + *g * *x) / n
    } else {
        T::ZERO
    };
    ghat.iter()
        .zip(xhat)
        .map(|(g, x)| inv_std * (*g - mean_g - *x * mean_gx))
        .collect()
}

/// One convolution of each image (rows of C·H·W in `x`) by `w`
/// (`[OC, C·KH·KW]`), plus a bias per output channel: im2col, then one GEMM
/// per image, into `out` (rows of OC·OH·OW).
pub fn conv2d_into<T: Real>(
    geometry: &Conv2d,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    out: &mut [T],
) {
    let (oc, patch) = (geometry.out_channels, geometry.patch());
    let plane = geometry.plane();
    let rows = x.chunks_exact(geometry.input_len().max(1));
    for (image, y) in rows.zip(out.chunks_exact_mut(geometry.output_len().max(1))) {
        let cols = geometry.im2col(image);
        T::gemm_strided(
            oc,
            patch,
            plane,
            w,
            (patch, 1),
            &cols,
            (plane, 1),
            T::ZERO,
            y,
        );
        if let Some(b) = bias {
            for (i, v) in y.iter_mut().enumerate() {
                *v += b[i / plane];
            }
        }
    }
}

/// The filters' gradient: per image, G·colsᵀ, summed over the images in
/// order into `dw`.
pub fn conv2d_grad_weight_into<T: Real>(geometry: &Conv2d, g: &[T], x: &[T], dw: &mut [T]) {
    let (oc, patch) = (geometry.out_channels, geometry.patch());
    let plane = geometry.plane();
    dw.fill(T::ZERO);
    let mut one = vec![T::ZERO; dw.len()];
    let images = x.chunks_exact(geometry.input_len().max(1));
    for (image, gr) in images.zip(g.chunks_exact(geometry.output_len().max(1))) {
        let cols = geometry.im2col(image);
        T::gemm_strided(
            oc,
            plane,
            patch,
            gr,
            (plane, 1),
            &cols,
            (1, plane),
            T::ZERO,
            &mut one,
        );
        for (d, v) in dw.iter_mut().zip(&one) {
            *d += *v;
        }
    }
}

/// The images' gradient: per image, Wᵀ·G, put back onto the image through
/// col2im.
pub fn conv2d_grad_input_into<T: Real>(geometry: &Conv2d, g: &[T], w: &[T], dx: &mut [T]) {
    let (oc, patch) = (geometry.out_channels, geometry.patch());
    let plane = geometry.plane();
    dx.fill(T::ZERO);
    let mut dcols = vec![T::ZERO; patch * plane];
    let images = dx.chunks_exact_mut(geometry.input_len().max(1));
    for (image, gr) in images.zip(g.chunks_exact(geometry.output_len().max(1))) {
        T::gemm_strided(
            patch,
            oc,
            plane,
            w,
            (1, patch),
            gr,
            (plane, 1),
            T::ZERO,
            &mut dcols,
        );
        geometry.col2im_add(&dcols, image);
    }
}

/// The bias's gradient: every image's values summed per output channel.
pub fn conv2d_grad_bias_into<T: Real>(geometry: &Conv2d, g: &[T], db: &mut [T]) {
    let plane = geometry.plane();
    db.fill(T::ZERO);
    for gr in g.chunks_exact(geometry.output_len().max(1)) {
        for (i, v) in gr.iter().enumerate() {
            db[i / plane] += *v;
        }
    }
}

/// Each channel's mean and biased variance over the batch and its pixels
/// (`x`: rows of `channels·spatial`).
pub fn channel_moments<T: Real>(x: &[T], channels: usize, spatial: usize) -> (Vec<T>, Vec<T>) {
    let rows = rows_of(x.len(), channels, spatial);
    (0..channels)
        .map(|c| {
            let values = channel_indices(rows, channels, spatial, c).map(|i| x[i]);
            let (mean, _, var) = moments(values, rows * spatial);
            (mean, var)
        })
        .unzip()
}

/// 1/√(var + ε) of each variance.
pub fn inverse_std<T: Real>(var: &[T]) -> Vec<T> {
    var.iter().map(|v| T::ONE / (*v + eps()).sqrt()).collect()
}

/// The channel of element `i` in rows of `channels·spatial`.
fn channel_of(i: usize, channels: usize, spatial: usize) -> usize {
    (i % (channels * spatial).max(1)) / spatial.max(1)
}

/// x̂ = (x − mean_c)·(1/σ_c), per element.
pub fn normalise_into<T: Real>(
    x: &[T],
    (channels, spatial): (usize, usize),
    mean: &[T],
    inv_std: &[T],
    xhat: &mut [T],
) {
    for (i, (h, v)) in xhat.iter_mut().zip(x).enumerate() {
        let c = channel_of(i, channels, spatial);
        *h = (*v - mean[c]) * inv_std[c];
    }
}

/// y = γ_c·x̂ + β_c, per element.
pub fn channel_affine_into<T: Real>(
    xhat: &[T],
    (channels, spatial): (usize, usize),
    gamma: &[T],
    beta: &[T],
    y: &mut [T],
) {
    for (i, (o, h)) in y.iter_mut().zip(xhat).enumerate() {
        let c = channel_of(i, channels, spatial);
        *o = gamma[c] * *h + beta[c];
    }
}

/// Each channel's sum of `g` (β's gradient), in the channel's index order.
pub fn channel_sums_into<T: Real>(g: &[T], (channels, spatial): (usize, usize), out: &mut [T]) {
    let rows = rows_of(g.len(), channels, spatial);
    for (c, o) in out.iter_mut().enumerate() {
        *o = channel_indices(rows, channels, spatial, c).fold(T::ZERO, |s, i| s + g[i]);
    }
}

/// Each channel's Σ g·x̂ (γ's gradient).
pub fn channel_dots_into<T: Real>(
    g: &[T],
    xhat: &[T],
    (channels, spatial): (usize, usize),
    out: &mut [T],
) {
    let rows = rows_of(g.len(), channels, spatial);
    for (c, o) in out.iter_mut().enumerate() {
        *o = channel_indices(rows, channels, spatial, c).fold(T::ZERO, |s, i| s + g[i] * xhat[i]);
    }
}

/// BatchNorm's input gradient, per channel [`normalise_backward`] of
/// ĝ = g·γ_c; `keep` as there.
pub fn batch_norm_grad_input_into<T: Real>(
    g: &[T],
    xhat: &[T],
    (channels, spatial): (usize, usize),
    gamma: &[T],
    inv_std: &[T],
    keep: (bool, bool),
    dx: &mut [T],
) {
    let rows = rows_of(g.len(), channels, spatial);
    for c in 0..channels {
        let indices: Vec<usize> = channel_indices(rows, channels, spatial, c).collect();
        let ghat: Vec<T> = indices.iter().map(|i| g[*i] * gamma[c]).collect();
        let xc: Vec<T> = indices.iter().map(|i| xhat[*i]).collect();
        for (i, d) in indices
            .iter()
            .zip(normalise_backward(&ghat, &xc, inv_std[c], keep))
        {
            dx[*i] = d;
        }
    }
}

/// Output `o`'s window's largest input in `image` (the first on a tie).
pub fn window_argmax<T: Real>(geometry: &Pool2d, image: &[T], o: usize) -> usize {
    geometry
        .window(o)
        .reduce(|a, b| if image[b] > image[a] { b } else { a })
        .unwrap_or(0)
}

/// The maximum of each window of each image into `out`; each winner's
/// index in `x` pushed onto `argmax` when given.
pub fn max_pool_into<T: Real>(
    geometry: &Pool2d,
    x: &[T],
    out: &mut [T],
    mut argmax: Option<&mut Vec<usize>>,
) {
    let (len, out_len) = (geometry.input_len().max(1), geometry.output_len().max(1));
    for (r, (image, y)) in x
        .chunks_exact(len)
        .zip(out.chunks_exact_mut(out_len))
        .enumerate()
    {
        for (o, v) in y.iter_mut().enumerate() {
            let best = window_argmax(geometry, image, o);
            *v = image[best];
            if let Some(a) = argmax.as_deref_mut() {
                a.push(r * len + best);
            }
        }
    }
}

/// Max pooling's gradient: each output's gradient added to its window's
/// winner (`winners`, indices into `dx`, one per output, in order).
pub fn max_pool_grad_into<T: Real>(g: &[T], winners: impl Iterator<Item = usize>, dx: &mut [T]) {
    dx.fill(T::ZERO);
    for (at, gv) in winners.zip(g) {
        dx[at] += *gv;
    }
}

/// The winners of [`max_pool_into`] found again from the input, in order
/// (what a captured backward reads instead of stored indices: the arena
/// holds f32 only, as XLA's select-and-scatter re-selects from the input).
pub fn window_winners<'a, T: Real>(
    geometry: &'a Pool2d,
    x: &'a [T],
) -> impl Iterator<Item = usize> + 'a {
    let (len, out_len) = (geometry.input_len().max(1), geometry.output_len());
    x.chunks_exact(len).enumerate().flat_map(move |(r, image)| {
        (0..out_len).map(move |o| r * len + window_argmax(geometry, image, o))
    })
}
