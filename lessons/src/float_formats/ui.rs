//! Drawing the float lesson. Every number shown comes from `dlsys_core::float`.

use dlsys_core::names::Named as _;
use dlsys_core::errors::Localized as _;
use dlsys_core::float::{self, Class, Format, Rounding, show, show_sig};
use dlsys_core::text::Lang;
use egui::{Color32, RichText};
use egui_plot::{Line, Plot, PlotPoints, Points, VLine};

use super::{ACCUMULATION_COUNT, Computed, FloatFormats, Settings, TEXT, t};
use crate::kit::theme;
use crate::kit::theme::ReadableAxes as _;

pub fn lesson_ui(lesson: &mut FloatFormats, ui: &mut egui::Ui, lang: Lang) {
    crate::kit::header_ui(ui, &TEXT, lang);
    ui.add_space(6.0);
    input_ui(ui, &mut lesson.settings, lang);

    let mut changes = Changes::default();
    let computed = lesson.computed();
    match &computed.parsed {
        Ok(parsed) => {
            let value = parsed.exact.to_f64();
            let kind = match &parsed.kind {
                float::parse::InputKind::Bits { format, bits } => TEXT.fill(
                    lang,
                    "kind.Bits",
                    &[("format", &format.name), ("bits", &format!("0x{bits:x}"))],
                ),
                other => TEXT.get(lang, &format!("kind.{other:?}")).to_owned(),
            };
            let exact = parsed.exact.is_f64();
            let key = if exact {
                "input.reads_as"
            } else {
                "input.reads_as_approx"
            };
            ui.weak(TEXT.fill(lang, key, &[("kind", &kind), ("value", &show(value))]));
        }
        Err(err) => {
            ui.colored_label(
                theme::warn(ui.visuals()),
                TEXT.fill(lang, "parse.error", &[("error", &err.message(lang))]),
            );
        }
    }
    if let Some(err) = &computed.custom_error {
        ui.colored_label(
            theme::warn(ui.visuals()),
            TEXT.fill(lang, "custom.error", &[("error", &err.message(lang))]),
        );
    }
    ui.add_space(4.0);
    table_ui(ui, computed, lang, &mut changes);
    ui.add_space(10.0);
    tie_ui(ui, computed, lang);
    ui.add_space(10.0);
    super::overflow::overflow_ui(ui, computed, lang);
    let mut open = None;
    crate::kit::lesson_link(ui, TEXT.get(lang, "overflow.quantisation"), "quantisation", &mut open);
    ui.add_space(10.0);
    range_ui(ui, computed, lang, &mut changes);
    ui.add_space(10.0);
    demos_ui(ui, computed, lang, &mut changes);
    changes.apply(&mut lesson.settings);
    if open.is_some() {
        lesson.open_request = open;
    }
}

/// Edits made while the computed results are borrowed, applied afterwards.
#[derive(Default)]
struct Changes {
    input: Option<String>,
    focus: Option<String>,
    accumulation_seed: Option<u64>,
}

impl Changes {
    fn apply(self, settings: &mut Settings) {
        if let Some(input) = self.input {
            settings.input = input;
        }
        if let Some(focus) = self.focus {
            settings.focus = focus;
        }
        if let Some(seed) = self.accumulation_seed {
            settings.accumulation_seed = seed;
        }
    }
}

fn input_ui(ui: &mut egui::Ui, settings: &mut Settings, lang: Lang) {
    crate::kit::anchor(&ui.strong(t(lang, "input.heading")), "input");
    ui.horizontal_wrapped(|ui| {
        let label = ui.label(t(lang, "input.label"));
        ui.add(
            egui::TextEdit::singleline(&mut settings.input)
                .hint_text(t(lang, "input.hint"))
                .font(egui::TextStyle::Monospace)
                .desired_width(260.0),
        )
        .labelled_by(label.id);
        crate::kit::choice(ui, "float_rounding", t(lang, "input.rounding"), &mut settings.rounding, Rounding::ALL, |&mode| mode.name(lang));
        if settings.rounding == Rounding::Stochastic {
            let label = ui.label(t(lang, "input.seed"));
            ui.add(egui::DragValue::new(&mut settings.stochastic_seed))
                .labelled_by(label.id);
        }
    });
    ui.horizontal_wrapped(|ui| {
        let (label, names) = (t(lang, "input.bits_of"), &float::BUILTIN_NAMES);
        crate::kit::choice_of_names(ui, "float_bits_of", label, &mut settings.bits_of, names);
        let label = ui.label(t(lang, "input.custom"));
        ui.add(
            egui::TextEdit::singleline(&mut settings.custom)
                .hint_text(t(lang, "input.custom_hint"))
                .desired_width(70.0),
        )
        .labelled_by(label.id);
    });
    ui.horizontal_wrapped(|ui| {
        ui.weak(t(lang, "input.example"));
        for example in [
            "0.1",
            "65520",
            "1e-8",
            "2^-25",
            "0x1.8p-3",
            "fp16:0x3c00",
            "-0",
            "nan",
            "3.4e38",
        ] {
            if ui.small_button(example).clicked() {
                settings.input = example.to_owned();
            }
        }
    });
}

fn field_color(visuals: &egui::Visuals, format: &Format, bit: u32) -> (Color32, &'static str) {
    if bit == format.bits() - 1 {
        (theme::sign(visuals), "field.sign")
    } else if bit >= format.man_bits {
        (theme::exponent(visuals), "field.exponent")
    } else {
        (theme::mantissa(visuals), "field.mantissa")
    }
}

/// The pattern as clickable bits, coloured by field. Returns a new input when a bit is flipped.
fn bits_ui(ui: &mut egui::Ui, format: &Format, bits: u32, lang: Lang) -> Option<String> {
    let mut flipped = None;
    ui.horizontal(|ui| {
        ui.spacing_mut().item_spacing.x = 0.0;
        for bit in (0..format.bits()).rev() {
            let (color, field) = field_color(ui.visuals(), format, bit);
            let value = (bits >> bit) & 1;
            let text = RichText::new(value.to_string())
                .monospace()
                .color(color)
                .strong();
            let tooltip = TEXT.fill(
                lang,
                "table.bit_tooltip",
                &[
                    ("field", &t(lang, field)),
                    ("index", &bit),
                    ("format", &format.name),
                ],
            );
            let response = ui
                .add(egui::Button::new(text).frame(false).small())
                .on_hover_text(tooltip);
            if response.clicked() {
                flipped = Some(format!("{}:0x{:x}", format.name, bits ^ (1 << bit)));
            }
            if bit == format.bits() - 1 || bit == format.man_bits {
                ui.add_space(5.0);
            }
        }
    });
    flipped
}

fn class_color(visuals: &egui::Visuals, class: Class) -> Color32 {
    match class {
        Class::Normal => visuals.text_color(),
        Class::Zero | Class::Subnormal => theme::warn(visuals),
        Class::Infinite | Class::Nan => theme::bad(visuals),
    }
}

fn table_ui(ui: &mut egui::Ui, computed: &Computed, lang: Lang, changes: &mut Changes) {
    if computed.rows.is_empty() {
        return;
    }
    // The format's name stays put; its numbers scroll at 800 px.
    let look = crate::kit::table::Look {
        spacing: egui::vec2(14.0, 6.0),
        striped: true,
    };
    let rows = computed.rows.len() + 1;
    crate::kit::table::pinned(
        ui,
        "float_table",
        rows,
        look,
        |ui, r| match r.checked_sub(1).and_then(|i| computed.formats.get(i)) {
            None => crate::kit::column_header(ui, &TEXT, lang, "table.format"),
            Some(format) => {
                ui.label(RichText::new(&format.name).strong()).on_hover_text(format!(
                    "1-{}-{}, bias {}",
                    format.exp_bits, format.man_bits, format.bias
                ));
            }
        },
        |ui, r| {
            let Some((row, format)) = r
                .checked_sub(1)
                .and_then(|i| computed.rows.get(i).zip(computed.formats.get(i)))
            else {
                for key in [
                    "table.bits",
                    "table.value",
                    "table.class",
                    "table.error",
                    "table.ulp",
                    "table.neighbours",
                ] {
                    crate::kit::column_header(ui, &TEXT, lang, key);
                }
                return;
            };
            ui.vertical(|ui| {
                if let Some(input) = bits_ui(ui, format, row.bits, lang) {
                    changes.input = Some(input);
                }
                ui.weak(RichText::new(&row.hex).monospace().small());
            });
            ui.label(RichText::new(show(row.value)).monospace());
            ui.colored_label(class_color(ui.visuals(), row.class), row.class.name(lang));
            let error = if row.rel_error.is_finite() {
                show_sig(row.rel_error, 3)
            } else {
                "—".to_owned()
            };
            ui.label(RichText::new(error).monospace());
            ui.label(RichText::new(row.ulp.map_or("—".to_owned(), power_of_two)).monospace())
                .on_hover_text(row.ulp.map_or(String::new(), show));
            let side = |v: Option<f64>| v.map_or("—".to_owned(), |v| show_sig(v, 8));
            ui.label(
                RichText::new(format!("{} / {}", side(row.below), side(row.above))).monospace(),
            );
        },
    );
}

/// A power of two as `2^k` (ulps always are).
fn power_of_two(x: f64) -> String {
    let k = x.log2();
    if k.fract() == 0.0 {
        format!("2^{k}")
    } else {
        show(x)
    }
}

fn tie_ui(ui: &mut egui::Ui, computed: &Computed, lang: Lang) {
    crate::kit::anchor(&ui.strong(t(lang, "tie.heading")), "tie");
    let fp16 = Format::fp16();
    // 1 + 2^-11: halfway between 1 (even mantissa) and 1 + 2^-10 (odd).
    let tie = 1.0 + 2f64.powi(-11);
    let low = fp16.encode_f64(tie, Rounding::TowardZero);
    let high = fp16.encode_f64(tie, Rounding::TowardPositive);
    let rne = fp16.round_f64(tie, Rounding::NearestEven);
    let rna = fp16.round_f64(tie, Rounding::NearestAway);
    ui.label(TEXT.fill(
        lang,
        "tie.explain",
        &[
            ("format", &"fp16"),
            ("tie", &show(tie)),
            ("low", &show(fp16.decode(low))),
            ("low_bits", &fp16.binary_string(low)),
            ("high", &show(fp16.decode(high))),
            ("high_bits", &fp16.binary_string(high)),
            ("rne", &show(rne)),
            ("rna", &show(rna)),
        ],
    ));
    // Is the learner's own input a tie in one of the formats?
    if let Ok(parsed) = &computed.parsed {
        let x = parsed.exact;
        for format in &computed.formats {
            let rne = format.encode(&x, Rounding::NearestEven);
            let rna = format.encode(&x, Rounding::NearestAway);
            if rne != rna {
                ui.colored_label(
                    theme::good(ui.visuals()),
                    TEXT.fill(
                        lang,
                        "tie.yours",
                        &[
                            ("format", &format.name),
                            ("rne", &show(format.decode(rne))),
                            ("rna", &show(format.decode(rna))),
                        ],
                    ),
                );
            }
        }
    }
}

fn range_ui(ui: &mut egui::Ui, computed: &Computed, lang: Lang, changes: &mut Changes) {
    crate::kit::anchor(&ui.strong(t(lang, "range.heading")), "range");
    let mut focus_name = computed.settings.focus.clone();
    ui.horizontal(|ui| {
        let names = computed.formats.iter().map(|f| f.name.clone());
        crate::kit::choice(ui, "float_focus", t(lang, "range.focus"), &mut focus_name, names, String::clone);
    });
    if focus_name != computed.settings.focus {
        changes.focus = Some(focus_name.clone());
    }
    let focus = computed
        .formats
        .iter()
        .find(|f| f.name == focus_name)
        .cloned()
        .unwrap_or_else(Format::fp16);

    // The number line around the input.
    if let Ok(parsed) = &computed.parsed {
        let x = parsed.exact.to_f64();
        let center = focus.encode(&parsed.exact, Rounding::NearestEven);
        if x.is_finite() && !matches!(focus.classify(center), Class::Nan | Class::Infinite) {
            let mut neighbours = vec![focus.decode(center)];
            let (mut down, mut up) = (center, center);
            for _ in 0..6 {
                if let Some(b) = focus
                    .next_down(down)
                    .filter(|b| focus.classify(*b) != Class::Infinite)
                {
                    down = b;
                    neighbours.push(focus.decode(b));
                }
                if let Some(b) = focus
                    .next_up(up)
                    .filter(|b| focus.classify(*b) != Class::Infinite)
                {
                    up = b;
                    neighbours.push(focus.decode(b));
                }
            }
            let ulp = focus.ulp(center).unwrap_or(f64::NAN);
            ui.label(TEXT.fill(
                lang,
                "range.line",
                &[("format", &focus.name), ("ulp", &show(ulp))],
            ));
            let visuals = ui.visuals().clone();
            Plot::new("float_number_line")
                .height(70.0)
                .show_axes([true, false])
                .show_grid([false, false])
                .allow_zoom(false)
                .allow_drag(false)
                .allow_scroll(false)
                .include_y(-1.0)
                .include_y(1.0)
                .show(ui, |plot| {
                    for v in &neighbours {
                        plot.vline(
                            VLine::new(show(*v), *v)
                                .color(theme::exponent(&visuals))
                                .width(1.5),
                        );
                    }
                    plot.points(
                        Points::new(t(lang, "plot.input"), PlotPoints::from(vec![[x, 0.0]]))
                            .radius(5.0)
                            .color(theme::bad(&visuals)),
                    );
                });
        }
    }

    // Spacing across the whole range, with the focus format's zones shaded.
    ui.label(TEXT.fill(lang, "range.spacing", &[("format", &focus.name)]));
    super::spacing::plot(ui, computed, &focus, lang);

    ui.add_space(6.0);
    ui.strong(t(lang, "range.table"));
    theme::sideways(ui, "float_range_scroll", |ui| {
        egui::Grid::new("float_range_table")
            .striped(true)
            .spacing([14.0, 4.0])
            .show(ui, |ui| {
                for key in [
                    "table.format",
                    "range.layout",
                    "range.max",
                    "range.min_normal",
                    "range.min_sub",
                    "range.eps",
                    "range.digits",
                ] {
                    crate::kit::column_header(ui, &TEXT, lang, key);
                }
                ui.end_row();
                for format in &computed.formats {
                    let r = format.range();
                    ui.label(&format.name);
                    ui.monospace(format!("1-{}-{}", format.exp_bits, format.man_bits));
                    for v in [r.max_finite, r.min_normal, r.min_subnormal, r.epsilon] {
                        ui.monospace(show_sig(v, 6));
                    }
                    ui.monospace(show_sig(r.decimal_digits, 3));
                    ui.end_row();
                }
            });
    });
}

fn demo_frame(ui: &mut egui::Ui, title: &str, add: impl FnOnce(&mut egui::Ui)) {
    egui::CollapsingHeader::new(RichText::new(title).strong())
        .default_open(true)
        .show(ui, add);
}

fn demos_ui(ui: &mut egui::Ui, computed: &Computed, lang: Lang, changes: &mut Changes) {
    crate::kit::anchor(&ui.heading(t(lang, "demo.heading")), "demo");
    let fp16 = Format::fp16();

    let o = float::overflow_demo(&fp16);
    demo_frame(ui, t(lang, "demo.overflow.title"), |ui| {
        ui.label(TEXT.fill(
            lang,
            "demo.overflow",
            &[
                ("max", &show(o.max_finite)),
                ("max_to", &show(o.max_finite_rounds_to)),
                ("first", &show(o.first_overflowing)),
                ("first_to", &show(o.first_overflowing_rounds_to)),
                ("below", &show(o.just_below)),
                ("below_to", &show(o.just_below_rounds_to)),
            ],
        ));
    });

    let u = float::underflow_demo(&fp16);
    demo_frame(ui, t(lang, "demo.underflow.title"), |ui| {
        ui.label(TEXT.fill(
            lang,
            "demo.underflow",
            &[
                ("min_normal", &show(u.min_normal)),
                ("min_sub", &show(u.min_subnormal)),
                ("threshold", &show(u.zero_threshold)),
                ("threshold_to", &show(u.threshold_rounds_to)),
                ("above_to", &show(u.just_above_rounds_to)),
            ],
        ));
        for (x, stored, err) in &u.ladder {
            ui.monospace(TEXT.fill(
                lang,
                "demo.underflow.row",
                &[
                    ("x", &show_sig(*x, 4)),
                    ("stored", &show(*stored)),
                    ("err", &show_sig(*err, 2)),
                ],
            ));
        }
    });

    let s = float::loss_scaling_demo(&fp16, 1e-8, 65536.0);
    let bf16_stored = Format::bf16().round_f64(1e-8, Rounding::NearestEven);
    demo_frame(ui, t(lang, "demo.scaling.title"), |ui| {
        ui.label(TEXT.fill(
            lang,
            "demo.scaling",
            &[
                ("g", &show(s.gradient)),
                ("unscaled", &show(s.stored_unscaled)),
                ("scale", &"2^16"),
                ("scaled", &show(s.stored_scaled)),
                ("recovered", &show_sig(s.recovered, 6)),
                ("err", &show_sig(s.recovered_rel_error, 2)),
                ("bf16", &show_sig(bf16_stored, 6)),
            ],
        ));
    });

    let count = ACCUMULATION_COUNT;
    demo_frame(
        ui,
        &TEXT.fill(lang, "demo.accumulation.title", &[("count", &count)]),
        |ui| {
            let find = |name: &str| computed.accumulation.iter().find(|a| a.format == name);
            if let (Some(bf16), Some(half), Some(fp32)) = (find("bf16"), find("fp16"), find("fp32"))
            {
                ui.label(TEXT.fill(
                    lang,
                    "demo.accumulation",
                    &[
                        ("exact", &show_sig(bf16.exact_sum, 7)),
                        ("bf16", &show(bf16.final_sum)),
                        ("fp16", &show(half.final_sum)),
                        ("fp32", &show_sig(fp32.final_sum, 9)),
                    ],
                ));
                for demo in &computed.accumulation {
                    if let Some(step) = demo.stalled_at_step {
                        ui.weak(TEXT.fill(
                            lang,
                            "demo.accumulation.stalled",
                            &[("format", &demo.format), ("step", &step)],
                        ));
                    }
                }
            }
            ui.horizontal(|ui| {
                let mut seed = computed.settings.accumulation_seed;
                let label = ui.label(t(lang, "demo.accumulation.seed"));
                if ui
                    .add(egui::DragValue::new(&mut seed))
                    .labelled_by(label.id)
                    .changed()
                {
                    changes.accumulation_seed = Some(seed);
                }
            });
            let visuals = ui.visuals().clone();
            crate::kit::figure::plot("float_accumulation", 200.0, t(lang, "plot.step"), t(lang, "plot.running_sum"))
                .readable_x()
                .show(ui, |plot| {
                    for (i, demo) in computed.accumulation.iter().enumerate() {
                        let points: Vec<[f64; 2]> =
                            demo.trace.iter().map(|(s, v)| [*s as f64, *v]).collect();
                        plot.line(
                            Line::new(demo.format.clone(), PlotPoints::from(points))
                                .color(format_color(&visuals, computed, &demo.format, i)),
                        );
                    }
                });
            let keys: Vec<crate::kit::figure::Key> = computed
                .accumulation
                .iter()
                .enumerate()
                .map(|(i, demo)| {
                    crate::kit::figure::Key::line(
                        &demo.format,
                        format_color(&visuals, computed, &demo.format, i),
                    )
                })
                .collect();
            crate::kit::figure::legend(ui, "float_accumulation", &keys);
        },
    );

    demo_frame(ui, t(lang, "demo.tf32.title"), |ui| {
        let input = computed
            .parsed
            .as_ref()
            .map(|p| f32::from_bits(Format::fp32().encode(&p.exact, Rounding::NearestEven)))
            .unwrap_or(0.1);
        let tf = float::tf32_conventions(input);
        ui.label(TEXT.fill(
            lang,
            "demo.tf32",
            &[
                ("input", &show(f64::from(input))),
                ("bits", &format!("0x{:08x}", tf.input_bits)),
            ],
        ));
        for r in &tf.results {
            let convention = TEXT
                .get(lang, &format!("tf32.convention.{:?}", r.rounding))
                .to_owned();
            ui.monospace(TEXT.fill(
                lang,
                "demo.tf32.row",
                &[
                    ("convention", &convention),
                    ("value", &show(r.value)),
                    ("f32bits", &format!("0x{:08x}", r.f32_bits)),
                    ("err", &show_sig(r.abs_error, 3)),
                ],
            ));
            if r.rounding == Rounding::TowardZero {
                ui.weak(t(lang, "tf32.truncate_note"));
            }
        }
    });

    let e = float::epsilon_demo(&fp16);
    demo_frame(ui, t(lang, "demo.eps.title"), |ui| {
        ui.label(TEXT.fill(
            lang,
            "demo.eps",
            &[
                ("eps", &show(e.epsilon)),
                ("half", &show(e.epsilon / 2.0)),
                ("half_to", &show(e.one_plus_half_eps)),
                // All its digits: eight would print eps/2 again.
                ("hair", &show(e.smallest_visible_addend)),
                ("hair_to", &show(e.one_plus_smallest_visible)),
            ],
        ));
    });
}

/// A format's colour, the same in every plot of the lesson: its place in the
/// table's list of formats (as the spacing plot draws it); a format not in
/// the list takes a colour after theirs.
pub(super) fn format_color(
    visuals: &egui::Visuals,
    computed: &Computed,
    name: &str,
    fallback: usize,
) -> egui::Color32 {
    let index = computed
        .formats
        .iter()
        .position(|f| f.name == name)
        .unwrap_or(computed.formats.len() + fallback);
    theme::series(visuals, index)
}
