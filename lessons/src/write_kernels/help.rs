//! The write-a-kernel lesson's help: hints one at a time, and the
//! reference kernel, shown read-only after a few failed checks (the
//! learner's own code is never touched by it).

use dlsys_core::names::Named as _;
use dlsys_shaders::kernel_track::KernelExercise;

use super::{Lang, TEXT, WriteKernels};
use crate::kit::code_editor;

/// Failed checks of an exercise after which its reference kernel can be shown.
pub(super) const REVEAL_AFTER: u32 = 3;

/// An exercise's hints (`hint.<id>.1`, `hint.<id>.2`, … in the catalog), in order.
pub(super) fn hints(ex: &KernelExercise, lang: Lang) -> Vec<String> {
    (1..)
        .map(|n| format!("hint.{}.{n}", ex.id))
        .take_while(|key| TEXT.contains(key))
        .map(|key| TEXT.get(lang, &key).to_owned())
        .collect()
}

impl WriteKernels {
    pub(super) fn record_failure(&mut self, ex: &'static KernelExercise) {
        *self.failed_checks.entry(ex.id).or_insert(0) += 1;
    }

    pub(super) fn failures(&self, ex: &KernelExercise) -> u32 {
        self.failed_checks.get(ex.id).copied().unwrap_or(0)
    }

    /// After [`REVEAL_AFTER`] failed checks, or once the kernel passes.
    pub(super) fn can_reveal(&self, ex: &KernelExercise) -> bool {
        self.failures(ex) >= REVEAL_AFTER || self.saved.passed.contains(ex.id)
    }

    /// Whether the verdict shown for `ex` was for other code than `code`
    /// (the learner edited after the check).
    pub(super) fn verdict_is_stale(&self, ex: &KernelExercise, code: &str) -> bool {
        matches!(&self.shown, Some((id, checked)) if *id == ex.id && checked.source != code)
    }

    /// The hints, one at a time, and the button that shows the reference kernel.
    pub(super) fn help_ui(&mut self, ui: &mut egui::Ui, lang: Lang, ex: &'static KernelExercise) {
        let shell = crate::kit::text();
        let hints = hints(ex, lang);
        let shown = self
            .hints_shown
            .get(ex.id)
            .copied()
            .unwrap_or(0)
            .min(hints.len());
        for (i, hint) in hints.iter().take(shown).enumerate() {
            ui.label(format!(
                "• {}: {hint}",
                shell.fill(lang, "panel.hint_n", &[("n", &(i + 1))])
            ));
        }
        let can_reveal = self.can_reveal(ex);
        let revealed = self.revealed.contains(ex.id);
        let locked = TEXT.fill(
            lang,
            "reveal.locked",
            &[("n", &REVEAL_AFTER), ("failed", &self.failures(ex))],
        );
        let (mut next_hint, mut toggle) = (false, false);
        ui.horizontal_wrapped(|ui| {
            let label = shell.fill(
                lang,
                "panel.next_hint",
                &[("shown", &shown), ("total", &hints.len())],
            );
            next_hint = ui
                .add_enabled(shown < hints.len(), egui::Button::new(label))
                .clicked();
            let key = if revealed { "reveal.hide" } else { "reveal.show" };
            toggle = ui
                .add_enabled(can_reveal, egui::Button::new(TEXT.get(lang, key)))
                .on_disabled_hover_text(locked.as_str())
                .clicked();
            if !can_reveal {
                ui.weak(locked.as_str());
            }
        });
        if next_hint {
            self.hints_shown.insert(ex.id, shown + 1);
        }
        if toggle && !self.revealed.remove(ex.id) {
            self.revealed.insert(ex.id);
        }
    }

    /// The reference kernel, read-only, when the learner asked for it.
    pub(super) fn reference_ui(&self, ui: &mut egui::Ui, lang: Lang, ex: &'static KernelExercise) {
        if !(self.revealed.contains(ex.id) && self.can_reveal(ex)) {
            return;
        }
        ui.add_space(6.0);
        ui.weak(TEXT.get(lang, "reveal.note"));
        let reference = ex.reference();
        let mut text: &str = &reference;
        let label = TEXT.fill(lang, "reveal.label", &[("exercise", &ex.name(lang))]);
        code_editor::show(
            ui,
            &format!("wgsl-reference-{}", ex.id),
            &mut text,
            &label,
            None,
        );
    }

}
