//! The op registry, the CPU kernels and algorithm selection.

use super::dispatch::*;
use crate::kernels::GemmKind;

/// Every CPU kernel gives sgemm's product (to f32 reassociation) for
/// every layout, odd sizes included.
#[test]
fn cpu_kernels_agree_for_every_layout() {
    for (m, n, k) in [(1, 1, 1), (3, 5, 7), (17, 2, 33), (8, 16, 1)] {
        for (a_t, b_t) in [(false, false), (true, false), (false, true), (true, true)] {
            let call = Call { m, n, k, a_t, b_t };
            let (a, b) = operands(&call, 3);
            // The definition, in f64, reading the stored layouts.
            let at = |i: usize, p: usize| f64::from(if a_t { a[p * m + i] } else { a[i * k + p] });
            let bt = |p: usize, j: usize| f64::from(if b_t { b[j * k + p] } else { b[p * n + j] });
            for kernel in [CpuGemm::Naive, CpuGemm::Reordered, CpuGemm::Sgemm] {
                let mut c = vec![f32::NAN; m * n];
                cpu_gemm(kernel, &call, &a, &b, &mut c);
                for i in 0..m {
                    for j in 0..n {
                        let want: f64 = (0..k).map(|p| at(i, p) * bt(p, j)).sum();
                        let got = f64::from(c[i * n + j]);
                        assert!(
                            (got - want).abs() <= 1e-5 * (k as f64),
                            "{kernel:?} {call:?} at ({i},{j}): {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_registry_is_keyed_by_op_device_and_type() {
    let cpu_only = Registry::new(&[]);
    assert_eq!(cpu_only.lookup(OpKey::matmul(Device::Cpu)).len(), 3);
    assert!(cpu_only.lookup(OpKey::matmul(Device::Gpu)).is_empty());
    let f64_key = OpKey {
        dtype: "f64",
        ..OpKey::matmul(Device::Cpu)
    };
    assert!(
        cpu_only.lookup(f64_key).is_empty(),
        "nothing registered for f64"
    );
    let both = Registry::new(&GemmKind::ALL);
    assert_eq!(both.matmul().len(), 3 + GemmKind::ALL.len());
    assert_eq!(both.matmul()[0].device(), Device::Cpu);
}

#[test]
fn bench_mode_times_each_candidate_once_per_call_and_caches_the_fastest() {
    let registry = Registry::new(&[GemmKind::Naive, GemmKind::Coalesced]);
    let candidates = registry.matmul();
    let mut timed = Vec::new();
    // Made-up times: the GPU's coalesced rung fastest, naive slower, the
    // CPU kernels slowest; the GPU's naive fails to run.
    let mut time = |c: Candidate, _: &Call| {
        timed.push(c);
        match c {
            Candidate::Gpu(GemmKind::Coalesced) => Some(1.0),
            Candidate::Gpu(_) => None,
            Candidate::Cpu(CpuGemm::Sgemm) => Some(2.0),
            Candidate::Cpu(_) => Some(3.0),
        }
    };
    let mut selector = Selector::default();
    let nn = Call::new(64, 64, 64);
    let (s, hit) = selector.select(Mode::Bench, &candidates, nn, &mut time);
    assert!(!hit);
    assert_eq!(s.winner, Candidate::Gpu(GemmKind::Coalesced));
    assert!(
        s.timings
            .contains(&(Candidate::Gpu(GemmKind::Naive), Timing::Failed))
    );
    let (_, hit) = selector.select(Mode::Bench, &candidates, nn, &mut time);
    assert!(hit, "the second call of a shape is a cache hit");
    // Backward's transposed call: the GPU rungs refuse it, untimed.
    let tn = Call { a_t: true, ..nn };
    let (s, hit) = selector.select(Mode::Bench, &candidates, tn, &mut time);
    assert!(!hit);
    assert_eq!(s.winner, Candidate::Cpu(CpuGemm::Sgemm));
    assert_eq!(
        s.timings
            .iter()
            .filter(|(_, t)| *t == Timing::Refused)
            .count(),
        2
    );
    assert_eq!((selector.hits, selector.misses), (1, 2));
    // 5 candidates for NN, 3 for TN: each timed once.
    assert_eq!(timed.len(), 8);
    assert_eq!(selector.entries().count(), 2);
}

#[test]
fn the_heuristic_times_nothing_and_keeps_small_or_transposed_calls_on_the_cpu() {
    let candidates = Registry::new(&GemmKind::ALL).matmul();
    let mut selector = Selector::default();
    let never = |_: Candidate, _: &Call| -> Option<f64> { panic!("the heuristic timed a kernel") };
    let small = Call::new(16, 16, 16);
    let (s, _) = selector.select(Mode::Heuristic, &candidates, small, never);
    assert_eq!(s.winner, Candidate::Cpu(CpuGemm::Sgemm));
    assert!(s.timings.iter().all(|(_, t)| *t == Timing::NotTimed));
    let big = Call::new(512, 512, 512);
    assert!(big.flops() >= GPU_MIN_FLOPS);
    // The page's square for the rule: the first n at or past its flops.
    let n = smallest_gpu_square();
    assert!(Call::new(n, n, n).flops() >= GPU_MIN_FLOPS);
    assert!(Call::new(n - 1, n - 1, n - 1).flops() < GPU_MIN_FLOPS);
    let (s, _) = selector.select(Mode::Heuristic, &candidates, big, never);
    assert_eq!(s.winner, Candidate::Gpu(GemmKind::ALL[5]));
    let big_t = Call { b_t: true, ..big };
    let (s, _) = selector.select(Mode::Heuristic, &candidates, big_t, never);
    assert_eq!(s.winner, Candidate::Cpu(CpuGemm::Sgemm));
    // Without a GPU registered, the CPU always.
    let cpu = Registry::new(&[]).matmul();
    assert_eq!(heuristic(&cpu, &big), Candidate::Cpu(CpuGemm::Sgemm));
}

#[test]
fn the_chain_times_its_layers_and_takes_the_kernel_from_the_selection() {
    let registry = Registry::new(&[]);
    let mut selector = Selector::default();
    let call = Call::new(8, 8, 8);
    let no_time = |_: Candidate, _: &Call| -> Option<f64> { None };
    assert!(
        chain(&registry, &selector, &call, no_time).is_none(),
        "nothing selected yet"
    );
    selector.select(Mode::Bench, &registry.matmul(), call, |c, call| match c {
        Candidate::Cpu(k) => Some(time_cpu(k, call)),
        Candidate::Gpu(_) => None,
    });
    let chain = chain(&registry, &selector, &call, no_time).expect("a winner was timed");
    let winner = selector.cached(&call).and_then(Selection::winner_seconds);
    assert_eq!(Some(chain.kernel), winner);
    for (layer, seconds) in chain.layers() {
        assert!(seconds > 0.0 && seconds < 0.01, "{layer}: {seconds}");
    }
}

#[test]
fn the_captured_steps_matmuls_are_its_forward_and_backward_products() {
    use crate::memory::mlp::MlpSettings;
    let mlp = MlpSettings::default();
    let c = super::captured::captured(super::step::StepModel::Mlp, &mlp, 0)
        .expect("the default step captures");
    let layers = c.sizes.len() - 1;
    // Forward x·W per layer; backward dW = xᵀ·g per layer, dX = g·Wᵀ for
    // every layer but the first.
    assert_eq!(c.calls.len(), 3 * layers - 1);
    let forward: Vec<&Call> = c.calls.iter().filter(|c| c.layout() == "NN").collect();
    assert_eq!(forward.len(), layers);
    assert_eq!(
        (forward[0].m, forward[0].k, forward[0].n),
        (c.batch, c.sizes[0], c.sizes[1])
    );
    assert!(c.calls.iter().any(|c| c.layout() == "TN"));
    assert!(c.calls.iter().any(|c| c.layout() == "NT"));
}

#[test]
fn the_crossover_is_the_first_size_the_gpu_wins() {
    let rows = [
        (16, 1.0, Some(5.0)),
        (32, 2.0, None),
        (64, 4.0, Some(3.0)),
        (128, 8.0, Some(1.0)),
    ];
    assert_eq!(crossover(&rows), Some(64));
    assert_eq!(crossover(&rows[..2]), None);
    // A lone early win is not where the GPU starts winning.
    let noisy = [
        (16, 1.0, Some(0.5)),
        (32, 2.0, Some(5.0)),
        (64, 4.0, Some(1.0)),
    ];
    assert_eq!(crossover(&noisy), Some(64));
    assert_eq!(crossover(&[(16, 1.0, Some(2.0))]), None);
}

#[test]
fn the_textbook_loops_are_not_timed_on_huge_calls() {
    let huge = Call::new(4096, 4096, 4096);
    assert!(huge.flops() > MAX_SLOW_FLOPS);
    let mut timed = Vec::new();
    let mut selector = Selector::default();
    let (s, _) = selector.select(Mode::Bench, &Registry::new(&[]).matmul(), huge, |c, _| {
        timed.push(c);
        Some(1.0)
    });
    assert_eq!(timed, [Candidate::Cpu(CpuGemm::Sgemm)]);
    assert_eq!(
        s.timings[0],
        (Candidate::Cpu(CpuGemm::Naive), Timing::TooSlow)
    );
    assert_eq!(huge.to_string(), "4096×4096·4096×4096");
}

#[test]
fn a_step_is_dispatched_once_per_shape_and_a_second_step_hits_every_call() {
    use super::selected::{gpu_calls, selected};
    let calls = [
        Call::new(4, 8, 16),
        Call {
            a_t: true,
            ..Call::new(16, 8, 4)
        },
        Call::new(4, 8, 16),
    ];
    // The GPU's tiled rung "wins" on the 512 sweep size only.
    let mut raced = Vec::new();
    let gpu = |c: &Call| {
        raced.push(*c);
        let tiled = if c.m == 512 { 1e-9 } else { 1.0 };
        vec![(GemmKind::Naive, None), (GemmKind::ALL[2], Some(tiled))]
    };
    let s = selected(
        &calls,
        Mode::Bench,
        &[GemmKind::Naive, GemmKind::ALL[2]],
        gpu,
    );
    assert_eq!(
        s.calls.iter().map(|(_, hit)| *hit).collect::<Vec<_>>(),
        [false, false, true]
    );
    assert_eq!(s.second_hits, 3);
    assert_eq!((s.hits, s.misses), (4, 2));
    assert_eq!(s.entries.len(), 2);
    // Each GPU call raced once, the transposed one never.
    assert_eq!(raced, gpu_calls(&calls, Mode::Bench, &[GemmKind::Naive]));
    // The heuristic races only what its rule sends to the GPU: none of these.
    assert!(gpu_calls(&calls, Mode::Heuristic, &GemmKind::ALL).is_empty());
    let big = [Call::new(512, 512, 512)];
    assert_eq!(gpu_calls(&big, Mode::Heuristic, &GemmKind::ALL), big);
    assert!(gpu_calls(&big, Mode::Heuristic, &[]).is_empty());
    assert_eq!(s.crossover, Some(512));
    assert!(s.chain.is_some_and(|c| c.kernel > 0.0));
    // Without a GPU, nothing raced and the CPU wins everywhere.
    let cpu = selected(&calls, Mode::Heuristic, &[], |_| panic!("no GPU to race"));
    assert!(!cpu.gpu && cpu.crossover.is_none() && cpu.sweep.is_empty());
    assert!(
        cpu.entries
            .iter()
            .all(|(_, s)| s.winner == Candidate::Cpu(CpuGemm::Sgemm))
    );
    assert!(
        cpu.chain.is_some(),
        "the heuristic's winner is timed for the chain"
    );
}
