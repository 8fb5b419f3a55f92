//! What the lesson and `dlsys-lab compile --select` show of dispatch: the
//! captured step's matmuls dispatched in order through the registry and
//! the selection cache (which calls were timed, which were hits), the
//! cache's entries with every candidate's time, the dispatch chain of the
//! step's first matmul layer by layer, and the crossover sweep: CPU sgemm
//! against the best GPU rung on square sizes.
//!
//! The GPU's times come from the caller (the ladder races the WGSL rungs
//! in `shaders`; a page polls it between frames, the CLI blocks on it):
//! `gpu` gives each rung's seconds for a call's shape, or nothing without
//! a GPU. The CPU kernels are timed here.

use std::collections::BTreeMap;

use serde::Serialize;

use super::dispatch::{
    CROSSOVER, Call, Candidate, Chain, CpuGemm, Device, Mode, Registry, Selection, Selector, chain,
    crossover, heuristic, time_cpu,
};
use crate::kernels::GemmKind;

/// One GPU race's result for a call: each rung's seconds, or `None` when it
/// could not run (skipped, or wrong).
pub type GpuTimes = Vec<(GemmKind, Option<f64>)>;

/// The calls the GPU must race for [`selected`] in `mode`: in bench mode
/// the step's distinct untransposed matmuls (the rungs refuse the others)
/// and the sweep's square sizes; in heuristic mode the first call, when
/// the rule sends it to the GPU. None without GPU rungs.
pub fn gpu_calls(calls: &[Call], mode: Mode, kinds: &[GemmKind]) -> Vec<Call> {
    if kinds.is_empty() {
        return Vec::new();
    }
    let candidates = Registry::new(kinds).matmul();
    // Heuristic mode times only the first call, for the dispatch chain's
    // kernel layer, when the rule sends it to the GPU.
    let wanted = |(i, c): &(usize, &Call)| match mode {
        Mode::Bench => !c.a_t && !c.b_t,
        Mode::Heuristic => *i == 0 && heuristic(&candidates, c).device() == Device::Gpu,
    };
    let mut out: Vec<Call> = Vec::new();
    for (_, c) in calls.iter().enumerate().filter(wanted) {
        if !out.contains(c) {
            out.push(*c);
        }
    }
    if mode == Mode::Bench {
        out.extend(CROSSOVER.iter().map(|n| Call::new(*n, *n, *n)));
    }
    out
}

/// One row of the crossover sweep.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SweepRow {
    pub n: usize,
    pub cpu: f64,
    /// The fastest GPU rung and its seconds, if one ran.
    pub gpu: Option<(GemmKind, f64)>,
}

impl SweepRow {
    pub fn gpu_wins(&self) -> bool {
        super::dispatch::gpu_wins(self.cpu, self.gpu.map(|g| g.1))
    }
}

/// The step's matmuls dispatched.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Selected {
    pub mode: Mode,
    /// Whether GPU rungs were registered.
    pub gpu: bool,
    /// Each call in the step's order, and whether the cache answered it.
    pub calls: Vec<(Call, bool)>,
    /// Of a second step's calls, how many the cache answered (all, once
    /// every shape has a winner).
    pub second_hits: usize,
    /// The cache's entries, by call.
    pub entries: Vec<(Call, Selection)>,
    pub hits: usize,
    pub misses: usize,
    /// The first call's dispatch chain.
    pub chain: Option<Chain>,
    /// Empty without a GPU, and in heuristic mode (which times nothing).
    pub sweep: Vec<SweepRow>,
    /// The first swept size at which the GPU won.
    pub crossover: Option<usize>,
}

impl Selected {
    /// Whether no GPU rung ran at any swept size (nothing to cross over).
    pub fn gpu_never_ran(&self) -> bool {
        self.sweep.iter().all(|r| r.gpu.is_none())
    }
}

/// Dispatches `calls` in `mode` with the GPU rungs `kinds` (none: CPU
/// only), `gpu` giving the rungs' times for a call (from a race run
/// before, or on demand). The same selection cache answers the step's
/// calls twice over, as a second training step would.
pub fn selected(
    calls: &[Call],
    mode: Mode,
    kinds: &[GemmKind],
    mut gpu: impl FnMut(&Call) -> GpuTimes,
) -> Selected {
    let registry = Registry::new(kinds);
    let candidates = registry.matmul();
    let mut raced: BTreeMap<Call, GpuTimes> = BTreeMap::new();
    let mut time = |c: Candidate, call: &Call| match c {
        Candidate::Cpu(k) => Some(time_cpu(k, call)),
        Candidate::Gpu(kind) => raced
            .entry(*call)
            .or_insert_with(|| gpu(call))
            .iter()
            .find(|(k, _)| *k == kind)
            .and_then(|(_, s)| *s),
    };
    let mut selector = Selector::default();
    let mut order = Vec::new();
    for call in calls {
        let (_, hit) = selector.select(mode, &candidates, *call, &mut time);
        order.push((*call, hit));
    }
    let second_hits = calls
        .iter()
        .filter(|call| selector.select(mode, &candidates, **call, &mut time).1)
        .count();
    let chain = calls
        .first()
        .and_then(|c| chain(&registry, &selector, c, &mut time));
    // The sweep times the two devices against each other: in bench mode,
    // with a GPU.
    let sweep: Vec<SweepRow> = CROSSOVER
        .iter()
        .filter(|_| mode == Mode::Bench && !kinds.is_empty())
        .map(|n| {
            let call = Call::new(*n, *n, *n);
            let gpu = kinds
                .iter()
                .filter_map(|k| time(Candidate::Gpu(*k), &call).map(|s| (*k, s)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            SweepRow {
                n: *n,
                cpu: time(Candidate::Cpu(CpuGemm::Sgemm), &call).unwrap_or(f64::NAN),
                gpu,
            }
        })
        .collect();
    let rows: Vec<(usize, f64, Option<f64>)> = sweep
        .iter()
        .map(|r| (r.n, r.cpu, r.gpu.map(|g| g.1)))
        .collect();
    Selected {
        mode,
        gpu: !kinds.is_empty(),
        calls: order,
        second_hits,
        entries: selector.entries().map(|(c, s)| (*c, s.clone())).collect(),
        hits: selector.hits,
        misses: selector.misses,
        chain,
        crossover: crossover(&rows),
        sweep,
    }
}
