//! Work that takes longer than a frame: on a thread natively, so the window
//! keeps drawing; on the web, where there are no threads, run at once when
//! started (callers keep such work small there).

/// One piece of background work and, when it is done, its result.
pub struct Background<T> {
    #[cfg(not(target_arch = "wasm32"))]
    receiver: Option<std::sync::mpsc::Receiver<T>>,
    done: Option<T>,
    /// The thread ended without a result (it panicked).
    lost: bool,
}

impl<T> Default for Background<T> {
    fn default() -> Self {
        Self {
            #[cfg(not(target_arch = "wasm32"))]
            receiver: None,
            done: None,
            lost: false,
        }
    }
}

impl<T: Send + 'static> Background<T> {
    /// Starts `work`, dropping any result not yet taken (and forgetting work
    /// still running: its result is discarded when it arrives).
    pub fn start(&mut self, work: impl FnOnce() -> T + Send + 'static) {
        self.done = None;
        self.lost = false;
        #[cfg(not(target_arch = "wasm32"))]
        {
            let (sender, receiver) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = sender.send(work());
            });
            self.receiver = Some(receiver);
        }
        #[cfg(target_arch = "wasm32")]
        {
            self.done = Some(work());
        }
    }

    /// Whether work is running.
    pub fn is_running(&self) -> bool {
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.receiver.is_some()
        }
        #[cfg(target_arch = "wasm32")]
        {
            false
        }
    }

    /// The result, once, when the work has finished; while it runs, asks
    /// for a repaint soon so the result is picked up.
    pub fn take(&mut self, ctx: &egui::Context) -> Option<T> {
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(receiver) = &self.receiver {
            match receiver.try_recv() {
                Ok(value) => {
                    self.receiver = None;
                    return Some(value);
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => {
                    ctx.request_repaint_after(web_time::Duration::from_millis(50));
                }
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    self.receiver = None;
                    self.lost = true;
                }
            }
        }
        let _ = ctx;
        self.done.take()
    }

    /// Whether the work ended without a result (its thread panicked); asking clears it.
    pub fn take_lost(&mut self) -> bool {
        std::mem::take(&mut self.lost)
    }
}

/// A [`Background`] job that counts its steps and can be asked to stop
/// between them, its last result kept: long training runs with a progress
/// line and a Stop button.
pub struct Stoppable<T> {
    job: Background<T>,
    pub last: Option<T>,
    steps: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<T> Default for Stoppable<T> {
    fn default() -> Self {
        Self {
            job: Background::default(),
            last: None,
            steps: std::sync::Arc::default(),
            stop: std::sync::Arc::default(),
        }
    }
}

impl<T: Send + 'static> Stoppable<T> {
    /// Starts `work`, which calls the function it is given after each step:
    /// it counts the step and says whether to go on.
    pub fn start(&mut self, work: impl FnOnce(&dyn Fn() -> bool) -> T + Send + 'static) {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let steps = std::sync::Arc::new(AtomicU64::new(0));
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        (self.steps, self.stop) = (steps.clone(), stop.clone());
        self.last = None;
        self.job.start(move || {
            work(&|| {
                steps.fetch_add(1, Ordering::Relaxed);
                !stop.load(Ordering::Relaxed)
            })
        });
    }

    pub fn logic(&mut self, ctx: &egui::Context) {
        if let Some(done) = self.job.take(ctx) {
            self.last = Some(done);
        }
    }

    pub fn is_running(&self) -> bool {
        self.job.is_running()
    }

    /// While it runs: Stop, a spinner and `progress(steps done)`; otherwise
    /// the `start` button. True when the button was clicked.
    pub fn controls_ui(
        &mut self,
        ui: &mut egui::Ui,
        lang: dlsys_core::text::Lang,
        start: &str,
        progress: impl FnOnce(u64) -> String,
    ) -> bool {
        use std::sync::atomic::Ordering;
        if self.job.is_running() {
            if ui
                .button(crate::kit::text().get(lang, "race.cancel"))
                .clicked()
            {
                self.stop.store(true, Ordering::Relaxed);
            }
            ui.spinner();
            ui.label(progress(self.steps.load(Ordering::Relaxed)));
            false
        } else {
            ui.button(start).clicked()
        }
    }
}
