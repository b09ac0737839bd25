//! Page-aligned space for large objects (2 KiB and more).
//!
//! Objects are carved, address-ordered first fit, out of a few large anonymous mappings
//! (regions), never one mapping per object: the kernel caps a process at about 65,000
//! mappings. Every object starts on a page boundary and owns whole pages, so the pages
//! of one object, or of a run of neighbours, go back to the OS in one `madvise` call.
//! Freed runs coalesce with their neighbours.

use std::collections::BTreeMap;

use memmap2::{MmapMut, MmapOptions, UncheckedAdvice};
use parking_lot::Mutex;

/// The page size this space assumes (checked against the OS at start-up).
pub const PAGE: usize = 4096;
/// Bytes reserved per region (virtual; untouched pages cost nothing).
pub const REGION_BYTES: usize = 256 << 20;

struct Region {
    map: MmapMut,
    pages: usize,
    /// Pages at and above `top` were never handed out.
    top: usize,
    /// Free runs below `top`: start page -> page count.
    free: BTreeMap<usize, usize>,
}

impl Region {
    fn base(&self) -> usize {
        self.map.as_ptr() as usize
    }

    fn take(&mut self, n: usize) -> Option<usize> {
        let hit = self
            .free
            .iter()
            .find(|(_, &len)| len >= n)
            .map(|(&s, &l)| (s, l));
        if let Some((start, len)) = hit {
            self.free.remove(&start);
            if len > n {
                self.free.insert(start + n, len - n);
            }
            return Some(start);
        }
        if self.pages - self.top >= n {
            let start = self.top;
            self.top += n;
            return Some(start);
        }
        None
    }

    fn give_back(&mut self, start: usize, n: usize) {
        let (mut start, mut n) = (start, n);
        if let Some((&ps, &pl)) = self.free.range(..start).next_back() {
            if ps + pl == start {
                self.free.remove(&ps);
                start = ps;
                n += pl;
            }
        }
        if let Some(&nl) = self.free.get(&(start + n)) {
            self.free.remove(&(start + n));
            n += nl;
        }
        if start + n == self.top {
            self.top = start;
        } else {
            self.free.insert(start, n);
        }
    }
}

/// Bytes rounded up to whole pages.
pub fn page_round(bytes: usize) -> usize {
    bytes.div_ceil(PAGE) * PAGE
}

/// The large-object space of one heap.
pub struct LargeSpace {
    regions: Mutex<Vec<Region>>,
}

impl Default for LargeSpace {
    fn default() -> Self {
        LargeSpace::new()
    }
}

impl LargeSpace {
    pub fn new() -> LargeSpace {
        LargeSpace {
            regions: Mutex::new(Vec::new()),
        }
    }

    /// Allocates zeroed, page-aligned memory of at least `bytes`; returns its address.
    pub fn alloc(&self, bytes: usize) -> std::io::Result<usize> {
        let n = page_round(bytes) / PAGE;
        let mut regions = self.regions.lock();
        for r in regions.iter_mut() {
            if let Some(p) = r.take(n) {
                return Ok(r.base() + p * PAGE);
            }
        }
        let len = REGION_BYTES.max(n * PAGE);
        let map = MmapOptions::new().len(len).no_reserve_swap().map_anon()?;
        let mut r = Region {
            map,
            pages: len / PAGE,
            top: 0,
            free: BTreeMap::new(),
        };
        let p = r.take(n).expect("a fresh region fits the request");
        let addr = r.base() + p * PAGE;
        regions.push(r);
        Ok(addr)
    }

    /// Frees runs of `(address, bytes)` allocated here: neighbouring runs are coalesced,
    /// their pages returned to the OS (one `madvise` per coalesced run) and made
    /// available again. Returns the number of `madvise` calls made.
    pub fn free(&self, runs: &mut [(usize, usize)]) -> usize {
        runs.sort_unstable();
        let mut calls = 0;
        let mut regions = self.regions.lock();
        for (addr, bytes) in coalesce(runs) {
            if let Some(r) = regions
                .iter_mut()
                .find(|r| addr >= r.base() && addr + bytes <= r.base() + r.pages * PAGE)
            {
                let off = addr - r.base();
                // SAFETY: the range lies inside this region's mapping and belongs to
                // objects being freed: nothing reads it until it is handed out again,
                // and a fresh hand-out expects zeroed pages, which DONTNEED gives.
                let _ = unsafe {
                    r.map
                        .unchecked_advise_range(UncheckedAdvice::DontNeed, off, bytes)
                };
                calls += 1;
                r.give_back(off / PAGE, bytes / PAGE);
            }
        }
        calls
    }

    /// Returns the pages of `runs` to the OS while keeping them allocated (a reclaim):
    /// a later read sees zeroes until the contents are restored. Neighbouring runs are
    /// returned in one call. Returns the number of `madvise` calls.
    ///
    /// # Safety
    /// Nothing may read or write the discarded ranges until their contents are restored.
    pub unsafe fn discard(&self, runs: &mut [(usize, usize)]) -> std::io::Result<usize> {
        runs.sort_unstable();
        let regions = self.regions.lock();
        let mut calls = 0;
        for (addr, bytes) in coalesce(runs) {
            if let Some(r) = regions
                .iter()
                .find(|r| addr >= r.base() && addr + bytes <= r.base() + r.pages * PAGE)
            {
                // SAFETY: inside this region's mapping; the caller guarantees nobody
                // touches the range until it is restored.
                unsafe {
                    r.map.unchecked_advise_range(
                        UncheckedAdvice::DontNeed,
                        addr - r.base(),
                        bytes,
                    )?
                };
                calls += 1;
            }
        }
        Ok(calls)
    }

    /// Number of regions mapped.
    pub fn regions(&self) -> usize {
        self.regions.lock().len()
    }
}

/// Merges sorted `(address, bytes)` runs that touch into single runs.
fn coalesce(runs: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(runs.len());
    for &(a, b) in runs {
        let b = page_round(b);
        match out.last_mut() {
            Some((la, lb)) if *la + *lb == a => *lb += b,
            _ => out.push((a, b)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_page_aligned_and_neighbours_coalesce() {
        let s = LargeSpace::new();
        let a = s.alloc(2048).unwrap();
        let b = s.alloc(4096).unwrap();
        let c = s.alloc(3 * 4096 + 1).unwrap();
        assert_eq!(a % PAGE, 0);
        assert_eq!(b, a + PAGE);
        assert_eq!(c, b + PAGE);
        // Three neighbours go back in one call.
        assert_eq!(s.free(&mut [(c, 3 * 4096 + 1), (a, 2048), (b, 4096)]), 1);
        // And their pages are handed out again, first fit, at the lowest address.
        assert_eq!(s.alloc(4096).unwrap(), a);
        assert_eq!(s.regions(), 1);
    }

    #[test]
    fn freed_memory_comes_back_zeroed() {
        let s = LargeSpace::new();
        let a = s.alloc(8192).unwrap();
        // SAFETY: `a` is 8192 bytes of memory this test owns.
        unsafe { std::ptr::write_bytes(a as *mut u8, 0xab, 8192) };
        s.free(&mut [(a, 8192)]);
        let b = s.alloc(8192).unwrap();
        assert_eq!(a, b);
        // SAFETY: as above, freshly handed out.
        let bytes = unsafe { std::slice::from_raw_parts(b as *const u8, 8192) };
        assert!(bytes.iter().all(|&x| x == 0));
    }
}
