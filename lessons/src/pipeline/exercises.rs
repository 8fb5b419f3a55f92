//! The input-pipeline lesson's exercises. Every answer comes from the
//! pipeline model of `dlsys_core::pipeline` (utilisation, the knee, the
//! epoch time) or, for pinned memory, from the overlap rule it states.

use dlsys_core::exercise::{Exercise, Task};
use dlsys_core::pipeline::{Costs, epoch_seconds, knee, predict};
use dlsys_core::text::Lang;
use rand::SeedableRng as _;

use super::TEXT;
use crate::exercise_kit::{pick, show};

fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed ^ 0x9199_e11e)
}

fn t(lang: Lang, key: &str) -> String {
    TEXT.get(lang, key).to_owned()
}

/// Data that takes `data_ms` per batch on one worker's core-free wait
/// (plenty of cores): the model's costs.
fn costs(compute_ms: f64, data_ms: f64) -> Costs {
    Costs {
        compute_s: compute_ms * 1e-3,
        cpu_s: 0.0,
        io_s: data_ms * 1e-3,
    }
}

/// Cores enough that only the workers and the step bound the pipeline.
const MANY_CORES: usize = 1024;

pub const EXERCISES: [Exercise; 6] = [
    Exercise {
        id: "utilisation",
        title: |l| t(l, "ex.util.title"),
        generate: utilisation,
    },
    Exercise {
        id: "workers_needed",
        title: |l| t(l, "ex.workers.title"),
        generate: workers_needed,
    },
    Exercise {
        id: "epoch_time",
        title: |l| t(l, "ex.epoch.title"),
        generate: epoch_time,
    },
    Exercise {
        id: "prefetch",
        title: |l| t(l, "ex.prefetch.title"),
        generate: prefetch,
    },
    Exercise {
        id: "pinned_memory",
        title: |l| t(l, "ex.pinned.title"),
        generate: pinned,
    },
    Exercise {
        id: "find_the_bottleneck",
        title: |l| t(l, "ex.bottleneck.title"),
        generate: bottleneck,
    },
];

fn utilisation(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let tc = pick(&mut rng, &[10.0, 20.0, 25.0, 40.0]);
    // Ratios r = T_data / T_c and worker counts k where no classic mistake
    // lands on the answer: not k = 1 (one worker's), not r = k (the
    // inverted ratio), not r = k / (k − 1) (serial = one worker's).
    let (r, k) = pick(&mut rng, &[(1.5, 2), (3.0, 2), (4.0, 2), (6.0, 2), (2.0, 3), (4.0, 3), (6.0, 3), (1.5, 4), (3.0, 4), (6.0, 4), (8.0, 4)]);
    let td = tc * r;
    let answer = 100.0 * predict(costs(tc, td), k, MANY_CORES, true).utilisation;
    Task::numeric(
        TEXT.fill(lang, "ex.util.prompt", &[("tc", &tc), ("td", &td), ("k", &k)]),
        answer,
        vec![t(lang, "ex.util.hint1")],
        TEXT.fill(lang, "ex.util.explain", &[("tc", &tc), ("td", &td), ("k", &k), ("answer", &show(answer))]),
        vec![
            (100.0 * tc / td, t(lang, "ex.util.no_k")),
            (100.0 * tc / (tc + td / k as f64), t(lang, "ex.util.serial")),
            (100.0 * td / k as f64 / tc, t(lang, "ex.util.inverted")),
        ],
    )
}

fn workers_needed(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let tc = pick(&mut rng, &[8.0, 10.0, 12.0, 15.0, 20.0]);
    let td = tc * pick(&mut rng, &[2.5, 3.3, 4.5, 5.2, 6.6, 7.5]);
    let answer = knee(costs(tc, td), MANY_CORES, 64).unwrap_or(64) as f64;
    Task::numeric(
        TEXT.fill(lang, "ex.workers.prompt", &[("tc", &tc), ("td", &show(td))]),
        answer,
        vec![t(lang, "ex.workers.hint1")],
        TEXT.fill(lang, "ex.workers.explain", &[("tc", &tc), ("td", &show(td)), ("answer", &answer)]),
        vec![
            ((td / tc).floor(), t(lang, "ex.workers.floor")),
            (tc / td, t(lang, "ex.workers.inverted")),
            (answer + 1.0, t(lang, "ex.workers.extra")),
        ],
    )
}

fn epoch_time(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let images = pick(&mut rng, &[0.5e6, 1e6, 1.2e6, 2e6]);
    let ms = pick(&mut rng, &[4.0, 5.0, 8.0, 10.0]);
    let k = pick(&mut rng, &[4, 8, 16]);
    // Compute shorter than the loading spread over the workers: the
    // images are the slow part, as the title says.
    let compute = [0.2, 0.3, 0.5].into_iter().rfind(|c| *c < 0.8 * ms / k as f64).unwrap_or(0.5 * ms / k as f64);
    let answer = epoch_seconds(images, ms * 1e-3, compute * 1e-3, k);
    Task::numeric(
        TEXT.fill(lang, "ex.epoch.prompt", &[("images", &format!("{images}")), ("ms", &ms), ("k", &k), ("c", &compute)]),
        answer,
        vec![t(lang, "ex.epoch.hint1")],
        TEXT.fill(lang, "ex.epoch.explain", &[("images", &format!("{images}")), ("ms", &ms), ("k", &k), ("c", &compute), ("answer", &show(answer))]),
        vec![
            (images * ms * 1e-3, t(lang, "ex.epoch.no_k")),
            (images * (compute + ms / k as f64) * 1e-3, t(lang, "ex.epoch.serial")),
            (images * compute * 1e-3, t(lang, "ex.epoch.compute")),
        ],
    )
}

fn prefetch(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let tc = pick(&mut rng, &[10.0, 20.0, 30.0]);
    let td = tc * pick(&mut rng, &[1.25, 1.5, 2.0, 2.5]);
    let depth = pick(&mut rng, &[4, 8, 16, 32]);
    // Prefetching fills the queue once; the steady state is the model's.
    let answer = 100.0 * predict(costs(tc, td), 1, MANY_CORES, true).utilisation;
    Task::numeric(
        TEXT.fill(lang, "ex.prefetch.prompt", &[("tc", &tc), ("td", &td), ("d", &depth)]),
        answer,
        vec![t(lang, "ex.prefetch.hint1")],
        TEXT.fill(lang, "ex.prefetch.explain", &[("tc", &tc), ("td", &td), ("d", &depth), ("answer", &show(answer))]),
        vec![
            (100.0, t(lang, "ex.prefetch.hides")),
            (100.0 * tc / (tc + td), t(lang, "ex.prefetch.serial")),
        ],
    )
}

fn pinned(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let mb = pick(&mut rng, &[60.0, 120.0, 200.0, 300.0]);
    let pageable = pick(&mut rng, &[5.0, 6.0, 8.0]);
    let pinned = pageable * pick(&mut rng, &[1.5, 2.0]);
    let ms = |gbps: f64| mb / gbps;
    // Half the draws have a step shorter than the pinned copy, so the
    // copy still shows.
    let tc = (ms(pinned) * pick(&mut rng, &[0.4, 0.6, 0.8, 1.5, 2.0, 3.0]) * 10.0).round() / 10.0;
    // Pageable: the copy stops the step; pinned: it overlaps the previous
    // step's compute (non_blocking), so only what outlasts it shows.
    let before = ms(pageable) + tc;
    let after = tc.max(ms(pinned));
    let answer = before - after;
    Task::numeric(
        TEXT.fill(lang, "ex.pinned.prompt", &[("mb", &mb), ("pageable", &pageable), ("pinned", &pinned), ("tc", &tc)]),
        answer,
        vec![t(lang, "ex.pinned.hint1")],
        TEXT.fill(
            lang,
            "ex.pinned.explain",
            &[("copy1", &show(ms(pageable))), ("copy2", &show(ms(pinned))), ("tc", &tc), ("before", &show(before)), ("after", &show(after)), ("answer", &show(answer))],
        ),
        vec![
            (ms(pageable) - ms(pinned), t(lang, "ex.pinned.bandwidth")),
            (0.0, t(lang, "ex.pinned.nothing")),
            (ms(pageable), t(lang, "ex.pinned.all")),
        ],
    )
}

fn bottleneck(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let util = pick(&mut rng, &[20.0, 25.0, 40.0, 50.0, 80.0]);
    let tc = pick(&mut rng, &[10.0, 16.0, 20.0, 30.0]);
    // U = T_c / T_data with one worker and data the bound.
    let answer = tc / (util / 100.0);
    Task::numeric(
        TEXT.fill(lang, "ex.bottleneck.prompt", &[("util", &util), ("tc", &tc)]),
        answer,
        vec![t(lang, "ex.bottleneck.hint1")],
        TEXT.fill(lang, "ex.bottleneck.explain", &[("util", &util), ("tc", &tc), ("answer", &show(answer))]),
        vec![
            (tc * util / 100.0, t(lang, "ex.bottleneck.times")),
            (answer - tc, t(lang, "ex.bottleneck.idle")),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsys_core::exercise::FIRST_SEED;

    /// Over many seeds: the reference is a finite number the checker
    /// accepts, every listed mistake is rejected with its own feedback, and
    /// the numbers move with the seed.
    #[test]
    fn every_variant_has_a_real_answer_and_its_mistakes_are_caught() {
        crate::check_numeric_exercises(&EXERCISES, 2);
    }

    /// The classic wrong answers by hand: prefetching does not lift a
    /// data-bound pipeline to 100 %, and the knee is a ceiling.
    #[test]
    fn prefetch_and_the_knee_by_hand() {
        let task = prefetch(FIRST_SEED, Lang::En);
        assert!(!task.check("100").is_correct());
        let c = costs(10.0, 45.0);
        assert_eq!(knee(c, MANY_CORES, 64), Some(5), "45 / 10 rounds up");
        assert_eq!(knee(costs(10.0, 40.0), MANY_CORES, 64), Some(4));
    }
}
