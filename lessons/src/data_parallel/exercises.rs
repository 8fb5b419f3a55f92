//! The data-parallel lesson's exercises. Every answer comes from the
//! collective core: the bytes the algorithms' schedules send, their step
//! counts, the α-β closed forms, the speedup and step-time rules.

use dlsys_core::names::Named as _;
use dlsys_core::collective::{
    Algorithm, Link, Op, OverlapPlan, Schedule, comm_time, crossover_bytes, equal_layers, overlap_step, overlapped_step,
    speedup, sync_step,
};
use dlsys_core::exercise::Task;
use dlsys_core::text::Lang;

use super::TEXT;
use crate::kit::exercise_kit::{pick, show};

const MB: f64 = 1e6;

/// A link from the task's α (µs) and β (GB/s), drawn from positive lists,
/// so `Link::new` accepts them; the same values set directly otherwise.
fn link(alpha_us: f64, gbps: f64) -> Link {
    Link::new(alpha_us, gbps).unwrap_or(Link {
        alpha_s: alpha_us * 1e-6,
        bytes_per_s: gbps * 1e9,
    })
}

crate::exercises! {
    catalog: TEXT,
    salt: 0xd47a_0a11,
    ring_bytes_per_worker => ring_bytes,
    server_traffic => server_traffic,
    all_reduce_steps => steps,
    ring_tree_crossover => crossover,
    ring_time => ring_time,
    speedup => speedup_task,
    straggler => straggler,
    overlap => overlap,
    last_bucket => last_bucket,
}

/// Bytes worker 0 sends in `algorithm`'s all-reduce of `mb` MB of f32 over
/// `n` workers, read off the schedule (the sizes used here divide evenly).
fn sent_mb(algorithm: Algorithm, n: usize, elements: usize, node: usize) -> f64 {
    Schedule::new(algorithm, Op::AllReduce, n, elements)
        .map(|s| s.traffic(4)[node].sent_bytes as f64 / MB)
        .unwrap_or(f64::NAN)
}

fn ring_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let n = pick(&mut rng, &[2, 3, 4, 6, 8, 12, 16]);
    // N divides the size (equal chunks), and it stays within a schedule's
    // 2²⁶ elements (16 × 15 MB = 240 MB).
    let per = pick(&mut rng, &[2, 5, 10, 15]);
    let mb = (n * per) as f64;
    let elements = (mb * MB / 4.0) as usize;
    let answer = sent_mb(Algorithm::Ring, n, elements, 0);
    let total: f64 = (0..n).map(|w| sent_mb(Algorithm::Ring, n, elements, w)).sum();
    Task::numeric(
        TEXT.fill(lang, "ex.ring_bytes_per_worker.prompt", &[("n", &n), ("size", &mb)]),
        answer,
        vec![t(lang, "ex.ring_bytes_per_worker.hint1"), t(lang, "ex.ring_bytes_per_worker.hint2")],
        TEXT.fill(lang, "ex.ring_bytes_per_worker.explain", &[("n", &n), ("n1", &(n - 1)), ("size", &mb), ("answer", &show(answer))]),
        vec![
            (mb, t(lang, "ex.ring_bytes_per_worker.s")),
            (answer / 2.0, t(lang, "ex.ring_bytes_per_worker.half")),
            (total, t(lang, "ex.ring_bytes_per_worker.total")),
            (2.0 * mb, t(lang, "ex.ring_bytes_per_worker.two_s")),
        ],
    )
}

fn server_traffic(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let n = pick(&mut rng, &[4, 5, 8, 10, 16]);
    let mb = pick(&mut rng, &[20.0, 40.0, 100.0, 160.0, 250.0]);
    let elements = (mb * MB / 4.0) as usize;
    let schedule = Schedule::new(Algorithm::ParameterServer, Op::AllReduce, n, elements);
    let (received, sent) = schedule
        .map(|s| {
            let server = s.traffic(4)[n];
            (server.received_bytes as f64 / MB, server.sent_bytes as f64 / MB)
        })
        .unwrap_or((f64::NAN, f64::NAN));
    Task::numeric(
        TEXT.fill(lang, "ex.server_traffic.prompt", &[("n", &n), ("size", &mb)]),
        received,
        vec![t(lang, "ex.server_traffic.hint1")],
        TEXT.fill(lang, "ex.server_traffic.explain", &[("n", &n), ("size", &mb), ("answer", &show(received))]),
        vec![
            (mb, t(lang, "ex.server_traffic.one")),
            (received + sent, t(lang, "ex.server_traffic.both")),
            (sent_mb(Algorithm::Ring, n, elements, 0), t(lang, "ex.server_traffic.ring")),
        ],
    )
}

fn steps(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let algorithm = pick(&mut rng, &[Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling]);
    let n = pick(&mut rng, &[3, 4, 5, 6, 8, 10, 12, 16]);
    let count = |a: Algorithm| a.cost(n).steps as f64;
    let answer = count(algorithm);
    let mut candidates = vec![(answer / 2.0, t(lang, "ex.all_reduce_steps.half"))];
    for other in [Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling] {
        if other != algorithm {
            candidates.push((count(other), t(lang, "ex.all_reduce_steps.other")));
        }
    }
    if algorithm == Algorithm::Tree {
        candidates.push((2.0 * (n as f64).log2().floor(), t(lang, "ex.all_reduce_steps.floor")));
    }
    if algorithm == Algorithm::HalvingDoubling && !n.is_power_of_two() {
        candidates.push((2.0 * (n as f64).log2().floor(), t(lang, "ex.all_reduce_steps.no_fold")));
    }
    let algo = algorithm.name(lang);
    Task::numeric(
        TEXT.fill(lang, "ex.all_reduce_steps.prompt", &[("n", &n), ("algo", &algo)]),
        answer,
        vec![t(lang, &format!("ex.all_reduce_steps.hint.{}", algorithm.id()))],
        TEXT.fill(lang, "ex.all_reduce_steps.explain", &[("answer", &answer)]),
        candidates,
    )
}

fn crossover(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let n = pick(&mut rng, &[4, 8, 16]);
    let alpha = pick(&mut rng, &[2.0, 5.0, 10.0, 20.0]);
    let gbps = pick(&mut rng, &[10.0, 25.0, 50.0, 100.0]);
    let link = link(alpha, gbps);
    let kb = |bytes: f64| bytes / 1e3;
    let answer = crossover_bytes(Algorithm::Ring, Algorithm::Tree, n, link).map_or(f64::NAN, kb);
    let ring = Algorithm::Ring.cost(n);
    let tree = Algorithm::Tree.cost(n);
    let alpha_beta = link.alpha_s * link.bytes_per_s;
    // The ring's bandwidth term dropped: (N−1−L)·α·β / L.
    let no_ring_bw = (ring.latency_terms - tree.latency_terms) * alpha_beta / tree.bandwidth_terms;
    let levels = tree.steps / 2;
    Task::numeric(
        TEXT.fill(lang, "ex.ring_tree_crossover.prompt", &[("n", &n), ("alpha", &alpha), ("gbps", &gbps)]),
        answer,
        vec![t(lang, "ex.ring_tree_crossover.hint1"), t(lang, "ex.ring_tree_crossover.hint2")],
        TEXT.fill(lang, "ex.ring_tree_crossover.explain", &[("levels", &levels), ("answer", &show(answer))]),
        vec![
            (kb(alpha_beta), t(lang, "ex.ring_tree_crossover.alpha_beta")),
            (kb(no_ring_bw), t(lang, "ex.ring_tree_crossover.no_ring_bw")),
        ],
    )
}

fn ring_time(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let n = pick(&mut rng, &[4, 8, 16]);
    let mb = (n * pick(&mut rng, &[5, 10, 25])) as f64;
    let alpha = pick(&mut rng, &[5.0, 10.0, 50.0]);
    let gbps = pick(&mut rng, &[10.0, 25.0, 100.0]);
    let link = link(alpha, gbps);
    let bytes = mb * MB;
    let ms = |s: f64| s * 1e3;
    let answer = ms(comm_time(Algorithm::Ring, n, bytes, link));
    let steps = Algorithm::Ring.cost(n).latency_terms;
    let chunk = bytes / n as f64;
    Task::numeric(
        TEXT.fill(lang, "ex.ring_time.prompt", &[("n", &n), ("size", &mb), ("alpha", &alpha), ("gbps", &gbps)]),
        answer,
        vec![t(lang, "ex.ring_time.hint1")],
        TEXT.fill(
            lang,
            "ex.ring_time.explain",
            &[("n1", &(n - 1)), ("alpha", &alpha), ("chunk", &show(chunk / MB)), ("gbps", &gbps), ("answer", &show(answer))],
        ),
        vec![
            (ms(steps * chunk / link.bytes_per_s), t(lang, "ex.ring_time.no_alpha")),
            (ms(steps * link.message_time(bytes)), t(lang, "ex.ring_time.full_s")),
            (answer / 2.0, t(lang, "ex.ring_time.half")),
        ],
    )
}

fn speedup_task(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let n = pick(&mut rng, &[4, 8, 16, 32, 64]);
    let compute = pick(&mut rng, &[40.0, 60.0, 100.0, 150.0]);
    let comm = pick(&mut rng, &[10.0, 20.0, 30.0, 50.0, 80.0, 200.0]);
    let answer = speedup(n, compute, comm);
    Task::numeric(
        TEXT.fill(lang, "ex.speedup.prompt", &[("n", &n), ("compute", &compute), ("comm", &comm)]),
        answer,
        vec![t(lang, "ex.speedup.hint1")],
        TEXT.fill(lang, "ex.speedup.explain", &[("n", &n), ("compute", &compute), ("comm", &comm), ("answer", &show(answer))]),
        vec![
            (n as f64, t(lang, "ex.speedup.ideal")),
            (n as f64 * compute / compute.max(comm), t(lang, "ex.speedup.overlap")),
            (compute / (compute + comm), t(lang, "ex.speedup.ratio")),
        ],
    )
}

fn straggler(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let n = pick(&mut rng, &[4, 8, 16]);
    let fast = pick(&mut rng, &[50.0, 80.0, 100.0, 120.0]);
    let slow = fast * pick(&mut rng, &[1.5, 2.0, 3.0]);
    let comm = pick(&mut rng, &[10.0, 20.0, 40.0]);
    let mut computes = vec![fast; n - 1];
    computes.push(slow);
    let answer = sync_step(&computes, comm);
    let mean = computes.iter().sum::<f64>() / n as f64;
    Task::numeric(
        TEXT.fill(lang, "ex.straggler.prompt", &[("n", &n), ("fast", &(n - 1)), ("t", &fast), ("slow", &slow), ("comm", &comm)]),
        answer,
        vec![t(lang, "ex.straggler.hint1")],
        TEXT.fill(lang, "ex.straggler.explain", &[("slow", &slow), ("comm", &comm), ("answer", &show(answer))]),
        vec![
            (sync_step(&computes[..n - 1], comm), t(lang, "ex.straggler.fast")),
            (mean + comm, t(lang, "ex.straggler.mean")),
            (slow, t(lang, "ex.straggler.no_comm")),
        ],
    )
}

fn overlap(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let f = pick(&mut rng, &[20.0, 30.0, 40.0]);
    let b = f * pick(&mut rng, &[1.5, 2.0, 2.5]);
    let c = pick(&mut rng, &[25.0, 45.0, 70.0, 110.0, 150.0]);
    let answer = overlapped_step(f, b, c);
    Task::numeric(
        TEXT.fill(lang, "ex.overlap.prompt", &[("f", &f), ("b", &b), ("c", &c)]),
        answer,
        vec![t(lang, "ex.overlap.hint1")],
        TEXT.fill(lang, "ex.overlap.explain", &[("f", &f), ("b", &b), ("c", &c), ("answer", &show(answer)), ("hidden", &show(b.min(c)))]),
        vec![
            (f + b + c, t(lang, "ex.overlap.none")),
            ((f + b).max(c), t(lang, "ex.overlap.forward")),
            (f + b, t(lang, "ex.overlap.free")),
        ],
    )
}

/// The last bucket: `layers` equal layers of `layer_mb`, buckets of
/// `per_bucket` layers, a ring of `n`; the exposed time from the core's
/// overlap timeline, and that bucket's layer count.
fn last_bucket_step(layers: usize, layer_mb: f64, per_bucket: usize, n: usize, link: Link) -> (f64, usize) {
    let bytes = (layer_mb * MB) as u64;
    let comm = move |b: u64| comm_time(Algorithm::Ring, n, b as f64, link);
    // Each layer's backward as long as a full bucket's all-reduce: the
    // stream keeps up, as the prompt says.
    let backward = comm(bytes * per_bucket as u64) * layers as f64;
    let plan = OverlapPlan {
        forward_s: 0.0,
        layers: equal_layers(layers, backward, bytes * layers as u64),
        bucket_bytes: bytes * per_bucket as u64,
    };
    match overlap_step(&plan, &comm) {
        Ok(step) => (step.exposed_s(), step.buckets.last().map_or(0, |b| b.layers.len())),
        Err(_) => (f64::NAN, 0),
    }
}

fn last_bucket(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let layers = pick(&mut rng, &[8, 10, 12, 16, 24]);
    let layer_mb = pick(&mut rng, &[4.0, 8.0, 10.0]);
    let per_bucket = pick(&mut rng, &[2, 3, 5]);
    let n = pick(&mut rng, &[4, 8, 16]);
    // α large enough that forgetting it is a caught mistake, not within
    // the checker's tolerance (its share is α·N·β / S, at least 1.6 %).
    let alpha = pick(&mut rng, &[20.0, 50.0, 100.0]);
    let gbps = pick(&mut rng, &[10.0, 25.0, 50.0]);
    let link = link(alpha, gbps);
    let ms = |s: f64| s * 1e3;
    let (exposed, last) = last_bucket_step(layers, layer_mb, per_bucket, n, link);
    let answer = ms(exposed);
    let last_mb = last as f64 * layer_mb;
    let ring = |mb: f64| ms(comm_time(Algorithm::Ring, n, mb * MB, link));
    Task::numeric(
        TEXT.fill(
            lang,
            "ex.last_bucket.prompt",
            &[("l", &layers), ("p", &layer_mb), ("k", &per_bucket), ("n", &n), ("alpha", &alpha), ("gbps", &gbps)],
        ),
        answer,
        vec![t(lang, "ex.last_bucket.hint1"), TEXT.fill(lang, "ex.last_bucket.hint2", &[("l", &layers), ("k", &per_bucket)])],
        TEXT.fill(
            lang,
            "ex.last_bucket.explain",
            &[
                ("last", &last),
                ("mb", &last_mb),
                ("n1", &(n - 1)),
                ("alpha", &alpha),
                ("chunk", &show(last_mb / n as f64)),
                ("gbps", &gbps),
                ("answer", &show(answer)),
            ],
        ),
        vec![
            (0.0, t(lang, "ex.last_bucket.zero")),
            (ring(layers as f64 * layer_mb), t(lang, "ex.last_bucket.whole")),
            (
                ring(per_bucket as f64 * layer_mb),
                TEXT.fill(lang, "ex.last_bucket.full", &[("k", &per_bucket), ("last", &last)]),
            ),
            (
                ms(Algorithm::Ring.cost(n).bandwidth_terms * last_mb * MB / link.bytes_per_s),
                t(lang, "ex.last_bucket.no_alpha"),
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsys_core::exercise::{FIRST_SEED, next_seed};

    /// Over many seeds: the reference is a finite number the checker
    /// accepts, every listed mistake is rejected with its own feedback, and
    /// the numbers move with the seed.
    #[test]
    fn every_variant_has_a_real_answer_and_its_mistakes_are_caught() {
        crate::check_numeric_exercises(EXERCISES, 1);
    }

    /// The last bucket's all-reduce is all that shows, and it holds what
    /// the packing leaves: L mod k layers, or a full bucket.
    #[test]
    fn the_last_bucket_is_what_is_left_of_the_layers() {
        let link = link(10.0, 25.0);
        for (layers, k, last) in [(12, 5, 2), (12, 3, 3), (10, 3, 1)] {
            let (exposed, counted) = last_bucket_step(layers, 8.0, k, 8, link);
            assert_eq!(counted, last, "{layers} layers in buckets of {k}");
            let want = comm_time(Algorithm::Ring, 8, last as f64 * 8.0 * MB, link);
            assert!((exposed - want).abs() <= 1e-12 * want, "{exposed} vs {want}");
        }
        // Forgetting α and answering nothing are caught for every draw.
        let mut seed = FIRST_SEED;
        for _ in 0..200 {
            let task = last_bucket(seed, Lang::En);
            for key in ["ex.last_bucket.no_alpha", "ex.last_bucket.zero", "ex.last_bucket.whole"] {
                assert!(task.mistakes.iter().any(|m| m.feedback == t(Lang::En, key)), "seed {seed}: {key}");
            }
            seed = next_seed(seed);
        }
    }

    /// The misconception (S per worker) and the forgotten all-gather half
    /// are caught, for every worker count the task draws.
    #[test]
    fn the_ring_misconceptions_are_caught() {
        let mut seed = FIRST_SEED;
        for _ in 0..50 {
            let task = ring_bytes(seed, Lang::En);
            let numbers: Vec<f64> = task
                .prompt
                .split(|c: char| !(c.is_ascii_digit() || c == '.'))
                .filter_map(|x| x.parse().ok())
                .collect();
            let (n, mb) = (numbers[0], numbers[1]);
            assert!(task.check(&show(2.0 * (n - 1.0) / n * mb)).is_correct());
            assert!(!task.check(&show(mb * (n - 1.0) / n)).is_correct(), "half, N={n}");
            if n > 2.0 {
                assert!(!task.check(&show(mb)).is_correct(), "S, N={n}");
            }
            seed = next_seed(seed);
        }
    }
}
