//! The lesson's exercises, each answer computed from its drawn numbers the
//! way the lesson computes them (FLOPs 2·M·N·K, bytes from the shapes, the
//! roofline's min, tiles re-read per tile of the other matrix).

use dlsys_core::exercise::{AnswerChecker, AnswerKind, Mistake, Task};
use dlsys_core::float::show_sig;
use dlsys_core::kernels::sectors::{SECTOR_BYTES, useful_share};
use dlsys_core::text::Lang;
use rand::RngExt as _;

use super::TEXT;
use crate::kit::exercise_kit::{pick, show};

crate::exercises! {
    catalog: TEXT,
    salt: 0x6e33_f051,
    gemm_flops => gemm_flops,
    gemm_intensity => gemm_intensity,
    tiled_bytes => tiled_bytes,
    attainable => attainable,
    fusion_saves => fusion_saves,
    elementwise_time => elementwise_time,
    gemm_time => gemm_time,
    coalescing => coalescing,
    shared_footprint => shared_footprint,
}

/// A GEMM shape drawn so M, N and K differ (a swapped role shows).
fn shape(rng: &mut rand::rngs::StdRng) -> (f64, f64, f64) {
    let sizes = [256.0, 512.0, 768.0, 1024.0, 1536.0, 2048.0, 4096.0];
    let m = pick(rng, &sizes);
    let mut n = pick(rng, &sizes);
    while n == m {
        n = pick(rng, &sizes);
    }
    let mut k = pick(rng, &sizes);
    while k == m || k == n {
        k = pick(rng, &sizes);
    }
    (m, n, k)
}

fn gemm_flops(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let (m, n, k) = shape(&mut rng);
    let answer = 2.0 * m * n * k / 1e9;
    Task::numeric(
        TEXT.fill(lang, "ex.gemm_flops.prompt", &[("m", &m), ("n", &n), ("k", &k)]),
        answer,
        vec![t(lang, "ex.gemm_flops.hint1")],
        TEXT.fill(lang, "ex.gemm_flops.explain", &[("m", &m), ("n", &n), ("k", &k), ("answer", &show(answer))]),
        vec![
            (m * n * k / 1e9, t(lang, "ex.gemm_flops.no_two")),
            (2.0 * m * n / 1e9, t(lang, "ex.gemm_flops.no_k")),
            (2.0 * m * n * k / 1e6, t(lang, "ex.gemm_flops.units")),
        ],
    )
}

fn gemm_intensity(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let (m, n, k) = shape(&mut rng);
    let (format, bytes) = pick(&mut rng, &[("fp32", 4.0), ("fp16", 2.0), ("bf16", 2.0)]);
    let flops = 2.0 * m * n * k;
    let answer = flops / (bytes * (m * k + k * n + m * n));
    Task::numeric(
        TEXT.fill(lang, "ex.gemm_intensity.prompt", &[("m", &m), ("n", &n), ("k", &k), ("format", &format)]),
        answer,
        vec![t(lang, "ex.gemm_intensity.hint1"), TEXT.fill(lang, "ex.gemm_intensity.hint2", &[("bytes", &bytes)])],
        TEXT.fill(lang, "ex.gemm_intensity.explain", &[("flops", &show(flops)), ("bytes", &bytes), ("answer", &show(answer))]),
        vec![
            (flops / (bytes * (m * k + k * n)), t(lang, "ex.gemm_intensity.no_c")),
            (flops / (4.0 * (m * k + k * n + m * n)), t(lang, "ex.gemm_intensity.fp32_bytes")),
            (m * n * k / (bytes * (m * k + k * n + m * n)), t(lang, "ex.gemm_intensity.no_two")),
        ],
    )
}

fn tiled_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let (m, n, k) = shape(&mut rng);
    let tile = pick(&mut rng, &[16.0, 32.0, 64.0, 128.0]);
    // Each of the N/T columns of tiles reads all of A; each of the M/T rows all of B.
    let answer = 4.0 * (m * k * (n / tile) + k * n * (m / tile)) / 1e6;
    Task::numeric(
        TEXT.fill(lang, "ex.tiled_bytes.prompt", &[("m", &m), ("n", &n), ("k", &k), ("t", &tile)]),
        answer,
        vec![t(lang, "ex.tiled_bytes.hint1"), t(lang, "ex.tiled_bytes.hint2")],
        TEXT.fill(lang, "ex.tiled_bytes.explain", &[("m", &m), ("n", &n), ("k", &k), ("t", &tile), ("answer", &show(answer))]),
        vec![
            (4.0 * (m * k + k * n) / 1e6, t(lang, "ex.tiled_bytes.once")),
            (8.0 * m * n * k / 1e6, t(lang, "ex.tiled_bytes.naive")),
            (4.0 * (m * k * (m / tile) + k * n * (n / tile)) / 1e6, t(lang, "ex.tiled_bytes.swapped")),
        ],
    )
}

fn attainable(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let peak: f64 = pick(&mut rng, &[19.5, 60.0, 67.0, 312.0, 989.0]);
    let bw = pick(&mut rng, &[0.9, 1.5, 2.0, 3.35, 4.8]);
    // A GEMM of N × N × N in fp16, each matrix moved once: intensity N/3.
    let size: f64 = pick(&mut rng, &[64.0, 128.0, 256.0, 512.0, 1024.0, 4096.0, 8192.0]);
    let ai = 2.0 * size.powi(3) / (2.0 * 3.0 * size * size);
    let roofline = dlsys_core::kernels::Roofline { peak, bandwidth: bw };
    let (memory, answer) = (roofline.memory_roof(ai), roofline.attainable(ai));
    let (wrong, wrong_key) = if roofline.is_memory_bound(ai) {
        (peak, "ex.attainable.assumed_compute")
    } else {
        (memory, "ex.attainable.past_roof")
    };
    Task::numeric(
        TEXT.fill(lang, "ex.attainable.prompt", &[("peak", &peak), ("bw", &bw), ("n", &size)]),
        answer,
        vec![t(lang, "ex.attainable.hint1"), t(lang, "ex.attainable.hint2")],
        TEXT.fill(lang, "ex.attainable.explain", &[("ai", &show(ai)), ("bw", &bw), ("memory", &show(memory)), ("peak", &peak), ("answer", &show(answer))]),
        vec![
            (wrong, t(lang, wrong_key)),
            (peak + memory, t(lang, "ex.attainable.sum")),
            (roofline.attainable(size / 6.0), t(lang, "ex.attainable.fp32")),
            (answer * 1e3, t(lang, "ex.attainable.units")),
        ],
    )
}

fn fusion_saves(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let millions = pick(&mut rng, &[1.0, 4.0, 8.0, 16.0, 32.0, 64.0]);
    let ops = pick(&mut rng, &[2.0, 3.0, 4.0, 5.0]);
    let n = millions * 1e6;
    // k kernels each read and write N fp32; fused: one read, one write.
    let answer = 8.0 * n * (ops - 1.0) / 1e6;
    Task::numeric(
        TEXT.fill(lang, "ex.fusion_saves.prompt", &[("n", &millions), ("k", &ops)]),
        answer,
        vec![t(lang, "ex.fusion_saves.hint1")],
        TEXT.fill(lang, "ex.fusion_saves.explain", &[("n", &millions), ("k", &ops), ("answer", &show(answer))]),
        vec![
            (4.0 * n * (ops - 1.0) / 1e6, t(lang, "ex.fusion_saves.reads_only")),
            (8.0 * n * ops / 1e6, t(lang, "ex.fusion_saves.all")),
            (8.0 * n * (ops - 1.0) / 1048576.0, t(lang, "ex.fusion_saves.mib")),
        ],
    )
}

fn elementwise_time(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let millions = pick(&mut rng, &[16.0, 32.0, 64.0, 128.0, 256.0]);
    let (format, bytes) = pick(&mut rng, &[("fp32", 4.0), ("fp16", 2.0)]);
    let gbs = pick(&mut rng, &[900.0, 1555.0, 2039.0, 3350.0]);
    let moved = 2.0 * millions * 1e6 * bytes;
    let answer = moved / (gbs * 1e9) * 1e3;
    Task::numeric(
        TEXT.fill(lang, "ex.elementwise_time.prompt", &[("n", &millions), ("format", &format), ("gbs", &gbs)]),
        answer,
        vec![t(lang, "ex.elementwise_time.hint1")],
        TEXT.fill(lang, "ex.elementwise_time.explain", &[("mb", &show(moved / 1e6)), ("gbs", &gbs), ("answer", &show(answer))]),
        vec![
            (answer / 2.0, t(lang, "ex.elementwise_time.read_only")),
            (answer * 1e9 / 1_073_741_824.0, t(lang, "ex.elementwise_time.gib")),
            (answer * 4.0 / bytes, t(lang, "ex.elementwise_time.fp32")),
        ],
    )
}

fn gemm_time(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let (m, n, k) = shape(&mut rng);
    let peak = pick(&mut rng, &[19.5, 60.0, 156.0]);
    let gbs = pick(&mut rng, &[900.0, 1555.0, 2039.0, 3350.0]);
    let flops = 2.0 * m * n * k;
    let bytes = 4.0 * (m * k + k * n + m * n);
    let (compute, memory) = (flops / (peak * 1e12) * 1e3, bytes / (gbs * 1e9) * 1e3);
    let answer = compute.max(memory);
    Task::numeric(
        TEXT.fill(lang, "ex.gemm_time.prompt", &[("m", &m), ("n", &n), ("k", &k), ("peak", &peak), ("gbs", &gbs)]),
        answer,
        vec![t(lang, "ex.gemm_time.hint1")],
        TEXT.fill(lang, "ex.gemm_time.explain", &[("compute", &show(compute)), ("memory", &show(memory)), ("answer", &show(answer))]),
        vec![
            (compute + memory, t(lang, "ex.gemm_time.sum")),
            (compute.min(memory), t(lang, "ex.gemm_time.min")),
            ((flops / 2.0 / (peak * 1e12) * 1e3).max(memory), t(lang, "ex.gemm_time.no_two")),
        ],
    )
}

/// Which of four access patterns of a warp (subgroup) coalesces: the
/// contiguous one, among a strided, a column-of-row-major and a gathered
/// one; the numbers and the options' order drawn.
fn coalescing(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    // Rows of whole 128-byte lines, so the contiguous read never straddles
    // two lines (a stride of 2 would then tie with it).
    let cols = pick(&mut rng, &[256, 512, 1024, 2048, 4096]);
    let stride = pick(&mut rng, &[2, 4, 8, 16, 32]);
    let row = rng.random_range(1..64);
    let share = show_sig(useful_share(stride, 4, SECTOR_BYTES), 3);
    let patterns = [
        ("ex.coalescing.contiguous", TEXT.fill(lang, "ex.coalescing.contiguous", &[("cols", &cols), ("row", &row)])),
        ("ex.coalescing.column", TEXT.fill(lang, "ex.coalescing.column", &[("cols", &cols), ("row", &row)])),
        ("ex.coalescing.strided", TEXT.fill(lang, "ex.coalescing.strided", &[("s", &stride)])),
        ("ex.coalescing.gather", t(lang, "ex.coalescing.gather")),
    ];
    let mut order: Vec<usize> = (0..4).collect();
    for i in (1..4).rev() {
        let j = rng.random_range(0..=i);
        order.swap(i, j);
    }
    let options: Vec<String> = order.iter().map(|i| patterns[*i].1.clone()).collect();
    let correct = order.iter().position(|i| *i == 0).unwrap_or(0);
    let mistakes = order
        .iter()
        .enumerate()
        .filter(|(_, i)| **i != 0)
        .map(|(at, i)| Mistake {
            answer: (at + 1).to_string(),
            feedback: TEXT.fill(
                lang,
                &format!("{}_why", patterns[*i].0),
                &[("cols", &cols), ("s", &stride), ("share", &share)],
            ),
        })
        .collect();
    Task {
        prompt: TEXT.fill(lang, "ex.coalescing.prompt", &[("cols", &cols), ("row", &row)]),
        kind: AnswerKind::Choice { options },
        checker: AnswerChecker::Choice { correct },
        hints: vec![t(lang, "ex.coalescing.hint1")],
        explanation: TEXT.fill(lang, "ex.coalescing.explain", &[("cols", &cols)]),
        reference: (correct + 1).to_string(),
        mistakes,
    }
}

fn shared_footprint(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let tile = pick(&mut rng, &[32.0, 64.0, 128.0, 256.0]);
    let depth = pick(&mut rng, &[8.0, 16.0, 32.0]);
    let (format, bytes) = pick(&mut rng, &[("fp32", 4.0), ("fp16", 2.0)]);
    let answer = 2.0 * tile * depth * bytes / 1024.0;
    Task::numeric(
        TEXT.fill(lang, "ex.shared_footprint.prompt", &[("t", &tile), ("d", &depth), ("format", &format)]),
        answer,
        vec![t(lang, "ex.shared_footprint.hint1")],
        TEXT.fill(lang, "ex.shared_footprint.explain", &[("t", &tile), ("d", &depth), ("bytes", &bytes), ("answer", &show(answer))]),
        vec![
            (answer / 2.0, t(lang, "ex.shared_footprint.one_tile")),
            (2.0 * tile * tile * bytes / 1024.0, t(lang, "ex.shared_footprint.square")),
            (2.0 * tile * depth * bytes / 1000.0, t(lang, "ex.shared_footprint.kb")),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsys_core::exercise::{Exercise, FIRST_SEED};

    #[test]
    fn every_numeric_variant_has_a_real_answer_and_its_mistakes_are_caught() {
        let numeric: Vec<Exercise> = EXERCISES
            .iter()
            .copied()
            .filter(|e| e.id != "coalescing")
            .collect();
        crate::check_numeric_exercises(&numeric, 2);
    }

    #[test]
    fn classic_mistakes_by_hand() {
        // 1024 × 512 by 256: 2·M·N·K = 0.268 GFLOP; forgetting the 2 is caught.
        let task = gemm_flops(FIRST_SEED, Lang::En);
        assert!(task.mistakes.iter().any(|m| m.feedback == t(Lang::En, "ex.gemm_flops.no_two")));
        // The coalescing exercise: the contiguous pattern is right wherever it lands.
        let mut seed = FIRST_SEED;
        let mut positions = std::collections::BTreeSet::new();
        for _ in 0..20 {
            let task = coalescing(seed, Lang::En);
            let AnswerChecker::Choice { correct } = task.checker else {
                panic!("a choice")
            };
            positions.insert(correct);
            assert!(task.check(&(correct + 1).to_string()).is_correct());
            assert_eq!(task.mistakes.len(), 3);
            seed = dlsys_core::exercise::next_seed(seed);
        }
        assert!(positions.len() >= 3);
    }
}
