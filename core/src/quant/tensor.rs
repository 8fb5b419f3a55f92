//! A whole tensor quantised block by block, dequantised back, and what the
//! round trip lost.

use rand::{RngExt as _, SeedableRng as _};
use serde::Serialize;

use super::QuantError;
use super::calibrate::clip_range;
use super::scheme::{QParams, QuantSettings};

/// A `[rows, cols]` tensor in integer codes with one [`QParams`] per block.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantTensor {
    pub rows: usize,
    pub cols: usize,
    pub codes: Vec<i32>,
    /// Each value's block.
    pub block: Vec<u32>,
    pub params: Vec<QParams>,
}

impl QuantTensor {
    pub fn dequantise(&self) -> Vec<f64> {
        self.codes
            .iter()
            .zip(&self.block)
            .map(|(&q, &b)| self.params[b as usize].dequantise(q))
            .collect()
    }
}

/// Refuses NaN and infinities (by index), and an empty tensor.
pub fn check_finite(values: &[f32]) -> Result<(), QuantError> {
    if values.is_empty() {
        return Err(QuantError::Empty);
    }
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(QuantError::NotFinite {
            index,
            value: values[index].to_string(),
        }),
        None => Ok(()),
    }
}

/// `values` hold a `[rows, cols]` matrix of finite numbers.
pub fn check_matrix(values: &[f32], rows: usize, cols: usize) -> Result<(), QuantError> {
    if values.len() != rows * cols {
        return Err(QuantError::Shape {
            len: values.len(),
            rows,
            cols,
        });
    }
    check_finite(values)
}

/// Quantises `values`, a `[rows, cols]` tensor, under `settings`.
pub fn quantise(
    values: &[f32],
    rows: usize,
    cols: usize,
    settings: &QuantSettings,
) -> Result<QuantTensor, QuantError> {
    settings.validate()?;
    check_matrix(values, rows, cols)?;
    let (block, count) = settings.granularity.blocks(rows, cols);
    let mut members: Vec<Vec<f64>> = vec![Vec::new(); count];
    for (&v, &b) in values.iter().zip(&block) {
        members[b as usize].push(f64::from(v));
    }
    let params = members
        .iter()
        .map(|m| {
            let (lo, hi) = clip_range(m, settings.calibration, settings.format, settings.mapping)?;
            QParams::for_range(lo, hi, settings.format, settings.mapping)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(settings.seed);
    let codes = values
        .iter()
        .zip(&block)
        .map(|(&v, &b)| params[b as usize].quantise(f64::from(v), settings.rounding, rng.random()))
        .collect();
    Ok(QuantTensor {
        rows,
        cols,
        codes,
        block,
        params,
    })
}

/// Quantise and dequantise at once ("fake quantisation"), back to f32.
pub fn fake_quantise(
    values: &[f32],
    rows: usize,
    cols: usize,
    settings: &QuantSettings,
) -> Result<Vec<f32>, QuantError> {
    Ok(quantise(values, rows, cols, settings)?
        .dequantise()
        .into_iter()
        .map(|v| v as f32)
        .collect())
}

/// What a round trip lost, in f64.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ErrorStats {
    pub max_abs_error: f64,
    pub rms_error: f64,
    /// Signal-to-quantisation-noise ratio, 10·log10(Σx² / Σ(x − x̂)²);
    /// `None` when the round trip is exact.
    pub sqnr_db: Option<f64>,
    /// Values outside their block's grid range (clipped).
    pub clipped: usize,
    pub count: usize,
}

/// Compares `original` with its round trip `restored`.
pub fn error_stats(original: &[f32], restored: &[f64], clipped: usize) -> ErrorStats {
    let (mut max, mut sq_err, mut sq_sig) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in original.iter().zip(restored) {
        let x = f64::from(x);
        let e = (x - y).abs();
        max = max.max(e);
        sq_err += e * e;
        sq_sig += x * x;
    }
    let n = original.len().max(1) as f64;
    ErrorStats {
        max_abs_error: max,
        rms_error: (sq_err / n).sqrt(),
        sqnr_db: (sq_err > 0.0).then(|| 10.0 * (sq_sig / sq_err).log10()),
        clipped,
        count: original.len(),
    }
}

/// A tensor quantised, and its error statistics.
pub fn quantise_with_stats(
    values: &[f32],
    rows: usize,
    cols: usize,
    settings: &QuantSettings,
) -> Result<(QuantTensor, ErrorStats), QuantError> {
    let q = quantise(values, rows, cols, settings)?;
    let restored = q.dequantise();
    let clipped = values
        .iter()
        .zip(&q.block)
        .filter(|&(&v, &b)| {
            let (lo, hi) = q.params[b as usize].grid_range();
            f64::from(v) < lo || f64::from(v) > hi
        })
        .count();
    let stats = error_stats(values, &restored, clipped);
    Ok((q, stats))
}

/// One value quantised into a range: the CLI's `--value`, the page's
/// worked example.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OneValue {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
    pub format: String,
    pub params: QParams,
    pub code: i32,
    pub restored: f64,
    pub error: f64,
    /// The half-step bound inside the range (nearest rounding).
    pub bound: f64,
    pub clipped: bool,
}

/// `value` quantised with the range `[lo, hi]` as its clip range.
pub fn quantise_value(
    value: f64,
    lo: f64,
    hi: f64,
    settings: &QuantSettings,
) -> Result<OneValue, QuantError> {
    settings.validate()?;
    if !value.is_finite() {
        return Err(QuantError::NotFinite {
            index: 0,
            value: value.to_string(),
        });
    }
    let params = QParams::for_range(lo, hi, settings.format, settings.mapping)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(settings.seed);
    let code = params.quantise(value, settings.rounding, rng.random());
    let restored = params.dequantise(code);
    let (glo, ghi) = params.grid_range();
    Ok(OneValue {
        value,
        lo,
        hi,
        format: settings.format.name(),
        params,
        code,
        restored,
        error: restored - value,
        bound: params.scale / 2.0,
        clipped: value < glo || value > ghi,
    })
}

/// `h` (a `[rows, cols]` value of an eager graph) fake-quantised to
/// symmetric `bits`-bit integers with one scale from its own amax (a
/// dynamic, per-tensor activation scale): the input of an integer GEMM.
/// Values that cannot be quantised (NaN) are left as they are — the loss
/// that follows says so.
pub fn fake_quantise_activation(
    g: &mut crate::autograd::Graph<f32>,
    h: crate::autograd::Var,
    bits: u32,
) -> crate::autograd::Var {
    let x = g.value(h).into_owned();
    let (rows, cols) = x.rows_cols();
    let settings = QuantSettings {
        format: super::IntFormat::signed(bits),
        ..QuantSettings::default()
    };
    match fake_quantise(&x.data, rows, cols, &settings) {
        Ok(restored) => {
            let shape = x.shape.clone();
            let inside = crate::autograd::tensor::Tensor::full(&shape, 1.0);
            g.fake_quantise(
                h,
                crate::autograd::tensor::Tensor::new(restored, &shape),
                inside,
            )
        }
        Err(_) => h,
    }
}
