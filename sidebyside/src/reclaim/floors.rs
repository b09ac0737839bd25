//! What the machine allows, measured beside the reclaim and restore rows: the kernel
//! dropping pages (`madvise`, a hole punched in a memory file), reading a swap file
//! cold, fresh or warm, and a row's ratio to its floor ([`against_floor`]).

use std::path::Path;
use std::time::Instant;

use anyhow::{ensure, Context};

use super::super::{Sample, FLOOR, FLOOR_RATIO};
use super::saved_heap::SavedHeap;

/// `fsync`s `path` and asks the kernel to drop its cached pages.
pub fn drop_page_cache(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::io::AsRawFd;
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    f.sync_all().context("fsync of the swap file")?;
    // SAFETY: a plain advice call on a file descriptor we own for the call's length.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    ensure!(rc == 0, "posix_fadvise failed: error {rc}");
    Ok(())
}

/// One `madvise(MADV_DONTNEED)` over `bytes` of freshly touched anonymous memory, in
/// ns: what the kernel alone takes to drop that many 4 KiB pages, the floor under any
/// reclaimer that really returns them.
pub(super) fn madvise_floor(bytes: u64) -> anyhow::Result<f64> {
    let len = bytes as usize;
    // SAFETY: a fresh private anonymous mapping, unmapped below; nothing else sees it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    ensure!(p != libc::MAP_FAILED, "mmap of {bytes} bytes failed");
    for off in (0..len).step_by(4096) {
        // SAFETY: inside the mapping, which is readable and writable.
        unsafe { (p as *mut u8).add(off).write_volatile(1) };
    }
    let t = Instant::now();
    // SAFETY: the whole mapping, which no reference points into.
    let rc = unsafe { libc::madvise(p, len, libc::MADV_DONTNEED) };
    let ns = t.elapsed().as_nanos() as f64;
    // SAFETY: the mapping made above, not used after this.
    unsafe { libc::munmap(p, len) };
    ensure!(rc == 0, "madvise failed");
    Ok(ns)
}

/// One hole punched over `bytes` of a freshly touched memory file, in ns: the kernel's
/// own cost of freeing that many shared pages.
pub(super) fn punch_hole_floor(bytes: u64) -> anyhow::Result<f64> {
    use marvin_runtime::memfd;
    let file = memfd::create("marvin-bench", bytes)?;
    let mut map = memfd::map_shared(&file, bytes as usize)?;
    for off in (0..bytes as usize).step_by(4096) {
        map[off] = 1;
    }
    let t = Instant::now();
    memfd::punch_hole(&file, 0, bytes)?;
    Ok(t.elapsed().as_nanos() as f64)
}

/// One way of reclaiming `size` bytes of a [`SavedHeap`], timed by [`reclaim_rows`].
/// The kernel's floor beside the reclaimers: its name, the key its call count goes
/// under, and how it is timed.
pub(super) struct Floor {
    pub(super) name: &'static str,
    pub(super) calls_key: &'static str,
    pub(super) pages: FloorPages,
}

/// What pages a floor drops.
pub(super) enum FloorPages {
    /// As many freshly touched pages of a mapping of its own, touched by this thread
    /// (ns of the one call).
    Fresh(fn(u64) -> anyhow::Result<f64>),
    /// The very pages of the arrays a reclaim of that size drops, right after the same
    /// eager restore as the reclaims' ([`madvise_restored_pages`]); the fresh pages'
    /// drop is timed too and reported beside it (JSON `fresh_pages_ms`).
    Restored(fn(u64) -> anyhow::Result<f64>),
}

/// The anonymous reclaims' floor: right after an eager restore of every array (as
/// before each timed reclaim), the kernel's own drop of the pages a reclaim of `size`
/// bytes drops, through the same call as the reclaimer's ([`LargeSpace::discard`]: one
/// `madvise(MADV_DONTNEED)` per contiguous run within a region, here one per region),
/// without the reclaimer's scan, locks and table. Returns ns and the calls made.
///
/// Why these pages and not fresh ones: an eager restore prefaults the pages it fills on
/// two threads (its own and a helper), so about half of them were allocated on the
/// other CPU, and the kernel frees pages allocated elsewhere more slowly (per-CPU lists
/// spilling into the buddy allocator under the zone lock) than pages this thread just
/// touched, which is all a fresh mapping's are. Measured alike, the floor pays what the
/// reclaim pays for the same pages.
///
/// [`LargeSpace::discard`]: marvin_runtime::LargeSpace::discard
pub(super) fn madvise_restored_pages(saved: &SavedHeap, size: u64) -> anyhow::Result<(f64, u64)> {
    saved.restore_eager()?;
    let mut runs = saved.page_runs(size)?;
    let t = Instant::now();
    // SAFETY: the arrays' pages, which nothing reads or writes until `reclaim_all` below
    // has marked every array reclaimed (each then faults back from its clean checkpoint);
    // the bench is the heap's only thread.
    let calls = unsafe { saved.heap.large_space().discard(&mut runs) };
    let ns = t.elapsed().as_nanos() as f64;
    let taken = saved.reclaim_all();
    let calls = calls.context("dropping the arrays' pages")?;
    ensure!(taken >= size, "reclaimed {taken} of {size} bytes");
    Ok((ns, calls as u64))
}

/// Times each of `reclaims` taking `size` bytes of `saved`, and `floor` dropping as
/// many pages, for both sizes: one warm-up then `reps` rounds, medians reported.
///
/// Each timed drop comes right after its pages were made: the reclaimers' by an eager
/// restore (every page read back, freshly touched), the floor's by the same restore
/// ([`FloorPages::Restored`]) or by its own touching ([`FloorPages::Fresh`]).
/// The kernel frees pages faster into the per-CPU lists that have just handed them
/// out, so a drop measured right after another one (whose pages filled those lists)
/// would pay the zone lock that the first did not.
///
/// And every timed drop has the same history: before its restore, every array is
/// reclaimed (untimed, one coalesced drop), so each one's pages were allocated right
/// after the same kind of drop. Before, marvin's restore came after the floor's drop and
/// its fresh mapping, the floor's after the per-object reclaim's 128,000 one-page
/// drops, which leave the per-CPU lists tuned otherwise (the kernel sizes them by what
/// was freed and allocated last). Each row carries its rounds' times (`rounds_ms`).
pub(super) fn cold_file_read(path: &Path, limit: u64) -> anyhow::Result<(u64, f64)> {
    use std::io::Read;
    drop_page_cache(path)?;
    let mut f = std::fs::File::open(path)?.take(limit);
    let mut buf = vec![0u8; 1 << 20];
    let t = Instant::now();
    let mut bytes = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
    }
    Ok((bytes, t.elapsed().as_nanos() as f64))
}

/// Reads the first `limit` bytes of the file at `path` (all of it if shorter), dropped
/// from the page cache, front to back in 1 MiB reads into a fresh anonymous mapping of
/// that size: the disk floor's reads with the page faults of the memory they land in,
/// which a restore into reclaimed pages pays too (the mapping and its faults timed with
/// the reads). Returns bytes and ns.
pub(super) fn cold_file_read_fresh(path: &Path, limit: u64) -> anyhow::Result<(u64, f64)> {
    use std::os::unix::fs::FileExt;
    drop_page_cache(path)?;
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len().min(limit) as usize;
    ensure!(len > 0, "{} is empty", path.display());
    let t = Instant::now();
    let mut map = memmap2::MmapMut::map_anon(len).context("mapping fresh anonymous memory")?;
    let mut done = 0;
    while done < len {
        let end = (done + (1 << 20)).min(len);
        let n = f.read_at(&mut map[done..end], done as u64)?;
        ensure!(n > 0, "{} ended early", path.display());
        done += n;
    }
    let ns = t.elapsed().as_nanos() as f64;
    drop(map);
    Ok((len as u64, ns))
}

/// Reads the first `limit` bytes of the file at `path` (all of it if shorter), already in
/// the page cache, with one `pread` into a fresh anonymous mapping of that size: what a
/// restore of as many bytes from a warm cache cannot beat (the copy, and the faults of
/// the pages it lands in). Those bytes are read through once untimed so that all of them
/// are cached. Returns bytes and ns.
pub(super) fn warm_file_read(path: &Path, limit: u64) -> anyhow::Result<(u64, f64)> {
    use std::io::Read;
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len().min(limit) as usize;
    ensure!(len > 0, "{} is empty", path.display());
    let mut buf = vec![0u8; 1 << 20];
    let mut cache = (&f).take(len as u64);
    while cache.read(&mut buf)? > 0 {}
    drop(buf);
    let t = Instant::now();
    let mut map = memmap2::MmapMut::map_anon(len).context("mapping fresh anonymous memory")?;
    // One call reads it all (Linux caps a read at 2 GiB less a page; loop only past it).
    let mut done = 0;
    while done < len {
        let n = f.read_at(&mut map[done..], done as u64)?;
        ensure!(n > 0, "{} ended early", path.display());
        done += n;
    }
    let ns = t.elapsed().as_nanos() as f64;
    drop(map);
    Ok((len as u64, ns))
}

/// `row` with its floor's name and its ratio to it: time per byte over the floor's
/// (when both carry `bytes`), else time over time.
pub(super) fn against_floor(row: Sample, floor: &Sample) -> Sample {
    let bytes = |s: &Sample| s.extra.get("bytes").and_then(|b| b.as_f64());
    let ratio = match (bytes(&row), bytes(floor)) {
        (Some(b), Some(fb)) if b > 0.0 && fb > 0.0 => (row.median_ns / b) / (floor.median_ns / fb),
        _ => row.median_ns / floor.median_ns,
    };
    let name = floor.implementation.clone();
    row.with(FLOOR, name).with(FLOOR_RATIO, ratio)
}
