//! Pipeline parallelism on real data: the engine's MLP cut into P·v
//! positions (P stages of v chunks), each stage on its own thread running
//! its schedule's operations in order, activations sent forward and input
//! gradients back as messages — and the gradients held to gradient
//! accumulation over the same micro-batches on the unsplit model.
//!
//! - A position's forward records its layers on a graph of its own (the
//!   same `layer` calls as [`Mlp::forward_with`]); its input is a leaf that
//!   wants a gradient (but on position 0, where it is the data), and its
//!   output's values go to the next position. The graph is kept — the
//!   micro-batch's activations — until its backward (in ZB-H1, its W).
//! - A backward back-propagates the gradient the next position sent (the
//!   last position starts from its loss) and sends its input's gradient
//!   back. The engine computes the input gradient and the weight gradients
//!   in one pass; in ZB-H1 the weight gradients wait for the W operation,
//!   which adds them. The virtual clock charges B and W each its own FLOPs.
//! - Each position adds its micro-batches' weight gradients in the order its
//!   schedule runs them — ascending micro-batch on every schedule here, the
//!   order of the unsplit accumulation — so the sums agree bit for bit.
//!
//! Time is the virtual clock's: each operation takes its counted
//! matrix-multiply FLOPs at the stage's rate, each message α + bytes/β on
//! the collective engine's [`Link`]. Natively the stages run on OS threads
//! (what they hold at once is measured as they run); on the web one after
//! another in the clock's order, with the same bits.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::mpsc;

use rand::SeedableRng as _;
use serde::Serialize;

use super::schedule::{
    Kind, Op, Pass, PipelineError, PipelineRun, Times, check, pipeline_positions, schedule,
};
use crate::autograd::{Graph, Tensor, Var};
use crate::collective::{Link, chunk_range};
use crate::nn::layers::layer;
use crate::nn::{Activation, Mlp};

/// The most a real run here takes: micro-batches, rows per micro-batch and
/// widths (a timeline of 64 micro-batches is already dense).
pub const MAX_RUN_MICRO: usize = 64;
pub const MAX_ROWS: usize = 256;
pub const MAX_WIDTH: usize = 1024;
pub const MAX_LAYERS: usize = 64;

/// A pipeline trained on real data: the model, the cut and the clock.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PipeSettings {
    pub kind: Kind,
    pub stages: usize,
    pub micro: usize,
    /// Examples per micro-batch.
    pub rows: usize,
    /// The MLP: inputs, `layers` linear layers of `width`, `classes` outputs.
    pub inputs: usize,
    pub width: usize,
    pub layers: usize,
    pub classes: usize,
    /// Each stage's rate, GFLOP/s, and the link between stages.
    pub gflops: f64,
    pub link: Link,
    /// Equal positions and free transfers (each position charged the mean
    /// time), the closed form's assumptions.
    pub ideal: bool,
    pub seed: u64,
}

impl Default for PipeSettings {
    fn default() -> Self {
        Self {
            kind: Kind::OneFOneB,
            stages: 4,
            micro: 8,
            rows: 16,
            inputs: 16,
            width: 16,
            layers: 8,
            classes: 4,
            gflops: 1.0,
            link: Link {
                alpha_s: 5e-6,
                bytes_per_s: 25e9,
            },
            ideal: false,
            seed: 7,
        }
    }
}

impl PipeSettings {
    pub fn validate(&self) -> Result<(), PipelineError> {
        check(self.kind, self.stages, self.micro)?;
        let positions = self.stages * self.kind.chunks();
        if self.layers < positions {
            return Err(PipelineError::Layers {
                layers: self.layers as u64,
                positions: positions as u64,
            });
        }
        let sizes = [self.inputs, self.width, self.classes, self.rows];
        if self.micro > MAX_RUN_MICRO
            || self.rows > MAX_ROWS
            || self.layers > MAX_LAYERS
            || sizes.iter().any(|x| *x == 0 || *x > MAX_WIDTH)
        {
            return Err(PipelineError::Model {
                micro: MAX_RUN_MICRO as u64,
                rows: MAX_ROWS as u64,
                width: MAX_WIDTH as u64,
                layers: MAX_LAYERS as u64,
            });
        }
        if !(self.gflops.is_finite() && self.gflops > 0.0) {
            return Err(PipelineError::Times);
        }
        Ok(())
    }

    /// The MLP's sizes: inputs, `layers − 1` hidden widths, classes.
    pub fn sizes(&self) -> Vec<usize> {
        let mut sizes = vec![self.inputs];
        sizes.extend(std::iter::repeat_n(self.width, self.layers - 1));
        sizes.push(self.classes);
        sizes
    }

    /// The layers at position `p` of `positions`.
    fn cut(&self, p: usize, positions: usize) -> Range<usize> {
        chunk_range(p, positions, self.layers)
    }
}

/// The seeded micro-batches: `rows` examples each, uniform in [−1, 1),
/// labels uniform over the classes.
pub fn micro_batches(s: &PipeSettings) -> Vec<(Vec<f32>, Vec<usize>)> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(s.seed ^ 0x9199);
    (0..s.micro)
        .map(|_| super::workers::random_batch(&mut rng, s.rows, s.inputs, s.classes))
        .collect()
}

/// Gradient accumulation on the unsplit model: each micro-batch's mean
/// loss, and the gradients summed over the micro-batches in order.
pub fn accumulate_unsplit(
    mlp: &Mlp<f32>,
    batches: &[(Vec<f32>, Vec<usize>)],
) -> (Vec<f64>, Vec<f32>) {
    let mut sum = vec![0.0f32; mlp.parameter_count()];
    let mut losses = Vec::with_capacity(batches.len());
    for (x, y) in batches {
        let (loss, grad) = mlp.gradient(x, y);
        for (a, g) in sum.iter_mut().zip(grad) {
            *a += g;
        }
        losses.push(loss);
    }
    (losses, sum)
}

/// A pipeline run on real data.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PipeTraining {
    pub settings: PipeSettings,
    /// The schedule on the virtual clock, with each position's counted time.
    pub run: PipelineRun,
    /// Each micro-batch's loss, from the last position.
    pub losses: Vec<f64>,
    /// The gradients summed over the micro-batches, in the model's order
    /// (left out of JSON: a wide model's are megabytes).
    #[serde(skip)]
    pub gradients: Vec<f32>,
    /// The unsplit accumulation's.
    pub reference_losses: Vec<f64>,
    #[serde(skip)]
    pub reference: Vec<f32>,
    /// Gradient elements compared.
    pub elements: usize,
    /// Gradient elements whose bits differ from the unsplit accumulation's.
    pub differing: usize,
    /// The largest |pipeline − unsplit| over the gradients.
    pub max_difference: f32,
    /// Per stage, the most micro-batches' graphs (activations) it held at
    /// once while it ran.
    pub held: Vec<usize>,
    /// Whether the stages ran on OS threads.
    pub threads: bool,
}

/// Trains one step of `s` through the pipeline (threads natively when
/// `threads`) and beside it on the unsplit model.
pub fn train_pipeline(s: &PipeSettings, threads: bool) -> Result<PipeTraining, PipelineError> {
    s.validate()?;
    let mlp = Mlp::<f32>::new(&s.sizes(), Activation::Relu, s.seed).map_err(|_| {
        PipelineError::Model {
            micro: MAX_RUN_MICRO as u64,
            rows: MAX_ROWS as u64,
            width: MAX_WIDTH as u64,
            layers: MAX_LAYERS as u64,
        }
    })?;
    let batches = micro_batches(s);
    let positions = s.stages * s.kind.chunks();
    let (per_position, summary) = clock(s, &mlp, positions);
    let run = pipeline_positions(s.kind, s.stages, s.micro, &per_position, summary)?;
    let plan = schedule(s.kind, s.stages, s.micro)?;
    let states: Vec<Position> = (0..positions)
        .map(|p| Position::new(s, &mlp, p, positions))
        .collect();
    let (states, held) = if threads && s.stages > 1 {
        on_threads(&plan, states, &batches, s.stages)?
    } else {
        in_turn(&plan, states, &batches, s.stages)?
    };
    let (reference_losses, reference) = accumulate_unsplit(&mlp, &batches);
    let mut losses = vec![f64::NAN; s.micro];
    let mut gradients = Vec::with_capacity(reference.len());
    for state in &states {
        for (m, loss) in &state.losses {
            losses[*m] = *loss;
        }
        for g in &state.sums {
            gradients.extend_from_slice(g);
        }
    }
    let differing = gradients
        .iter()
        .zip(&reference)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count()
        + gradients.len().abs_diff(reference.len());
    let max_difference = crate::autograd::max_abs_diff(&gradients, &reference);
    Ok(PipeTraining {
        settings: s.clone(),
        run,
        losses,
        gradients,
        reference_losses,
        elements: reference.len(),
        reference,
        differing,
        max_difference,
        held,
        threads: threads && s.stages > 1,
    })
}

/// Each position's times from its counted matrix-multiply FLOPs (forward
/// 2·rows·in·out per layer; B the same for every layer whose input wants a
/// gradient; W the same again) and the link; and the per-micro-batch,
/// whole-stage summary (the mean stage) the closed form uses. `ideal`:
/// every position the mean, transfers free.
fn clock(s: &PipeSettings, mlp: &Mlp<f32>, positions: usize) -> (Vec<Times>, Times) {
    let rate = s.gflops * 1e9;
    let flops = |l: usize| {
        let w = &mlp.layers[l].weight.shape;
        2.0 * (s.rows * w[0] * w[1]) as f64
    };
    let mut times: Vec<Times> = (0..positions)
        .map(|p| {
            let layers = s.cut(p, positions);
            let forward: f64 = layers.clone().map(flops).sum();
            let input: f64 = layers.clone().filter(|l| *l > 0).map(flops).sum();
            let bytes = (s.rows * mlp.layers[layers.end - 1].weight.shape[1] * 4) as f64;
            Times {
                forward: forward / rate,
                backward: (input + forward) / rate,
                weight: forward / rate,
                transfer: s.link.message_time(bytes),
            }
        })
        .collect();
    let n = positions as f64;
    let mean = |f: fn(&Times) -> f64| times.iter().map(f).sum::<f64>() / n;
    let v = s.kind.chunks() as f64;
    let mut summary = Times {
        forward: v * mean(|t| t.forward),
        backward: v * mean(|t| t.backward),
        weight: v * mean(|t| t.weight),
        transfer: mean(|t| t.transfer),
    };
    if s.ideal {
        summary.transfer = 0.0;
        let each = Times {
            forward: summary.forward / v,
            backward: summary.backward / v,
            weight: summary.weight / v,
            transfer: 0.0,
        };
        times = vec![each; positions];
    }
    (times, summary)
}

/// A micro-batch's graph between its forward and its backward.
struct Kept {
    graph: Graph<f32>,
    input: Var,
    output: Var,
    params: Vec<Var>,
}

/// One position: its layers' weights, what it holds, what it has summed.
struct Position {
    index: usize,
    first: bool,
    last: bool,
    split: bool,
    activation: Activation,
    /// Weight and bias per layer, and whether the layer is the model's last.
    layers: Vec<(Tensor<f32>, Tensor<f32>, bool)>,
    kept: HashMap<usize, Kept>,
    /// ZB-H1: weight gradients computed by B, waiting for W.
    waiting: HashMap<usize, Vec<Tensor<f32>>>,
    sums: Vec<Vec<f32>>,
    losses: Vec<(usize, f64)>,
    /// Micro-batches whose graph it keeps (forward run, weight gradients
    /// not yet added).
    held: usize,
}

impl Position {
    fn new(s: &PipeSettings, mlp: &Mlp<f32>, p: usize, positions: usize) -> Self {
        let range = s.cut(p, positions);
        let layers: Vec<_> = range
            .clone()
            .map(|l| {
                let layer = &mlp.layers[l];
                (layer.weight.clone(), layer.bias.clone(), l + 1 == s.layers)
            })
            .collect();
        let sums = layers
            .iter()
            .flat_map(|(w, b, _)| [vec![0.0; w.numel()], vec![0.0; b.numel()]])
            .collect();
        Self {
            index: p,
            first: p == 0,
            last: p + 1 == positions,
            split: s.kind.splits_backward(),
            activation: mlp.activation,
            layers,
            kept: HashMap::new(),
            waiting: HashMap::new(),
            sums,
            losses: Vec::new(),
            held: 0,
        }
    }

    /// Runs `op` on `input` (the activation or gradient it waited for);
    /// returns what it sends on.
    fn step(
        &mut self,
        op: Op,
        input: Option<Tensor<f32>>,
        batch: &(Vec<f32>, Vec<usize>),
    ) -> Option<Tensor<f32>> {
        match op.pass {
            Pass::Forward => self.forward(op.micro, input, batch),
            Pass::Backward => self.backward(op.micro, input),
            Pass::Weight => {
                let grads = self.waiting.remove(&op.micro)?;
                self.add(grads);
                None
            }
        }
    }

    fn forward(
        &mut self,
        m: usize,
        input: Option<Tensor<f32>>,
        (x, y): &(Vec<f32>, Vec<usize>),
    ) -> Option<Tensor<f32>> {
        let mut g = Graph::new();
        let input = match input {
            // The data, as the unsplit step takes it.
            None => g.input(Tensor::new(x.clone(), &[y.len(), x.len() / y.len().max(1)])),
            Some(t) => g.param(t),
        };
        let mut h = input;
        let mut params = Vec::with_capacity(2 * self.layers.len());
        for (w, b, last) in &self.layers {
            let (w, b) = (g.param(w.clone()), g.param(b.clone()));
            params.extend([w, b]);
            h = layer(&mut g, h, w, b, (!last).then_some(self.activation));
        }
        let (output, sent) = if self.last {
            let loss = g.softmax_cross_entropy(h, y);
            self.losses.push((m, f64::from(g.value(loss).data[0])));
            (loss, None)
        } else {
            (h, Some(g.value(h).into_owned()))
        };
        self.kept.insert(
            m,
            Kept {
                graph: g,
                input,
                output,
                params,
            },
        );
        self.held += 1;
        sent
    }

    fn backward(&mut self, m: usize, seed: Option<Tensor<f32>>) -> Option<Tensor<f32>> {
        let Kept {
            mut graph,
            input,
            output,
            params,
        } = self.kept.remove(&m)?;
        match seed {
            Some(seed) => {
                graph.backward_from(output, seed, &mut |_, _| {});
            }
            None => graph.backward(output),
        }
        let grads = graph.grads_or_zeros(&params);
        if self.split {
            self.waiting.insert(m, grads);
        } else {
            self.add(grads);
        }
        (!self.first).then(|| graph.grad(input).map(|g| g.into_owned()))?
    }

    /// Adds one micro-batch's weight gradients; its activations go.
    fn add(&mut self, grads: Vec<Tensor<f32>>) {
        for (sum, g) in self.sums.iter_mut().zip(grads) {
            for (a, v) in sum.iter_mut().zip(g.data) {
                *a += v;
            }
        }
        self.held = self.held.saturating_sub(1);
    }
}

/// A message: what position `to` waits for — the activation of
/// micro-batch `micro` (for its forward) or the gradient (for its backward).
type Key = (Pass, usize, usize);

/// What `op` at position `p` waits for from another position, if anything.
fn wanted(op: Op, p: usize, positions: usize) -> Option<Key> {
    match op.pass {
        Pass::Forward if p > 0 => Some((Pass::Forward, op.micro, p)),
        Pass::Backward if p + 1 < positions => Some((Pass::Backward, op.micro, p)),
        _ => None,
    }
}

/// Where what `op` at `p` sends goes.
fn addressed(op: Op, p: usize) -> Key {
    match op.pass {
        Pass::Forward => (Pass::Forward, op.micro, p + 1),
        _ => (Pass::Backward, op.micro, p.wrapping_sub(1)),
    }
}

/// What a stage holds: its positions' kept graphs together.
fn holding<'a>(states: impl Iterator<Item = &'a Position>) -> usize {
    states.map(|p| p.held).sum()
}

/// The positions after their operations, and each stage's peak of
/// micro-batches held.
type Ran = (Vec<Position>, Vec<usize>);

/// Every stage on its own thread; messages over channels.
fn on_threads(
    plan: &[Vec<Op>],
    states: Vec<Position>,
    batches: &[(Vec<f32>, Vec<usize>)],
    stages: usize,
) -> Result<Ran, PipelineError> {
    let positions = states.len();
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..stages)
        .map(|_| mpsc::channel::<(Key, Tensor<f32>)>())
        .unzip();
    let mut by_stage: Vec<Vec<Position>> = (0..stages).map(|_| Vec::new()).collect();
    for state in states {
        by_stage[state.index % stages].push(state);
    }
    type Stage = Result<(Vec<Position>, usize), PipelineError>;
    let results: Vec<Stage> = std::thread::scope(|scope| {
        let handles: Vec<_> = by_stage
            .into_iter()
            .zip(receivers)
            .enumerate()
            .map(|(s, (mut mine, inbox))| {
                let senders = senders.clone();
                let ops = &plan[s];
                scope.spawn(move || {
                    let mut mailbox: HashMap<Key, Tensor<f32>> = HashMap::new();
                    let mut peak = 0;
                    for op in ops {
                        let p = op.chunk * stages + s;
                        let input = match wanted(*op, p, positions) {
                            None => None,
                            Some(key) => loop {
                                if let Some(t) = mailbox.remove(&key) {
                                    break Some(t);
                                }
                                let (k, t) =
                                    inbox.recv().map_err(|_| PipelineError::WorkerFailed)?;
                                mailbox.insert(k, t);
                            },
                        };
                        let sent = mine[op.chunk].step(*op, input, &batches[op.micro]);
                        peak = peak.max(holding(mine.iter()));
                        if let Some(out) = sent {
                            let key = addressed(*op, p);
                            if key.2 % stages == s {
                                mailbox.insert(key, out);
                            } else {
                                senders[key.2 % stages]
                                    .send((key, out))
                                    .map_err(|_| PipelineError::WorkerFailed)?;
                            }
                        }
                    }
                    Ok((mine, peak))
                })
            })
            .collect();
        drop(senders);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(PipelineError::WorkerFailed)))
            .collect()
    });
    let mut out: Vec<Option<Position>> = (0..positions).map(|_| None).collect();
    let mut peaks = Vec::with_capacity(stages);
    for stage in results {
        let (mine, peak) = stage?;
        peaks.push(peak);
        for state in mine {
            let i = state.index;
            out[i] = Some(state);
        }
    }
    let states = out
        .into_iter()
        .map(|p| p.ok_or(PipelineError::WorkerFailed))
        .collect::<Result<_, _>>()?;
    Ok((states, peaks))
}

/// The stages one after another: each runs its next operation as soon as
/// its input is there, as the virtual clock does.
fn in_turn(
    plan: &[Vec<Op>],
    mut states: Vec<Position>,
    batches: &[(Vec<f32>, Vec<usize>)],
    stages: usize,
) -> Result<Ran, PipelineError> {
    let positions = states.len();
    let mut mailbox: HashMap<Key, Tensor<f32>> = HashMap::new();
    let mut next = vec![0; stages];
    let mut peaks = vec![0; stages];
    loop {
        let mut progress = false;
        for s in 0..stages {
            while let Some(op) = plan[s].get(next[s]).copied() {
                let p = op.chunk * stages + s;
                let input = match wanted(op, p, positions) {
                    None => None,
                    Some(key) => match mailbox.remove(&key) {
                        Some(t) => Some(t),
                        None => break,
                    },
                };
                if let Some(out) = states[p].step(op, input, &batches[op.micro]) {
                    mailbox.insert(addressed(op, p), out);
                }
                let mine = states.iter().skip(s).step_by(stages);
                peaks[s] = peaks[s].max(holding(mine));
                next[s] += 1;
                progress = true;
            }
        }
        if (0..stages).all(|s| next[s] == plan[s].len()) {
            return Ok((states, peaks));
        }
        if !progress {
            return Err(PipelineError::WorkerFailed);
        }
    }
}
