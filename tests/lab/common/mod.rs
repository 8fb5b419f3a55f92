//! Helpers shared by the end-to-end tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dlsys_lab::{DlsysApp, Startup};
use egui_kittest::{Harness, HarnessBuilder};

/// Whether this run is CI, where a missing GPU adapter is a failure.
pub fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A GPU for tests: on CI its absence fails the test; elsewhere it is
/// reported and the caller skips the GPU part.
pub fn gpu_or_skip(test: &str) -> Option<dlsys_shaders::Gpu> {
    match dlsys_shaders::Gpu::request_blocking() {
        Ok(gpu) => Some(gpu),
        Err(err) => {
            assert!(!is_ci(), "{test}: CI=true but no GPU adapter: {err}");
            eprintln!("SKIPPED (not CI, no GPU adapter): {test}: {err}");
            None
        }
    }
}

/// The app's own wgpu setup (same device descriptor), preferring a software
/// adapter so snapshots look the same on every machine.
pub fn test_wgpu_setup() -> eframe::egui_wgpu::WgpuSetup {
    let mut setup = dlsys_lab::setup::wgpu_setup();
    if let eframe::egui_wgpu::WgpuSetup::CreateNew(create_new) = &mut setup
        && let eframe::egui_wgpu::WgpuSetup::CreateNew(kittest) =
            egui_kittest::wgpu::default_wgpu_setup()
    {
        create_new.native_adapter_selector = kittest.native_adapter_selector;
        create_new.instance_descriptor.backends = kittest.instance_descriptor.backends;
    }
    setup
}

/// A harness builder that renders with wgpu when a GPU adapter exists (and
/// fails on CI when none does).
/// The day every test's app takes for today (2026-12-05, a Saturday): the
/// dated pages' pictures do not change with the date.
pub const TODAY: dlsys_core::study::Day = dlsys_core::study::Day(20_792);

pub fn builder(test: &str) -> (HarnessBuilder<DlsysApp>, bool) {
    dlsys_lessons::kit::fix_today(TODAY);
    let builder = Harness::builder().with_size(egui::vec2(1100.0, 760.0));
    match gpu_or_skip(test) {
        Some(_) => (builder.wgpu_setup(test_wgpu_setup()), true),
        None => (builder, false),
    }
}

/// An in-memory eframe storage the test can look into.
#[derive(Clone, Default)]
pub struct MemoryStorage {
    pub map: Arc<Mutex<HashMap<String, String>>>,
    pub flushes: Arc<Mutex<u32>>,
}

impl eframe::Storage for MemoryStorage {
    fn get_string(&self, key: &str) -> Option<String> {
        self.map.lock().unwrap().get(key).cloned()
    }

    fn set_string(&mut self, key: &str, value: String) {
        self.map.lock().unwrap().insert(key.to_owned(), value);
    }

    fn remove_string(&mut self, key: &str) {
        self.map.lock().unwrap().remove(key);
    }

    fn flush(&mut self) {
        *self.flushes.lock().unwrap() += 1;
    }
}

/// The whole app at `size`, in `lang`, with an empty save.
pub fn app_harness_in<'a>(
    test: &str,
    lang: dlsys_core::text::Lang,
    size: egui::Vec2,
) -> (Harness<'a, DlsysApp>, bool) {
    let (builder, gpu) = builder(test);
    let storage = MemoryStorage::default();
    let harness = builder.with_size(size).build_eframe(move |cc| {
        DlsysApp::new(
            cc,
            Startup {
                storage: Some(Box::new(storage)),
                lang: Some(lang),
                ..Default::default()
            },
        )
    });
    (harness, gpu)
}

/// Builds the whole app in a harness, with `storage` as its save file.
pub fn app_harness<'a>(
    test: &str,
    storage: &MemoryStorage,
    lesson: Option<&str>,
) -> (Harness<'a, DlsysApp>, bool) {
    let (builder, gpu) = builder(test);
    let storage = storage.clone();
    let lesson = lesson.map(str::to_owned);
    let harness = builder.build_eframe(move |cc| {
        DlsysApp::new(
            cc,
            Startup {
                lesson,
                storage: Some(Box::new(storage)),
                ..Default::default()
            },
        )
    });
    (harness, gpu)
}

/// Opens every registered lesson from the sidebar, by its title in `lang`,
/// checks that it opened, and hands each lesson's id to `each`.
pub fn visit_every_lesson(
    harness: &mut Harness<'_, DlsysApp>,
    lang: dlsys_core::text::Lang,
    mut each: impl FnMut(&mut Harness<'_, DlsysApp>, &'static str),
) {
    use egui_kittest::kittest::Queryable as _;
    for lesson in dlsys_lessons::all() {
        let title = lesson.title(lang);
        // The list may be longer than the window: scroll to the entry first.
        harness
            .get_by_role_and_label(egui::accesskit::Role::Button, &title)
            .scroll_to_me();
        harness.run();
        harness
            .get_by_role_and_label(egui::accesskit::Role::Button, &title)
            .click();
        harness.run();
        assert_eq!(
            harness.state().current_lesson(),
            lesson.id(),
            "clicking `{title}`"
        );
        each(harness, lesson.id());
    }
}

/// Snapshots the open lesson's own page as `name`, with the list of lessons
/// hidden (by its toggle, as a learner hides it), so a new lesson changes
/// no other lesson's picture; the list is shown again after. The welcome
/// page, which lists every lesson, is the one shared picture
/// ([`snapshot_sidebar`]), and has none of its own here.
pub fn snapshot_lesson(
    harness: &mut Harness<'_, DlsysApp>,
    lang: dlsys_core::text::Lang,
    id: &str,
    name: &str,
) -> Result<(), String> {
    if id == "welcome" {
        return Ok(());
    }
    toggle_sidebar(harness, lang);
    let result = harness.try_snapshot(name).map_err(|e| e.to_string());
    toggle_sidebar(harness, lang);
    result
}

/// The one picture a new lesson changes: the welcome page and the list of
/// lessons beside it.
pub fn snapshot_sidebar(harness: &mut Harness<'_, DlsysApp>) -> Result<(), String> {
    harness.try_snapshot("sidebar").map_err(|e| e.to_string())
}

/// Clicks the top bar's toggle of the list of lessons.
pub fn toggle_sidebar(harness: &mut Harness<'_, DlsysApp>, lang: dlsys_core::text::Lang) {
    use egui_kittest::kittest::Queryable as _;
    let label = format!("☰ {}", dlsys_lessons::kit::text().get(lang, "app.lessons"));
    harness.get_by_label(&label).click();
    harness.run();
}

/// Fails when two series of one plot share a colour (in any plot drawn so
/// far), or when a plot named in `expect` was never drawn (so the check
/// cannot pass by drawing nothing). Returns the ids of the plots drawn.
pub fn plot_colours_are_distinct(harness: &Harness<'_, DlsysApp>, expect: &[&str]) -> Vec<String> {
    let recorded = dlsys_lessons::kit::figure::recorded(&harness.ctx);
    for (plot, keys) in &recorded.0 {
        assert!(
            dlsys_lessons::kit::figure::repeated(keys).is_none(),
            "plot `{plot}`: two series share a colour: {:?}",
            dlsys_lessons::kit::figure::repeated(keys)
        );
    }
    let drawn: Vec<String> = recorded.0.keys().cloned().collect();
    for id in expect {
        assert!(
            recorded.0.contains_key(*id),
            "plot `{id}` was never drawn (drawn: {drawn:?})"
        );
    }
    drawn
}

/// The plots the lessons draw as soon as they open, before any run.
pub const PLOTS_ON_OPENING: &[&str] = &[
    "float_spacing",
    "float_accumulation",
    "gradcheck_plot",
    "dp_wire_plot",
    "dp_scale_plot",
    "dp_overlap_plot",
];

/// Asserts that a widget on the page has a label containing `text`.
#[track_caller]
pub fn shows(harness: &Harness<'_, DlsysApp>, text: &str) {
    use egui_kittest::kittest::Queryable as _;
    assert!(
        harness.query_by_label_contains(text).is_some(),
        "nothing on the page reads {text:?}"
    );
}

/// Scrolls a button into view, then clicks it as a pointer would.
pub fn click_visible(harness: &mut egui_kittest::Harness<'_, dlsys_lab::DlsysApp>, label: &str) {
    use egui_kittest::kittest::Queryable as _;
    harness.get_by_label(label).scroll_to_me();
    harness.run();
    harness.get_by_label(label).click();
    // Not `run`: the click may start work that keeps repainting.
    harness.run_steps(2);
}

/// Runs frames, `steps` at a time, while `busy` holds; fails after
/// `limit_s` seconds. Returns the frames run.
pub fn run_while(
    harness: &mut egui_kittest::Harness<'_, dlsys_lab::DlsysApp>,
    steps: u32,
    limit_s: u64,
    what: &str,
    busy: impl Fn(&egui_kittest::Harness<'_, dlsys_lab::DlsysApp>) -> bool,
) -> u32 {
    let start = std::time::Instant::now();
    let mut frames = 0;
    while busy(harness) {
        harness.run_steps(steps as usize);
        frames += steps;
        assert!(
            start.elapsed().as_secs() < limit_s,
            "{what} did not finish in {limit_s} s ({frames} frames)"
        );
    }
    frames
}

/// On a mock-test paper of `tasks` (seed 1, ten questions): the first
/// answered with its reference and the rest left blank, the clock checked
/// still in sight at the paper's foot, then handed in past the question
/// about blank answers; one of ten right.
pub fn hand_in_the_first_answered(
    harness: &mut Harness<'_, DlsysApp>,
    tasks: &[Option<(dlsys_core::exercise::Task, String, String)>],
) {
    use dlsys_core::exercise::AnswerKind;
    use egui_kittest::kittest::Queryable as _;
    let Some((task, _, _)) = tasks.first().and_then(Option::as_ref) else {
        panic!("no first question");
    };
    match &task.kind {
        AnswerKind::Choice { options } => {
            let k: usize = task.reference.parse().unwrap_or(1);
            click_visible(harness, &format!("{k}. {}", options[k - 1]));
        }
        _ => {
            let label = "Answer to question 1:";
            let role = egui::accesskit::Role::TextInput;
            harness
                .get_by_role_and_label(role, label)
                .set_text_value_accesskit(&task.reference);
            harness.run();
        }
    }
    // At the paper's foot the clock is still in sight: a second copy, pinned.
    harness.get_by_label("Submit").scroll_to_me();
    harness.run();
    assert_eq!(
        harness
            .query_all_by_label_contains("10 questions · ")
            .count(),
        2
    );
    click_visible(harness, "Submit");
    // Nine blank answers: the page asks first.
    shows(harness, "Blank answers: 9 of 10");
    click_visible(harness, "Hand in anyway");
    shows(harness, "1 of 10 right");
}
