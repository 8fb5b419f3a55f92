//! The shape model's counts and its measurement, at small sizes.

use super::InferError;
use super::roofline::{
    RooflineSettings, kv_bytes, measure, measure_cpu, pass_cost, shape_config, weight_bytes,
};
use crate::nn::models::char_model::CharModel;

#[test]
fn the_counts_follow_the_models_shapes() {
    let c = shape_config(65, 256, 64);
    // The weights a pass reads whole are every parameter but the embeddings.
    let model = CharModel::new(c, 1);
    let embeddings = (c.vocab + c.context) * c.width;
    assert_eq!(
        weight_bytes(&c),
        4.0 * (model.parameter_count() - embeddings) as f64
    );
    // A decode step: 2 FLOPs per weight of the seven products, and 4·d
    // per key it attends to (the 10 cached and itself).
    let d = 256.0;
    let products = 4.0 * d * d + 8.0 * d * d + d * 65.0;
    let step = pass_cost(&c, 1, 10);
    assert_eq!(step.flops, 2.0 * products + 4.0 * d * 11.0);
    // Bytes: the weights, the cached K and V, the products' rows in and
    // out (the new K and V among them), the two embedding rows.
    let activations = 4.0 * (4.0 * 2.0 * d + 2.0 * 5.0 * d + d + 65.0);
    assert_eq!(
        step.bytes,
        weight_bytes(&c) + kv_bytes(&c, 10) + activations + 2.0 * 4.0 * d
    );
    // Decode reads every weight for 2 FLOPs each: under 1 FLOP per byte in
    // f32. A 512-token prefill reads them once for all its tokens.
    assert!(step.intensity() < 0.6, "{}", step.intensity());
    let big = shape_config(65, 2560, 1024);
    let prefill = pass_cost(&big, 512, 0);
    assert!(prefill.intensity() > 100.0, "{}", prefill.intensity());
    // The KV cache at the context adds to a step's bytes, not its weights.
    assert!(pass_cost(&big, 1, 1000).bytes - pass_cost(&big, 1, 0).bytes == kv_bytes(&big, 1000));
}

#[test]
fn a_small_shape_model_is_measured_pass_by_pass() {
    let roofs = measure_cpu(64, 1 << 20).unwrap();
    assert!(measure_cpu(8, 1 << 20).is_err() && measure_cpu(64, 1000).is_err());
    assert!(roofs.roofline.peak > 0.0 && roofs.roofline.bandwidth > 0.0);
    let s = RooflineSettings {
        width: 128,
        prompt: 8,
        steps: 3,
        seed: 2,
    };
    let mut heard = Vec::new();
    let r = measure(&s, 65, &roofs, |done, of| heard.push((done, of))).unwrap();
    assert_eq!(heard, vec![(1, 4), (2, 4), (3, 4), (4, 4)]);
    assert_eq!(r.prefill.tokens, 8);
    assert_eq!(
        r.decode.iter().map(|p| p.cached).collect::<Vec<_>>(),
        vec![8, 9, 10]
    );
    assert!(r.decode.contains(&r.decode_median));
    assert!(r.decode_tokens_per_s > 0.0 && r.decode_bound_tokens_per_s > 0.0);
    // Positions for the prompt, the steps and the speculative pass after them.
    assert_eq!(r.config.context, 8 + 3 + 5);
    assert!(r.verify_s > 0.0 && r.gemm_step_s > 0.0);
}

#[test]
fn bad_shapes_are_refused() {
    let ok = RooflineSettings::default();
    assert!(ok.validate().is_ok());
    for width in [0, 100, 8192] {
        let s = RooflineSettings { width, ..ok };
        assert!(matches!(s.validate(), Err(InferError::ShapeWidth { .. })));
    }
    for (prompt, steps) in [(0, 4), (4, 0), (4000, 100)] {
        let s = RooflineSettings {
            prompt,
            steps,
            ..ok
        };
        assert!(matches!(s.validate(), Err(InferError::ShapeTokens { .. })));
    }
}
