//! The collectives held to what they must be: the exact sum on every
//! worker, the bytes the formulas say, the time the closed forms say.

use rand::{RngExt as _, SeedableRng as _};

use super::*;

fn inputs<T: Element>(n: usize, e: usize, seed: u64, make: fn(f64) -> T) -> Vec<Vec<T>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| (0..e).map(|_| make(rng.random_range(-1.0..1.0))).collect())
        .collect()
}

/// The buffers a schedule runs on: the inputs, plus a server's (garbage,
/// which it must ignore) for a parameter server.
fn buffers<T: Element>(s: &Schedule, inputs: &[Vec<T>], garbage: T) -> Vec<Vec<T>> {
    let mut b = inputs.to_vec();
    if s.nodes > s.workers {
        b.push(vec![garbage; s.elements]);
    }
    b
}

/// Sizes that divide and do not divide evenly, and one smaller than N.
fn sizes(n: usize) -> Vec<usize> {
    vec![1, n - 1, n, 3 * n + 1, 97, 16 * n * 4]
}

fn sums_on_every_worker<T: Element>(make: fn(f64) -> T, rel: f64) {
    for algorithm in Algorithm::ALL {
        for n in MIN_WORKERS..=MAX_WORKERS {
            for e in sizes(n).into_iter().filter(|e| *e >= 1) {
                let s = Schedule::new(algorithm, Op::AllReduce, n, e).unwrap();
                let input = inputs(n, e, (n * 1000 + e) as u64, make);
                let mut b = buffers(&s, &input, make(1e30));
                run(&s, &mut b).unwrap();
                for w in 1..n {
                    let same = b[w]
                        .iter()
                        .zip(&b[0])
                        .all(|(x, y)| x.to_f64().to_bits() == y.to_f64().to_bits());
                    assert!(
                        same,
                        "{algorithm:?} N={n} E={e}: worker {w} differs from worker 0"
                    );
                }
                for i in 0..e {
                    let got = b[0][i];
                    match reference_sum(&s, &input, i) {
                        Some(want) => assert_eq!(
                            got.to_f64().to_bits(),
                            want.to_f64().to_bits(),
                            "{algorithm:?} N={n} E={e} i={i}"
                        ),
                        None => {
                            let exact: f64 = input.iter().map(|x| x[i].to_f64()).sum();
                            let scale: f64 = input.iter().map(|x| x[i].to_f64().abs()).sum();
                            assert!(
                                (got.to_f64() - exact).abs() <= rel * scale,
                                "{algorithm:?} N={n} E={e} i={i}: {got:?} vs {exact}"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn every_all_reduce_leaves_the_exact_sum_on_every_worker_in_f32() {
    sums_on_every_worker::<f32>(|x| x as f32, 1e-6);
}

#[test]
fn every_all_reduce_leaves_the_exact_sum_on_every_worker_in_f64() {
    sums_on_every_worker::<f64>(|x| x, 1e-14);
}

#[test]
fn a_parameter_server_sums_in_worker_order_bit_for_bit() {
    // The reference for the server is the plain sum x0 + x1 + … in order.
    let n = 5;
    let input = inputs::<f32>(n, 33, 9, |x| x as f32);
    let s = Schedule::new(Algorithm::ParameterServer, Op::AllReduce, n, 33).unwrap();
    let mut b = buffers(&s, &input, f32::NAN);
    run(&s, &mut b).unwrap();
    for i in 0..33 {
        let mut plain = input[0][i];
        for x in &input[1..] {
            plain += x[i];
        }
        assert_eq!(b[2][i].to_bits(), plain.to_bits());
    }
}

#[test]
fn the_bytes_each_node_sends_are_the_formulas() {
    for algorithm in Algorithm::ALL {
        for n in MIN_WORKERS..=MAX_WORKERS {
            for e in sizes(n) {
                let s = Schedule::new(algorithm, Op::AllReduce, n, e).unwrap();
                let mut b = buffers(&s, &inputs::<f32>(n, e, 1, |x| x as f32), 0.0);
                let out = run(&s, &mut b).unwrap();
                for (w, t) in out.traffic.iter().enumerate() {
                    assert_eq!(
                        t.sent_bytes,
                        4 * algorithm.elements_sent(n, e, w),
                        "{algorithm:?} N={n} E={e} w={w}"
                    );
                }
                assert_eq!(
                    out.total_sent(),
                    4 * algorithm.total_elements_sent(n, e),
                    "{algorithm:?} N={n} E={e}"
                );
                let received: u64 = out.traffic.iter().map(|t| t.received_bytes).sum();
                assert_eq!(received, out.total_sent());
                assert_eq!(s.traffic(4), out.traffic, "{algorithm:?} N={n} E={e}");
            }
        }
    }
}

#[test]
fn a_ring_sends_two_n_minus_one_over_n_of_the_gradient_per_worker() {
    for n in MIN_WORKERS..=MAX_WORKERS {
        for e in [3 * n + 1, 5 * n + n / 2 + 1, 1000, 8 * n] {
            let s_bytes = 4 * e as u64;
            let s = Schedule::new(Algorithm::Ring, Op::AllReduce, n, e).unwrap();
            let mut b = inputs::<f32>(n, e, 2, |x| x as f32);
            let out = run(&s, &mut b).unwrap();
            let n64 = n as u64;
            assert_eq!(out.total_sent(), 2 * (n64 - 1) * s_bytes, "N={n} E={e}");
            let (lo, hi) = (e / n, e.div_ceil(n));
            for t in &out.traffic {
                assert!(t.sent_bytes >= 4 * 2 * (n64 - 1) * lo as u64, "N={n} E={e}");
                assert!(t.sent_bytes <= 4 * 2 * (n64 - 1) * hi as u64, "N={n} E={e}");
                assert_eq!(t.sent_messages, 2 * (n64 - 1));
                if e % n == 0 {
                    assert_eq!(t.sent_bytes * n64, 2 * (n64 - 1) * s_bytes);
                }
            }
        }
    }
}

#[test]
fn the_other_algorithms_send_what_their_formulas_say() {
    for n in MIN_WORKERS..=MAX_WORKERS {
        let e = 16 * 7 * n; // divisible by N and by every power of two ≤ 16
        let s_bytes = 4 * e as u64;
        let n64 = n as u64;
        let run_of = |a| {
            let s = Schedule::new(a, Op::AllReduce, n, e).unwrap();
            let mut b = buffers(&s, &inputs::<f32>(n, e, 3, |x| x as f32), 0.0);
            (s.steps.len(), run(&s, &mut b).unwrap())
        };
        // Binomial tree: N−1 sends of S up and N−1 down, in 2⌈log₂N⌉ steps.
        let (steps, tree) = run_of(Algorithm::Tree);
        assert_eq!(tree.total_sent(), 2 * (n64 - 1) * s_bytes);
        assert_eq!(steps, 2 * (n as f64).log2().ceil() as usize);
        // Parameter server: S each way per worker, N·S each way at the server.
        let (steps, ps) = run_of(Algorithm::ParameterServer);
        assert_eq!(steps, 2);
        for t in &ps.traffic[..n] {
            assert_eq!((t.sent_bytes, t.received_bytes), (s_bytes, s_bytes));
        }
        assert_eq!(
            (ps.traffic[n].sent_bytes, ps.traffic[n].received_bytes),
            (n64 * s_bytes, n64 * s_bytes)
        );
        // Halving-doubling: 2(N−1)/N·S per worker in 2·log₂N steps for a
        // power of two; otherwise 2 more steps and S more for the folded.
        let (steps, hd) = run_of(Algorithm::HalvingDoubling);
        if n.is_power_of_two() {
            assert_eq!(steps, 2 * n.trailing_zeros() as usize);
            for t in &hd.traffic {
                assert_eq!(t.sent_bytes * n64, 2 * (n64 - 1) * s_bytes, "N={n}");
            }
        } else {
            let p = 1usize << (usize::BITS - 1 - n.leading_zeros());
            assert_eq!(steps, 2 * p.trailing_zeros() as usize + 2);
            let r = n - p;
            assert_eq!(
                hd.total_sent(),
                2 * (p as u64 - 1) * s_bytes + 2 * r as u64 * s_bytes
            );
            // Per worker, by the rule (not the builder's loops): an extra
            // worker (odd, below 2r) sends S once; an active one 2(p−1)/p·S,
            // and S more when it hands the sum back to an extra one.
            for (w, t) in hd.traffic.iter().enumerate() {
                let want = if w < 2 * r && w % 2 == 1 {
                    s_bytes
                } else {
                    2 * (p as u64 - 1) * s_bytes / p as u64 + if w < 2 * r { s_bytes } else { 0 }
                };
                assert_eq!(t.sent_bytes, want, "N={n} w={w}");
            }
        }
        for a in Algorithm::ALL {
            let (steps, _) = run_of(a);
            assert_eq!(steps, a.cost(n).steps, "{a:?} N={n}");
        }
    }
}

#[test]
fn the_simulated_time_is_the_closed_form() {
    let link = Link::new(5.0, 25.0).unwrap();
    for algorithm in Algorithm::ALL {
        for n in MIN_WORKERS..=MAX_WORKERS {
            for e in [16 * n, 16 * n * 1024] {
                let s = Schedule::new(algorithm, Op::AllReduce, n, e).unwrap();
                let sim = simulate(&s, 4, link).end_s;
                let closed = algorithm.cost(n).time(4.0 * e as f64, link);
                assert!(
                    (sim - closed).abs() <= 1e-9 * closed,
                    "{algorithm:?} N={n} E={e}: {sim} vs {closed}"
                );
            }
        }
    }
}

#[test]
fn uneven_ring_chunks_take_between_the_floor_and_the_ceiling() {
    let link = Link::new(2.0, 10.0).unwrap();
    for n in MIN_WORKERS..=MAX_WORKERS {
        let e = 101 * n + 3;
        let s = Schedule::new(Algorithm::Ring, Op::AllReduce, n, e).unwrap();
        let sim = simulate(&s, 4, link).end_s;
        let steps = 2.0 * (n as f64 - 1.0);
        let lo = steps * link.message_time(4.0 * (e / n) as f64);
        let hi = steps * link.message_time(4.0 * e.div_ceil(n) as f64);
        assert!(
            lo <= sim && sim <= hi * (1.0 + 1e-12),
            "N={n}: {lo} ≤ {sim} ≤ {hi}"
        );
    }
}

#[test]
fn a_parameter_server_queues_its_pushes() {
    let link = Link::new(1.0, 1.0).unwrap();
    let s = Schedule::new(Algorithm::ParameterServer, Op::AllReduce, 4, 250).unwrap();
    let t = simulate(&s, 4, link);
    let one = link.message_time(1000.0);
    let pushes: Vec<f64> = t
        .transfers
        .iter()
        .filter(|x| x.kind == StepKind::Push)
        .map(|x| x.start_s)
        .collect();
    for (k, start) in pushes.iter().enumerate() {
        assert!(
            (start - k as f64 * one).abs() < 1e-12,
            "push {k} waits for the {k} before it"
        );
    }
}

#[test]
fn reduce_scatter_and_all_gather_alone() {
    for n in MIN_WORKERS..=MAX_WORKERS {
        for e in sizes(n) {
            let input = inputs::<f32>(n, e, 4, |x| x as f32);
            let rs = Schedule::new(Algorithm::Ring, Op::ReduceScatter, n, e).unwrap();
            let mut b = input.clone();
            let out = run(&rs, &mut b).unwrap();
            assert_eq!(check_result(&rs, &input, &b), Ok(()), "RS N={n} E={e}");
            for (w, held) in b.iter().enumerate() {
                let chunk = chunk_range(w, n, e);
                for i in chunk.clone() {
                    assert_eq!(
                        Some(held[i]),
                        reference_sum(&rs, &input, i),
                        "RS N={n} E={e}"
                    );
                }
                assert_eq!(out.traffic[w].sent_bytes, 4 * (e - chunk.len()) as u64);
            }
            let ag = Schedule::new(Algorithm::Ring, Op::AllGather, n, e).unwrap();
            let mut b = input.clone();
            let out = run(&ag, &mut b).unwrap();
            assert_eq!(check_result(&ag, &input, &b), Ok(()), "AG N={n} E={e}");
            let gathered: Vec<f32> = (0..e)
                .map(|i| input[(0..n).find(|c| chunk_range(*c, n, e).contains(&i)).unwrap()][i])
                .collect();
            for (w, held) in b.iter().enumerate() {
                assert_eq!(*held, gathered, "AG N={n} E={e}");
                assert_eq!(
                    out.traffic[w].sent_bytes,
                    4 * (e - chunk_range((w + 1) % n, n, e).len()) as u64
                );
            }
        }
    }
}

#[test]
fn the_trace_ends_with_every_worker_holding_everyones_values() {
    for algorithm in Algorithm::ALL {
        for n in [2, 3, 5, 8] {
            let s = Schedule::new(algorithm, Op::AllReduce, n, 12).unwrap();
            let mut b = buffers(&s, &inputs::<f32>(n, 12, 5, |x| x as f32), 0.0);
            let (out, trace) = run_traced(&s, &mut b).unwrap();
            assert_eq!(trace.values.len(), out.steps + 1);
            let all = (1u32 << n) - 1;
            for w in 0..n {
                assert!(
                    trace.contributors.last().unwrap()[w]
                        .iter()
                        .all(|m| *m == all),
                    "{algorithm:?} N={n}"
                );
                assert_eq!(
                    trace.contributors[0][w]
                        .iter()
                        .filter(|m| **m == 1 << w)
                        .count(),
                    12
                );
            }
            assert_eq!(trace.values.last().unwrap()[..n], b[..n]);
        }
    }
}

#[test]
fn bad_sizes_and_links_are_errors() {
    assert!(matches!(
        Schedule::new(Algorithm::Ring, Op::AllReduce, 1, 8),
        Err(CollectiveError::Workers { .. })
    ));
    assert!(matches!(
        Schedule::new(Algorithm::Ring, Op::AllReduce, 17, 8),
        Err(CollectiveError::Workers { .. })
    ));
    assert!(matches!(
        Schedule::new(Algorithm::Tree, Op::AllReduce, 4, 0),
        Err(CollectiveError::Elements { .. })
    ));
    assert!(matches!(
        Schedule::new(Algorithm::Tree, Op::AllReduce, 4, MAX_ELEMENTS + 1),
        Err(CollectiveError::Elements { .. })
    ));
    assert!(matches!(
        Schedule::new(Algorithm::Tree, Op::ReduceScatter, 4, 8),
        Err(CollectiveError::OnlyRing { .. })
    ));
    let s = Schedule::new(Algorithm::ParameterServer, Op::AllReduce, 4, 8).unwrap();
    let mut short = inputs::<f32>(4, 8, 1, |x| x as f32);
    assert!(matches!(
        run(&s, &mut short),
        Err(CollectiveError::Buffers { .. })
    ));
    for (a, b) in [
        (-1.0, 1.0),
        (1.0, 0.0),
        (f64::NAN, 1.0),
        (1.0, f64::INFINITY),
    ] {
        assert!(Link::new(a, b).is_err(), "{a} {b}");
    }
}

#[test]
fn below_the_crossover_the_tree_wins_and_above_it_the_ring() {
    let link = Link::new(10.0, 50.0).unwrap();
    for n in [4, 8, 16] {
        let s = crossover_bytes(Algorithm::Ring, Algorithm::Tree, n, link).unwrap();
        let ring = Algorithm::Ring.cost(n);
        let tree = Algorithm::Tree.cost(n);
        assert!((ring.time(s, link) - tree.time(s, link)).abs() < 1e-12 * ring.time(s, link));
        assert!(tree.time(s / 2.0, link) < ring.time(s / 2.0, link));
        assert!(ring.time(s * 2.0, link) < tree.time(s * 2.0, link));
    }
    // Two and three workers: the ring has no more latency terms than the
    // tree (2 against 2, 4 against 4) and fewer bytes, so never a crossover;
    // nor for any N when latency is free.
    assert_eq!(
        crossover_bytes(Algorithm::Ring, Algorithm::Tree, 2, link),
        None
    );
    assert_eq!(
        crossover_bytes(Algorithm::Ring, Algorithm::Tree, 3, link),
        None
    );
    let free = Link::new(0.0, 50.0).unwrap();
    for n in MIN_WORKERS..=MAX_WORKERS {
        assert_eq!(
            crossover_bytes(Algorithm::Ring, Algorithm::Tree, n, free),
            None,
            "N={n}"
        );
    }
}

#[test]
fn speedup_and_step_rules() {
    assert_eq!(speedup(1, 1.0, 0.0), 1.0);
    assert!((speedup(8, 3.0, 1.0) - 6.0).abs() < 1e-12);
    assert_eq!(sync_step(&[1.0, 1.0, 2.5, 1.0], 0.5), 3.0);
    assert_eq!(overlapped_step(1.0, 2.0, 1.5), 3.0);
    assert_eq!(overlapped_step(1.0, 2.0, 3.0), 4.0);
}

#[test]
fn the_check_catches_a_wrong_or_differing_element() {
    for algorithm in Algorithm::ALL {
        let s = Schedule::new(algorithm, Op::AllReduce, 5, 20).unwrap();
        let input = inputs::<f32>(5, 20, 6, |x| x as f32);
        let mut b = buffers(&s, &input, 0.0);
        run(&s, &mut b).unwrap();
        assert_eq!(check_result(&s, &input, &b), Ok(()));
        let mut one_off = b.clone();
        one_off[3][7] = f32::from_bits(one_off[3][7].to_bits() + 1);
        assert_eq!(
            check_result(&s, &input, &one_off),
            Err(7),
            "{algorithm:?}: one worker one ulp off"
        );
        // One ulp off on every worker alike: the bit-for-bit reference
        // catches it where the order is fixed; halving-doubling is held
        // only to the tolerance, which one ulp is well within.
        let mut ulp = b.clone();
        for w in ulp.iter_mut().take(5) {
            w[9] = f32::from_bits(w[9].to_bits() + 1);
        }
        let want = if algorithm.fixed_order() {
            Err(9)
        } else {
            Ok(())
        };
        assert_eq!(
            check_result(&s, &input, &ulp),
            want,
            "{algorithm:?}: one ulp on everyone"
        );
        let mut all_off = b.clone();
        for w in all_off.iter_mut() {
            w[11] += 0.01;
        }
        assert_eq!(
            check_result(&s, &input, &all_off),
            Err(11),
            "{algorithm:?}: everyone wrong alike"
        );
    }
}

#[test]
fn the_comparison_rows_agree_with_the_runs() {
    let link = Link::new(5.0, 25.0).unwrap();
    for n in [3, 8] {
        for r in compare(n, 4800, link).unwrap() {
            let s = Schedule::new(r.algorithm, Op::AllReduce, n, 4800).unwrap();
            let mut b = buffers(&s, &inputs::<f32>(n, 4800, 7, |x| x as f32), 0.0);
            let out = run(&s, &mut b).unwrap();
            assert_eq!(r.total_bytes, out.total_sent());
            assert_eq!(r.steps, out.steps);
            assert_eq!(
                r.worker_max_bytes,
                out.traffic[..n].iter().map(|t| t.sent_bytes).max().unwrap()
            );
            assert!(
                (r.closed_s - r.simulated_s).abs() <= 1e-9 * r.closed_s,
                "{:?}",
                r.algorithm
            );
        }
    }
}

#[test]
fn a_ring_runs_at_the_speed_of_its_slowest_link() {
    // α = 0: every step of the ring has a message into the slow worker,
    // and its receive port takes them one after another, so the whole
    // all-reduce runs at the slow link's bandwidth: 2(N−1)·(S/N)/β_slow.
    let link = Link::new(0.0, 10.0).unwrap();
    for n in [2, 3, 5, 8, 16] {
        let e = 1024 * n;
        let s = Schedule::new(Algorithm::Ring, Op::AllReduce, n, e).unwrap();
        for factor in [1.0, 2.0, 7.5] {
            let net = Network::with_slow_node(link, n / 2, factor).unwrap();
            let t = simulate_on(&s, 4, &net).end_s;
            let want = 2.0 * (n - 1) as f64 * (4.0 * 1024.0) * factor / link.bytes_per_s;
            assert!(
                (t - want).abs() <= 1e-12 * want,
                "N={n} ×{factor}: {t} vs {want}"
            );
        }
    }
}

#[test]
fn a_slow_link_never_speeds_anything_up_and_factor_one_changes_nothing() {
    let link = Link::new(5.0, 25.0).unwrap();
    for a in Algorithm::ALL {
        for n in [2, 5, 8, 13] {
            let s = Schedule::new(a, Op::AllReduce, n, 10_000).unwrap();
            let uniform = simulate(&s, 4, link);
            let same = simulate_on(&s, 4, &Network::with_slow_node(link, n - 1, 1.0).unwrap());
            assert_eq!(same, uniform, "{a:?} N={n}");
            for node in [0, n - 1] {
                let slow = simulate_on(&s, 4, &Network::with_slow_node(link, node, 4.0).unwrap());
                assert!(slow.end_s >= uniform.end_s, "{a:?} N={n} node {node}");
                // Every message through the slow node takes α + 4·m/β.
                for t in slow
                    .transfers
                    .iter()
                    .filter(|t| t.from == node || t.to == node)
                {
                    let want = link.alpha_s + 4.0 * t.bytes as f64 / link.bytes_per_s;
                    assert!(((t.end_s - t.start_s) - want).abs() <= 1e-12 * want);
                }
            }
        }
    }
    for factor in [0.5, f64::NAN, f64::INFINITY] {
        assert!(
            Network::with_slow_node(link, 0, factor).is_err(),
            "{factor}"
        );
    }
}
