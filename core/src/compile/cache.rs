//! The compile cache, as torch.compile keeps one: each call checks the
//! captured graphs' guards; when none passes, the step runs eagerly once
//! more and is captured again (a recompilation). The first recapture for a
//! new batch size marks the batch symbolic (torch.compile's automatic
//! dynamic shapes; a batch of 1 stays specialised, as there), so later
//! sizes reuse it. A model with a data-dependent branch (the batch's mean
//! against a threshold) is captured on the path it took, guarded by that
//! outcome: a batch that goes the other way fails the guard and is
//! captured as a second graph. Each graph's arena is planned once per
//! batch size and reused.

use serde::Serialize;

use super::capture::{Branch, CaptureError, Ir, capture, slots};
use super::replay::{Layout, Replayed, layout, run};
use crate::autograd::Tensor;
use crate::nn::models::Cnn;
use crate::nn::{Activation, Mlp, TapeStep};

/// A model whose training step a cache captures.
#[derive(Clone, Debug)]
pub enum Model {
    Mlp(Mlp<f32>),
    Cnn(Box<Cnn>),
}

impl Model {
    /// Its parameters, in its step's order.
    pub fn params(&self) -> Vec<&Tensor<f32>> {
        match self {
            Self::Mlp(m) => m.params(),
            Self::Cnn(c) => c.params().to_vec(),
        }
    }

    /// Its training step on `x` (`y.len()` rows), eagerly, with `activation`
    /// in place of the MLP's own (the CNN's is ReLU).
    pub fn step(&self, x: &[f32], y: &[usize], activation: Option<Activation>) -> TapeStep<f32> {
        match self {
            Self::Mlp(m) => match activation {
                Some(a) if a != m.activation => Mlp {
                    activation: a,
                    ..m.clone()
                }
                .step(x, y),
                _ => m.step(x, y),
            },
            Self::Cnn(c) => c.step(x, y),
        }
    }
}

/// What one call did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum CacheEvent {
    /// Captured graph `capture` (0-based), static or with a symbolic batch.
    Captured {
        batch: usize,
        capture: usize,
        symbolic: bool,
    },
    /// A cached graph's guards passed; it was replayed.
    Reused { batch: usize, capture: usize },
    /// A cached graph's guard failed (before a recapture).
    GuardFailed {
        batch: usize,
        capture: usize,
        #[serde(serialize_with = "english")]
        error: CaptureError,
    },
}

/// An error in a JSON report: its English message.
fn english<S: serde::Serializer>(e: &CaptureError, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(e)
}

struct Entry {
    ir: Ir,
    /// The arena planned for each batch size replayed.
    layouts: Vec<(usize, Layout)>,
}

/// A model's training step behind a compile cache.
pub struct Compiled {
    model: Model,
    /// A data-dependent branch in the model: ReLU when the batch's mean is
    /// above this threshold, tanh otherwise (none: the MLP's own activation).
    branch: Option<f32>,
    entries: Vec<Entry>,
    /// Every call's events, in order.
    pub log: Vec<CacheEvent>,
    arena: Vec<f32>,
}

impl Compiled {
    pub fn new(mlp: Mlp<f32>) -> Self {
        Self::of(Model::Mlp(mlp))
    }

    pub fn of(model: Model) -> Self {
        Self {
            model,
            branch: None,
            entries: Vec::new(),
            log: Vec::new(),
            arena: Vec::new(),
        }
    }

    /// `mlp` with a data-dependent branch: its activation is ReLU when the
    /// batch's mean is above `threshold` and tanh otherwise, as model code
    /// `if x.mean() > t` would choose. A capture records the path taken,
    /// and guards it.
    pub fn branching(mlp: Mlp<f32>, threshold: f32) -> Self {
        Self {
            branch: Some(threshold),
            ..Self::new(mlp)
        }
    }

    /// The activation the model's branch takes on `x` (the MLP's own
    /// without a branch).
    pub fn activation_for(&self, x: &[f32]) -> Activation {
        self.activation_taken(self.branch.map(|t| Branch::of(x, t).1))
    }

    /// The activation of the path `taken` (the MLP's own without a branch).
    fn activation_taken(&self, taken: Option<Branch>) -> Activation {
        match (taken, &self.model) {
            (Some(b), _) if b.above => Activation::Relu,
            (Some(_), _) => Activation::Tanh,
            (None, Model::Mlp(m)) => m.activation,
            (None, Model::Cnn(_)) => Activation::Relu,
        }
    }

    /// Graphs captured so far (torch.compile's frames compiled).
    pub fn captures(&self) -> usize {
        self.entries.len()
    }

    /// The graphs captured, in order.
    pub fn graphs(&self) -> impl Iterator<Item = &Ir> {
        self.entries.iter().map(|e| &e.ir)
    }

    /// One step on `x` (`y.len()` rows): replayed from a graph whose guards
    /// pass, else captured (run eagerly) and then replayed.
    pub fn step(&mut self, x: &[f32], y: &[usize]) -> Result<Replayed, CaptureError> {
        let batch = y.len();
        if batch == 0 || !x.len().is_multiple_of(batch) {
            return Err(CaptureError::Rows {
                values: x.len() as u64,
                rows: batch as u64,
            });
        }
        let params = self.model.params();
        let data_shape = [batch, x.len() / batch];
        let inputs = slots(&params, x, &data_shape);
        let shapes: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
        // The branch's statistic, once for every graph's guard.
        let mean = self.branch.map(|_| Branch::mean(x));
        let (mut hit, mut shape_failed) = (None, false);
        for (i, e) in self.entries.iter().enumerate() {
            let checked = e.ir.check(&shapes);
            shape_failed |= checked.is_err();
            let branch = |()| mean.map_or(Ok(()), |m| e.ir.check_branch(m));
            match checked.and_then(branch) {
                Ok(()) => {
                    hit = Some(i);
                    break;
                }
                Err(error) => self.log.push(CacheEvent::GuardFailed {
                    batch,
                    capture: i,
                    error,
                }),
            }
        }
        let i = match hit {
            Some(i) => {
                self.log.push(CacheEvent::Reused { batch, capture: i });
                i
            }
            None => {
                // A second batch size makes the batch symbolic — except 1,
                // which torch.compile specialises too: a row of one is
                // also the shape of a bias. (A branch taken the other way
                // changes no shape.)
                let symbolic = shape_failed && batch > 1;
                // The model code runs eagerly: its branch is decided on
                // this batch, and the path taken is recorded and guarded.
                // (Another activation runs on a copy: the replay below
                // reads the parameters from the original; a capture
                // happens once per graph.)
                let taken = self.branch.zip(mean).map(|(t, m)| Branch::at(m, t));
                let activation = taken.map(|t| self.activation_taken(Some(t)));
                let step = self.model.step(x, y, activation);
                let mut ir = capture(&step.graph, step.loss, &step.params, step.data, symbolic)?;
                ir.guards.branch = taken;
                self.entries.push(Entry {
                    ir,
                    layouts: Vec::new(),
                });
                let i = self.entries.len() - 1;
                self.log.push(CacheEvent::Captured {
                    batch,
                    capture: i,
                    symbolic,
                });
                i
            }
        };
        let entry = &mut self.entries[i];
        let at = match entry.layouts.iter().position(|(b, _)| *b == batch) {
            Some(at) => at,
            None => {
                entry.layouts.push((batch, layout(&entry.ir, &shapes)));
                entry.layouts.len() - 1
            }
        };
        run(
            &entry.ir,
            &entry.layouts[at].1,
            &inputs,
            y,
            &mut self.arena,
            false,
        )
    }
}
