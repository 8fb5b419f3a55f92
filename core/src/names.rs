//! Names of core values in the learner's language, from one catalog
//! (`assets/names.ron`) below both views: the lessons' pages and the CLI
//! both ask a value for its [`Named::name`], so neither imports the other's
//! words. A name may carry a one-line explanation, its [`Named::hint`]
//! (`<key>.hint`), for a tooltip.

use std::sync::LazyLock;

use crate::autograd::{Band, Check, PlantedBug};
use crate::collective::Algorithm;
use crate::float::{Class, Rounding};
use crate::memory::Component;
use crate::memory::measure::Phase;
use crate::mixed::{LossScale, MasterWeights, Policy};
use crate::text::{Catalog, Lang};

static NAMES: LazyLock<Catalog> =
    LazyLock::new(|| Catalog::embedded(include_str!("../../assets/names.ron")));

/// The names catalog (for the coverage tests, and for other crates' values).
pub fn catalog() -> &'static Catalog {
    &NAMES
}

/// Words for a learner kept as an entry of `assets/names.ron` and its
/// arguments (numbers, ids), so they are said in whatever language is shown
/// when they are shown — a kernel check's case, the mistake it points at.
/// `Display` and JSON give English.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Words {
    key: &'static str,
    args: Vec<(&'static str, String)>,
}

impl Words {
    pub fn new(key: &'static str, args: &[(&'static str, &dyn std::fmt::Display)]) -> Self {
        Self {
            key,
            args: args.iter().map(|(k, v)| (*k, v.to_string())).collect(),
        }
    }

    /// The words in `lang`.
    pub fn say(&self, lang: Lang) -> String {
        let args: Vec<(&str, &dyn std::fmt::Display)> = self
            .args
            .iter()
            .map(|(k, v)| -> (&str, &dyn std::fmt::Display) { (k, v) })
            .collect();
        NAMES.fill(lang, self.key, &args)
    }

    pub fn key(&self) -> &'static str {
        self.key
    }
}

impl std::fmt::Display for Words {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.say(Lang::En))
    }
}

impl serde::Serialize for Words {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.say(Lang::En))
    }
}

/// A value with a name in `assets/names.ron`.
pub trait Named {
    /// The key of its entry.
    fn name_key(&self) -> String;

    /// Its name in `lang`.
    fn name(&self, lang: Lang) -> String {
        NAMES.get(lang, &self.name_key()).to_owned()
    }

    /// What the name means, in `lang`, where the catalog explains it.
    fn hint(&self, lang: Lang) -> Option<String> {
        let key = format!("{}.hint", self.name_key());
        NAMES
            .contains(&key)
            .then(|| NAMES.get(lang, &key).to_owned())
    }
}

impl Named for Rounding {
    fn name_key(&self) -> String {
        format!("rounding.{self:?}")
    }
}

impl Named for Class {
    fn name_key(&self) -> String {
        format!("class.{self:?}")
    }
}

impl Named for Band {
    fn name_key(&self) -> String {
        format!("band.{self:?}")
    }
}

/// A gradient check: its op and what is special about its inputs.
impl Named for Check {
    fn name_key(&self) -> String {
        format!("check.{self:?}")
    }
}

impl Named for PlantedBug {
    fn name_key(&self) -> String {
        format!("bug.{self:?}")
    }
}

impl Named for Component {
    fn name_key(&self) -> String {
        format!("component.{}", self.key())
    }
}

impl Named for Phase {
    fn name_key(&self) -> String {
        format!("phase.{}", self.key())
    }
}

impl Named for Algorithm {
    fn name_key(&self) -> String {
        format!("algorithm.{}", self.id())
    }
}

impl Named for MasterWeights {
    fn name_key(&self) -> String {
        format!("master.{self:?}")
    }
}

impl Named for LossScale {
    fn name_key(&self) -> String {
        match self {
            Self::None => "loss_scale.None",
            Self::Static(_) => "loss_scale.Static",
            Self::Dynamic { .. } => "loss_scale.Dynamic",
        }
        .to_owned()
    }

    fn name(&self, lang: Lang) -> String {
        let scale = match self {
            Self::Static(s) => s.to_string(),
            _ => String::new(),
        };
        NAMES.fill(lang, &self.name_key(), &[("scale", &scale)])
    }
}

/// A precision policy: the format of each kind of tensor, in a line.
impl Named for Policy {
    fn name_key(&self) -> String {
        "policy".to_owned()
    }

    fn name(&self, lang: Lang) -> String {
        NAMES.fill(
            lang,
            "policy",
            &[
                ("compute", &self.compute),
                ("grads", &self.grads),
                ("state", &self.optimizer_state),
                ("accumulation", &self.accumulation),
                ("master", &self.master_weights.name(lang)),
                ("scale", &self.loss_scale.name(lang)),
            ],
        )
    }
}

/// A node of a collective: worker `index` of `workers`, or the parameter
/// server (the node after the last worker).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    pub index: usize,
    pub workers: usize,
}

impl Named for Node {
    fn name_key(&self) -> String {
        if self.index >= self.workers {
            "node.server".to_owned()
        } else {
            "node.worker".to_owned()
        }
    }

    fn name(&self, lang: Lang) -> String {
        NAMES.fill(lang, &self.name_key(), &[("w", &self.index)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value of every named type has an entry, in both languages.
    #[test]
    fn every_named_value_has_an_entry_in_both_languages() {
        let mut keys: Vec<String> = Vec::new();
        keys.extend(Rounding::ALL.iter().map(Named::name_key));
        keys.extend(
            [
                Class::Zero,
                Class::Subnormal,
                Class::Normal,
                Class::Infinite,
                Class::Nan,
            ]
            .iter()
            .map(Named::name_key),
        );
        keys.extend(
            [Band::Good, Band::Acceptable, Band::Suspicious, Band::Wrong]
                .iter()
                .map(Named::name_key),
        );
        keys.extend(
            PlantedBug::ALL
                .iter()
                .chain(&PlantedBug::LAYERS)
                .map(Named::name_key),
        );
        keys.extend(Check::ALL.iter().chain(&Check::LAYERS).map(Named::name_key));
        keys.extend(Component::ALL.iter().map(Named::name_key));
        keys.extend(Phase::ALL.iter().map(Named::name_key));
        keys.extend(Algorithm::ALL.iter().map(Named::name_key));
        keys.extend(Check::every().map(|c| c.name_key()));
        keys.extend(
            [MasterWeights::Fp32, MasterWeights::Same]
                .iter()
                .map(Named::name_key),
        );
        keys.extend(
            [
                LossScale::None,
                LossScale::Static(8.0),
                LossScale::dynamic(),
            ]
            .iter()
            .map(Named::name_key),
        );
        // Each check's English name is the one its reports carry.
        for check in Check::every() {
            assert_eq!(check.name(), Named::name(&check, Lang::En));
        }
        let policy = Policy::default();
        assert!(Named::name(&policy, Lang::Zh).contains("主权重 fp32"));
        for key in keys {
            assert!(NAMES.contains(&key), "no name for {key}");
        }
        assert!(catalog().missing(Lang::Zh).is_empty());
        let server = Node {
            index: 4,
            workers: 4,
        };
        assert_eq!(server.name(Lang::En), "server");
        assert_eq!(
            Node {
                index: 3,
                workers: 4
            }
            .name(Lang::En),
            "w3"
        );
        assert!(Band::Good.hint(Lang::Zh).is_some());
        assert!(Rounding::NearestEven.hint(Lang::En).is_none());
    }
}
