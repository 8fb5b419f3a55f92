//! Sequence parallelism (Korthikanti et al. 2022, §4.2.2) on threads: the
//! MLP block of a transformer layer — LayerNorm, then the MLP split
//! Megatron's way — run with the norm's region split along the sequence,
//! against plain tensor parallelism on the same values.
//!
//! Under tensor parallelism every worker runs the LayerNorm on the whole
//! sequence (the same values on each) and keeps its input and output: T
//! copies. Under sequence parallelism worker i normalises only its 1/T of
//! the tokens; an all-gather (g) builds the whole normalised input for the
//! column-parallel linear, and a reduce-scatter (ḡ) of the row-parallel
//! partial outputs leaves each worker the sum for its own tokens. Backward
//! mirrors it: the output gradient all-gathered, the partial input
//! gradients reduce-scattered. A ring all-reduce is a reduce-scatter and an
//! all-gather, so the bytes are the same; the norm's activations per worker
//! are divided by T. The norm's γ and β gradients, each worker's partial
//! sum over its tokens, take one small all-reduce of their own (2h values).
//!
//! What is compared: each worker's output rows and input-gradient rows
//! against tensor parallelism's, bit for bit (the same sums in the same
//! order); the γ, β gradients, whose sum over tokens is reassociated by
//! the split, by their largest difference.

use rand::SeedableRng as _;
use serde::Serialize;

use super::tensor::{
    Sublayer, TensorError, TpSettings, Weights, forward_backward, record, rows, same_bits, uniform,
};
use super::workers::{each, ring};
use crate::autograd::{Graph, Tensor, Var};
use crate::collective::{Op, chunk_range};

/// The block run both ways.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpRun {
    pub settings: TpSettings,
    /// Whether every worker's output rows and input-gradient rows equal
    /// tensor parallelism's bit for bit.
    pub output_bitwise: bool,
    pub input_grad_bitwise: bool,
    /// The largest |Δ| of the norm's γ and β gradients.
    pub norm_grad_max_difference: f32,
    /// Bytes each worker sent: tensor parallelism's two all-reduces;
    /// sequence parallelism's all-gathers and reduce-scatters, and its
    /// all-reduce of the norm's gradients.
    pub tp_sent: Vec<u64>,
    pub sp_sent: Vec<u64>,
    pub sp_norm_sent: Vec<u64>,
    /// Values each worker keeps in the norm's region (its input and
    /// output).
    pub tp_kept: usize,
    pub sp_kept: usize,
}

/// A LayerNorm recorded on some rows.
struct Norm {
    graph: Graph<f32>,
    input: Var,
    gamma: Var,
    beta: Var,
    output: Var,
}

impl Norm {
    fn new(x: &Tensor<f32>, gamma: &Tensor<f32>, beta: &Tensor<f32>) -> Self {
        let mut graph = Graph::new();
        let input = graph.param(x.clone());
        let (gamma, beta) = (graph.param(gamma.clone()), graph.param(beta.clone()));
        let output = graph.layer_norm(input, gamma, beta);
        Self {
            graph,
            input,
            gamma,
            beta,
            output,
        }
    }

    fn value(&self) -> Tensor<f32> {
        self.graph.value(self.output).into_owned()
    }

    /// Backward from `dy`: the input's gradient and γ, β's, concatenated.
    fn backward(mut self, dy: Tensor<f32>) -> (Tensor<f32>, Vec<f32>) {
        self.graph.backward_from(self.output, dy, &mut |_, _| {});
        let dx = self
            .graph
            .grad(self.input)
            .map_or_else(|| Tensor::zeros(&[0]), |g| g.into_owned());
        let params: Vec<f32> = self
            .graph
            .grads_or_zeros(&[self.gamma, self.beta])
            .into_iter()
            .flat_map(|t| t.data)
            .collect();
        (dx, params)
    }
}

/// A result every worker gave back.
fn found<T>(all: Option<Vec<T>>) -> Result<Vec<T>, TensorError> {
    all.ok_or(TensorError::WorkerFailed)
}

/// Runs the MLP block of `s` with and without sequence parallelism (the
/// workers on threads when `threads`). The tokens must divide among the
/// workers.
pub fn run_sp(s: &TpSettings, threads: bool) -> Result<SpRun, TensorError> {
    s.validate()?;
    let (t, tokens, h) = (s.workers, s.tokens, s.hidden);
    if !tokens.is_multiple_of(t) {
        return Err(TensorError::SpTokens {
            tokens: tokens as u64,
            workers: t as u64,
        });
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(s.seed ^ 3);
    let weights = Weights::new(s, Sublayer::Mlp, &mut rng);
    let gamma = uniform(&mut rng, &[h], 1.0);
    let beta = uniform(&mut rng, &[h], 0.1);
    let x = uniform(&mut rng, &[tokens, h], 1.0);
    let dy = uniform(&mut rng, &[tokens, h], 1.0);
    let shards: Vec<Weights> = (0..t).map(|i| weights.shard(Sublayer::Mlp, i, t)).collect();
    let heads = s.heads / t;
    let mine = |i: usize| chunk_range(i, t, tokens);

    // Tensor parallelism: the norm on every worker, two all-reduces.
    let tp = found(each(threads, t, |i| {
        let norm = Norm::new(&x, &gamma, &beta);
        let parts = forward_backward(record(Sublayer::Mlp, &norm.value(), &shards[i], heads), &dy);
        (norm, parts)
    }))?;
    let mut tp_sent = vec![0; t];
    let mut tp_out: Vec<Vec<f32>> = tp.iter().map(|(_, p)| p.output.data.clone()).collect();
    ring(Op::AllReduce, &mut tp_out, &mut tp_sent).ok_or(TensorError::WorkerFailed)?;
    let mut tp_dn: Vec<Vec<f32>> = tp.iter().map(|(_, p)| p.input.data.clone()).collect();
    ring(Op::AllReduce, &mut tp_dn, &mut tp_sent).ok_or(TensorError::WorkerFailed)?;
    let (tp_norm, _) = tp.into_iter().next().ok_or(TensorError::WorkerFailed)?;
    let (tp_dx, tp_params) = tp_norm.backward(Tensor::new(tp_dn[0].clone(), &[tokens, h]));

    // Sequence parallelism: the norm on each worker's tokens.
    let mut sp_sent = vec![0; t];
    let norms = found(each(threads, t, |i| {
        Norm::new(&rows(&x, mine(i)), &gamma, &beta)
    }))?;
    let gather = |part: &dyn Fn(usize) -> Vec<f32>, sent: &mut Vec<u64>| {
        let mut buffers: Vec<Vec<f32>> = (0..t)
            .map(|i| {
                let mut b = vec![0.0; tokens * h];
                b[mine(i).start * h..mine(i).end * h].copy_from_slice(&part(i));
                b
            })
            .collect();
        ring(Op::AllGather, &mut buffers, sent).map(|()| buffers)
    };
    let normalised =
        gather(&|i| norms[i].value().data, &mut sp_sent).ok_or(TensorError::WorkerFailed)?;
    let dy_rows = |i: usize| rows(&dy, mine(i)).data;
    let gradients = gather(&dy_rows, &mut sp_sent).ok_or(TensorError::WorkerFailed)?;
    let parts = found(each(threads, t, |i| {
        let input = Tensor::new(normalised[i].clone(), &[tokens, h]);
        let dy = Tensor::new(gradients[i].clone(), &[tokens, h]);
        forward_backward(record(Sublayer::Mlp, &input, &shards[i], heads), &dy)
    }))?;
    let mut sp_out: Vec<Vec<f32>> = parts.iter().map(|p| p.output.data.clone()).collect();
    ring(Op::ReduceScatter, &mut sp_out, &mut sp_sent).ok_or(TensorError::WorkerFailed)?;
    let mut sp_dn: Vec<Vec<f32>> = parts.iter().map(|p| p.input.data.clone()).collect();
    ring(Op::ReduceScatter, &mut sp_dn, &mut sp_sent).ok_or(TensorError::WorkerFailed)?;
    let span = |i: usize| mine(i).start * h..mine(i).end * h;
    let backs: Vec<(Tensor<f32>, Vec<f32>)> = norms
        .into_iter()
        .enumerate()
        .map(|(i, norm)| {
            norm.backward(Tensor::new(sp_dn[i][span(i)].to_vec(), &[mine(i).len(), h]))
        })
        .collect();
    let mut sp_norm_sent = vec![0; t];
    let mut params: Vec<Vec<f32>> = backs.iter().map(|(_, p)| p.clone()).collect();
    ring(Op::AllReduce, &mut params, &mut sp_norm_sent).ok_or(TensorError::WorkerFailed)?;

    let output_bitwise = (0..t).all(|i| {
        let a = &sp_out[i][span(i)];
        let b = &tp_out[i][span(i)];
        a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    });
    let input_grad_bitwise = backs
        .iter()
        .enumerate()
        .all(|(i, (dx, _))| same_bits(dx, &rows(&tp_dx, mine(i))));
    let norm_grad_max_difference = crate::autograd::max_abs_diff(&params[0], &tp_params);
    Ok(SpRun {
        settings: s.clone(),
        output_bitwise,
        input_grad_bitwise,
        norm_grad_max_difference,
        tp_sent,
        sp_sent,
        sp_norm_sent,
        tp_kept: 2 * tokens * h,
        sp_kept: 2 * (tokens / t) * h,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_parallelism_is_tensor_parallelism_bit_for_bit_with_a_t_th_of_the_norms_activations()
    {
        for workers in [2, 4, 8] {
            let s = TpSettings {
                workers,
                ..TpSettings::default()
            };
            let run = run_sp(&s, true).unwrap();
            assert!(run.output_bitwise && run.input_grad_bitwise, "{run:?}");
            assert!(run.norm_grad_max_difference < 1e-4, "{run:?}");
            // The same bytes: all-gather + reduce-scatter = all-reduce.
            assert_eq!(run.sp_sent, run.tp_sent);
            let elements = (s.tokens * s.hidden) as u64;
            let ring = 2 * 2 * (workers as u64 - 1) * elements * 4 / workers as u64;
            assert!(run.tp_sent.iter().all(|b| *b == ring), "{run:?}");
            // The norm's gradients: one all-reduce of 2h values.
            let norm = 2 * (workers as u64 - 1) * 2 * s.hidden as u64 * 4 / workers as u64;
            assert!(run.sp_norm_sent.iter().all(|b| *b == norm), "{run:?}");
            assert_eq!(run.tp_kept, workers * run.sp_kept);
            assert_eq!(run_sp(&s, false).unwrap(), run);
        }
        let odd = TpSettings {
            tokens: 15,
            ..TpSettings::default()
        };
        assert!(matches!(
            run_sp(&odd, false),
            Err(TensorError::SpTokens { .. })
        ));
    }
}
