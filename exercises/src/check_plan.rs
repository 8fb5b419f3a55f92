//! The checker of exercise 10, `plan_arena`: a memory plan judged by the
//! frameworks lesson's planner (`dlsys_core::compile::plan`).

use rand::{RngExt as _, SeedableRng as _, rngs::StdRng};

use crate::check::{PlanArena, call};
use crate::words::{say, sayf};

/// On hand-made and seeded random lifetime tables: an offset per buffer,
/// no two buffers live at one point sharing a byte, and an arena no larger
/// than the core's planner (greedy by size, best fit) makes.
pub fn plan_arena(f: PlanArena) -> Result<(), String> {
    use dlsys_core::compile::plan::{Buffer, plan};
    let mut tables: Vec<Vec<(u64, u32, u32)>> = vec![
        vec![],
        vec![(64, 0, 1)],
        // A chain: each freed as the next is made, all can share.
        vec![(64, 0, 1), (64, 1, 2), (64, 2, 3)],
        // One never live, one live throughout.
        vec![(128, 0, 4), (32, 3, 3), (64, 1, 2), (64, 2, 4)],
    ];
    let mut rng = StdRng::seed_from_u64(10);
    for _ in 0..300 {
        let n = rng.random_range(1..=12);
        tables.push(
            (0..n)
                .map(|_| {
                    let first = rng.random_range(0..10u32);
                    (
                        64 * rng.random_range(1..=16u64),
                        first,
                        first + rng.random_range(0..=5),
                    )
                })
                .collect(),
        );
    }
    for table in tables {
        let offsets = call(|| f(&table))?;
        let shown = table
            .iter()
            .map(|(b, s, e)| format!("({b}, {s}, {e})"))
            .collect::<Vec<_>>()
            .join(", ");
        if offsets.len() != table.len() {
            return Err(sayf(
                "c.plan.len",
                &[
                    ("table", &shown),
                    ("got", &offsets.len()),
                    ("want", &table.len()),
                ],
            ));
        }
        let live = |i: usize| table[i].1 < table[i].2;
        for i in (0..table.len()).filter(|i| live(*i)) {
            for j in (i + 1..table.len()).filter(|j| live(*j)) {
                let ((bi, si, ei), (bj, sj, ej)) = (table[i], table[j]);
                let together = si < ej && sj < ei;
                let (oi, oj) = (offsets[i], offsets[j]);
                let share = oi < oj.saturating_add(bj) && oj < oi.saturating_add(bi);
                if together && share {
                    return Err(sayf(
                        "c.plan.overlap",
                        &[
                            ("table", &shown),
                            ("a", &i),
                            ("b", &j),
                            ("point", &si.max(sj)),
                            ("ra", &format!("{oi}..{}", oi.saturating_add(bi))),
                            ("rb", &format!("{oj}..{}", oj.saturating_add(bj))),
                        ],
                    ));
                }
            }
        }
        let arena = (0..table.len())
            .filter(|i| live(*i))
            .map(|i| offsets[i].saturating_add(table[i].0))
            .max()
            .unwrap_or(0);
        let buffers: Vec<Buffer> = table
            .iter()
            .enumerate()
            .map(|(id, (bytes, first, end))| Buffer {
                id: id as u64,
                bytes: *bytes,
                first: *first,
                end: *end,
            })
            .collect();
        let best = plan(&buffers);
        if arena > best.arena {
            let why = if arena >= best.no_reuse && best.no_reuse > best.arena {
                say("c.plan.no_reuse")
            } else {
                String::new()
            };
            return Err(sayf(
                "c.plan.larger",
                &[
                    ("table", &shown),
                    ("got", &arena),
                    ("want", &best.arena),
                    ("live", &best.max_live),
                    ("why", &why),
                ],
            ));
        }
    }
    Ok(())
}
