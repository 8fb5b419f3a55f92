//! The input-pipeline lesson's exercises. Every answer comes from the
//! pipeline model of `dlsys_core::pipeline` (utilisation, the knee, the
//! epoch time) or, for pinned memory, from the overlap rule it states.

use dlsys_core::exercise::Task;
use dlsys_core::pipeline::{Costs, epoch_seconds, knee, predict};
use dlsys_core::text::Lang;

use super::TEXT;
use crate::kit::exercise_kit::{pick, show};

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

crate::exercises! {
    catalog: TEXT,
    salt: 0x9199_e11e,
    utilisation => utilisation,
    workers_needed => workers_needed,
    epoch_time => epoch_time,
    prefetch => prefetch,
    pinned_memory => pinned,
    find_the_bottleneck => bottleneck,
}

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
        TEXT.fill(lang, "ex.utilisation.prompt", &[("tc", &tc), ("td", &td), ("k", &k)]),
        answer,
        vec![t(lang, "ex.utilisation.hint1")],
        TEXT.fill(lang, "ex.utilisation.explain", &[("tc", &tc), ("td", &td), ("k", &k), ("answer", &show(answer))]),
        vec![
            (100.0 * tc / td, t(lang, "ex.utilisation.no_k")),
            (100.0 * tc / (tc + td / k as f64), t(lang, "ex.utilisation.serial")),
            (100.0 * td / k as f64 / tc, t(lang, "ex.utilisation.inverted")),
        ],
    )
}

fn workers_needed(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let tc = pick(&mut rng, &[8.0, 10.0, 12.0, 15.0, 20.0]);
    let td = tc * pick(&mut rng, &[2.5, 3.3, 4.5, 5.2, 6.6, 7.5]);
    let answer = knee(costs(tc, td), MANY_CORES, 64).unwrap_or(64) as f64;
    Task::numeric(
        TEXT.fill(lang, "ex.workers_needed.prompt", &[("tc", &tc), ("td", &show(td))]),
        answer,
        vec![t(lang, "ex.workers_needed.hint1")],
        TEXT.fill(lang, "ex.workers_needed.explain", &[("tc", &tc), ("td", &show(td)), ("answer", &answer)]),
        vec![
            ((td / tc).floor(), t(lang, "ex.workers_needed.floor")),
            (tc / td, t(lang, "ex.workers_needed.inverted")),
            (answer + 1.0, t(lang, "ex.workers_needed.extra")),
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
        TEXT.fill(lang, "ex.epoch_time.prompt", &[("images", &format!("{images}")), ("ms", &ms), ("k", &k), ("c", &compute)]),
        answer,
        vec![t(lang, "ex.epoch_time.hint1")],
        TEXT.fill(lang, "ex.epoch_time.explain", &[("images", &format!("{images}")), ("ms", &ms), ("k", &k), ("c", &compute), ("answer", &show(answer))]),
        vec![
            (images * ms * 1e-3, t(lang, "ex.epoch_time.no_k")),
            (images * (compute + ms / k as f64) * 1e-3, t(lang, "ex.epoch_time.serial")),
            (images * compute * 1e-3, t(lang, "ex.epoch_time.compute")),
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
        TEXT.fill(lang, "ex.pinned_memory.prompt", &[("mb", &mb), ("pageable", &pageable), ("pinned", &pinned), ("tc", &tc)]),
        answer,
        vec![t(lang, "ex.pinned_memory.hint1")],
        TEXT.fill(
            lang,
            "ex.pinned_memory.explain",
            &[("copy1", &show(ms(pageable))), ("copy2", &show(ms(pinned))), ("tc", &tc), ("before", &show(before)), ("after", &show(after)), ("answer", &show(answer))],
        ),
        vec![
            (ms(pageable) - ms(pinned), t(lang, "ex.pinned_memory.bandwidth")),
            (0.0, t(lang, "ex.pinned_memory.nothing")),
            (ms(pageable), t(lang, "ex.pinned_memory.all")),
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
        TEXT.fill(lang, "ex.find_the_bottleneck.prompt", &[("util", &util), ("tc", &tc)]),
        answer,
        vec![t(lang, "ex.find_the_bottleneck.hint1")],
        TEXT.fill(lang, "ex.find_the_bottleneck.explain", &[("util", &util), ("tc", &tc), ("answer", &show(answer))]),
        vec![
            (tc * util / 100.0, t(lang, "ex.find_the_bottleneck.times")),
            (answer - tc, t(lang, "ex.find_the_bottleneck.idle")),
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
        crate::check_numeric_exercises(EXERCISES, 2);
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
