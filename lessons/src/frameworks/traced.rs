//! The traced step: its settings' controls, the background job that traces
//! it once the settings have stayed still a moment (and are within this
//! page's budget of work), and the step's memory worked out from the trace
//! for the device shown — again at once when only the device changes.

use dlsys_core::compile::step::{
    MAX_DEVICE_MIB, StepMemory, StepModel, StepSettings, StepTrace, memory_of, trace_step,
};
use dlsys_core::names::Named as _;
use dlsys_core::errors::Localized as _;
use dlsys_core::memory::MemoryError;
use dlsys_core::memory::mlp::MlpSettings;
use dlsys_core::text::Lang;

use super::{TEXT, t};
use crate::kit::background::Background;
use crate::kit::theme;

/// How long the settings stay still before a trace starts.
const SETTLE: web_time::Duration = web_time::Duration::from_millis(400);

/// Work a trace may take here (FLOPs of one training step): the engine
/// trains a few steps to trace one, on a thread natively and between
/// frames on the web.
#[cfg(not(target_arch = "wasm32"))]
const STEP_BUDGET: u64 = 4_000_000_000;
#[cfg(target_arch = "wasm32")]
const STEP_BUDGET: u64 = 200_000_000;

/// The largest batch the page traces the CNN and the transformer at: the
/// transformer's graph grows with the batch (about 30,000 buffers at 256,
/// a minute to trace and plan in a debug build), the CNN's does not.
#[cfg(not(target_arch = "wasm32"))]
const MODEL_BATCH: [usize; 2] = [256, 32];
#[cfg(target_arch = "wasm32")]
const MODEL_BATCH: [usize; 2] = [32, 8];

/// What a trace depends on: the model, the MLP's shape and the batch.
type Key = (StepModel, MlpSettings);

fn key(s: &StepSettings) -> Key {
    // The other models take only the batch from the MLP's settings.
    let mlp = match s.model {
        StepModel::Mlp => s.mlp.clone(),
        _ => MlpSettings {
            batch: s.mlp.batch,
            ..MlpSettings::default()
        },
    };
    (s.model, mlp)
}

type Done = (Key, Result<StepTrace, MemoryError>);

/// Why the page shows no memory.
pub enum Missing {
    /// Not traced yet (or the trace is running).
    Pending,
    Error(MemoryError),
    TooLarge,
    Lost,
}

#[derive(Default)]
pub struct Traced {
    job: Background<Done>,
    /// The settings of the trace in flight, and since when the settings
    /// shown have stayed as they are.
    running: Option<Key>,
    settled: Option<(Key, web_time::Instant)>,
    trace: Option<Done>,
    lost: Option<Key>,
    /// The memory of `trace` on a device of so many MiB.
    memory: Option<(u64, Result<StepMemory, MemoryError>)>,
    /// Whether the learner has asked for a trace: from then on a change of
    /// the settings traces again.
    armed: bool,
}

/// Whether the page traces `key`'s step: an MLP of a valid shape whose
/// step is within the budget; the other models up to a batch.
fn within_budget((model, mlp): &Key) -> Result<bool, MemoryError> {
    use dlsys_core::memory::models::MAX_METERED_BATCH;
    if *model != StepModel::Mlp && !(1..=MAX_METERED_BATCH).contains(&mlp.batch) {
        return Err(MemoryError::MeteredBatch {
            batch: mlp.batch as u64,
            max: MAX_METERED_BATCH as u64,
        });
    }
    match model {
        StepModel::Cnn => return Ok(mlp.batch <= MODEL_BATCH[0]),
        StepModel::Transformer => return Ok(mlp.batch <= MODEL_BATCH[1]),
        StepModel::Mlp => {}
    }
    let shape = mlp.shape()?;
    let estimate = dlsys_core::memory::estimate_mlp(&shape)?;
    Ok(estimate.flops() <= STEP_BUDGET)
}

impl Traced {
    /// Traces `key`'s step now.
    pub fn start(&mut self, key: Key) {
        self.running = Some(key.clone());
        self.lost = None;
        self.armed = true;
        self.job.start(move || {
            let trace = trace_step(key.0, &key.1);
            (key, trace)
        });
    }

    pub fn is_running(&self) -> bool {
        self.job.is_running()
    }

    /// Picks up a finished trace; starts one when the settings have stayed
    /// on an untraced step for a moment; works the memory out again when
    /// the device changed.
    pub fn logic(&mut self, ctx: &egui::Context, s: &StepSettings) {
        if let Some(done) = self.job.take(ctx) {
            self.trace = Some(done);
            self.memory = None;
            self.running = None;
        }
        if self.job.take_lost() {
            self.lost = self.running.take();
        }
        let want = key(s);
        if let Some(Ok(trace)) = self.trace.as_ref().filter(|(k, _)| *k == want).map(|(_, r)| r)
            && self.memory.as_ref().is_none_or(|(d, _)| *d != s.device_mib)
        {
            self.memory = Some((s.device_mib, memory_of(trace, s.device_mib)));
        }
        let traced = self.trace.as_ref().is_some_and(|(k, _)| *k == want);
        if !self.armed || self.is_running() || traced || self.lost.as_ref() == Some(&want) || !within_budget(&want).unwrap_or(true) {
            self.settled = None;
            return;
        }
        let since = match &self.settled {
            Some((k, since)) if *k == want => *since,
            _ => {
                let now = web_time::Instant::now();
                self.settled = Some((want.clone(), now));
                now
            }
        };
        let waited = since.elapsed();
        if waited >= SETTLE {
            self.settled = None;
            self.start(want);
        } else {
            ctx.request_repaint_after(SETTLE.saturating_sub(waited));
        }
    }

    /// The memory of the step shown, or why there is none.
    pub fn current(&self, s: &StepSettings) -> Result<&StepMemory, Missing> {
        let want = key(s);
        if self.lost.as_ref() == Some(&want) {
            return Err(Missing::Lost);
        }
        match within_budget(&want) {
            Err(e) => return Err(Missing::Error(e)),
            Ok(false) => return Err(Missing::TooLarge),
            Ok(true) => {}
        }
        match (&self.trace, &self.memory) {
            (Some((k, Err(e))), _) if *k == want => Err(Missing::Error(e.clone())),
            (Some((k, Ok(_))), Some((d, memory))) if *k == want && *d == s.device_mib => {
                memory.as_ref().map_err(|e| Missing::Error(e.clone()))
            }
            _ => Err(Missing::Pending),
        }
    }

    pub fn controls(&mut self, ui: &mut egui::Ui, s: &mut StepSettings, lang: Lang) {
        ui.label(t(lang, "plan.explain"));
        ui.horizontal_wrapped(|ui| {
            crate::kit::choice(ui, "frameworks_model", t(lang, "plan.model"), &mut s.model, StepModel::ALL, |&m| m.name(lang));
            if s.model == StepModel::Mlp {
                let label = ui.label(t(lang, "plan.sizes"));
                ui.add(egui::TextEdit::singleline(&mut s.mlp.sizes).desired_width(160.0))
                    .labelled_by(label.id);
            }
            crate::kit::number_field(ui, t(lang, "plan.batch"), &mut s.mlp.batch, 1..=1024, 1.0);
            crate::kit::number_field(ui, t(lang, "plan.device"), &mut s.device_mib, 1..=MAX_DEVICE_MIB, 16.0);
            if self.is_running() || self.settled.is_some() {
                ui.spinner();
            } else if !self.armed && ui.button(t(lang, "plan.trace")).clicked() {
                self.start(key(s));
            }
        });
        let bad = theme::bad(ui.visuals());
        match self.current(s) {
            Err(Missing::Error(e)) => {
                ui.colored_label(bad, e.message(lang));
            }
            Err(Missing::TooLarge) => {
                let command = match s.model {
                    StepModel::Mlp => format!("--mlp {} --batch {}", s.mlp.sizes, s.mlp.batch),
                    other => format!("--model {} --batch {}", other.key(), s.mlp.batch),
                };
                ui.colored_label(bad, TEXT.fill(lang, "plan.too_large", &[("command", &command)]));
            }
            Err(Missing::Lost) => {
                ui.colored_label(bad, t(lang, "plan.lost"));
            }
            Ok(_) | Err(Missing::Pending) => {}
        }
    }

    /// For the self-test: the default step traced, its planned arena
    /// between its bounds, the allocator holding at least what it holds.
    pub fn self_test_outcome(&self) -> Option<crate::SelfTestResult> {
        if self.is_running() {
            return None;
        }
        let fail = |why: String| Some(Err(crate::SelfTestFailure(why)));
        let defaults = StepSettings::default();
        let trace = match &self.trace {
            Some((k, Ok(trace))) if *k == key(&defaults) => trace,
            Some((_, Err(e))) => return fail(e.to_string()),
            _ => return fail("no step traced".to_owned()),
        };
        let m = match memory_of(trace, defaults.device_mib) {
            Ok(m) => m,
            Err(e) => return fail(e.to_string()),
        };
        let (p, stats) = (&m.plan, &m.allocator.stats);
        let detail = format!(
            "{} buffers: max-live {} B, arena {} B, no reuse {} B; allocator peak reserved {} B",
            m.buffers, p.max_live, p.arena, p.no_reuse, stats.peak_reserved
        );
        let ok = p.max_live > 0
            && p.max_live <= p.arena
            && p.arena <= p.no_reuse
            && stats.peak_allocated >= p.max_live
            && m.allocator.oom.is_none();
        Some(if ok { Ok(detail) } else { Err(crate::SelfTestFailure(detail)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_other_models_key_on_the_batch_and_refuse_batches_the_core_refuses() {
        let mut s = StepSettings {
            model: StepModel::Cnn,
            ..StepSettings::default()
        };
        let before = key(&s);
        s.mlp.sizes = "784,32,10".to_owned();
        assert_eq!(key(&s), before, "the CNN's trace does not depend on the MLP's sizes");
        s.mlp.batch = 300;
        assert!(matches!(within_budget(&key(&s)), Err(MemoryError::MeteredBatch { .. })));
        s.mlp.batch = 8;
        assert!(within_budget(&key(&s)).is_ok_and(|ok| ok));
        s.model = StepModel::Mlp;
        assert_ne!(key(&s).1.sizes, MlpSettings::default().sizes);
    }
}
