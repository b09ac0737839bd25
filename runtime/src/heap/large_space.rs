//! Page-aligned space for large objects (2 KiB and more).
//!
//! Objects are carved, address-ordered first fit, out of a few large mappings
//! (regions), never one mapping per object: the kernel caps a process at about 65,000
//! mappings. Every object starts on a page boundary and owns whole pages, so the pages
//! of one object, or of a run of neighbours, go back to the OS in one call.
//! Freed runs coalesce with their neighbours.
//!
//! Regions are anonymous memory by default ([`LargeBacking::Anonymous`]; pages go back
//! with `madvise(MADV_DONTNEED)`), or memory files mapped shared
//! ([`LargeBacking::Memfd`]; pages go back by punching a hole in the file). Only the
//! second lets a reclaimer in another process return an app's pages without the app's
//! help: `madvise` acts on the caller's own address space alone. A memory-file space
//! publishes where its regions are and which descriptors back them in a
//! [`region_dir`](super::region_dir) file ([`LargeSpace::publish_regions`]); the reclaimer
//! opens the descriptors through a pidfd. Anonymous regions stay the default of the
//! in-process model (`docs/experiments.md` has the measurements and the reasons).

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use memmap2::{MmapMut, MmapOptions, UncheckedAdvice};
use parking_lot::Mutex;

use super::region_dir::{RegionDirError, RegionDirectory, RegionRecord};
use crate::memfd;
use crate::swap_folder::SwapFolder;

/// What backs the large-object regions of a heap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LargeBacking {
    /// Private anonymous memory (pages returned with `madvise(MADV_DONTNEED)`).
    #[default]
    Anonymous,
    /// Memory files mapped shared (pages returned with `fallocate(PUNCH_HOLE)`), which a
    /// reclaimer in another process can punch as well.
    Memfd,
}

impl std::str::FromStr for LargeBacking {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "anonymous" | "anon" => Ok(LargeBacking::Anonymous),
            "memfd" => Ok(LargeBacking::Memfd),
            other => Err(format!(
                "unknown large-object backing '{other}' (expected anonymous or memfd)"
            )),
        }
    }
}

/// The page size this space assumes (checked against the OS at start-up).
pub const PAGE: usize = 4096;
/// Bytes reserved per region (virtual; untouched pages cost nothing).
pub const REGION_BYTES: usize = 256 << 20;

struct Region {
    map: MmapMut,
    /// The memory file behind the map and its inode ([`LargeBacking::Memfd`]).
    memfd: Option<(File, u64)>,
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

    /// Returns the pages of `[off, off + bytes)` of this region to the OS; reads there
    /// see zeroes afterwards.
    ///
    /// # Safety
    /// Nothing may read or write the range until it is handed out or restored again.
    unsafe fn drop_pages(&self, off: usize, bytes: usize) -> std::io::Result<()> {
        match &self.memfd {
            Some((file, _)) => memfd::punch_hole(file, off as u64, bytes as u64),
            // SAFETY: inside this region's mapping; the caller guarantees nobody touches
            // the range meanwhile.
            None => unsafe {
                self.map
                    .unchecked_advise_range(UncheckedAdvice::DontNeed, off, bytes)
            },
        }
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
    backing: LargeBacking,
    /// Where the region directory is published (memory-file backing only): its folder
    /// and its name there.
    directory: Mutex<Option<(Arc<SwapFolder>, String)>>,
}

impl Default for LargeSpace {
    fn default() -> Self {
        LargeSpace::new()
    }
}

impl LargeSpace {
    /// An anonymous-memory space.
    pub fn new() -> LargeSpace {
        LargeSpace::with_backing(LargeBacking::Anonymous)
    }

    /// A space whose regions are backed as `backing` says.
    pub fn with_backing(backing: LargeBacking) -> LargeSpace {
        LargeSpace {
            regions: Mutex::new(Vec::new()),
            backing,
            directory: Mutex::new(None),
        }
    }

    /// What backs the regions.
    pub fn backing(&self) -> LargeBacking {
        self.backing
    }

    /// Writes the region directory as `name` in `folder` now and again whenever a region
    /// is added ([`RegionDirectory::write_in`]: never through a link), so a reclaimer in
    /// another process can find this space's memory files. Refused for anonymous
    /// regions, which no other process can reclaim.
    pub fn publish_regions(
        &self,
        folder: Arc<SwapFolder>,
        name: &str,
    ) -> Result<(), RegionDirError> {
        if self.backing != LargeBacking::Memfd {
            return Err(RegionDirError::Invalid {
                path: folder.path_of(name),
                reason: "anonymous large-object regions cannot be reclaimed from another process (use the memfd backing)".into(),
            });
        }
        let regions = self.regions.lock();
        self.directory_of(&regions).write_in(&folder, name)?;
        *self.directory.lock() = Some((folder, name.to_owned()));
        Ok(())
    }

    /// The directory of `regions` (memory-file regions only).
    fn directory_of(&self, regions: &[Region]) -> RegionDirectory {
        let mut d = RegionDirectory {
            pid: std::process::id(),
            regions: regions
                .iter()
                .filter_map(|r| {
                    let (file, ino) = r.memfd.as_ref()?;
                    Some(RegionRecord {
                        base: r.base() as u64,
                        len: (r.pages * PAGE) as u64,
                        fd: file.as_raw_fd(),
                        ino: *ino,
                    })
                })
                .collect(),
        };
        d.regions.sort_unstable_by_key(|r| r.base);
        d
    }

    /// Each region's address and the bytes of it ever handed out (free runs inside
    /// included): where the space's pages can be.
    pub fn ranges(&self) -> Vec<(usize, usize)> {
        let regions = self.regions.lock();
        regions.iter().map(|r| (r.base(), r.top * PAGE)).collect()
    }

    /// Bytes of the free runs inside the handed-out part of the regions: [`ranges`]
    /// less these are the pages of live (or stubbed) objects.
    ///
    /// [`ranges`]: LargeSpace::ranges
    pub fn free_bytes(&self) -> usize {
        let regions = self.regions.lock();
        regions
            .iter()
            .map(|r| r.free.values().sum::<usize>() * PAGE)
            .sum()
    }

    /// The current region directory (empty for anonymous regions).
    pub fn directory(&self) -> RegionDirectory {
        self.directory_of(&self.regions.lock())
    }

    fn map_region(&self, len: usize) -> std::io::Result<Region> {
        let (map, memfd) = match self.backing {
            LargeBacking::Anonymous => (
                MmapOptions::new().len(len).no_reserve_swap().map_anon()?,
                None,
            ),
            LargeBacking::Memfd => {
                let file = memfd::create("marvin-large-space", len as u64)?;
                let map = memfd::map_shared(&file, len)?;
                let ino = memfd::inode(&file)?;
                (map, Some((file, ino)))
            }
        };
        Ok(Region {
            map,
            memfd,
            pages: len / PAGE,
            top: 0,
            free: BTreeMap::new(),
        })
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
        let mut r = self.map_region(len)?;
        let p = r.take(n).expect("a fresh region fits the request");
        let addr = r.base() + p * PAGE;
        regions.push(r);
        if let Some((folder, name)) = self.directory.lock().as_ref() {
            self.directory_of(&regions)
                .write_in(folder, name)
                .map_err(std::io::Error::other)?;
        }
        Ok(addr)
    }

    /// Frees runs of `(address, bytes)` allocated here: neighbouring runs are coalesced,
    /// their pages returned to the OS (one `madvise` or hole per coalesced run) and made
    /// available again. Returns the number of calls made.
    pub fn free(&self, runs: &mut [(usize, usize)]) -> usize {
        let mut regions = self.regions.lock();
        let mut calls = 0;
        for (i, off, bytes) in coalesce_in_regions(&regions, runs) {
            let r = &mut regions[i];
            // SAFETY: the range lies inside this region's mapping and belongs to
            // objects being freed: nothing reads it until it is handed out again,
            // and a fresh hand-out expects zeroed pages, which both ways give.
            let _ = unsafe { r.drop_pages(off, bytes) };
            calls += 1;
            r.give_back(off / PAGE, bytes / PAGE);
        }
        calls
    }

    /// Returns the pages of `runs` to the OS while keeping them allocated (a reclaim):
    /// a later read sees zeroes until the contents are restored. Neighbouring runs are
    /// returned in one call (`madvise`, or a hole in the region's memory file). Returns
    /// the number of calls.
    ///
    /// # Safety
    /// Nothing may read or write the discarded ranges until their contents are restored.
    pub unsafe fn discard(&self, runs: &mut [(usize, usize)]) -> std::io::Result<usize> {
        let regions = self.regions.lock();
        let mut calls = 0;
        for (i, off, bytes) in coalesce_in_regions(&regions, runs) {
            // SAFETY: inside this region's mapping; the caller guarantees nobody
            // touches the range until it is restored.
            unsafe { regions[i].drop_pages(off, bytes)? };
            calls += 1;
        }
        Ok(calls)
    }

    /// Bytes of this space's pages that are in memory now, as the kernel sees them
    /// (`mincore` over every region: for anonymous regions the pages mapped, for memory
    /// files the pages the file holds), whatever the heap's books say.
    pub fn resident_bytes_by_kernel(&self) -> std::io::Result<u64> {
        let regions = self.regions.lock();
        let mut total = 0u64;
        let mut vec = Vec::new();
        for r in regions.iter() {
            // Only the pages ever handed out can be resident.
            let pages = r.top;
            vec.clear();
            vec.resize(pages, 0u8);
            if pages == 0 {
                continue;
            }
            // SAFETY: the range is the start of this region's mapping, page aligned, and
            // `vec` holds one byte per page of it; mincore writes only into `vec`.
            let rc = unsafe {
                libc::mincore(
                    r.map.as_ptr() as *mut libc::c_void,
                    pages * PAGE,
                    vec.as_mut_ptr(),
                )
            };
            if rc != 0 {
                return Err(std::io::Error::last_os_error());
            }
            total += vec.iter().filter(|&&b| b & 1 != 0).count() as u64 * PAGE as u64;
        }
        Ok(total)
    }

    /// Number of regions mapped.
    pub fn regions(&self) -> usize {
        self.regions.lock().len()
    }
}

/// The `(address, bytes)` runs as `(region index, offset, bytes)`, in whole pages, runs
/// that touch merged into one, never across two regions (two regions may be neighbours
/// in the address space, and each has its own mapping or memory file). Runs outside
/// every region are left out.
fn coalesce_in_regions(
    regions: &[Region],
    runs: &mut [(usize, usize)],
) -> Vec<(usize, usize, usize)> {
    runs.sort_unstable();
    let mut out: Vec<(usize, usize, usize)> = Vec::with_capacity(runs.len());
    for &(a, b) in runs.iter() {
        let b = page_round(b);
        let Some(i) = regions
            .iter()
            .position(|r| a >= r.base() && a + b <= r.base() + r.pages * PAGE)
        else {
            continue;
        };
        let off = a - regions[i].base();
        match out.last_mut() {
            Some((li, lo, lb)) if *li == i && *lo + *lb == off => *lb += b,
            _ => out.push((i, off, b)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BACKINGS: [LargeBacking; 2] = [LargeBacking::Anonymous, LargeBacking::Memfd];

    #[test]
    fn objects_are_page_aligned_and_neighbours_coalesce() {
        for backing in BACKINGS {
            let s = LargeSpace::with_backing(backing);
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
    }

    #[test]
    fn freed_and_discarded_memory_comes_back_zeroed() {
        for backing in BACKINGS {
            let s = LargeSpace::with_backing(backing);
            let a = s.alloc(8192).unwrap();
            // SAFETY: `a` is 8192 bytes of memory this test owns.
            unsafe { std::ptr::write_bytes(a as *mut u8, 0xab, 8192) };
            s.free(&mut [(a, 8192)]);
            let b = s.alloc(8192).unwrap();
            assert_eq!(a, b);
            // SAFETY: as above, freshly handed out.
            let bytes = unsafe { std::slice::from_raw_parts(b as *const u8, 8192) };
            assert!(bytes.iter().all(|&x| x == 0), "{backing:?}");
            // SAFETY: as above.
            unsafe { std::ptr::write_bytes(b as *mut u8, 0xcd, 8192) };
            // SAFETY: nothing reads the range until after the call, and then expects zeroes.
            assert_eq!(unsafe { s.discard(&mut [(b, 8192)]) }.unwrap(), 1);
            // SAFETY: as above.
            let bytes = unsafe { std::slice::from_raw_parts(b as *const u8, 8192) };
            assert!(bytes.iter().all(|&x| x == 0), "{backing:?}");
        }
    }

    #[test]
    fn a_memfd_space_publishes_its_regions_and_an_anonymous_one_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.regions");
        let folder = Arc::new(SwapFolder::open(dir.path()).unwrap());
        let anon = LargeSpace::new();
        let err = anon
            .publish_regions(folder.clone(), "app.regions")
            .unwrap_err()
            .to_string();
        assert!(err.contains("memfd"), "{err}");

        let s = LargeSpace::with_backing(LargeBacking::Memfd);
        s.publish_regions(folder, "app.regions").unwrap();
        assert!(RegionDirectory::read(&path).unwrap().regions.is_empty());
        let a = s.alloc(4096).unwrap();
        // A second region, for an object larger than a region.
        let big = s.alloc(REGION_BYTES + PAGE).unwrap();
        let d = RegionDirectory::read(&path).unwrap();
        assert_eq!(d.pid, std::process::id());
        assert_eq!(d.regions.len(), 2);
        let (i, off) = d.locate(a as u64, 4096).unwrap();
        assert_eq!(d.regions[i].base + off, a as u64);
        assert!(d.locate(big as u64, (REGION_BYTES + PAGE) as u64).is_some());
        assert_eq!(d, s.directory());
    }
}
