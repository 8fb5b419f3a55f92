//! Gradient checking: the engine's analytic gradients against numerical ones.
//!
//! Numerical derivatives use the fourth-order central difference
//! `(−f(x+2h) + 8f(x+h) − 8f(x−h) + f(x−2h)) / 12h`, whose truncation error is
//! O(h⁴) instead of the two-point stencil's O(h²), so f64 checks reach the
//! 1e-7 band with room to spare. Relative error is
//! `|a − n| / max(|a|, |n|, tiny)`, banded as CS231n does.

use serde::Serialize;

use super::tensor::{Real, Tensor};
use super::{Graph, PlantedBug, Var};

/// Below this, both gradients count as zero (avoids 0/0).
pub const TINY: f64 = 1e-300;

/// The CS231n bands for a relative error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Band {
    /// < 1e-7: the gradient is right.
    Good,
    /// 1e-7 … 1e-4: fine with kinks (ReLU at 0) or in low precision, else look closer.
    Acceptable,
    /// 1e-4 … 1e-2: suspicious.
    Suspicious,
    /// > 1e-2: wrong.
    Wrong,
}

impl Band {
    pub fn of(rel_error: f64) -> Self {
        if !rel_error.is_finite() || rel_error > 1e-2 {
            Self::Wrong
        } else if rel_error > 1e-4 {
            Self::Suspicious
        } else if rel_error >= 1e-7 {
            Self::Acceptable
        } else {
            Self::Good
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Good => "good",
            Self::Acceptable => "acceptable",
            Self::Suspicious => "suspicious",
            Self::Wrong => "wrong",
        }
    }
}

pub fn relative_error(analytic: f64, numeric: f64) -> f64 {
    let scale = analytic.abs().max(numeric.abs()).max(TINY);
    if analytic == numeric {
        0.0
    } else {
        (analytic - numeric).abs() / scale
    }
}

/// One element's check.
#[derive(Clone, Debug, Serialize)]
pub struct ElementCheck {
    pub index: usize,
    pub analytic: f64,
    pub numeric: f64,
    pub rel_error: f64,
}

/// One input tensor's check.
#[derive(Clone, Debug, Serialize)]
pub struct TensorCheck {
    pub name: String,
    pub shape: Vec<usize>,
    pub max_rel_error: f64,
    pub elements: Vec<ElementCheck>,
}

/// A whole check.
#[derive(Clone, Debug, Serialize)]
pub struct GradcheckReport {
    pub name: String,
    pub precision: &'static str,
    pub tensors: Vec<TensorCheck>,
    pub max_rel_error: f64,
    pub band: Band,
}

/// Builds a scalar loss from the leaves created for `inputs`.
pub type Build<'a, T> = &'a dyn Fn(&mut Graph<T>, &[Var]) -> Var;

/// Checks every element of every input. `h` is the finite-difference step.
pub fn gradcheck<T: Real>(
    name: &str,
    build: Build<'_, T>,
    inputs: &[(String, Tensor<T>)],
    h: f64,
    bug: Option<PlantedBug>,
) -> GradcheckReport {
    let run = |values: &[Tensor<T>], backward: bool| -> (T, Vec<Option<Tensor<T>>>) {
        let mut graph = Graph::new();
        graph.plant_bug(bug);
        let vars: Vec<Var> = values.iter().map(|v| graph.param(v.clone())).collect();
        let loss = build(&mut graph, &vars);
        let value = graph.value(loss).item();
        if !backward {
            return (value, Vec::new());
        }
        graph.backward(loss);
        (
            value,
            vars.iter()
                .map(|v| graph.grad(*v).map(std::borrow::Cow::into_owned))
                .collect(),
        )
    };
    let base: Vec<Tensor<T>> = inputs.iter().map(|(_, t)| t.clone()).collect();
    let (_, analytic) = run(&base, true);
    let mut tensors = Vec::new();
    for (t, (tensor_name, tensor)) in inputs.iter().enumerate() {
        let mut elements = Vec::new();
        for i in 0..tensor.numel() {
            let at = |delta: f64| {
                let mut values = base.clone();
                values[t].data[i] = T::from_f64(tensor.data[i].to_f64() + delta);
                run(&values, false).0.to_f64()
            };
            // Differences first: where f does not change, the estimate is exactly 0.
            let numeric = (8.0 * (at(h) - at(-h)) - (at(2.0 * h) - at(-2.0 * h))) / (12.0 * h);
            let a = analytic[t].as_ref().map_or(0.0, |g| g.data[i].to_f64());
            elements.push(ElementCheck {
                index: i,
                analytic: a,
                numeric,
                rel_error: relative_error(a, numeric),
            });
        }
        let max_rel_error = elements.iter().map(|e| e.rel_error).fold(0.0, max_nan);
        tensors.push(TensorCheck {
            name: tensor_name.clone(),
            shape: tensor.shape.clone(),
            max_rel_error,
            elements,
        });
    }
    let max_rel_error = tensors.iter().map(|t| t.max_rel_error).fold(0.0, max_nan);
    GradcheckReport {
        name: name.to_owned(),
        precision: T::NAME,
        tensors,
        max_rel_error,
        band: Band::of(max_rel_error),
    }
}

/// The larger of two errors, where NaN (a broken gradient) wins.
fn max_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}
