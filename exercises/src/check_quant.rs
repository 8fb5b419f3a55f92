//! The checker of exercise 12, `quantise_per_channel`: codes and scales
//! against the quantisation lesson's quantiser (`dlsys_core::quant`) on
//! seeded matrices and hostile ones, each case named in the message.

use dlsys_core::quant::{Granularity, IntFormat, Mapping, QuantSettings, quantise};
use rand::{RngExt as _, SeedableRng as _, rngs::StdRng};

use crate::check::{QuantisePerChannel, call};
use crate::words::{say, sayf};

/// The core's codes and per-column scales (symmetric int8, min–max).
fn want(w: &[f32], rows: usize, cols: usize) -> Option<(Vec<i32>, Vec<f64>)> {
    let settings = QuantSettings {
        format: IntFormat::signed(8),
        mapping: Mapping::Symmetric,
        granularity: Granularity::Channel { axis: 1 },
        ..QuantSettings::default()
    };
    let q = quantise(w, rows, cols, &settings).ok()?;
    // One block per column: the block of row 0's value j is column j's.
    let scales = (0..cols)
        .map(|j| q.params[q.block[j] as usize].scale)
        .collect();
    Some((q.codes, scales))
}

pub fn quantise_per_channel(f: QuantisePerChannel) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(12);
    let mut cases: Vec<(String, Vec<f32>, usize, usize)> = Vec::new();
    for (rows, cols) in [(8, 4), (33, 7), (64, 10)] {
        let w = (0..rows * cols)
            .map(|_| rng.random_range(-0.5f32..0.5))
            .collect();
        cases.push((
            sayf("c.quant.random", &[("rows", &rows), ("cols", &cols)]),
            w,
            rows,
            cols,
        ));
    }
    // Column 1 all zeros.
    let mut zero: Vec<f32> = (0..24).map(|i| (i as f32 - 11.5) / 10.0).collect();
    for r in 0..6 {
        zero[r * 4 + 1] = 0.0;
    }
    cases.push((say("c.quant.zero_channel"), zero, 6, 4));
    // One huge value in column 2: only column 2's scale may grow.
    let mut huge: Vec<f32> = (0..24)
        .map(|i| ((i * 7 % 11) as f32 - 5.0) / 20.0)
        .collect();
    huge[2 * 4 + 2] = 1e6;
    cases.push((say("c.quant.huge"), huge, 6, 4));
    cases.push((say("c.quant.one_row"), vec![0.3, -0.2, 0.0, 1.0], 1, 4));
    for (name, w, rows, cols) in &cases {
        let Some((codes, scales)) = want(w, *rows, *cols) else {
            continue;
        };
        let got = call(|| f(w, *rows, *cols))?;
        let Some((got_codes, got_scales)) = got else {
            return Err(sayf("c.quant.refused", &[("name", name)]));
        };
        if got_codes.len() != codes.len() || got_scales.len() != scales.len() {
            return Err(sayf(
                "c.quant.len",
                &[
                    ("name", name),
                    ("codes", &got_codes.len()),
                    ("scales", &got_scales.len()),
                    ("want_codes", &codes.len()),
                    ("want_scales", &scales.len()),
                ],
            ));
        }
        for (j, (g, s)) in got_scales.iter().zip(&scales).enumerate() {
            if (g - s).abs() > 1e-12 * s.abs() || !g.is_finite() {
                let key = if !g.is_finite() || *g == 0.0 {
                    "c.quant.scale_nan"
                } else if scales.iter().any(|t| (g - t).abs() <= 1e-12 * t.abs())
                    && scales.iter().any(|t| t != s)
                {
                    "c.quant.scale_shared"
                } else {
                    "c.quant.scale"
                };
                return Err(sayf(
                    key,
                    &[("name", name), ("j", &j), ("got", g), ("want", s)],
                ));
            }
        }
        for (i, (g, c)) in got_codes.iter().zip(&codes).enumerate() {
            if i32::from(*g) != *c {
                let v = f64::from(w[i]) / scales[i % cols];
                let key = if (v.trunc() - f64::from(*g)).abs() < 0.5 && (v - v.trunc()).abs() >= 0.5
                {
                    "c.quant.truncated"
                } else {
                    "c.quant.code"
                };
                return Err(sayf(
                    key,
                    &[
                        ("name", name),
                        ("i", &i),
                        ("x", &w[i]),
                        ("got", g),
                        ("want", c),
                    ],
                ));
            }
        }
    }
    for (what, bad) in [
        ("+inf", f32::INFINITY),
        ("−inf", f32::NEG_INFINITY),
        ("NaN", f32::NAN),
    ] {
        let w = vec![0.5, bad, -0.25, 0.125];
        if call(|| f(&w, 2, 2))?.is_some() {
            return Err(sayf("c.quant.not_refused", &[("what", &what)]));
        }
    }
    Ok(())
}
