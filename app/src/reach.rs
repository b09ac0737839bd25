//! Where each kind of the app's memory is now: small objects (under 2 KiB), large objects
//! (2 KiB and more, on whole pages) and native buffers (`nalloc`), each as bytes
//! allocated, freed, resident, reclaimed (taken by Marvin's reclaimer, in the swap file)
//! and swapped (paged out by the kernel), so that the System can say what each policy's
//! mechanism reached.
//!
//! Residency comes from the kernel: `/proc/self/pagemap`'s present bit for every page of
//! the kind's memory. For large objects and native buffers the figures are measured apart
//! and add up, to the page: the pages in use (the large space's handed-out pages less its
//! free runs; the buffers' page-rounded lengths) are resident, reclaimed (the stubs' bytes
//! out of memory) or swapped (the rest: not present, not reclaimed), and the heap's own
//! counters say what is alive (allocated less freed). Small objects share 1 MiB chunks
//! with free blocks, so only their swapped bytes are measured (the chunks' touched pages
//! that are not present, at most the live bytes) and their resident bytes are the rest of
//! what is alive.

use std::fs::File;
use std::os::unix::fs::FileExt;

use marvin_runtime::page_size;

use crate::app::App;
use crate::stats::KindBytes;

/// One kind's bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Reach {
    pub allocated: u64,
    pub freed: u64,
    pub resident: u64,
    pub reclaimed: u64,
    pub swapped: u64,
}

impl Reach {
    /// Alive now: allocated less freed.
    pub fn live(&self) -> u64 {
        self.allocated.saturating_sub(self.freed)
    }
}

/// The three kinds, in the order small objects, large objects, native buffers.
pub const KINDS: [&str; 3] = ["small", "large", "native"];

/// The app's memory by kind now. An error reading `/proc/self/pagemap` leaves the
/// residency figures as if everything alive were resident.
pub fn measure(app: &App) -> [Reach; 3] {
    let k = KindBytes::of(app);
    let heap = &app.heap;
    // Small objects: the chunks' touched pages that are not present, at most what is alive.
    let small_live = k.small_allocated.saturating_sub(k.small_freed);
    let chunks = heap.small_ranges();
    let touched: u64 =
        chunks.iter().map(|r| r.1 as u64).sum::<u64>() - heap.small_untouched_bytes() as u64;
    let small_present = present_bytes(&chunks).unwrap_or(touched);
    let small_swapped = touched.saturating_sub(small_present).min(small_live);
    let small = Reach {
        allocated: k.small_allocated,
        freed: k.small_freed,
        resident: small_live - small_swapped,
        reclaimed: 0,
        swapped: small_swapped,
    };
    // Large objects: pages in use are resident, out (reclaimed) or swapped.
    let large_space = heap.large_space();
    let regions = large_space.ranges();
    let in_use = (regions.iter().map(|r| r.1).sum::<usize>() - large_space.free_bytes()) as u64;
    let out = heap.stub_space().map_or(0, |s| s.out_bytes()).min(in_use);
    let large_present = present_bytes(&regions)
        .unwrap_or(in_use - out)
        .min(in_use - out);
    let large = Reach {
        allocated: k.large_allocated,
        freed: k.large_freed,
        resident: large_present,
        reclaimed: out,
        swapped: in_use - out - large_present,
    };
    // Native buffers: their page-rounded lengths are resident or swapped.
    let buffers = app.native.ranges();
    let mapped: u64 = buffers.iter().map(|r| r.1 as u64).sum();
    let native_present = present_bytes(&buffers).unwrap_or(mapped);
    let native = Reach {
        allocated: k.native_allocated,
        freed: k.native_freed,
        resident: native_present,
        reclaimed: 0,
        swapped: mapped - native_present,
    };
    [small, large, native]
}

/// The named counters an app process reports to the System (`KIND_WHAT_bytes`).
pub fn counters(reach: &[Reach; 3]) -> Vec<(String, u64)> {
    KINDS
        .iter()
        .zip(reach)
        .flat_map(|(kind, r)| {
            [
                ("resident", r.resident),
                ("reclaimed", r.reclaimed),
                ("swapped", r.swapped),
            ]
            .map(|(what, v)| (format!("{kind}_{what}_bytes"), v))
        })
        .collect()
}

/// Bytes of the pages of `ranges` present in memory, from `/proc/self/pagemap` (one
/// 8-byte entry a page, bit 63 set when present).
pub fn present_bytes(ranges: &[(usize, usize)]) -> std::io::Result<u64> {
    let page = page_size();
    let pagemap = File::open("/proc/self/pagemap")?;
    let mut present = 0u64;
    let mut buf = vec![0u8; 8 * 512];
    for &(start, len) in ranges {
        let (first, pages) = (start / page, len.div_ceil(page));
        let mut done = 0;
        while done < pages {
            let n = (pages - done).min(512);
            let bytes = &mut buf[..8 * n];
            pagemap.read_exact_at(bytes, ((first + done) * 8) as u64)?;
            present += bytes.chunks_exact(8).filter(|e| e[7] & 0x80 != 0).count() as u64;
            done += n;
        }
    }
    Ok(present * page as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memmap2::MmapMut;

    #[test]
    fn present_pages_are_counted_and_untouched_ones_are_not() {
        let page = page_size();
        let mut map = MmapMut::map_anon(8 * page).unwrap();
        let range = [(map.as_ptr() as usize, 8 * page)];
        assert_eq!(present_bytes(&range).unwrap(), 0);
        for p in [0, 3, 7] {
            map[p * page] = 1;
        }
        assert_eq!(present_bytes(&range).unwrap(), 3 * page as u64);
    }
}
