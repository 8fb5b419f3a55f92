//! The eframe shell: sidebar of lessons, the open lesson, its exercises,
//! theme, zoom, "About this GPU", and persistence.

mod page_end;
mod record;
mod search_bar;
mod top_bar;

use dlsys_core::text::Lang;
use dlsys_lessons::kit::exercise_panel::ExercisePanel;
use dlsys_lessons::kit::text as shell_text;
use dlsys_lessons::{Env, GpuStatus, Lesson};

use crate::notice::Notice;
use crate::persist::{self, STORAGE_KEY, SavedState, Store};

/// How the app was started.
#[derive(Default)]
pub struct Startup {
    /// Open this lesson (its id, as in `#id`), overriding the saved one.
    pub lesson: Option<String>,
    /// Things to tell the user once (e.g. a save file that was moved aside).
    pub notices: Vec<Notice>,
    /// The app's own storage: the native save file, or the tests' in-memory
    /// one. Without it the app uses eframe's (the browser's local storage).
    pub storage: Option<Box<dyn Store>>,
    /// Run the smoke sequence of `?selftest` and report it.
    pub selftest: bool,
    /// A language asked for on this start (`--lang`, `?lang=`): it wins
    /// over the saved one and is saved.
    pub lang: Option<Lang>,
    /// The system's language, followed on the first start (no save yet).
    /// The default, English, keeps tests independent of the machine's locale.
    pub system_lang: Lang,
}

pub struct DlsysApp {
    lessons: Vec<Box<dyn Lesson>>,
    state: SavedState,
    gpu: GpuStatus,
    panel: ExercisePanel,
    notices: Vec<Notice>,
    show_gpu_window: bool,
    /// A lesson was opened from the sidebar, a key or a link: draw it from
    /// its top. (Each lesson keeps its own scroll position, so the browser's
    /// Back and Forward, which do not set this, return to where you were.)
    scroll_to_top: bool,
    storage: Option<Box<dyn Store>>,
    /// The language the page is drawn in this frame: the chosen one, except
    /// in the browser while the Chinese font is still downloading (English).
    shown_lang: Lang,
    /// What was last written, so a save happens only when something changed.
    last_saved: String,
    /// When the state first differed from `last_saved` (saves are gathered
    /// for half a second while the learner drags a slider).
    changed_since: Option<web_time::Instant>,
    selftest: Option<crate::selftest::SelfTest>,
    /// The route last written to the address bar, and the one last read
    /// from it (web): a route is followed once, when it changes.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    route_shown: String,
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    route_seen: Option<String>,
    /// A progress file read and shown on the "Progress" page, not yet applied.
    import: Option<record::PendingImport>,
    search: search_bar::SearchBar,
    /// A route the search box opened this frame.
    searched: Option<String>,
}

impl DlsysApp {
    pub fn new(cc: &eframe::CreationContext<'_>, startup: Startup) -> Self {
        let gpu = crate::setup::gpu_status(cc.wgpu_render_state.as_ref());
        let Startup {
            lesson: route,
            mut notices,
            storage,
            selftest,
            lang,
            system_lang,
        } = startup;
        // The app's own storage first; eframe's (the browser's) otherwise.
        let get = |key: &str| match &storage {
            Some(own) => own.get_string(key),
            None => cc.storage.and_then(|s| s.get_string(key)),
        };
        // An older version's save is read (its dates unknown) and saved
        // under this version's key at the first change.
        let found = persist::saved_text(get);
        let older = found.as_ref().is_some_and(|(_, key)| *key != STORAGE_KEY);
        let saved = found.map(|(text, _)| text);
        let loaded = persist::load(saved.as_deref(), persist::now_secs());
        let mut state = loaded.state;
        if saved.is_none() {
            // First start: follow the system's language.
            state.lang = system_lang;
        }
        if let Some(lang) = lang {
            state.lang = lang;
        }
        notices.extend(loaded.notice);
        if let Some((key, text)) = loaded.set_aside {
            state.unreadable.insert(key, text);
        }
        if (saved.is_none() || older)
            && let Some(newer) = persist::newer_keys().find(|key| get(key).is_some())
        {
            notices.push(Notice::NewerSave { key: newer });
        }
        let mut app = Self {
            lessons: dlsys_lessons::all(),
            state,
            gpu,
            panel: ExercisePanel::default(),
            notices,
            show_gpu_window: false,
            scroll_to_top: false,
            storage,
            shown_lang: Lang::En,
            last_saved: if older {
                String::new()
            } else {
                saved.unwrap_or_default()
            },
            changed_since: None,
            selftest: None,
            route_shown: String::new(),
            route_seen: route.clone(),
            import: None,
            search: search_bar::SearchBar::new(),
            searched: None,
        };
        if selftest {
            let ids = app.lessons.iter().map(|l| l.id().to_owned()).collect();
            app.selftest = Some(crate::selftest::SelfTest::new(ids));
        }
        app.restore_lesson_states();
        if let Some(route) = route {
            app.open_route(&route);
        }
        if app.lesson_index(&app.state.lesson).is_none() {
            app.state.lesson = app
                .lessons
                .first()
                .map(|l| l.id().to_owned())
                .unwrap_or_default();
        }
        dlsys_lessons::kit::fonts::install(&cc.egui_ctx);
        // A steady cursor: a blinking one repaints the whole window twice a
        // second, 40 % of a core on the software renderer for as long as a
        // text field has focus (measured by scripts/idle-cpu.sh; 0 % without).
        cc.egui_ctx
            .all_styles_mut(|style| style.visuals.text_cursor.blink = false);
        cc.egui_ctx.set_theme(app.state.theme);
        cc.egui_ctx.set_zoom_factor(app.state.zoom);
        cc.egui_ctx
            .options_mut(|o| o.screen_reader = app.state.speak);
        app
    }

    fn restore_lesson_states(&mut self) {
        for lesson in &mut self.lessons {
            let id = lesson.id();
            let Some(text) = self.state.lesson_states.get(id) else {
                continue;
            };
            if let Err(err) = lesson.load_state(text) {
                self.notices.push(Notice::LessonState {
                    id: id.to_owned(),
                    error: err.to_string(),
                });
                persist::set_aside(&mut self.state.unreadable, &format!("lesson/{id}"), text);
            }
        }
    }

    fn lesson_index(&self, id: &str) -> Option<usize> {
        self.lessons.iter().position(|l| l.id() == id)
    }

    /// Opens `#id` (or `id`); an unknown route is reported, not fatal.
    pub fn open_route(&mut self, route: &str) {
        let id = route.trim_start_matches('#');
        if self.lesson_index(id).is_some() {
            self.state.lesson = id.to_owned();
        } else {
            let known: Vec<&str> = self.lessons.iter().map(|l| l.id()).collect();
            self.notices.push(Notice::NoLesson {
                id: id.to_owned(),
                known: known.join(", "),
            });
        }
    }

    /// The self-test's report, once it has finished.
    pub fn selftest_report(&self) -> Option<&crate::selftest::SelfTestReport> {
        self.selftest.as_ref().and_then(|s| s.report.as_ref())
    }

    /// Advances the self-test (if one runs) by a step.
    fn selftest_logic(&mut self, ctx: &egui::Context) {
        let Some(selftest) = &mut self.selftest else {
            return;
        };
        if selftest.is_done() {
            return;
        }
        let env = Env {
            gpu: &self.gpu,
            lang: self.shown_lang,
        };
        if let Some(id) = selftest.step(&mut self.lessons, &env) {
            self.state.lesson = id;
        }
        ctx.request_repaint();
        let Some(report) = &selftest.report else {
            return;
        };
        let json = serde_json::to_string_pretty(report).unwrap_or_default();
        log::info!("selftest: {json}");
        #[cfg(target_arch = "wasm32")]
        {
            crate::web::write_selftest(&json, report.ok);
            // Then the progress goes out as a download, for the test to hand back.
            self.self_test_export(ctx);
        }
    }

    /// Keeps `#lesson_id` in the address bar and follows the back button (web).
    #[cfg_attr(not(target_arch = "wasm32"), allow(clippy::unused_self))]
    fn route_logic(&mut self) {
        #[cfg(target_arch = "wasm32")]
        {
            let hash = crate::web::hash();
            if hash != self.route_seen {
                self.route_seen.clone_from(&hash);
                // The address bar changed under us: Back, Forward, or a typed route.
                if let Some(hash) = hash
                    && hash != self.route_shown
                    && hash != self.state.lesson
                {
                    self.open_route(&hash);
                }
            }
            if self.route_shown != self.state.lesson {
                crate::web::push_hash(&self.state.lesson);
                self.route_shown = self.state.lesson.clone();
            }
        }
    }

    /// The open lesson's id.
    pub fn current_lesson(&self) -> &str {
        &self.state.lesson
    }

    /// Starts lesson `id`'s self-test action (its main action at a small
    /// size, as `?selftest` runs it); `false` if it has none.
    pub fn start_self_test_action(&mut self, id: &str) -> bool {
        let env = Env {
            gpu: &self.gpu,
            lang: self.shown_lang,
        };
        self.lessons
            .iter_mut()
            .find(|l| l.id() == id)
            .is_some_and(|lesson| lesson.self_test_start(&env))
    }

    /// Whether a lesson has work in flight.
    pub fn lesson_busy(&self, id: &str) -> bool {
        self.lessons.iter().any(|l| l.id() == id && l.is_busy())
    }

    pub fn gpu_status(&self) -> &GpuStatus {
        &self.gpu
    }

    pub fn saved_state(&self) -> SavedState {
        let mut state = self.state.clone();
        for lesson in &self.lessons {
            if let Some(text) = lesson.save_state() {
                state.lesson_states.insert(lesson.id().to_owned(), text);
            }
        }
        state
    }

    /// Writes the state now (see [`Self::store`]).
    fn save_now(&mut self, frame: &mut eframe::Frame) {
        match self.saved_state().to_ron() {
            Ok(text) => self.store(text, frame.storage_mut()),
            Err(err) => log::error!("could not serialise the app state: {err}"),
        }
    }

    /// Writes `text` to the app's own storage, else to eframe's; a failed
    /// write becomes a notice (once), and the state stays in memory.
    fn store<S: eframe::Storage + ?Sized>(&mut self, text: String, eframe_storage: Option<&mut S>) {
        if let Some(own) = self.storage.as_mut() {
            own.set_string(STORAGE_KEY, text.clone());
            own.flush();
            if let Some(failure) = own.take_failure() {
                self.notices.push(failure);
            }
        } else if let Some(storage) = eframe_storage {
            storage.set_string(STORAGE_KEY, text.clone());
            storage.flush();
        }
        self.last_saved = text;
        self.changed_since = None;
    }

    /// Saves when the state differs from the last save: settings half a
    /// second after they changed (a dragged slider is one save), so a crash
    /// loses at most that.
    fn save_if_changed(&mut self, ctx: &egui::Context, frame: &mut eframe::Frame) {
        let input = ctx.input(|i| !i.events.is_empty());
        if !input && self.changed_since.is_none() {
            return;
        }
        let Ok(text) = self.saved_state().to_ron() else {
            return;
        };
        if text == self.last_saved {
            self.changed_since = None;
            return;
        }
        let now = web_time::Instant::now();
        let since = *self.changed_since.get_or_insert(now);
        let wait = web_time::Duration::from_millis(500);
        if now.duration_since(since) >= wait {
            self.save_now(frame);
        } else {
            ctx.request_repaint_after(wait);
        }
    }

    fn notices_ui(&mut self, ui: &mut egui::Ui) {
        let lang = self.shown_lang;
        let mut dismissed = None;
        for (i, notice) in self.notices.iter().enumerate() {
            ui.horizontal_wrapped(|ui| {
                ui.colored_label(
                    dlsys_lessons::kit::theme::warn(ui.visuals()),
                    format!("⚠ {}", notice.message(lang)),
                );
                if ui.button(shell_text().get(lang, "app.dismiss")).clicked() {
                    dismissed = Some(i);
                }
            });
        }
        if let Some(i) = dismissed {
            self.notices.remove(i);
        }
        // Whatever could not be read is kept; let the learner take it home.
        if !self.state.unreadable.is_empty()
            && ui
                .button(shell_text().get(lang, "app.export_unreadable"))
                .clicked()
        {
            let result = self.export_unreadable();
            self.notices.push(match result {
                Ok(done) => done,
                Err(err) => err,
            });
        }
    }

    fn sidebar_ui(&mut self, ui: &mut egui::Ui) {
        let lang = self.shown_lang;
        let text = shell_text();
        ui.heading(text.get(lang, "app.lessons"))
            .on_hover_text(text.get(lang, "app.keys"));
        ui.add_space(4.0);
        let mut open = None;
        for lesson in &self.lessons {
            let exercises = lesson.exercises();
            let selected = lesson.id() == self.state.lesson;
            let response = ui
                .horizontal(|ui| {
                    ui.selectable_label(selected, lesson.title(lang))
                        .on_hover_text(lesson.summary(lang))
                })
                .inner;
            if response.clicked() {
                open = Some(lesson.id());
            }
            let progress = if let Some(note) = lesson.progress_note(lang) {
                note
            } else if exercises.is_empty() {
                text.get(lang, "app.no_exercises").to_owned()
            } else {
                let solved = self
                    .state
                    .progress
                    .solved_count(lesson.id(), exercises.iter().map(|e| e.id));
                text.fill(
                    lang,
                    "app.progress",
                    &[("solved", &solved), ("total", &exercises.len())],
                )
            };
            let line = ui.weak(progress);
            // Painted after the (short) progress line, outside the layout: a
            // spinner laid out beside the title widened the sidebar and
            // shifted the page while a lesson worked.
            if lesson.is_busy() {
                let size = ui.text_style_height(&egui::TextStyle::Body);
                let at = egui::Rect::from_min_size(
                    egui::pos2(line.rect.right() + 4.0, line.rect.top()),
                    egui::vec2(size, size),
                );
                egui::Spinner::new().size(size).paint_at(ui, at);
                line.on_hover_text(text.get(lang, "app.busy"));
            }
            ui.add_space(2.0);
        }
        if let Some(id) = open {
            self.go_to(id);
        }
    }

    /// Alt+↓ and Alt+↑ open the next and the previous lesson.
    fn lesson_keys(&mut self, ctx: &egui::Context) {
        let (next, previous) = ctx.input_mut(|i| {
            (
                i.consume_key(egui::Modifiers::ALT, egui::Key::ArrowDown),
                i.consume_key(egui::Modifiers::ALT, egui::Key::ArrowUp),
            )
        });
        let step: isize = match (next, previous) {
            (true, false) => 1,
            (false, true) => -1,
            _ => return,
        };
        let count = self.lessons.len();
        if count == 0 {
            return;
        }
        let here = self.lesson_index(&self.state.lesson).unwrap_or(0);
        let to = (here as isize + step).rem_euclid(count as isize) as usize;
        let id = self.lessons[to].id().to_owned();
        self.go_to(&id);
    }

    /// Opens lesson `id` (known to exist) at its top.
    fn go_to(&mut self, id: &str) {
        self.state.lesson = id.to_owned();
        self.scroll_to_top = true;
    }

    fn gpu_window_ui(&mut self, ctx: &egui::Context) {
        let lang = self.shown_lang;
        let text = shell_text();
        let mut open = self.show_gpu_window;
        egui::Window::new(text.get(lang, "app.about_gpu"))
            .open(&mut open)
            .resizable(false)
            .show(ctx, |ui| crate::gpu_panel::gpu_info_ui(ui, &self.gpu, lang));
        self.show_gpu_window = open;
    }
}

impl eframe::App for DlsysApp {
    fn logic(&mut self, ctx: &egui::Context, frame: &mut eframe::Frame) {
        self.shown_lang =
            if self.state.lang == Lang::Zh && !dlsys_lessons::kit::fonts::cjk_ready(ctx) {
                Lang::En
            } else {
                self.state.lang
            };
        #[cfg(target_arch = "wasm32")]
        crate::web::set_document_lang(self.shown_lang.id());
        self.selftest_logic(ctx);
        self.lesson_keys(ctx);
        self.route_logic();
        self.record_visit();
        let env = Env {
            gpu: &self.gpu,
            lang: self.shown_lang,
        };
        let mut save = false;
        for lesson in &mut self.lessons {
            lesson.logic(ctx, &env);
            save |= lesson.take_save_request();
        }
        save |= self.record_requests(ctx);
        if save {
            self.save_now(frame);
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, frame: &mut eframe::Frame) {
        egui::Panel::top("top_bar").show(ui, |ui| {
            self.top_bar_ui(ui);
            if !self.notices.is_empty() {
                self.notices_ui(ui);
            }
        });
        if self.state.sidebar {
            egui::Panel::left("lessons")
                .resizable(true)
                .default_size(190.0)
                .show(ui, |ui| {
                    egui::ScrollArea::vertical().show(ui, |ui| self.sidebar_ui(ui));
                });
        }

        let mut outcome = Default::default();
        let mut opened: Option<String> = None;
        egui::CentralPanel::default().show(ui, |ui| {
            let mut scroll = egui::ScrollArea::vertical()
                .id_salt(("lesson_page", self.state.lesson.as_str()))
                .auto_shrink(false);
            if std::mem::take(&mut self.scroll_to_top) {
                scroll = scroll.vertical_scroll_offset(0.0);
            }
            scroll.show(ui, |ui| {
                let Some(index) = self.lesson_index(&self.state.lesson) else {
                    return;
                };
                self.show_record(index);
                let env = Env {
                    gpu: &self.gpu,
                    lang: self.shown_lang,
                };
                let lesson = &mut self.lessons[index];
                // The sidebar, drawn before the page, shows the lesson's
                // progress: when the page changes it, draw again at once.
                let note = lesson.progress_note(env.lang);
                lesson.ui(ui, &env);
                if lesson.progress_note(env.lang) != note {
                    ui.ctx().request_repaint();
                }
                opened = lesson.take_open_request();
                let exercises = lesson.exercises();
                if !exercises.is_empty() {
                    ui.add_space(12.0);
                    ui.separator();
                    outcome = self.panel.ui(
                        ui,
                        lesson.id(),
                        exercises,
                        &mut self.state.progress,
                        self.shown_lang,
                    );
                }
                if let Some(route) = page_end::ui(ui, &self.lessons, index, env.lang) {
                    opened = Some(route);
                }
            });
        });
        if self.show_gpu_window {
            let ctx = ui.ctx().clone();
            self.gpu_window_ui(&ctx);
        }
        self.state.zoom = ui.ctx().zoom_factor();
        // A section asked for last frame that this page did not draw.
        if dlsys_lessons::kit::scroll_missed(ui.ctx()) {
            self.scroll_to_top = true;
            ui.ctx().request_repaint();
        }
        // A lesson or the search box asked to open a page (a route, as the
        // sidebar's click; `lesson/section` opens it scrolled to that section).
        if let Some(route) = opened.or_else(|| self.searched.take()) {
            match route.split_once('/') {
                Some((lesson, section)) => {
                    self.open_route(lesson);
                    dlsys_lessons::kit::request_scroll(ui.ctx(), section);
                }
                None => {
                    self.open_route(&route);
                    self.scroll_to_top = true;
                }
            }
        }
        let outcome: dlsys_lessons::kit::exercise_panel::PanelOutcome = outcome;
        if outcome.newly_solved {
            self.save_now(frame);
        } else {
            // After the frame's widgets, so a click's change is seen at once.
            let ctx = ui.ctx().clone();
            self.save_if_changed(&ctx, frame);
        }
    }

    /// eframe's auto-save and exit: the app's own storage when it has one
    /// (eframe's then keeps only the window's size).
    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        match self.saved_state().to_ron() {
            Ok(text) => self.store(text, Some(storage)),
            Err(err) => log::error!("could not serialise the app state: {err}"),
        }
    }
}
