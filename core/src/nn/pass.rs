//! The forward and backward pass of one training step, over the whole
//! network at once or checkpointed: every layer but the last is a segment
//! whose graph is dropped after forward, keeping only its output, and is
//! recomputed from that output during backward. Both give bit-identical
//! gradients (the same ops in the same order, the same rounding hooks), and
//! both report to a [`Meter`] what they hold at each point when metering.

use super::layers::{Activation, layer};
use super::precision::MixedState;
use crate::autograd::{Graph, Tensor, Var};
use crate::memory::measure::{Formats, Held, Meter, Phase};
use crate::memory::precision::Component;

/// Byte accounting for a pass: the meter, what the trainer holds outside
/// the pass, and the formats things are counted in.
pub(super) struct Metering<'a> {
    pub meter: &'a mut Meter,
    pub outside: Held,
    pub formats: Formats,
    /// The format of the weights the graph reads.
    pub reads: u64,
}

/// One pass's inputs.
pub(super) struct Pass<'a> {
    pub activation: Activation,
    pub x: Tensor<f32>,
    pub y: &'a [usize],
    pub mixed: Option<&'a MixedState>,
    pub step: u64,
    pub loss_weight: f32,
    pub metering: Option<Metering<'a>>,
}

/// How a pass ended. The parameter values are handed back either way.
pub(super) enum Outcome {
    Done {
        loss: f64,
        predictions: Vec<usize>,
        /// Weight and bias gradients per layer, in [`super::Mlp::params`] order.
        grads: Vec<Tensor<f32>>,
    },
    /// The loss was not finite: no backward pass was made.
    NotFinite { loss: f64 },
}

/// A node that is no parameter (for the policy's per-layer tallies).
const NO_PARAM: Var = Var(usize::MAX);

impl Pass<'_> {
    fn graph(&self) -> Graph<f32> {
        let mut g = Graph::new();
        g.set_free_inner_grads(true);
        if let Some(m) = self.mixed {
            m.hook(&mut g);
        }
        g
    }

    fn record(&mut self, phase: Phase, g: &Graph<f32>, inner: &[Var], extra: &Held) {
        if let Some(m) = &mut self.metering {
            let held = Held::graph(g, &m.formats, m.reads, inner)
                .plus(&m.outside)
                .plus(extra);
            m.meter.record(phase, held);
        }
    }

    /// The loss the backward pass starts from: scaled by the policy's loss
    /// scale and the loss weight (which also picks this step's sampling).
    fn root(&self, g: &mut Graph<f32>, loss: Var, params: &[Var]) -> Var {
        match self.mixed {
            Some(m) => m.scale_loss(g, loss, self.step, params, self.loss_weight),
            None => loss,
        }
    }

    /// Backward from `root`, seeded with `seed`, metered after every node.
    fn backward(
        &mut self,
        g: &mut Graph<f32>,
        root: Var,
        seed: Tensor<f32>,
        inner: &[Var],
        extra: &Held,
    ) {
        let Some(m) = &mut self.metering else {
            g.backward_from(root, seed, &mut |_, _| {});
            return;
        };
        let (formats, reads) = (m.formats, m.reads);
        let outside = m.outside.plus(extra);
        let meter = &mut *m.meter;
        g.backward_from(root, seed, &mut |g, in_flight| {
            let mut held = Held::graph(g, &formats, reads, inner).plus(&outside);
            held.f32s(Component::Temporaries, in_flight, formats.compute);
            meter.record(Phase::Backward, held);
        });
    }

    /// The whole network in one graph.
    pub(super) fn whole(&mut self, values: &mut Vec<Tensor<f32>>) -> Outcome {
        let mut g = self.graph();
        let mut h = g.input(std::mem::replace(&mut self.x, Tensor::zeros(&[0])));
        let layers = values.len() / 2;
        let mut params = Vec::with_capacity(values.len());
        let mut taken = std::mem::take(values).into_iter();
        for i in 0..layers {
            let (Some(w), Some(b)) = (taken.next(), taken.next()) else {
                break;
            };
            let (w, b) = (g.param(w), g.param(b));
            params.extend([w, b]);
            h = layer(&mut g, h, w, b, (i + 1 < layers).then_some(self.activation));
        }
        let loss = g.softmax_cross_entropy(h, self.y);
        self.record(Phase::Forward, &g, &[], &Held::default());
        let value = f64::from(g.value(loss).item());
        if !value.is_finite() {
            *values = params.iter().map(|p| g.take_value(*p)).collect();
            return Outcome::NotFinite { loss: value };
        }
        let predictions = g.value(h).argmax_rows();
        let root = self.root(&mut g, loss, &params);
        self.backward(&mut g, root, Tensor::scalar(1.0), &[], &Held::default());
        let grads = params.iter().map(|p| grad_of(&mut g, *p)).collect();
        *values = params.iter().map(|p| g.take_value(*p)).collect();
        Outcome::Done {
            loss: value,
            predictions,
            grads,
        }
    }

    /// Records segment `i`: its input (the data for the first, else the
    /// previous segment's output, as a leaf that collects its gradient),
    /// its layer. Returns (input, weight, bias, output).
    fn segment(
        &self,
        g: &mut Graph<f32>,
        i: usize,
        input: Tensor<f32>,
        values: &mut [Option<Tensor<f32>>],
    ) -> [Var; 4] {
        let layers = values.len() / 2;
        let input = if i == 0 {
            g.input(input)
        } else {
            g.param(input)
        };
        let mut take = |k: usize| values[k].take().unwrap_or_else(|| Tensor::zeros(&[0]));
        let (w, b) = (g.param(take(2 * i)), g.param(take(2 * i + 1)));
        let last = i + 1 == layers;
        let out = layer(g, input, w, b, (!last).then_some(self.activation));
        [input, w, b, out]
    }

    /// Every layer but the last checkpointed.
    pub(super) fn checkpointed(&mut self, values: &mut Vec<Tensor<f32>>) -> Outcome {
        let layers = values.len() / 2;
        let mut vals: Vec<Option<Tensor<f32>>> =
            std::mem::take(values).into_iter().map(Some).collect();
        // acts[0] is the data; acts[i] segment i − 1's output.
        let mut acts: Vec<Option<Tensor<f32>>> = vec![None; layers];
        acts[0] = Some(std::mem::replace(&mut self.x, Tensor::zeros(&[0])));
        let mut grads: Vec<Option<Tensor<f32>>> = vec![None; 2 * layers];
        // Forward: each segment's graph dropped, its output kept.
        for i in 0..layers - 1 {
            let mut g = self.graph();
            let input = acts[i].take().unwrap_or_else(|| Tensor::zeros(&[0]));
            let [input, w, b, out] = self.segment(&mut g, i, input, &mut vals);
            let extra = self.outside_of_graph(&acts, &vals, &grads);
            self.record(Phase::Forward, &g, &[input], &extra);
            acts[i] = Some(g.take_value(input));
            acts[i + 1] = Some(g.take_value(out));
            vals[2 * i] = Some(g.take_value(w));
            vals[2 * i + 1] = Some(g.take_value(b));
        }
        // The last segment, kept for its backward.
        let i = layers - 1;
        let mut g = self.graph();
        let input = acts[i].take().unwrap_or_else(|| Tensor::zeros(&[0]));
        let [input, w, b, logits] = self.segment(&mut g, i, input, &mut vals);
        let loss = g.softmax_cross_entropy(logits, self.y);
        let extra = self.outside_of_graph(&acts, &vals, &grads);
        self.record(Phase::Forward, &g, &[input], &extra);
        let value = f64::from(g.value(loss).item());
        let give_back = |g: &mut Graph<f32>, vals: &mut [Option<Tensor<f32>>], w: Var, b: Var| {
            vals[2 * i] = Some(g.take_value(w));
            vals[2 * i + 1] = Some(g.take_value(b));
        };
        if !value.is_finite() {
            give_back(&mut g, &mut vals, w, b);
            *values = vals.into_iter().map(or_empty).collect();
            return Outcome::NotFinite { loss: value };
        }
        let predictions = g.value(logits).argmax_rows();
        let mut tracked = vec![NO_PARAM; 2 * layers];
        tracked[2 * i] = w;
        tracked[2 * i + 1] = b;
        let root = self.root(&mut g, loss, &tracked);
        self.backward(&mut g, root, Tensor::scalar(1.0), &[input], &extra);
        grads[2 * i] = Some(grad_of(&mut g, w));
        grads[2 * i + 1] = Some(grad_of(&mut g, b));
        let mut seed = (i > 0).then(|| grad_of(&mut g, input));
        give_back(&mut g, &mut vals, w, b);
        drop(g);
        // Backward through the segments, each recomputed from its input.
        for i in (0..layers - 1).rev() {
            let mut g = self.graph();
            let input = acts[i].take().unwrap_or_else(|| Tensor::zeros(&[0]));
            let [input, w, b, out] = self.segment(&mut g, i, input, &mut vals);
            if let Some(m) = self.mixed {
                let mut tracked = vec![NO_PARAM; 2 * layers];
                tracked[2 * i] = w;
                tracked[2 * i + 1] = b;
                m.track_params(&tracked);
            }
            let upstream = seed
                .take()
                .unwrap_or_else(|| Tensor::zeros(&g.value(out).shape));
            // The upstream gradient is the seed: backward counts it in flight.
            let extra = self.outside_of_graph(&acts, &vals, &grads);
            self.backward(&mut g, out, upstream, &[input], &extra);
            grads[2 * i] = Some(grad_of(&mut g, w));
            grads[2 * i + 1] = Some(grad_of(&mut g, b));
            seed = (i > 0).then(|| grad_of(&mut g, input));
            vals[2 * i] = Some(g.take_value(w));
            vals[2 * i + 1] = Some(g.take_value(b));
        }
        *values = vals.into_iter().map(or_empty).collect();
        Outcome::Done {
            loss: value,
            predictions,
            grads: grads.into_iter().map(or_empty).collect(),
        }
    }

    /// What the checkpointed pass holds outside its current graph: the data
    /// and kept segment outputs, parameters not in the graph, gradients
    /// collected so far (the gradient handed to a segment is its backward's
    /// seed, counted in flight there).
    fn outside_of_graph(
        &self,
        acts: &[Option<Tensor<f32>>],
        vals: &[Option<Tensor<f32>>],
        grads: &[Option<Tensor<f32>>],
    ) -> Held {
        let mut held = Held::default();
        let Some(m) = &self.metering else {
            return held;
        };
        let c = m.formats.compute;
        for (i, a) in acts.iter().enumerate() {
            let role = if i == 0 {
                Component::Inputs
            } else {
                Component::Activations
            };
            held.f32s(role, a.as_ref().map_or(0, Tensor::numel), c);
        }
        for v in vals.iter().flatten() {
            held.f32s(Component::Parameters, v.numel(), m.reads);
        }
        for g in grads.iter().flatten() {
            held.f32s(Component::Gradients, g.numel(), c);
        }
        held
    }
}

fn or_empty(t: Option<Tensor<f32>>) -> Tensor<f32> {
    t.unwrap_or_else(|| Tensor::zeros(&[0]))
}

/// A node's gradient moved out, or zeros shaped like it when none reached it.
fn grad_of(g: &mut Graph<f32>, v: Var) -> Tensor<f32> {
    g.take_grad(v)
        .unwrap_or_else(|| Tensor::zeros(&g.value(v).shape))
}
