//! `dlsys-lab train --model cnn|transformer`: the transformer's loss falls
//! from about ln V, as JSON lines; flags that do not apply to a model are
//! refused by name, in one line.

#![allow(clippy::unwrap_used)]

use crate::support::{fails_with_one_line, json_lines};

#[test]
fn the_transformer_trains_from_about_ln_v_and_says_how_far() {
    let lines = json_lines(&["train", "--model", "transformer", "--steps", "50", "--json"]);
    // Step 0, step 50, then the final line.
    assert_eq!(lines.len(), 3, "{lines:?}");
    let first = lines[0]["train_loss"].as_f64().unwrap();
    let last = lines[1]["train_loss"].as_f64().unwrap();
    let ln_v = 44f64.ln();
    assert!((first - ln_v).abs() < 0.3, "{first} vs {ln_v}");
    assert!(last < 0.8 * first, "{first} → {last}");
    assert!(
        lines[2]["continuation"]
            .as_str()
            .is_some_and(|c| !c.is_empty())
    );
}

#[test]
fn flags_that_do_not_apply_to_a_model_are_refused() {
    fails_with_one_line(&[
        &["train", "--model", "cnn", "--hidden", "3"],
        &["train", "--model", "cnn", "--dataset", "digits"],
        &["train", "--model", "cnn", "--steps", "5"],
        &["train", "--model", "transformer", "--epochs", "2"],
        &["train", "--model", "transformer", "--lr", "-1"],
        &["train", "--model", "transformer", "--batch", "0"],
        &["train", "--steps", "3"],
        &["train", "--model", "rnn"],
    ]);
}
