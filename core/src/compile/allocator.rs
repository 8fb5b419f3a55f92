//! A model of PyTorch's CUDA caching allocator
//! (`c10/cuda/CUDACachingAllocator.cpp`), run on block offsets: no device
//! memory is touched. Its rules, each the constant or function of that
//! file it models:
//! - a request is rounded up to a multiple of 512 B, at least 512 B
//!   (`kMinBlockSize`, `round_size`);
//! - requests of at most 1 MiB are served from the small pool, larger ones
//!   from the large pool (`kSmallSize`); a segment serves one pool only;
//! - the free cached block that fits best (the smallest that is large
//!   enough) is taken (`get_free_block`, a best-fit set ordered by size);
//! - when none fits, a new segment is asked of the device
//!   (`get_allocation_size`): 2 MiB for a small request (`kSmallBuffer`),
//!   20 MiB for a request under 10 MiB (`kLargeBuffer`, `kMinLargeAlloc`),
//!   else the request rounded up to 2 MiB (`kRoundLarge`);
//! - a block is split when what remains is at least 512 B in the small
//!   pool, or more than 1 MiB in the large pool (`should_split`); else the
//!   request holds the whole block;
//! - a freed block merges with free neighbours in its own segment, never
//!   across segments (`free_block`, `try_merge_blocks`);
//! - when the device refuses a segment, every cached segment with nothing
//!   allocated in it is released and the request is retried; if that fails
//!   too, it is out of memory (`release_cached_blocks`; the pass that first
//!   releases blocks past `max_split_size` is left out: that limit is off
//!   by default);
//! - `empty_cache` releases every segment with nothing allocated in it.
//!
//! "Allocated" counts the blocks handed out (rounded, and whole when not
//! split), "reserved" the segments, as `memory_allocated` and
//! `memory_reserved` do; reserved − allocated is the cache, free but held.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::memory::trace::{Event, EventKind};

/// The smallest block, and the unit requests are rounded to.
pub const MIN_BLOCK: u64 = 512;
/// The largest request the small pool serves.
pub const SMALL_SIZE: u64 = 1 << 20;
/// A small pool's segment.
pub const SMALL_BUFFER: u64 = 2 << 20;
/// A large pool's segment for requests under [`MIN_LARGE_ALLOC`].
pub const LARGE_BUFFER: u64 = 20 << 20;
pub const MIN_LARGE_ALLOC: u64 = 10 << 20;
/// What larger segments are rounded up to.
pub const ROUND_LARGE: u64 = 2 << 20;

/// `bytes` rounded up to whole 512 B units, at least one.
pub fn round_size(bytes: u64) -> u64 {
    bytes.max(1).div_ceil(MIN_BLOCK) * MIN_BLOCK
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Pool {
    Small,
    Large,
}

/// The pool a rounded request is served from.
pub fn pool_of(rounded: u64) -> Pool {
    if rounded <= SMALL_SIZE {
        Pool::Small
    } else {
        Pool::Large
    }
}

/// The segment asked of the device when no cached block fits.
pub fn segment_size(rounded: u64) -> u64 {
    if rounded <= SMALL_SIZE {
        SMALL_BUFFER
    } else if rounded < MIN_LARGE_ALLOC {
        LARGE_BUFFER
    } else {
        rounded.div_ceil(ROUND_LARGE) * ROUND_LARGE
    }
}

/// Whether a block is split when `remaining` bytes of it would be left.
pub fn should_split(pool: Pool, remaining: u64) -> bool {
    match pool {
        Pool::Small => remaining >= MIN_BLOCK,
        Pool::Large => remaining > SMALL_SIZE,
    }
}

/// A block of a segment: its place, its size, whether it is handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Block {
    pub offset: u64,
    pub size: u64,
    pub used: bool,
}

/// A segment the device gave: its blocks tile it, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub pool: Pool,
    pub size: u64,
    pub blocks: Vec<Block>,
}

impl Segment {
    fn is_free(&self) -> bool {
        self.blocks.iter().all(|b| !b.used)
    }
}

/// Where an allocation sits: its segment and offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Handle {
    pub segment: u32,
    pub offset: u64,
}

/// A request the allocator could not serve, and the state it failed in —
/// what PyTorch's "CUDA out of memory" message reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Oom {
    pub requested: u64,
    pub rounded: u64,
    /// The segment it asked the device for.
    pub segment: u64,
    pub allocated: u64,
    pub reserved: u64,
    pub capacity: u64,
    /// The largest free cached block of the request's pool.
    pub largest_free: u64,
}

/// What the allocator did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    pub segments_made: u32,
    pub segments_released: u32,
    pub splits: u32,
    pub merges: u32,
    /// Times the cache was flushed for a request the device refused.
    pub flushes: u32,
    pub peak_allocated: u64,
    pub peak_reserved: u64,
}

/// The allocator over a device of `capacity` bytes.
#[derive(Clone, Debug)]
pub struct CachingAllocator {
    capacity: u64,
    segments: BTreeMap<u32, Segment>,
    next_segment: u32,
    allocated: u64,
    reserved: u64,
    pub stats: Stats,
}

impl CachingAllocator {
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            segments: BTreeMap::new(),
            next_segment: 0,
            allocated: 0,
            reserved: 0,
            stats: Stats::default(),
        }
    }

    pub fn allocated(&self) -> u64 {
        self.allocated
    }

    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    pub fn segments(&self) -> impl Iterator<Item = (u32, &Segment)> {
        self.segments.iter().map(|(id, s)| (*id, s))
    }

    /// The largest free cached block in `pool`.
    pub fn largest_free(&self, pool: Pool) -> u64 {
        self.free_blocks(pool)
            .map(|(_, _, b)| b.size)
            .max()
            .unwrap_or(0)
    }

    /// Free blocks of `pool`: (segment, index, block).
    fn free_blocks(&self, pool: Pool) -> impl Iterator<Item = (u32, usize, &Block)> {
        self.segments
            .iter()
            .filter(move |(_, s)| s.pool == pool)
            .flat_map(|(id, s)| {
                s.blocks
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| !b.used)
                    .map(move |(i, b)| (*id, i, b))
            })
    }

    /// Serves a request of `bytes`.
    pub fn malloc(&mut self, bytes: u64) -> Result<Handle, Oom> {
        let rounded = round_size(bytes);
        let pool = pool_of(rounded);
        let found = match self.best_fit(pool, rounded) {
            Some(found) => Some(found),
            None => self.new_segment(pool, rounded).or_else(|| {
                self.stats.flushes += 1;
                self.release_free_segments();
                self.new_segment(pool, rounded)
            }),
        };
        let Some((segment, index)) = found else {
            return Err(self.oom(bytes, rounded));
        };
        let Some(seg) = self.segments.get_mut(&segment) else {
            return Err(self.oom(bytes, rounded));
        };
        let offset = seg.blocks[index].offset;
        let (size, split) = take(&mut seg.blocks, index, rounded, pool);
        self.stats.splits += u32::from(split);
        self.allocated += size;
        self.stats.peak_allocated = self.stats.peak_allocated.max(self.allocated);
        Ok(Handle { segment, offset })
    }

    /// The state a request of `bytes` (`rounded`) failed in.
    fn oom(&self, bytes: u64, rounded: u64) -> Oom {
        Oom {
            requested: bytes,
            rounded,
            segment: segment_size(rounded),
            allocated: self.allocated,
            reserved: self.reserved,
            capacity: self.capacity,
            largest_free: self.largest_free(pool_of(rounded)),
        }
    }

    /// The smallest free block of `pool` holding `rounded` bytes (the
    /// lowest segment and offset among equals).
    fn best_fit(&self, pool: Pool, rounded: u64) -> Option<(u32, usize)> {
        self.free_blocks(pool)
            .filter(|(_, _, b)| b.size >= rounded)
            .min_by_key(|(s, _, b)| (b.size, *s, b.offset))
            .map(|(s, i, _)| (s, i))
    }

    /// A new segment for a request of `rounded`, if the device has room.
    fn new_segment(&mut self, pool: Pool, rounded: u64) -> Option<(u32, usize)> {
        let size = segment_size(rounded);
        if self.reserved + size > self.capacity {
            return None;
        }
        let id = self.next_segment;
        self.next_segment += 1;
        self.segments.insert(
            id,
            Segment {
                pool,
                size,
                blocks: vec![Block {
                    offset: 0,
                    size,
                    used: false,
                }],
            },
        );
        self.reserved += size;
        self.stats.segments_made += 1;
        self.stats.peak_reserved = self.stats.peak_reserved.max(self.reserved);
        Some((id, 0))
    }

    /// Returns `h`'s block to the cache, merged with free neighbours in its
    /// segment. False for a handle that holds nothing.
    pub fn free(&mut self, h: Handle) -> bool {
        let Some((size, merges)) = self
            .segments
            .get_mut(&h.segment)
            .and_then(|seg| give_back(&mut seg.blocks, h.offset))
        else {
            return false;
        };
        self.allocated -= size;
        self.stats.merges += merges;
        true
    }

    /// Releases every segment with nothing allocated in it; the bytes given
    /// back to the device.
    pub fn empty_cache(&mut self) -> u64 {
        self.release_free_segments()
    }

    fn release_free_segments(&mut self) -> u64 {
        let free: Vec<u32> = self
            .segments
            .iter()
            .filter(|(_, s)| s.is_free())
            .map(|(id, _)| *id)
            .collect();
        let mut released = 0;
        for id in free {
            if let Some(seg) = self.segments.remove(&id) {
                released += seg.size;
                self.stats.segments_released += 1;
            }
        }
        self.reserved -= released;
        released
    }

    /// Checks the bookkeeping: every segment is tiled by its blocks in
    /// order, no two free blocks are neighbours, and the totals are the
    /// blocks' and the segments'.
    #[cfg(test)]
    pub(crate) fn check(&self) -> Result<(), String> {
        let (mut allocated, mut reserved) = (0, 0);
        for (id, seg) in &self.segments {
            let mut at = 0;
            for (i, b) in seg.blocks.iter().enumerate() {
                if b.offset != at || b.size == 0 {
                    return Err(format!(
                        "segment {id}: block {i} at {} of {}",
                        b.offset, b.size
                    ));
                }
                if i > 0 && !b.used && !seg.blocks[i - 1].used {
                    return Err(format!(
                        "segment {id}: free blocks {} and {i} not merged",
                        i - 1
                    ));
                }
                at += b.size;
                if b.used {
                    allocated += b.size;
                }
            }
            if at != seg.size {
                return Err(format!("segment {id}: blocks cover {at} of {}", seg.size));
            }
            reserved += seg.size;
        }
        if (allocated, reserved) != (self.allocated, self.reserved) || reserved > self.capacity {
            return Err(format!(
                "allocated {allocated} vs {}, reserved {reserved} vs {} (capacity {})",
                self.allocated, self.reserved, self.capacity
            ));
        }
        Ok(())
    }
}

/// Hands out block `index` of `blocks` for `rounded` bytes of `pool`,
/// split when enough would remain; the bytes handed out (the whole block
/// when not split) and whether it was split.
pub(super) fn take(blocks: &mut Vec<Block>, index: usize, rounded: u64, pool: Pool) -> (u64, bool) {
    let block = blocks[index];
    let remaining = block.size - rounded;
    let split = should_split(pool, remaining);
    if split {
        blocks.insert(
            index + 1,
            Block {
                offset: block.offset + rounded,
                size: remaining,
                used: false,
            },
        );
    }
    let size = if split { rounded } else { block.size };
    blocks[index] = Block {
        offset: block.offset,
        size,
        used: true,
    };
    (size, split)
}

/// Returns the used block at `offset` of `blocks`, merged with its free
/// neighbours: the bytes it held and the merges, or `None` when no used
/// block starts there.
pub(super) fn give_back(blocks: &mut Vec<Block>, offset: u64) -> Option<(u64, u32)> {
    let i = blocks.iter().position(|b| b.offset == offset && b.used)?;
    blocks[i].used = false;
    let size = blocks[i].size;
    let mut merges = 0;
    if i + 1 < blocks.len() && !blocks[i + 1].used {
        let next = blocks.remove(i + 1);
        blocks[i].size += next.size;
        merges += 1;
    }
    if i > 0 && !blocks[i - 1].used {
        let this = blocks.remove(i);
        blocks[i - 1].size += this.size;
        merges += 1;
    }
    Some((size, merges))
}

/// The allocator's totals after one event of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReplayPoint {
    /// The trace's point (op index) of the event.
    pub op: u32,
    /// Bytes the program holds (unrounded), handed out, and reserved.
    pub requested: u64,
    pub allocated: u64,
    pub reserved: u64,
}

/// A trace replayed through the allocator.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Replay {
    pub points: Vec<ReplayPoint>,
    pub stats: Stats,
    /// The request that failed, and its event's index, if one did (the
    /// replay stops there).
    pub oom: Option<(usize, Oom)>,
}

/// Replays an allocation trace's events (allocs and frees of buffers by
/// id) through an allocator over `capacity` bytes.
pub fn replay(events: &[Event], capacity: u64) -> Replay {
    let mut alloc = CachingAllocator::new(capacity);
    let mut live: BTreeMap<u64, (Handle, u64)> = BTreeMap::new();
    let mut requested = 0;
    let mut points = Vec::with_capacity(events.len());
    for (i, e) in events.iter().enumerate() {
        match e.kind {
            EventKind::Alloc => match alloc.malloc(e.bytes) {
                Ok(h) => {
                    live.insert(e.buffer, (h, e.bytes));
                    requested += e.bytes;
                }
                Err(oom) => {
                    return Replay {
                        points,
                        stats: alloc.stats,
                        oom: Some((i, oom)),
                    };
                }
            },
            EventKind::Free => {
                if let Some((h, bytes)) = live.remove(&e.buffer) {
                    alloc.free(h);
                    requested -= bytes;
                }
            }
        }
        points.push(ReplayPoint {
            op: e.op,
            requested,
            allocated: alloc.allocated(),
            reserved: alloc.reserved(),
        });
    }
    Replay {
        points,
        stats: alloc.stats,
        oom: None,
    }
}
