//! The memory planner: a hand-made lifetime table, its bounds and its
//! safety over random ones, and the engine's own training step.

use rand::{RngExt as _, SeedableRng as _};

use super::plan::{Buffer, lifetimes, max_live, plan};

fn buffer(id: u64, bytes: u64, first: u32, end: u32) -> Buffer {
    Buffer {
        id,
        bytes,
        first,
        end,
    }
}

#[test]
fn a_small_table_is_planned_as_greedy_by_size_says() {
    // A (40 B) lives at points 0..2, B (30 B) 1..3, C (40 B) 2..4, D (10 B)
    // 3..4. Largest first: A at 0; C, as large and never live with A, at 0
    // too; B meets both, so past them at 40; D meets only C, so at 40.
    let buffers = [
        buffer(0, 40, 0, 2),
        buffer(1, 30, 1, 3),
        buffer(2, 40, 2, 4),
        buffer(3, 10, 3, 4),
    ];
    let p = plan(&buffers);
    let at = |id: u64| p.placed.iter().find(|x| x.buffer.id == id).unwrap().offset;
    assert_eq!((at(0), at(2), at(1), at(3)), (0, 0, 40, 40));
    assert_eq!((p.arena, p.max_live, p.no_reuse), (70, 70, 120));
}

#[test]
fn best_fit_takes_the_smallest_gap_that_holds_the_buffer() {
    // Five buffers laid end to end at point 0 (largest first): 50 B at 0,
    // 40 B at 50, 30 B at 90, 20 B at 120, 16 B at 140. The 40 and 20 B
    // ones die after point 0, leaving holes of 40 B (at 50) and 20 B (at
    // 120). A 15 B buffer at points 5..10 fits both: best fit takes the
    // 20 B hole, where first fit would take the 40 B one.
    let buffers = [
        buffer(0, 50, 0, 10),
        buffer(1, 40, 0, 1),
        buffer(2, 30, 0, 10),
        buffer(3, 20, 0, 1),
        buffer(4, 16, 0, 10),
        buffer(5, 15, 5, 10),
    ];
    let p = plan(&buffers);
    let at = |id: u64| p.placed.iter().find(|x| x.buffer.id == id).unwrap().offset;
    assert_eq!(
        (0..6).map(at).collect::<Vec<_>>(),
        [0, 50, 90, 120, 140, 120]
    );
    assert_eq!((p.arena, p.max_live, p.no_reuse), (156, 156, 171));
}

#[test]
fn random_lifetimes_never_share_live_bytes_and_stay_within_the_bounds() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for case in 0..200 {
        let n = rng.random_range(1..40);
        let points = rng.random_range(1..30u32);
        let buffers: Vec<Buffer> = (0..n)
            .map(|id| {
                let first = rng.random_range(0..points);
                let end = rng.random_range(first + 1..=points);
                buffer(id, rng.random_range(1..5000), first, end)
            })
            .collect();
        let p = plan(&buffers);
        assert_eq!(p.placed.len(), buffers.len());
        for (i, a) in p.placed.iter().enumerate() {
            for b in &p.placed[i + 1..] {
                let apart = a.end() <= b.offset || b.end() <= a.offset;
                assert!(
                    apart || !a.buffer.overlaps(&b.buffer),
                    "case {case}: {a:?} and {b:?} share live bytes"
                );
            }
        }
        assert!(
            p.max_live <= p.arena && p.arena <= p.no_reuse,
            "case {case}: {p:?}"
        );
    }
}

#[test]
fn the_engines_training_step_plans_below_its_sum_and_at_least_its_peak() {
    use crate::memory::measure::measure_step;
    use crate::memory::mlp::MlpSettings;
    let measured = measure_step(&MlpSettings::default().shape().unwrap()).unwrap();
    let buffers = lifetimes(&measured.events, measured.timeline.len() as u32);
    // The trace's own peak is the most live at once.
    assert_eq!(max_live(&buffers), measured.peak);
    let p = plan(&buffers);
    assert!(p.max_live <= p.arena && p.arena < p.no_reuse, "{p:?}");
}

#[test]
fn a_step_s_memory_three_ways_and_out_of_memory_with_memory_free() {
    use super::step::{StepSettings, fragmented, step_memory};
    use crate::memory::MemoryError;
    let m = step_memory(&StepSettings::default()).unwrap();
    assert!(m.plan.max_live <= m.plan.arena && m.plan.arena < m.plan.no_reuse);
    // The allocator holds at least what the step holds, rounded and cached.
    assert!(m.allocator.oom.is_none());
    assert!(m.allocator.stats.peak_allocated >= m.plan.max_live);
    assert!(m.allocator.stats.peak_reserved >= m.allocator.stats.peak_allocated);
    assert!(m.arena_ratio() >= 1.0 && m.reserved_ratio() >= 1.0);
    // On a device smaller than the step's peak the allocator runs out.
    let small = StepSettings {
        device_mib: 1,
        ..StepSettings::default()
    };
    assert!(step_memory(&small).unwrap().allocator.oom.is_some());
    assert!(matches!(
        step_memory(&StepSettings {
            device_mib: 0,
            ..StepSettings::default()
        }),
        Err(MemoryError::DeviceMib { .. })
    ));
    // The CNN and the transformer too.
    use super::step::StepModel;
    for model in [StepModel::Cnn, StepModel::Transformer] {
        let mut s = StepSettings {
            model,
            ..StepSettings::default()
        };
        s.mlp.batch = 4;
        let m = step_memory(&s).unwrap();
        assert!(m.buffers > 10, "{model:?}");
        assert!(
            m.plan.max_live <= m.plan.arena && m.plan.arena < m.plan.no_reuse,
            "{model:?}"
        );
    }
    let f = fragmented().expect("the request fails");
    assert!(f.cached_free > f.oom.rounded && f.oom.largest_free < f.oom.rounded);
    assert_eq!(f.segments, 3);
}
