//! The attention family's inputs (seeded, each a hard case) and its f64
//! reference, with a stated error bound for every output value of an f32
//! kernel.

use rand::{RngExt as _, SeedableRng as _, rngs::StdRng};

use super::{AttnError, AttnRung, AttnShape};

/// f32's unit roundoff, 2⁻²⁴.
const U: f64 = 1.0 / 16_777_216.0;

/// Q, K and V, each heads × seq × head_dim, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Qkv {
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
}

impl Qkv {
    /// Uniform in ±1.
    pub fn seeded(shape: &AttnShape, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let n = shape.values() as usize;
        let mut draw = |scale: f32| -> Vec<f32> {
            (0..n)
                .map(|_| scale * rng.random_range(-1.0f32..1.0))
                .collect()
        };
        let (q, k, v) = (draw(1.0), draw(1.0), draw(1.0));
        Self { q, k, v }
    }

    /// Scores of about ±10⁴ (a row's sign drawn with it): a softmax that
    /// overflows unless the max is subtracted. Each row of Q has one sign
    /// and K is positive, so Σ|q·k| = |s| and the bound stays tight (under
    /// a quarter of max|v|) instead of covering any mix of V's rows.
    pub fn huge_logits(shape: &AttnShape, seed: u64) -> Self {
        let mut qkv = Self::seeded(shape, seed);
        let d = shape.head_dim as usize;
        let scale = 4e4 / (d as f32).sqrt();
        for (r, row) in qkv.q.chunks_mut(d).enumerate() {
            let sign = if (r as u64 ^ seed).count_ones().is_multiple_of(2) {
                1.0
            } else {
                -1.0
            };
            for x in row {
                *x = sign * scale * x.abs();
            }
        }
        for x in &mut qkv.k {
            *x = x.abs();
        }
        qkv
    }

    /// Scores that rise with the key index in every row (K's row j is
    /// (j + 1)·c in every column, Q positive): the running max grows in
    /// every tile, so a merge that does not rescale O is wrong.
    pub fn rising(shape: &AttnShape, seed: u64) -> Self {
        let mut qkv = Self::seeded(shape, seed);
        let (n, d) = (shape.seq as usize, shape.head_dim as usize);
        // Scores from 0 to about 30 along a row.
        let step = 30.0 / n as f32 / (d as f32).sqrt() * 1.5;
        for x in &mut qkv.q {
            *x = 0.5 + x.abs() * 0.5;
        }
        for (r, row) in qkv.k.chunks_mut(d).enumerate() {
            row.fill(step * ((r % n) + 1) as f32);
        }
        qkv
    }

    /// Each of Q, K, V must hold the shape's values, all finite.
    pub fn check(&self, shape: &AttnShape) -> Result<(), AttnError> {
        let want = shape.values() as usize;
        for (name, values) in [("Q", &self.q), ("K", &self.k), ("V", &self.v)] {
            if values.len() != want {
                return Err(AttnError::Input {
                    name: name.to_owned(),
                    len: values.len(),
                    want,
                });
            }
            if let Some(index) = values.iter().position(|x| !x.is_finite()) {
                return Err(AttnError::NotFinite {
                    name: name.to_owned(),
                    index,
                    value: values[index].to_string(),
                });
            }
        }
        Ok(())
    }
}

/// The f64 answer and, per value, how far an f32 kernel may be from it.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    /// heads × seq × head_dim.
    pub o: Vec<f64>,
    /// heads × seq; −inf for a row with no real key.
    pub lse: Vec<f64>,
    pub o_bound: Vec<f64>,
    pub lse_bound: Vec<f64>,
}

impl Reference {
    /// What `rung`'s output buffer must hold (O, then the log-sum-exp where
    /// it writes one) and each value's bound, in f32.
    pub fn expected(&self, rung: AttnRung) -> (Vec<f32>, Vec<f32>) {
        let mut want: Vec<f32> = self.o.iter().map(|x| *x as f32).collect();
        let mut bound: Vec<f32> = self.o_bound.iter().map(|x| *x as f32).collect();
        if rung.writes_lse() {
            want.extend(self.lse.iter().map(|x| *x as f32));
            bound.extend(self.lse_bound.iter().map(|x| *x as f32));
        }
        (want, bound)
    }
}

/// Attention in f64 from the f32 inputs, masked as `shape` says. The bound
/// on row i: its scores in f32 are off by at most δᵢ = (d + 4)·u·maxⱼ
/// Σ|qᵢ꜀·kⱼ꜀|/√d (a dot product's rounding), which moves each weight by a
/// factor within e^±2δᵢ; summing eᵢ terms in f32 adds (eᵢ + d + 8)·u
/// relative, taken 4× for exp's ulps. So |ΔO| ≤ max|v|·(4(eᵢ + d + 8)u +
/// expm1(2δᵢ)) and |Δlse| ≤ δᵢ + 4(eᵢ + 8)u + 8u·|lse|.
pub fn reference(shape: &AttnShape, qkv: &Qkv) -> Result<Reference, AttnError> {
    qkv.check(shape)?;
    let (n, d) = (shape.seq as usize, shape.head_dim as usize);
    let scale = 1.0 / (d as f64).sqrt();
    let rows = shape.heads as usize * n;
    let mut out = Reference {
        o: vec![0.0; rows * d],
        lse: vec![f64::NEG_INFINITY; rows],
        o_bound: vec![0.0; rows * d],
        lse_bound: vec![0.0; rows],
    };
    let mut scores = vec![0.0f64; n];
    for h in 0..shape.heads as usize {
        let at = |m: &[f32], r: usize| -> Vec<f64> {
            let start = (h * n + r) * d;
            m[start..start + d].iter().map(|x| f64::from(*x)).collect()
        };
        let keys: Vec<Vec<f64>> = (0..n).map(|j| at(&qkv.k, j)).collect();
        let values: Vec<Vec<f64>> = (0..n).map(|j| at(&qkv.v, j)).collect();
        let key_max: Vec<f64> = keys
            .iter()
            .map(|k| k.iter().fold(0.0f64, |m, x| m.max(x.abs())))
            .collect();
        let v_max = values.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
        for i in 0..n {
            let e = shape.keys(h, i as u32) as usize;
            if e == 0 {
                continue;
            }
            let q = at(&qkv.q, i);
            let q_abs: f64 = q.iter().map(|x| x.abs()).sum();
            let mut spread = 0.0f64;
            for j in 0..e {
                scores[j] = q.iter().zip(&keys[j]).map(|(a, b)| a * b).sum::<f64>() * scale;
                spread = spread.max(q_abs * key_max[j]);
            }
            let m = scores[..e].iter().fold(f64::NEG_INFINITY, |a, b| a.max(*b));
            let mut l = 0.0;
            let row = (h * n + i) * d;
            let o = &mut out.o[row..row + d];
            for j in 0..e {
                let p = (scores[j] - m).exp();
                l += p;
                for (acc, v) in o.iter_mut().zip(&values[j]) {
                    *acc += p * v;
                }
            }
            for acc in o.iter_mut() {
                *acc /= l;
            }
            let lse = m + l.ln();
            out.lse[h * n + i] = lse;
            // A score past f32's range would be inf on the GPU.
            if spread * scale > f64::from(f32::MAX) / 4.0 {
                return Err(AttnError::ScoreRange {
                    row: h * n + i,
                    bound: format!("{:.3e}", spread * scale),
                });
            }
            let delta = (d as f64 + 4.0) * U * spread * scale;
            let terms = e as f64;
            out.o_bound[row..row + d]
                .fill(v_max * (4.0 * (terms + d as f64 + 8.0) * U + (2.0 * delta).exp_m1()));
            out.lse_bound[h * n + i] = delta + 4.0 * (terms + 8.0) * U + 8.0 * U * lse.abs();
        }
    }
    Ok(out)
}
