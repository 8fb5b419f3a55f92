//! A small CNN for 28 × 28 digits: conv 5×5 (1 → 16, padding 2) → BatchNorm
//! → ReLU → max-pool 2 → conv 3×3 (16 → 32) → BatchNorm → ReLU → max-pool 2
//! → linear 1568 → 10, trained in f32 on the engine, a step at a time (so a
//! UI can interleave it with frames). BatchNorm keeps running statistics
//! for evaluation; evaluating with the batch's statistics, or with running
//! statistics never updated, are the classic bugs the lesson shows.

use rand::SeedableRng as _;

use super::fold::BatchNormParams;
use crate::autograd::{Conv2d, Graph, Pool2d, Tensor, Var};
use crate::memory::measure::{Formats, Held, Meter, Phase, held_by, metered_backward};
use crate::nn::optimizers::Optimizer;
use crate::nn::{Dataset, OptimizerKind};

/// Which statistics BatchNorm normalises with when evaluating.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BnStats {
    /// The running statistics training kept: right.
    Running,
    /// Each evaluation batch's own statistics: the model left in training mode.
    Batch,
    /// Mean 0, variance 1: running statistics never updated.
    Initial,
}

/// One BatchNorm layer: trainable γ and β, and running statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct Bn {
    pub gamma: Tensor<f32>,
    pub beta: Tensor<f32>,
    pub running_mean: Vec<f32>,
    pub running_var: Vec<f32>,
}

/// How far running statistics move toward each batch's (PyTorch's default).
pub const BN_MOMENTUM: f32 = 0.1;

impl Bn {
    fn new(channels: usize) -> Self {
        Self {
            gamma: Tensor::full(&[channels], 1.0),
            beta: Tensor::zeros(&[channels]),
            running_mean: vec![0.0; channels],
            running_var: vec![1.0; channels],
        }
    }

    /// The evaluation parameters, for folding.
    pub fn params(&self) -> BatchNormParams<f32> {
        BatchNormParams {
            gamma: self.gamma.data.clone(),
            beta: self.beta.data.clone(),
            running_mean: self.running_mean.clone(),
            running_var: self.running_var.clone(),
        }
    }

    fn update(&mut self, mean: &[f32], var: &[f32]) {
        for (r, m) in self.running_mean.iter_mut().zip(mean) {
            *r += BN_MOMENTUM * (m - *r);
        }
        for (r, v) in self.running_var.iter_mut().zip(var) {
            *r += BN_MOMENTUM * (v - *r);
        }
    }
}

/// The CNN's parameters and running statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct Cnn {
    pub conv1: Tensor<f32>,
    pub bn1: Bn,
    pub conv2: Tensor<f32>,
    pub bn2: Bn,
    pub fc_w: Tensor<f32>,
    pub fc_b: Tensor<f32>,
    /// When set, the input of each convolution and of the linear layer is
    /// fake-quantised to integers of these bits with a per-tensor scale of
    /// its own (W8A8's activations); `None` as trained.
    pub act_bits: Option<u32>,
}

/// The layers' geometry.
/// Channels after the first and the second convolution.
pub const C1: usize = 16;
pub const C2: usize = 32;

pub const CONV1: Conv2d = Conv2d {
    in_channels: 1,
    out_channels: C1,
    height: 28,
    width: 28,
    kernel: (5, 5),
    stride: 1,
    padding: 2,
    dilation: 1,
};
pub const POOL1: Pool2d = Pool2d {
    channels: C1,
    height: 28,
    width: 28,
    kernel: 2,
    stride: 2,
};
pub const CONV2: Conv2d = Conv2d {
    in_channels: C1,
    out_channels: C2,
    height: 14,
    width: 14,
    kernel: (3, 3),
    stride: 1,
    padding: 1,
    dilation: 1,
};
pub const POOL2: Pool2d = Pool2d {
    channels: C2,
    height: 14,
    width: 14,
    kernel: 2,
    stride: 2,
};
/// Features into the linear layer: C2 channels of 7 × 7.
pub const FLAT: usize = C2 * 7 * 7;

/// A training step's result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    pub loss: f32,
    pub correct: usize,
}

fn he(rng: &mut rand::rngs::StdRng, fan_in: usize, shape: &[usize]) -> Tensor<f32> {
    Tensor::uniform(rng, shape, (6.0 / fan_in as f64).sqrt())
}

impl Cnn {
    /// He-initialised weights, seeded.
    pub fn new(seed: u64) -> Self {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        Self {
            conv1: he(&mut rng, CONV1.patch(), &[C1, CONV1.patch()]),
            bn1: Bn::new(C1),
            conv2: he(&mut rng, CONV2.patch(), &[C2, CONV2.patch()]),
            bn2: Bn::new(C2),
            fc_w: he(&mut rng, FLAT, &[FLAT, 10]),
            fc_b: Tensor::zeros(&[10]),
            act_bits: None,
        }
    }

    /// Trainable values: weights, γ and β.
    pub fn parameter_count(&self) -> usize {
        self.params().iter().map(|t| t.numel()).sum()
    }

    /// The same count from the geometry alone, without building a model:
    /// the convolutions' weights (no bias: BatchNorm's β is one), γ and β
    /// per channel, the linear layer with its bias.
    pub fn architecture_parameters() -> usize {
        CONV1.parameters(false) + 2 * C1 + CONV2.parameters(false) + 2 * C2 + FLAT * 10 + 10
    }

    /// The parameters, in [`Self::step`]'s order.
    pub fn params(&self) -> [&Tensor<f32>; 8] {
        [
            &self.conv1,
            &self.bn1.gamma,
            &self.bn1.beta,
            &self.conv2,
            &self.bn2.gamma,
            &self.bn2.beta,
            &self.fc_w,
            &self.fc_b,
        ]
    }

    fn params_mut(&mut self) -> [&mut Tensor<f32>; 8] {
        [
            &mut self.conv1,
            &mut self.bn1.gamma,
            &mut self.bn1.beta,
            &mut self.conv2,
            &mut self.bn2.gamma,
            &mut self.bn2.beta,
            &mut self.fc_w,
            &mut self.fc_b,
        ]
    }

    /// Records the forward pass; `None` statistics means training (the
    /// batch's, returned per BatchNorm layer for the running update).
    #[allow(clippy::type_complexity)]
    fn forward(
        &self,
        g: &mut Graph<f32>,
        x: Var,
        eval: Option<BnStats>,
        as_params: bool,
    ) -> (Var, Vec<Var>, Vec<(Vec<f32>, Vec<f32>)>) {
        let leaves: Vec<Var> = self
            .params()
            .into_iter()
            .map(|t| {
                if as_params {
                    g.param(t.clone())
                } else {
                    g.input(t.clone())
                }
            })
            .collect();
        let mut stats = Vec::new();
        let act_bits = self.act_bits;
        let int = move |g: &mut Graph<f32>, h: Var| match act_bits {
            Some(bits) => crate::quant::tensor::fake_quantise_activation(g, h, bits),
            None => h,
        };
        let mut block = |g: &mut Graph<f32>,
                         h: Var,
                         conv: Conv2d,
                         pool: Pool2d,
                         w: Var,
                         bn: (&Bn, Var, Var)| {
            let h = int(g, h);
            let z = g.conv2d(h, w, None, conv);
            let (bn, gamma, beta) = bn;
            let channels = conv.out_channels;
            let n = match eval {
                None => {
                    let (y, mean, var) = g.batch_norm_train(z, gamma, beta, channels);
                    stats.push((mean, var));
                    y
                }
                Some(BnStats::Batch) => g.batch_norm_train(z, gamma, beta, channels).0,
                Some(BnStats::Running) => g.batch_norm_eval(
                    z,
                    gamma,
                    beta,
                    channels,
                    (&bn.running_mean, &bn.running_var),
                ),
                Some(BnStats::Initial) => {
                    let (zeros, ones) = (vec![0.0; channels], vec![1.0; channels]);
                    g.batch_norm_eval(z, gamma, beta, channels, (&zeros, &ones))
                }
            };
            let a = g.relu(n);
            g.max_pool(a, pool)
        };
        let h = block(
            g,
            x,
            CONV1,
            POOL1,
            leaves[0],
            (&self.bn1, leaves[1], leaves[2]),
        );
        let h = block(
            g,
            h,
            CONV2,
            POOL2,
            leaves[3],
            (&self.bn2, leaves[4], leaves[5]),
        );
        let h = int(g, h);
        let z = g.matmul(h, leaves[6]);
        let logits = g.add(z, leaves[7]);
        (logits, leaves, stats)
    }

    /// A training step's graph on a batch (batch statistics in its
    /// BatchNorms), after backward, with nothing updated: what a capture
    /// records.
    pub fn step(&self, x: &[f32], y: &[usize]) -> crate::nn::TapeStep<f32> {
        let mut g = Graph::new();
        let data = g.input(Tensor::new(x.to_vec(), &[y.len(), CONV1.input_len()]));
        let (logits, params, _) = self.forward(&mut g, data, None, true);
        let loss = g.softmax_cross_entropy(logits, y);
        g.backward(loss);
        crate::nn::TapeStep {
            graph: g,
            loss,
            params,
            data,
        }
    }

    /// One step of training on a batch (`x`: rows of 784 pixels).
    pub fn train_step(&mut self, optimizer: &mut Optimizer<f32>, x: &[f32], y: &[usize]) -> Step {
        self.train_step_metered(optimizer, x, y, None)
    }

    /// [`Self::train_step`], with every buffer it holds traced by `meter`.
    pub fn train_step_metered(
        &mut self,
        optimizer: &mut Optimizer<f32>,
        x: &[f32],
        y: &[usize],
        mut meter: Option<&mut Meter>,
    ) -> Step {
        let mut g = Graph::new();
        let xv = g.input(Tensor::new(x.to_vec(), &[y.len(), CONV1.input_len()]));
        let (logits, leaves, stats) = self.forward(&mut g, xv, None, true);
        let loss = g.softmax_cross_entropy(logits, y);
        let outside = meter.as_ref().map(|_| held_by(&self.params(), optimizer));
        match (meter.as_deref_mut(), &outside) {
            (Some(meter), Some(outside)) => metered_backward(&mut g, loss, outside, meter),
            _ => g.backward(loss),
        }
        let correct = g
            .value(logits)
            .argmax_rows()
            .iter()
            .zip(y)
            .filter(|(p, l)| p == l)
            .count();
        let grads = g.grads_or_zeros(&leaves);
        optimizer.step(&mut self.params_mut(), &grads);
        if let Some(meter) = meter {
            let held =
                Held::graph(&g, &Formats::F32, 4, &[]).plus(&held_by(&self.params(), optimizer));
            meter.record(Phase::Optimizer, &held);
        }
        self.bn1.update(&stats[0].0, &stats[0].1);
        self.bn2.update(&stats[1].0, &stats[1].1);
        Step {
            loss: g.value(loss).item(),
            correct,
        }
    }

    /// Logits for `rows` images, BatchNorm in evaluation with `stats`.
    pub fn logits(&self, x: &[f32], rows: usize, stats: BnStats) -> Tensor<f32> {
        let mut g = Graph::new();
        let xv = g.input(Tensor::new(x.to_vec(), &[rows, CONV1.input_len()]));
        let (logits, _, _) = self.forward(&mut g, xv, Some(stats), false);
        g.value(logits).into_owned()
    }

    /// The summed cross-entropy and the number classified right of the
    /// images `x` labelled `y`, evaluated together with `stats`.
    pub fn score(&self, x: &[f32], y: &[usize], stats: BnStats) -> (f64, usize) {
        let logits = self.logits(x, y.len(), stats);
        let mut loss = 0.0;
        for (r, label) in y.iter().enumerate() {
            let row = logits.row(r);
            let max = row.iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v));
            let sum: f64 = row.iter().map(|v| f64::from(v - max).exp()).sum();
            loss += sum.ln() - f64::from(row[*label] - max);
        }
        let predicted = logits.argmax_rows();
        let correct = predicted.iter().zip(y).filter(|(p, l)| p == l).count();
        (loss, correct)
    }

    /// Mean cross-entropy and accuracy on `data`, evaluated in batches of `batch`.
    pub fn evaluate(&self, data: &Dataset, stats: BnStats, batch: usize) -> (f64, f64) {
        let (mut correct, mut loss) = (0, 0.0);
        let indices: Vec<usize> = (0..data.len()).collect();
        for chunk in indices.chunks(batch.max(1)) {
            let (x, y) = data.gather(chunk);
            let (l, c) = self.score(&x, &y, stats);
            loss += l;
            correct += c;
        }
        let n = data.len().max(1) as f64;
        (loss / n, correct as f64 / n)
    }

    /// Accuracy on `data`, evaluated in batches of `batch`.
    pub fn accuracy(&self, data: &Dataset, stats: BnStats, batch: usize) -> f64 {
        self.evaluate(data, stats, batch).1
    }
}

/// Adam at `lr`: what the CNN trains with.
pub fn optimizer(lr: f64) -> Optimizer<f32> {
    Optimizer::new(OptimizerKind::adam(), lr, 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shapes_chain_and_a_step_lowers_the_loss_on_its_batch() {
        assert_eq!(CONV1.output(), Some((28, 28)));
        assert_eq!(POOL1.output_len(), CONV2.input_len());
        assert_eq!(POOL2.output_len(), FLAT);
        let mut cnn = Cnn::new(1);
        assert_eq!(
            cnn.parameter_count(),
            C1 * 25 + 2 * C1 + C2 * C1 * 9 + 2 * C2 + FLAT * 10 + 10
        );
        assert_eq!(cnn.parameter_count(), Cnn::architecture_parameters());
        // Four fake images, learnt by heart.
        let x: Vec<f32> = (0..4 * 784)
            .map(|i| ((i * 7919) % 97) as f32 / 97.0)
            .collect();
        let y = [3, 1, 4, 1];
        let mut opt = optimizer(1e-2);
        let first = cnn.train_step(&mut opt, &x, &y).loss;
        let mut last = first;
        for _ in 0..5 {
            last = cnn.train_step(&mut opt, &x, &y).loss;
        }
        assert!(last < 0.5 * first, "{first} → {last}");
        // Running statistics moved toward the batches'.
        assert!(cnn.bn1.running_mean.iter().any(|m| *m != 0.0));
        let logits = cnn.logits(&x, 4, BnStats::Running);
        assert_eq!(logits.shape, vec![4, 10]);
    }
}
