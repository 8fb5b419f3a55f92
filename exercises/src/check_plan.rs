//! The checkers of exercises 10 and 11, `plan_arena` and `liveness`: a
//! memory plan judged by the frameworks lesson's planner
//! (`dlsys_core::compile::plan`), and buffers' lifetimes by its liveness
//! analysis.

use rand::{RngExt as _, SeedableRng as _, rngs::StdRng};

use crate::check::{Liveness, PlanArena, call};
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

/// On hand-made and seeded random graphs: each node's `(first, end)` as the
/// core's liveness analysis (`dlsys_core::compile::replay::liveness`) gives
/// it, the first difference said with what it breaks.
pub fn liveness(f: Liveness) -> Result<(), String> {
    let mut graphs: Vec<(Vec<Vec<usize>>, Vec<usize>)> = vec![
        (vec![], vec![]),
        (vec![vec![]], vec![0]),
        // x → relu → loss, and a node nobody reads.
        (vec![vec![], vec![0], vec![1], vec![0]], vec![2]),
        // A value read twice, the second read late.
        (vec![vec![], vec![0], vec![1], vec![0, 2]], vec![3]),
    ];
    let mut rng = StdRng::seed_from_u64(11);
    for _ in 0..300 {
        let n = rng.random_range(1..=14usize);
        let inputs: Vec<Vec<usize>> = (0..n)
            .map(|i| {
                let reads = if i == 0 { 0 } else { rng.random_range(0..=2) };
                (0..reads).map(|_| rng.random_range(0..i)).collect()
            })
            .collect();
        let outputs = (0..rng.random_range(1..=2))
            .map(|_| rng.random_range(0..n))
            .collect();
        graphs.push((inputs, outputs));
    }
    for (inputs, outputs) in graphs {
        let got = call(|| f(&inputs, &outputs))?;
        let want = dlsys_core::compile::replay::liveness(&inputs, &outputs);
        let shown = inputs
            .iter()
            .enumerate()
            .map(|(i, r)| format!("{i}←{r:?}"))
            .collect::<Vec<_>>()
            .join(" ");
        let graph = format!("{shown}, results {outputs:?}");
        if got.len() != want.len() {
            return Err(sayf(
                "c.live.len",
                &[
                    ("graph", &graph),
                    ("got", &got.len()),
                    ("want", &want.len()),
                ],
            ));
        }
        let Some(i) = (0..want.len()).find(|i| got[*i] != want[*i]) else {
            continue;
        };
        let (g, w) = (got[i], want[i]);
        let last_reader = (0..inputs.len()).rev().find(|r| inputs[*r].contains(&i));
        let why = if outputs.contains(&i) && g.1 < w.1 {
            say("c.live.result")
        } else if last_reader.is_some_and(|r| g.1 as usize <= r) {
            sayf("c.live.reader", &[("reader", &last_reader.unwrap_or(0))])
        } else if g.1 > w.1 {
            say("c.live.longer")
        } else {
            String::new()
        };
        return Err(sayf(
            "c.live.wrong",
            &[
                ("graph", &graph),
                ("node", &i),
                ("got", &format!("{}..{}", g.0, g.1)),
                ("want", &format!("{}..{}", w.0, w.1)),
                ("why", &why),
            ],
        ));
    }
    Ok(())
}
