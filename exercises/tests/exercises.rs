//! `cargo test -p dlsys-exercises`: checks your solutions in `learn/`.
//!
//! Under `cargo test --workspace` (feature `reference`) the same checks run
//! against the reference solutions instead, so CI proves the checkers accept
//! a right answer while your stubs still compile.

#[cfg(not(feature = "reference"))]
#[path = "../learn/mod.rs"]
mod learn;

#[cfg(feature = "reference")]
use dlsys_exercises::reference as learn;

use dlsys_exercises::check;

/// Fails the test with the checker's message, the file and the hint.
fn verdict(id: &str, result: Result<(), String>) {
    if let Err(message) = result {
        // `hint:` marks the hint for `dlsys-lab exercises`, in any language.
        let lang = dlsys_exercises::words::lang();
        let (file, hint) =
            dlsys_exercises::info(id).map_or(("?", String::new()), |i| (i.file, i.hint(lang)));
        panic!("\n{id} ({file}):\n  {message}\n  hint: {hint}\n");
    }
}

#[test]
fn fp16_from_bits() {
    verdict(
        "fp16_from_bits",
        check::fp16_from_bits(learn::fp16_from_bits),
    );
}

#[test]
fn round_to_bf16_rne() {
    verdict(
        "round_to_bf16_rne",
        check::round_to_bf16_rne(learn::round_to_bf16_rne),
    );
}

#[test]
fn linear_backward() {
    verdict(
        "linear_backward",
        check::linear_backward(learn::linear_backward),
    );
}

#[test]
fn softmax_backward() {
    verdict(
        "softmax_backward",
        check::softmax_backward(learn::softmax_backward),
    );
}

#[test]
fn softmax_cross_entropy_backward() {
    verdict(
        "softmax_cross_entropy_backward",
        check::softmax_cross_entropy_backward(learn::softmax_cross_entropy_backward),
    );
}

#[test]
fn sgd_momentum_step() {
    verdict(
        "sgd_momentum_step",
        check::sgd_momentum_step(learn::sgd_momentum_step),
    );
}

#[test]
fn adam_step() {
    verdict("adam_step", check::adam_step(learn::adam_step));
}

#[test]
fn online_softmax() {
    verdict(
        "online_softmax",
        check::online_softmax(learn::online_softmax),
    );
}

#[test]
fn dataloader_batches() {
    verdict(
        "dataloader_batches",
        check::dataloader_batches(learn::dataloader_batches),
    );
}

#[test]
fn plan_arena() {
    verdict("plan_arena", check::plan_arena(learn::plan_arena));
}

#[test]
fn liveness() {
    verdict("liveness", check::liveness(learn::liveness));
}

#[test]
fn quantise_per_channel() {
    verdict(
        "quantise_per_channel",
        check::quantise_per_channel(learn::quantise_per_channel),
    );
}
