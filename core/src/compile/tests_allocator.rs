//! The caching allocator's rules on hand-written requests, its
//! bookkeeping over random ones, "out of memory" with memory free, and a
//! replay of the engine's own allocation trace.

use rand::{RngExt as _, SeedableRng as _};

use super::allocator::{
    CachingAllocator, Handle, LARGE_BUFFER, MIN_BLOCK, Pool, SMALL_BUFFER, pool_of, replay,
    round_size, segment_size, should_split,
};

const MIB: u64 = 1 << 20;

#[test]
fn sizes_round_to_512_bytes_and_pick_their_pool_and_segment() {
    assert_eq!(round_size(0), 512);
    assert_eq!(round_size(1), 512);
    assert_eq!(round_size(512), 512);
    assert_eq!(round_size(513), 1024);
    assert_eq!(pool_of(MIB), Pool::Small);
    assert_eq!(pool_of(MIB + 512), Pool::Large);
    assert_eq!(segment_size(512), 2 * MIB);
    assert_eq!(segment_size(MIB + 512), 20 * MIB);
    assert_eq!(segment_size(10 * MIB - 512), 20 * MIB);
    assert_eq!(segment_size(10 * MIB), 10 * MIB);
    assert_eq!(segment_size(11 * MIB + 512), 12 * MIB);
    assert!(should_split(Pool::Small, 512) && !should_split(Pool::Small, 0));
    assert!(!should_split(Pool::Large, MIB) && should_split(Pool::Large, MIB + 512));
}

#[test]
fn small_requests_share_a_segment_split_from_its_front() {
    let mut a = CachingAllocator::new(1 << 30);
    let x = a.malloc(1000).unwrap();
    let y = a.malloc(1).unwrap();
    assert_eq!((x.segment, x.offset), (0, 0));
    assert_eq!((y.segment, y.offset), (0, 1024));
    assert_eq!((a.allocated(), a.reserved()), (1024 + 512, SMALL_BUFFER));
    // A large request gets its own pool's segment.
    let z = a.malloc(3 * MIB).unwrap();
    assert_eq!(z.segment, 1);
    assert_eq!(a.reserved(), SMALL_BUFFER + LARGE_BUFFER);
    a.check().unwrap();
}

#[test]
fn a_large_block_is_not_split_for_a_remainder_of_1_mib_or_less() {
    let mut a = CachingAllocator::new(1 << 30);
    // 19.5 MiB in a 20 MiB segment: 0.5 MiB would remain, so it takes the
    // whole segment, and allocated counts all of it.
    a.malloc(19 * MIB + MIB / 2).unwrap();
    assert_eq!(a.allocated(), 20 * MIB);
    assert_eq!(a.stats.splits, 0);
    // 3 MiB in a new 20 MiB segment leaves 17 MiB: split.
    a.malloc(3 * MIB).unwrap();
    assert_eq!(a.allocated(), 23 * MIB);
    assert_eq!(a.stats.splits, 1);
    // 18 MiB gets a segment of its own size (past 10 MiB, rounded to
    // 2 MiB): nothing to split.
    a.malloc(18 * MIB).unwrap();
    assert_eq!((a.allocated(), a.reserved()), (41 * MIB, 58 * MIB));
    assert_eq!(a.stats.splits, 1);
    a.check().unwrap();
}

#[test]
fn the_best_fitting_free_block_is_reused_and_frees_merge_within_a_segment() {
    let mut a = CachingAllocator::new(1 << 30);
    let h: Vec<Handle> = [4096, 8192, 4096, 2048]
        .map(|b| a.malloc(b).unwrap())
        .to_vec();
    // Free the 8 KiB and the second 4 KiB block: not neighbours of each
    // other's free space yet (the 4 KiB one merges with the segment's tail
    // only after the 2 KiB block goes).
    assert!(a.free(h[1]));
    assert!(a.free(h[2]));
    a.check().unwrap();
    // Blocks 1 and 2 are neighbours: one free block of 12 KiB.
    let seg = a.segments().next().unwrap().1;
    assert!(seg.blocks.iter().any(|b| !b.used && b.size == 12288));
    // A 3 KiB request takes the smallest fitting free block: the 12 KiB
    // one beats the segment's tail (2 MiB − 18 KiB).
    let r = a.malloc(3000).unwrap();
    assert_eq!(r.offset, 4096);
    assert!(!a.free(Handle {
        segment: 0,
        offset: 99
    }));
    assert!(a.free(r) && a.free(h[0]) && a.free(h[3]));
    // Everything freed: the segment is one free block, still reserved.
    let seg = a.segments().next().unwrap().1;
    assert_eq!(seg.blocks.len(), 1);
    assert_eq!((a.allocated(), a.reserved()), (0, SMALL_BUFFER));
    assert_eq!(a.empty_cache(), SMALL_BUFFER);
    assert_eq!(a.reserved(), 0);
    a.check().unwrap();
}

#[test]
fn out_of_memory_although_more_than_the_request_is_free() {
    // A 60 MiB device: three 20 MiB segments, each holding three 6 MiB
    // tensors (and 2 MiB left over).
    let mut a = CachingAllocator::new(60 * MIB);
    let tensors: Vec<Handle> = (0..9).map(|_| a.malloc(6 * MIB).unwrap()).collect();
    assert_eq!(a.reserved(), 60 * MIB);
    // Free the middle tensor of each segment: 18 MiB free in the cache,
    // but in pieces of 6 MiB (+ 2 MiB tails) that never merge across
    // segments.
    for h in tensors.iter().skip(1).step_by(3) {
        assert!(a.free(*h));
    }
    assert_eq!(a.reserved() - a.allocated(), 24 * MIB);
    // 8 MiB fits no free block; the device has no room for a new 20 MiB
    // segment, and no segment is wholly free to release: out of memory.
    let oom = a.malloc(8 * MIB).unwrap_err();
    assert_eq!(oom.rounded, 8 * MIB);
    assert_eq!(oom.segment, 20 * MIB);
    assert_eq!(oom.reserved - oom.allocated, 24 * MIB);
    assert_eq!(oom.largest_free, 6 * MIB);
    assert_eq!((a.stats.flushes, a.stats.segments_released), (1, 0));
    // A whole segment's tensors freed: its merged block serves the request
    // from the cache.
    for h in &tensors[..3] {
        a.free(*h);
    }
    let h = a.malloc(8 * MIB).unwrap();
    assert_eq!((h.segment, a.reserved()), (0, 60 * MIB));
    a.check().unwrap();
}

#[test]
fn a_refused_segment_flushes_the_unused_cache_and_retries() {
    // 21 MiB: a 20 MiB segment, freed, stays cached; a small request then
    // needs a 2 MiB segment the device has no room for, until the cached
    // one is released.
    let mut a = CachingAllocator::new(21 * MIB);
    let big = a.malloc(19 * MIB + MIB / 2).unwrap();
    assert!(a.free(big));
    assert_eq!(a.reserved(), 20 * MIB);
    a.malloc(100).unwrap();
    assert_eq!((a.stats.flushes, a.stats.segments_released), (1, 1));
    assert_eq!((a.allocated(), a.reserved()), (512, SMALL_BUFFER));
    a.check().unwrap();
}

#[test]
fn random_requests_keep_the_bookkeeping_whole() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for capacity in [64 * MIB, 4096 * MIB] {
        let mut a = CachingAllocator::new(capacity);
        let mut live: Vec<(Handle, u64)> = Vec::new();
        let mut ooms = 0;
        for _ in 0..3000 {
            if live.is_empty() || rng.random_bool(0.5) {
                // Sizes across both pools: 1 B to 24 MiB, log-uniform.
                let bytes = 2f64.powf(rng.random_range(0.0..24.6)) as u64;
                match a.malloc(bytes) {
                    Ok(h) => {
                        assert!(live.iter().all(|(o, _)| *o != h), "{h:?} handed out twice");
                        live.push((h, bytes));
                    }
                    Err(oom) => {
                        ooms += 1;
                        assert!(oom.rounded > oom.largest_free);
                    }
                }
            } else {
                let (h, _) = live.swap_remove(rng.random_range(0..live.len()));
                assert!(a.free(h));
            }
            a.check().unwrap();
            let requested: u64 = live.iter().map(|(_, b)| *b).sum();
            assert!(requested <= a.allocated() && a.allocated() <= a.reserved());
        }
        // The small device ran out at times, the large one never.
        assert_eq!(ooms > 0, capacity == 64 * MIB, "{ooms} at {capacity}");
        for (h, _) in live {
            assert!(a.free(h));
        }
        assert_eq!(a.allocated(), 0);
        a.empty_cache();
        assert_eq!(a.reserved(), 0);
    }
}

#[test]
fn the_engines_training_step_replays_through_the_allocator() {
    use crate::memory::measure::measure_step;
    use crate::memory::mlp::MlpSettings;
    let shape = MlpSettings::default().shape().unwrap();
    let measured = measure_step(&shape).unwrap();
    let r = replay(&measured.events, 80_000 * MIB);
    assert!(r.oom.is_none());
    assert_eq!(r.points.len(), measured.events.len());
    // What the program holds is the trace's own count at every event;
    // rounding and caching only add to it.
    let peak_requested = r.points.iter().map(|p| p.requested).max().unwrap();
    assert_eq!(peak_requested, measured.peak);
    for p in &r.points {
        assert!(p.requested <= p.allocated && p.allocated <= p.reserved);
        assert!(p.allocated - p.requested < MIN_BLOCK * (measured.events.len() as u64));
    }
    assert!(r.stats.peak_reserved >= r.stats.peak_allocated);
    // The same trace on a device just below its reserved peak flushes the
    // cache or fails; never silently succeeds with more than it has.
    let tight = replay(&measured.events, r.stats.peak_reserved - 1);
    assert!(tight.oom.is_some() || tight.stats.flushes > 0);
    assert!(tight.stats.peak_reserved < r.stats.peak_reserved);
}

#[test]
fn expandable_segments_keep_their_books_and_tile_sizes_that_change() {
    use super::expandable::ExpandableAllocator;
    use super::step::growing;
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let mut a = ExpandableAllocator::new(256 * MIB);
    let mut live: Vec<Handle> = Vec::new();
    for _ in 0..2000 {
        if live.is_empty() || rng.random_bool(0.5) {
            let bytes = 2f64.powf(rng.random_range(0.0..24.6)) as u64;
            if let Ok(h) = a.malloc(bytes) {
                assert!(!live.contains(&h), "{h:?} handed out twice");
                live.push(h);
            }
        } else {
            let h = live.swap_remove(rng.random_range(0..live.len()));
            assert!(a.free(h));
        }
        a.check().unwrap();
    }
    for h in live {
        assert!(a.free(h));
    }
    assert_eq!(a.allocated(), 0);
    a.unmap_unused();
    assert_eq!(a.reserved(), 0);
    // Sizes that change: plain segments leave a 5 MiB sliver at the end of
    // each 30 MiB segment and cannot make a 20 MiB one; one growing
    // segment tiles the 25 MiB tensors and has room.
    let g = growing();
    let oom = g.plain.expect("plain segments run out");
    assert_eq!((g.plain_free, oom.largest_free), (15 * MIB, 5 * MIB));
    assert!(g.expandable.is_none(), "{:?}", g.expandable);
    assert_eq!(g.expandable_reserved, 100 * MIB);
}
