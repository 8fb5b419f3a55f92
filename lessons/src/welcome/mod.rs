//! The Welcome page: what the workbench covers, how to use it, the GPU status.

use dlsys_core::text::Catalog;

use crate::kit::theme;
use crate::{Env, GpuStatus, Lesson, Listed};

crate::lesson_text!("welcome");

/// The welcome page. Its topic list is the registry's other lessons, each
/// named by its own catalog's title and summary.
#[derive(Default)]
pub struct Welcome {
    topics: Vec<&'static Catalog>,
}

impl Lesson for Welcome {
    crate::lesson_identity!();

    fn see_registry(&mut self, lessons: &[Listed]) {
        self.topics = lessons.iter().map(|l| l.catalog).collect();
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        let t = |key| TEXT.get(lang, key);
        ui.heading(t("heading"));
        ui.label(t("intro"));
        ui.add_space(8.0);
        ui.strong(t("covers"));
        for topic in &self.topics {
            let line = TEXT.fill(
                lang,
                "topic",
                &[
                    ("title", &topic.get(lang, "title")),
                    ("summary", &topic.get(lang, "summary")),
                ],
            );
            ui.label(format!("• {line}"));
        }
        ui.label(format!("• {}", t("topic.exercises")));
        ui.add_space(8.0);
        ui.strong(t("how"));
        // In the browser there is no `dlsys-lab` to run: say where it is.
        let cli = if cfg!(target_arch = "wasm32") {
            "how.cli_web"
        } else {
            "how.cli"
        };
        for key in ["how.sidebar", "how.keys", cli] {
            crate::kit::prose(ui, &format!("• {}", t(key)));
        }
        ui.add_space(8.0);
        ui.strong(t("gpu"));
        let color = match env.gpu {
            GpuStatus::Compute(_) => theme::good(ui.visuals()),
            GpuStatus::RenderOnly { .. } | GpuStatus::Unavailable { .. } => {
                theme::warn(ui.visuals())
            }
        };
        ui.colored_label(color, env.gpu.summary(env.lang));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsys_core::text::Lang;

    #[test]
    fn catalog_parses_with_every_key_used() {
        let catalog = Catalog::parse(include_str!("../../../assets/lessons/welcome.ron"));
        assert!(catalog.is_ok_and(|c| c.contains("topic") && c.missing(Lang::Zh).is_empty()));
    }
}
