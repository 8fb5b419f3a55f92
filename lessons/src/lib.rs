//! `dlsys-lessons`: every lesson of dlsys-lab, behind one small trait.
//!
//! The registry [`all`] drives the app's sidebar, routes, persistence keys,
//! the welcome page's topic list, the prose catalogs ([`catalogs`]) and the
//! tests: adding a lesson to it adds it to the snapshot, click-through,
//! self-check and font-coverage tests without new test code. A lesson never
//! talks to another lesson.

pub mod kit;
pub mod welcome;

use dlsys_core::exercise::Exercise;
pub use dlsys_core::exercise::quiz::Listed;
pub use dlsys_core::text::{Catalog, Lang};
pub use dlsys_shaders::{Gpu, GpuInfo};
pub use kit::{GpuStatus, NoGpu, adapter_label};

/// What every lesson gets each frame from the shell.
pub struct Env<'a> {
    pub gpu: &'a GpuStatus,
    pub lang: Lang,
}

/// One lesson. State that should survive a restart is saved through
/// [`Lesson::save_state`]; GPU handles and in-flight work are not.
pub trait Lesson {
    /// Stable: the route (`#id`), the storage key and the snapshot name.
    fn id(&self) -> &'static str;

    /// The lesson's prose (`assets/lessons/<id>.ron`); it holds at least the
    /// keys `title` and `summary`.
    fn catalog(&self) -> &'static Catalog;

    /// The sidebar's entry and the welcome page's topic name.
    fn title(&self, lang: Lang) -> String {
        self.catalog().get(lang, "title").to_owned()
    }

    /// A one-line description for the sidebar's tooltip and the welcome page.
    fn summary(&self, lang: Lang) -> String {
        self.catalog().get(lang, "summary").to_owned()
    }

    /// Polls background work; draws nothing. Called every frame, also for
    /// lessons that are not shown, so work in flight keeps moving.
    fn logic(&mut self, _ctx: &egui::Context, _env: &Env<'_>) {}

    /// Draws the lesson into the central panel.
    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>);

    /// Whether work is in flight (training, a kernel run): the sidebar says so.
    fn is_busy(&self) -> bool {
        false
    }

    /// The sidebar's progress line for a lesson whose exercises are not the
    /// shell's (`None`: the shell counts [`Lesson::exercises`]).
    fn progress_note(&self, _lang: Lang) -> Option<String> {
        None
    }

    /// The lesson's exercises, rendered by the shell's exercise panel.
    fn exercises(&self) -> &'static [Exercise] {
        &[]
    }

    /// The mock test's part of the learner's record (its review boxes and
    /// papers), for the page that sums the record up.
    fn quiz_record(&self) -> Option<dlsys_core::study::QuizRecord<'_>> {
        None
    }

    /// The learner's record, handed to the open page before it is drawn.
    fn see_record(&mut self, _record: &kit::record::Record<'_>) {}

    /// An action on the whole record the page asks of the shell (export,
    /// import, reset), once.
    fn take_record_request(&mut self) -> Option<kit::record::RecordRequest> {
        None
    }

    /// Sees the registry's lessons once, when [`all`] builds it: the
    /// welcome page lists them, the mock test draws from their exercises.
    /// No lesson reaches another any other way.
    fn see_registry(&mut self, _lessons: &[Listed]) {}

    /// A lesson the learner asked to open from this one (a mock test's
    /// "open the lesson"). Asking clears the request.
    fn take_open_request(&mut self) -> Option<String> {
        None
    }

    /// Whether the lesson wants its state written now (not only on the
    /// auto-save interval), e.g. after the learner edited code. Asking
    /// clears the request.
    fn take_save_request(&mut self) -> bool {
        false
    }

    /// The lesson's persistent state as RON (`None`: nothing to keep).
    fn save_state(&self) -> Option<String> {
        None
    }

    /// Restores what [`Lesson::save_state`] wrote. On error the lesson keeps
    /// its defaults and the shell tells the user.
    fn load_state(&mut self, _ron_text: &str) -> Result<(), ron::error::SpannedError> {
        Ok(())
    }

    /// Starts the lesson's main action for a self-test (`?selftest`, the
    /// browser runs in CI), through the same code as its button, with
    /// settings small enough for a smoke test and without touching what the
    /// learner saved. `false`: the lesson has no long-running action.
    fn self_test_start(&mut self, _env: &Env<'_>) -> bool {
        false
    }

    /// How the self-test's action went, once it has finished (`is_busy`
    /// false): what it did, or what went wrong.
    fn self_test_outcome(&self) -> Option<SelfTestResult> {
        None
    }
}

/// What went wrong in a self-test action, in English for the CI log (the
/// learner never sees it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfTestFailure(pub String);

impl std::fmt::Display for SelfTestFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a self-test action ended: what it did, or why it failed.
pub type SelfTestResult = Result<String, SelfTestFailure>;

/// Declares a lesson's id and its prose catalog `assets/lessons/<id>.ron`,
/// as `ID` and `TEXT` in the lesson's module, and `t(lang, key)` to read it:
/// the id, the route, the storage key, the snapshot and the catalog's file
/// name are one string.
#[macro_export]
macro_rules! lesson_text {
    ($id:literal) => {
        const ID: &str = $id;
        static TEXT: std::sync::LazyLock<$crate::Catalog> = std::sync::LazyLock::new(|| {
            $crate::Catalog::embedded(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../assets/lessons/",
                $id,
                ".ron"
            )))
        });

        /// The lesson's text for `key` in `lang`.
        #[allow(dead_code)]
        fn t(lang: dlsys_core::text::Lang, key: &'static str) -> &'static str {
            TEXT.get(lang, key)
        }
    };
}

/// [`Lesson::id`] and [`Lesson::catalog`] from [`lesson_text!`]'s `ID` and
/// `TEXT`, and with `exercises: LIST` also [`Lesson::exercises`].
#[macro_export]
macro_rules! lesson_identity {
    () => {
        fn id(&self) -> &'static str {
            ID
        }

        fn catalog(&self) -> &'static $crate::Catalog {
            &TEXT
        }
    };
    (exercises: $list:expr) => {
        $crate::lesson_identity!();

        fn exercises(&self) -> &'static [dlsys_core::exercise::Exercise] {
            $list
        }
    };
}

/// Declares a lesson's exercises once, in its `exercises.rs`: `EXERCISES`
/// (each exercise's title is `ex.<id>.title` in `catalog`, its generator the
/// function named), and for the generators `rng(seed)`, the task's seeded
/// generator (the lesson's `salt` keeps two lessons' draws apart), and
/// `t(lang, key)`, a text from `catalog`.
#[macro_export]
macro_rules! exercises {
    (catalog: $catalog:ident, salt: $salt:expr, $($id:ident => $generate:path),+ $(,)?) => {
        pub const EXERCISES: &[dlsys_core::exercise::Exercise] = &[$(
            dlsys_core::exercise::Exercise {
                id: stringify!($id),
                title: |lang| $catalog.get(lang, concat!("ex.", stringify!($id), ".title")).to_owned(),
                generate: $generate,
            }
        ),+];

        fn rng(seed: u64) -> rand::rngs::StdRng {
            $crate::kit::exercise_kit::rng(seed, $salt)
        }

        fn t(lang: dlsys_core::text::Lang, key: &str) -> String {
            $catalog.get(lang, key).to_owned()
        }
    };
}

/// Implements [`Lesson::save_state`] and [`Lesson::load_state`] for a lesson
/// whose persistent part is a `Default + serde` field.
#[macro_export]
macro_rules! persist_field {
    ($field:ident) => {
        fn save_state(&self) -> Option<String> {
            ron::to_string(&self.$field).ok()
        }

        fn load_state(&mut self, ron_text: &str) -> Result<(), ron::error::SpannedError> {
            self.$field = ron::from_str(ron_text)?;
            Ok(())
        }
    };
}

/// Every prose catalog the app shows, by name (for the coverage tests): the
/// shell's, then each registered lesson's under its id.
pub fn catalogs() -> Vec<(&'static str, &'static Catalog)> {
    let mut catalogs = vec![("shell", kit::text())];
    catalogs.extend(all().iter().map(|lesson| (lesson.id(), lesson.catalog())));
    catalogs
}

/// What search covers: every page's catalog but the shell's labels.
pub fn searchable() -> Vec<(&'static str, &'static Catalog)> {
    catalogs()
        .into_iter()
        .filter(|(id, _)| *id != "shell")
        .collect()
}

/// The search index over `pages` (the [`searchable`] ones) and the
/// glossary, whose terms open the glossary page: what the top bar's box,
/// `bench search` and the tests all search.
pub fn search_index(pages: &[(&'static str, &'static Catalog)]) -> dlsys_core::search::Index {
    dlsys_core::search::Index::build(pages, "glossary")
}

/// Declares each lesson's module and lists the lessons in sidebar order.
macro_rules! registry {
    ($($id:ident :: $lesson:ident),* $(,)?) => {
        $(pub mod $id;)*

        fn registered() -> Vec<Box<dyn Lesson>> {
            vec![$(Box::new($id::$lesson::default())),*]
        }
    };
}

// The registry: adding a lesson is one line here.
registry! {
    float_formats::FloatFormats,
    autograd_mlp::AutogradMlp,
    mixed_precision::MixedPrecision,
    quantisation::Quantisation,
    memory_compute::MemoryCompute,
    data_parallel::DataParallel,
    model_parallel::ModelParallel,
    pipeline::Pipeline,
    gpu_kernels::GpuKernels,
    gemm_fusion::GemmFusion,
    attention_kernels::AttentionKernels,
    layers::Layers,
    frameworks::Frameworks,
    inference::Inference,
    write_kernels::WriteKernels,
    mock_test::MockTest,
    glossary::Glossary,
    progress::ProgressPage,
}

/// Every lesson, in sidebar order: the welcome page, then the registry's;
/// each has seen the registry ([`Lesson::see_registry`]).
pub fn all() -> Vec<Box<dyn Lesson>> {
    let welcome: Box<dyn Lesson> = Box::<welcome::Welcome>::default();
    let mut lessons: Vec<Box<dyn Lesson>> = std::iter::once(welcome).chain(registered()).collect();
    let listed = listed();
    for lesson in &mut lessons {
        lesson.see_registry(&listed);
    }
    lessons
}

/// The registry's lessons as [`Listed`]: ids, catalogs and exercises (what
/// the mock test and `dlsys-lab quiz` draw from).
pub fn listed() -> Vec<Listed> {
    registered()
        .iter()
        .map(|lesson| Listed {
            id: lesson.id(),
            catalog: lesson.catalog(),
            exercises: lesson.exercises(),
        })
        .collect()
}

/// `lesson`'s saved state loaded into a fresh one (a save that does not
/// load fails the test), after `garbage` was refused by it.
#[cfg(test)]
pub(crate) fn reloaded<L: Lesson + Default>(lesson: &L, garbage: &str) -> L {
    let saved = lesson.save_state().unwrap_or_default();
    let mut other = L::default();
    assert!(other.load_state(garbage).is_err(), "{garbage}");
    assert!(other.load_state(&saved).is_ok(), "{saved}");
    other
}

/// Holds a lesson's numeric exercises over 200 seeds in both languages:
/// the reference is a finite number the checker accepts, at least
/// `min_mistakes` known mistakes are left and each is rejected with its own
/// feedback, and the prompt takes at least 8 forms.
#[cfg(test)]
pub(crate) fn check_numeric_exercises(exercises: &[Exercise], min_mistakes: usize) {
    use dlsys_core::exercise::{FIRST_SEED, next_seed};
    for exercise in exercises {
        let mut prompts = std::collections::BTreeSet::new();
        let mut seed = FIRST_SEED;
        for _ in 0..200 {
            for lang in Lang::ALL {
                let task = (exercise.generate)(seed, lang);
                let reference: f64 = task.reference.parse().unwrap_or(f64::NAN);
                assert!(
                    reference.is_finite(),
                    "{} seed {seed}: reference {}",
                    exercise.id,
                    task.reference
                );
                assert!(
                    task.check(&task.reference).is_correct(),
                    "{} seed {seed}",
                    exercise.id
                );
                assert!(
                    task.mistakes.len() >= min_mistakes,
                    "{} seed {seed}: {} mistakes left",
                    exercise.id,
                    task.mistakes.len()
                );
                for (i, m) in task.mistakes.iter().enumerate() {
                    let verdict = task.check(&m.answer);
                    assert_eq!(
                        verdict,
                        dlsys_core::exercise::AnswerVerdict::Wrong { mistake: Some(i) },
                        "{} seed {seed}: {} not recognised as its own mistake",
                        exercise.id,
                        m.answer
                    );
                    assert_eq!(task.verdict_text(&verdict, lang), m.feedback);
                }
                if lang == Lang::En {
                    prompts.insert(task.prompt);
                }
            }
            seed = next_seed(seed);
        }
        assert!(
            prompts.len() >= 8,
            "{}: {} prompts over 200 seeds",
            exercise.id,
            prompts.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsys_core::exercise::self_check;

    /// Every exercise of every registered lesson: the checker accepts the
    /// reference, rejects each known mistake with its own feedback and
    /// rejects malformed input, over many seeds; and no generated text is
    /// left with an unfilled `{placeholder}`, in either language.
    #[test]
    fn every_exercise_of_every_lesson_passes_its_self_check_over_many_seeds() {
        for lesson in all() {
            for exercise in lesson.exercises() {
                for seed in 1..=60 {
                    let report = self_check(exercise, seed);
                    assert!(
                        report.ok(),
                        "{}/{} seed {seed}: {:?}",
                        lesson.id(),
                        exercise.id,
                        report.problems
                    );
                    for lang in Lang::ALL {
                        let task = (exercise.generate)(seed, lang);
                        let texts = [&task.prompt, &task.explanation]
                            .into_iter()
                            .chain(&task.hints)
                            .chain(task.mistakes.iter().map(|m| &m.feedback));
                        for text in texts {
                            assert!(
                                !text.contains('{'),
                                "{}/{} seed {seed} ({lang:?}): unfilled `{text}`",
                                lesson.id(),
                                exercise.id
                            );
                        }
                    }
                }
            }
        }
    }

    /// Exercises that are conceptual by nature: the same question, its
    /// options shuffled by the seed.
    const CONCEPTUAL: &[&str] = &[
        "float_formats/fp16_overflow",
        "memory_compute/mixed_precision_halves",
        "gpu_kernels/why_subtract_max",
        "gpu_kernels/divergence_step",
        "mixed_precision/autocast_op",
        "attention_kernels/why_lse",
    ];

    /// Across 20 seeds every exercise asks at least 10 different prompts,
    /// or, if conceptual, puts its right option in at least 3 positions.
    #[test]
    fn every_exercise_varies_with_its_seed() {
        use dlsys_core::exercise::{AnswerChecker, FIRST_SEED, next_seed};
        let mut problems = Vec::new();
        for lesson in all() {
            for exercise in lesson.exercises() {
                let (mut prompts, mut positions) = (
                    std::collections::BTreeSet::new(),
                    std::collections::BTreeSet::new(),
                );
                let mut seed = FIRST_SEED;
                for _ in 0..20 {
                    let task = (exercise.generate)(seed, Lang::En);
                    if let AnswerChecker::Choice { correct } = task.checker {
                        positions.insert(correct);
                    }
                    prompts.insert(task.prompt);
                    seed = next_seed(seed);
                }
                let name = format!("{}/{}", lesson.id(), exercise.id);
                let ok = if CONCEPTUAL.contains(&name.as_str()) {
                    positions.len() >= 3
                } else {
                    prompts.len() >= 10
                };
                if !ok {
                    problems.push(format!(
                        "{name}: {} prompts, right option in {} positions",
                        prompts.len(),
                        positions.len()
                    ));
                }
            }
        }
        assert!(
            problems.is_empty(),
            "{} exercises do not vary:\n{}",
            problems.len(),
            problems.join("\n")
        );
    }

    /// Keys whose Chinese is rightly the same as the English: the app's
    /// name, and the engine's op names (code).
    const CODE_ONLY: &[&str] = &[
        "compression.fp16",
        "compression.bf16",
        "app.title",
        "check.MatMul",
        "check.Relu",
        "check.Tanh",
        "check.Sigmoid",
        "check.Scale",
        "check.Mean",
        "check.Softmax",
        "check.LogSoftmax",
        "check.SoftmaxCrossEntropy",
        "check.Mlp",
        "check.Gelu",
        "check.LayerNorm",
        "check.Conv2d",
        "check.MaxPool",
        "check.Embedding",
        "pp.schedule.gpipe",
        "pp.schedule.1f1b",
        "pp.schedule.zb-h1",
        "fsdp.activity.Gather",
        "fsdp.activity.Scatter",
    ];

    /// The catalogs below the lessons that pages show too.
    fn core_catalogs() -> [(&'static str, &'static Catalog); 2] {
        [
            ("errors", dlsys_core::errors::catalog()),
            ("names", dlsys_core::names::catalog()),
        ]
    }

    #[test]
    fn every_catalog_entry_has_chinese_written_in_chinese() {
        let mut problems = Vec::new();
        for (name, catalog) in catalogs().into_iter().chain(core_catalogs()) {
            problems.extend(
                dlsys_core::text::chinese_problems(catalog, CODE_ONLY)
                    .into_iter()
                    .map(|p| format!("{name}/{p}")),
            );
        }
        assert!(
            problems.is_empty(),
            "{} problems:\n{}",
            problems.len(),
            problems.join("\n")
        );
    }

    #[test]
    fn every_catalog_text_has_glyphs_in_the_apps_fonts() {
        let ctx = egui::Context::default();
        kit::fonts::install(&ctx);
        let mut output = ctx.run_ui(egui::RawInput::default(), |_| {});
        output.textures_delta.clear();
        let mut missing = Vec::new();
        for (name, catalog) in catalogs().into_iter().chain(core_catalogs()) {
            for (key, _lang, text) in catalog.texts() {
                for c in text.chars().filter(|c| !c.is_control()) {
                    let has = ctx.fonts_mut(|f| f.has_glyph(&egui::FontId::proportional(14.0), c));
                    if !has {
                        missing.push(format!("{name}/{key}: {c:?}"));
                    }
                }
            }
        }
        // The glossary's words and definitions (the study companion shows them).
        for (id, term) in dlsys_core::glossary::glossary().terms() {
            let texts = [&term.zh, &term.gloss, &term.def.en, &term.def.zh];
            for c in texts
                .iter()
                .flat_map(|t| t.chars())
                .filter(|c| !c.is_control())
            {
                let has = ctx.fonts_mut(|f| f.has_glyph(&egui::FontId::proportional(14.0), c));
                if !has {
                    missing.push(format!("glossary/{id}: {c:?}"));
                }
            }
        }
        // The kernel templates are shown in the editor, comments and all.
        for ex in &dlsys_shaders::kernel_track::EXERCISES {
            for c in ex.template(Lang::Zh).chars().filter(|c| !c.is_ascii()) {
                let has = ctx.fonts_mut(|f| f.has_glyph(&egui::FontId::monospace(14.0), c));
                if !has {
                    missing.push(format!("template {}: {c:?}", ex.id));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "characters the fonts cannot draw:\n{}",
            missing.join("\n")
        );
    }

    #[test]
    fn lesson_ids_are_unique_and_every_catalog_parses() {
        let ids: Vec<&str> = all().iter().map(|l| l.id()).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "{ids:?}");
        for (name, catalog) in catalogs() {
            assert!(
                catalog.keys().next().is_some(),
                "catalog {name} is empty or failed to parse"
            );
        }
        for lesson in all() {
            let catalog = lesson.catalog();
            assert!(
                catalog.contains("title") && catalog.contains("summary"),
                "lesson {} has no title or summary",
                lesson.id()
            );
        }
    }
}
