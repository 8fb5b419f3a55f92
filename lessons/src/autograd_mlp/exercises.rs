//! The autograd lesson's exercises; every expected answer is computed by
//! `dlsys_core::autograd` / `nn` (or from the formula the prompt names).

use dlsys_core::autograd::{Band, Graph, Tensor, softmax_rows};
use dlsys_core::exercise::{AnswerChecker, AnswerKind, Mistake, Task};
use dlsys_core::float::show_sig;
use dlsys_core::nn::{Optimizer, OptimizerKind};
use dlsys_core::text::Lang;
use rand::RngExt as _;

use super::TEXT;

/// A value with at most 2 decimals, so prompts are short and exact.
fn small(rng: &mut rand::rngs::StdRng, lo: f64, hi: f64) -> f64 {
    (rng.random_range(lo..hi) * 100.0).round() / 100.0
}

fn list(values: &[f64], digits: usize) -> String {
    let items: Vec<String> = values.iter().map(|v| format!("{v:.digits$}")).collect();
    format!("[{}]", items.join(", "))
}

/// Accepts answers within half a unit of the last shown decimal.
fn decimals(expected: f64, places: i32) -> AnswerChecker {
    AnswerChecker::Number {
        expected,
        abs_tol: 0.5 * 10f64.powi(-places) + 1e-12,
        rel_tol: 0.0,
    }
}

crate::exercises! {
    catalog: TEXT,
    salt: 0xa17d_6ad0,
    bias_gradient => bias_gradient,
    gradient_shapes => gradient_shapes,
    softmax_ce_gradient => softmax_ce_gradient,
    softmax_backward => softmax_backward,
    momentum_step => momentum_step,
    initial_loss => initial_loss,
    gradcheck_band => gradcheck_band,
    adam_first_step => adam_first_step,
}

fn bias_gradient(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let batch = rng.random_range(3..=4);
    let cols = 2;
    let dy: Vec<f64> = (0..batch * cols)
        .map(|_| small(&mut rng, -2.0, 2.0))
        .collect();
    let col = rng.random_range(0..cols);
    // The engine's own backward for a broadcast bias.
    let mut g = Graph::<f64>::new();
    let x = g.input(Tensor::zeros(&[batch, cols]));
    let b = g.param(Tensor::zeros(&[cols]));
    let y = g.add(x, b);
    let w = g.input(Tensor::new(dy.clone(), &[batch, cols]));
    let weighted = g.mul(y, w);
    let loss = g.sum(weighted);
    g.backward(loss);
    let db = g.grad(b).map(|t| t.data.clone()).unwrap_or_default();
    let answer = db[col];
    let rows: Vec<String> = dy.chunks(cols).map(|r| list(r, 2)).collect();
    let dy_text = format!("[{}]", rows.join(", "));
    let mut mistakes = vec![Mistake {
        answer: format!("{:.2}", dy[col]),
        feedback: t(lang, "ex.bias_gradient.one_row"),
    }];
    let mean = answer / batch as f64;
    if (mean - answer).abs() > 0.011 && (mean - dy[col]).abs() > 0.011 {
        mistakes.push(Mistake {
            answer: format!("{mean:.4}"),
            feedback: t(lang, "ex.bias_gradient.mean"),
        });
    }
    Task {
        prompt: TEXT.fill(lang, "ex.bias_gradient.prompt", &[("dy", &dy_text), ("col", &col)]),
        kind: AnswerKind::Number,
        checker: decimals(answer, 2),
        hints: vec![
            t(lang, "ex.bias_gradient.hint1"),
            TEXT.fill(lang, "ex.bias_gradient.hint2", &[("col", &col)]),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.bias_gradient.explain",
            &[
                ("db", &list(&db, 2)),
                ("col", &col),
                ("sum", &format!("{answer:.2}")),
            ],
        ),
        reference: format!("{answer:.2}"),
        mistakes: mistakes
            .into_iter()
            .filter(|m| (m.answer.parse::<f64>().unwrap_or(f64::NAN) - answer).abs() > 0.011)
            .collect(),
    }
}

fn gradient_shapes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let batch = [32, 64, 128][rng.random_range(0..3)];
    let (inp, out) = [(784, 128), (512, 256), (128, 10)][rng.random_range(0..3)];
    let which = ["W", "b", "X"][rng.random_range(0..3)];
    let shape_of = |s: &[usize]| {
        format!(
            "[{}]",
            s.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    // Shapes read off the engine's gradients for a tiny stand-in with the same pattern.
    let (shape, formula) = match which {
        "W" => (shape_of(&[inp, out]), "Xᵀ·dY"),
        "b" => (shape_of(&[out]), "Σ_batch dY"),
        _ => (shape_of(&[batch, inp]), "dY·Wᵀ"),
    };
    // Distractors: dY's shape (the per-example mistake) and the transpose.
    let dy_shape = shape_of(&[batch, out]);
    let transposed = match which {
        "W" => shape_of(&[out, inp]),
        "b" => shape_of(&[out, 1]),
        _ => shape_of(&[inp, batch]),
    };
    let mut options = vec![shape.clone()];
    for candidate in [
        dy_shape.clone(),
        transposed.clone(),
        shape_of(&[batch]),
        shape_of(&[inp]),
    ] {
        if !options.contains(&candidate) && options.len() < 4 {
            options.push(candidate);
        }
    }
    for i in (1..options.len()).rev() {
        options.swap(i, rng.random_range(0..=i));
    }
    let index_of = |text: &str| options.iter().position(|o| o == text);
    let correct = index_of(&shape).unwrap_or(0);
    let mut mistakes = Vec::new();
    if let Some(i) = index_of(&dy_shape).filter(|i| *i != correct) {
        // X is per-example too: its slip is a different one from W's and b's.
        let feedback = if which == "X" {
            TEXT.fill(
                lang,
                "ex.gradient_shapes.dy_x",
                &[("dy", &dy_shape), ("shape", &shape)],
            )
        } else {
            TEXT.fill(lang, "ex.gradient_shapes.dy", &[("which", &which)])
        };
        mistakes.push(Mistake {
            answer: (i + 1).to_string(),
            feedback,
        });
    }
    if let Some(i) = index_of(&transposed).filter(|i| *i != correct) {
        mistakes.push(Mistake {
            answer: (i + 1).to_string(),
            feedback: t(lang, "ex.gradient_shapes.transposed"),
        });
    }
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.gradient_shapes.prompt",
            &[
                ("batch", &batch),
                ("inp", &inp),
                ("out", &out),
                ("which", &which),
            ],
        ),
        kind: AnswerKind::Choice { options },
        checker: AnswerChecker::Choice { correct },
        hints: vec![t(lang, "ex.gradient_shapes.hint1"), t(lang, "ex.gradient_shapes.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.gradient_shapes.explain",
            &[("which", &which), ("shape", &shape), ("formula", &formula)],
        ),
        reference: (correct + 1).to_string(),
        mistakes,
    }
}

fn softmax_ce_gradient(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let z: Vec<f64> = (0..3).map(|_| small(&mut rng, -2.0, 2.0)).collect();
    let label = rng.random_range(0..3);
    let k = rng.random_range(0..3);
    let mut g = Graph::<f64>::new();
    let zv = g.param(Tensor::new(z.clone(), &[1, 3]));
    let loss = g.softmax_cross_entropy(zv, &[label]);
    g.backward(loss);
    let grad = g.grad(zv).map(|t| t.data.clone()).unwrap_or_default();
    let p = softmax_rows(&Tensor::new(z.clone(), &[1, 3])).data;
    let answer = grad[k];
    let mut mistakes = Vec::new();
    if (p[k] - answer).abs() > 0.002 {
        mistakes.push(Mistake {
            answer: format!("{:.3}", p[k]),
            feedback: TEXT.fill(lang, "ex.softmax_ce_gradient.p_only", &[("k", &k)]),
        });
    }
    if answer.abs() > 0.002 {
        mistakes.push(Mistake {
            answer: format!("{:.3}", -answer),
            feedback: t(lang, "ex.softmax_ce_gradient.sign"),
        });
    }
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.softmax_ce_gradient.prompt",
            &[("z", &list(&z, 2)), ("label", &label), ("k", &k)],
        ),
        kind: AnswerKind::Number,
        checker: decimals(answer, 3),
        hints: vec![t(lang, "ex.softmax_ce_gradient.hint1"), t(lang, "ex.softmax_ce_gradient.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.softmax_ce_gradient.explain",
            &[
                ("p", &list(&p, 3)),
                ("k", &k),
                ("answer", &format!("{answer:.3}")),
            ],
        ),
        reference: format!("{answer:.3}"),
        mistakes,
    }
}

fn softmax_backward(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let z: Vec<f64> = (0..3).map(|_| small(&mut rng, -1.5, 1.5)).collect();
    let gvals: Vec<f64> = (0..3).map(|_| small(&mut rng, -1.0, 1.0)).collect();
    let k = rng.random_range(0..3);
    let mut g = Graph::<f64>::new();
    let zv = g.param(Tensor::new(z.clone(), &[1, 3]));
    let p = g.softmax(zv);
    let w = g.input(Tensor::new(gvals.clone(), &[1, 3]));
    let weighted = g.mul(p, w);
    let loss = g.sum(weighted);
    g.backward(loss);
    let grad = g.grad(zv).map(|t| t.data.clone()).unwrap_or_default();
    let pv = g.value(p).data.clone();
    let dot: f64 = pv.iter().zip(&gvals).map(|(a, b)| a * b).sum();
    let answer = grad[k];
    let mut mistakes = Vec::new();
    let naive = pv[k] * gvals[k];
    if (naive - answer).abs() > 0.0002 {
        mistakes.push(Mistake {
            answer: format!("{naive:.4}"),
            feedback: t(lang, "ex.softmax_backward.no_coupling"),
        });
    }
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.softmax_backward.prompt",
            &[("p", &list(&pv, 4)), ("g", &list(&gvals, 2)), ("k", &k)],
        ),
        kind: AnswerKind::Number,
        checker: decimals(answer, 4),
        hints: vec![t(lang, "ex.softmax_backward.hint1"), t(lang, "ex.softmax_backward.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.softmax_backward.explain",
            &[
                ("dot", &format!("{dot:.4}")),
                ("k", &k),
                ("answer", &format!("{answer:.4}")),
            ],
        ),
        reference: format!("{answer:.4}"),
        mistakes,
    }
}

fn momentum_step(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let theta = small(&mut rng, -1.0, 1.0);
    let v = small(&mut rng, -0.5, 0.5);
    let g = small(&mut rng, -2.0, 2.0);
    let mu = [0.9, 0.8, 0.5][rng.random_range(0..3)];
    let lr = [0.1, 0.05, 0.01][rng.random_range(0..3)];
    // The optimizer itself, fed the same velocity by a first step with a made-up gradient.
    let mut opt = Optimizer::<f64>::new(
        OptimizerKind::Momentum {
            mu,
            nesterov: false,
        },
        lr,
        0.0,
    );
    let mut p = Tensor::new(vec![theta - v], &[1]);
    // First step with gradient −v/lr leaves velocity v and θ = theta.
    opt.step(&mut [&mut p], &[Tensor::new(vec![-v / lr], &[1])]);
    opt.step(&mut [&mut p], &[Tensor::new(vec![g], &[1])]);
    let answer = p.data[0];
    let v_new = mu * v - lr * g;
    // PyTorch's velocity (v ← μv + g; θ ← θ − ηv) for the same steps.
    let v_torch = -v_new / lr;
    let plain = theta - lr * g;
    let flipped = theta + mu * v + lr * g;
    let mut mistakes = Vec::new();
    for (value, key) in [(plain, "ex.momentum_step.plain"), (flipped, "ex.momentum_step.sign")] {
        if (value - answer).abs() > 1e-4 {
            mistakes.push(Mistake {
                answer: format!("{value:.4}"),
                feedback: t(lang, key),
            });
        }
    }
    let f = |x: f64| show_sig(x, 6);
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.momentum_step.prompt",
            &[
                ("theta", &f(theta)),
                ("v", &f(v)),
                ("g", &f(g)),
                ("mu", &mu),
                ("lr", &lr),
            ],
        ),
        kind: AnswerKind::Number,
        checker: AnswerChecker::Number {
            expected: answer,
            abs_tol: 5e-5,
            rel_tol: 0.0,
        },
        hints: vec![
            t(lang, "ex.momentum_step.hint1"),
            TEXT.fill(
                lang,
                "ex.momentum_step.hint2",
                &[
                    ("mu", &mu),
                    ("v", &f(v)),
                    ("lr", &lr),
                    ("g", &f(g)),
                    ("v_new", &f(v_new)),
                ],
            ),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.momentum_step.explain",
            &[
                ("v_new", &f(v_new)),
                ("theta", &f(theta)),
                ("answer", &f(answer)),
                ("v_torch", &f(v_torch)),
            ],
        ),
        reference: format!("{answer:.4}"),
        mistakes,
    }
}

fn initial_loss(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    const CLASSES: [usize; 16] = [2, 3, 4, 5, 6, 7, 8, 10, 12, 20, 26, 32, 47, 100, 200, 1000];
    let k = CLASSES[rng.random_range(0..CLASSES.len())];
    // Uniform logits through the engine's own loss.
    let mut g = Graph::<f64>::new();
    let z = g.param(Tensor::zeros(&[1, k]));
    let loss = g.softmax_cross_entropy(z, &[0]);
    let answer = g.value(loss).item();
    let mut mistakes = vec![Mistake {
        answer: format!("{:.4}", 1.0 / k as f64),
        feedback: t(lang, "ex.initial_loss.inverse"),
    }];
    mistakes.push(Mistake {
        answer: format!("{:.2}", (k as f64).log10()),
        feedback: t(lang, "ex.initial_loss.log10"),
    });
    Task {
        prompt: TEXT.fill(lang, "ex.initial_loss.prompt", &[("k", &k)]),
        kind: AnswerKind::Number,
        checker: decimals(answer, 2),
        hints: vec![
            t(lang, "ex.initial_loss.hint1"),
            TEXT.fill(lang, "ex.initial_loss.hint2", &[("k", &k)]),
        ],
        explanation: TEXT.fill(
            lang,
            "ex.initial_loss.explain",
            &[("k", &k), ("answer", &format!("{answer:.3}"))],
        ),
        reference: format!("{answer:.2}"),
        mistakes,
    }
}

fn gradcheck_band(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let exp: i32 = rng.random_range(-11..=-1);
    let err = rng.random_range(1.0..9.9) * 10f64.powi(exp);
    let err_text = format!("{err:.1e}");
    let err: f64 = err_text.parse().unwrap_or(err);
    let band = Band::of(err);
    let keys = [
        "ex.gradcheck_band.good",
        "ex.gradcheck_band.kinks",
        "ex.gradcheck_band.suspicious",
        "ex.gradcheck_band.wrong",
    ];
    let options: Vec<String> = keys.iter().map(|k| t(lang, k)).collect();
    // The prompt's op has no kinks and the check runs in f64, so neither
    // excuse of the 1e-7…1e-4 band applies: there it is suspicious, and
    // option 2 ("kinks or low precision") is never the answer.
    let correct = match band {
        Band::Good => 0,
        Band::Acceptable | Band::Suspicious => 2,
        Band::Wrong => 3,
    };
    let no_excuse = band == Band::Acceptable;
    let mistakes = (0..4)
        .filter(|i| *i != correct)
        .map(|i| Mistake {
            answer: (i + 1).to_string(),
            feedback: if no_excuse && i == 1 {
                TEXT.fill(lang, "ex.gradcheck_band.no_excuse", &[("err", &err_text)])
            } else {
                TEXT.fill(lang, "ex.gradcheck_band.other", &[("err", &err_text)])
            },
        })
        .collect();
    let explain_key = if no_excuse {
        "ex.gradcheck_band.explain_no_kinks"
    } else {
        "ex.gradcheck_band.explain"
    };
    Task {
        prompt: TEXT.fill(lang, "ex.gradcheck_band.prompt", &[("err", &err_text)]),
        kind: AnswerKind::Choice {
            options: options.clone(),
        },
        checker: AnswerChecker::Choice { correct },
        hints: vec![
            t(lang, "ex.gradcheck_band.hint1"),
            TEXT.fill(lang, "ex.gradcheck_band.hint2", &[("err", &err_text), ("exp", &exp)]),
        ],
        explanation: TEXT.fill(
            lang,
            explain_key,
            &[("err", &err_text), ("band", &options[correct])],
        ),
        reference: (correct + 1).to_string(),
        mistakes,
    }
}

fn adam_first_step(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let g = [0.003, -0.2, 5.0, -40.0, 0.0007][rng.random_range(0..5)];
    let lr = [0.001, 0.01, 0.0003][rng.random_range(0..3)];
    let kind = OptimizerKind::adam();
    let OptimizerKind::Adam { beta1, beta2, eps } = kind else {
        unreachable!("OptimizerKind::adam() is Adam")
    };
    let mut opt = Optimizer::<f64>::new(kind, lr, 0.0);
    let mut p = Tensor::new(vec![0.0], &[1]);
    opt.step(&mut [&mut p], &[Tensor::new(vec![g], &[1])]);
    let answer = p.data[0].abs();
    let rel_tol = 1e-3;
    // Kept only when the checker could not take it for the answer.
    let distinct = |value: f64| (value - answer).abs() > rel_tol * answer.max(value);
    let sgd = (lr * g).abs();
    let mut mistakes = Vec::new();
    if distinct(sgd) {
        mistakes.push(Mistake {
            answer: format!("{sgd:e}"),
            feedback: t(lang, "ex.adam_first_step.sgd"),
        });
    }
    // Without bias correction the first step uses m = (1−β₁)·g and
    // v = (1−β₂)·g² as they are.
    let m = (1.0 - beta1) * g;
    let v = (1.0 - beta2) * g * g;
    let uncorrected = (lr * m / (v.sqrt() + eps)).abs();
    if distinct(uncorrected) {
        mistakes.push(Mistake {
            answer: format!("{uncorrected:e}"),
            feedback: TEXT.fill(
                lang,
                "ex.adam_first_step.no_bias_correction",
                &[
                    ("ratio", &show_sig(uncorrected / lr, 3)),
                    ("lr", &lr),
                ],
            ),
        });
    }
    let eps_text = format!("{eps:e}");
    Task {
        prompt: TEXT.fill(
            lang,
            "ex.adam_first_step.prompt",
            &[
                ("g", &g),
                ("lr", &lr),
                ("beta1", &beta1),
                ("beta2", &beta2),
                ("eps", &eps_text),
            ],
        ),
        kind: AnswerKind::Number,
        checker: AnswerChecker::Number {
            expected: answer,
            abs_tol: 0.0,
            rel_tol,
        },
        hints: vec![t(lang, "ex.adam_first_step.hint1"), t(lang, "ex.adam_first_step.hint2")],
        explanation: TEXT.fill(
            lang,
            "ex.adam_first_step.explain",
            &[("lr", &lr), ("eps", &eps_text), ("step", &show_sig(answer, 6))],
        ),
        reference: format!("{lr}"),
        mistakes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classic_slips_get_named() {
        let task = bias_gradient(3, Lang::En);
        let first_row = &task.mistakes[0];
        assert!(
            task.verdict_text(&task.check(&first_row.answer), Lang::En)
                .contains("first row")
        );
        let loss = initial_loss(1, Lang::En);
        assert!(loss.prompt.contains("class"));
        let k: f64 = loss
            .prompt
            .split('-')
            .next()
            .and_then(|s| s.split_whitespace().last())
            .and_then(|s| s.parse().ok())
            .unwrap_or(f64::NAN);
        assert!(
            loss.check(&format!("{:.2}", k.ln())).is_correct(),
            "{}",
            loss.prompt
        );
    }

    #[test]
    fn adam_without_bias_correction_is_named() {
        let mut seed = dlsys_core::exercise::FIRST_SEED;
        for _ in 0..30 {
            let task = adam_first_step(seed, Lang::En);
            assert!(!task.prompt.contains('{'), "{}", task.prompt);
            let lr: f64 = task.reference.parse().unwrap_or(f64::NAN);
            // β₁ = 0.9, β₂ = 0.999: the uncorrected step is (1 − β₁)/√(1 − β₂) ≈ 3.162 η.
            let forgot = show_sig(lr * 0.1 / 0.001f64.sqrt(), 4);
            let verdict = task.check(&forgot);
            assert!(!verdict.is_correct(), "{}", task.prompt);
            assert!(
                task.verdict_text(&verdict, Lang::En).contains("bias correction"),
                "{}: {forgot} got “{}”",
                task.prompt,
                task.verdict_text(&verdict, Lang::En)
            );
            seed = dlsys_core::exercise::next_seed(seed);
        }
    }

    #[test]
    fn momentum_shows_pytorchs_form() {
        let mut seed = dlsys_core::exercise::FIRST_SEED;
        for _ in 0..10 {
            let task = momentum_step(seed, Lang::En);
            assert!(task.explanation.contains("PyTorch"), "{}", task.explanation);
            assert!(!task.explanation.contains('{'), "{}", task.explanation);
            seed = dlsys_core::exercise::next_seed(seed);
        }
    }
}
