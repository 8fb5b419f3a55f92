//! The forward and backward pass of one training step, over the whole
//! network at once or checkpointed: the layers are cut into segments of a
//! chosen length; every segment but the last has its graph dropped after
//! forward, keeping only its input, and is recomputed from that input
//! during backward. Both give bit-identical
//! gradients (the same ops in the same order, the same rounding hooks), and
//! both report to a [`Meter`] what they hold at each point when metering.

use std::ops::Range;

use super::layers::{Activation, layer};
use super::precision::MixedState;
use crate::autograd::{Graph, Stored, Tensor, Var};
use crate::memory::measure::{Formats, Held, Meter, Phase};
use crate::memory::precision::Component;
use crate::memory::trace::BufKey;

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
        /// Weight and bias gradients per layer, in [`super::Mlp::params`]
        /// order, as the graph kept them (packed under a 2-byte policy).
        grads: Vec<Stored<f32>>,
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
            m.meter.record(phase, &held);
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
        let outside = m.outside.clone().plus(extra);
        let meter = &mut *m.meter;
        g.backward_from(root, seed, &mut |g, in_flight| {
            let mut held = Held::graph(g, &formats, reads, inner).plus(&outside);
            held.f32s(
                BufKey::InFlight,
                Component::Temporaries,
                in_flight,
                formats.compute,
            );
            meter.record(Phase::Backward, &held);
        });
    }

    /// The whole network in one graph.
    pub(super) fn whole(&mut self, values: &mut Vec<Stored<f32>>) -> Outcome {
        let mut g = self.graph();
        let mut h = g.input(std::mem::replace(&mut self.x, Tensor::zeros(&[0])));
        let layers = values.len() / 2;
        let mut params = Vec::with_capacity(values.len());
        let mut taken = std::mem::take(values).into_iter();
        for i in 0..layers {
            let (Some(w), Some(b)) = (taken.next(), taken.next()) else {
                break;
            };
            let (w, b) = (g.param_stored(w), g.param_stored(b));
            params.extend([w, b]);
            h = layer(&mut g, h, w, b, (i + 1 < layers).then_some(self.activation));
        }
        let loss = g.softmax_cross_entropy(h, self.y);
        self.record(Phase::Forward, &g, &[], &Held::default());
        let value = f64::from(g.value(loss).item());
        if !value.is_finite() {
            *values = params.iter().map(|p| g.take_stored(*p)).collect();
            return Outcome::NotFinite { loss: value };
        }
        let predictions = g.value(h).argmax_rows();
        let root = self.root(&mut g, loss, &params);
        self.backward(&mut g, root, Tensor::scalar(1.0), &[], &Held::default());
        let grads = params.iter().map(|p| grad_of(&mut g, *p)).collect();
        *values = params.iter().map(|p| g.take_stored(*p)).collect();
        Outcome::Done {
            loss: value,
            predictions,
            grads,
        }
    }

    /// Records the segment of `layers` (a range of the network's layers):
    /// its input (the data for the first, else the previous segment's
    /// output, as a leaf that collects its gradient), then its layers.
    fn segment(
        &self,
        g: &mut Graph<f32>,
        layers: Range<usize>,
        input: Stored<f32>,
        values: &mut [Option<Stored<f32>>],
    ) -> Segment {
        let all = values.len() / 2;
        let first = layers.start;
        let input = if first == 0 {
            g.input(input.into_tensor())
        } else {
            g.param_stored(input)
        };
        let mut take = |k: usize| values[k].take().unwrap_or_default();
        let mut h = input;
        let mut params = Vec::with_capacity(2 * layers.len());
        for i in layers {
            let (w, b) = (g.param_stored(take(2 * i)), g.param_stored(take(2 * i + 1)));
            params.extend([w, b]);
            h = layer(g, h, w, b, (i + 1 < all).then_some(self.activation));
        }
        Segment {
            input,
            first,
            params,
            out: h,
        }
    }

    /// Checkpointed in segments of `per_segment` layers from the input:
    /// every segment but the last (which holds the output layer) keeps only
    /// its input through forward and is recomputed from it in backward.
    pub(super) fn checkpointed(
        &mut self,
        values: &mut Vec<Stored<f32>>,
        per_segment: usize,
    ) -> Outcome {
        let layers = values.len() / 2;
        let k = per_segment.max(1);
        let segments = layers.div_ceil(k);
        let span = |c: usize| c * k..((c + 1) * k).min(layers);
        let mut vals: Vec<Option<Stored<f32>>> =
            std::mem::take(values).into_iter().map(Some).collect();
        // acts[0] is the data; acts[c] segment c's input (segment c − 1's
        // output), each kept as the graph kept it.
        let mut acts: Vec<Option<Stored<f32>>> = vec![None; segments];
        let x = std::mem::replace(&mut self.x, Tensor::zeros(&[0]));
        acts[0] = Some(Stored::keep(x, self.mixed.and_then(MixedState::packing)));
        let mut grads: Vec<Option<Stored<f32>>> = vec![None; 2 * layers];
        // Forward: each segment's graph dropped, its output kept.
        for c in 0..segments - 1 {
            let mut g = self.graph();
            let input = acts[c].take().unwrap_or_default();
            let seg = self.segment(&mut g, span(c), input, &mut vals);
            let extra = self.outside_of_graph(&acts, &vals, &grads);
            self.record(Phase::Forward, &g, &[seg.input], &extra);
            acts[c] = Some(g.take_stored(seg.input));
            acts[c + 1] = Some(g.take_stored(seg.out));
            seg.give_back(&mut g, &mut vals);
        }
        // The last segment, kept for its backward.
        let c = segments - 1;
        let mut g = self.graph();
        let input = acts[c].take().unwrap_or_default();
        let seg = self.segment(&mut g, span(c), input, &mut vals);
        let loss = g.softmax_cross_entropy(seg.out, self.y);
        let extra = self.outside_of_graph(&acts, &vals, &grads);
        self.record(Phase::Forward, &g, &[seg.input], &extra);
        let value = f64::from(g.value(loss).item());
        if !value.is_finite() {
            seg.give_back(&mut g, &mut vals);
            *values = vals.into_iter().map(or_empty).collect();
            return Outcome::NotFinite { loss: value };
        }
        let predictions = g.value(seg.out).argmax_rows();
        let root = self.root(&mut g, loss, &seg.tracked(layers));
        self.backward(&mut g, root, Tensor::scalar(1.0), &[seg.input], &extra);
        seg.take_grads(&mut g, &mut grads);
        let mut seed = (c > 0).then(|| grad_of(&mut g, seg.input).into_tensor());
        seg.give_back(&mut g, &mut vals);
        drop(g);
        // Backward through the segments, each recomputed from its input.
        for c in (0..segments - 1).rev() {
            let mut g = self.graph();
            let input = acts[c].take().unwrap_or_default();
            let seg = self.segment(&mut g, span(c), input, &mut vals);
            if let Some(m) = self.mixed {
                m.track_params(&seg.tracked(layers));
            }
            let upstream = seed
                .take()
                .unwrap_or_else(|| Tensor::zeros(g.shape(seg.out)));
            // The upstream gradient is the seed: backward counts it in flight.
            let extra = self.outside_of_graph(&acts, &vals, &grads);
            self.backward(&mut g, seg.out, upstream, &[seg.input], &extra);
            seg.take_grads(&mut g, &mut grads);
            seed = (c > 0).then(|| grad_of(&mut g, seg.input).into_tensor());
            seg.give_back(&mut g, &mut vals);
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
        acts: &[Option<Stored<f32>>],
        vals: &[Option<Stored<f32>>],
        grads: &[Option<Stored<f32>>],
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
            if let Some(a) = a {
                held.stored(BufKey::Kept(i as u32), role, a, c);
            }
        }
        for (i, v) in vals.iter().enumerate() {
            if let Some(v) = v {
                held.stored(BufKey::Value(i as u32), Component::Parameters, v, m.reads);
            }
        }
        for (i, g) in grads.iter().enumerate() {
            if let Some(g) = g {
                held.stored(BufKey::Grad(i as u32), Component::Gradients, g, c);
            }
        }
        held
    }
}

/// One recorded segment: its input leaf, its first layer, its weight and
/// bias nodes in order, its output.
struct Segment {
    input: Var,
    first: usize,
    params: Vec<Var>,
    out: Var,
}

impl Segment {
    /// The parameter nodes in [`super::Mlp::params`] order over all
    /// `layers`, [`NO_PARAM`] where not in this segment.
    fn tracked(&self, layers: usize) -> Vec<Var> {
        let mut tracked = vec![NO_PARAM; 2 * layers];
        tracked[2 * self.first..2 * self.first + self.params.len()].copy_from_slice(&self.params);
        tracked
    }

    fn take_grads(&self, g: &mut Graph<f32>, grads: &mut [Option<Stored<f32>>]) {
        for (k, p) in self.params.iter().enumerate() {
            grads[2 * self.first + k] = Some(grad_of(g, *p));
        }
    }

    /// The parameter values back out of the graph.
    fn give_back(&self, g: &mut Graph<f32>, vals: &mut [Option<Stored<f32>>]) {
        for (k, p) in self.params.iter().enumerate() {
            vals[2 * self.first + k] = Some(g.take_stored(*p));
        }
    }
}

fn or_empty(t: Option<Stored<f32>>) -> Stored<f32> {
    t.unwrap_or_default()
}

/// A node's gradient moved out as kept, or zeros shaped like it when none
/// reached it.
fn grad_of(g: &mut Graph<f32>, v: Var) -> Stored<f32> {
    g.take_stored_grad(v)
        .unwrap_or_else(|| Stored::Whole(Tensor::zeros(g.shape(v))))
}
