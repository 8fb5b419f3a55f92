//! The Welcome page: what the workbench covers, how to use it, the GPU status.

use std::sync::LazyLock;

use dlsys_core::text::{Catalog, Lang};

use crate::{Env, GpuStatus, Lesson, theme};

static TEXT: LazyLock<Catalog> =
    LazyLock::new(|| Catalog::embedded(include_str!("../../../assets/lessons/welcome.ron")));

/// The welcome page's prose.
pub fn text() -> &'static Catalog {
    &TEXT
}

#[derive(Default)]
pub struct Welcome;

impl Lesson for Welcome {
    fn id(&self) -> &'static str {
        "welcome"
    }

    fn title(&self, lang: Lang) -> String {
        TEXT.get(lang, "title").to_owned()
    }

    fn summary(&self, lang: Lang) -> String {
        TEXT.get(lang, "summary").to_owned()
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        let t = |key| TEXT.get(lang, key);
        ui.heading(t("heading"));
        ui.label(t("intro"));
        ui.add_space(8.0);
        ui.strong(t("covers"));
        for key in [
            "topic.float",
            "topic.autograd",
            "topic.gpu",
            "topic.exercises",
        ] {
            ui.label(format!("• {}", t(key)));
        }
        ui.add_space(8.0);
        ui.strong(t("how"));
        for key in ["how.sidebar", "how.keys", "how.cli"] {
            ui.label(format!("• {}", t(key)));
        }
        ui.add_space(8.0);
        ui.strong(t("gpu"));
        let color = match env.gpu {
            GpuStatus::Compute(_) => theme::good(ui.visuals()),
            GpuStatus::RenderOnly { .. } | GpuStatus::Unavailable { .. } => {
                theme::warn(ui.visuals())
            }
        };
        ui.colored_label(color, env.gpu.summary());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_parses_with_every_key_used() {
        let catalog = Catalog::parse(include_str!("../../../assets/lessons/welcome.ron"));
        assert!(catalog.is_ok_and(|c| c.contains("topic.gpu") && c.missing(Lang::Zh).is_empty()));
    }
}
