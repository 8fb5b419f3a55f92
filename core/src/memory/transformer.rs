//! The decoder-only transformer calculator: parameter count, training
//! memory by component (ZeRO stages 0–3 over data-parallel ranks), the
//! inference KV cache and training FLOPs, from a model's configuration.
//!
//! Presets hold only the published configuration fields; every count is
//! computed here. The activation count follows Korthikanti et al. 2022
//! ("Reducing activation recomputation in large transformer models"): per
//! layer `s·b·h·(34 + 5·a·s/h)` bytes for GPT-style layers in 16-bit with
//! dropout, written out term by term below so GQA (fewer KV heads), SwiGLU,
//! fp32 and dropout-free models follow from the same terms.

use serde::Serialize;

use super::precision::{Component, Components, Precision};
use super::{MemoryError, Quantity as Q, product, sum};

/// The feed-forward block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum FfnKind {
    /// Two matrices, `h×f` and `f×h`, GELU between (GPT-2/3: `f = 4h`).
    Gelu,
    /// Three matrices (gate, up, down), `silu(x·W_g) ⊙ (x·W_u) · W_d` (LLaMA).
    SwiGlu,
}

/// The normalisation layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Norm {
    /// Scale and shift: `2h` parameters.
    LayerNorm,
    /// Scale only: `h` parameters.
    RmsNorm,
}

/// A decoder-only model's configuration.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct TransformerConfig {
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    /// Key/value heads: `heads` for multi-head attention, fewer for GQA.
    pub kv_heads: u64,
    /// The feed-forward block's inner size.
    pub ffn: u64,
    pub ffn_kind: FfnKind,
    pub vocab: u64,
    /// Learned position embeddings (0: rotary, nothing learned).
    pub positions: u64,
    /// The output projection shares the token embedding's matrix.
    pub tied: bool,
    /// Linear layers carry biases.
    pub biases: bool,
    pub norm: Norm,
    /// Trained with dropout (its masks are saved: one byte per element).
    pub dropout: bool,
}

/// A model with published configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum Preset {
    Gpt2Small,
    Gpt3,
    Llama7b,
    Llama2_70b,
}

impl Preset {
    pub const ALL: [Self; 4] = [Self::Gpt2Small, Self::Gpt3, Self::Llama7b, Self::Llama2_70b];

    pub fn name(self) -> &'static str {
        match self {
            Self::Gpt2Small => "gpt2-small",
            Self::Gpt3 => "gpt3-175b",
            Self::Llama7b => "llama-7b",
            Self::Llama2_70b => "llama2-70b",
        }
    }

    pub fn by_name(name: &str) -> Result<Self, MemoryError> {
        super::named(&Self::ALL, Self::name, name).ok_or_else(|| MemoryError::UnknownPreset {
            name: name.to_owned(),
            choices: Self::ALL.map(Self::name).join(", "),
        })
    }

    /// The context length the model was trained with.
    pub fn context(self) -> u64 {
        match self {
            Self::Gpt2Small => 1024,
            Self::Gpt3 | Self::Llama7b => 2048,
            Self::Llama2_70b => 4096,
        }
    }

    /// The published configuration (GPT-2: Radford et al. 2019 and its
    /// released `config.json`; GPT-3: Brown et al. 2020, table 2.1; LLaMA:
    /// Touvron et al. 2023, table 2 and `params.json`; LLaMA 2: Touvron et
    /// al. 2023b, with GQA of 8 KV heads).
    pub fn config(self) -> TransformerConfig {
        let gpt = |layers, hidden, heads, positions| TransformerConfig {
            layers,
            hidden,
            heads,
            kv_heads: heads,
            ffn: 4 * hidden,
            ffn_kind: FfnKind::Gelu,
            vocab: 50_257,
            positions,
            tied: true,
            biases: true,
            norm: Norm::LayerNorm,
            dropout: true,
        };
        let llama = |layers, hidden, heads, kv_heads, ffn| TransformerConfig {
            layers,
            hidden,
            heads,
            kv_heads,
            ffn,
            ffn_kind: FfnKind::SwiGlu,
            vocab: 32_000,
            positions: 0,
            tied: false,
            biases: false,
            norm: Norm::RmsNorm,
            dropout: false,
        };
        match self {
            Self::Gpt2Small => gpt(12, 768, 12, 1024),
            Self::Gpt3 => gpt(96, 12_288, 96, 2048),
            Self::Llama7b => llama(32, 4096, 32, 32, 11_008),
            Self::Llama2_70b => llama(80, 8192, 64, 8, 28_672),
        }
    }
}

/// ZeRO: what each data-parallel rank keeps a shard of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Zero {
    /// Plain data parallelism: every rank holds everything.
    #[default]
    Off,
    /// Optimizer state (and the fp32 master weights) sharded.
    Stage1,
    /// … and gradients.
    Stage2,
    /// … and the parameters.
    Stage3,
}

impl Zero {
    pub const ALL: [Self; 4] = [Self::Off, Self::Stage1, Self::Stage2, Self::Stage3];

    pub fn stage(self) -> u64 {
        self as u64
    }

    pub fn from_stage(stage: u64) -> Result<Self, MemoryError> {
        Self::ALL
            .into_iter()
            .find(|z| z.stage() == stage)
            .ok_or(MemoryError::ZeroStage { stage })
    }
}

/// One training setup of a model.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct TransformerRun {
    pub model: TransformerConfig,
    /// Sequences per rank per step.
    pub batch: u64,
    /// Tokens per sequence.
    pub seq: u64,
    pub precision: Precision,
    /// Optimizer-state tensors per parameter: 0 SGD, 1 momentum, 2 Adam.
    pub states: u64,
    pub zero: Zero,
    /// Data-parallel ranks.
    pub ranks: u64,
    /// The inference-time KV cache's element type (older saves: fp16).
    #[serde(default)]
    pub kv: crate::quant::KvElement,
    /// FlashAttention: the score matrix is never stored (nor its dropout
    /// mask, regenerated from the RNG state); backward keeps one f32
    /// log-sum-exp per row and head instead.
    #[serde(default)]
    pub flash_attention: bool,
}

/// What a [`TransformerRun`] costs.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TransformerReport {
    pub parameters: u64,
    /// Of those, the token (and position) embeddings and an untied output matrix.
    pub embedding_parameters: u64,
    /// Of those, the input embeddings (tokens and positions), which
    /// `flops_dense` counts though a lookup does no FLOPs.
    pub lookup_parameters: u64,
    pub head_dim: u64,
    /// Bytes per rank by component, ZeRO applied, activations without checkpointing.
    pub per_rank: Components,
    /// Saved activations of one layer, bytes.
    pub activations_per_layer: u64,
    /// Of one layer's activations without FlashAttention, the score
    /// matrix's terms: the softmax output, and with dropout its mask and
    /// dropped-out copy (Korthikanti's 5·a·s²·b at 2 bytes).
    pub scores_per_layer: u64,
    /// What FlashAttention keeps for them: 4·a·s·b bytes of log-sum-exp.
    pub lse_per_layer: u64,
    /// What FlashAttention saves over every layer: layers × (scores − lse).
    pub flash_saved: u64,
    /// One layer's input, bytes: what checkpointing keeps per layer.
    pub layer_input: u64,
    /// Saved activations of the whole model (layers, embedding and output), bytes.
    pub activations: u64,
    /// With every layer checkpointed: each layer's input, plus the rest of
    /// one layer's activations recomputed during backward, plus the output's.
    pub activations_checkpointed: u64,
    /// K and V of every layer for one token in the run's KV element, scales included.
    pub kv_cache_per_token: u64,
    /// The same split into values and their scales (in the run's KV element).
    pub kv_per_token: crate::quant::KvBytes,
    /// The KV cache of `batch` sequences of `seq` tokens, bytes.
    pub kv_cache_context: u64,
    /// Tokens per rank per step.
    pub tokens: u64,
    /// `6 · parameters · tokens`.
    pub flops_dense: u64,
    /// Attention scores and their use, forward and backward: `12 · layers · seq · hidden · tokens`.
    pub flops_attention: u64,
    /// With full recomputation: `8 · N · T` plus `16 · layers · seq · hidden · T`.
    pub flops_recompute: u64,
}

impl TransformerConfig {
    /// Checks the shape: positive sizes, heads that divide the hidden size,
    /// KV heads that divide the heads.
    pub fn validate(&self) -> Result<(), MemoryError> {
        for (what, value) in [
            (Q::Layers, self.layers),
            (Q::Hidden, self.hidden),
            (Q::Heads, self.heads),
            (Q::KvHeads, self.kv_heads),
            (Q::Ffn, self.ffn),
            (Q::Vocab, self.vocab),
        ] {
            if value == 0 {
                return Err(MemoryError::Zero { what });
            }
        }
        if !self.hidden.is_multiple_of(self.heads) {
            return Err(MemoryError::HeadsDivide {
                hidden: self.hidden,
                heads: self.heads,
            });
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return Err(MemoryError::KvHeadsDivide {
                heads: self.heads,
                kv_heads: self.kv_heads,
            });
        }
        Ok(())
    }

    pub fn head_dim(&self) -> u64 {
        self.hidden / self.heads.max(1)
    }

    /// The width of K (and of V): `kv_heads · head_dim`.
    fn kv_width(&self) -> u64 {
        self.kv_heads * self.head_dim()
    }

    fn norm_parameters(&self) -> Result<u64, MemoryError> {
        let per_unit = match self.norm {
            Norm::LayerNorm => 2,
            Norm::RmsNorm => 1,
        };
        product(Q::Parameters, &[per_unit, self.hidden])
    }

    /// Parameters of one layer: attention, feed-forward and two norms.
    pub fn layer_parameters(&self) -> Result<u64, MemoryError> {
        self.validate()?;
        let (h, f, kv) = (self.hidden, self.ffn, self.kv_width());
        let what = Q::Parameters;
        let q_o = product(what, &[2, h, h])?;
        let k_v = product(what, &[2, h, kv])?;
        let attn_bias = if self.biases {
            sum(what, &[h, product(what, &[2, kv])?, h])?
        } else {
            0
        };
        let (matrices, ffn_bias) = match self.ffn_kind {
            FfnKind::Gelu => (2, if self.biases { sum(what, &[f, h])? } else { 0 }),
            FfnKind::SwiGlu => (
                3,
                if self.biases {
                    sum(what, &[product(what, &[2, f])?, h])?
                } else {
                    0
                },
            ),
        };
        let ffn = product(what, &[matrices, h, f])?;
        sum(
            what,
            &[
                q_o,
                k_v,
                attn_bias,
                ffn,
                ffn_bias,
                product(what, &[2, self.norm_parameters()?])?,
            ],
        )
    }

    /// Embedding parameters: tokens, learned positions, an untied output matrix.
    pub fn embedding_parameters(&self) -> Result<u64, MemoryError> {
        let what = Q::Parameters;
        let tokens = product(what, &[self.vocab, self.hidden])?;
        let output = if self.tied { 0 } else { tokens };
        let positions = product(what, &[self.positions, self.hidden])?;
        sum(what, &[tokens, output, positions])
    }

    /// The input token and position embeddings: read by lookup, so they do
    /// no FLOPs; Kaplan et al.'s non-embedding count leaves them out.
    pub fn lookup_parameters(&self) -> Result<u64, MemoryError> {
        let what = Q::Parameters;
        let tokens = product(what, &[self.vocab, self.hidden])?;
        let positions = product(what, &[self.positions, self.hidden])?;
        sum(what, &[tokens, positions])
    }

    /// Every parameter: layers, embeddings, the final norm.
    pub fn parameters(&self) -> Result<u64, MemoryError> {
        let layers = product(Q::Parameters, &[self.layers, self.layer_parameters()?])?;
        sum(
            Q::Parameters,
            &[
                layers,
                self.embedding_parameters()?,
                self.norm_parameters()?,
            ],
        )
    }

    /// Bytes of one layer's score-matrix terms: the softmax output and,
    /// with dropout, its mask (a byte each) and dropped-out copy.
    fn score_activations(&self, seq: u64, batch: u64, act: u64) -> Result<u64, MemoryError> {
        let what = Q::Activations;
        let scores = product(what, &[self.heads, seq, seq, batch])?;
        let mask = u64::from(self.dropout);
        sum(
            what,
            &[
                product(what, &[act, scores])?,
                product(
                    what,
                    &[mask, sum(what, &[scores, product(what, &[act, scores])?])?],
                )?,
            ],
        )
    }

    /// FlashAttention's log-sum-exp: one f32 per row and head.
    fn lse_activations(&self, seq: u64, batch: u64) -> Result<u64, MemoryError> {
        product(Q::Activations, &[4, self.heads, seq, batch])
    }

    /// Bytes one layer saves for backward, activations in `act` bytes each;
    /// with `flash`, the score terms replaced by the log-sum-exp.
    fn layer_activations(
        &self,
        seq: u64,
        batch: u64,
        act: u64,
        flash: bool,
    ) -> Result<u64, MemoryError> {
        let what = Q::Activations;
        let (h, f, kv) = (self.hidden, self.ffn, self.kv_width());
        let sbh = product(what, &[seq, batch, h])?;
        let sbkv = product(what, &[seq, batch, kv])?;
        let sbf = product(what, &[seq, batch, f])?;
        let mask = u64::from(self.dropout);
        let scores = if flash {
            self.lse_activations(seq, batch)?
        } else {
            self.score_activations(seq, batch, act)?
        };
        // Attention: norm input, QKV input, Q, K, V, the scores' terms, the
        // projection's input; with dropout, the output's mask.
        let attention = sum(
            what,
            &[
                product(what, &[4, act, sbh])?,
                product(what, &[2, act, sbkv])?,
                scores,
                product(what, &[mask, sbh])?,
            ],
        )?;
        // Feed-forward: norm input, first input, then GELU: its input and
        // the second matrix's input; SwiGLU: gate, up and the product.
        let inner = match self.ffn_kind {
            FfnKind::Gelu => 2,
            FfnKind::SwiGlu => 3,
        };
        let ffn = sum(
            what,
            &[
                product(what, &[2, act, sbh])?,
                product(what, &[inner, act, sbf])?,
                product(what, &[mask, sbh])?,
            ],
        )?;
        sum(what, &[attention, ffn])
    }

    /// Bytes outside the layers: the embedding's dropout mask, the final
    /// norm's input, the output projection's input and the logits (kept in
    /// fp32 for the cross-entropy).
    fn outer_activations(&self, seq: u64, batch: u64, act: u64) -> Result<u64, MemoryError> {
        let what = Q::Activations;
        let sbh = product(what, &[seq, batch, self.hidden])?;
        sum(
            what,
            &[
                product(what, &[u64::from(self.dropout), sbh])?,
                product(what, &[2, act, sbh])?,
                product(what, &[4, seq, batch, self.vocab])?,
            ],
        )
    }

    /// K and V of every layer for one token, in fp16.
    pub fn kv_cache_per_token(&self) -> Result<u64, MemoryError> {
        self.validate()?;
        kv_cache_bytes(self.layers, self.kv_heads, self.head_dim(), 1, 2)
    }
}

/// The KV cache: K and V (2) of every layer for every token, each
/// `kv_heads · head_dim` values of `bytes` bytes. The one formula the
/// memory calculator and the engine's KV cache (whose buffers are held to
/// it) use.
pub fn kv_cache_bytes(
    layers: u64,
    kv_heads: u64,
    head_dim: u64,
    tokens: u64,
    bytes: u64,
) -> Result<u64, MemoryError> {
    product(Q::KvCache, &[2, layers, kv_heads, head_dim, tokens, bytes])
}

/// Attention's score FLOPs in a forward pass: per layer and sequence,
/// Q·Kᵀ and P·V are each `2·seq·seq·hidden`, so `4·layers·seq·hidden` per
/// token (`tokens` = sequences × seq); the projections are counted with
/// the dense layers. Training's forward and backward take three times this.
pub fn attention_flops(
    layers: u64,
    seq: u64,
    hidden: u64,
    tokens: u64,
) -> Result<u64, MemoryError> {
    product(Q::Flops, &[4, layers, seq, hidden, tokens])
}

/// The most data-parallel ranks an estimate takes: about a million, far
/// past the largest training runs (tens of thousands of GPUs).
pub const MAX_RANKS: u64 = 1 << 20;

/// `ceil(count / ranks)`: one rank's shard.
fn shard(count: u64, ranks: u64) -> u64 {
    count.div_ceil(ranks.max(1))
}

impl TransformerRun {
    /// A preset at its own context length, batch 1, mixed-precision Adam, one rank.
    pub fn preset(preset: Preset) -> Self {
        Self {
            model: preset.config(),
            batch: 1,
            seq: preset.context(),
            precision: Precision::MixedFp16,
            states: 2,
            zero: Zero::Off,
            ranks: 1,
            kv: crate::quant::KvElement::Fp16,
            flash_attention: false,
        }
    }

    pub fn report(&self) -> Result<TransformerReport, MemoryError> {
        let m = &self.model;
        m.validate()?;
        for (what, value) in [
            (Q::Batch, self.batch),
            (Q::Seq, self.seq),
            (Q::Ranks, self.ranks),
        ] {
            if value == 0 {
                return Err(MemoryError::Zero { what });
            }
        }
        if self.ranks > MAX_RANKS {
            return Err(MemoryError::Ranks {
                ranks: self.ranks,
                max: MAX_RANKS,
            });
        }
        if m.positions > 0 && self.seq > m.positions {
            return Err(MemoryError::SeqBeyondPositions {
                seq: self.seq,
                positions: m.positions,
            });
        }
        let p = self.precision;
        let n = m.parameters()?;
        let act = p.compute_bytes();
        let per_layer = m.layer_activations(self.seq, self.batch, act, self.flash_attention)?;
        let scores_per_layer = m.score_activations(self.seq, self.batch, act)?;
        let lse_per_layer = m.lse_activations(self.seq, self.batch)?;
        let outer = m.outer_activations(self.seq, self.batch, act)?;
        let activations = sum(
            Q::Activations,
            &[product(Q::Activations, &[m.layers, per_layer])?, outer],
        )?;
        let layer_input = product(Q::Activations, &[act, self.seq, self.batch, m.hidden])?;
        let inputs = product(Q::Activations, &[m.layers, layer_input])?;
        // Every layer's input, and the recomputed layer's other values (its
        // input is among the kept ones: it is its first norm's input).
        let recomputed = per_layer.saturating_sub(layer_input);
        let activations_checkpointed = sum(Q::Activations, &[inputs, recomputed, outer])?;
        // Which parts are sharded across ranks under the ZeRO stage.
        let stage = self.zero.stage();
        let elements = |sharded: bool| if sharded { shard(n, self.ranks) } else { n };
        let mut per_rank = Components::default();
        per_rank.set(
            Component::Parameters,
            product(Q::Parameters, &[elements(stage >= 3), p.compute_bytes()])?,
        );
        per_rank.set(
            Component::Gradients,
            product(Q::Parameters, &[elements(stage >= 2), p.compute_bytes()])?,
        );
        per_rank.set(
            Component::OptimizerState,
            product(
                Q::States,
                &[elements(stage >= 1), self.states, p.state_bytes()],
            )?,
        );
        per_rank.set(
            Component::MasterWeights,
            product(Q::Parameters, &[elements(stage >= 1), p.master_bytes()])?,
        );
        per_rank.set(Component::Activations, activations);
        let kv_per_token = self
            .kv
            .per_token_bytes(m.layers, m.kv_heads, m.head_dim())?;
        let kv_cache_per_token = kv_per_token.total;
        let tokens = product(Q::Tokens, &[self.batch, self.seq])?;
        let attention_unit = product(Q::Flops, &[m.layers, self.seq, m.hidden, tokens])?;
        let flops_dense = product(Q::Flops, &[6, n, tokens])?;
        let flops_attention = product(
            Q::Flops,
            &[3, attention_flops(m.layers, self.seq, m.hidden, tokens)?],
        )?;
        let flops_recompute = sum(
            Q::Flops,
            &[
                product(Q::Flops, &[8, n, tokens])?,
                product(Q::Flops, &[16, attention_unit])?,
            ],
        )?;
        Ok(TransformerReport {
            parameters: n,
            embedding_parameters: m.embedding_parameters()?,
            lookup_parameters: m.lookup_parameters()?,
            head_dim: m.head_dim(),
            per_rank,
            activations_per_layer: per_layer,
            scores_per_layer,
            lse_per_layer,
            flash_saved: m
                .layers
                .saturating_mul(scores_per_layer.saturating_sub(lse_per_layer)),
            layer_input,
            activations,
            activations_checkpointed,
            kv_cache_per_token,
            kv_per_token,
            kv_cache_context: (self.kv)
                .cache_bytes(m.layers, m.kv_heads, m.head_dim(), tokens)?
                .total,
            tokens,
            flops_dense,
            flops_attention,
            flops_recompute,
        })
    }
}

#[cfg(test)]
#[path = "transformer_tests.rs"]
mod tests;
