//! Tensors: row-major data and a shape (rank 0, 1 or 2), generic over f32 and f64.

use std::fmt::Debug;
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// The number types the engine computes in: f32 for training, f64 for
/// gradient checks.
/// The largest |a − b| over two slices, pair by pair (0 when empty); a
/// NaN anywhere makes it NaN, so a broken value never reads as a match.
pub fn max_abs_diff<T: Real>(a: &[T], b: &[T]) -> T {
    a.iter().zip(b).fold(T::ZERO, |worst, (&x, &y)| {
        let d = if x > y { x - y } else { y - x };
        if worst.to_f64().is_nan() || (d <= worst) {
            worst
        } else {
            d
        }
    })
}

pub trait Real:
    Copy
    + Default
    + PartialOrd
    + Debug
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
{
    const ZERO: Self;
    const ONE: Self;
    const NAME: &'static str;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn tanh(self) -> Self;
    fn sqrt(self) -> Self;
    fn is_finite(self) -> bool;
    fn max(self, other: Self) -> Self {
        if self >= other { self } else { other }
    }
    /// `xs` as f32 values when `Self` is f32 (for packing's fast path).
    fn as_f32s(xs: &[Self]) -> Option<&[f32]> {
        let _ = xs;
        None
    }
    /// `xs` as f32 values to write, when `Self` is f32.
    fn as_f32s_mut(xs: &mut [Self]) -> Option<&mut [f32]> {
        let _ = xs;
        None
    }
    /// f32 values as `Self`.
    fn from_f32s(xs: Vec<f32>) -> Vec<Self> {
        xs.into_iter()
            .map(|x| Self::from_f64(f64::from(x)))
            .collect()
    }
    /// `c ← a·b + beta·c` where `a` is m×k read with strides (`rsa`, `csa`),
    /// `b` is k×n read with (`rsb`, `csb`), and `c` is m×n, row-major, `n` wide.
    #[allow(clippy::too_many_arguments)]
    fn gemm_strided(
        m: usize,
        k: usize,
        n: usize,
        a: &[Self],
        a_strides: (usize, usize),
        b: &[Self],
        b_strides: (usize, usize),
        beta: Self,
        c: &mut [Self],
    );
}

macro_rules! impl_real {
    ($t:ty, $name:literal, $gemm:path $(, $extra:item)*) => {
        impl Real for $t {
            $($extra)*
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NAME: &'static str = $name;
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            fn gemm_strided(
                m: usize,
                k: usize,
                n: usize,
                a: &[Self],
                (rsa, csa): (usize, usize),
                b: &[Self],
                (rsb, csb): (usize, usize),
                beta: Self,
                c: &mut [Self],
            ) {
                if m == 0 || n == 0 {
                    return;
                }
                let last = |rows: usize, cols: usize, rs: usize, cs: usize| {
                    (rows - 1) * rs + cols.saturating_sub(1) * cs
                };
                assert!(
                    (k == 0 || (last(m, k, rsa, csa) < a.len() && last(k, n, rsb, csb) < b.len()))
                        && c.len() >= m * n,
                    "gemm: slices too short for {m}×{k}·{k}×{n}"
                );
                // SAFETY: every element the strides reach lies inside its slice
                // (checked above); `c` is a distinct `&mut`, so it aliases neither input.
                #[allow(unsafe_code)]
                unsafe {
                    $gemm(
                        m,
                        k,
                        n,
                        1.0,
                        a.as_ptr(),
                        rsa as isize,
                        csa as isize,
                        b.as_ptr(),
                        rsb as isize,
                        csb as isize,
                        beta,
                        c.as_mut_ptr(),
                        n as isize,
                        1,
                    );
                }
            }
        }
    };
}

impl_real!(
    f32,
    "f32",
    matrixmultiply::sgemm,
    fn as_f32s(xs: &[f32]) -> Option<&[f32]> {
        Some(xs)
    },
    fn as_f32s_mut(xs: &mut [f32]) -> Option<&mut [f32]> {
        Some(xs)
    },
    fn from_f32s(xs: Vec<f32>) -> Vec<f32> {
        xs
    }
);
impl_real!(f64, "f64", matrixmultiply::dgemm);

/// A tensor of rank 0 (a scalar, shape `[]`), 1 (`[n]`) or 2 (`[rows, cols]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor<T> {
    pub data: Vec<T>,
    pub shape: Vec<usize>,
}

impl<T: Real> Tensor<T> {
    /// # Panics
    /// If `data` does not have as many elements as the shape says.
    pub fn new(data: Vec<T>, shape: &[usize]) -> Self {
        let numel: usize = shape.iter().product();
        assert_eq!(
            data.len(),
            numel,
            "tensor data of length {} does not fit shape {shape:?}",
            data.len()
        );
        assert!(
            shape.len() <= 2,
            "tensors here have rank 0, 1 or 2, not {shape:?}"
        );
        Self {
            data,
            shape: shape.to_vec(),
        }
    }

    pub fn scalar(x: T) -> Self {
        Self {
            data: vec![x],
            shape: Vec::new(),
        }
    }

    pub fn zeros(shape: &[usize]) -> Self {
        Self::new(vec![T::ZERO; shape.iter().product()], shape)
    }

    /// Values drawn uniformly in ±`limit` by `rng` (in f64, then rounded
    /// to `T`), in order: how every layer's weights are initialised.
    pub fn uniform(rng: &mut impl rand::Rng, shape: &[usize], limit: f64) -> Self {
        use rand::RngExt as _;
        let n = shape.iter().product();
        let data = (0..n)
            .map(|_| T::from_f64(rng.random_range(-limit..limit)))
            .collect();
        Self::new(data, shape)
    }

    pub fn full(shape: &[usize], value: T) -> Self {
        Self::new(vec![value; shape.iter().product()], shape)
    }

    pub fn from_f64(data: &[f64], shape: &[usize]) -> Self {
        Self::new(data.iter().map(|x| T::from_f64(*x)).collect(), shape)
    }

    pub fn numel(&self) -> usize {
        self.data.len()
    }

    /// Rows and columns, treating a vector as one row and a scalar as 1×1.
    pub fn rows_cols(&self) -> (usize, usize) {
        match self.shape.as_slice() {
            [] => (1, 1),
            [n] => (1, *n),
            [r, c] => (*r, *c),
            _ => unreachable!("rank is checked at construction"),
        }
    }

    pub fn item(&self) -> T {
        self.data[0]
    }

    pub fn to_f64(&self) -> Tensor<f64> {
        Tensor {
            data: self.data.iter().map(|x| x.to_f64()).collect(),
            shape: self.shape.clone(),
        }
    }

    pub fn map(&self, f: impl Fn(T) -> T) -> Self {
        Self {
            data: self.data.iter().map(|x| f(*x)).collect(),
            shape: self.shape.clone(),
        }
    }

    pub fn zip_map(&self, other: &Self, f: impl Fn(T, T) -> T) -> Self {
        debug_assert_eq!(self.shape, other.shape);
        Self {
            data: self
                .data
                .iter()
                .zip(&other.data)
                .map(|(a, b)| f(*a, *b))
                .collect(),
            shape: self.shape.clone(),
        }
    }

    pub fn add_assign(&mut self, other: &Self) {
        debug_assert_eq!(self.data.len(), other.data.len());
        for (a, b) in self.data.iter_mut().zip(&other.data) {
            *a += *b;
        }
    }

    pub fn sum(&self) -> T {
        self.data.iter().fold(T::ZERO, |acc, x| acc + *x)
    }

    /// The sum over rows: `[m, n] → [n]` — how a broadcast bias collects its gradient.
    pub fn sum_rows(&self) -> Self {
        let (_, cols) = self.rows_cols();
        let mut out = vec![T::ZERO; cols];
        super::pointwise::sum_rows_into(&self.data, &mut out);
        Self {
            data: out,
            shape: vec![cols],
        }
    }

    /// Row `r` of a matrix.
    pub fn row(&self, r: usize) -> &[T] {
        let (_, cols) = self.rows_cols();
        &self.data[r * cols..(r + 1) * cols]
    }

    /// The index of the largest value in each row.
    pub fn argmax_rows(&self) -> Vec<usize> {
        let (rows, _) = self.rows_cols();
        (0..rows)
            .map(|r| {
                let row = self.row(r);
                let mut best = 0;
                for (i, x) in row.iter().enumerate() {
                    if *x > row[best] {
                        best = i;
                    }
                }
                best
            })
            .collect()
    }

    pub fn all_finite(&self) -> bool {
        // A fold without early exit: it vectorises, and NaN/inf are rare.
        self.data.iter().fold(true, |ok, x| ok & x.is_finite())
    }
}

/// `a·b` for matrices (`a` and/or `b` read transposed).
pub fn matmul<T: Real>(a: &Tensor<T>, a_t: bool, b: &Tensor<T>, b_t: bool) -> Tensor<T> {
    let (ar, ac) = a.rows_cols();
    let (br, bc) = b.rows_cols();
    let (m, k) = if a_t { (ac, ar) } else { (ar, ac) };
    let (k2, n) = if b_t { (bc, br) } else { (br, bc) };
    assert_eq!(
        k,
        k2,
        "matmul: inner dimensions differ ({:?}{} · {:?}{})",
        a.shape,
        if a_t { "ᵀ" } else { "" },
        b.shape,
        if b_t { "ᵀ" } else { "" }
    );
    let a_strides = if a_t { (1, m) } else { (k, 1) };
    let b_strides = if b_t { (1, k) } else { (n, 1) };
    let mut out = vec![T::ZERO; m * n];
    gemm_split(m, k, n, &a.data, a_strides, &b.data, b_strides, &mut out);
    Tensor {
        data: out,
        shape: vec![m, n],
    }
}

/// `x·w` for `rows` rows of `x` stored contiguously (no tensor, no copy).
pub fn matmul_rows<T: Real>(x: &[T], rows: usize, w: &Tensor<T>) -> Tensor<T> {
    let (k, n) = w.rows_cols();
    assert_eq!(
        x.len(),
        rows * k,
        "matmul_rows: {} values are not {rows} rows of {k}",
        x.len()
    );
    let mut out = vec![T::ZERO; rows * n];
    gemm_split(rows, k, n, x, (k, 1), &w.data, (n, 1), &mut out);
    Tensor {
        data: out,
        shape: vec![rows, n],
    }
}

/// `c = a·b` (one core: on these small products, measured on 2 cores, splitting
/// them across threads cost more in wake-ups than it saved).
#[allow(clippy::too_many_arguments)]
fn gemm_split<T: Real>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    a_strides: (usize, usize),
    b: &[T],
    b_strides: (usize, usize),
    c: &mut [T],
) {
    T::gemm_strided(m, k, n, a, a_strides, b, b_strides, T::ZERO, c);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_with_transposes_matches_the_definition() {
        let a = Tensor::<f64>::from_f64(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let b = Tensor::<f64>::from_f64(&[1.0, 0.0, -1.0, 2.0, 0.5, 1.0], &[3, 2]);
        let c = matmul(&a, false, &b, false);
        assert_eq!(
            c.data,
            vec![1.0 - 2.0 + 1.5, 4.0 + 3.0, 4.0 - 5.0 + 3.0, 10.0 + 6.0]
        );
        // (aᵀ)ᵀ·b through the transposed reads.
        let at = Tensor::<f64>::from_f64(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0], &[3, 2]);
        assert_eq!(matmul(&at, true, &b, false).data, c.data);
        let bt = Tensor::<f64>::from_f64(&[1.0, -1.0, 0.5, 0.0, 2.0, 1.0], &[2, 3]);
        assert_eq!(matmul(&a, false, &bt, true).data, c.data);
    }

    #[test]
    fn sum_rows_and_argmax() {
        let t = Tensor::<f32>::new(vec![1.0, 5.0, 2.0, 7.0, 0.0, -1.0], &[2, 3]);
        assert_eq!(t.sum_rows().data, vec![8.0, 5.0, 1.0]);
        assert_eq!(t.argmax_rows(), vec![1, 0]);
    }

    #[test]
    fn the_largest_difference_keeps_a_nan() {
        assert_eq!(max_abs_diff::<f32>(&[], &[]), 0.0);
        assert_eq!(max_abs_diff(&[1.0f64, -2.0, 3.0], &[1.5, 2.0, 3.0]), 4.0);
        // f32::max would pass over the NaN and report 0.5.
        assert!(max_abs_diff(&[1.0f32, f32::NAN, 3.0], &[1.5, 0.0, 3.0]).is_nan());
        assert!(max_abs_diff(&[f32::NAN, 1.0], &[0.0, 9.0]).is_nan());
    }
}
