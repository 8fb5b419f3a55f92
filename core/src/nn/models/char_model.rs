//! A tiny character-level transformer: token and position embeddings, one
//! block (LayerNorm → causal multi-head attention → residual; LayerNorm →
//! GELU MLP → residual), a final LayerNorm and a linear head over the
//! characters, trained on a short text the project ships
//! (`assets/data/systems.txt`, written for this project, under its licence).
//! Its loss starts near ln V (a uniform guess over V characters) and falls.

use rand::{RngExt as _, SeedableRng as _};

use crate::autograd::{Graph, Tensor, Var};
use crate::memory::measure::{Formats, Held, Meter, Phase, held_by, metered_backward};
use crate::nn::OptimizerKind;
use crate::nn::optimizers::Optimizer;

/// The text the model learns.
pub const TEXT: &str = include_str!("../../../../assets/data/systems.txt");

/// A text as character ids.
#[derive(Clone, Debug, PartialEq)]
pub struct Corpus {
    /// The characters, sorted: id i is `vocab[i]`.
    pub vocab: Vec<char>,
    pub ids: Vec<usize>,
}

impl Corpus {
    pub fn new(text: &str) -> Self {
        let mut vocab: Vec<char> = text.chars().collect();
        vocab.sort_unstable();
        vocab.dedup();
        let ids = text
            .chars()
            .map(|c| vocab.binary_search(&c).unwrap_or(0))
            .collect();
        Self { vocab, ids }
    }

    /// The shipped text.
    pub fn shipped() -> Self {
        Self::new(TEXT)
    }

    /// The first part for training and the last `held_out` fraction to
    /// measure on, both with the whole text's vocabulary.
    pub fn split(&self, held_out: f64) -> (Self, Self) {
        let cut = ((self.ids.len() as f64) * (1.0 - held_out)) as usize;
        let part = |ids: &[usize]| Self {
            vocab: self.vocab.clone(),
            ids: ids.to_vec(),
        };
        (part(&self.ids[..cut]), part(&self.ids[cut..]))
    }

    pub fn decode(&self, ids: &[usize]) -> String {
        ids.iter().filter_map(|i| self.vocab.get(*i)).collect()
    }

    /// `count` windows of `len + 1` characters at seeded offsets: inputs
    /// are the first `len`, targets the last `len`.
    pub fn windows(&self, count: usize, len: usize, seed: u64) -> Vec<(Vec<usize>, Vec<usize>)> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let last = self.ids.len().saturating_sub(len + 1).max(1);
        (0..count)
            .map(|_| {
                let at = rng.random_range(0..last);
                let w = &self.ids[at..(at + len + 1).min(self.ids.len())];
                (w[..w.len() - 1].to_vec(), w[1..].to_vec())
            })
            .collect()
    }
}

/// The model's sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CharConfig {
    pub vocab: usize,
    /// Characters of context.
    pub context: usize,
    pub width: usize,
    pub heads: usize,
}

/// The parameters, in the order [`CharModel::params`] lists them.
#[derive(Clone, Debug, PartialEq)]
pub struct CharModel {
    pub config: CharConfig,
    params: Vec<Tensor<f32>>,
    /// When set, every projection's input (the GEMMs with a weight; the
    /// attention's own Q·Kᵀ and P·V stay f32) is fake-quantised to integers of
    /// these bits with a per-tensor scale of its own (W8A8's activations).
    act_bits: Option<u32>,
}

/// Names of the parameters, in order.
pub const PARAMETERS: [&str; 18] = [
    "token embedding",
    "position embedding",
    "ln1 γ",
    "ln1 β",
    "W_q",
    "W_k",
    "W_v",
    "W_o",
    "ln2 γ",
    "ln2 β",
    "W_1",
    "b_1",
    "W_2",
    "b_2",
    "ln_f γ",
    "ln_f β",
    "W_head",
    "b_head",
];

impl CharModel {
    /// Weights uniform in ±√(3/fan-in) (embeddings ±0.1, the head ±0.02), γ = 1,
    /// β and biases 0.
    pub fn new(config: CharConfig, seed: u64) -> Self {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let (v, t, d) = (config.vocab, config.context, config.width);
        let mut uniform = |shape: &[usize], limit: f64| Tensor::uniform(&mut rng, shape, limit);
        let lecun = |fan_in: usize| (3.0 / fan_in as f64).sqrt();
        let params = vec![
            uniform(&[v, d], 0.1),
            uniform(&[t, d], 0.1),
            Tensor::full(&[d], 1.0),
            Tensor::zeros(&[d]),
            uniform(&[d, d], lecun(d)),
            uniform(&[d, d], lecun(d)),
            uniform(&[d, d], lecun(d)),
            uniform(&[d, d], lecun(d)),
            Tensor::full(&[d], 1.0),
            Tensor::zeros(&[d]),
            uniform(&[d, 4 * d], lecun(d)),
            Tensor::zeros(&[4 * d]),
            uniform(&[4 * d, d], lecun(4 * d)),
            Tensor::zeros(&[d]),
            Tensor::full(&[d], 1.0),
            Tensor::zeros(&[d]),
            // A small head: the first guesses are near uniform, loss ≈ ln V.
            uniform(&[d, v], 0.02),
            Tensor::zeros(&[v]),
        ];
        Self {
            config,
            params,
            act_bits: None,
        }
    }

    /// The parameters, in the order [`PARAMETERS`] names them.
    pub fn params(&self) -> &[Tensor<f32>] {
        &self.params
    }

    /// The parameters to change in place (post-training quantisation
    /// rewrites the weight matrices); the shapes are the caller's to keep.
    pub fn params_mut(&mut self) -> &mut [Tensor<f32>] {
        &mut self.params
    }

    /// The model with every projection's input fake-quantised to `bits`-bit
    /// integers (`None`: f32, as trained).
    pub fn with_int_activations(mut self, bits: Option<u32>) -> Self {
        self.act_bits = bits;
        self
    }

    pub fn parameter_count(&self) -> usize {
        self.params.iter().map(Tensor::numel).sum()
    }

    /// Records one sequence's logits (`[len, vocab]`) with the parameters
    /// as the leaves `p`; also returns the attention weights per head.
    pub fn forward(&self, g: &mut Graph<f32>, p: &[Var], ids: &[usize]) -> (Var, Vec<Var>) {
        let positions: Vec<usize> = (0..ids.len()).collect();
        let tokens = g.embedding(p[0], ids);
        let places = g.embedding(p[1], &positions);
        let x = g.add(tokens, places);
        let int = |g: &mut Graph<f32>, h: Var| match self.act_bits {
            Some(bits) => crate::quant::tensor::fake_quantise_activation(g, h, bits),
            None => h,
        };
        let h = g.layer_norm(x, p[2], p[3]);
        let h = int(g, h);
        let q = g.matmul(h, p[4]);
        let k = g.matmul(h, p[5]);
        let v = g.matmul(h, p[6]);
        let attention = g.attention(q, k, v, self.config.heads, true);
        let attended = int(g, attention.output);
        let o = g.matmul(attended, p[7]);
        let x = g.add(x, o);
        let h = g.layer_norm(x, p[8], p[9]);
        let h = int(g, h);
        let h = g.matmul(h, p[10]);
        let h = g.add(h, p[11]);
        let h = g.gelu(h);
        let h = int(g, h);
        let h = g.matmul(h, p[12]);
        let h = g.add(h, p[13]);
        let x = g.add(x, h);
        let h = g.layer_norm(x, p[14], p[15]);
        let h = int(g, h);
        let z = g.matmul(h, p[16]);
        (g.add(z, p[17]), attention.weights)
    }

    /// The mean loss per character over `batch` (nats), and its gradient
    /// applied by `optimizer`.
    pub fn train_step(
        &mut self,
        optimizer: &mut Optimizer<f32>,
        batch: &[(Vec<usize>, Vec<usize>)],
    ) -> f32 {
        self.train_step_metered(optimizer, batch, None)
    }

    /// [`Self::train_step`], with every buffer it holds traced by `meter`.
    pub fn train_step_metered(
        &mut self,
        optimizer: &mut Optimizer<f32>,
        batch: &[(Vec<usize>, Vec<usize>)],
        mut meter: Option<&mut Meter>,
    ) -> f32 {
        let mut g = Graph::new();
        let leaves: Vec<Var> = self.params.iter().map(|t| g.param(t.clone())).collect();
        let mut total: Option<Var> = None;
        for (input, target) in batch {
            let (logits, _) = self.forward(&mut g, &leaves, input);
            let loss = g.softmax_cross_entropy(logits, target);
            total = Some(match total {
                Some(t) => g.add(t, loss),
                None => loss,
            });
        }
        let Some(total) = total else {
            return f32::NAN;
        };
        let loss = g.scale(total, 1.0 / batch.len() as f32);
        let outside = meter
            .as_ref()
            .map(|_| held_by(&self.params.iter().collect::<Vec<_>>(), optimizer));
        match (meter.as_deref_mut(), &outside) {
            (Some(meter), Some(outside)) => metered_backward(&mut g, loss, outside, meter),
            _ => g.backward(loss),
        }
        let grads = g.grads_or_zeros(&leaves);
        let mut params: Vec<&mut Tensor<f32>> = self.params.iter_mut().collect();
        optimizer.step(&mut params, &grads);
        if let Some(meter) = meter {
            let weights: Vec<&Tensor<f32>> = self.params.iter().collect();
            let held = Held::graph(&g, &Formats::F32, 4, &[]).plus(&held_by(&weights, optimizer));
            meter.record(Phase::Optimizer, &held);
        }
        g.value(loss).item()
    }

    /// The mean loss per character on `batch`, without training.
    pub fn loss(&self, batch: &[(Vec<usize>, Vec<usize>)]) -> f32 {
        let mut g = Graph::new();
        let leaves: Vec<Var> = self.params.iter().map(|t| g.input(t.clone())).collect();
        let mut sum = 0.0;
        for (input, target) in batch {
            let (logits, _) = self.forward(&mut g, &leaves, input);
            let loss = g.softmax_cross_entropy(logits, target);
            sum += g.value(loss).item();
        }
        sum / batch.len().max(1) as f32
    }

    /// The attention weights of each head on `ids` (`[len, len]` each).
    pub fn attention_weights(&self, ids: &[usize]) -> Vec<Tensor<f32>> {
        let mut g = Graph::new();
        let leaves: Vec<Var> = self.params.iter().map(|t| g.input(t.clone())).collect();
        let (_, weights) = self.forward(&mut g, &leaves, ids);
        weights.iter().map(|w| g.value(*w).into_owned()).collect()
    }

    /// `count` characters after `prompt`, each the most likely one given
    /// the last `context` characters.
    pub fn generate(&self, prompt: &[usize], count: usize) -> Vec<usize> {
        let mut ids = prompt.to_vec();
        for _ in 0..count {
            let start = ids.len().saturating_sub(self.config.context);
            let window = &ids[start..];
            if window.is_empty() {
                break;
            }
            let mut g = Graph::new();
            let leaves: Vec<Var> = self.params.iter().map(|t| g.input(t.clone())).collect();
            let (logits, _) = self.forward(&mut g, &leaves, window);
            let next = g.value(logits).argmax_rows().last().copied().unwrap_or(0);
            ids.push(next);
        }
        ids
    }
}

/// Adam at `lr`: what the model trains with.
pub fn optimizer(lr: f64) -> Optimizer<f32> {
    Optimizer::new(OptimizerKind::adam(), lr, 0.0)
}

/// The shipped text's model at the sizes the lesson and the CLI use.
pub fn shipped_config(corpus: &Corpus) -> CharConfig {
    CharConfig {
        vocab: corpus.vocab.len(),
        context: super::text_run::SHIPPED_CONTEXT,
        width: 32,
        heads: 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loss_starts_near_ln_v_and_falls_by_a_fifth_in_50_steps() {
        let corpus = Corpus::shipped();
        assert_eq!(corpus.decode(&corpus.ids[..9]), "A neural ");
        let config = shipped_config(&corpus);
        let mut model = CharModel::new(config, 1);
        assert_eq!(model.params.len(), PARAMETERS.len());
        // Fixed windows of the training text, scored before and after.
        let (train, held) = corpus.split(0.1);
        assert_eq!(train.ids.len() + held.ids.len(), corpus.ids.len());
        let probe = train.windows(8, config.context, 999);
        let start = model.loss(&probe);
        let ln_v = (config.vocab as f32).ln();
        assert!((start - ln_v).abs() < 0.3, "{start} vs ln V = {ln_v}");
        let mut opt = optimizer(1e-2);
        for step in 0..50 {
            let batch = train.windows(8, config.context, step);
            model.train_step(&mut opt, &batch);
        }
        let end = model.loss(&probe);
        assert!(end < 0.8 * start, "{start} → {end}");
        let weights = model.attention_weights(&corpus.ids[..5]);
        assert_eq!(weights.len(), 2);
        // Causal: nothing above the diagonal; every row sums to one.
        assert_eq!(weights[0].data[1], 0.0);
        let row: f32 = weights[0].row(4).iter().sum();
        assert!((row - 1.0).abs() < 1e-5);
        assert_eq!(model.generate(&corpus.ids[..3], 4).len(), 7);
    }
}
