//! Post-training quantisation of the engine's MLP: trained once by the
//! engine's own [`Trainer`] (the autograd lesson's and `dlsys-lab train`'s
//! run), then its weights — and, for W8A8, the activations entering each
//! layer — quantised and the test accuracy measured again.

use serde::Serialize;

use super::QuantError;
use super::scheme::{Granularity, IntFormat, Mapping, QParams, QuantSettings};
use super::tensor::{ErrorStats, error_stats, fake_quantise, quantise_with_stats};
use crate::autograd::tensor::matmul_rows;
use crate::float::Rounding;
use crate::nn::data::{self, Dataset};
use crate::nn::settings::RunSettings;
use crate::nn::{Activation, Mlp, Status, TrainError, Trainer, evaluate};

/// What to train before quantising: the data set, hidden sizes, epochs and
/// seed of the engine's run (the rest are [`RunSettings`]' defaults).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PtqSettings {
    pub dataset: String,
    pub hidden: String,
    pub epochs: u64,
    pub seed: u64,
}

impl Default for PtqSettings {
    fn default() -> Self {
        Self {
            dataset: "digits".to_owned(),
            hidden: "128".to_owned(),
            epochs: 10,
            seed: 1,
        }
    }
}

/// A trained MLP, its test set and its calibration set.
#[derive(Clone, Debug)]
pub struct Trained {
    pub model: Mlp<f32>,
    pub test: Dataset,
    /// The first [`CALIBRATION_EXAMPLES`] training examples: what static
    /// activation scales are taken from (never the test set).
    pub calibration: Dataset,
    pub fp32_accuracy: f64,
}

/// The calibration set's size.
pub const CALIBRATION_EXAMPLES: usize = 256;

/// Trains the MLP with the engine's trainer.
pub fn train(settings: &PtqSettings) -> Result<Trained, QuantError> {
    let run = RunSettings {
        dataset: settings.dataset.clone(),
        hidden: settings.hidden.clone(),
        epochs: settings.epochs,
        seed: settings.seed,
        ..RunSettings::default()
    };
    let (name, config) = run.config()?;
    let (train, test) = data::load_split(&name, config.seed).map_err(TrainError::from)?;
    let calibration = train.first(CALIBRATION_EXAMPLES.min(train.len()));
    let mut trainer = Trainer::new(config, train, test)?;
    if let Status::Diverged { epoch, .. } = trainer.run() {
        return Err(TrainError::Diverged { epoch: *epoch }.into());
    }
    let fp32_accuracy = evaluate(&trainer.model, &trainer.test).1;
    Ok(Trained {
        model: trainer.model,
        test: trainer.test,
        calibration,
        fp32_accuracy,
    })
}

/// Weights of a layer `[in, out]`: per-channel means per output channel
/// (axis 1), groups run along the reduction axis K (axis 0).
pub fn weight_granularity(kind: GranularityKind) -> Granularity {
    weight_granularity_along(kind, 0)
}

/// The same for a weight whose reduction runs along `k_axis` (0 for
/// `[in, out]`, 1 for a convolution's `[out, patch]`): channels are the
/// other axis, groups run along this one.
pub fn weight_granularity_along(kind: GranularityKind, k_axis: usize) -> Granularity {
    match kind {
        GranularityKind::Tensor => Granularity::Tensor,
        GranularityKind::Channel => Granularity::Channel {
            axis: 1 - k_axis.min(1),
        },
        GranularityKind::Group(size) => Granularity::Group {
            axis: k_axis.min(1),
            size,
        },
    }
}

/// A granularity as the CLI and the page choose it, before it meets a
/// tensor's axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum GranularityKind {
    Tensor,
    Channel,
    Group(usize),
}

impl GranularityKind {
    /// `tensor`, `channel`, `group:128`.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "tensor" => Some(Self::Tensor),
            "channel" => Some(Self::Channel),
            other => other
                .strip_prefix("group:")
                .and_then(|n| n.trim().parse().ok())
                .map(Self::Group),
        }
    }

    pub fn id(&self) -> String {
        weight_granularity(*self).id()
    }

    /// "per tensor", "per channel", "per group of 32", in any language.
    pub fn words(&self) -> crate::names::Words {
        match self {
            Self::Tensor => crate::names::Words::new("quant.granularity.tensor", &[]),
            Self::Channel => crate::names::Words::new("quant.granularity.channel", &[]),
            Self::Group(size) => {
                crate::names::Words::new("quant.granularity.group_of", &[("size", size)])
            }
        }
    }
}

/// How the activations entering each layer are quantised (int8,
/// symmetric): from each evaluation batch (dynamic), or fixed beforehand
/// from the calibration set (static).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum ActScales {
    /// One scale for the whole batch.
    PerTensor,
    /// One scale per layer, fixed from the largest |x| that layer's input
    /// reaches over the calibration set (the fp32 activations of the model
    /// with its quantised weights); larger values at test time clip.
    StaticTensor,
    /// One scale per row (token): factors out of an integer GEMM.
    PerToken,
    /// One scale per input channel (along K): does not factor out of an
    /// integer GEMM — fake quantisation only.
    PerInputChannel,
}

impl ActScales {
    pub const ALL: [Self; 3] = [Self::PerTensor, Self::PerToken, Self::PerInputChannel];

    pub fn id(self) -> &'static str {
        match self {
            Self::PerTensor => "tensor",
            Self::StaticTensor => "static-tensor",
            Self::PerToken => "token",
            Self::PerInputChannel => "input-channel",
        }
    }

    /// Whether an integer GEMM can apply these scales after accumulating.
    pub fn integer_gemm(self) -> bool {
        self != Self::PerInputChannel
    }

    /// The granularity over a `[rows, K]` activation.
    fn granularity(self) -> Granularity {
        match self {
            Self::PerTensor | Self::StaticTensor => Granularity::Tensor,
            Self::PerToken => Granularity::Channel { axis: 0 },
            Self::PerInputChannel => Granularity::Channel { axis: 1 },
        }
    }
}

impl crate::names::Named for ActScales {
    fn name_key(&self) -> String {
        format!("quant.acts.{}", self.id())
    }
}

/// Rows per evaluation batch: dynamic activation scales are taken per batch.
pub const EVAL_BATCH: usize = 500;

/// The model with every layer's weights fake-quantised (biases stay f32),
/// and the weights' error over all layers.
pub fn quantise_weights(
    model: &Mlp<f32>,
    settings: &QuantSettings,
) -> Result<(Mlp<f32>, ErrorStats), QuantError> {
    let mut out = model.clone();
    let (mut all, mut restored, mut clipped) = (Vec::new(), Vec::new(), 0);
    for layer in &mut out.layers {
        let (rows, cols) = layer.weight.rows_cols();
        let (q, stats) = quantise_with_stats(&layer.weight.data, rows, cols, settings)?;
        let back = q.dequantise();
        all.extend_from_slice(&layer.weight.data);
        restored.extend_from_slice(&back);
        clipped += stats.clipped;
        layer.weight.data = back.into_iter().map(|v| v as f32).collect();
    }
    Ok((out, error_stats(&all, &restored, clipped)))
}

/// Test accuracy of `model` with the input of every layer fake-quantised
/// to int8 (symmetric) when `acts` is set: dynamic scales from each batch
/// of [`EVAL_BATCH`] rows, or static ones fixed from `calibration` — the
/// forward pass of [`Mlp::logits`] with that one step added.
pub fn accuracy(
    model: &Mlp<f32>,
    data: &Dataset,
    calibration: &Dataset,
    acts: Option<ActScales>,
) -> Result<f64, QuantError> {
    let Some(acts) = acts else {
        return Ok(evaluate(model, data).1);
    };
    if data.is_empty() {
        return Err(QuantError::Empty);
    }
    // Static scales: each layer's input amax over the calibration set.
    let fixed = if acts == ActScales::StaticTensor {
        if calibration.is_empty() {
            return Err(QuantError::Empty);
        }
        let mut amax = vec![0.0f64; model.layers.len()];
        forward(
            model,
            calibration.x.clone(),
            calibration.len(),
            &mut |i, h, _| {
                amax[i] = h.iter().fold(amax[i], |m, v| m.max(f64::from(v.abs())));
                Ok(h)
            },
        )?;
        let int8 = IntFormat::signed(8);
        amax.iter()
            .map(|&a| QParams::for_range(-a, a, int8, Mapping::Symmetric))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let settings = QuantSettings {
        granularity: acts.granularity(),
        ..QuantSettings::default()
    };
    let mut correct = 0;
    for start in (0..data.len()).step_by(EVAL_BATCH) {
        let rows = EVAL_BATCH.min(data.len() - start);
        let x = data.x[start * data.features..(start + rows) * data.features].to_vec();
        let h = forward(model, x, rows, &mut |i, h, k| match fixed.get(i) {
            Some(p) => Ok(h
                .iter()
                .map(|&v| p.dequantise(p.quantise(f64::from(v), Rounding::NearestEven, 0)) as f32)
                .collect()),
            None => fake_quantise(&h, rows, k, &settings),
        })?;
        let labels = &data.y[start..start + rows];
        let classes = model.layers.last().map_or(1, |l| l.bias.numel());
        correct += h
            .chunks(classes)
            .zip(labels)
            .filter(|(row, label)| argmax(row) == **label)
            .count();
    }
    Ok(correct as f64 / data.len() as f64)
}

/// The MLP's forward pass over `rows` rows of `h`, each layer's input
/// passed through `input(layer, h, K)` first (quantised, or only measured).
fn forward(
    model: &Mlp<f32>,
    mut h: Vec<f32>,
    rows: usize,
    input: &mut dyn FnMut(usize, Vec<f32>, usize) -> Result<Vec<f32>, QuantError>,
) -> Result<Vec<f32>, QuantError> {
    for (i, layer) in model.layers.iter().enumerate() {
        let k = layer.weight.rows_cols().0;
        h = input(i, h, k)?;
        let mut z = matmul_rows(&h, rows, &layer.weight);
        let cols = layer.bias.numel();
        for row in z.data.chunks_mut(cols) {
            for (v, b) in row.iter_mut().zip(&layer.bias.data) {
                *v += *b;
            }
        }
        if i + 1 < model.layers.len() {
            z = match model.activation {
                Activation::Relu => z.map(|v| v.max(0.0)),
                Activation::Tanh => z.map(f32::tanh),
                Activation::Sigmoid => z.map(|v| 1.0 / (1.0 + (-v).exp())),
            };
        }
        h = z.data;
    }
    Ok(h)
}

fn argmax(row: &[f32]) -> usize {
    row.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |best, (i, &v)| {
            if v > best.1 { (i, v) } else { best }
        })
        .0
}

/// One cell of the table: weights at `bits` with a granularity, and
/// activations (int8) when set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    pub bits: u32,
    pub granularity: GranularityKind,
    pub activations: Option<ActScales>,
    pub accuracy: f64,
    /// Accuracy minus the fp32 model's.
    pub delta: f64,
    pub weight_error: ErrorStats,
}

/// Weights symmetric at `bits` with `granularity`, min–max unless told.
pub fn weight_settings(bits: u32, granularity: GranularityKind) -> QuantSettings {
    QuantSettings {
        format: IntFormat::signed(bits),
        mapping: Mapping::Symmetric,
        granularity: weight_granularity(granularity),
        ..QuantSettings::default()
    }
}

/// One cell measured.
pub fn measure(
    trained: &Trained,
    weights: &QuantSettings,
    kind: GranularityKind,
    acts: Option<ActScales>,
) -> Result<Cell, QuantError> {
    let (model, weight_error) = quantise_weights(&trained.model, weights)?;
    let accuracy = accuracy(&model, &trained.test, &trained.calibration, acts)?;
    Ok(Cell {
        bits: weights.format.bits,
        granularity: kind,
        activations: acts,
        accuracy,
        delta: accuracy - trained.fp32_accuracy,
        weight_error,
    })
}

/// The bit widths of the table.
pub const GRID_BITS: [u32; 4] = [8, 6, 4, 3];

/// The table's cells: weight-only at [`GRID_BITS`] × per tensor, per
/// channel and per group of `group`, then W8A8 (activations per tensor,
/// dynamic) with weights per tensor and per channel.
pub fn grid_cells(group: usize) -> Vec<(u32, GranularityKind, Option<ActScales>)> {
    let mut cells = Vec::new();
    for bits in GRID_BITS {
        for kind in [
            GranularityKind::Tensor,
            GranularityKind::Channel,
            GranularityKind::Group(group),
        ] {
            cells.push((bits, kind, None));
        }
    }
    for acts in [ActScales::PerTensor, ActScales::StaticTensor] {
        for kind in [GranularityKind::Tensor, GranularityKind::Channel] {
            cells.push((8, kind, Some(acts)));
        }
    }
    cells
}

/// Every cell of [`grid_cells`], the weights clipped by `calibration`,
/// reporting `(done, total)` after each.
pub fn grid(
    trained: &Trained,
    group: usize,
    calibration: super::Calibration,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<Cell>, QuantError> {
    calibration.validate()?;
    let cells = grid_cells(group);
    let total = cells.len();
    let mut out = Vec::with_capacity(total);
    for (i, (bits, kind, acts)) in cells.into_iter().enumerate() {
        let weights = QuantSettings {
            calibration,
            ..weight_settings(bits, kind)
        };
        out.push(measure(trained, &weights, kind, acts)?);
        progress(i + 1, total);
    }
    Ok(out)
}

/// The outlier demonstration's settings: input feature `channel` becomes
/// `magnitude · (x + 1)` — large in every example, as LLM activations'
/// outlier features are — and the first layer absorbs it exactly.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OutlierSettings {
    /// `None`: the feature with the largest variance on the test set.
    pub channel: Option<usize>,
    pub magnitude: f64,
}

impl Default for OutlierSettings {
    fn default() -> Self {
        Self {
            channel: None,
            magnitude: 200.0,
        }
    }
}

pub const MAX_OUTLIER: f64 = 1e4;

/// One line of the outlier demonstration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutlierRow {
    pub weights: GranularityKind,
    pub activations: ActScales,
    pub integer_gemm: bool,
    pub accuracy: f64,
    /// SmoothQuant's migration strength α, when the row was smoothed first.
    pub smooth_alpha: Option<f64>,
}

/// SmoothQuant's default migration strength (Xiao et al. 2023, §3).
pub const SMOOTH_ALPHA: f64 = 0.5;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutlierReport {
    pub channel: usize,
    pub magnitude: f64,
    /// The fp32 model before and after planting (the same function, so
    /// the same accuracy up to f32 rounding).
    pub fp32_accuracy: f64,
    pub planted_fp32_accuracy: f64,
    /// The largest |activation| entering the first layer, and the largest
    /// among the other features.
    pub outlier_amax: f64,
    pub others_amax: f64,
    pub rows: Vec<OutlierRow>,
    /// The examples SmoothQuant's activation maxima came from.
    pub calibration_examples: usize,
}

/// Plants the outlier channel and measures W8A8 at each activation
/// granularity (weights per tensor with per-tensor activations, per
/// channel otherwise).
pub fn outlier(trained: &Trained, settings: &OutlierSettings) -> Result<OutlierReport, QuantError> {
    let m = settings.magnitude;
    if !(m.is_finite() && (1.0..=MAX_OUTLIER).contains(&m)) {
        return Err(QuantError::OutlierScale {
            value: m,
            max: MAX_OUTLIER,
        });
    }
    let test = &trained.test;
    let f = test.features;
    let channel = match settings.channel {
        Some(c) if c >= f => {
            return Err(QuantError::OutlierChannel {
                channel: c,
                features: f,
            });
        }
        Some(c) => c,
        None => widest_feature(&trained.calibration),
    };
    let mut data = test.clone();
    for row in data.x.chunks_mut(f) {
        row[channel] = (m * (f64::from(row[channel]) + 1.0)) as f32;
    }
    // x'·W' + b' = x·W + b with W'[c] = W[c] / m and b' = b − W[c].
    let mut model = trained.model.clone();
    if let Some(first) = model.layers.first_mut() {
        let cols = first.bias.numel();
        let w_row = first.weight.data[channel * cols..(channel + 1) * cols].to_vec();
        for w in &mut first.weight.data[channel * cols..(channel + 1) * cols] {
            *w = (f64::from(*w) / m) as f32;
        }
        for (b, w) in first.bias.data.iter_mut().zip(&w_row) {
            *b -= *w;
        }
    }
    let mut calibration = trained.calibration.clone();
    for row in calibration.x.chunks_mut(f) {
        row[channel] = (m * (f64::from(row[channel]) + 1.0)) as f32;
    }
    let planted = Trained {
        model,
        test: data,
        calibration,
        fp32_accuracy: trained.fp32_accuracy,
    };
    let planted_fp32_accuracy = evaluate(&planted.model, &planted.test).1;
    let (mut outlier_amax, mut others_amax) = (0.0f64, 0.0f64);
    for row in planted.test.x.chunks(f) {
        for (j, &v) in row.iter().enumerate() {
            let v = f64::from(v.abs());
            if j == channel {
                outlier_amax = outlier_amax.max(v);
            } else {
                others_amax = others_amax.max(v);
            }
        }
    }
    let plan = [
        (GranularityKind::Tensor, ActScales::PerTensor),
        (GranularityKind::Channel, ActScales::PerTensor),
        (GranularityKind::Channel, ActScales::PerToken),
        (GranularityKind::Channel, ActScales::PerInputChannel),
    ];
    let rows = plan
        .into_iter()
        .map(|(kind, acts)| {
            let cell = measure(&planted, &weight_settings(8, kind), kind, Some(acts))?;
            Ok(OutlierRow {
                weights: kind,
                activations: acts,
                integer_gemm: acts.integer_gemm(),
                accuracy: cell.accuracy,
                smooth_alpha: None,
            })
        })
        .collect::<Result<Vec<_>, QuantError>>()?;
    // SmoothQuant, then the scales an integer GEMM can run.
    let smoothed = smooth(&planted, SMOOTH_ALPHA);
    let mut rows = rows;
    for acts in [ActScales::PerTensor, ActScales::PerToken] {
        let kind = GranularityKind::Channel;
        let cell = measure(&smoothed, &weight_settings(8, kind), kind, Some(acts))?;
        rows.push(OutlierRow {
            weights: kind,
            activations: acts,
            integer_gemm: acts.integer_gemm(),
            accuracy: cell.accuracy,
            smooth_alpha: Some(SMOOTH_ALPHA),
        });
    }
    Ok(OutlierReport {
        channel,
        magnitude: m,
        fp32_accuracy: trained.fp32_accuracy,
        planted_fp32_accuracy,
        outlier_amax,
        others_amax,
        rows,
        calibration_examples: planted.calibration.len(),
    })
}

/// SmoothQuant's migration on the first layer (Xiao et al. 2023, §3):
/// per input channel j, s_j = max|X_j|^α / max|W_j|^(1−α), the inputs
/// divided by s_j and the weight row j multiplied by it — the same
/// function, with the activations' outlier moved into the weights. The
/// activation maxima come from the calibration set (the first
/// [`CALIBRATION_EXAMPLES`] training examples, never the test set). A channel that is all zero (in the inputs or
/// the weights) keeps s = 1.
pub fn smooth(trained: &Trained, alpha: f64) -> Trained {
    let mut out = trained.clone();
    let f = out.test.features;
    let Some(first) = out.model.layers.first_mut() else {
        return out;
    };
    let cols = first.bias.numel();
    let calibration = &trained.calibration.x;
    let mut x_max = vec![0.0f64; f];
    for row in calibration.chunks(f) {
        for (m, &v) in x_max.iter_mut().zip(row) {
            *m = m.max(f64::from(v.abs()));
        }
    }
    let s: Vec<f64> = (0..f)
        .map(|j| {
            let w_max = first.weight.data[j * cols..(j + 1) * cols]
                .iter()
                .fold(0.0f64, |m, &w| m.max(f64::from(w.abs())));
            if x_max[j] > 0.0 && w_max > 0.0 {
                x_max[j].powf(alpha) / w_max.powf(1.0 - alpha)
            } else {
                1.0
            }
        })
        .collect();
    for (j, &sj) in s.iter().enumerate() {
        for w in &mut first.weight.data[j * cols..(j + 1) * cols] {
            *w = (f64::from(*w) * sj) as f32;
        }
    }
    for row in out
        .test
        .x
        .chunks_mut(f)
        .chain(out.calibration.x.chunks_mut(f))
    {
        for (v, &sj) in row.iter_mut().zip(&s) {
            *v = (f64::from(*v) / sj) as f32;
        }
    }
    out
}

/// The feature whose values vary most (ties: the first).
fn widest_feature(data: &Dataset) -> usize {
    let f = data.features;
    let n = data.len().max(1) as f64;
    let (mut sum, mut sq) = (vec![0.0f64; f], vec![0.0f64; f]);
    for row in data.x.chunks(f) {
        for (j, &v) in row.iter().enumerate() {
            sum[j] += f64::from(v);
            sq[j] += f64::from(v) * f64::from(v);
        }
    }
    (0..f)
        .map(|j| sq[j] / n - (sum[j] / n).powi(2))
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |best, (j, v)| {
            if v > best.1 { (j, v) } else { best }
        })
        .0
}

/// The bytes of the model's weights quantised under `settings` (scales in
/// fp16, zero points when asymmetric; biases, kept in f32, not counted),
/// through [`super::quantised_bytes`], the one byte count.
pub fn model_bytes(
    model: &Mlp<f32>,
    settings: &QuantSettings,
) -> Result<super::QuantBytes, QuantError> {
    settings.validate()?;
    let (mut params, mut blocks) = (0u64, 0u64);
    for layer in &model.layers {
        let (rows, cols) = layer.weight.rows_cols();
        params += (rows * cols) as u64;
        blocks += settings.granularity.blocks(rows, cols).1 as u64;
    }
    super::quantised_bytes(
        params,
        settings.format.bits,
        blocks,
        FP16_SCALE_BYTES,
        settings.mapping == Mapping::Asymmetric,
    )
}

/// Scales are stored in fp16.
pub const FP16_SCALE_BYTES: u32 = 2;
