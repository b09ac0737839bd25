//! Space for small objects (under 2 KiB): segregated free lists in 16-byte size classes
//! over 1 MiB chunks of anonymous memory.
//!
//! An allocation pops a block of its class (zeroing it) or bumps through the current
//! chunk (fresh pages are already zero); a free pushes the block back on its class's
//! list. A collection frees many blocks under one lock. Chunks go back to the OS with
//! the heap. This replaced the system allocator, whose malloc/free/consolidate cost about
//! a quarter of an allocation-heavy program's time.

use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::{MmapMut, MmapOptions};
use parking_lot::Mutex;

use super::alloc_buffer::{AllocBuffer, BATCH_BLOCKS, REGION};

/// Block sizes are multiples of this.
pub const GRAIN: usize = 16;
const CHUNK: usize = 1 << 20;

#[derive(Default)]
struct Inner {
    /// Free blocks per size class (index = size / GRAIN).
    free: Vec<Vec<usize>>,
    bump: usize,
    end: usize,
    chunks: Vec<MmapMut>,
}

/// The small-object space of one heap.
#[derive(Default)]
pub struct SmallSpace {
    inner: Mutex<Inner>,
    /// Bumped by every [`SmallSpace::free`]: a buffer that found a class's free list
    /// empty need not ask again until this moves.
    free_gen: AtomicU64,
}

/// A block size for `raw` bytes.
#[inline]
pub fn block_size(raw: usize) -> usize {
    raw.div_ceil(GRAIN) * GRAIN
}

impl SmallSpace {
    pub fn new() -> SmallSpace {
        SmallSpace::default()
    }

    /// A zeroed, 16-byte aligned block of `size` bytes (a multiple of [`GRAIN`], under a
    /// chunk).
    pub fn alloc(&self, size: usize) -> std::io::Result<usize> {
        debug_assert!(size.is_multiple_of(GRAIN) && size > 0 && size <= CHUNK);
        let mut g = self.inner.lock();
        let class = size / GRAIN;
        if let Some(addr) = g.free.get_mut(class).and_then(Vec::pop) {
            // SAFETY: a freed block of exactly `size` bytes of one of our chunks, owned
            // by no object any more.
            unsafe { std::ptr::write_bytes(addr as *mut u8, 0, size) };
            return Ok(addr);
        }
        g.carve(size)
    }

    /// Takes blocks back: `(address, size)` pairs from [`SmallSpace::alloc`] or a
    /// buffer's refill.
    pub fn free(&self, blocks: impl IntoIterator<Item = (usize, usize)>) {
        let mut g = self.inner.lock();
        for (addr, size) in blocks {
            g.push_block(addr, size);
        }
        self.free_gen.fetch_add(1, Ordering::Relaxed);
    }

    /// Each chunk's address and length: where the space's pages are.
    pub fn ranges(&self) -> Vec<(usize, usize)> {
        let inner = self.inner.lock();
        inner
            .chunks
            .iter()
            .map(|c| (c.as_ptr() as usize, c.len()))
            .collect()
    }

    /// Bytes of the current chunk never handed out (never touched: not resident, not
    /// swapped).
    pub fn untouched_bytes(&self) -> usize {
        let inner = self.inner.lock();
        inner.end - inner.bump
    }

    /// Returns to the OS every whole page that `blocks` (blocks of this space, no longer
    /// used by any object and not yet freed) cover together, and returns how many bytes
    /// that is. Call it before [`SmallSpace::free`] takes the blocks: no one may write into
    /// them meanwhile. The pages read zero afterwards, as fresh pages do (a block is zeroed
    /// when handed out anyway).
    pub fn release_pages(&self, blocks: &mut [(usize, usize)]) -> usize {
        const PAGE: usize = super::PAGE;
        blocks.sort_unstable();
        let mut released = 0;
        let mut release = |start: usize, end: usize| {
            let (from, to) = (start.next_multiple_of(PAGE), end / PAGE * PAGE);
            if to > from {
                // SAFETY: [from, to) lies inside blocks of our own anonymous chunks that no
                // object uses and no free list holds yet (the caller's contract), so no
                // one reads or writes it while its pages are dropped.
                let r = unsafe {
                    libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_DONTNEED)
                };
                if r == 0 {
                    released += to - from;
                }
            }
        };
        let mut run: Option<(usize, usize)> = None;
        for &(addr, size) in blocks.iter() {
            run = match run {
                Some((start, end)) if end == addr => Some((start, addr + size)),
                Some((start, end)) => {
                    release(start, end);
                    Some((addr, addr + size))
                }
                None => Some((addr, addr + size)),
            };
        }
        if let Some((start, end)) = run {
            release(start, end);
        }
        released
    }

    /// The free generation (see `free_gen`).
    pub fn free_gen(&self) -> u64 {
        self.free_gen.load(Ordering::Relaxed)
    }

    /// Gives `buf` room for a block of `size` bytes: up to [`BATCH_BLOCKS`] blocks of its
    /// class from the free list (unless `skip_free`, the buffer knowing it empty), else a
    /// fresh bump region of [`REGION`] bytes (the old region's rest goes on a free list).
    /// Returns whether free blocks were found.
    pub(super) fn refill(
        &self,
        buf: &mut AllocBuffer,
        size: usize,
        skip_free: bool,
    ) -> std::io::Result<bool> {
        debug_assert!(size.is_multiple_of(GRAIN) && size > 0 && size <= REGION);
        let class = size / GRAIN;
        let mut g = self.inner.lock();
        if !skip_free {
            if let Some(list) = g.free.get_mut(class).filter(|l| !l.is_empty()) {
                let take = list.len().min(BATCH_BLOCKS);
                if buf.cache.len() <= class {
                    buf.cache.resize_with(class + 1, Vec::new);
                }
                buf.cache[class].extend(list.drain(list.len() - take..));
                return Ok(true);
            }
        }
        let region = g.carve(REGION)?;
        let rest = buf.end - buf.bump;
        if rest > 0 {
            g.push_free(buf.bump, rest);
        }
        buf.bump = region;
        buf.end = region + REGION;
        Ok(false)
    }

    /// Takes back everything `buf` holds of this space: its cached blocks and the rest of
    /// its bump region.
    pub(super) fn give_back(&self, buf: &mut AllocBuffer) {
        let mut g = self.inner.lock();
        for (class, list) in buf.cache.iter_mut().enumerate() {
            for addr in list.drain(..) {
                g.push_block(addr, class * GRAIN);
            }
        }
        let rest = buf.end - buf.bump;
        if rest > 0 {
            g.push_free(buf.bump, rest);
        }
        buf.bump = 0;
        buf.end = 0;
        self.free_gen.fetch_add(1, Ordering::Relaxed);
    }
}

impl Inner {
    /// `size` fresh, zeroed bytes from the bump pointer, mapping a new chunk when the
    /// current one has less left (the rest of the old chunk is not used).
    fn carve(&mut self, size: usize) -> std::io::Result<usize> {
        if self.end - self.bump < size {
            let mut map = MmapOptions::new().len(CHUNK).map_anon()?;
            self.bump = map.as_mut_ptr() as usize;
            self.end = self.bump + CHUNK;
            self.chunks.push(map);
        }
        let addr = self.bump;
        self.bump += size;
        Ok(addr)
    }

    /// Puts a block of one class on its free list.
    #[inline]
    fn push_block(&mut self, addr: usize, size: usize) {
        let class = size / GRAIN;
        if self.free.len() <= class {
            self.free.resize_with(class + 1, Vec::new);
        }
        self.free[class].push(addr);
    }

    /// Puts a block on a free list; a piece of a bump region too large for any class is
    /// cut into blocks of the largest class first.
    fn push_free(&mut self, mut addr: usize, mut size: usize) {
        const MAX: usize = super::LARGE_OBJECT_BYTES;
        while size > 0 {
            let piece = size.min(MAX);
            self.push_block(addr, piece);
            addr += piece;
            size -= piece;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_zeroed_aligned_and_reused_by_class() {
        let s = SmallSpace::new();
        let a = s.alloc(32).unwrap();
        let b = s.alloc(32).unwrap();
        assert_eq!(a % 16, 0);
        assert_ne!(a, b);
        // SAFETY: `a` is a 32-byte block this test owns.
        unsafe { std::ptr::write_bytes(a as *mut u8, 0xab, 32) };
        s.free([(a, 32)]);
        // A block of another class does not take it...
        let c = s.alloc(48).unwrap();
        assert_ne!(c, a);
        // ...one of its class does, zeroed.
        let d = s.alloc(32).unwrap();
        assert_eq!(d, a);
        // SAFETY: `d` is a 32-byte block this test owns.
        let bytes = unsafe { std::slice::from_raw_parts(d as *const u8, 32) };
        assert!(bytes.iter().all(|&x| x == 0));
    }

    #[test]
    fn released_pages_read_zero_and_their_blocks_are_reused() {
        let s = SmallSpace::new();
        // Three pages and a bit of 64-byte blocks, written, then released and freed.
        let n = (3 * super::super::PAGE + 256) / 64;
        let mut blocks: Vec<(usize, usize)> = (0..n).map(|_| (s.alloc(64).unwrap(), 64)).collect();
        for &(a, _) in &blocks {
            // SAFETY: a 64-byte block this test owns.
            unsafe { std::ptr::write_bytes(a as *mut u8, 0xab, 64) };
        }
        let first = blocks[0].0;
        let released = s.release_pages(&mut blocks);
        // Whole pages only: at least two of the three and a bit, never more than covered.
        assert!(released >= 2 * super::super::PAGE, "{released}");
        assert!(released <= n * 64);
        let page = first.next_multiple_of(super::super::PAGE);
        // SAFETY: inside the blocks above, still this test's (not freed yet).
        let bytes = unsafe { std::slice::from_raw_parts(page as *const u8, 64) };
        assert!(
            bytes.iter().all(|&x| x == 0),
            "a released page kept its bytes"
        );
        s.free(blocks.iter().copied());
        let again = s.alloc(64).unwrap();
        assert!(blocks.iter().any(|&(a, _)| a == again));
    }

    #[test]
    fn a_new_chunk_comes_when_one_is_used_up() {
        let s = SmallSpace::new();
        let n = CHUNK / 2048 + 1;
        let blocks: Vec<usize> = (0..n).map(|_| s.alloc(2048).unwrap()).collect();
        let mut sorted = blocks.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), n, "no block handed out twice");
    }
}
