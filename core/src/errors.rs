//! Typed errors whose words live in a catalog (`assets/errors.ron`), so an
//! error can be shown in the learner's language. An error type is declared
//! once with [`catalog_error!`]: each variant names its catalog key, and its
//! fields fill the `{placeholders}` of that entry. `Display` gives English
//! (logs, `--json`, tests); [`Localized::message`] gives any language.

use std::sync::LazyLock;

use crate::text::{Catalog, Lang};

static ERRORS: LazyLock<Catalog> =
    LazyLock::new(|| Catalog::embedded(include_str!("../../assets/errors.ron")));

/// The error catalog (for the coverage tests).
pub fn catalog() -> &'static Catalog {
    &ERRORS
}

/// An error with a catalog entry.
pub trait Localized {
    /// The key of its entry in `assets/errors.ron`.
    fn key(&self) -> &'static str;

    /// The values of its placeholders, rendered in `lang` (a field that is
    /// itself a localized error is rendered in `lang` too).
    fn args(&self, lang: Lang) -> Vec<(&'static str, String)>;

    /// The message in `lang`.
    fn message(&self, lang: Lang) -> String {
        let args = self.args(lang);
        let refs: Vec<(&str, &dyn std::fmt::Display)> = args
            .iter()
            .map(|(name, value)| -> (&str, &dyn std::fmt::Display) { (*name, value) })
            .collect();
        ERRORS.fill(lang, self.key(), &refs)
    }
}

/// How a field of an error becomes text in a language: plain values through
/// `Display`, localized errors through their own catalog entry.
pub trait Arg {
    fn render(&self, lang: Lang) -> String;
}

macro_rules! display_args {
    ($($t:ty),* $(,)?) => {
        $(impl Arg for $t {
            fn render(&self, _lang: Lang) -> String {
                self.to_string()
            }
        })*
    };
}

display_args!(
    String, &str, u8, u16, u32, u64, usize, i32, i64, f32, f64, bool, char
);

/// Declares an error enum whose messages come from `assets/errors.ron`.
///
/// ```ignore
/// catalog_error! {
///     /// Why a plan cannot run.
///     pub enum PlanError {
///         Empty = "plan.empty",
///         TooLarge { elements: u64 } = "plan.too_large",
///     }
/// }
/// ```
/// Every field type must implement [`Arg`] (strings, numbers, and other
/// catalog errors, which get `impl Arg` from this macro).
#[macro_export]
macro_rules! catalog_error {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident $({ $($field:ident : $ty:ty),* $(,)? })? = $key:literal
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        $vis enum $name {
            $(
                $(#[$vmeta])*
                $variant $({ $($field: $ty),* })?
            ),*
        }

        impl $crate::errors::Localized for $name {
            fn key(&self) -> &'static str {
                match self {
                    $(Self::$variant { .. } => $key),*
                }
            }

            #[allow(unused_variables)]
            fn args(&self, lang: $crate::text::Lang) -> Vec<(&'static str, String)> {
                match self {
                    $(
                        Self::$variant $({ $($field),* })? => vec![
                            $($((stringify!($field), $crate::errors::Arg::render($field, lang))),*)?
                        ]
                    ),*
                }
            }
        }

        impl $crate::errors::Arg for $name {
            fn render(&self, lang: $crate::text::Lang) -> String {
                $crate::errors::Localized::message(self, lang)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&$crate::errors::Localized::message(self, $crate::text::Lang::En))
            }
        }

        impl std::error::Error for $name {}
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::catalog_error! {
        /// For the tests.
        enum Sample {
            Plain = "test.plain",
            Filled { n: u32, what: String } = "test.filled",
            Nested { inner: Box<Sample> } = "test.nested",
        }
    }

    impl Arg for Box<Sample> {
        fn render(&self, lang: Lang) -> String {
            self.message(lang)
        }
    }

    #[test]
    fn messages_come_from_the_catalog_in_either_language() {
        assert_eq!(Sample::Plain.to_string(), "a plain error");
        let filled = Sample::Filled {
            n: 3,
            what: "rows".to_owned(),
        };
        assert_eq!(filled.to_string(), "3 rows is wrong");
        assert_eq!(filled.message(Lang::Zh), "rows 为 3，不对");
        let nested = Sample::Nested {
            inner: Box::new(Sample::Plain),
        };
        assert_eq!(nested.message(Lang::Zh), "外层：简单的错误");
    }

    #[test]
    fn every_error_entry_has_both_languages() {
        let missing = catalog().missing(Lang::Zh);
        assert!(missing.is_empty(), "no Chinese for: {missing:?}");
    }
}
