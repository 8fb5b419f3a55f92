//! The one exercise panel every lesson's exercises appear in: instant check,
//! next hint, reveal, re-roll, reset — with progress kept per exercise.

use std::collections::HashMap;

use dlsys_core::exercise::{AnswerKind, AnswerVerdict, Exercise, Progress, Task};
/// The seed sequence lives with the exercise model; re-exported for callers here.
pub use dlsys_core::exercise::{FIRST_SEED, next_seed};
use dlsys_core::text::Lang;

use crate::kit::theme;

/// The placeholder of an answer field: the forms a number or bit pattern
/// may be typed in (empty for free text).
pub fn answer_hint(kind: &AnswerKind, lang: Lang) -> String {
    match kind {
        AnswerKind::Bits { width } => {
            super::text().fill(lang, "panel.bits_hint", &[("width", width)])
        }
        AnswerKind::Number => super::text().get(lang, "panel.number_hint").to_owned(),
        _ => String::new(),
    }
}

/// What happened in the panel this frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PanelOutcome {
    /// An exercise was solved for the first time: save progress now.
    pub newly_solved: bool,
    /// Progress changed in any other way (a draft, a hint, a re-roll).
    pub changed: bool,
}

/// Generated tasks, cached so a task is built once per seed, not per frame.
#[derive(Default)]
pub struct ExercisePanel {
    tasks: HashMap<(String, u64, Lang), Task>,
}

impl ExercisePanel {
    fn task(&mut self, lesson_id: &str, exercise: &Exercise, seed: u64, lang: Lang) -> &Task {
        let key = (format!("{lesson_id}/{}", exercise.id), seed, lang);
        self.tasks
            .entry(key)
            .or_insert_with(|| (exercise.generate)(seed, lang))
    }

    /// Shows every exercise of one lesson.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        lesson_id: &str,
        exercises: &[Exercise],
        progress: &mut Progress,
        lang: Lang,
    ) -> PanelOutcome {
        let mut outcome = PanelOutcome::default();
        if exercises.is_empty() {
            return outcome;
        }
        let text = super::text();
        let solved = progress.solved_count(lesson_id, exercises.iter().map(|e| e.id));
        let heading = ui.heading(text.fill(
            lang,
            "panel.heading",
            &[("solved", &solved), ("total", &exercises.len())],
        ));
        // A search for an exercise's title opens the page here.
        super::anchor(&heading, "exercises");
        for (index, exercise) in exercises.iter().enumerate() {
            let entry_solved = progress
                .get(lesson_id, exercise.id)
                .is_some_and(|p| p.solved);
            let mark = if entry_solved { "✔" } else { "○" };
            let title = format!("{mark} {}. {}", index + 1, (exercise.title)(lang));
            egui::CollapsingHeader::new(title)
                .id_salt(("exercise", lesson_id, exercise.id))
                .default_open(index == 0)
                .show(ui, |ui| {
                    let one = self.exercise_ui(ui, lesson_id, exercise, progress, lang);
                    outcome.newly_solved |= one.newly_solved;
                    outcome.changed |= one.changed;
                });
        }
        outcome
    }

    fn exercise_ui(
        &mut self,
        ui: &mut egui::Ui,
        lesson_id: &str,
        exercise: &Exercise,
        progress: &mut Progress,
        lang: Lang,
    ) -> PanelOutcome {
        let text = super::text();
        let mut outcome = PanelOutcome::default();
        let entry = progress.entry(lesson_id, exercise.id);
        if entry.seed == 0 {
            entry.seed = FIRST_SEED;
        }
        let seed = entry.seed;
        let task = self.task(lesson_id, exercise, seed, lang).clone();
        let entry = progress.entry(lesson_id, exercise.id);

        super::prose(ui, &task.prompt);
        let mut submit = false;
        ui.horizontal(|ui| match &task.kind {
            AnswerKind::Choice { options } => {
                ui.vertical(|ui| {
                    for (i, option) in options.iter().enumerate() {
                        let value = (i + 1).to_string();
                        if ui.radio(entry.draft == value, option.as_str()).clicked() {
                            entry.draft = value;
                            outcome.changed = true;
                            submit = true;
                        }
                    }
                });
            }
            kind => {
                let label = ui.label(text.get(lang, "panel.answer"));
                let hint = answer_hint(kind, lang);
                let response = ui
                    .add(
                        egui::TextEdit::singleline(&mut entry.draft)
                            .hint_text(hint)
                            .desired_width(220.0),
                    )
                    .labelled_by(label.id);
                if response.changed() {
                    outcome.changed = true;
                }
                if response.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                    submit = true;
                }
                if ui.button(text.get(lang, "panel.check")).clicked() {
                    submit = true;
                }
            }
        });

        if submit {
            let draft = entry.draft.clone();
            let revealed = entry.revealed;
            let (verdict, newly) =
                progress.submit(lesson_id, exercise.id, &task, &draft, super::today());
            if newly && revealed {
                // An answer read off the reveal does not count; a fresh variant will.
                progress.unsolve(lesson_id, exercise.id);
                progress.entry(lesson_id, exercise.id).last_verdict = Some(AnswerVerdict::NoCredit);
            } else {
                outcome.newly_solved |= newly;
                let _ = verdict;
            }
            outcome.changed = true;
        }

        let entry = progress.entry(lesson_id, exercise.id);
        if let Some(verdict) = &entry.last_verdict {
            let visuals = ui.visuals();
            let (color, prefix) = match verdict {
                AnswerVerdict::Right => (theme::good(visuals), "✔"),
                AnswerVerdict::Wrong { .. } | AnswerVerdict::NoCredit => (theme::bad(visuals), "✖"),
                AnswerVerdict::Unparsable(_) => (theme::warn(visuals), "⚠"),
            };
            ui.colored_label(
                color,
                format!("{prefix} {}", task.verdict_text(verdict, lang)),
            );
        }

        let shown = (entry.hints_shown as usize).min(task.hints.len());
        for (i, hint) in task.hints.iter().take(shown).enumerate() {
            super::prose(
                ui,
                &format!(
                    "• {}: {hint}",
                    text.fill(lang, "panel.hint_n", &[("n", &(i + 1))])
                ),
            );
        }

        ui.horizontal_wrapped(|ui| {
            let more = shown < task.hints.len();
            let label = text.fill(
                lang,
                "panel.next_hint",
                &[("shown", &shown), ("total", &task.hints.len())],
            );
            if ui.add_enabled(more, egui::Button::new(label)).clicked() {
                entry.hints_shown += 1;
                outcome.changed = true;
            }
            if ui
                .add_enabled(
                    !entry.revealed,
                    egui::Button::new(text.get(lang, "panel.reveal")),
                )
                .clicked()
            {
                entry.revealed = true;
                outcome.changed = true;
            }
            if ui.button(text.get(lang, "panel.reroll")).clicked() {
                entry.seed = next_seed(entry.seed);
                entry.draft.clear();
                entry.last_verdict = None;
                entry.hints_shown = 0;
                entry.revealed = false;
                outcome.changed = true;
            }
            if ui
                .button(text.get(lang, "panel.reset"))
                .on_hover_text(text.get(lang, "panel.reset_tooltip"))
                .clicked()
            {
                let solved = entry.solved;
                *entry = Default::default();
                entry.seed = FIRST_SEED;
                // Progress once earned is not taken away by a reset of the inputs.
                entry.solved = solved;
                outcome.changed = true;
            }
            ui.weak(text.fill(lang, "panel.seed", &[("seed", &entry.seed)]));
        });

        if entry.revealed || entry.solved {
            ui.group(|ui| {
                if entry.revealed {
                    ui.label(text.fill(lang, "panel.answer_is", &[("answer", &task.reference)]));
                }
                super::prose(ui, &task.explanation);
            });
        }
        outcome
    }
}
