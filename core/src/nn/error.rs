//! Why a training run cannot start, or a data set cannot load; the words
//! are in `assets/errors.ron`.

use crate::float::{FormatError, ParseError};

crate::catalog_error! {
    /// Settings or a configuration that do not make a training run.
    pub enum TrainError {
        LearningRate { value: f64 } = "train.learning_rate",
        BatchSize { value: usize, max: usize } = "train.batch_size",
        Epochs { value: u64, max: u64 } = "train.epochs",
        WeightDecay = "train.weight_decay",
        LossWeight { value: f32 } = "train.loss_weight",
        MicroBatches { value: u32 } = "train.micro_batches",
        /// A precision policy names a format that does not exist.
        Format { reason: FormatError } = "train.format",
        UnknownActivation { name: String } = "train.unknown_activation",
        UnknownOptimizer { name: String } = "train.unknown_optimizer",
        UnknownScenario { name: String, choices: String } = "train.unknown_scenario",
        LossScale { value: String } = "train.loss_scale",
        /// A positive scale that fp32, where it is held, turns into 0 or inf.
        LossScaleRange { value: String, becomes: String } = "train.loss_scale_range",
        /// A positive loss weight that fp32 turns into 0 or inf.
        LossWeightRange { value: String, becomes: String } = "train.loss_weight_range",
        MasterWeights { value: String } = "train.master_weights",
        /// One entry of the hidden sizes (trimmed).
        LayerSize { value: String } = "train.layer_size",
        LossWeightText { reason: ParseError } = "train.loss_weight_text",
        /// Layer sizes, as written with `{:?}`.
        MlpShape { sizes: String } = "train.mlp_shape",
        TooWide = "train.too_wide",
        EmptyTrainingSet = "train.empty_training_set",
        Data { reason: DataError } = "train.data",
        /// A model's batch beyond what its memory allows.
        ModelBatch { value: u64, max: u64 } = "train.model_batch",
        ModelEpochs { value: u64, max: u64 } = "train.model_epochs",
        ModelSteps { value: u64, max: u64 } = "train.model_steps",
        ModelContext { value: usize, max: usize } = "train.model_context",
        /// The loss stopped being finite in this epoch.
        Diverged { epoch: u64 } = "train.diverged",
        /// The loss stopped being finite at this step.
        TextDiverged { step: u64 } = "train.text_diverged",
    }
}

crate::catalog_error! {
    /// Why a data set could not be loaded.
    pub enum DataError {
        Unknown { name: String, choices: String } = "data.unknown",
        /// MNIST on a build without it compiled in (fetch it instead).
        NotCompiledIn = "data.not_compiled_in",
        StillDownloading = "data.still_downloading",
        Download { detail: String } = "data.download",
        NotCompressed { name: String, detail: String } = "data.not_compressed",
        TooShort { name: String } = "data.too_short",
        NotDlds { name: String } = "data.not_dlds",
        HeaderMismatch { name: String, count: usize, rows: usize, cols: usize } = "data.header_mismatch",
        Label { name: String, label: u8 } = "data.label",
    }
}

impl From<FormatError> for TrainError {
    fn from(reason: FormatError) -> Self {
        Self::Format { reason }
    }
}

impl From<DataError> for TrainError {
    fn from(reason: DataError) -> Self {
        Self::Data { reason }
    }
}

crate::catalog_error! {
    /// Training stopped: the loss became infinite or NaN. Each variant names
    /// the setting most likely at fault.
    pub enum Divergence {
        LearningRate { step: u64, epoch: u64, loss: String, lr: f64 } = "train.diverged.lr",
        LossWeight { step: u64, epoch: u64, loss: String, weight: f32 } = "train.diverged.loss_weight",
        Precision { step: u64, epoch: u64, loss: String, format: String, max: String } = "train.diverged.precision",
    }
}
