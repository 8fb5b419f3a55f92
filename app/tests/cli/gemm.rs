//! `dlsys-lab kernel matmul` and `bench kernels --family gemm|fusion|access`:
//! the compute-bound ladder from the command line.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::support::{assert_one_line_error, dlsys_lab, f32_bytes, gpu_expected, json, with_stdin};

#[test]
fn matmul_reads_a_then_b_and_writes_c() {
    if !gpu_expected() {
        return;
    }
    // [[1, 2, 3], [4, 5, 6]] · [[7, 8], [9, 10], [11, 12]] = [[58, 64], [139, 154]],
    // on every rung at every tile and block size.
    let input = f32_bytes(&[
        1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0,
    ]);
    for variant in [
        "naive",
        "coalesced",
        "tiled-8",
        "tiled-16",
        "register-2x2",
        "register-4x4",
        "register-8x8",
        "vec4-2x2",
        "vec4-4x4",
        "vec4-8x8",
    ] {
        let out = with_stdin(
            &[
                "kernel",
                "matmul",
                "--m",
                "2",
                "--n",
                "2",
                "--k",
                "3",
                "--variant",
                variant,
            ],
            &input,
        );
        assert!(
            out.status.success(),
            "{variant}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let c: Vec<f32> = out
            .stdout
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(c, vec![58.0, 64.0, 139.0, 154.0], "{variant}");
    }
    for (args, input) in [
        (
            &["kernel", "matmul", "--m", "2", "--n", "2", "--k", "3"][..],
            f32_bytes(&[1.0; 11]),
        ),
        (
            &["kernel", "matmul", "--m", "0", "--n", "2", "--k", "3"],
            f32_bytes(&[1.0; 6]),
        ),
        (
            &[
                "kernel",
                "matmul",
                "--m",
                "2",
                "--n",
                "2",
                "--k",
                "3",
                "--variant",
                "fastest",
            ],
            input.clone(),
        ),
        (
            &["kernel", "matmul", "--m", "1", "--n", "1", "--k", "70000"],
            f32_bytes(&vec![1.0; 140_000]),
        ),
    ] {
        let out = with_stdin(args, &input);
        assert_one_line_error(args, &out);
    }
}

#[test]
fn bench_families_report_flops_fusion_and_layouts() {
    if !gpu_expected() {
        return;
    }
    let json = json(&[
        "bench",
        "kernels",
        "--family",
        "all",
        "--rows",
        "16",
        "--cols",
        "512",
        "--m",
        "33",
        "--n",
        "40",
        "--k",
        "20",
        "--seq",
        "40",
        "--head-dim",
        "32",
        "--trials",
        "1",
        "--json",
    ]);
    assert_eq!(json["failed"], 0, "{json}");
    // `all` races the attention rungs too.
    assert_eq!(
        json["attention"]["rows"].as_array().map(Vec::len),
        Some(3),
        "{json}"
    );
    let ids: Vec<&str> = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kernel"].as_str().unwrap())
        .collect();
    for id in [
        "copy",
        "fma",
        "gemm/naive",
        "gemm/tiled-8",
        "gemm/register-2x2",
        "gemm/vec4-8x8",
        "fusion/gelu-fused",
        "access/stride-32",
        "access/channel-sum-nhwc",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    let s = &json["summary"];
    for key in [
        "compute_roof_gflops",
        "best_gemm_gflops",
        "best_gemm_vs_naive",
        "gelu_bytes_ratio",
        "nhwc_vs_nchw",
    ] {
        assert!(s[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {s}");
    }
    // The int8 rungs raced beside the f32 naive rung, bit-exact, moving a
    // quarter of its bytes (K = 20 is five whole words).
    for id in ["int8/dot4", "int8/extract"] {
        let g = (json["generated"].as_array().unwrap().iter())
            .find(|g| g["id"] == id)
            .unwrap_or_else(|| panic!("{id} missing: {json}"));
        assert_eq!(
            (g["rung"].as_str(), g["ok"].as_bool()),
            (Some("gemm/naive"), Some(true))
        );
        let (bytes, rung) = (
            g["bytes"].as_u64().unwrap(),
            g["rung_bytes"].as_u64().unwrap(),
        );
        assert_eq!(4 * (bytes - 4 * 33 * 40), rung - 4 * 33 * 40, "{g}");
    }
    // Fusing three kernels moves a third of the bytes, whatever the timing.
    assert!(
        (s["gelu_bytes_ratio"].as_f64().unwrap() - 3.0).abs() < 1e-9,
        "{s}"
    );
    // The text form names the roof and the ratios; piped into a closed pipe it does not panic.
    let text = dlsys_lab(&[
        "bench", "kernels", "--family", "gemm", "--m", "8", "--n", "8", "--k", "8", "--rows", "4",
        "--cols", "64", "--trials", "1",
    ]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("GFLOP/s") && stdout.contains("compute roof"),
        "{stdout}"
    );
    assert!(
        stdout.contains("int8/dot4 (int8 in, int32 accumulators)"),
        "{stdout}"
    );
    let bad = dlsys_lab(&["bench", "kernels", "--family", "everything"]);
    assert_one_line_error(&["bench", "kernels", "--family", "everything"], &bad);
    let deep = dlsys_lab(&["bench", "kernels", "--family", "gemm", "--k", "0"]);
    assert!(!deep.status.success());
}

/// The fusion family races the generator's kernels for the GELU and the
/// LayerNorm rungs' chains beside them: right, the same bytes by the
/// traffic models.
#[test]
fn the_generated_kernels_race_the_hand_written_fusion_rungs() {
    if !gpu_expected() {
        return;
    }
    let out = dlsys_lab(&[
        "bench", "kernels", "--family", "fusion", "--rows", "32", "--cols", "256", "--trials", "2",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["failed"], 0, "{json}");
    let generated = json["generated"].as_array().unwrap();
    let rungs: Vec<&str> = generated
        .iter()
        .map(|g| g["rung"].as_str().unwrap())
        .collect();
    assert_eq!(rungs, ["gelu-fused", "layernorm-fused"], "{json}");
    for g in generated {
        assert_eq!(g["ok"], true, "{g}");
        assert_eq!(g["bytes"], g["rung_bytes"], "{g}");
    }
}

#[test]
fn int8_matmul_writes_the_int32_accumulators_and_refuses_what_overflows() {
    if !gpu_expected() {
        return;
    }
    // A = [1, 2, 3, −128, 5] (K = 5, not a multiple of 4); B's rows are
    // [p, −p] for p = 1..5: C = [1 + 4 + 9 − 512 + 25, its negation].
    let mut input: Vec<u8> = [1i8, 2, 3, -128, 5].iter().map(|&v| v as u8).collect();
    for p in 1..=5i8 {
        input.extend([p as u8, (-p) as u8]);
    }
    for kernel in ["dot4", "extract"] {
        let args = [
            "kernel",
            "matmul",
            "--m",
            "1",
            "--n",
            "2",
            "--k",
            "5",
            "--dtype",
            "int8",
            "--int8-kernel",
            kernel,
        ];
        let out = with_stdin(&args, &input);
        assert!(
            out.status.success(),
            "{kernel}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let c: Vec<i32> = (out.stdout.chunks_exact(4))
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(c, vec![-473, 473], "{kernel}");
    }
    let int8 = |m: &'static str, k: &'static str| {
        [
            "kernel", "matmul", "--m", m, "--n", "1", "--k", k, "--dtype", "int8",
        ]
    };
    // One past the int32 bound, a short stdin and an empty side: one line each.
    for (args, input, says) in [
        (int8("1", "131072"), Vec::new(), "131071"),
        (int8("1", "5"), vec![1u8; 9], "10"),
        (int8("0", "5"), vec![1u8; 5], "--m"),
    ] {
        let out = with_stdin(&args, &input);
        assert_one_line_error(&args, &out);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{err}");
    }
}
