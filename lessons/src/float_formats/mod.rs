//! "Floating-point formats": every format side by side, bit by bit, with the
//! emulator's live demonstrations and self-checked exercises.

mod exercises;
mod overflow;
mod spacing;
mod ui;

use dlsys_core::float::{self, Format, FormatError, Rounding};
use serde::{Deserialize, Serialize};

use crate::{Env, Lesson};

pub use exercises::EXERCISES;

crate::lesson_text!("float_formats");

/// What the learner set up; survives restarts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub input: String,
    /// The format bare bit patterns belong to.
    pub bits_of: String,
    pub rounding: Rounding,
    pub stochastic_seed: u64,
    /// A learner-defined `eXmY` shown beside the built-ins ("" for none).
    pub custom: String,
    /// The format the number line and the zones are drawn for.
    pub focus: String,
    pub accumulation_seed: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            input: "0.1".to_owned(),
            bits_of: "fp32".to_owned(),
            rounding: Rounding::NearestEven,
            stochastic_seed: 1,
            custom: String::new(),
            focus: "fp16".to_owned(),
            accumulation_seed: 1,
        }
    }
}

/// The number of values the accumulation demonstration sums.
pub const ACCUMULATION_COUNT: usize = 10_000;

/// Everything computed from the settings, rebuilt only when they change.
struct Computed {
    settings: Settings,
    parsed: Result<float::ParsedInput, float::ParseError>,
    formats: Vec<Format>,
    custom_error: Option<FormatError>,
    rows: Vec<float::Described>,
    accumulation: Vec<float::AccumulationDemo>,
}

impl Computed {
    fn new(settings: &Settings, previous: Option<Self>) -> Self {
        let bits_of = Format::by_name(&settings.bits_of).unwrap_or_else(|_| Format::fp32());
        let parsed = float::parse_input(&settings.input, &bits_of);
        let mut formats = Format::builtins();
        let mut custom_error = None;
        if !settings.custom.trim().is_empty() {
            match Format::by_name(&settings.custom) {
                Ok(custom) if !formats.contains(&custom) => formats.push(custom),
                Ok(_) => {}
                Err(err) => custom_error = Some(err),
            }
        }
        let rows = match &parsed {
            Ok(parsed) => {
                let input = parsed.exact.to_f64();
                let mut stochastic = float::StochasticRounder::new(settings.stochastic_seed);
                formats
                    .iter()
                    .map(|format| {
                        let bits = if settings.rounding == Rounding::Stochastic {
                            stochastic.encode(format, &parsed.exact)
                        } else {
                            format.encode(&parsed.exact, settings.rounding)
                        };
                        format.describe_bits(bits, input)
                    })
                    .collect()
            }
            Err(_) => Vec::new(),
        };
        let accumulation = match previous {
            Some(previous) if previous.settings.accumulation_seed == settings.accumulation_seed => {
                previous.accumulation
            }
            _ => [Format::bf16(), Format::fp16(), Format::fp32()]
                .iter()
                .map(|f| {
                    float::accumulation_demo(f, ACCUMULATION_COUNT, settings.accumulation_seed, 200)
                })
                .collect(),
        };
        Self {
            settings: settings.clone(),
            parsed,
            formats,
            custom_error,
            rows,
            accumulation,
        }
    }
}

#[derive(Default)]
pub struct FloatFormats {
    settings: Settings,
    computed: Option<Computed>,
    /// The quantisation lesson, when its link was clicked.
    open_request: Option<String>,
}

impl FloatFormats {
    fn computed(&mut self) -> &Computed {
        let stale = self
            .computed
            .as_ref()
            .is_none_or(|c| c.settings != self.settings);
        if stale {
            let previous = self.computed.take();
            self.computed = Some(Computed::new(&self.settings, previous));
        }
        match &self.computed {
            Some(computed) => computed,
            None => unreachable!("computed just above"),
        }
    }
}

impl Lesson for FloatFormats {
    crate::lesson_identity!(exercises: EXERCISES);

    fn ui(&mut self, ui: &mut egui::Ui, env: &Env<'_>) {
        ui::lesson_ui(self, ui, env.lang);
    }

    crate::persist_field!(settings);

    fn take_open_request(&mut self) -> Option<String> {
        self.open_request.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_bad_input_is_an_error_not_a_panic() {
        let mut lesson = FloatFormats::default();
        lesson.settings.input = "fp16:0x7c00".to_owned();
        assert_eq!(crate::reloaded(&lesson, "(input: 3").settings, lesson.settings);

        lesson.settings.input = "0x1.zp3".to_owned();
        assert!(lesson.computed().parsed.is_err());
        lesson.settings.input = "65520".to_owned();
        lesson.settings.custom = "e9m9".to_owned();
        let computed = lesson.computed();
        assert!(computed.custom_error.is_some());
        let fp16 = computed
            .rows
            .iter()
            .find(|r| r.format == "fp16")
            .map(|r| r.value);
        assert_eq!(fp16, Some(f64::INFINITY));
    }
}
