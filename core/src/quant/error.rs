//! Why a quantisation cannot be made; the words are in `assets/errors.ron`.

use crate::nn::TrainError;

crate::catalog_error! {
    /// Settings, tensors or models that do not make a quantisation.
    pub enum QuantError {
        /// Bits outside 2–8.
        Bits { bits: u32, min: u32, max: u32 } = "quant.bits",
        /// A symmetric mapping needs a signed format.
        SymmetricUnsigned = "quant.symmetric_unsigned",
        GroupSize = "quant.group_size",
        /// A channel or group axis a 2-D tensor does not have.
        Axis { axis: usize } = "quant.axis",
        Percentile { value: f64 } = "quant.percentile",
        Fraction { value: f64 } = "quant.fraction",
        /// A value that is NaN or infinite, at this index.
        NotFinite { index: usize, value: String } = "quant.not_finite",
        Empty = "quant.empty",
        /// A range whose low end is above its high end.
        Range { lo: f64, hi: f64 } = "quant.range",
        Shape { len: usize, rows: usize, cols: usize } = "quant.shape",
        OutlierScale { value: f64, max: f64 } = "quant.outlier_scale",
        OutlierChannel { channel: usize, features: usize } = "quant.outlier_channel",
        Params { value: f64 } = "quant.params",
        Model { reason: TrainError } = "quant.model",
        GemmEmpty { m: u32, n: u32, k: u32 } = "quant.gemm_empty",
        /// A K whose int32 sum could overflow.
        GemmK { k: u32, max: u32 } = "quant.gemm_k",
        GemmOutputs { outputs: u64, max: u64 } = "quant.gemm_outputs",
        /// A requantisation multiplier that is not positive and finite, or
        /// outside what 31 bits and a shift of 1 to 62 hold.
        Multiplier { value: f64 } = "quant.multiplier",
        ZeroPoint { value: i32 } = "quant.zero_point",
        Epochs { epochs: u64, max: u64 } = "quant.epochs",
        /// A block too small for the entropy (KL) clip's histogram.
        KlValues { values: usize, min: usize } = "quant.kl_values",
    }
}

impl From<TrainError> for QuantError {
    fn from(reason: TrainError) -> Self {
        Self::Model { reason }
    }
}
