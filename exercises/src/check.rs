//! The checkers: each takes an implementation and says what is wrong with it,
//! judged by dlsys-lab's own cores. A panic in the implementation (a `todo!()`
//! still in place, an index out of bounds) is caught and reported, not
//! propagated.

use std::panic::{AssertUnwindSafe, catch_unwind};

use dlsys_core::autograd::{Band, Graph, Tensor, relative_error, softmax_rows};
use dlsys_core::float::{Class, Format, Rounding};
use dlsys_core::kernels::softmax_reference;
use dlsys_core::nn::{Optimizer, OptimizerKind};
use rand::{RngExt as _, SeedableRng as _, rngs::StdRng};

use crate::AdamConfig;
use crate::words::{say, sayf};

pub type Fp16FromBits = fn(u16) -> f32;
pub type RoundToBf16 = fn(f32) -> u16;
pub type LinearBackward =
    fn(&[f64], &[f64], &[f64], usize, usize, usize) -> (Vec<f64>, Vec<f64>, Vec<f64>);
pub type SoftmaxBackward = fn(&[f64], &[f64], usize) -> Vec<f64>;
pub type SoftmaxCeBackward = fn(&[f64], &[usize], usize) -> Vec<f64>;
pub type SgdMomentumStep = fn(&mut [f64], &[f64], &mut [f64], f64, f64);
pub type AdamStep = fn(&mut [f64], &[f64], &mut [f64], &mut [f64], i32, AdamConfig);
pub type OnlineSoftmax = fn(&[f32]) -> Vec<f32>;
pub type DataloaderBatches =
    fn(usize, usize, bool, &mut dyn FnMut(usize) -> usize) -> Vec<Vec<usize>>;
pub type PlanArena = fn(&[(u64, u32, u32)]) -> Vec<u64>;
pub type Liveness = fn(&[Vec<usize>], &[usize]) -> Vec<(u32, u32)>;
pub type QuantisePerChannel = fn(&[f32], usize, usize) -> Option<(Vec<i8>, Vec<f64>)>;

pub use crate::check_plan::{liveness, plan_arena};
pub use crate::check_quant::quantise_per_channel;

/// Analytic gradients in f64 must agree to this relative error: the "good"
/// band of a gradient check, with room for summation order.
const GRAD_TOL: f64 = 1e-9;

/// Runs the learner's function, turning a panic into a message.
pub(crate) fn call<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        if text.contains("not yet implemented") {
            say("c.todo")
        } else {
            sayf("c.panicked", &[("text", &text)])
        }
    })
}

fn random(rng: &mut StdRng, len: usize) -> Vec<f64> {
    (0..len).map(|_| rng.random_range(-2.0..2.0)).collect()
}

/// How far `got` is from `want`, relative to the larger of the two, with a
/// floor of 1e-6 × the largest expected magnitude in the tensor: a gradient
/// of 1e-100 where the engine has exactly 0 is as right as 0.
fn element_error(got: f64, want: f64, scale: f64) -> f64 {
    if got == want || (got.is_nan() && want.is_nan()) {
        return 0.0;
    }
    if !(got.is_finite() && want.is_finite()) {
        return f64::INFINITY;
    }
    (got - want).abs()
        / want
            .abs()
            .max(got.abs())
            .max(1e-6 * scale)
            .max(f64::MIN_POSITIVE)
}

/// The first element where `got` and `want` disagree beyond `tol`.
fn first_mismatch(got: &[f64], want: &[f64], tol: f64) -> Option<(usize, f64)> {
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs()));
    got.iter()
        .zip(want)
        .map(|(g, w)| element_error(*g, *w, scale))
        .enumerate()
        .find(|(_, e)| e.is_nan() || *e > tol)
}

fn same(got: &[f64], want: &[f64], tol: f64) -> bool {
    got.len() == want.len() && first_mismatch(got, want, tol).is_none()
}

/// Lengths first, then the first element out of tolerance, with its band.
fn compare(name: &str, got: &[f64], want: &[f64], tol: f64) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(sayf(
            "c.len",
            &[("name", &name), ("got", &got.len()), ("want", &want.len())],
        ));
    }
    match first_mismatch(got, want, tol) {
        None => Ok(()),
        Some((i, e)) => Err(sayf(
            "c.mismatch",
            &[
                ("name", &name),
                ("i", &i),
                ("want", &want[i]),
                ("got", &got[i]),
                ("err", &format!("{e:.1e}")),
                ("band", &say(&format!("band.{:?}", Band::of(e)))),
            ],
        )),
    }
}

fn tensor(data: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::new(data.to_vec(), shape)
}

// ---------------------------------------------------------------- 01

/// Every one of the 65,536 patterns against the float emulator's decode.
pub fn fp16_from_bits(f: Fp16FromBits) -> Result<(), String> {
    let fp16 = Format::fp16();
    for bits in 0..=u16::MAX {
        let got = call(|| f(bits))?;
        let want = fp16.decode(u32::from(bits)) as f32;
        let ok = if want.is_nan() {
            got.is_nan()
        } else {
            got.to_bits() == want.to_bits()
        };
        if ok {
            continue;
        }
        let class = fp16.classify(u32::from(bits));
        let why = match class {
            Class::Subnormal => "c.fp16.subnormal",
            Class::Zero => "c.fp16.zero",
            Class::Infinite => "c.fp16.inf",
            Class::Nan => "c.fp16.nan",
            Class::Normal if got.to_bits() == (-want).to_bits() => "c.fp16.sign",
            Class::Normal => "c.fp16.normal",
        };
        return Err(sayf(
            "c.fp16",
            &[
                ("bits", &format!("0x{bits:04x}")),
                ("class", &class),
                ("want", &format!("{want:e}")),
                ("got", &format!("{got:e}")),
                ("why", &say(why)),
            ],
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------- 02

/// Edge cases (ties both ways, overflow, subnormals, NaN payloads) and a
/// million seeded random patterns against the emulator's nearest-even encode.
pub fn round_to_bf16_rne(f: RoundToBf16) -> Result<(), String> {
    let bf16 = Format::bf16();
    let mut patterns: Vec<u32> = vec![
        0x0000_0000,
        0x8000_0000,
        0x3f80_0000,
        0x3f80_8000, // a tie, rounds down to the even 0x3f80
        0x3f81_8000, // a tie, rounds up to the even 0x3f82
        0x3f80_8001,
        0x3f80_7fff,
        0x7f7f_ffff, // rounds up into inf
        0x7f7f_7fff,
        0x0000_0001,
        0x0080_8000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0x7f80_0001, // NaN with its payload only in the low 16 bits
        0xff80_8000,
    ];
    let mut rng = StdRng::seed_from_u64(2);
    patterns.extend((0..1_000_000).map(|_| rng.random::<u32>()));
    for bits in patterns {
        let x = f32::from_bits(bits);
        let got = call(|| f(x))?;
        let want = bf16.encode_f32(x, Rounding::NearestEven) as u16;
        let got_is_nan = (got & 0x7f80) == 0x7f80 && (got & 0x7f) != 0;
        let ok = if x.is_nan() { got_is_nan } else { got == want };
        if ok {
            continue;
        }
        let why = if x.is_nan() {
            "c.bf16.nan"
        } else if got == (bits >> 16) as u16 {
            "c.bf16.truncation"
        } else if bits & 0xffff == 0x8000 {
            "c.bf16.tie"
        } else {
            "c.bf16.nearest"
        };
        return Err(sayf(
            "c.bf16",
            &[
                ("bits", &format!("0x{bits:08x}")),
                ("x", &format!("{x:e}")),
                ("want", &format!("0x{want:04x}")),
                ("got", &format!("0x{got:04x}")),
                ("why", &say(why)),
            ],
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------- 03

/// Against the autograd engine's backward of `sum(dy ⊙ (x·W + b))`, whose
/// gradients are `dx`, `dW`, `db`; several shapes, d_in ≠ d_out.
pub fn linear_backward(f: LinearBackward) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(3);
    for (n, d_in, d_out) in [(1, 1, 1), (4, 3, 2), (5, 2, 6), (16, 7, 3)] {
        let x = random(&mut rng, n * d_in);
        let w = random(&mut rng, d_in * d_out);
        let b = random(&mut rng, d_out);
        let dy = random(&mut rng, n * d_out);
        let mut g = Graph::<f64>::new();
        let xv = g.param(tensor(&x, &[n, d_in]));
        let wv = g.param(tensor(&w, &[d_in, d_out]));
        let bv = g.param(tensor(&b, &[d_out]));
        let dyv = g.input(tensor(&dy, &[n, d_out]));
        let xw = g.matmul(xv, wv);
        let y = g.add(xw, bv);
        let weighted = g.mul(y, dyv);
        let loss = g.sum(weighted);
        g.backward(loss);
        let grad = |v| g.grad(v).map(|t| t.data.clone()).unwrap_or_default();
        let (want_dx, want_dw, want_db) = (grad(xv), grad(wv), grad(bv));
        let (dx, dw, db) = call(|| f(&x, &w, &dy, n, d_in, d_out))?;
        let shape = sayf(
            "c.linear.shape",
            &[("n", &n), ("d_in", &d_in), ("d_out", &d_out)],
        );
        if db.len() == d_out && n > 1 {
            let first_row = &dy[..d_out];
            let mean: Vec<f64> = want_db.iter().map(|s| s / n as f64).collect();
            if same(&db, first_row, GRAD_TOL) {
                return Err(sayf("c.linear.first_row", &[("shape", &shape)]));
            }
            if same(&db, &mean, GRAD_TOL) {
                return Err(sayf("c.linear.mean", &[("shape", &shape)]));
            }
        }
        if d_in > 1 && d_out > 1 && dw.len() == d_in * d_out {
            let transposed: Vec<f64> = (0..d_in * d_out)
                .map(|k| dw[(k % d_out) * d_in + k / d_out])
                .collect();
            if same(&transposed, &want_dw, GRAD_TOL) {
                return Err(sayf("c.linear.layout", &[("shape", &shape)]));
            }
        }
        compare("dx", &dx, &want_dx, GRAD_TOL).map_err(|e| format!("{e}{shape}"))?;
        compare("dW", &dw, &want_dw, GRAD_TOL).map_err(|e| format!("{e}{shape}"))?;
        compare("db", &db, &want_db, GRAD_TOL).map_err(|e| format!("{e}{shape}"))?;
    }
    Ok(())
}

// ---------------------------------------------------------------- 04

/// Against the engine's backward of `sum(g ⊙ softmax(z))`.
pub fn softmax_backward(f: SoftmaxBackward) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(4);
    for (n, c) in [(1, 1), (1, 2), (3, 4), (8, 10)] {
        let z = random(&mut rng, n * c);
        let upstream = random(&mut rng, n * c);
        let p = softmax_rows(&tensor(&z, &[n, c])).data;
        let mut g = Graph::<f64>::new();
        let zv = g.param(tensor(&z, &[n, c]));
        let gv = g.input(tensor(&upstream, &[n, c]));
        let pv = g.softmax(zv);
        let weighted = g.mul(pv, gv);
        let loss = g.sum(weighted);
        g.backward(loss);
        let want = g.grad(zv).map(|t| t.data.clone()).unwrap_or_default();
        let got = call(|| f(&p, &upstream, c))?;
        let elementwise: Vec<f64> = p.iter().zip(&upstream).map(|(p, g)| p * g).collect();
        let diagonal: Vec<f64> = p
            .iter()
            .zip(&upstream)
            .map(|(p, g)| p * (1.0 - p) * g)
            .collect();
        if same(&got, &elementwise, GRAD_TOL) {
            return Err(say("c.softmax.elementwise"));
        }
        if c > 1 && same(&got, &diagonal, GRAD_TOL) {
            return Err(say("c.softmax.diagonal"));
        }
        compare("dz", &got, &want, GRAD_TOL)
            .map_err(|e| format!("{e}{}", sayf("c.rows", &[("n", &n), ("c", &c)])))?;
    }
    Ok(())
}

// ---------------------------------------------------------------- 05

/// Against the engine's backward of its fused, mean-over-batch
/// softmax-cross-entropy, with logits large enough to need the max trick.
pub fn softmax_cross_entropy_backward(f: SoftmaxCeBackward) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(5);
    for (n, c, scale) in [(1, 2, 1.0), (4, 3, 1.0), (8, 10, 3.0), (3, 5, 1000.0)] {
        let logits: Vec<f64> = random(&mut rng, n * c).iter().map(|v| v * scale).collect();
        let labels: Vec<usize> = (0..n).map(|_| rng.random_range(0..c)).collect();
        let mut g = Graph::<f64>::new();
        let zv = g.param(tensor(&logits, &[n, c]));
        let loss = g.softmax_cross_entropy(zv, &labels);
        g.backward(loss);
        let want = g.grad(zv).map(|t| t.data.clone()).unwrap_or_default();
        let got = call(|| f(&logits, &labels, c))?;
        let shape = sayf(
            "c.ce.shape",
            &[("n", &n), ("c", &c), ("max", &(2.0 * scale))],
        );
        if got.iter().any(|v| !v.is_finite()) {
            return Err(sayf("c.ce.overflow", &[("shape", &shape)]));
        }
        if n > 1 {
            let summed: Vec<f64> = want.iter().map(|v| v * n as f64).collect();
            if same(&got, &summed, GRAD_TOL) {
                return Err(sayf("c.ce.summed", &[("n", &n), ("shape", &shape)]));
            }
        }
        let probabilities: Vec<f64> = softmax_rows(&tensor(&logits, &[n, c]))
            .data
            .iter()
            .map(|p| p / n as f64)
            .collect();
        if same(&got, &probabilities, GRAD_TOL) {
            return Err(sayf("c.ce.no_onehot", &[("shape", &shape)]));
        }
        compare("dz", &got, &want, GRAD_TOL).map_err(|e| format!("{e}{shape}"))?;
    }
    Ok(())
}

// ---------------------------------------------------------------- 06

/// Five steps against dlsys-core's momentum optimizer (no weight decay).
pub fn sgd_momentum_step(f: SgdMomentumStep) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(6);
    let (lr, mu) = (0.1, 0.9);
    let len = 12;
    let mut params = random(&mut rng, len);
    let mut velocity = vec![0.0; len];
    let mut plain = params.clone();
    let mut core = Optimizer::<f64>::new(
        OptimizerKind::Momentum {
            mu,
            nesterov: false,
        },
        lr,
        0.0,
    );
    let mut core_params = tensor(&params, &[len]);
    for step in 1..=5 {
        let grads = random(&mut rng, len);
        call(|| f(&mut params, &grads, &mut velocity, lr, mu))?;
        core.step(&mut [&mut core_params], &[tensor(&grads, &[len])]);
        for (p, g) in plain.iter_mut().zip(&grads) {
            *p -= lr * g;
        }
        if step > 1 && same(&params, &plain, GRAD_TOL) {
            return Err(sayf("c.sgd.plain", &[("step", &step)]));
        }
        compare("params", &params, &core_params.data, GRAD_TOL)
            .map_err(|e| sayf("c.sgd.after", &[("step", &step), ("error", &e)]))?;
    }
    Ok(())
}

// ---------------------------------------------------------------- 07

/// Five steps against dlsys-core's Adam.
pub fn adam_step(f: AdamStep) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(7);
    let config = AdamConfig {
        lr: 0.01,
        ..AdamConfig::default()
    };
    let len = 12;
    let mut params = random(&mut rng, len);
    let (mut m, mut v) = (vec![0.0; len], vec![0.0; len]);
    let mut core = Optimizer::<f64>::new(
        OptimizerKind::Adam {
            beta1: config.beta1,
            beta2: config.beta2,
            eps: config.eps,
        },
        config.lr,
        0.0,
    );
    let mut core_params = tensor(&params, &[len]);
    for t in 1..=5 {
        let grads = random(&mut rng, len);
        let before = params.clone();
        call(|| f(&mut params, &grads, &mut m, &mut v, t, config))?;
        core.step(&mut [&mut core_params], &[tensor(&grads, &[len])]);
        if params.iter().any(|p| !p.is_finite()) {
            return Err(sayf("c.adam.nan", &[("t", &t)]));
        }
        // The same step without bias correction, from the same state.
        let uncorrected: Vec<f64> = before
            .iter()
            .zip(&m)
            .zip(&v)
            .map(|((p, m), v)| p - config.lr * m / (v.sqrt() + config.eps))
            .collect();
        if same(&params, &uncorrected, GRAD_TOL) && !same(&params, &core_params.data, GRAD_TOL) {
            return Err(sayf("c.adam.no_correction", &[("t", &t)]));
        }
        compare("params", &params, &core_params.data, GRAD_TOL)
            .map_err(|e| sayf("c.adam.after", &[("t", &t), ("error", &e)]))?;
    }
    Ok(())
}

// ---------------------------------------------------------------- 08

/// Rows of length 1, 2, 2^k ± 1, huge logits, −inf entries and a row whose
/// maximum comes last (so the running sum must be rescaled), against the CPU
/// softmax reference (f64 inside).
pub fn online_softmax(f: OnlineSoftmax) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(8);
    let mut rows: Vec<(String, Vec<f32>)> = vec![
        (say("c.online.one"), vec![3.0]),
        (say("c.online.equal"), vec![0.5, 0.5]),
        (
            say("c.online.increasing"),
            (0..9).map(|i| i as f32).collect(),
        ),
        (say("c.online.huge"), vec![1000.0, 999.0, -1000.0, 998.5]),
        (
            say("c.online.neg_inf"),
            vec![f32::NEG_INFINITY, 0.0, 1.0, f32::NEG_INFINITY],
        ),
    ];
    for len in [31, 33, 255, 257, 1000] {
        let row = (0..len).map(|_| rng.random_range(-8.0f32..8.0)).collect();
        rows.push((sayf("c.online.random", &[("len", &len)]), row));
    }
    for (name, row) in rows {
        let want = softmax_reference(&row, 1, row.len());
        let got = call(|| f(&row))?;
        if got.len() != want.len() {
            return Err(sayf(
                "c.online.len",
                &[("name", &name), ("got", &got.len()), ("want", &want.len())],
            ));
        }
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let err = relative_error(f64::from(*g), f64::from(*w));
            if err <= 1e-5 || (f64::from(*g) - f64::from(*w)).abs() <= 1e-9 {
                continue;
            }
            let why = if g.is_nan() {
                "c.online.nan"
            } else if g.is_finite() {
                let total: f32 = got.iter().sum();
                if (total - 1.0).abs() > 1e-3 {
                    "c.online.sum"
                } else {
                    "c.online.other"
                }
            } else {
                "c.online.overflow"
            };
            return Err(sayf(
                "c.online.value",
                &[
                    ("name", &name),
                    ("i", &i),
                    ("want", &format!("{w:e}")),
                    ("got", &format!("{g:e}")),
                    ("why", &say(why)),
                ],
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- 09

/// Batches that cover every index once, in the sizes asked for, the same
/// batches from the same random stream, and a shuffle that is uniform: over
/// 60,000 shuffles of three items each of the six orders must come up 1/6 of
/// the time within 0.008 (five standard errors).
pub fn dataloader_batches(f: DataloaderBatches) -> Result<(), String> {
    for (len, batch, drop_last) in [
        (10, 4, false),
        (10, 4, true),
        (8, 4, true),
        (1, 3, false),
        (7, 1, false),
    ] {
        let mut rng = StdRng::seed_from_u64(9);
        let mut misuse = None;
        let mut below = |n: usize| {
            if n == 0 {
                misuse = Some(say("c.loader.below0"));
                return 0;
            }
            rng.random_range(0..n)
        };
        let batches = call(|| f(len, batch, drop_last, &mut below))?;
        if let Some(m) = misuse {
            return Err(m);
        }
        let what = sayf(
            "c.loader.what",
            &[("len", &len), ("batch", &batch), ("drop_last", &drop_last)],
        );
        let full = len / batch;
        let expected_batches = if drop_last { full } else { len.div_ceil(batch) };
        if batches.len() != expected_batches {
            let why = if drop_last && batches.len() == len.div_ceil(batch) {
                say("c.loader.dropped")
            } else {
                String::new()
            };
            return Err(sayf(
                "c.loader.count",
                &[
                    ("what", &what),
                    ("got", &batches.len()),
                    ("want", &expected_batches),
                    ("why", &why),
                ],
            ));
        }
        for (i, b) in batches.iter().enumerate() {
            let size = if i < full { batch } else { len % batch };
            if b.len() != size {
                return Err(sayf(
                    "c.loader.size",
                    &[
                        ("what", &what),
                        ("i", &i),
                        ("got", &b.len()),
                        ("want", &size),
                    ],
                ));
            }
        }
        let mut seen: Vec<usize> = batches.concat();
        seen.sort_unstable();
        let unique = seen.len();
        seen.dedup();
        if seen.len() != unique || seen.iter().any(|i| *i >= len) {
            return Err(sayf(
                "c.loader.unique",
                &[
                    ("what", &what),
                    ("len", &len),
                    ("seen", &format!("{seen:?}")),
                ],
            ));
        }
        let mut again_rng = StdRng::seed_from_u64(9);
        let mut again = |n: usize| again_rng.random_range(0..n.max(1));
        if call(|| f(len, batch, drop_last, &mut again))? != batches {
            return Err(sayf("c.loader.stream", &[("what", &what)]));
        }
    }
    let trials = 60_000;
    let mut counts = std::collections::BTreeMap::<Vec<usize>, usize>::new();
    let mut rng = StdRng::seed_from_u64(10);
    let mut below = |n: usize| rng.random_range(0..n.max(1));
    for _ in 0..trials {
        let batches = call(|| f(3, 3, false, &mut below))?;
        *counts.entry(batches.concat()).or_default() += 1;
    }
    if counts.len() == 1 {
        return Err(say("c.loader.unshuffled"));
    }
    for order in [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ] {
        let share = counts.get(order.as_slice()).copied().unwrap_or(0) as f64 / f64::from(trials);
        if (share - 1.0 / 6.0).abs() > 0.008 {
            return Err(sayf(
                "c.loader.biased",
                &[
                    ("order", &format!("{order:?}")),
                    ("share", &format!("{:.1}", share * 100.0)),
                    ("trials", &trials),
                ],
            ));
        }
    }
    Ok(())
}
