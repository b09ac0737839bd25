//! Per-thread allocation buffers: what one mutator thread holds of its heap so that a
//! small allocation takes no lock and no atomic read-modify-write.
//!
//! A buffer holds, for its thread alone:
//! - a bump region carved from the small-object space ([`REGION`] bytes at a time), and
//!   per size class a few blocks taken from the space's free lists in one batch;
//! - a batch of free handles taken from the handle table;
//! - an *allowance*: bytes the thread may allocate before it accounts again. The heap
//!   charges the whole allowance to `in_use` when it grants it ([`GRANT`] bytes), so
//!   `in_use` never counts less than the live objects (a collection that frees objects
//!   of a thread that has not accounted yet never takes it below zero); the unused rest
//!   goes back when the thread settles;
//! - the allocations and bytes done since the thread last settled, added to the heap's
//!   counters (`allocations`, `bytes_allocated`, `since_gc`) when it settles.
//!
//! A thread settles ([`crate::heap::Heap::settle`]) when its allowance runs out, before it
//! collects or blocks (so a collection, which stops every thread, sees exact figures), and
//! when an invocation ends; it retires its buffer ([`crate::heap::Heap::retire`]) when it
//! exits, giving the cached blocks and handles back. Large objects, heaps with a limit and
//! heaps under a shared budget allocate through [`crate::heap::Heap::alloc`] as before, so
//! a budget is asked before every allocation and sees exact figures.

use super::small_space::GRAIN;

/// Bytes of allocation granted to a buffer at a time.
pub const GRANT: usize = 64 << 10;
/// Bytes of a bump region carved from the small-object space.
pub const REGION: usize = 64 << 10;
/// Free blocks of one size class taken from the space at a time.
pub const BATCH_BLOCKS: usize = 64;
/// Free handles taken from the table at a time.
pub const BATCH_HANDLES: u32 = 128;
/// Size classes of small blocks (index = block size / [`GRAIN`]).
pub(super) const CLASSES: usize = super::LARGE_OBJECT_BYTES / GRAIN + 1;

/// One thread's allocation buffer (see the module doc). Create it empty; the first
/// allocation through [`crate::heap::Heap::alloc_buffered`] binds it to that heap.
pub struct AllocBuffer {
    /// Address of the heap this buffer belongs to (0 before the first refill).
    pub(super) heap: usize,
    /// The bump region `[bump, end)`: fresh, zeroed memory.
    pub(super) bump: usize,
    pub(super) end: usize,
    /// Freed blocks per size class, to be zeroed when handed out.
    pub(super) cache: Vec<Vec<usize>>,
    /// Classes whose shared free list was empty when last asked, valid while the space's
    /// free generation is `empty_gen`.
    pub(super) empty: [u64; CLASSES.div_ceil(64)],
    pub(super) empty_gen: u64,
    /// Free handle indices (their entries are 0).
    pub(super) handles: Vec<u32>,
    /// Bytes that may still be allocated before settling (charged to `in_use` already).
    pub(super) allowance: usize,
    /// Allocations and their bytes since the last settle.
    pub(super) allocations: u64,
    pub(super) bytes: u64,
}

impl Default for AllocBuffer {
    fn default() -> Self {
        AllocBuffer::new()
    }
}

impl AllocBuffer {
    /// An empty buffer, bound to no heap yet.
    pub fn new() -> AllocBuffer {
        AllocBuffer {
            heap: 0,
            bump: 0,
            end: 0,
            cache: Vec::new(),
            empty: [0; CLASSES.div_ceil(64)],
            empty_gen: 0,
            handles: Vec::new(),
            allowance: 0,
            allocations: 0,
            bytes: 0,
        }
    }

    /// Allocations done through this buffer since it last settled.
    pub fn unsettled_allocations(&self) -> u64 {
        self.allocations
    }

    /// Bytes of allocation this buffer may still do before it settles.
    pub fn allowance(&self) -> usize {
        self.allowance
    }

    /// Free handles this buffer holds.
    pub fn cached_handles(&self) -> usize {
        self.handles.len()
    }

    /// Whether the buffer holds nothing of a heap: no memory, handles or counts.
    pub fn is_empty(&self) -> bool {
        self.end == self.bump
            && self.cache.iter().all(Vec::is_empty)
            && self.handles.is_empty()
            && self.allowance == 0
            && self.allocations == 0
    }

    /// A block of `size` bytes (a multiple of [`GRAIN`] under a large object) from the
    /// class cache or the bump region, if either has one, zeroed past its first
    /// [`GRAIN`] bytes (where the header goes).
    #[inline(always)]
    pub(super) fn take_block(&mut self, size: usize) -> Option<usize> {
        if let Some(addr) = self.cache.get_mut(size / GRAIN).and_then(Vec::pop) {
            // Small objects are a few grains: grain-sized stores beat a call to memset.
            let mut at = addr + GRAIN;
            while at < addr + size {
                // SAFETY: `[addr, addr + size)` is a block taken from the small space's
                // free list for this buffer alone (no object uses it), 16-byte aligned,
                // and `at` is a grain inside it.
                unsafe { std::ptr::write(at as *mut u128, 0) };
                at += GRAIN;
            }
            return Some(addr);
        }
        if self.end - self.bump >= size {
            let addr = self.bump;
            self.bump += size;
            return Some(addr);
        }
        None
    }

    /// Whether `take_block(size)` would succeed.
    pub(super) fn has_block(&self, size: usize) -> bool {
        self.cache.get(size / GRAIN).is_some_and(|c| !c.is_empty()) || self.end - self.bump >= size
    }

    pub(super) fn known_empty(&self, class: usize) -> bool {
        self.empty[class / 64] & (1 << (class % 64)) != 0
    }

    pub(super) fn mark_empty(&mut self, class: usize) {
        self.empty[class / 64] |= 1 << (class % 64);
    }
}
