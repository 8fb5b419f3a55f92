//! Data-parallel training held to one worker with the whole batch, to
//! itself across threads, and to its virtual clock.

use super::*;
use crate::nn::{Activation, Dataset, OptimizerKind, data};

fn spirals() -> Dataset {
    data::load("spirals", 3).unwrap()
}

fn settings(workers: usize, algorithm: Algorithm) -> DpSettings {
    DpSettings {
        hidden: vec![16],
        activation: Activation::Tanh,
        optimizer: OptimizerKind::by_name("momentum").unwrap(),
        lr: 0.1,
        workers,
        shard: 8,
        algorithm,
        steps: 20,
        seed: 5,
        link: Link::new(5.0, 25.0).unwrap(),
        flops_per_s: 1e9,
        straggler: None,
        compression: Compression::None,
    }
}

fn max_rel(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / y.abs().max(1e-300))
        .fold(0.0, f64::max)
}

#[test]
fn n_workers_with_batch_b_follow_one_worker_with_batch_n_b() {
    let data = spirals();
    for algorithm in Algorithm::ALL {
        for n in [2, 3, 4] {
            let s = settings(n, algorithm);
            let run = train_sync::<f64>(&s, &data, false).unwrap();
            let (single, _) = train_single::<f64>(&s, &data).unwrap();
            let losses: Vec<f64> = run.steps.iter().map(|x| x.loss).collect();
            assert_eq!(losses.len(), 20);
            let rel = max_rel(&losses, &single);
            assert!(rel <= 1e-10, "f64 {algorithm:?} N={n}: {rel:e}");
            let run = train_sync::<f32>(&s, &data, false).unwrap();
            let (single, _) = train_single::<f32>(&s, &data).unwrap();
            let losses: Vec<f64> = run.steps.iter().map(|x| x.loss).collect();
            let rel = max_rel(&losses, &single);
            assert!(rel <= 1e-4, "f32 {algorithm:?} N={n}: {rel:e}");
            assert!(run.replicas_identical, "{algorithm:?} N={n}");
        }
    }
    // And the loss does move: the runs train.
    let mut s = settings(4, Algorithm::Ring);
    s.steps = 60;
    let run = train_sync::<f64>(&s, &data::load("moons", 3).unwrap(), false).unwrap();
    let mean = |steps: &[DpStep]| steps.iter().map(|x| x.loss).sum::<f64>() / steps.len() as f64;
    let (first, last) = (mean(&run.steps[..10]), mean(&run.steps[50..]));
    assert!(last < 0.9 * first, "{first} → {last}");
}

#[test]
fn threads_and_one_thread_give_the_same_bits() {
    let data = spirals();
    for algorithm in Algorithm::ALL {
        let s = settings(4, algorithm);
        let threaded = train_sync::<f32>(&s, &data, true).unwrap();
        let single = train_sync::<f32>(&s, &data, false).unwrap();
        assert!(threaded.threads && !single.threads);
        assert_eq!(threaded.weights, single.weights, "{algorithm:?}");
        assert_eq!(threaded.steps, single.steps, "{algorithm:?}");
    }
}

#[test]
fn a_step_waits_for_the_slowest_worker_then_all_reduces() {
    let data = spirals();
    let mut s = settings(4, Algorithm::Ring);
    let even = train_sync::<f32>(&s, &data, false).unwrap();
    s.straggler = Some(Straggler {
        worker: 2,
        slowdown: 3.0,
    });
    let slow = train_sync::<f32>(&s, &data, false).unwrap();
    let (a, b) = (&even.steps[0], &slow.steps[0]);
    let compute = a.compute_s[0];
    assert!(a.compute_s.iter().all(|c| *c == compute));
    assert!((b.compute_s[2] - 3.0 * compute).abs() <= 1e-15);
    assert!((a.step_s - (compute + a.comm_s)).abs() <= 1e-15);
    assert!((b.step_s - a.step_s - 2.0 * compute).abs() <= 1e-12);
    // The straggler changes the clock, never the weights.
    assert_eq!(even.weights, slow.weights);
    let elements = 2 * 16 + 16 + 16 * 2 + 2;
    assert_eq!(
        even.bytes_per_step,
        4 * Algorithm::Ring.total_elements_sent(4, elements)
    );
}

#[test]
fn settings_it_cannot_run_are_errors() {
    let data = spirals();
    let mut s = settings(4, Algorithm::Ring);
    s.shard = data.len();
    assert!(matches!(
        train_sync::<f32>(&s, &data, false),
        Err(CollectiveError::Batch { .. })
    ));
    s.shard = 0;
    assert!(matches!(
        train_sync::<f32>(&s, &data, false),
        Err(CollectiveError::Batch { .. })
    ));
    let mut s = settings(4, Algorithm::Ring);
    s.flops_per_s = 0.0;
    assert!(matches!(
        train_sync::<f32>(&s, &data, false),
        Err(CollectiveError::Rate)
    ));
    let mut s = settings(4, Algorithm::Ring);
    s.straggler = Some(Straggler {
        worker: 4,
        slowdown: 2.0,
    });
    assert!(matches!(
        train_sync::<f32>(&s, &data, false),
        Err(CollectiveError::Rate)
    ));
    let s = settings(1, Algorithm::Ring);
    assert!(matches!(
        train_sync::<f32>(&s, &data, false),
        Err(CollectiveError::Workers { .. })
    ));
}

#[test]
fn asynchronous_sgd_is_stale_by_the_clock_and_reproducible() {
    let data = data::load("moons", 3).unwrap();
    let mut s = settings(4, Algorithm::ParameterServer);
    s.steps = 40;
    let run = train_async::<f64>(&s, &data, true).unwrap();
    assert_eq!(run.updates.len(), 40);
    // Equal workers: after the first round each gradient is N − 1 versions
    // old (the other three landed since its pull), and the updates come in
    // worker order.
    for (k, u) in run.updates.iter().enumerate().skip(4) {
        assert_eq!(u.worker, k % 4, "update {k}");
        assert_eq!(u.staleness, 3, "update {k}");
    }
    assert_eq!(run.updates[0].staleness, 0);
    assert!(
        run.updates
            .windows(2)
            .all(|p| p[0].applied_s <= p[1].applied_s)
    );
    assert_eq!(run, train_async::<f64>(&s, &data, true).unwrap());
    // One worker: never stale, and it is plain SGD on batches of b.
    let one = settings(1, Algorithm::ParameterServer);
    assert!(matches!(
        train_async::<f64>(&one, &data, true),
        Err(CollectiveError::Workers { .. })
    ));
    // A straggler is staler: its gradients land after more of the others'.
    s.straggler = Some(Straggler {
        worker: 0,
        slowdown: 4.0,
    });
    let slow = train_async::<f64>(&s, &data, true).unwrap();
    let of = |w: usize| {
        slow.updates
            .iter()
            .filter(|u| u.worker == w)
            .map(|u| u.staleness)
            .max()
            .unwrap_or(0)
    };
    assert!(of(0) > of(1), "straggler {} vs {}", of(0), of(1));
    assert!(
        slow.updates.iter().filter(|u| u.worker == 0).count()
            < slow.updates.iter().filter(|u| u.worker == 1).count()
    );
    // And it trains.
    let mean = |u: &[AsyncUpdate]| u.iter().map(|x| x.loss).sum::<f64>() / u.len() as f64;
    s.steps = 400;
    s.straggler = None;
    let long = train_async::<f64>(&s, &data, true).unwrap();
    let (first, last) = (mean(&long.updates[..50]), mean(&long.updates[350..]));
    assert!(last < 0.9 * first, "{first} → {last}");
}

/// Asynchronous SGD the plain way: one gradient at a time, computed when
/// its push comes up on the clock, on the weights the worker pulled.
fn async_one_at_a_time(
    settings: &DpSettings,
    data: &Dataset,
) -> (Vec<AsyncUpdate>, Vec<crate::autograd::Tensor<f32>>) {
    use super::train::{batches, gradient};
    let sizes = settings.sizes(data);
    let mut server =
        crate::nn::Mlp::<f32>::new(&sizes, settings.activation, settings.seed).unwrap();
    let mut optimizer = crate::nn::Optimizer::new(settings.optimizer, settings.lr, 0.0);
    let bytes = (server.parameter_count() * 4) as f64;
    let message = settings.link.message_time(bytes);
    let compute = settings.compute_times(&sizes).unwrap();
    let mut send_free = 0.0f64;
    let mut recv_free = 0.0f64;
    // (weights, version, ready) per worker.
    let mut workers: Vec<_> = compute
        .iter()
        .map(|c| {
            send_free += message;
            (server.clone(), 0u64, send_free + c)
        })
        .collect();
    let mut updates = Vec::new();
    for (k, batch) in batches(data.len(), settings.shard, settings.steps, settings.seed)
        .iter()
        .enumerate()
    {
        let mut w = 0;
        for (i, x) in workers.iter().enumerate() {
            if x.2 < workers[w].2 {
                w = i;
            }
        }
        let applied_s = workers[w].2.max(recv_free) + message;
        recv_free = applied_s;
        let (loss, flat) = gradient(&workers[w].0, data, batch);
        let grads = server.unflatten(&flat);
        optimizer.step(&mut server.params_mut(), &grads);
        updates.push(AsyncUpdate {
            worker: w,
            loss,
            staleness: k as u64 - workers[w].1,
            applied_s,
        });
        send_free = applied_s.max(send_free) + message;
        workers[w] = (server.clone(), k as u64 + 1, send_free + compute[w]);
    }
    (updates, server.params().into_iter().cloned().collect())
}

#[test]
fn asynchronous_waves_on_threads_give_the_bits_of_one_gradient_at_a_time() {
    let data = data::load("moons", 3).unwrap();
    let straggler = Some(Straggler {
        worker: 2,
        slowdown: 3.0,
    });
    for (workers, straggler) in [(4, None), (4, straggler), (7, straggler), (2, None)] {
        let mut s = settings(workers, Algorithm::ParameterServer);
        s.straggler = straggler;
        let (updates, weights) = async_one_at_a_time(&s, &data);
        for threads in [true, false] {
            let run = train_async::<f32>(&s, &data, threads).unwrap();
            assert_eq!(
                run.updates, updates,
                "N={workers} {straggler:?} threads {threads}"
            );
            assert_eq!(
                run.weights, weights,
                "N={workers} {straggler:?} threads {threads}"
            );
        }
    }
}

#[test]
fn compressed_gradients_keep_the_replicas_together_and_send_what_they_say() {
    let data = spirals();
    let base = settings(4, Algorithm::Ring);
    let plain = train_sync::<f32>(&base, &data, false).unwrap();
    let parameters: u64 = plain.weights.iter().map(|w| w.numel() as u64).sum();
    for compression in COMPARED.into_iter().skip(1) {
        let s = DpSettings {
            compression,
            ..base.clone()
        };
        let run = train_sync::<f32>(&s, &data, true).unwrap();
        assert!(run.replicas_identical, "{compression:?}");
        assert!(
            run.steps.iter().all(|st| st.loss.is_finite()),
            "{compression:?}"
        );
        assert_eq!(
            train_sync::<f32>(&s, &data, false).unwrap().weights,
            run.weights
        );
        let expected = match compression {
            // The ring's 2(N − 1)/N of the gradient from each of 4, 2 bytes a value.
            Compression::Fp16 | Compression::Bf16 => plain.bytes_per_step / 2,
            // k pairs of 4-byte words from each worker to the 3 others.
            Compression::TopK { fraction, .. } => {
                let k = Compression::kept(fraction, parameters as usize) as u64;
                4 * 3 * 2 * k * 4
            }
            Compression::None => plain.bytes_per_step,
        };
        assert_eq!(run.bytes_per_step, expected, "{compression:?}");
        assert_ne!(
            run.weights, plain.weights,
            "{compression:?} changed nothing"
        );
    }
}

#[test]
fn every_compression_is_compared_on_the_same_steps() {
    let data = spirals();
    let (train, test) = data.split(0.2, 3);
    let rows = compare_compressions(&settings(4, Algorithm::Ring), &train, &test, false).unwrap();
    assert_eq!(rows.len(), COMPARED.len());
    assert_eq!(rows[0].compression, Compression::None);
    for row in &rows {
        assert!(
            row.replicas_identical && row.final_loss.is_finite(),
            "{row:?}"
        );
        assert!((0.0..=1.0).contains(&row.test_accuracy));
        assert!(row.bytes_per_step <= rows[0].bytes_per_step, "{row:?}");
    }
    for lang in crate::text::Lang::ALL {
        for c in COMPARED {
            assert!(!c.words().say(lang).starts_with("compression."), "{c:?}");
        }
    }
}
