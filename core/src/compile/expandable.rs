//! PyTorch's caching allocator with `expandable_segments:True`, modelled
//! as [`super::allocator`] is: instead of a segment per device request,
//! each pool has one segment of virtual addresses that grows, its memory
//! mapped in pages (2 MiB for the small pool, 20 MiB for the large one:
//! `find_expandable_block` in `CUDACachingAllocator.cpp`). PyTorch keeps one
//! such segment per stream and pool, sizes its address space to about the
//! device's memory and adds another when it runs out; one stream and a
//! segment larger than any device are modelled here. A request takes the
//! smallest free block whose pages are all mapped; else the free block at
//! the lowest address, mapping the pages it lacks. Before out of memory,
//! every mapped page that no tensor touches is unmapped and the request
//! retried. Blocks are rounded, split and merged by the same rules; since a
//! pool is one segment, freed neighbours always merge.
//!
//! "Reserved" counts the mapped pages. In [`Stats`], `segments_made` and
//! `segments_released` count pages mapped and unmapped; in an [`Oom`],
//! `segment` is the bytes of pages the request needed mapped and
//! `largest_free` the largest free block with every page mapped.

use std::collections::BTreeSet;

use super::allocator::{
    Block, Handle, LARGE_BUFFER, Oom, Pool, SMALL_BUFFER, Stats, give_back, pool_of, round_size,
    take,
};

/// The virtual addresses a pool's segment spans (never all mapped).
const VIRTUAL: u64 = 1 << 46;

/// One pool's segment: its blocks, tiling `0..VIRTUAL`, and its mapped pages.
#[derive(Clone, Debug)]
struct Space {
    page: u64,
    blocks: Vec<Block>,
    mapped: BTreeSet<u64>,
}

impl Space {
    fn new(page: u64) -> Self {
        Self {
            page,
            blocks: vec![Block {
                offset: 0,
                size: VIRTUAL,
                used: false,
            }],
            mapped: BTreeSet::new(),
        }
    }

    /// The pages `offset..offset + size` touches.
    fn pages(&self, offset: u64, size: u64) -> std::ops::RangeInclusive<u64> {
        offset / self.page..=(offset + size.max(1) - 1) / self.page
    }

    /// Pages of `offset..offset + size` not mapped yet.
    fn unmapped(&self, offset: u64, size: u64) -> u64 {
        self.pages(offset, size)
            .filter(|p| !self.mapped.contains(p))
            .count() as u64
    }
}

/// The allocator over a device of `capacity` bytes.
#[derive(Clone, Debug)]
pub struct ExpandableAllocator {
    capacity: u64,
    /// The small pool's segment, then the large pool's.
    spaces: [Space; 2],
    allocated: u64,
    pub stats: Stats,
}

fn index(pool: Pool) -> usize {
    match pool {
        Pool::Small => 0,
        Pool::Large => 1,
    }
}

impl ExpandableAllocator {
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            spaces: [Space::new(SMALL_BUFFER), Space::new(LARGE_BUFFER)],
            allocated: 0,
            stats: Stats::default(),
        }
    }

    pub fn allocated(&self) -> u64 {
        self.allocated
    }

    /// The mapped pages, in bytes.
    pub fn reserved(&self) -> u64 {
        self.spaces
            .iter()
            .map(|s| s.mapped.len() as u64 * s.page)
            .sum()
    }

    /// Where a request of `rounded` bytes goes in `space`, and the pages it
    /// must map: the best-fitting free block needing no new page, else the
    /// free block at the lowest address.
    fn place(space: &Space, rounded: u64) -> Option<(usize, u64)> {
        let fits = || {
            space
                .blocks
                .iter()
                .enumerate()
                .filter(|(_, b)| !b.used && b.size >= rounded)
        };
        fits()
            .filter(|(_, b)| space.unmapped(b.offset, rounded) == 0)
            .min_by_key(|(_, b)| (b.size, b.offset))
            .map(|(i, _)| (i, 0))
            .or_else(|| {
                fits()
                    .min_by_key(|(_, b)| b.offset)
                    .map(|(i, b)| (i, space.unmapped(b.offset, rounded)))
            })
    }

    /// Serves a request of `bytes`.
    pub fn malloc(&mut self, bytes: u64) -> Result<Handle, Oom> {
        let rounded = round_size(bytes);
        let pool = pool_of(rounded);
        let s = index(pool);
        let mut found = Self::place(&self.spaces[s], rounded);
        let room = |me: &Self, pages: u64| me.reserved() + pages * me.spaces[s].page <= me.capacity;
        if found.is_none_or(|(_, pages)| !room(self, pages)) {
            self.stats.flushes += 1;
            self.unmap_unused();
            found = Self::place(&self.spaces[s], rounded);
        }
        let Some((i, _)) = found.filter(|(_, pages)| room(self, *pages)) else {
            return Err(Oom {
                requested: bytes,
                rounded,
                segment: found.map_or(0, |(_, pages)| pages * self.spaces[s].page),
                allocated: self.allocated,
                reserved: self.reserved(),
                capacity: self.capacity,
                largest_free: self.spaces[s]
                    .blocks
                    .iter()
                    .filter(|b| !b.used && self.spaces[s].unmapped(b.offset, b.size) == 0)
                    .map(|b| b.size)
                    .max()
                    .unwrap_or(0),
            });
        };
        let space = &mut self.spaces[s];
        let offset = space.blocks[i].offset;
        let (size, split) = take(&mut space.blocks, i, rounded, pool);
        self.stats.splits += u32::from(split);
        // The pages of the block handed out (a remainder too small to
        // split off lies in a page its next neighbour already touches).
        for page in space.pages(offset, size) {
            if space.mapped.insert(page) {
                self.stats.segments_made += 1;
            }
        }
        self.allocated += size;
        self.stats.peak_allocated = self.stats.peak_allocated.max(self.allocated);
        self.stats.peak_reserved = self.stats.peak_reserved.max(self.reserved());
        Ok(Handle {
            segment: s as u32,
            offset,
        })
    }

    /// Returns `h`'s block, merged with its free neighbours. False for a
    /// handle that holds nothing.
    pub fn free(&mut self, h: Handle) -> bool {
        let Some((size, merges)) = self
            .spaces
            .get_mut(h.segment as usize)
            .and_then(|space| give_back(&mut space.blocks, h.offset))
        else {
            return false;
        };
        self.allocated -= size;
        self.stats.merges += merges;
        true
    }

    /// Unmaps every page no tensor touches; the bytes given back.
    pub fn unmap_unused(&mut self) -> u64 {
        let mut released = 0;
        for space in &mut self.spaces {
            let touched: BTreeSet<u64> = space
                .blocks
                .iter()
                .filter(|b| b.used)
                .flat_map(|b| space.pages(b.offset, b.size))
                .collect();
            let before = space.mapped.len();
            space.mapped.retain(|p| touched.contains(p));
            let gone = (before - space.mapped.len()) as u64;
            released += gone * space.page;
            self.stats.segments_released += gone as u32;
        }
        released
    }

    /// Checks the bookkeeping: the blocks tile each segment, no two free
    /// blocks are neighbours, every tensor's pages are mapped, and the
    /// totals hold.
    #[cfg(test)]
    pub(crate) fn check(&self) -> Result<(), String> {
        let mut allocated = 0;
        for (s, space) in self.spaces.iter().enumerate() {
            let mut at = 0;
            for (i, b) in space.blocks.iter().enumerate() {
                if b.offset != at || b.size == 0 {
                    return Err(format!("pool {s}: block {i} at {} of {}", b.offset, b.size));
                }
                if i > 0 && !b.used && !space.blocks[i - 1].used {
                    return Err(format!(
                        "pool {s}: free blocks {} and {i} not merged",
                        i - 1
                    ));
                }
                if b.used {
                    allocated += b.size;
                    if space.unmapped(b.offset, b.size) > 0 {
                        return Err(format!("pool {s}: block {i} not mapped"));
                    }
                }
                at += b.size;
            }
            if at != VIRTUAL {
                return Err(format!("pool {s}: blocks cover {at}"));
            }
        }
        if allocated != self.allocated || self.reserved() > self.capacity {
            return Err(format!(
                "allocated {allocated} vs {}, reserved {}",
                self.allocated,
                self.reserved()
            ));
        }
        Ok(())
    }
}
