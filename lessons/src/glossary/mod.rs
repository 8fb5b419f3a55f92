//! The glossary page: every term of the glossary catalog
//! (`assets/glossary.ron`, the source of the lessons' first-use glosses) in
//! English and Chinese, its one-line definition in both, and the lessons
//! whose text names it — each a link that opens the lesson at the section
//! where the term first appears. A filter narrows the list as you type
//! (either language, any case).

use dlsys_core::glossary::glossary;
use dlsys_core::search::fold as folded;
use dlsys_core::text::Lang;

use crate::{Env, Lesson, Listed};

crate::lesson_text!("glossary");

/// Where a term is used: a lesson, its title, and the route that opens it
/// at the section naming the term (`lesson/section`, or the lesson).
#[derive(Clone, Debug, PartialEq)]
pub struct Use {
    pub lesson: &'static str,
    /// Its title in English and in Chinese.
    pub titles: (String, String),
    pub route: String,
}

impl Use {
    fn title(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.titles.0,
            Lang::Zh => &self.titles.1,
        }
    }
}

/// The glossary page (see the module's docs).
#[derive(Default)]
pub struct Glossary {
    /// Each term's id and where it is used, in the glossary's order.
    uses: Vec<(String, Vec<Use>)>,
    filter: String,
    open: Option<String>,
}

/// Each glossary term with the lessons (of `lessons`) that name it.
pub fn uses(lessons: &[Listed]) -> Vec<(String, Vec<Use>)> {
    glossary()
        .terms()
        .map(|(id, _)| {
            let found = lessons
                .iter()
                .filter_map(|l| {
                    let (_, key) = l.catalog.terms().find(|(term, _)| *term == id)?;
                    // A key `section.…` opens its section where it has one.
                    let section = key.split_once('.').map(|(s, _)| s);
                    let route = match section {
                        Some(s) if l.catalog.contains(&format!("{s}.heading")) => {
                            format!("{}/{s}", l.id)
                        }
                        _ => l.id.to_owned(),
                    };
                    Some(Use {
                        lesson: l.id,
                        titles: (
                            l.catalog.get(Lang::En, "title").to_owned(),
                            l.catalog.get(Lang::Zh, "title").to_owned(),
                        ),
                        route,
                    })
                })
                .collect();
            (id.to_owned(), found)
        })
        .collect()
}

/// Whether the term `id` matches `filter` in any language.
fn matches(id: &str, filter: &str) -> bool {
    let filter = folded(filter.trim());
    if filter.is_empty() {
        return true;
    }
    let Some(term) = glossary().get(id) else {
        return false;
    };
    Lang::ALL.iter().any(|&lang| {
        folded(term.word(lang)).contains(&filter) || folded(term.definition(lang)).contains(&filter)
    })
}

impl Lesson for Glossary {
    crate::lesson_identity!();

    fn see_registry(&mut self, lessons: &[Listed]) {
        self.uses = uses(lessons);
    }

    fn take_open_request(&mut self) -> Option<String> {
        self.open.take()
    }

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        let lang = env.lang;
        crate::kit::header_ui(ui, &TEXT, lang);
        ui.horizontal_wrapped(|ui| {
            let label = ui.label(t(lang, "filter"));
            ui.add(egui::TextEdit::singleline(&mut self.filter).hint_text(t(lang, "filter.hint")))
                .labelled_by(label.id);
        });
        // A term asked for (a link, a search hit) that the filter hides
        // clears the filter, so the page opens at the term.
        let wanted = crate::kit::scroll_wanted(ui.ctx());
        if let Some(id) = wanted.as_deref().and_then(|w| w.strip_prefix("term-"))
            && !matches(id, &self.filter)
        {
            self.filter.clear();
        }
        let shown: Vec<&(String, Vec<Use>)> = self
            .uses
            .iter()
            .filter(|(id, _)| matches(id, &self.filter))
            .collect();
        ui.weak(TEXT.fill(
            lang,
            "count",
            &[("shown", &shown.len()), ("total", &self.uses.len())],
        ));
        ui.add_space(4.0);
        let other = match lang {
            Lang::En => Lang::Zh,
            Lang::Zh => Lang::En,
        };
        for (id, found) in shown {
            let Some(term) = glossary().get(id) else {
                continue;
            };
            ui.separator();
            let word = ui.horizontal_wrapped(|ui| {
                ui.strong(term.word(lang));
                ui.label("⇄");
                ui.strong(term.word(other));
            });
            // A search's hit on the term opens the page here.
            crate::kit::anchor(&word.response, &format!("term-{id}"));
            ui.label(term.definition(lang));
            ui.weak(term.definition(other));
            ui.horizontal_wrapped(|ui| {
                ui.small(t(lang, "used_in"));
                for u in found {
                    if ui.link(u.title(lang)).clicked() {
                        self.open = Some(u.route.clone());
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every term is named by some lesson, and each route opens a lesson
    /// at a section that lesson has.
    #[test]
    fn every_term_links_to_the_lessons_that_name_it() {
        let listed = crate::listed();
        let all = uses(&listed);
        assert_eq!(all.len(), glossary().terms().count());
        for (id, found) in &all {
            assert!(!found.is_empty(), "`{id}` is named by no lesson");
            for u in found {
                let lesson = listed.iter().find(|l| l.id == u.lesson).unwrap_or_else(|| panic!("{u:?}"));
                if let Some((_, section)) = u.route.split_once('/') {
                    assert!(lesson.catalog.contains(&format!("{section}.heading")), "{u:?}");
                }
            }
        }
        // `log_sum_exp` is named first in the attention lesson's intro (no
        // section: the lesson's top); some terms open at a section.
        let lse = &all.iter().find(|(id, _)| id == "log_sum_exp").unwrap().1;
        assert!(lse.iter().any(|u| u.route == "attention_kernels"), "{lse:?}");
        assert!(all.iter().flat_map(|(_, f)| f).any(|u| u.route.contains('/')));
    }

    #[test]
    fn the_filter_folds_case_and_full_width_forms_in_either_language() {
        assert!(matches("tile", "TILE"));
        assert!(matches("tile", "分块"));
        assert!(matches("workgroup_memory", "ｗｏｒｋｇｒｏｕｐ"));
        assert!(matches("subnormal", "规格化"));
        assert!(!matches("tile", "zzzz"));
        assert!(matches("tile", "  "));
    }
}
