//! OCP Microscaling (MX) block formats: blocks of 32 values sharing one
//! power-of-two scale stored as E8M0 (an 8-bit exponent, bias 127), each
//! element in FP8 (E4M3, E5M2), FP6 (E2M3, E3M2), FP4 (E2M1) or INT8 — the
//! floating-point elements rounded by the float emulator.
//!
//! The scale follows the OCP MX v1.0 spec (§6.3): X = 2^(⌊log₂ amax⌋ −
//! emax_elem), where emax_elem is the exponent of the element format's
//! largest normal number; each element is then V/X rounded to nearest-even
//! into the element format, saturating at its largest magnitude (as the
//! reference implementation clamps). Because ⌊log₂ amax⌋ drops the
//! mantissa, amax/X lies in [2^emax, 2^(emax+1)), which can exceed the
//! element's max (E4M3's 448 = 1.75·2⁸, E2M1's 6 = 1.5·2²): the block's
//! largest values may clamp — counted as `saturated`. A block of zeros takes
//! the smallest scale, 2⁻¹²⁷. NaN and ±inf are refused (the spec marks such
//! a block with the NaN scale, 0xFF; here they are an error, as elsewhere).

use serde::Serialize;

use super::QuantError;
use super::scheme::Granularity;
use super::tensor::{ErrorStats, check_matrix, error_stats};
use crate::float::{Format, Rounding, Specials, pow2};

/// Values per block: the spec's k.
pub const BLOCK: usize = 32;
/// E8M0's exponent range: 2⁻¹²⁷ to 2¹²⁷ (the pattern 0xFF is NaN).
pub const SCALE_EXP_MIN: i32 = -127;
pub const SCALE_EXP_MAX: i32 = 127;

/// An MX element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum MxElement {
    Fp8E4m3,
    Fp8E5m2,
    Fp6E2m3,
    Fp6E3m2,
    Fp4E2m1,
    Int8,
}

impl MxElement {
    pub const ALL: [Self; 6] = [
        Self::Fp8E4m3,
        Self::Fp8E5m2,
        Self::Fp6E2m3,
        Self::Fp6E3m2,
        Self::Fp4E2m1,
        Self::Int8,
    ];

    /// The spec's names: `mxfp8-e4m3`, …, `mxfp4`, `mxint8`.
    pub fn id(self) -> &'static str {
        match self {
            Self::Fp8E4m3 => "mxfp8-e4m3",
            Self::Fp8E5m2 => "mxfp8-e5m2",
            Self::Fp6E2m3 => "mxfp6-e2m3",
            Self::Fp6E3m2 => "mxfp6-e3m2",
            Self::Fp4E2m1 => "mxfp4",
            Self::Int8 => "mxint8",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().to_ascii_lowercase();
        Self::ALL.into_iter().find(|e| e.id() == text)
    }

    /// Bits per element.
    pub fn bits(self) -> u32 {
        match self {
            Self::Fp8E4m3 | Self::Fp8E5m2 | Self::Int8 => 8,
            Self::Fp6E2m3 | Self::Fp6E3m2 => 6,
            Self::Fp4E2m1 => 4,
        }
    }

    /// The element's float format, saturating (`None` for INT8).
    pub fn format(self) -> Option<Format> {
        let finite = |name: &str, exp_bits, man_bits| Format {
            name: name.to_owned(),
            exp_bits,
            man_bits,
            bias: (1 << (exp_bits - 1)) - 1,
            specials: Specials::Finite,
            saturate: true,
        };
        let saturating = |f: Format| Format {
            saturate: true,
            ..f
        };
        match self {
            Self::Fp8E4m3 => Some(saturating(Format::fp8_e4m3())),
            Self::Fp8E5m2 => Some(saturating(Format::fp8_e5m2())),
            Self::Fp6E2m3 => Some(finite("fp6-e2m3", 2, 3)),
            Self::Fp6E3m2 => Some(finite("fp6-e3m2", 3, 2)),
            Self::Fp4E2m1 => Some(finite("fp4-e2m1", 2, 1)),
            Self::Int8 => None,
        }
    }

    /// The exponent of the element's largest normal number (INT8, two's
    /// complement with an implicit 2⁻⁶, tops out just under 2: 0).
    pub fn emax(self) -> i32 {
        self.format().map_or(0, |f| f.emax())
    }

    /// The element's largest magnitude.
    pub fn max(self) -> f64 {
        self.format()
            .map_or(127.0 / 64.0, |f| f.decode(f.max_finite_bits(false)))
    }
}

/// An element's rounding, its formats made once: `x` (already divided by
/// the scale) rounded into the element, and whether the result was
/// clamped — whether x rounds past the element's largest value (a value
/// just past it that rounds down to it, or INT8's −2, is not clamped).
struct ElementRounding {
    /// The element's format and the same with one more exponent bit, in
    /// which a value past the element's range keeps its rounding instead
    /// of clamping; `None` for INT8.
    formats: Option<(Format, Format)>,
}

impl ElementRounding {
    fn new(element: MxElement) -> Self {
        let formats = element.format().map(|f| {
            let wide = Format {
                saturate: false,
                specials: Specials::Ieee,
                exp_bits: f.exp_bits.max(2) + 1,
                bias: f.bias,
                ..f.clone()
            };
            (f, wide)
        });
        Self { formats }
    }

    fn round(&self, x: f64) -> (f64, bool) {
        match &self.formats {
            Some((f, wide)) => {
                let y = f.decode(f.encode_f64(x, Rounding::NearestEven));
                let w = wide.decode(wide.encode_f64(x, Rounding::NearestEven));
                (y, w.abs() > y.abs())
            }
            None => {
                let code = (x * 64.0).round_ties_even();
                (
                    code.clamp(-128.0, 127.0) / 64.0,
                    !(-128.0..=127.0).contains(&code),
                )
            }
        }
    }
}

impl crate::names::Named for MxElement {
    fn name_key(&self) -> String {
        format!("quant.mx.{}", self.id())
    }
}

/// The shared scale's exponent for a block whose largest magnitude is
/// `amax`: ⌊log₂ amax⌋ − emax_elem, within E8M0's range.
pub fn scale_exponent(amax: f64, element: MxElement) -> i32 {
    if amax <= 0.0 || !amax.is_finite() {
        return SCALE_EXP_MIN;
    }
    // ⌊log₂ amax⌋ exactly, from the f64's exponent field (amax comes from
    // f32 values, normal in f64).
    let floor_log2 = ((amax.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    (floor_log2 - element.emax()).clamp(SCALE_EXP_MIN, SCALE_EXP_MAX)
}

/// A tensor in an MX format: each block's scale exponent and the values
/// restored (element × scale), with what it cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MxTensor {
    pub element: MxElement,
    pub scale_exponents: Vec<i32>,
    pub restored: Vec<f64>,
    /// Elements that clamped at the element's largest magnitude.
    pub saturated: usize,
    pub error: ErrorStats,
    /// Bits per value: the element's, plus 8 per block of [`BLOCK`].
    pub bits_per_value: f64,
}

/// `values` (`[rows, cols]`) in `element`, blocks of [`BLOCK`] running
/// along `axis` (the reduction axis; a shorter last block, when the axis is
/// not a multiple of 32, gets its own scale).
pub fn quantise(
    values: &[f32],
    rows: usize,
    cols: usize,
    axis: usize,
    element: MxElement,
) -> Result<MxTensor, QuantError> {
    if values.is_empty() {
        return Err(QuantError::Empty);
    }
    check_matrix(values, rows, cols)?;
    let granularity = Granularity::Group { axis, size: BLOCK };
    granularity.validate()?;
    let (block_of, blocks) = granularity.blocks(rows, cols);
    let mut amax = vec![0.0f64; blocks];
    for (&v, &b) in values.iter().zip(&block_of) {
        amax[b as usize] = amax[b as usize].max(f64::from(v).abs());
    }
    let scale_exponents: Vec<i32> = amax.iter().map(|&a| scale_exponent(a, element)).collect();
    let rounding = ElementRounding::new(element);
    let mut saturated = 0;
    let restored: Vec<f64> = values
        .iter()
        .zip(&block_of)
        .map(|(&v, &b)| {
            let scale = pow2(scale_exponents[b as usize]);
            let (rounded, clamped) = rounding.round(f64::from(v) / scale);
            saturated += usize::from(clamped);
            rounded * scale
        })
        .collect();
    let error = error_stats(values, &restored, saturated);
    let bits_per_value = f64::from(element.bits()) + 8.0 * blocks as f64 / values.len() as f64;
    Ok(MxTensor {
        element,
        scale_exponents,
        restored,
        saturated,
        error,
        bits_per_value,
    })
}

/// One MX format applied to the MLP's weights (blocks along K; biases
/// stay f32).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MxRow {
    pub element: MxElement,
    pub accuracy: f64,
    /// Accuracy minus the fp32 model's.
    pub delta: f64,
    pub error: ErrorStats,
    pub saturated: usize,
    pub bits_per_value: f64,
}

/// The MX formats on the trained MLP, beside integers per group of 32 with
/// fp16 scales (`baselines`: int8 and int4, with their bits per value).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MxReport {
    pub fp32_accuracy: f64,
    pub rows: Vec<MxRow>,
    pub baselines: Vec<(super::ptq::Cell, f64)>,
}

/// Every element type of [`MxElement::ALL`] on `trained`'s weights, and the
/// integer baselines.
pub fn mlp_table(trained: &super::ptq::Trained) -> Result<MxReport, QuantError> {
    use super::ptq::{self, GranularityKind};
    let mut rows = Vec::new();
    for element in MxElement::ALL {
        let mut model = trained.model.clone();
        let (mut all, mut restored, mut saturated, mut blocks) = (Vec::new(), Vec::new(), 0, 0.0);
        for layer in &mut model.layers {
            let (r, c) = layer.weight.rows_cols();
            let t = quantise(&layer.weight.data, r, c, 0, element)?;
            all.extend_from_slice(&layer.weight.data);
            restored.extend_from_slice(&t.restored);
            saturated += t.saturated;
            blocks += t.scale_exponents.len() as f64;
            layer.weight.data = t.restored.iter().map(|v| *v as f32).collect();
        }
        let accuracy = ptq::accuracy(&model, &trained.test, &trained.calibration, None)?;
        rows.push(MxRow {
            element,
            accuracy,
            delta: accuracy - trained.fp32_accuracy,
            error: error_stats(&all, &restored, saturated),
            saturated,
            bits_per_value: f64::from(element.bits()) + 8.0 * blocks / all.len() as f64,
        });
    }
    let mut baselines = Vec::new();
    for bits in [8, 4] {
        let kind = GranularityKind::Group(BLOCK);
        let settings = ptq::weight_settings(bits, kind);
        let cell = ptq::measure(trained, &settings, kind, None)?;
        let bytes = ptq::model_bytes(&trained.model, &settings)?;
        baselines.push((cell, bytes.bits_per_param));
    }
    Ok(MxReport {
        fp32_accuracy: trained.fp32_accuracy,
        rows,
        baselines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_element_formats_are_the_specs() {
        let maxes: Vec<f64> = MxElement::ALL.iter().map(|e| e.max()).collect();
        assert_eq!(maxes, [448.0, 57344.0, 7.5, 28.0, 6.0, 127.0 / 64.0]);
        let emaxes: Vec<i32> = MxElement::ALL.iter().map(|e| e.emax()).collect();
        assert_eq!(emaxes, [8, 15, 2, 4, 2, 0]);
        // FP4 E2M1 holds exactly 0, 0.5, 1, 1.5, 2, 3, 4, 6 (and their negatives).
        let fp4 = MxElement::Fp4E2m1.format().unwrap_or_else(Format::fp32);
        let values: Vec<f64> = (0..8).map(|b| fp4.decode(b)).collect();
        assert_eq!(values, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
        assert_eq!(fp4.decode(0b1111), -6.0);
        // Nearest-even: 5 ties between 4 (mantissa 0) and 6; 7 and 1e9 clamp.
        let round = |x| ElementRounding::new(MxElement::Fp4E2m1).round(x).0;
        assert_eq!(
            (round(5.0), round(7.0), round(1e9), round(-1e9)),
            (4.0, 6.0, 6.0, -6.0)
        );
        assert_eq!(round(0.2), 0.0);
        assert_eq!(
            ElementRounding::new(MxElement::Int8).round(1.0 / 3.0).0,
            21.0 / 64.0
        );
        assert_eq!(
            ElementRounding::new(MxElement::Int8).round(-5.0),
            (-2.0, true)
        );
        // Clamped only where the rounding went past the element's range:
        // INT8's −2 is a code of its own, 1.99 rounds to 127/64.
        assert_eq!(
            ElementRounding::new(MxElement::Int8).round(-2.0),
            (-2.0, false)
        );
        assert_eq!(
            ElementRounding::new(MxElement::Int8).round(127.4 / 64.0),
            (127.0 / 64.0, false)
        );
        assert_eq!(
            ElementRounding::new(MxElement::Int8).round(2.5),
            (127.0 / 64.0, true)
        );
        assert_eq!(
            ElementRounding::new(MxElement::Fp4E2m1).round(6.2),
            (6.0, false)
        );
        assert_eq!(
            ElementRounding::new(MxElement::Fp4E2m1).round(7.5),
            (6.0, true)
        );
        assert_eq!(
            ElementRounding::new(MxElement::Fp8E4m3).round(460.0),
            (448.0, false)
        );
        assert_eq!(
            ElementRounding::new(MxElement::Fp8E4m3).round(500.0),
            (448.0, true)
        );
        assert_eq!(MxElement::parse("MXFP4"), Some(MxElement::Fp4E2m1));
    }

    #[test]
    fn the_scale_is_the_floor_of_log2_amax_less_the_elements_emax() {
        // amax 5: ⌊log₂ 5⌋ = 2; E2M1's emax 2 → X = 2⁰, and 5 rounds to 4.
        assert_eq!(scale_exponent(5.0, MxElement::Fp4E2m1), 0);
        assert_eq!(scale_exponent(8.0, MxElement::Fp4E2m1), 1);
        assert_eq!(scale_exponent(7.999, MxElement::Fp4E2m1), 0);
        assert_eq!(scale_exponent(1.0, MxElement::Fp8E4m3), -8);
        assert_eq!(scale_exponent(0.0, MxElement::Fp8E4m3), SCALE_EXP_MIN);
        assert_eq!(scale_exponent(1e-300, MxElement::Fp8E4m3), SCALE_EXP_MIN);
        // amax 7.5 with E2M1: X = 1, 7.5 > 6 clamps — the spec's scale
        // leaves the block's top octave partly outside the element's range.
        let t = quantise(&[7.5, 1.0, -0.5, 0.0], 1, 4, 1, MxElement::Fp4E2m1)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.restored, vec![6.0, 1.0, -0.5, 0.0]);
        assert_eq!((t.saturated, t.scale_exponents.clone()), (1, vec![0]));
    }

    #[test]
    fn blocks_run_along_the_axis_and_the_error_is_bounded() {
        // 64 × 3 along axis 0: two blocks per column, six in all.
        let values: Vec<f32> = (0..192)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        for element in MxElement::ALL {
            let t = quantise(&values, 64, 3, 0, element).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(t.scale_exponents.len(), 6);
            assert!((t.bits_per_value - (f64::from(element.bits()) + 0.25)).abs() < 1e-12);
            // Inside the element's range, the error is at most half a step
            // of the block's coarsest binade: X · 2^(emax − mantissa bits − 1),
            // or X · 2⁻⁷ for INT8.
            let half_step = match element.format() {
                Some(f) => pow2(f.emax() - f.man_bits as i32 - 1),
                None => pow2(-7),
            };
            for (i, (&v, &r)) in values.iter().zip(&t.restored).enumerate() {
                let block = (i % 3) * 2 + (i / 3) / 32;
                let scale = pow2(t.scale_exponents[block]);
                if (f64::from(v) / scale).abs() <= element.max() {
                    assert!(
                        (f64::from(v) - r).abs() <= half_step * scale,
                        "{element:?} {v} {r}"
                    );
                }
            }
        }
        let wider =
            quantise(&values, 64, 3, 0, MxElement::Fp8E4m3).unwrap_or_else(|e| panic!("{e}"));
        let narrow =
            quantise(&values, 64, 3, 0, MxElement::Fp4E2m1).unwrap_or_else(|e| panic!("{e}"));
        assert!(wider.error.rms_error < narrow.error.rms_error);
    }

    #[test]
    fn the_mlp_keeps_its_accuracy_in_mxfp8_and_the_rows_cost_what_they_say() {
        let trained = crate::quant::ptq::train(&crate::quant::ptq::PtqSettings {
            epochs: 3,
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let report = mlp_table(&trained).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(report.rows.len(), MxElement::ALL.len());
        let e4m3 = &report.rows[0];
        assert!(e4m3.delta.abs() <= 0.01, "{e4m3:?}");
        // 64 × 128 and 128 × 10 weights, blocks of 32 along K: 2 · 128 + 4 · 10.
        let blocks = 2.0 * 128.0 + 4.0 * 10.0;
        let fp4 = &report.rows[4];
        assert!((fp4.bits_per_value - (4.0 + 8.0 * blocks / 9472.0)).abs() < 1e-12);
        assert!(fp4.error.rms_error > e4m3.error.rms_error);
        // int4 per group of 32 with fp16 scales: 4 + 16/32 bits.
        assert!(
            (report.baselines[1].1 - 4.5).abs() < 1e-9,
            "{:?}",
            report.baselines[1]
        );
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(matches!(
            quantise(&[], 0, 0, 0, MxElement::Int8),
            Err(QuantError::Empty)
        ));
        assert!(matches!(
            quantise(&[1.0, f32::NAN], 1, 2, 1, MxElement::Int8),
            Err(QuantError::NotFinite { .. })
        ));
        assert!(matches!(
            quantise(&[1.0], 1, 2, 1, MxElement::Int8),
            Err(QuantError::Shape { .. })
        ));
        assert!(matches!(
            quantise(&[1.0], 1, 1, 2, MxElement::Int8),
            Err(QuantError::Axis { .. })
        ));
        // A block of zeros: the smallest scale, zeros back.
        let zeros =
            quantise(&[0.0; 40], 1, 40, 1, MxElement::Fp4E2m1).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(zeros.scale_exponents, vec![SCALE_EXP_MIN, SCALE_EXP_MIN]);
        assert!(zeros.restored.iter().all(|v| *v == 0.0));
    }
}
