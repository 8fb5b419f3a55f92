//! The track's words (`assets/track.ron`), in the learner's language:
//! `DLSYS_LANG` (`en`, `zh`: what `dlsys-lab exercises --lang` passes to
//! the test run), else the system's (`LC_ALL`, `LC_MESSAGES`, `LANG`).

use std::cell::Cell;
use std::sync::LazyLock;

use dlsys_core::text::{Catalog, Lang};

static TEXT: LazyLock<Catalog> =
    LazyLock::new(|| Catalog::embedded(include_str!("../../assets/track.ron")));

thread_local! {
    static FORCED: Cell<Option<Lang>> = const { Cell::new(None) };
}

/// The catalog (for the coverage test).
pub fn catalog() -> &'static Catalog {
    &TEXT
}

/// The language the checkers speak on this thread.
pub fn lang() -> Lang {
    if let Some(lang) = FORCED.with(Cell::get) {
        return lang;
    }
    std::env::var("DLSYS_LANG")
        .ok()
        .and_then(|id| Lang::from_id(&id))
        .or_else(Lang::from_env)
        .unwrap_or_default()
}

/// Runs `f` with the checkers speaking `lang` (the self-check matches the
/// known mistakes' English fragments whatever the system's language).
pub fn with_lang<R>(lang: Lang, f: impl FnOnce() -> R) -> R {
    let before = FORCED.with(|c| c.replace(Some(lang)));
    let out = f();
    FORCED.with(|c| c.set(before));
    out
}

/// The text of `key` in the checkers' language.
pub fn say(key: &str) -> String {
    TEXT.get(lang(), key).to_owned()
}

/// The text of `key` with its placeholders filled.
pub fn sayf(key: &str, args: &[(&str, &dyn std::fmt::Display)]) -> String {
    TEXT.fill(lang(), key, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_has_chinese_and_every_exercise_its_words() {
        let problems = dlsys_core::text::chinese_problems(catalog(), &[]);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        for info in crate::EXERCISES {
            for part in ["title", "hint"] {
                assert!(
                    catalog().contains(&format!("{}.{part}", info.id)),
                    "{}",
                    info.id
                );
            }
        }
    }

    #[test]
    fn a_checker_speaks_the_language_asked_for() {
        let wrong = |_: u16| 0.0f32;
        let en = with_lang(Lang::En, || crate::check::fp16_from_bits(wrong)).unwrap_err();
        let zh = with_lang(Lang::Zh, || crate::check::fp16_from_bits(wrong)).unwrap_err();
        assert!(en.contains("expected"), "{en}");
        assert!(zh.contains("应为"), "{zh}");
    }
}
