//! The hostile inputs each exercise is checked on, the CPU references, and
//! the judging of an output — pure computation, no wgpu.

use dlsys_core::kernels::attention::{self, AttnShape, Qkv, Reference};
use dlsys_core::kernels::{ReduceOp, reduce_reference, softmax_reference};
use rand::{RngExt as _, SeedableRng as _, rngs::StdRng};

use dlsys_core::names::Words;

use super::{KernelExercise, Layout, Mismatch};

/// What an output element holds if no invocation wrote it (a NaN pattern no
/// arithmetic produces).
pub(super) const UNWRITTEN: f32 = f32::from_bits(0x7fc0_0bad);

/// A problem the learner's kernel must get right.
#[derive(Clone, Debug)]
pub struct KernelCase {
    /// What makes it hard, shown when it fails.
    pub name: Words,
    pub rows: u32,
    pub cols: u32,
    /// A GEMM's inner dimension K (0 for the other layouts).
    pub k: u32,
    pub x: Vec<f32>,
    pub bias: Vec<f32>,
}

impl KernelCase {
    pub(super) fn new(name: Words, rows: u32, cols: u32, x: Vec<f32>) -> Self {
        Self {
            name,
            rows,
            cols,
            k: 0,
            x,
            bias: Vec::new(),
        }
    }

    /// A GEMM case: A (m × k) then B (k × n), uniform in ±1.
    pub(super) fn gemm(rng: &mut StdRng, name: Words, m: u32, n: u32, k: u32) -> Self {
        let len = (m * k + k * n) as usize;
        let mut case = Self::new(name, m, n, uniform(rng, len, -1.0, 1.0));
        case.k = k;
        case
    }

    /// A GEMM case's reference, through the core's (which wants B at a
    /// whole vec4): C in f64 and each element's error scale.
    fn gemm_reference(&self) -> dlsys_core::kernels::GemmReference {
        let problem = dlsys_core::kernels::Problem::gemm(self.rows, self.cols, self.k);
        let a = (self.rows * self.k) as usize;
        let offset = dlsys_core::kernels::gemm_b_offset(problem) as usize;
        let mut padded = self.x[..a].to_vec();
        padded.resize(offset, 0.0);
        padded.extend_from_slice(&self.x[a..]);
        dlsys_core::kernels::gemm_reference(&padded, problem)
    }
}

/// How an attention case's Q, K and V are drawn (the core's inputs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AttnInput {
    Seeded,
    /// Scores about ±10⁴.
    Huge,
    /// Scores that rise with the key: the running max moves in every tile.
    Rising,
}

/// The exercise's tile of keys (`TILE` in its WGSL).
const ATTN_TILE: usize = 16;

impl KernelCase {
    /// An attention case: one head of `n` rows of `d`, `keys` of them real;
    /// x holds Q, K, V. `k` carries the real keys (`params.n`).
    pub(super) fn attention(
        name: Words,
        n: u32,
        d: u32,
        keys: u32,
        seed: u64,
        input: AttnInput,
    ) -> Self {
        let qkv = match attn_shape(n, d, keys) {
            Some(shape) => match input {
                AttnInput::Seeded => Qkv::seeded(&shape, seed),
                AttnInput::Huge => Qkv::huge_logits(&shape, seed),
                AttnInput::Rising => Qkv::rising(&shape, seed),
            },
            None => Qkv {
                q: Vec::new(),
                k: Vec::new(),
                v: Vec::new(),
            },
        };
        let mut x = qkv.q;
        x.extend(qkv.k);
        x.extend(qkv.v);
        let mut case = Self::new(name, n, d, x);
        case.k = keys;
        case
    }

    /// Its problem and inputs for the core's reference.
    fn attention_parts(&self) -> Option<(AttnShape, Qkv)> {
        let shape = attn_shape(self.rows, self.cols, self.k)?;
        let len = shape.values() as usize;
        if self.x.len() != 3 * len {
            return None;
        }
        let qkv = Qkv {
            q: self.x[..len].to_vec(),
            k: self.x[len..2 * len].to_vec(),
            v: self.x[2 * len..].to_vec(),
        };
        Some((shape, qkv))
    }

    /// The core's f64 answer and each value's bound.
    fn attention_reference(&self) -> Option<Reference> {
        let (shape, qkv) = self.attention_parts()?;
        attention::reference(&shape, &qkv).ok()
    }

    /// What the known mistake gives: tiles merged without rescaling O by
    /// exp(m_old − m_new) (l is rescaled), in f64, tile by tile as the
    /// exercise's kernel walks them.
    fn attention_without_rescale(&self) -> Option<Vec<f64>> {
        let (shape, qkv) = self.attention_parts()?;
        let (n, d) = (shape.seq as usize, shape.head_dim as usize);
        let keys = shape.key_len(0) as usize;
        let scale = 1.0 / (d as f64).sqrt();
        let at = |m: &[f32], r: usize, c: usize| f64::from(m[r * d + c]);
        let mut out = vec![0.0; n * d];
        for i in 0..n {
            let (mut m, mut l) = (f64::NEG_INFINITY, 0.0);
            let mut acc = vec![0.0; d];
            for j0 in (0..keys).step_by(ATTN_TILE) {
                let tile: Vec<usize> = (j0..(j0 + ATTN_TILE).min(keys)).collect();
                let s: Vec<f64> = tile
                    .iter()
                    .map(|&j| {
                        (0..d)
                            .map(|c| at(&qkv.q, i, c) * at(&qkv.k, j, c))
                            .sum::<f64>()
                            * scale
                    })
                    .collect();
                let mt = s.iter().fold(m, |a, b| a.max(*b));
                l *= (m - mt).exp();
                for (&j, sj) in tile.iter().zip(&s) {
                    let p = (sj - mt).exp();
                    l += p;
                    for (c, a) in acc.iter_mut().enumerate() {
                        *a += p * at(&qkv.v, j, c);
                    }
                }
                m = mt;
            }
            if l > 0.0 {
                for c in 0..d {
                    out[i * d + c] = acc[c] / l;
                }
            }
        }
        Some(out)
    }
}

fn attn_shape(n: u32, d: u32, keys: u32) -> Option<AttnShape> {
    AttnShape::new(1, n, d, false)
        .ok()?
        .with_kv_len(vec![keys])
        .ok()
}

pub(super) fn uniform(rng: &mut StdRng, len: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(lo..hi)).collect()
}

impl KernelExercise {
    /// The adversarial inputs: sizes 1, 2^k ± 1, larger than a workgroup,
    /// ±inf, huge logits, masked (−inf) entries.
    pub fn cases(&self) -> Vec<KernelCase> {
        let mut rng = StdRng::seed_from_u64(7);
        let mut cases = Vec::new();
        match self.layout {
            Layout::Sum => {
                for n in [1u32, 2, 255, 256] {
                    let x = uniform(&mut rng, n as usize, 0.0, 1.0);
                    cases.push(KernelCase::new(Words::new("case.n", &[("n", &n)]), 1, n, x));
                }
                for n in [257u32, 1023, 1025, 100_000] {
                    let x = uniform(&mut rng, n as usize, 0.0, 1.0);
                    cases.push(KernelCase::new(
                        Words::new("case.n_many", &[("n", &n)]),
                        1,
                        n,
                        x,
                    ));
                }
                let mut x = uniform(&mut rng, 1000, -1.0, 1.0);
                x[999] = f32::INFINITY;
                cases.push(KernelCase::new(
                    Words::new("case.sum_inf", &[("n", &1000)]),
                    1,
                    1000,
                    x,
                ));
            }
            Layout::RowMax => {
                for cols in [1u32, 2, 255, 257, 1000, 4097] {
                    let x = uniform(&mut rng, 3 * cols as usize, -5.0, 5.0);
                    cases.push(KernelCase::new(
                        Words::new("case.rows", &[("rows", &3), ("cols", &cols)]),
                        3,
                        cols,
                        x,
                    ));
                }
                let x = uniform(&mut rng, 2 * 300, -9.0, -1.0);
                cases.push(KernelCase::new(
                    Words::new("case.negative", &[("rows", &2), ("cols", &300)]),
                    2,
                    300,
                    x,
                ));
                let mut x = uniform(&mut rng, 3 * 64, -3.0, 3.0);
                x[5] = f32::INFINITY;
                x[64..128].fill(f32::NEG_INFINITY);
                x[130] = f32::NEG_INFINITY;
                cases.push(KernelCase::new(
                    Words::new("case.max_specials", &[("rows", &3), ("cols", &64)]),
                    3,
                    64,
                    x,
                ));
            }
            Layout::RowSoftmax => {
                for cols in [1u32, 2, 255, 257, 1000, 4097] {
                    let x = uniform(&mut rng, 3 * cols as usize, -4.0, 4.0);
                    cases.push(KernelCase::new(
                        Words::new("case.rows", &[("rows", &3), ("cols", &cols)]),
                        3,
                        cols,
                        x,
                    ));
                }
                let x = uniform(&mut rng, 2 * 500, -1e4, 1e4);
                cases.push(KernelCase::new(
                    Words::new("case.huge_logits", &[("rows", &2), ("cols", &500)]),
                    2,
                    500,
                    x,
                ));
                let mut x = uniform(&mut rng, 2 * 300, -4.0, 4.0);
                for i in (0..600).step_by(7) {
                    x[i] = f32::NEG_INFINITY;
                }
                cases.push(KernelCase::new(
                    Words::new("case.masked", &[("rows", &2), ("cols", &300)]),
                    2,
                    300,
                    x,
                ));
            }
            Layout::BiasRelu => {
                for (rows, cols) in [(1u32, 1u32), (1, 257), (7, 3), (300, 257), (4000, 1)] {
                    let n = (rows * cols) as usize;
                    let mut case = KernelCase::new(
                        Words::new(
                            "case.matrix_n",
                            &[("rows", &rows), ("cols", &cols), ("n", &n)],
                        ),
                        rows,
                        cols,
                        uniform(&mut rng, n, -2.0, 2.0),
                    );
                    case.bias = uniform(&mut rng, cols as usize, -1.0, 1.0);
                    cases.push(case);
                }
                let mut x = uniform(&mut rng, 5 * 9, -2.0, 2.0);
                x[3] = f32::INFINITY;
                x[10] = f32::NEG_INFINITY;
                let mut case = KernelCase::new(
                    Words::new("case.infs", &[("rows", &5), ("cols", &9)]),
                    5,
                    9,
                    x,
                );
                case.bias = uniform(&mut rng, 9, -1.0, 1.0);
                cases.push(case);
            }
            Layout::Transpose => {
                for (rows, cols) in [
                    (1u32, 1u32),
                    (1, 17),
                    (17, 1),
                    (16, 16),
                    (33, 47),
                    (100, 257),
                ] {
                    let x = uniform(&mut rng, (rows * cols) as usize, -100.0, 100.0);
                    cases.push(KernelCase::new(
                        Words::new("case.matrix", &[("rows", &rows), ("cols", &cols)]),
                        rows,
                        cols,
                        x,
                    ));
                }
            }
            Layout::Gemm => {
                for (m, n, k) in [
                    (1u32, 1u32, 1u32),
                    (1, 17, 1),
                    (17, 33, 65),
                    (33, 16, 16),
                    (64, 64, 64),
                    (100, 7, 300),
                ] {
                    let name = Words::new("case.gemm", &[("m", &m), ("k", &k), ("n", &n)]);
                    cases.push(KernelCase::gemm(&mut rng, name, m, n, k));
                }
                let mut case = KernelCase::gemm(
                    &mut rng,
                    Words::new("case.gemm_inf", &[("m", &20), ("k", &30), ("n", &18)]),
                    20,
                    18,
                    30,
                );
                case.x[31] = f32::INFINITY;
                case.x[95] = f32::NEG_INFINITY;
                cases.push(case);
            }
            Layout::LayerNorm => {
                for cols in [1u32, 2, 255, 257, 1000, 4097] {
                    let x = uniform(&mut rng, 3 * cols as usize, -3.0, 3.0);
                    cases.push(KernelCase::new(
                        Words::new("case.rows", &[("rows", &3), ("cols", &cols)]),
                        3,
                        cols,
                        x,
                    ));
                }
                let mut x = uniform(&mut rng, 2 * 300, -3.0, 3.0);
                x[..300].fill(0.75);
                cases.push(KernelCase::new(
                    Words::new("case.constant_row", &[("rows", &2), ("cols", &300)]),
                    2,
                    300,
                    x,
                ));
                let x: Vec<f32> = uniform(&mut rng, 2 * 1000, -4.0, 4.0)
                    .into_iter()
                    .map(|v| 1e4 + v)
                    .collect();
                cases.push(KernelCase::new(
                    Words::new("case.offset_rows", &[("rows", &2), ("cols", &1000)]),
                    2,
                    1000,
                    x,
                ));
            }
            Layout::Attention => {
                use AttnInput::{Huge, Rising, Seeded};
                for (n, d, keys, input, key) in [
                    (1u32, 32u32, 1u32, Seeded, "case.attention"),
                    (37, 32, 37, Seeded, "case.attention"),
                    (100, 64, 100, Seeded, "case.attention"),
                    (40, 32, 23, Seeded, "case.attention"),
                    (9, 32, 0, Seeded, "case.attention_none"),
                    (50, 32, 50, Huge, "case.attention_huge"),
                    (96, 32, 96, Rising, "case.attention_rising"),
                ] {
                    let name = Words::new(key, &[("n", &n), ("d", &d), ("keys", &keys)]);
                    cases.push(KernelCase::attention(name, n, d, keys, u64::from(n), input));
                }
            }
        }
        cases
    }

    /// The CPU reference's answer (f64 inside where it matters).
    pub fn expected(&self, case: &KernelCase) -> Vec<f32> {
        let (rows, cols) = (case.rows as usize, case.cols as usize);
        match self.layout {
            Layout::Sum => vec![reduce_reference(&case.x, ReduceOp::Sum) as f32],
            Layout::RowMax => case
                .x
                .chunks(cols)
                .map(|row| reduce_reference(row, ReduceOp::Max) as f32)
                .collect(),
            Layout::RowSoftmax => softmax_reference(&case.x, rows, cols),
            Layout::BiasRelu => case
                .x
                .iter()
                .enumerate()
                .map(|(i, v)| (v + case.bias[i % cols]).max(0.0))
                .collect(),
            Layout::Transpose => dlsys_core::kernels::transpose_reference(&case.x, rows, cols),
            Layout::Gemm => case
                .gemm_reference()
                .want
                .iter()
                .map(|v| *v as f32)
                .collect(),
            Layout::LayerNorm => dlsys_core::kernels::layernorm_reference(&case.x, rows, cols),
            Layout::Attention => case
                .attention_reference()
                .map(|r| r.o.iter().map(|v| *v as f32).collect())
                .unwrap_or_default(),
        }
    }

    pub(super) fn output_len(&self, case: &KernelCase) -> usize {
        match self.layout {
            Layout::Sum => 1,
            Layout::RowMax => case.rows as usize,
            Layout::Gemm | Layout::Attention => (case.rows * case.cols) as usize,
            _ => case.x.len(),
        }
    }

    pub(super) fn workgroups(&self, case: &KernelCase) -> (u32, u32, u32) {
        match self.layout {
            Layout::Sum => (1, 1, 1),
            Layout::RowMax | Layout::RowSoftmax | Layout::LayerNorm => (case.rows, 1, 1),
            Layout::Gemm => (case.cols.div_ceil(16), case.rows.div_ceil(16), 1),
            Layout::BiasRelu => ((case.rows * case.cols).div_ceil(256), 1, 1),
            Layout::Transpose => (case.cols.div_ceil(16), case.rows.div_ceil(16), 1),
            Layout::Attention => (case.rows.div_ceil(64), 1, 1),
        }
    }

    /// Whether `got` is close enough to `want` at one element (`scale`: a
    /// GEMM element's Σₖ|aᵢₖ|·|bₖⱼ|).
    fn agrees(&self, case: &KernelCase, got: f32, want: f32, scale: f64) -> bool {
        if want.is_nan() || got.is_nan() {
            return want.is_nan() && got.is_nan();
        }
        if !want.is_finite() || !got.is_finite() {
            return got == want;
        }
        let (g, w) = (f64::from(got), f64::from(want));
        match self.layout {
            // f32 accumulation in any order: a bound scaled by Σ|x|.
            Layout::Sum => {
                let scale: f64 = case.x.iter().map(|v| f64::from(v.abs())).sum();
                (g - w).abs() <= 2e-5 * scale.max(1.0)
            }
            // exp on a GPU is a few ulp off; relative, with a floor for tiny outputs.
            Layout::RowSoftmax => (g - w).abs() <= 1e-4 * w.abs() + 1e-9,
            // The ladder's GEMM bound.
            Layout::Gemm => (g - w).abs() <= dlsys_core::kernels::GEMM_TOLERANCE * scale,
            // The core's bound on each value of O.
            Layout::Attention => (g - w).abs() <= scale,
            // f32 rounding of values around 1e4 costs ~1e-3 of the spread.
            Layout::LayerNorm => (g - w).abs() <= 2e-3 * w.abs().max(1.0),
            _ => g == w,
        }
    }

    /// The first element that disagrees, explained.
    pub(super) fn judge(&self, case: &KernelCase, got: &[f32]) -> Result<(), Mismatch> {
        let (want, scales) = if self.layout == Layout::Gemm {
            // NaN and ±inf where IEEE puts them: compared in f64 first.
            let reference = case.gemm_reference();
            let want = reference.want.iter().map(|v| *v as f32).collect();
            (want, reference.scale)
        } else if self.layout == Layout::Attention {
            let reference = case.attention_reference();
            let want = self.expected(case);
            let bounds = reference.map(|r| r.o_bound).unwrap_or_default();
            (want, bounds)
        } else {
            let want = self.expected(case);
            let scales = vec![0.0; want.len()];
            (want, scales)
        };
        let first = want
            .iter()
            .zip(got)
            .zip(&scales)
            .position(|((w, g), s)| !self.agrees(case, *g, *w, *s));
        let Some(index) = first else {
            return Ok(());
        };
        let (expected, got_value) = (want[index], got[index]);
        let note = match self.layout {
            _ if got_value.to_bits() == UNWRITTEN.to_bits() => {
                Some(Words::new("note.unwritten", &[]))
            }
            Layout::RowMax if got_value == 0.0 && expected < 0.0 => {
                Some(Words::new("note.max_from_zero", &[]))
            }
            Layout::RowSoftmax if !got_value.is_finite() => {
                Some(Words::new("note.exp_overflow", &[]))
            }
            Layout::RowSoftmax => {
                let row = index / case.cols as usize;
                let cols = case.cols as usize;
                let total: f64 = got[row * cols..(row + 1) * cols]
                    .iter()
                    .map(|v| f64::from(*v))
                    .sum();
                if (total - 1.0).abs() > 1e-3 {
                    Some(Words::new(
                        "note.row_sum",
                        &[("row", &row), ("total", &format!("{total:.6}"))],
                    ))
                } else {
                    Some(Words::new("note.not_softmax", &[]))
                }
            }
            Layout::Transpose => {
                let source = case.x.get(index).copied();
                if source == Some(got_value) && got_value != expected {
                    Some(Words::new("note.untransposed", &[("index", &index)]))
                } else {
                    None
                }
            }
            Layout::Gemm => {
                let (i, j) = (index / case.cols as usize, index % case.cols as usize);
                Some(Words::new("note.gemm", &[("i", &i), ("j", &j)]))
            }
            Layout::LayerNorm => {
                let cols = case.cols as usize;
                let row = &case.x[(index / cols) * cols..(index / cols + 1) * cols];
                let n = row.len() as f64;
                let mean = row.iter().map(|v| f64::from(*v)).sum::<f64>() / n;
                let spread = (row
                    .iter()
                    .map(|v| (f64::from(*v) - mean).powi(2))
                    .sum::<f64>()
                    / n)
                    .sqrt();
                if mean.abs() > 100.0 * spread.max(1e-30) {
                    Some(Words::new(
                        "note.cancellation",
                        &[
                            ("mean", &format!("{mean:.0}")),
                            ("spread", &format!("{spread:.2}")),
                            ("square", &format!("{:.0e}", mean * mean)),
                        ],
                    ))
                } else {
                    Some(Words::new("note.layernorm", &[]))
                }
            }
            Layout::Attention => {
                let d = case.cols as usize;
                let (row, col) = (index / d, index % d);
                // The known mistake, recognised by what it gives.
                let unscaled = case.attention_without_rescale().unwrap_or_default();
                let matches = !unscaled.is_empty()
                    && got
                        .iter()
                        .zip(&unscaled)
                        .zip(&scales)
                        .all(|((g, u), b)| (f64::from(*g) - u).abs() <= b.max(1e-4) * 10.0);
                if matches {
                    Some(Words::new("note.attention_rescale", &[("row", &row)]))
                } else {
                    Some(Words::new(
                        "note.attention",
                        &[("row", &row), ("col", &col), ("keys", &case.k)],
                    ))
                }
            }
            Layout::BiasRelu => {
                let cols = case.cols as usize;
                Some(Words::new(
                    "note.bias_relu",
                    &[
                        ("index", &index),
                        ("row", &(index / cols)),
                        ("col", &(index % cols)),
                    ],
                ))
            }
            _ => None,
        };
        Err(Mismatch {
            case: case.name.clone(),
            index,
            expected,
            got: got_value,
            note,
        })
    }
}

/// A sum-reduction kernel that runs for about 8 s on llvmpipe (a few times
/// any checker's budget), for tests and demonstrations of the time budget. A
/// truly endless `loop {}` cannot be had there: llvmpipe stops a shader after
/// 65,535 loop iterations. So the loop runs to that cap, each iteration a long
/// chain of transcendental functions no compiler can fold. On a hardware GPU
/// an endless loop either overruns the budget the same way or, first, trips
/// the driver's watchdog, which resets the device: the checker reports the
/// device lost and replaces it (a reset may also hit the app's own device,
/// which the checker cannot prevent).
pub fn runaway_kernel() -> String {
    let body = "        v = sin(v) * 0.75 + cos(v * 1.5) + exp(-v * v);\n".repeat(150);
    format!(
        "struct Params {{ rows: u32, cols: u32, n: u32, neg_inf: f32 }}
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32) {{
    var v = x[0] + f32(tid);
    loop {{
{body}        if (v > 1e30) {{
            break;
        }}
    }}
    y[0] = v;
}}
"
    )
}
