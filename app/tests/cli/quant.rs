//! `dlsys-lab quant` run as a user runs it: one value's code, the MLP
//! quantised (accuracy, bytes, error), the outlier rows and the table, and
//! bad input refused in one line of the learner's language.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::support::{assert_one_line_error, dlsys_lab, fails_with_one_line, has_cjk, json};

#[test]
fn one_value_gets_its_code_scale_and_bound() {
    let v = json(&[
        "quant", "--value", "0.37", "--bits", "8", "--range", "-1,1", "--json",
    ]);
    // scale 1/127: 0.37 · 127 = 46.99 → code 47.
    assert_eq!(v["code"], 47);
    assert_eq!(v["params"]["zero_point"], 0);
    let scale = v["params"]["scale"].as_f64().unwrap();
    assert!((scale - 1.0 / 127.0).abs() < 1e-15);
    let err = v["error"].as_f64().unwrap();
    assert!(err.abs() <= scale / 2.0 && err != 0.0);
    let a = json(&[
        "quant",
        "--value",
        "-0.25",
        "--bits",
        "4",
        "--range",
        "-1,3",
        "--mapping",
        "asymmetric",
        "--unsigned",
        "--json",
    ]);
    // scale 4/15, zero point round(15/4) = 4: −0.25 / (4/15) = −0.94 → −1 + 4 = 3.
    assert_eq!(
        (a["params"]["zero_point"].as_i64(), a["code"].as_i64()),
        (Some(4), Some(3))
    );
    let text = dlsys_lab(&[
        "--lang", "zh", "quant", "--value", "0.37", "--range", "-1,1",
    ]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(has_cjk(&text) && text.contains("码值 47"), "{text}");
}

#[test]
fn the_mlp_is_trained_quantised_and_measured() {
    let v = json(&[
        "quant",
        "--model",
        "mlp",
        "--bits",
        "4",
        "--granularity",
        "group:32",
        "--epochs",
        "3",
        "--outlier",
        "200",
        "--json",
    ]);
    let before = v["fp32_accuracy"].as_f64().unwrap();
    let after = v["accuracy"].as_f64().unwrap();
    assert!(before > 0.8 && after > 0.5, "{v}");
    // digits: 64·128 + 128·10 weights; 4 bits; fp16 scales per group of 32 along K.
    let b = &v["bytes"];
    assert_eq!(b["params"], 9472);
    assert_eq!(b["payload_bytes"], 4736);
    assert_eq!(b["blocks"], 2 * 128 + 4 * 10);
    assert_eq!(b["scales_bytes"], 2 * (2 * 128 + 4 * 10));
    assert_eq!(v["fp32_bytes"], 4 * 9472);
    let rows = v["outlier"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    let per_tensor = rows[0]["accuracy"].as_f64().unwrap();
    assert!(per_tensor < before - 0.2, "{v}");
    assert_eq!(rows[3]["integer_gemm"], false);
    // SmoothQuant's rows: scales an integer GEMM runs, and the outlier tamed.
    for row in &rows[4..] {
        assert_eq!(
            (row["smooth_alpha"].as_f64(), row["integer_gemm"].as_bool()),
            (Some(0.5), Some(true))
        );
        assert!(row["accuracy"].as_f64().unwrap() > per_tensor + 0.2, "{v}");
    }
    let grid = json(&[
        "quant",
        "--grid",
        "--epochs",
        "2",
        "--activations",
        "--json",
    ]);
    assert_eq!(grid["grid"].as_array().unwrap().len(), 16);
    assert_eq!(grid["activations"], "PerTensor");
    let fixed = json(&["quant", "--static-activations", "--epochs", "2", "--json"]);
    assert_eq!(fixed["activations"], "StaticTensor");
    assert!(fixed["accuracy"].as_f64().unwrap() > 0.5, "{fixed}");
    let zh = dlsys_lab(&[
        "--lang",
        "zh",
        "quant",
        "--bits",
        "8",
        "--granularity",
        "channel",
        "--epochs",
        "2",
        "--calibrate",
        "percentile:99.9",
    ]);
    let text = String::from_utf8_lossy(&zh.stdout);
    assert!(zh.status.success() && text.contains("测试准确率"), "{text}");
}

#[test]
fn the_cnn_and_the_transformer_are_quantised_weight_only() {
    let cnn = json(&[
        "quant",
        "--model",
        "cnn",
        "--images",
        "200",
        "--bits",
        "8",
        "--granularity",
        "channel",
        "--json",
    ]);
    assert_eq!(cnn["metric"], "Accuracy");
    let (fp32, delta) = (
        cnn["fp32"].as_f64().unwrap(),
        cnn["measured"]["delta"].as_f64().unwrap(),
    );
    assert!(fp32 > 0.3 && delta.abs() <= 0.01, "{cnn}");
    // conv1 16 × 25, conv2 32 × 144, linear 1,568 × 10: one scale per output channel.
    assert_eq!(
        cnn["measured"]["bytes"]["params"],
        16 * 25 + 32 * 144 + 1568 * 10
    );
    assert_eq!(cnn["measured"]["bytes"]["blocks"], 16 + 32 + 10);
    let text = json(&[
        "quant",
        "--model",
        "transformer",
        "--steps",
        "30",
        "--bits",
        "3",
        "--grid",
        "--json",
    ]);
    assert_eq!(text["metric"], "Loss");
    let cells = text["grid"].as_array().unwrap();
    assert_eq!(cells.len(), 14);
    // Every cell measured; 3 bits with one scale per matrix fits the
    // weights worse than 8 bits per channel (a model of 30 steps is too
    // young for its loss to rank the cells: the README's table is trained).
    let cell = |bits: u64, granularity: &str| {
        let c = cells
            .iter()
            .find(|c| c["bits"] == bits && c["granularity"] == granularity)
            .unwrap();
        assert!(c["value"].as_f64().unwrap().is_finite(), "{c}");
        c["weight_error"]["rms_error"].as_f64().unwrap()
    };
    assert!(cell(3, "Tensor") > 10.0 * cell(8, "Channel"), "{text}");
    // W8A8: every GEMM's input int8 as well.
    assert!(cells[12..].iter().all(|c| c["int8_activations"] == true));
    let w8a8 = json(&[
        "quant",
        "--model",
        "transformer",
        "--steps",
        "30",
        "--activations",
        "--json",
    ]);
    assert_eq!(w8a8["int8_activations"], true);
    assert!(
        w8a8["measured"]["value"].as_f64().unwrap().is_finite(),
        "{w8a8}"
    );
}

#[test]
fn the_mx_formats_sit_beside_the_integer_groups() {
    let v = json(&["quant", "--mx", "--epochs", "3", "--json"]);
    let rows = v["mx"]["rows"].as_array().unwrap();
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r["element"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "Fp8E4m3", "Fp8E5m2", "Fp6E2m3", "Fp6E3m2", "Fp4E2m1", "Int8"
        ]
    );
    // digits' 64 × 128 and 128 × 10 weights: 296 blocks of 32 along K, one
    // 8-bit scale each: 8 · 296 / 9472 = 0.25 bits per weight.
    for (row, bits) in rows.iter().zip([8.25, 8.25, 6.25, 6.25, 4.25, 8.25]) {
        assert!(
            (row["bits_per_value"].as_f64().unwrap() - bits).abs() < 1e-12,
            "{row}"
        );
    }
    let baselines = v["mx"]["baselines"].as_array().unwrap();
    assert_eq!(baselines[1][1].as_f64(), Some(4.5));
    // MXFP8 keeps the accuracy; MXFP4's weights carry more error than MXFP8's.
    assert!(rows[0]["delta"].as_f64().unwrap().abs() <= 0.01, "{v}");
    let rms = |r: &serde_json::Value| r["error"]["rms_error"].as_f64().unwrap();
    assert!(rms(&rows[4]) > rms(&rows[0]));
}

#[test]
fn bad_input_is_one_line_in_the_learners_language() {
    fails_with_one_line(&[
        &["quant", "--bits", "9"],
        &["quant", "--bits", "1"],
        &["quant", "--granularity", "group:0"],
        &["quant", "--granularity", "row"],
        &["quant", "--value", "nan"],
        &["quant", "--value", "inf", "--range", "-1,1"],
        &["quant", "--value", "0.1", "--range", "1,-1"],
        &["quant", "--value", "0.1", "--range", "1"],
        &["quant", "--calibrate", "percentile:101"],
        &["quant", "--calibrate", "histogram"],
        &["quant", "--unsigned"],
        &["quant", "--outlier", "0"],
        &["quant", "--model", "resnet"],
        &["quant", "--model", "cnn", "--static-activations"],
        &["quant", "--model", "transformer", "--mx"],
        &["quant", "--model", "transformer", "--images", "100"],
        &["quant", "--model", "cnn", "--steps", "10"],
        &["quant", "--steps", "10"],
        &["quant", "--activations", "--static-activations"],
        &["quant", "--model", "transformer", "--qat", "1"],
        &["quant", "--model", "cnn", "--epochs", "0"],
        &["quant", "--model", "transformer", "--steps", "0"],
        // Flags the run would pass over are refused, not ignored.
        &["quant", "--model", "cnn", "--hidden", "64"],
        &["quant", "--model", "transformer", "--dataset", "mnist"],
        &["quant", "--model", "cnn", "--qat-lr", "0.1"],
        &["quant", "--qat-lr", "0.1"],
        &["quant", "--fp8-train", "--hidden", "64"],
    ]);
    let out = dlsys_lab(&["quant", "--qat-lr", "0.1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--qat-lr only applies with --qat"), "{err}");
    for (args, says) in [
        (
            &["quant", "--fp8-train", "--qat", "1"][..],
            "--qat does not apply to --fp8-train",
        ),
        (
            &["quant", "--value", "0.5", "--hidden", "64"][..],
            "--hidden does not apply to --value",
        ),
        (
            &["quant", "--value", "0.5", "--model", "cnn"][..],
            "--model does not apply to --value",
        ),
    ] {
        let err = String::from_utf8_lossy(&dlsys_lab(args).stderr).into_owned();
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let args = ["--lang", "zh", "quant", "--bits", "9"];
    let out = dlsys_lab(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.trim().lines().count() == 1,
        "{err}"
    );
    assert!(err.starts_with("错误：") && err.contains('9'), "{err}");
    let args = ["quant", "--bits", "0"];
    assert_one_line_error(&args, &dlsys_lab(&args));
    let out = dlsys_lab(&["quant", "--value", "nan", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["error"].as_str().unwrap().contains("NaN"), "{v}");
}

#[test]
fn quantisation_aware_training_reports_every_epoch_and_refuses_too_many() {
    let v = json(&[
        "quant", "--bits", "2", "--epochs", "3", "--qat", "2", "--json",
    ]);
    let q = &v["qat"];
    assert_eq!(q["accuracy"].as_array().map(Vec::len), Some(2), "{q}");
    assert_eq!(q["loss"].as_array().map(Vec::len), Some(2), "{q}");
    // PTQ's figure is the plain cell's: the same model, the same settings.
    assert_eq!(q["ptq_accuracy"], v["accuracy"]);
    let text = dlsys_lab(&[
        "--lang", "zh", "quant", "--bits", "2", "--epochs", "2", "--qat", "1",
    ]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("量化感知训练") && stdout.contains("第 1 轮"),
        "{stdout}"
    );
    let args = ["quant", "--bits", "2", "--epochs", "1", "--qat", "101"];
    let out = dlsys_lab(&args);
    assert_one_line_error(&args, &out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("100"));
}

#[test]
fn fp8_training_runs_every_recipe_and_shows_the_stale_scale() {
    let v = json(&["quant", "--fp8-train", "--epochs", "1", "--json"]);
    let recipes: Vec<&str> = (v["runs"].as_array().unwrap().iter())
        .map(|r| r["recipe"].as_str().unwrap_or("hybrid"))
        .collect();
    assert_eq!(recipes.len(), 4, "{v}");
    for run in v["runs"].as_array().unwrap() {
        assert_eq!(run["loss"].as_array().map(Vec::len), Some(1), "{run}");
    }
    // A history amax of 1 against a tensor grown to 4: 12 of 16 values
    // past the largest finite in both formats.
    for s in v["stale"].as_array().unwrap() {
        assert_eq!(
            (
                s["saturating"]["saturated"].as_u64(),
                s["overflowing"]["overflowed"].as_u64()
            ),
            (Some(12), Some(12)),
            "{s}"
        );
    }
    let zh = dlsys_lab(&["--lang", "zh", "quant", "--fp8-train", "--epochs", "1"]);
    let stdout = String::from_utf8_lossy(&zh.stdout);
    assert!(
        stdout.contains("饱和转换") && stdout.contains("fp8-hybrid-delayed:16"),
        "{stdout}"
    );
}

#[test]
fn the_entropy_clip_is_a_calibration_like_the_others() {
    let args = ["quant", "--bits", "3", "--calibrate", "kl", "--epochs", "2"];
    let v = json(&[&args[..], &["--json"]].concat());
    assert_eq!(v["calibration"], "Entropy", "{v}");
    // Clipped below amax: some weights land outside the range.
    assert!(v["weight_error"]["clipped"].as_u64().unwrap() > 0, "{v}");
    let text = dlsys_lab(&[&["--lang", "zh"][..], &args].concat());
    assert!(String::from_utf8_lossy(&text.stdout).contains("KL 散度"));
}
