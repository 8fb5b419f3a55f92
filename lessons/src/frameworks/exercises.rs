//! The frameworks lesson's exercises. Every answer comes from the cores:
//! the caching allocator's rounding and segment rules and its free blocks
//! (`dlsys_core::compile::allocator`), max-live over a lifetime table
//! (`dlsys_core::compile::plan`), a chain's traffic fused and unfused
//! (`dlsys_core::compile::chain`), a captured step's guards
//! (`dlsys_core::compile::capture`) and its matmuls through the selection
//! cache (`dlsys_core::compile::dispatch`).

use dlsys_core::compile::allocator::{
    CachingAllocator, Pool, pool_of, round_size, segment_size, should_split,
};
use dlsys_core::compile::capture::{CaptureError, capture};
use dlsys_core::compile::chain::{Chain, ChainOp, Extra};
use dlsys_core::compile::dispatch::{Mode, Registry, Selector, calls};
use dlsys_core::compile::plan::{Buffer, max_live, plan};
use dlsys_core::nn::{Activation, Mlp};
use dlsys_core::kernels::{DeviceLimits, FusionKind, Kernel, Problem, plan as plan_kernel};
use dlsys_core::exercise::{AnswerChecker, Mistake, Task};
use dlsys_core::text::Lang;
use rand::RngExt as _;

use super::TEXT;
use crate::kit::exercise_kit::{catalog_choice, choice_task, pick, show};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

crate::exercises! {
    catalog: TEXT,
    salt: 0xf4a3_c011,
    allocated_bytes => allocated_bytes,
    reserved_segment => reserved_segment,
    max_live_table => max_live_table,
    largest_cached => largest_cached,
    planned_arena => planned_arena,
    reserved_after => reserved_after,
    fused_bytes => fused_bytes,
    out_of_memory_why => out_of_memory_why,
    chain_bytes => chain_bytes,
    which_guard => which_guard,
    bench_timings => bench_timings,
}

fn allocated_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    // Three requests, each a few bytes past (or short of) a 512 B unit.
    let sizes: Vec<u64> = (0..3)
        .map(|_| pick(&mut rng, &[1, 4, 10, 100, 250]) * 512 + pick(&mut rng, &[1, 12, 100, 300, 511]))
        .collect();
    let list = sizes.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    let answer: u64 = sizes.iter().map(|b| round_size(*b)).sum();
    let raw: u64 = sizes.iter().sum();
    // Exact: the raw sum may be a byte from the answer, which a relative
    // tolerance would pass.
    let mut task = Task::numeric(
        TEXT.fill(lang, "ex.allocated_bytes.prompt", &[("sizes", &list)]),
        answer as f64,
        vec![t(lang, "ex.allocated_bytes.hint1")],
        TEXT.fill(lang, "ex.allocated_bytes.explain", &[("sizes", &list), ("answer", &answer)]),
        Vec::new(),
    );
    task.checker = AnswerChecker::Number {
        expected: answer as f64,
        abs_tol: 0.0,
        rel_tol: 0.0,
    };
    task.reference = answer.to_string();
    task.mistakes = [
        (raw, t(lang, "ex.allocated_bytes.raw")),
        (segment_size(512), t(lang, "ex.allocated_bytes.reserved")),
    ]
    .into_iter()
    .map(|(value, feedback)| Mistake {
        answer: value.to_string(),
        feedback,
    })
    .collect();
    task
}

fn reserved_segment(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    // In MiB: a small request, one under 10 MiB, one past it.
    let mib = pick(&mut rng, &[0.25, 0.5, 1.5, 3.0, 7.0, 9.5, 11.0, 13.0, 25.0, 33.0]);
    let bytes = (mib * MIB as f64) as u64 + pick(&mut rng, &[0, 100, 4 * KIB]);
    let rounded = round_size(bytes);
    let segment = segment_size(rounded);
    let answer = segment as f64 / MIB as f64;
    let request = show(bytes as f64 / MIB as f64);
    // The rounded request is what memory_allocated counts only when the
    // segment is split; past 10 MiB the segment is the request rounded up
    // to 2 MiB and the whole of it is handed out.
    let split = should_split(pool_of(rounded), segment - rounded);
    Task::numeric(
        TEXT.fill(lang, "ex.reserved_segment.prompt", &[("request", &request)]),
        answer,
        vec![t(lang, "ex.reserved_segment.hint1")],
        TEXT.fill(lang, "ex.reserved_segment.explain", &[("request", &request), ("answer", &show(answer))]),
        vec![
            (
                (rounded as f64 / MIB as f64 * 1000.0).round() / 1000.0,
                t(lang, if split { "ex.reserved_segment.request" } else { "ex.reserved_segment.not_rounded" }),
            ),
            (if answer == 20.0 { 2.0 } else { 20.0 }, t(lang, "ex.reserved_segment.other_pool")),
        ],
    )
}

/// The buffers' names in a prompt.
const NAMES: [&str; 4] = ["A", "B", "C", "D"];

/// Four buffers over points 0..5, each living at least one point, and the
/// table a prompt shows (sizes in MB, points inclusive).
fn lifetime_table(rng: &mut rand::rngs::StdRng) -> (Vec<Buffer>, String) {
    let buffers: Vec<Buffer> = (0..4)
        .map(|id| {
            let first = rng.random_range(0..4u32);
            let end = rng.random_range(first + 1..=5);
            Buffer {
                id,
                bytes: pick(rng, &[10, 20, 30, 40, 50]),
                first,
                end,
            }
        })
        .collect();
    let table = table_text(&buffers);
    (buffers, table)
}

/// The prompt's table: `A = 10 MB @ 0–2; …` (points inclusive).
fn table_text(buffers: &[Buffer]) -> String {
    buffers
        .iter()
        .zip(NAMES)
        .map(|(b, n)| format!("{n} = {} MB @ {}–{}", b.bytes, b.first, b.end - 1))
        .collect::<Vec<_>>()
        .join("; ")
}

fn max_live_table(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let (buffers, table) = lifetime_table(&mut rng);
    let answer = max_live(&buffers) as f64;
    let sum: u64 = buffers.iter().map(|b| b.bytes).sum();
    let largest = buffers.iter().map(|b| b.bytes).max().unwrap_or(0);
    let mut mistakes = vec![(sum as f64, t(lang, "ex.max_live_table.sum"))];
    if (largest as f64) < answer {
        mistakes.push((largest as f64, t(lang, "ex.max_live_table.largest")));
    }
    Task::numeric(
        TEXT.fill(lang, "ex.max_live_table.prompt", &[("table", &table)]),
        answer,
        vec![t(lang, "ex.max_live_table.hint1")],
        TEXT.fill(lang, "ex.max_live_table.explain", &[("answer", &answer)]),
        mistakes,
    )
}

fn planned_arena(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    // A table where the planner reuses something (else laying the buffers
    // side by side would be the answer, and no mistake would be left).
    let (table, p) = std::iter::repeat_with(|| {
        let (buffers, table) = lifetime_table(&mut rng);
        (table, plan(&buffers))
    })
    .take(100)
    .find(|(_, p)| p.arena < p.no_reuse)
    .unwrap_or_else(|| {
        let buffers = [(0, 50, 0, 2), (1, 40, 1, 3), (2, 30, 3, 5), (3, 20, 0, 1)]
            .map(|(id, bytes, first, end)| Buffer { id, bytes, first, end })
            .to_vec();
        (table_text(&buffers), plan(&buffers))
    });
    let answer = p.arena as f64;
    let places = p
        .placed
        .iter()
        .map(|x| format!("{}@{}", NAMES[x.buffer.id as usize], x.offset))
        .collect::<Vec<_>>()
        .join(", ");
    Task::numeric(
        TEXT.fill(lang, "ex.planned_arena.prompt", &[("table", &table)]),
        answer,
        vec![t(lang, "ex.planned_arena.hint1")],
        TEXT.fill(lang, "ex.planned_arena.explain", &[("places", &places), ("answer", &answer)]),
        vec![(p.no_reuse as f64, t(lang, "ex.planned_arena.no_reuse"))],
    )
}

fn reserved_after(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    // Three tensors in MiB (a small one among them), the first freed,
    // then a fourth: what the device has given the allocator by then.
    let sizes: Vec<f64> = (0..4).map(|_| pick(&mut rng, &[0.5, 1.5, 4.0, 6.0, 12.0, 15.0])).collect();
    let bytes = |mib: f64| (mib * MIB as f64) as u64;
    let mut alloc = CachingAllocator::new(u64::MAX / 2);
    let mut held = Vec::new();
    for &mib in &sizes[..3] {
        held.extend(alloc.malloc(bytes(mib)).ok());
    }
    if let Some(first) = held.first() {
        alloc.free(*first);
    }
    let _ = alloc.malloc(bytes(sizes[3]));
    let answer = alloc.reserved() as f64 / MIB as f64;
    let rounded_live: f64 = sizes[1..].iter().sum();
    let every_segment: f64 = sizes.iter().map(|&m| segment_size(round_size(bytes(m))) as f64 / MIB as f64).sum();
    let list = |xs: &[f64]| xs.iter().map(|x| show(*x)).collect::<Vec<_>>().join(", ");
    Task::numeric(
        TEXT.fill(lang, "ex.reserved_after.prompt", &[("first", &list(&sizes[..3])), ("last", &show(sizes[3]))]),
        answer,
        vec![t(lang, "ex.reserved_after.hint1")],
        TEXT.fill(lang, "ex.reserved_after.explain", &[("answer", &show(answer))]),
        vec![
            (rounded_live, t(lang, "ex.reserved_after.live")),
            (every_segment, t(lang, "ex.reserved_after.no_reuse")),
        ],
    )
}

fn fused_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let rows = pick(&mut rng, &[256, 512, 1024, 4096]);
    let cols = pick(&mut rng, &[768, 1024, 2048, 4096]);
    let problem = Problem { rows, cols, k: 0 };
    let bytes = |kind| {
        plan_kernel(Kernel::Fusion(kind), problem, DeviceLimits::TYPICAL)
            .map(|(_, t)| (t.bytes_read + t.bytes_written) as f64 / 1e6)
            .unwrap_or(f64::NAN)
    };
    let (unfused, fused) = (bytes(FusionKind::GeluUnfused), bytes(FusionKind::GeluFused));
    let answer = unfused - fused;
    Task::numeric(
        TEXT.fill(lang, "ex.fused_bytes.prompt", &[("rows", &rows), ("cols", &cols)]),
        answer,
        vec![t(lang, "ex.fused_bytes.hint1")],
        TEXT.fill(lang, "ex.fused_bytes.explain", &[("unfused", &show(unfused)), ("fused", &show(fused)), ("answer", &show(answer))]),
        vec![
            (unfused, t(lang, "ex.fused_bytes.unfused")),
            (fused, t(lang, "ex.fused_bytes.fused")),
            (answer / 2.0, t(lang, "ex.fused_bytes.writes")),
        ],
    )
}

fn out_of_memory_why(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let request = pick(&mut rng, &[2, 3, 5, 6]);
    let free = request + pick(&mut rng, &[1, 2, 3]);
    let options = ["right", "never_reused", "other_process", "power_of_two"];
    let args: [(&str, &dyn std::fmt::Display); 2] = [("request", &request), ("free", &free)];
    catalog_choice(&TEXT, lang, "out_of_memory_why", seed, &options, &args)
}

fn largest_cached(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let tensor = pick(&mut rng, &[3, 4, 5, 6]) * MIB;
    let segments = pick(&mut rng, &[2, 3, 4]);
    // Each 20 MiB segment: three tensors from its start and its tail held
    // by a placeholder (so the next tensors open a new segment), then the
    // placeholders and the middle tensors freed.
    let tail = 20 * MIB - 3 * tensor;
    let mut alloc = CachingAllocator::new(u64::MAX / 2);
    let mut freed = Vec::new();
    for _ in 0..segments {
        let held: Vec<_> = [tensor, tensor, tensor, tail].iter().filter_map(|b| alloc.malloc(*b).ok()).collect();
        freed.extend([held.get(1).copied(), held.get(3).copied()].into_iter().flatten());
    }
    for h in freed {
        alloc.free(h);
    }
    let answer = alloc.largest_free(Pool::Large) as f64 / MIB as f64;
    let free = (alloc.reserved() - alloc.allocated()) as f64 / MIB as f64;
    let t_mib = tensor / MIB;
    Task::numeric(
        TEXT.fill(lang, "ex.largest_cached.prompt", &[("segments", &segments), ("tensor", &t_mib)]),
        answer,
        vec![t(lang, "ex.largest_cached.hint1")],
        TEXT.fill(lang, "ex.largest_cached.explain", &[("tensor", &t_mib), ("tail", &(tail / MIB)), ("answer", &show(answer))]),
        vec![
            (free, t(lang, "ex.largest_cached.total")),
            ((tensor + tail) as f64 / MIB as f64, t(lang, "ex.largest_cached.merged")),
            (20.0, t(lang, "ex.largest_cached.segment")),
        ],
    )
}

fn chain_bytes(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    // A bias add, then two to four unary ops (no extra inputs).
    let unary = [ChainOp::Relu, ChainOp::Gelu, ChainOp::Tanh, ChainOp::Scale(0.5), ChainOp::Exp];
    let count = rng.random_range(2..=4);
    let mut ops = vec![ChainOp::Add(0)];
    ops.extend((0..count).map(|_| unary[rng.random_range(0..unary.len())]));
    let chain = Chain {
        extras: vec![Extra::Row],
        ops,
    };
    let rows = pick(&mut rng, &[64, 256, 1024]);
    let cols = pick(&mut rng, &[1024, 2048, 4096]);
    let n = rows * cols;
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let (unfused, fused) = (mb(chain.unfused_traffic(n).bytes()), mb(chain.fused_traffic(n).bytes()));
    let answer = unfused - fused;
    let names: Vec<&str> = chain.ops.iter().map(ChainOp::key).collect();
    let ops = names.join(" → ");
    // Forgetting the writes: only the reloads of the intermediates saved.
    let reads_only = mb(4 * n as u64 * (chain.ops.len() as u64 - 1));
    Task::numeric(
        TEXT.fill(lang, "ex.chain_bytes.prompt", &[("ops", &ops), ("rows", &rows), ("cols", &cols)]),
        answer,
        vec![t(lang, "ex.chain_bytes.hint1")],
        TEXT.fill(
            lang,
            "ex.chain_bytes.explain",
            &[("unfused", &show(unfused)), ("fused", &show(fused)), ("answer", &show(answer))],
        ),
        vec![
            (unfused, t(lang, "ex.chain_bytes.unfused")),
            (fused, t(lang, "ex.chain_bytes.fused")),
            (reads_only, t(lang, "ex.chain_bytes.reads")),
        ],
    )
}

/// What a call does to a captured graph: the keys of the options.
const GUARD_OUTCOMES: [&str; 4] = ["replays", "data", "weight", "labels"];

fn which_guard(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    let (features, hidden, classes) = (pick(&mut rng, &[8, 12, 16]), 6, 3);
    let batch = pick(&mut rng, &[8, 16, 32]);
    let symbolic = rng.random_bool(0.5);
    let mlp = Mlp::<f32>::new(&[features, hidden, classes], Activation::Relu, seed).ok();
    // The call: another batch, a wider input by mistake, or a model with a
    // wider hidden layer.
    let change = rng.random_range(0..3);
    let (rows, width, width_h) = match change {
        0 => (batch * 2, features, hidden),
        1 => (batch, features + 4, hidden),
        _ => (batch, features, hidden + 2),
    };
    // The guards of a capture at `batch`, asked about the call's shapes.
    let outcome = mlp
        .and_then(|mlp| {
            let x = vec![0.5; batch * features];
            let y = vec![0; batch];
            let step = mlp.step(&x, &y);
            let ir = capture(&step.graph, step.loss, &step.params, step.data, symbolic).ok()?;
            let shapes: Vec<Vec<usize>> = vec![
                vec![features, width_h],
                vec![width_h],
                vec![width_h, classes],
                vec![classes],
                vec![rows, width],
            ];
            let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
            Some(match ir.check(&refs) {
                Ok(()) => "replays",
                Err(CaptureError::Guard { input, .. }) if input == "x" => "data",
                Err(_) => "weight",
            })
        })
        .unwrap_or("weight");
    let how = t(lang, if symbolic { "ex.which_guard.symbolic" } else { "ex.which_guard.static" });
    let what = TEXT.fill(
        lang,
        &format!("ex.which_guard.change{change}"),
        &[("rows", &rows), ("width", &width), ("hidden", &width_h)],
    );
    let fill = |key: &str| TEXT.fill(lang, key, &[("batch", &batch), ("features", &features), ("hidden", &hidden)]);
    let mut options: Vec<String> = vec![fill(&format!("ex.which_guard.{outcome}"))];
    options.extend(
        GUARD_OUTCOMES
            .iter()
            .filter(|o| **o != outcome)
            .map(|o| fill(&format!("ex.which_guard.{o}"))),
    );
    choice_task(
        seed,
        TEXT.fill(
            lang,
            "ex.which_guard.prompt",
            &[("batch", &batch), ("features", &features), ("hidden", &hidden), ("how", &how), ("what", &what)],
        ),
        options,
        vec![t(lang, "ex.which_guard.hint1")],
        fill(&format!("ex.which_guard.why_{outcome}")),
        &t(lang, "ex.which_guard.wrong"),
    )
}

fn bench_timings(seed: u64, lang: Lang) -> Task {
    let mut rng = rng(seed);
    // Hidden layers as wide as the input half the time: repeated shapes.
    let features = pick(&mut rng, &[32, 64, 128]);
    let hidden = if rng.random_bool(0.5) { features } else { pick(&mut rng, &[48, 96]) };
    let (batch, classes) = (pick(&mut rng, &[16, 32, 64]), 10);
    let sizes = [features, hidden, hidden, classes];
    let step_calls = Mlp::<f32>::new(&sizes, Activation::Relu, seed)
        .ok()
        .and_then(|mlp| {
            let x = vec![0.5; batch * features];
            let step = mlp.step(&x, &vec![0; batch]);
            let ir = capture(&step.graph, step.loss, &step.params, step.data, false).ok()?;
            let shapes = ir.guards.shapes.clone();
            let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
            Some(calls(&ir, &ir.shapes(&refs)))
        })
        .unwrap_or_default();
    // Two steps through the selection cache, counting the timings.
    let candidates = Registry::new(&[]).matmul();
    let (mut selector, mut timed) = (Selector::default(), 0);
    for _ in 0..2 {
        for call in &step_calls {
            selector.select(Mode::Bench, &candidates, *call, |_, _| {
                timed += 1;
                Some(1.0)
            });
        }
    }
    let list: Vec<String> = step_calls
        .iter()
        .map(|c| format!("{c} {}", c.layout()))
        .collect();
    let (n, k) = (step_calls.len() as f64, candidates.len() as f64);
    let distinct = selector.misses as f64;
    let sizes = sizes.map(|s| s.to_string()).join("-");
    Task::numeric(
        TEXT.fill(
            lang,
            "ex.bench_timings.prompt",
            &[("sizes", &sizes), ("batch", &batch), ("calls", &list.join(", ")), ("k", &k)],
        ),
        timed as f64,
        vec![t(lang, "ex.bench_timings.hint1")],
        TEXT.fill(
            lang,
            "ex.bench_timings.explain",
            &[("distinct", &distinct), ("k", &k), ("answer", &timed), ("n", &n)],
        ),
        vec![
            (n * k, t(lang, "ex.bench_timings.every_call")),
            (2.0 * n * k, t(lang, "ex.bench_timings.every_step")),
            (2.0 * distinct * k, t(lang, "ex.bench_timings.second_step")),
            (distinct, t(lang, "ex.bench_timings.no_candidates")),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_a_real_answer_and_its_mistakes_are_caught() {
        crate::check_numeric_exercises(EXERCISES, 1);
    }
}
