//! Batching on the virtual clock: one step's cost, the schedulers' start
//! rules, the stream's arrivals, what each scheme achieves, bad settings.

use super::InferError;
use super::batching::{BatchingSettings, Scheme, padding_slots, simulate, sweep, sweep_rates};
use super::calc::{DevicePreset, ServeSettings, StepCost, serve};
use crate::memory::transformer::Preset;

fn llama_h100() -> ServeSettings {
    ServeSettings::preset(Preset::Llama7b, DevicePreset::H100)
}

#[test]
fn a_step_costs_what_the_calculator_says() {
    let s = ServeSettings {
        batch: 4,
        ..llama_h100()
    };
    let r = serve(&s).unwrap();
    let cost = StepCost::new(&s).unwrap();
    let p = s.prompt as f64;
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
    let prefill = cost.prefill(p, p * p);
    let decode = cost.decode(4.0, 4.0 * s.context as f64);
    for (a, b) in [
        (prefill.flops, r.prefill.flops),
        (prefill.bytes, r.prefill.bytes),
        (decode.flops, r.decode.flops),
        (decode.bytes, r.decode.bytes),
    ] {
        assert!(close(a, b), "{a} vs {b}");
    }
    assert_eq!(decode.bound, r.decode.bound);
}

#[test]
fn one_request_alone_takes_its_prefill_and_its_decode_steps_in_both_schemes() {
    let s = BatchingSettings {
        requests: 1,
        ..BatchingSettings::new(llama_h100(), 1.0)
    };
    let r = s.draw()[0];
    let cost = StepCost::new(&llama_h100()).unwrap();
    let p = r.prompt as f64;
    let ttft = cost.prefill(p, p * p).seconds;
    let decode: f64 = (0..r.output - 1)
        .map(|i| cost.decode(1.0, p + 1.0 + i as f64).seconds)
        .sum();
    for scheme in Scheme::ALL {
        let run = simulate(&s, scheme).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
        assert!(
            close(run.ttft_p50, ttft),
            "{scheme:?}: {} vs {ttft}",
            run.ttft_p50
        );
        assert!(close(run.e2e_p99, ttft + decode), "{scheme:?}");
        assert!(close(run.throughput * run.makespan, r.output as f64));
        assert_eq!(run.padding_share, 0.0);
    }
}

#[test]
fn continuous_batching_serves_more_and_pads_nothing_when_requests_crowd_in() {
    let s = BatchingSettings::new(llama_h100(), 200.0);
    let st = simulate(&s, Scheme::Static).unwrap();
    let co = simulate(&s, Scheme::Continuous).unwrap();
    assert!(st.padding_share > 0.2, "static pads: {}", st.padding_share);
    assert_eq!(co.padding_share, 0.0);
    assert!(
        co.throughput > 1.2 * st.throughput,
        "{} vs {}",
        co.throughput,
        st.throughput
    );
    assert!(co.e2e_p50 < st.e2e_p50);
    // At a trickle, a static batch waits for company; continuous does not.
    let slow = BatchingSettings::new(llama_h100(), 0.2);
    let st = simulate(&slow, Scheme::Static).unwrap();
    let co = simulate(&slow, Scheme::Continuous).unwrap();
    assert!(
        st.ttft_p50 > co.ttft_p50 + 1.0,
        "{} vs {}",
        st.ttft_p50,
        co.ttft_p50
    );
}

#[test]
fn arrivals_are_poisson_at_the_rate_and_the_same_requests_at_every_rate() {
    let s = BatchingSettings {
        requests: 5000,
        ..BatchingSettings::new(llama_h100(), 4.0)
    };
    let a = s.draw();
    let mean_gap = a[a.len() - 1].arrival / a.len() as f64;
    assert!((mean_gap * 4.0 - 1.0).abs() < 0.05, "mean gap {mean_gap}");
    let b = BatchingSettings {
        rate: 8.0,
        ..s.clone()
    }
    .draw();
    assert!(
        a.iter()
            .zip(&b)
            .all(|(x, y)| (x.prompt, x.output) == (y.prompt, y.output))
    );
    assert!(
        a.iter()
            .zip(&b)
            .all(|(x, y)| (x.arrival - 2.0 * y.arrival).abs() < 1e-9 * x.arrival.max(1.0))
    );
    let s = BatchingSettings::new(llama_h100(), 1.0);
    let rates = sweep_rates(&s).unwrap();
    let points = sweep(&s, &rates).unwrap();
    // Throughput grows with the rate until the server saturates; past
    // the rough capacity continuous batching serves more than static.
    assert!(
        points[..5]
            .windows(2)
            .all(|w| w[1].continuous.throughput > w[0].continuous.throughput)
    );
    let last = &points[points.len() - 1];
    assert!(last.continuous.throughput > last.static_run.throughput);
    assert_eq!(padding_slots(&[3, 10, 7]), 7 + 3);
    assert_eq!(padding_slots(&[]), 0);
}

#[test]
fn a_static_batch_starts_when_full_at_its_deadline_or_after_the_last_arrival() {
    use super::batching::{Request, simulate_requests};
    let s = BatchingSettings {
        max_batch: 2,
        max_wait_s: 2.0,
        ..BatchingSettings::new(llama_h100(), 1.0)
    };
    let cost = StepCost::new(&llama_h100()).unwrap();
    let at = |arrival: f64| Request {
        arrival,
        prompt: 100,
        output: 1,
    };
    let prefill = |n: f64| cost.prefill(100.0 * n, 1e4 * n).seconds;
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    // A stream's median time to first token (of three) and its makespan.
    let expect = |scheme, arrivals: [f64; 3], ttft: [f64; 3], makespan: f64| {
        let run = simulate_requests(&s, scheme, &arrivals.map(at)).unwrap();
        let mut sorted = ttft.to_vec();
        sorted.sort_by(f64::total_cmp);
        assert!(
            close(run.ttft_p50, sorted[1]),
            "{} vs {sorted:?}",
            run.ttft_p50
        );
        assert!(
            close(run.makespan, makespan),
            "{} vs {makespan}",
            run.makespan
        );
    };
    // Full at 0.5 (two waiting); the third is the last: no wait for company.
    let (one, two) = (prefill(1.0), prefill(2.0));
    expect(
        Scheme::Static,
        [0.0, 0.5, 10.0],
        [0.5 + two, two, one],
        10.0 + one,
    );
    // Alone until its deadline at 2 s, then the next two together at 6.
    expect(
        Scheme::Static,
        [0.0, 5.0, 6.0],
        [2.0 + one, 1.0 + two, two],
        6.0 + two,
    );
    // Continuous batching starts each at once.
    expect(Scheme::Continuous, [0.0, 5.0, 6.0], [one; 3], 6.0 + one);
}

#[test]
fn bad_batching_settings_are_refused_with_the_reason() {
    let ok = BatchingSettings::new(llama_h100(), 1.0);
    let refused = |s: BatchingSettings| simulate(&s, Scheme::Continuous).unwrap_err();
    assert!(matches!(
        refused(BatchingSettings {
            rate: 0.0,
            ..ok.clone()
        }),
        InferError::Rate { .. }
    ));
    assert!(matches!(
        refused(BatchingSettings {
            rate: f64::NAN,
            ..ok.clone()
        }),
        InferError::Rate { .. }
    ));
    assert!(matches!(
        refused(BatchingSettings {
            max_batch: 0,
            ..ok.clone()
        }),
        InferError::MaxBatch { .. }
    ));
    assert!(matches!(
        refused(BatchingSettings {
            output: (0, 4),
            ..ok.clone()
        }),
        InferError::OutputLengths { .. }
    ));
    assert!(matches!(
        refused(BatchingSettings {
            max_wait_s: -1.0,
            ..ok.clone()
        }),
        InferError::MaxWait { .. }
    ));
    assert!(matches!(sweep(&ok, &[]), Err(InferError::Rates { .. })));
}

#[test]
fn chunked_prefill_is_continuous_batching_for_a_short_prompt_and_spares_the_decodes_a_long_one() {
    use super::batching::{Request, Scheme, simulate_requests};
    let s = BatchingSettings::new(
        ServeSettings::preset(Preset::Llama7b, DevicePreset::H100),
        1.0,
    );
    // One request alone, its prompt within one chunk: the same times.
    let one = [Request {
        arrival: 0.0,
        prompt: 300,
        output: 20,
    }];
    let co = simulate_requests(&s, Scheme::Continuous, &one).unwrap();
    let ch = simulate_requests(&s, Scheme::Chunked, &one).unwrap();
    assert_eq!((co.ttft_p50, co.e2e_p50), (ch.ttft_p50, ch.e2e_p50));
    // A long prompt arriving while another decodes: continuous batching
    // stops the decode for the whole prefill, chunked prefill spreads it
    // over iterations the decode also runs in.
    let two = [
        Request {
            arrival: 0.0,
            prompt: 16,
            output: 200,
        },
        Request {
            arrival: 0.05,
            prompt: 8000,
            output: 2,
        },
    ];
    let co = simulate_requests(&s, Scheme::Continuous, &two).unwrap();
    let ch = simulate_requests(&s, Scheme::Chunked, &two).unwrap();
    assert!(
        ch.tpot_p99 < co.tpot_p99,
        "{} vs {}",
        ch.tpot_p99,
        co.tpot_p99
    );
    // Its prompt in chunks, the long request's first token comes later.
    assert!(ch.ttft_p99 > co.ttft_p99);
    // A chunk too small for a full batch's decodes is refused, by chunked
    // prefill only.
    let small = BatchingSettings {
        chunk_tokens: s.max_batch,
        ..s.clone()
    };
    assert!(matches!(
        simulate_requests(&small, Scheme::Chunked, &two),
        Err(InferError::ChunkTokens { .. })
    ));
    assert!(simulate_requests(&small, Scheme::Continuous, &two).is_ok());
    // Requests of one token have no time per output token.
    let single = [Request {
        arrival: 0.0,
        prompt: 8,
        output: 1,
    }];
    assert!(
        simulate_requests(&s, Scheme::Chunked, &single)
            .unwrap()
            .tpot_p99
            .is_nan()
    );
}
