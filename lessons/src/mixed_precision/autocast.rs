//! What PyTorch's autocast keeps in fp32, op group by op group, with the
//! emulator's numbers for why; and the exercise that asks it.

use dlsys_core::exercise::{AnswerChecker, AnswerKind, Mistake, Task};
use dlsys_core::float::{Format, show_sig};
use dlsys_core::mixed::autocast::{self, AutocastOp, CastTo, OPS, Why};
use dlsys_core::text::Lang;
use rand::RngExt as _;

use super::TEXT;
use crate::kit::exercise_kit::pick;

/// One group's reason, with its numbers filled in.
fn why_text(why: Why, lang: Lang) -> String {
    let fp16 = Format::fp16();
    TEXT.fill(
        lang,
        &format!("autocast.why.{}", why.key()),
        &[
            ("exp_max", &show_sig(autocast::exp_overflows_above(&fp16), 4)),
            ("max", &show_sig(fp16.range().max_finite, 5)),
            ("stall", &autocast::ones_sum_stalls_at(&fp16)),
        ],
    )
}

/// An op as code: `baddbmm()`.
fn call(op: &AutocastOp) -> String {
    format!("{}()", op.name)
}

fn cast_name(cast: CastTo) -> &'static str {
    match cast {
        CastTo::Lower => "fp16",
        CastTo::Fp32 => "fp32",
    }
}

/// The section: each group's ops, the precision they run in, and why.
pub fn autocast_ui(ui: &mut egui::Ui, lang: Lang) {
    ui.label(TEXT.get(lang, "autocast.intro"));
    ui.add_space(4.0);
    for why in Why::ALL {
        let ops: Vec<String> = autocast::ops_of(why).map(call).collect();
        ui.horizontal_wrapped(|ui| {
            ui.strong(cast_name(why.cast()));
            ui.monospace(ops.join(", "));
            ui.label(why_text(why, lang));
        });
    }
}

/// "Under autocast, which of these runs in fp32?" (or, by the seed, in fp16):
/// one op of the asked precision among three of the other, shuffled.
pub fn which_op_runs_in_fp32(seed: u64, lang: Lang) -> Task {
    let mut rng = crate::kit::exercise_kit::rng(seed, 0x00a7_0ca5);
    let ask = if rng.random_bool(0.7) { CastTo::Fp32 } else { CastTo::Lower };
    let (right, others): (Vec<&AutocastOp>, Vec<&AutocastOp>) = OPS.iter().partition(|o| o.cast() == ask);
    let answer = *pick(&mut rng, &right);
    // Three distractors, from different groups where there are enough.
    let mut pool = others;
    for i in (1..pool.len()).rev() {
        pool.swap(i, rng.random_range(0..=i));
    }
    let mut options = vec![answer];
    for distinct in [true, false] {
        for op in &pool {
            let fresh = options.iter().all(|o| o.name != op.name);
            let new_group = options.iter().all(|o| o.why != op.why);
            if options.len() < 4 && fresh && (new_group || !distinct) {
                options.push(**op);
            }
        }
    }
    for i in (1..options.len()).rev() {
        options.swap(i, rng.random_range(0..=i));
    }
    let correct = options.iter().position(|o| o.name == answer.name).unwrap_or(0);
    let mistakes = options
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != correct)
        .map(|(i, op)| Mistake {
            answer: (i + 1).to_string(),
            feedback: TEXT.fill(
                lang,
                "ex.autocast_op.wrong",
                &[("op", &call(op)), ("format", &cast_name(op.cast())), ("why", &why_text(op.why, lang))],
            ),
        })
        .collect();
    Task {
        prompt: TEXT.fill(lang, "ex.autocast_op.prompt", &[("format", &cast_name(ask))]),
        kind: AnswerKind::Choice { options: options.iter().map(call).collect() },
        checker: AnswerChecker::Choice { correct },
        hints: vec![TEXT.get(lang, "ex.autocast_op.hint1").to_owned(), TEXT.get(lang, "ex.autocast_op.hint2").to_owned()],
        explanation: TEXT.fill(
            lang,
            "ex.autocast_op.explain",
            &[("op", &call(&answer)), ("format", &cast_name(ask)), ("why", &why_text(answer.why, lang))],
        ),
        reference: (correct + 1).to_string(),
        mistakes,
    }
}
