//! `dlsys-lab quiz`: the mock test's draw, the same as the app's for a
//! seed, as text and JSON.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::support::{dlsys_lab, fails_with_one_line, has_cjk, json};

#[test]
fn quiz_draws_what_the_app_draws_and_prints_the_answers_last() {
    let json = json(&["quiz", "--n", "6", "--seed", "42", "--json"]);
    let ids: Vec<(String, String)> = json["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            (
                q["lesson"].as_str().unwrap().to_owned(),
                q["exercise"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let app: Vec<(String, String)> =
        dlsys_core::exercise::quiz::draw(&dlsys_lessons::listed(), 6, 42)
            .into_iter()
            .map(|q| (q.lesson, q.exercise))
            .collect();
    assert_eq!(ids, app);
    for q in json["questions"].as_array().unwrap() {
        assert!(
            !q["prompt"].as_str().unwrap().is_empty() && !q["answer"].as_str().unwrap().is_empty()
        );
    }
    let text = dlsys_lab(&["quiz", "--n", "3", "--seed", "42"]);
    let text = String::from_utf8_lossy(&text.stdout);
    let answers = text.find("\nAnswers\n").expect("an Answers section");
    assert!(
        text[..answers].contains("\n1. ") && text[answers..].contains("\n3. "),
        "{text}"
    );
    let zh = dlsys_lab(&["--lang", "zh", "quiz", "--n", "2"]);
    assert!(has_cjk(&String::from_utf8_lossy(&zh.stdout)));
    fails_with_one_line(&[
        &["quiz", "--n", "0"],
        &["quiz", "--n", "51"],
        &["quiz", "--seed", "x"],
        &["quiz", "--seed", "0"],
        &["quiz", "--seed", "1000000"],
    ]);
}
