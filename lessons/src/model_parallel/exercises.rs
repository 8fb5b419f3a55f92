//! The model-parallelism lesson's exercises. Every answer comes from the
//! core: bubbles and activations in flight from a schedule run on the
//! virtual clock, bytes from the collective engine's ring counts, the
//! utilisation and the all-to-all from `parallel::cost`.

use dlsys_core::exercise::Task;
use dlsys_core::names::Named as _;
use dlsys_core::parallel::cost::{all_to_all_bytes, mfu, micro_batches_for, sharded_traffic, tp_traffic};
use dlsys_core::parallel::schedule::{Kind, PipelineRun, Times, pipeline};
use dlsys_core::text::Lang;

use super::TEXT;
use crate::kit::exercise_kit::{catalog_choice, pick, show};

crate::exercises! {
    catalog: TEXT,
    salt: 0x90de_1a11,
    bubble => bubble,
    interleaved_bubble => interleaved,
    micro_batches_needed => micro_needed,
    peak_activations => peak_activations,
    zb_step => zb_step,
    tp_bytes => tp_bytes,
    fsdp_bytes => fsdp_bytes,
    mfu => mfu_task,
    inside_a_node => inside_a_node,
    moe_all_to_all => moe,
}

/// T_F = 1, T_B = 2 (of which W 1): the closed forms' equal stages.
const EQUAL: Times = Times {
    forward: 1.0,
    backward: 2.0,
    weight: 1.0,
    transfer: 0.0,
};

/// A schedule run with equal stages; the sizes drawn here are all valid,
/// so a failure would be a bug the self-check catches (NaN answers fail).
fn run(kind: Kind, stages: usize, micro: usize, times: Times) -> Option<PipelineRun> {
    pipeline(kind, stages, micro, times).ok()
}

fn bubble_percent(kind: Kind, stages: usize, micro: usize) -> f64 {
    run(kind, stages, micro, EQUAL).map_or(f64::NAN, |r| 100.0 * r.rows[0].bubble)
}

fn bubble(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let kind = pick(&mut rng, &[Kind::GPipe, Kind::OneFOneB]);
    let p = pick(&mut rng, &[2, 4, 8, 16]);
    let m = pick(&mut rng, &[4, 8, 16, 32, 64]);
    let answer = bubble_percent(kind, p, m);
    let (pf, mf) = (p as f64, m as f64);
    Task::numeric(
        TEXT.fill(lang, "ex.bubble.prompt", &[("schedule", &kind.name(lang)), ("p", &p), ("m", &m)]),
        answer,
        vec![t(lang, "ex.bubble.hint1"), t(lang, "ex.bubble.hint2")],
        TEXT.fill(lang, "ex.bubble.explain", &[("p", &p), ("m", &m), ("answer", &show(answer))]),
        vec![
            (100.0 * (pf - 1.0) / mf, t(lang, "ex.bubble.over_ideal")),
            (100.0 * pf / (mf + pf), t(lang, "ex.bubble.p_not_p1")),
            (100.0 - answer, t(lang, "ex.bubble.busy")),
        ],
    )
}

fn interleaved(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let p = pick(&mut rng, &[2, 4, 8]);
    let m = p * pick(&mut rng, &[1, 2, 4]);
    let v = pick(&mut rng, &[2, 3, 4]);
    let answer = bubble_percent(Kind::Interleaved { v }, p, m);
    let (pf, mf, vf) = (p as f64, m as f64, v as f64);
    Task::numeric(
        TEXT.fill(lang, "ex.interleaved_bubble.prompt", &[("p", &p), ("m", &m), ("v", &v)]),
        answer,
        vec![t(lang, "ex.interleaved_bubble.hint1")],
        TEXT.fill(lang, "ex.interleaved_bubble.explain", &[("p", &p), ("m", &m), ("v", &v), ("answer", &show(answer))]),
        vec![
            (bubble_percent(Kind::OneFOneB, p, m), t(lang, "ex.interleaved_bubble.plain")),
            (100.0 * (pf - 1.0) / (vf * mf), t(lang, "ex.interleaved_bubble.over_ideal")),
            (100.0 * (pf - 1.0) / (mf + vf * (pf - 1.0)), t(lang, "ex.interleaved_bubble.wrong_v")),
        ],
    )
}

fn micro_needed(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let p = pick(&mut rng, &[4, 6, 8, 12, 16]);
    let target = pick(&mut rng, &[5.0, 10.0, 20.0, 25.0]);
    let answer = micro_batches_for(Kind::OneFOneB, p, target / 100.0, EQUAL).map_or(f64::NAN, |m| m as f64);
    let p1 = (p - 1) as f64;
    Task::numeric(
        TEXT.fill(lang, "ex.micro_batches_needed.prompt", &[("p", &p), ("target", &target)]),
        answer,
        vec![t(lang, "ex.micro_batches_needed.hint1")],
        TEXT.fill(lang, "ex.micro_batches_needed.explain", &[("p", &p), ("p1", &(p - 1)), ("target", &target), ("answer", &show(answer))]),
        vec![
            ((p1 * 100.0 / target).ceil(), t(lang, "ex.micro_batches_needed.over_ideal")),
            (answer - 1.0, t(lang, "ex.micro_batches_needed.floor")),
            (p as f64, t(lang, "ex.micro_batches_needed.p")),
        ],
    )
}

fn peak_activations(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let p = pick(&mut rng, &[4, 6, 8]);
    let m = pick(&mut rng, &[12, 16, 24, 32]);
    let stage = pick(&mut rng, &[0, 1, 2, 3]);
    let peak = |kind| run(kind, p, m, EQUAL).map_or(f64::NAN, |r| r.rows[stage].peak_in_flight as f64);
    let answer = peak(Kind::OneFOneB);
    Task::numeric(
        TEXT.fill(lang, "ex.peak_activations.prompt", &[("p", &p), ("m", &m), ("s", &stage)]),
        answer,
        vec![t(lang, "ex.peak_activations.hint1")],
        TEXT.fill(lang, "ex.peak_activations.explain", &[("p", &p), ("m", &m), ("s", &stage), ("answer", &show(answer))]),
        vec![
            (peak(Kind::GPipe), t(lang, "ex.peak_activations.gpipe")),
            (p as f64, t(lang, "ex.peak_activations.p")),
            ((p - 1 - stage) as f64, t(lang, "ex.peak_activations.warmup")),
        ],
    )
}

fn zb_step(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let p = pick(&mut rng, &[2, 4, 8]);
    let m = pick(&mut rng, &[8, 12, 16]);
    let forward = pick(&mut rng, &[1.0, 2.0]);
    let b = pick(&mut rng, &[1.0, 2.0]);
    // W ≤ T_F: where the closed form holds.
    let w: f64 = pick(&mut rng, &[0.5, 1.0]);
    let w = w.min(forward);
    let times = Times {
        forward,
        backward: b + w,
        weight: w,
        transfer: 0.0,
    };
    let step = |kind| run(kind, p, m, times).map_or(f64::NAN, |r| r.timeline.makespan);
    let answer = step(Kind::ZeroBubble);
    let busy = m as f64 * (forward + b + w);
    Task::numeric(
        TEXT.fill(lang, "ex.zb_step.prompt", &[("p", &p), ("m", &m), ("f", &forward), ("b", &b), ("w", &w)]),
        answer,
        vec![t(lang, "ex.zb_step.hint1"), t(lang, "ex.zb_step.hint2")],
        TEXT.fill(lang, "ex.zb_step.explain", &[("p1", &(p - 1)), ("m", &m), ("busy", &show(busy)), ("answer", &show(answer))]),
        vec![
            (step(Kind::OneFOneB), t(lang, "ex.zb_step.one_f_one_b")),
            (busy, t(lang, "ex.zb_step.no_bubble")),
            (busy + (p - 1) as f64 * (forward + b), t(lang, "ex.zb_step.no_w")),
        ],
    )
}

const MB: f64 = 1e6;

fn tp_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let tp = pick(&mut rng, &[2, 4, 8]);
    let b = pick(&mut rng, &[1, 2, 4]);
    let s = pick(&mut rng, &[1024, 2048, 4096]);
    let h = pick(&mut rng, &[2048, 4096, 8192]);
    let traffic = tp_traffic(tp, b * s, h, 2);
    let answer = traffic.per_layer as f64 / MB;
    let activations = (2 * b * s * h) as f64 / MB;
    Task::numeric(
        TEXT.fill(lang, "ex.tp_bytes.prompt", &[("t", &tp), ("b", &b), ("s", &s), ("h", &h)]),
        answer,
        vec![t(lang, "ex.tp_bytes.hint1"), t(lang, "ex.tp_bytes.hint2")],
        TEXT.fill(lang, "ex.tp_bytes.explain", &[("t", &tp), ("t1", &(tp - 1)), ("size", &show(activations)), ("one", &show(traffic.per_all_reduce as f64 / MB)), ("answer", &show(answer))]),
        vec![
            (traffic.per_all_reduce as f64 / MB, t(lang, "ex.tp_bytes.one")),
            (answer / 2.0, t(lang, "ex.tp_bytes.forward_only")),
            (4.0 * activations, t(lang, "ex.tp_bytes.whole")),
            (4.0 * activations / tp as f64, t(lang, "ex.tp_bytes.shard")),
        ],
    )
}

const GB: f64 = 1e9;

fn fsdp_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let billions = pick(&mut rng, &[1.3, 2.7, 7.0, 13.0]);
    let n = pick(&mut rng, &[4, 8, 16, 32, 64]);
    let params = (billions * 1e9) as u64;
    let traffic = sharded_traffic(n, params, 2);
    let answer = traffic.fsdp as f64 / GB;
    let psi = 2.0 * billions;
    Task::numeric(
        TEXT.fill(lang, "ex.fsdp_bytes.prompt", &[("params", &billions), ("n", &n)]),
        answer,
        vec![t(lang, "ex.fsdp_bytes.hint1")],
        TEXT.fill(lang, "ex.fsdp_bytes.explain", &[("psi", &show(psi)), ("n", &n), ("n1", &(n - 1)), ("dp", &show(traffic.data_parallel as f64 / GB)), ("answer", &show(answer))]),
        vec![
            (traffic.data_parallel as f64 / GB, t(lang, "ex.fsdp_bytes.dp")),
            (3.0 * psi, t(lang, "ex.fsdp_bytes.whole")),
            (2.0 * answer / 3.0, t(lang, "ex.fsdp_bytes.one_gather")),
            (answer / 2.0, t(lang, "ex.fsdp_bytes.fp32")),
        ],
    )
}

fn mfu_task(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let billions = pick(&mut rng, &[7.0, 13.0, 34.0, 70.0]);
    let gpus = pick(&mut rng, &[64.0, 128.0, 256.0, 512.0]);
    // H100 SXM dense BF16 989 TFLOP/s; A100 312 TFLOP/s (datasheets).
    let (gpu, peak) = pick(&mut rng, &[("H100", 989e12), ("A100", 312e12)]);
    let target = pick(&mut rng, &[0.32, 0.38, 0.45, 0.52]);
    // Tokens per second that land near `target`, to three figures.
    let tokens = three_figures(target * gpus * peak / (6.0 * billions * 1e9));
    let answer = 100.0 * mfu(billions * 1e9, tokens, gpus, peak);
    Task::numeric(
        TEXT.fill(lang, "ex.mfu.prompt", &[("params", &billions), ("tokens", &tokens), ("gpus", &gpus), ("gpu", &gpu), ("peak", &(peak / 1e12))]),
        answer,
        vec![t(lang, "ex.mfu.hint1")],
        TEXT.fill(lang, "ex.mfu.explain", &[("params", &billions), ("tokens", &tokens), ("gpus", &gpus), ("peak", &(peak / 1e12)), ("answer", &show(answer))]),
        vec![
            (answer / 3.0, t(lang, "ex.mfu.two_n")),
            (answer * 8.0 / 6.0, t(lang, "ex.mfu.recompute")),
            (answer * gpus, t(lang, "ex.mfu.one_gpu")),
        ],
    )
}

/// `x` (positive) rounded to three significant figures.
fn three_figures(x: f64) -> f64 {
    let unit = 10f64.powf(x.log10().floor() - 2.0);
    (x / unit).round() * unit
}

fn inside_a_node(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let gpus = pick(&mut rng, &[4, 8, 16]);
    let nvlink = pick(&mut rng, &[300, 450, 900]);
    let nic = pick(&mut rng, &[25, 50, 100]);
    let args: [(&str, &dyn std::fmt::Display); 3] = [("gpus", &gpus), ("nvlink", &nvlink), ("nic", &nic)];
    catalog_choice(&TEXT, lang, "inside_a_node", seed, &["tp", "pp", "dp", "fsdp"], &args)
}

fn moe(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let tokens = pick(&mut rng, &[2048.0, 4096.0, 8192.0]);
    let k = pick(&mut rng, &[1.0, 2.0]);
    let capacity = pick(&mut rng, &[1.0, 1.25, 1.5]);
    let h = pick(&mut rng, &[2048.0, 4096.0]);
    let experts = pick(&mut rng, &[8.0, 16.0, 64.0]);
    let bytes = |tokens, k, capacity, experts| all_to_all_bytes(tokens, k, capacity, h, 2.0, experts) / MB;
    let answer = bytes(tokens, k, capacity, experts);
    Task::numeric(
        TEXT.fill(lang, "ex.moe_all_to_all.prompt", &[("tokens", &tokens), ("k", &k), ("c", &capacity), ("h", &h), ("e", &experts)]),
        answer,
        vec![t(lang, "ex.moe_all_to_all.hint1"), t(lang, "ex.moe_all_to_all.hint2")],
        TEXT.fill(lang, "ex.moe_all_to_all.explain", &[("tokens", &tokens), ("k", &k), ("c", &capacity), ("h", &h), ("e", &experts), ("e1", &(experts - 1.0)), ("answer", &show(answer))]),
        vec![
            (bytes(tokens, k, capacity, 1e300), t(lang, "ex.moe_all_to_all.stays")),
            (bytes(tokens, k, 1.0, experts), t(lang, "ex.moe_all_to_all.capacity")),
            (bytes(tokens, 1.0, capacity, experts), t(lang, "ex.moe_all_to_all.top_k")),
            (2.0 * answer, t(lang, "ex.moe_all_to_all.both")),
        ],
    )
}
