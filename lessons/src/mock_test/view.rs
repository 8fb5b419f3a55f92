//! The mock test's page: set up and start, answer against the clock, the
//! marked paper, the history.

use dlsys_core::exercise::AnswerKind;
use dlsys_core::text::Lang;

use super::{MockTest, TEXT, t};
use dlsys_core::exercise::quiz::{MAX_QUESTIONS, MAX_SEED, draw};
use crate::kit::theme;

fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    format!("{}:{:02}", s / 60, s % 60)
}

pub fn ui(m: &mut MockTest, ui: &mut egui::Ui, lang: Lang) {
    crate::kit::header_ui(ui, &TEXT, lang);
    ui.add_space(8.0);
    match m.saved.current.as_ref().map(|c| c.marked.is_some()) {
        None => setup(m, ui, lang),
        Some(false) => paper(m, ui, lang),
        Some(true) => marked(m, ui, lang),
    }
    history(m, ui, lang);
}

fn setup(m: &mut MockTest, ui: &mut egui::Ui, lang: Lang) {
    let s = &mut m.saved;
    ui.horizontal_wrapped(|ui| {
        let label = ui.label(t(lang, "setup.questions"));
        ui.add(egui::DragValue::new(&mut s.questions).range(1..=MAX_QUESTIONS)).labelled_by(label.id);
        let label = ui.label(t(lang, "setup.seed"));
        ui.add(egui::DragValue::new(&mut s.seed).range(1..=MAX_SEED)).labelled_by(label.id);
        if ui.button(t(lang, "setup.new_seed")).clicked() {
            s.seed = dlsys_core::exercise::next_seed(s.seed).max(1);
        }
        let label = ui.label(t(lang, "setup.minutes"));
        ui.add(egui::DragValue::new(&mut s.minutes).range(0..=180)).labelled_by(label.id).on_hover_text(t(lang, "setup.minutes_tip"));
    });
    // The browser has no `dlsys-lab` to run.
    if cfg!(not(target_arch = "wasm32")) {
        ui.weak(TEXT.fill(lang, "setup.cli", &[("n", &s.questions), ("seed", &s.seed)]));
    }
    let due = s.review.due().len();
    ui.horizontal_wrapped(|ui| {
        if ui.button(t(lang, "setup.start")).clicked() {
            let questions = draw(&m.lessons, m.saved.questions, m.saved.seed);
            m.start(questions, false);
        }
        let review = ui.add_enabled(due > 0, egui::Button::new(TEXT.fill(lang, "setup.review", &[("due", &due)])));
        if review.on_hover_text(t(lang, "setup.review_tip")).clicked() {
            let questions = m.saved.review.questions(m.saved.questions.max(due), m.saved.seed);
            m.start(questions, true);
        }
    });
}

fn paper(m: &mut MockTest, ui: &mut egui::Ui, lang: Lang) {
    let elapsed = m.elapsed();
    let tasks = m.tasks(lang).to_vec();
    let Some(test) = m.saved.current.as_mut() else {
        return;
    };
    let limit = if test.limit_s > 0.0 {
        TEXT.fill(lang, "paper.limit", &[("left", &clock(test.limit_s - elapsed))])
    } else {
        String::new()
    };
    let time = TEXT.fill(lang, "paper.clock", &[("n", &test.questions.len()), ("time", &clock(elapsed)), ("limit", &limit)]);
    let inline = ui.strong(&time);
    // Scrolled past, the clock stays in sight at the page's top right.
    if !ui.is_rect_visible(inline.rect) {
        let corner = ui.clip_rect().right_top() + egui::vec2(-12.0, 6.0);
        egui::Area::new(egui::Id::unique("mock_test_clock"))
            .order(egui::Order::Foreground)
            .pivot(egui::Align2::RIGHT_TOP)
            .fixed_pos(corner)
            .interactable(false)
            .show(ui.ctx(), |ui| {
                egui::Frame::popup(ui.style()).show(ui, |ui| ui.strong(&time));
            });
    }
    ui.add_space(4.0);
    let mut changed = false;
    for (i, task) in tasks.iter().enumerate() {
        ui.separator();
        let Some((task, lesson, title)) = task else {
            ui.weak(t(lang, "paper.gone"));
            continue;
        };
        let heading = ui.label(egui::RichText::new(TEXT.fill(lang, "paper.heading", &[("i", &(i + 1)), ("lesson", lesson), ("title", title)])).strong());
        crate::kit::anchor(&heading, "paper");
        ui.label(&task.prompt);
        let answer = &mut test.answers[i];
        match &task.kind {
            AnswerKind::Choice { options } => {
                // One radio group per question, named for screen readers.
                let group = egui::UiBuilder::new()
                    .accessibility_role(egui::accesskit::Role::RadioGroup)
                    .accessibility_label(TEXT.fill(lang, "paper.answer", &[("i", &(i + 1))]));
                ui.scope_builder(group, |ui| {
                    for (k, option) in options.iter().enumerate() {
                        let value = (k + 1).to_string();
                        if ui.radio(*answer == value, format!("{}. {option}", k + 1)).clicked() {
                            *answer = value;
                            changed = true;
                        }
                    }
                });
            }
            kind => {
                let label = ui.label(TEXT.fill(lang, "paper.answer", &[("i", &(i + 1))]));
                let hint = crate::kit::exercise_panel::answer_hint(kind, lang);
                let edit = ui
                    .add(egui::TextEdit::singleline(answer).hint_text(hint).desired_width(260.0))
                    .labelled_by(label.id);
                changed |= edit.changed();
            }
        }
    }
    ui.separator();
    // Answers are saved with the app's debounce, not at every keystroke.
    let _ = changed;
    let mut submit = false;
    let mut abandon = false;
    let blank = test.answers.iter().filter(|a| a.trim().is_empty()).count();
    let n = test.answers.len();
    if blank == 0 {
        // Filled in since the question was asked: nothing left to ask.
        m.confirm_blank = false;
    }
    ui.horizontal_wrapped(|ui| {
        if m.confirm_blank {
            // Blank answers are marked wrong: ask before handing in.
            ui.colored_label(theme::warn(ui.visuals()), TEXT.fill(lang, "paper.blank_sure", &[("blank", &blank), ("n", &n)]));
            submit = ui.button(t(lang, "paper.blank_yes")).clicked();
            if ui.button(t(lang, "paper.blank_no")).clicked() {
                m.confirm_blank = false;
            }
        } else if ui.button(t(lang, "paper.submit")).clicked() {
            if blank > 0 {
                m.confirm_blank = true;
            } else {
                submit = true;
            }
        }
        if m.confirm_abandon {
            ui.label(t(lang, "paper.abandon_sure"));
            abandon = ui.button(t(lang, "paper.abandon_yes")).clicked();
            if ui.button(t(lang, "paper.abandon_no")).clicked() {
                m.confirm_abandon = false;
            }
        } else if ui.button(t(lang, "paper.abandon")).clicked() {
            m.confirm_abandon = true;
        }
    });
    if submit {
        m.confirm_abandon = false;
        m.confirm_blank = false;
        m.submit(lang);
        m.show_score = true;
    } else if abandon {
        m.confirm_abandon = false;
        m.confirm_blank = false;
        m.saved.current = None;
        m.running_since = None;
        m.save_request = true;
    }
}

fn marked(m: &mut MockTest, ui: &mut egui::Ui, lang: Lang) {
    let tasks = m.tasks(lang).to_vec();
    let Some(test) = m.saved.current.clone() else {
        return;
    };
    let verdicts = test.marked.clone().unwrap_or_default();
    let right = verdicts.iter().filter(|v| **v).count();
    let score = ui.strong(TEXT.fill(
        lang,
        "marked.score",
        &[("right", &right), ("total", &verdicts.len()), ("time", &clock(test.elapsed_s))],
    ));
    if std::mem::take(&mut m.show_score) {
        score.scroll_to_me(Some(egui::Align::TOP));
    }
    let visuals = ui.visuals().clone();
    for (i, (task, q)) in tasks.iter().zip(&test.questions).enumerate() {
        ui.separator();
        let Some((task, lesson, title)) = task else {
            continue;
        };
        let ok = verdicts.get(i).copied().unwrap_or(false);
        let mark = if ok { ("✔", theme::good(&visuals)) } else { ("✖", theme::bad(&visuals)) };
        ui.horizontal_wrapped(|ui| {
            ui.colored_label(mark.1, mark.0);
            ui.label(egui::RichText::new(TEXT.fill(lang, "paper.heading", &[("i", &(i + 1)), ("lesson", lesson), ("title", title)])).strong());
        });
        ui.label(&task.prompt);
        let answer = test.answers.get(i).cloned().unwrap_or_default();
        // A choice shown with its option's text.
        let shown = |a: &str| match (&task.kind, a.trim().parse::<usize>()) {
            (AnswerKind::Choice { options }, Ok(k)) if (1..=options.len()).contains(&k) => format!("{k}. {}", options[k - 1]),
            _ => a.to_owned(),
        };
        let yours = if answer.trim().is_empty() { t(lang, "marked.blank").to_owned() } else { shown(&answer) };
        if ok {
            ui.label(TEXT.fill(lang, "marked.right", &[("answer", &yours)]));
        } else {
            // The feedback of a known mistake, or the plain verdict.
            let verdict = task.check(&answer);
            let why = if answer.trim().is_empty() { String::new() } else { format!(" — {}", task.verdict_text(&verdict, lang)) };
            ui.label(TEXT.fill(lang, "marked.wrong", &[("answer", &yours), ("why", &why)]));
        }
        ui.label(TEXT.fill(lang, "marked.reference", &[("answer", &shown(&task.reference))]));
        ui.weak(&task.explanation);
        if ui.link(TEXT.fill(lang, "marked.open", &[("lesson", lesson)])).clicked() {
            m.open_request = Some(q.lesson.clone());
        }
    }
    ui.separator();
    if ui.button(t(lang, "marked.done")).clicked() {
        m.saved.current = None;
        m.save_request = true;
    }
}

fn history(m: &mut MockTest, ui: &mut egui::Ui, lang: Lang) {
    if m.saved.attempts.is_empty() {
        return;
    }
    ui.add_space(8.0);
    crate::kit::anchor(&ui.strong(t(lang, "history.heading")), "history");
    // A paper being answered must not be replaced by an old one.
    let answering = m.saved.current.as_ref().is_some_and(|c| c.marked.is_none());
    let mut open = None;
    egui::Grid::new("mock_history").striped(true).show(ui, |ui| {
        for key in ["history.kind", "history.seed", "history.score", "history.time"] {
            ui.label(egui::RichText::new(t(lang, key)).strong());
        }
        ui.end_row();
        let count = m.saved.attempts.len();
        for (back, a) in m.saved.attempts.iter().rev().take(10).enumerate() {
            ui.label(t(lang, if a.review { "history.review" } else { "history.test" }));
            // A review's draw is not the seed's: nothing to reproduce.
            ui.label(if a.review { "—".to_owned() } else { a.seed.to_string() });
            ui.label(format!("{} / {}", a.right, a.total));
            ui.label(clock(a.seconds));
            if a.paper.is_some() {
                let button = ui
                    .add_enabled(!answering, egui::Button::new(t(lang, "history.open")))
                    .on_disabled_hover_text(t(lang, "history.open_busy"));
                if button.clicked() {
                    open = Some(count - 1 - back);
                }
            }
            ui.end_row();
        }
    });
    if let Some(index) = open {
        m.reopen(index);
    }
}
