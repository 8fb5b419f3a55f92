//! The KV memory as the schedulers' limit: contiguous reservation against
//! the paged cache on the virtual clock — what each admits where memory
//! binds, preemption that loses no request, nothing changed where memory
//! does not bind, and a memory too small refused.

use super::InferError;
use super::batching::{BatchingRun, BatchingSettings, KvLayout, Scheme, capacity, simulate};
use super::calc::{DevicePreset, ServeSettings, StepCost};
use crate::memory::transformer::Preset;

/// Llama 7B (fp16: 13.5 GB of weights) on an H100 cut to `memory_gb`.
fn llama_in(memory_gb: f64, rate: f64) -> BatchingSettings {
    let mut serve = ServeSettings::preset(Preset::Llama7b, DevicePreset::H100);
    serve.device.memory_gb = memory_gb;
    BatchingSettings {
        max_batch: 128,
        ..BatchingSettings::new(serve, rate)
    }
}

fn laid_out(s: &BatchingSettings, kv: KvLayout) -> BatchingSettings {
    BatchingSettings { kv, ..s.clone() }
}

/// Every request answered: the output tokens the run counts are the
/// stream's.
fn all_served(s: &BatchingSettings, run: &BatchingRun) {
    let tokens: u64 = s.draw().iter().map(|r| r.output).sum();
    let counted = run.throughput * run.makespan;
    assert!(
        (counted - tokens as f64).abs() <= 1e-6 * tokens as f64,
        "{:?}: {counted} of {tokens} tokens",
        run.scheme
    );
}

#[test]
fn where_memory_binds_paging_runs_more_sequences_and_serves_more() {
    // 24 GB: (24 − 13.48) GB ÷ 524,288 bytes a token = 20,071 tokens of
    // cache beside the weights, so contiguous reservation of the longest
    // request (1,024 tokens) runs 19 at a time, while requests use about
    // 400 tokens on average.
    let s = llama_in(24.0, 50.0);
    let cost = StepCost::new(&s.serve).unwrap();
    let kv = capacity(&s, &cost).unwrap();
    let (tokens, slots) = (kv.tokens, kv.reserved_slots());
    assert_eq!((tokens, slots), (20_071, 19), "{tokens} tokens");
    for scheme in [Scheme::Continuous, Scheme::Chunked] {
        let co = simulate(&laid_out(&s, KvLayout::Contiguous), scheme).unwrap();
        let pa = simulate(&laid_out(&s, KvLayout::Paged), scheme).unwrap();
        all_served(&s, &co);
        all_served(&s, &pa);
        assert!(
            co.mean_batch <= slots as f64,
            "{scheme:?} {}",
            co.mean_batch
        );
        assert!(
            pa.mean_batch > 1.5 * co.mean_batch,
            "{scheme:?}: {} vs {}",
            pa.mean_batch,
            co.mean_batch
        );
        assert!(
            pa.throughput > 1.3 * co.throughput,
            "{scheme:?}: {} vs {}",
            pa.throughput,
            co.throughput
        );
        assert!(co.kv_waste > 0.4, "{scheme:?}: {}", co.kv_waste);
        assert!(pa.kv_waste < 0.05, "{scheme:?}: {}", pa.kv_waste);
        assert_eq!(co.preempted, 0);
        assert_eq!((co.kv, pa.kv), (KvLayout::Contiguous, KvLayout::Paged));
    }
}

#[test]
fn preempted_requests_are_recomputed_and_every_one_is_answered() {
    // Tight memory and many long outputs: the paged cache admits on what
    // requests hold now, runs out as they grow, and preempts.
    let s = BatchingSettings {
        output: (256, 512),
        block_tokens: 32,
        ..llama_in(16.0, 100.0)
    };
    for scheme in [Scheme::Continuous, Scheme::Chunked] {
        let pa = simulate(&laid_out(&s, KvLayout::Paged), scheme).unwrap();
        assert!(pa.preempted > 0, "{scheme:?}");
        all_served(&s, &pa);
        assert!(pa.ttft_p99.is_finite() && pa.e2e_p99 >= pa.ttft_p99);
    }
    // A static batch runs to its end and cannot preempt: it reserves the
    // worst case whichever layout the server has.
    let st = simulate(&laid_out(&s, KvLayout::Paged), Scheme::Static).unwrap();
    let st_contiguous = simulate(&laid_out(&s, KvLayout::Contiguous), Scheme::Static).unwrap();
    assert_eq!(st, st_contiguous);
    assert_eq!((st.kv, st.preempted), (KvLayout::Contiguous, 0));
    all_served(&s, &st);
    assert!(st.mean_batch <= s.kv_capacity().unwrap().reserved_slots() as f64);
}

#[test]
fn where_memory_does_not_bind_the_layout_changes_only_the_waste() {
    // 80 GB holds 126 of the longest requests; batches of 32 never reach it.
    let s = BatchingSettings::new(
        ServeSettings::preset(Preset::Llama7b, DevicePreset::H100),
        20.0,
    );
    for scheme in [Scheme::Continuous, Scheme::Chunked] {
        let co = simulate(&laid_out(&s, KvLayout::Contiguous), scheme).unwrap();
        let pa = simulate(&laid_out(&s, KvLayout::Paged), scheme).unwrap();
        let times = |r: &BatchingRun| (r.throughput, r.ttft_p99, r.e2e_p99, r.mean_batch);
        assert_eq!(times(&co), times(&pa), "{scheme:?}");
        assert_eq!(pa.preempted, 0);
        assert!(
            pa.kv_waste < 0.1 && co.kv_waste > 0.4,
            "{} {}",
            pa.kv_waste,
            co.kv_waste
        );
    }
}

#[test]
fn a_memory_that_cannot_hold_the_longest_request_alone_is_refused() {
    // 14 GB leaves about 1,000 tokens beside 13.5 GB of weights.
    let s = llama_in(14.0, 1.0);
    for kv in KvLayout::ALL {
        let err = simulate(&laid_out(&s, kv), Scheme::Continuous).unwrap_err();
        assert!(
            matches!(err, InferError::KvMemory { longest: 1024, .. }),
            "{err:?}"
        );
    }
    // Shorter requests fit.
    let short = BatchingSettings {
        prompt: (16, 200),
        output: (16, 200),
        ..s.clone()
    };
    assert!(simulate(&short, Scheme::Continuous).is_ok());
    let bad_block = BatchingSettings {
        block_tokens: 0,
        ..short
    };
    assert!(matches!(
        simulate(&bad_block, Scheme::Continuous),
        Err(InferError::BlockTokens { value: 0 })
    ));
}
