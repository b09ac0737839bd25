//! `marvin bench reclaim`: how fast saved objects of a background app go back to the OS,
//! and how fast they come back.
//!
//! Set-up (not timed): a bare heap holding N MiB of one-page int arrays (509 words, 4,088
//! bytes with the header: the published workload's 4,076-byte arrays), each stubbed and
//! saved to its swap file ([`SavedHeap`]), the app in the background.
//!
//! - **reclaim**: [`reclaimer::reclaim_from`] taking 250 MiB and 500 MiB, against the
//!   reference [`reclaimer::reclaim_from_per_object`], which makes one `madvise` per
//!   object where ours coalesces neighbours into one call. The published figures (52 ms
//!   and 108 ms) are rows of their own, marked `"measured": false`, and are the baseline
//!   of the ratio column.
//! - **restore**: everything reclaimed, then read back eagerly ([`restore::restore_all`])
//!   or on fault (each object read once through [`Heap::access`]), with the swap file in
//!   the page cache (warm) or dropped from it (cold: `fsync`, then
//!   `posix_fadvise(POSIX_FADV_DONTNEED)` on the file, which needs no privilege). Rows
//!   carry `bytes` and `mb_per_s`; the published 100 MB/s is the baseline row.
//! - **compressed checkpoints**: eager restores, warm and cold, of arrays saved with
//!   `[saver] compress = "lz4"`: random arrays (stored as they are, since they do not
//!   shrink) beside the same arrays saved without compression, and the workload's
//!   arrays (which shrink to a few dozen bytes each). Their rows carry `file_bytes`, what
//!   the restore reads, and their floors read as many bytes of their own swap file.
//!
//! - **memory files**: the same arrays in a heap whose large objects live in memory
//!   files (`--large-backing memfd`, what a reclaimer in another process needs), reclaimed
//!   in process (`memfd-punch-hole`: one `fallocate(PUNCH_HOLE)` per run) and through the
//!   external reclaimer opening this very process from outside (`external-punch-hole`:
//!   the reclaim table's file view, the region directory, descriptors taken over with
//!   `pidfd_getfd`), with `kernel-punch-hole-floor`, one hole over as many freshly touched
//!   pages of a memory file.
//!
//! Floor rows measured in the same run show what the machine allows, and every reclaim
//! and restore row carries its ratio to its floor (`floor`, `ratio_to_floor`; the
//! table's `x floor` column): `kernel-madvise-floor` under the anonymous reclaims (the
//! kernel dropping the very pages a reclaim drops, right after the same eager restore,
//! one `madvise` per region and nothing else: its own cost of dropping them; one
//! `madvise` over as many freshly touched pages of a fresh mapping is reported beside
//! it), `kernel-punch-hole-floor` under the memory-file ones,
//! `page-cache-read-floor` under the warm restores (one `pread` of as many bytes of the
//! swap file as a restore reads, cached, into a fresh anonymous mapping, its page faults
//! included) and `disk-sequential-read` under the cold ones (as many bytes of the swap
//! file, dropped from the page cache, read front to back in 1 MiB reads).
//!
//! Every restore is checked: the first word of each array holds its handle, and the
//! walk's sum must match.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use clap::Args;
use marvin_runtime::barrier::{AccessKind, Barriers};
use marvin_runtime::header::ObjKind;
use marvin_runtime::heap::{Handle, Heap, HeapConfig, LargeBacking};
use marvin_swap::external::ExternalApp;
use marvin_swap::reclaimer::ReclaimReport;
use marvin_swap::{reclaimer, restore, saver, stubber, AppSwap, Compression, PolicyConfig};

use super::{finish, median, CommonArgs, Sample, FLOOR, FLOOR_RATIO};
use marvin_figures::{Bar, Chart, Curve};

#[derive(Debug, Args)]
#[command(mut_arg("reps", |a| a.default_value("3")))]
pub struct ReclaimArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Small sizes (8 and 16 MiB) instead of 250 and 500 MiB.
    #[arg(long)]
    pub quick: bool,
    /// Draw the paper's figure 6 from the results (SVG and PNG, with the published
    /// values beside marvin's) into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<std::path::PathBuf>,
}

/// Words of payload per array: with the 16-byte header, one 4 KiB page.
pub const ARRAY_WORDS: u32 = 509;
/// Bytes of heap each array takes (one page).
pub const ARRAY_BYTES: u64 = 4096;
/// The class id of arrays (as the interpreter sets it).
const ARRAY_CLASS: u32 = u32::MAX;
const MIB: u64 = 1 << 20;

/// What the arrays of a [`SavedHeap`] hold besides their first and last words (the
/// handle and its complement).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Zeros: the published workload's arrays, which compress well.
    Workload,
    /// Random words, which do not compress.
    Random,
}

/// A background app reduced to its heap: arrays that are stubbed, saved and clean, so
/// the reclaimer may take any of them.
pub struct SavedHeap {
    pub heap: Heap,
    pub swap: Arc<AppSwap>,
    /// Every array, in allocation (and address) order.
    pub handles: Vec<Handle>,
    /// Sum of every array's first word (each holds its handle's value).
    pub checksum: u64,
    _dir: tempfile::TempDir,
}

impl SavedHeap {
    /// Allocates `bytes` of one-page int arrays, stubs them, saves them all and puts
    /// the app in the background.
    pub fn build(bytes: u64) -> anyhow::Result<SavedHeap> {
        SavedHeap::build_on(bytes, LargeBacking::Anonymous)
    }

    /// As [`SavedHeap::build`], with the large objects backed as `backing` says.
    pub fn build_on(bytes: u64, backing: LargeBacking) -> anyhow::Result<SavedHeap> {
        SavedHeap::build_with(bytes, backing, Fill::Workload, PolicyConfig::default())
    }

    /// As [`SavedHeap::build_on`], the arrays filled as `fill` says and saved under
    /// `policy` (its `[saver] compress`, say).
    pub fn build_with(
        bytes: u64,
        backing: LargeBacking,
        fill: Fill,
        policy: PolicyConfig,
    ) -> anyhow::Result<SavedHeap> {
        let n = (bytes / ARRAY_BYTES) as usize;
        let mut random = 0x9e37_79b9_7f4a_7c15u64;
        let heap = Heap::new(HeapConfig {
            handle_capacity: (n as u32 + 1024).next_power_of_two(),
            large_backing: backing,
            ..HeapConfig::default()
        })
        .context("creating the heap")?;
        let mut handles = Vec::with_capacity(n);
        let mut checksum = 0u64;
        for _ in 0..n {
            let h = heap
                .alloc(ObjKind::IntArray, ARRAY_CLASS, ARRAY_WORDS, 0)
                .context("allocating an array")?;
            let a = heap.access::<Barriers>(h, AccessKind::Write)?;
            let words = a.obj().words();
            if fill == Fill::Random {
                for w in words.iter() {
                    random ^= random << 13;
                    random ^= random >> 7;
                    random ^= random << 17;
                    w.store(random, std::sync::atomic::Ordering::Relaxed);
                }
            }
            words[0].store(h.value(), std::sync::atomic::Ordering::Relaxed);
            words[words.len() - 1].store(!h.value(), std::sync::atomic::Ordering::Relaxed);
            checksum = checksum.wrapping_add(h.value());
            handles.push(h);
        }
        let dir = tempfile::tempdir().context("creating the swap directory")?;
        let policy = Arc::new(policy);
        let swap = AppSwap::attach(&heap, dir.path(), "bench", policy, n as u32 + 1024, true)?;
        // SAFETY: this thread is the heap's only user: no mutator runs.
        let stubbed = unsafe { stubber::stub_candidates(&heap, &*swap.policy) }?;
        ensure!(
            stubbed.objects == n as u64,
            "stubbed {} of {n}",
            stubbed.objects
        );
        let space = heap.stub_space().context("stubs enabled")?;
        space.table.set_foreground(false);
        let saved = saver::save(&heap, &swap, Duration::MAX, true);
        ensure!(
            saved.saved_objects == n as u64,
            "saved {} of {n} arrays",
            saved.saved_objects
        );
        Ok(SavedHeap {
            heap,
            swap,
            handles,
            checksum,
            _dir: dir,
        })
    }

    /// Total bytes of the arrays' pages.
    pub fn bytes(&self) -> u64 {
        self.handles.len() as u64 * ARRAY_BYTES
    }

    /// Total bytes of the arrays themselves (header and payload: what a restore reads).
    pub fn object_bytes(&self) -> u64 {
        self.handles.len() as u64 * (16 + 8 * ARRAY_WORDS as u64)
    }

    /// Bytes of the swap file the arrays' checkpoints take, headers included, from its
    /// start: what a restore of all of them reads.
    pub fn stored_bytes(&self) -> u64 {
        let file = self.swap.file.lock();
        marvin_swap::swap_file::layout::FILE_HEADER_BYTES + file.used_bytes()
    }

    /// Reads every array once through the barrier (faulting in whatever is out),
    /// summing its first word; fails unless the sum is the expected one.
    pub fn walk_first_words(&self) -> anyhow::Result<()> {
        let mut sum = 0u64;
        for &h in &self.handles {
            let a = self.heap.access::<Barriers>(h, AccessKind::Read)?;
            sum = sum.wrapping_add(a.obj().words()[0].load(std::sync::atomic::Ordering::Relaxed));
        }
        ensure!(
            sum == self.checksum,
            "restored arrays hold the wrong values"
        );
        Ok(())
    }

    /// Reads back every reclaimed array eagerly; returns the bytes read.
    pub fn restore_eager(&self) -> anyhow::Result<u64> {
        let r = restore::restore_all(&self.heap, &self.swap);
        if let Some(e) = r.errors.first() {
            bail!("restore failed: {e}");
        }
        Ok(r.bytes)
    }

    /// This app seen from outside (its table file and region directory), as the System's
    /// reclaimer opens another process.
    pub fn open_from_outside(&self) -> anyhow::Result<ExternalApp> {
        ExternalApp::open(std::process::id(), self._dir.path(), "bench")
            .context("opening the app from outside")
    }

    /// The pages of the arrays, in address order, coalesced into contiguous runs and cut
    /// at `size` bytes: the pages a reclaim of `size` bytes drops.
    pub fn page_runs(&self, size: u64) -> anyhow::Result<Vec<(usize, usize)>> {
        use marvin_runtime::heap::large_space::page_round;
        let space = self.heap.stub_space().context("stubs are not enabled")?;
        let registry = space.registry();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut left = size as usize;
        for &h in &self.handles {
            let stub = registry.get(h).context("an array without its stub")?;
            let len = page_round(stub.bytes()).min(left);
            if len == 0 {
                break;
            }
            left -= len;
            match runs.last_mut() {
                Some((a, l)) if *a + *l == stub.addr => *l += len,
                _ => runs.push((stub.addr, len)),
            }
        }
        Ok(runs)
    }

    /// Reclaims everything reclaimable; returns the bytes taken.
    pub fn reclaim_all(&self) -> u64 {
        reclaimer::reclaim_from(&self.heap, u64::MAX).bytes
    }

    /// Writes the swap file back and drops it from the page cache, so the next reads go
    /// to the disk.
    pub fn drop_swap_cache(&self) -> anyhow::Result<()> {
        let file = self.swap.file.lock();
        file.flush()?;
        drop_page_cache(file.path())
    }
}

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
fn madvise_floor(bytes: u64) -> anyhow::Result<f64> {
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
fn punch_hole_floor(bytes: u64) -> anyhow::Result<f64> {
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
type Reclaim<'a> = (&'static str, Box<dyn FnMut(u64) -> ReclaimReport + 'a>);

/// The kernel's floor beside the reclaimers: its name, the key its call count goes
/// under, and how it is timed.
struct Floor {
    name: &'static str,
    calls_key: &'static str,
    pages: FloorPages,
}

/// What pages a floor drops.
enum FloorPages {
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
/// [`LargeSpace::discard`]: marvin_runtime::heap::large_space::LargeSpace::discard
fn madvise_restored_pages(saved: &SavedHeap, size: u64) -> anyhow::Result<(f64, u64)> {
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
fn reclaim_rows(
    saved: &SavedHeap,
    sizes: [u64; 2],
    reps: usize,
    floor: &Floor,
    reclaims: &mut [Reclaim<'_>],
) -> anyhow::Result<Vec<Sample>> {
    let mut samples = Vec::new();
    for size in sizes {
        let scenario = format!("reclaim {} MiB", size / MIB);
        let mut times = vec![Vec::new(); reclaims.len()];
        let mut calls = vec![0u64; reclaims.len()];
        let mut floor_ns = Vec::new();
        let mut fresh_ns = Vec::new();
        let mut floor_calls = 1;
        for rep in 0..=reps {
            for (k, (_, reclaim)) in reclaims.iter_mut().enumerate() {
                saved.reclaim_all();
                saved.restore_eager()?;
                let t = Instant::now();
                let r = reclaim(size);
                let ns = t.elapsed().as_nanos() as f64;
                ensure!(r.bytes >= size, "reclaimed {} of {size} bytes", r.bytes);
                if rep > 0 {
                    times[k].push(ns);
                }
                calls[k] = r.madvise_calls;
            }
            let (ns, fresh) = match floor.pages {
                FloorPages::Fresh(time) => (time(size)?, None),
                FloorPages::Restored(fresh) => {
                    saved.reclaim_all();
                    let (ns, calls) = madvise_restored_pages(saved, size)?;
                    floor_calls = calls;
                    (ns, Some(fresh(size)?))
                }
            };
            if rep > 0 {
                floor_ns.push(ns);
                fresh_ns.extend(fresh);
            }
        }
        saved.restore_eager()?;
        let rounds = |ns: &[f64]| ns.iter().map(|t| t / 1e6).collect::<Vec<f64>>();
        let mut floor_row = Sample::new(&scenario, floor.name, median(&mut floor_ns.clone()))
            .with("bytes", size)
            .with(floor.calls_key, floor_calls)
            .with(ROUNDS_MS, rounds(&floor_ns));
        if !fresh_ns.is_empty() {
            floor_row = floor_row.with(FRESH_PAGES_MS, median(&mut fresh_ns) / 1e6);
        }
        for (k, (name, _)) in reclaims.iter().enumerate() {
            let row = Sample::new(&scenario, *name, median(&mut times[k].clone()))
                .with("bytes", size)
                .with(floor.calls_key, calls[k])
                .with(ROUNDS_MS, rounds(&times[k]));
            samples.push(against_floor(row, &floor_row));
        }
        samples.push(floor_row);
    }
    saved.walk_first_words()?;
    Ok(samples)
}

/// The memory-file rows of the reclaim scenarios: in process, from outside, and the
/// kernel's floor.
fn memfd_rows(small: u64, large: u64, reps: usize) -> anyhow::Result<Vec<Sample>> {
    let saved = SavedHeap::build_on(large, LargeBacking::Memfd)?;
    let mut outside = saved.open_from_outside()?;
    let floor = Floor {
        name: "kernel-punch-hole-floor",
        calls_key: "fallocate_calls",
        pages: FloorPages::Fresh(punch_hole_floor),
    };
    let heap = &saved.heap;
    let mut reclaims: [Reclaim<'_>; 2] = [
        (
            "memfd-punch-hole",
            Box::new(|size| reclaimer::reclaim_from(heap, size)),
        ),
        (
            "external-punch-hole",
            Box::new(|size| outside.reclaim(size)),
        ),
    ];
    reclaim_rows(&saved, [small, large], reps, &floor, &mut reclaims)
}

/// Reads the first `limit` bytes of the file at `path` (all of it if shorter) front to
/// back in 1 MiB reads after dropping it from the page cache: what the disk gives a
/// sequential reader of as many bytes as a restore reads. Returns bytes and ns.
fn cold_file_read(path: &Path, limit: u64) -> anyhow::Result<(u64, f64)> {
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
fn cold_file_read_fresh(path: &Path, limit: u64) -> anyhow::Result<(u64, f64)> {
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
fn warm_file_read(path: &Path, limit: u64) -> anyhow::Result<(u64, f64)> {
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
fn against_floor(row: Sample, floor: &Sample) -> Sample {
    let bytes = |s: &Sample| s.extra.get("bytes").and_then(|b| b.as_f64());
    let ratio = match (bytes(&row), bytes(floor)) {
        (Some(b), Some(fb)) if b > 0.0 && fb > 0.0 => (row.median_ns / b) / (floor.median_ns / fb),
        _ => row.median_ns / floor.median_ns,
    };
    let name = floor.implementation.clone();
    row.with(FLOOR, name).with(FLOOR_RATIO, ratio)
}

const PUBLISHED: &str = "published";
/// In a reclaim or restore row (JSON): each timed round's time (ms), in the order run.
const ROUNDS_MS: &str = "rounds_ms";
/// The cold restores' floor: the swap file read from the disk, front to back.
const DISK_FLOOR: &str = "disk-sequential-read";
/// In a cold restore's row (JSON): the median time (ms) of the disk floor's reads made
/// into a fresh anonymous mapping, its page faults included, and the row's time per byte
/// over it.
const FRESH_MEMORY_FLOOR_MS: &str = "disk_into_fresh_memory_ms";
const FRESH_MEMORY_RATIO: &str = "ratio_to_disk_into_fresh_memory";
/// The warm restores' floor: one `pread` of the cached swap file into fresh memory.
const PAGE_CACHE_FLOOR: &str = "page-cache-read-floor";
/// The anonymous reclaims' floor: the kernel's drop of the same pages, right after the
/// same restore ([`madvise_restored_pages`]).
const MADVISE_FLOOR: &str = "kernel-madvise-floor";
/// In the madvise floor's row (JSON): the median time (ms) of one `madvise` over as many
/// freshly touched pages of a mapping of its own (the floor before 2026-12-03's third
/// pass), beside the floor, not instead of it.
const FRESH_PAGES_MS: &str = "fresh_pages_ms";
/// Published Marvin restore throughput.
const PUBLISHED_RESTORE_MB_S: f64 = 100.0;

fn mb_per_s(bytes: u64, ns: f64) -> f64 {
    bytes as f64 / 1e6 / (ns / 1e9)
}

/// The restores of `large` MiB beside their floors, as bars of time: each mode's warm
/// and cold restores, the page-cache and disk floors, and the published rate's time.
fn restore_chart(samples: &[Sample], large: u64, reps: usize, quick: bool) -> Chart {
    let scenario = |mode: &str, cache: &str| format!("restore {} MiB {mode} {cache}", large / MIB);
    let get = |scenario: &str, imp: &str| {
        samples
            .iter()
            .find(|s| s.scenario == scenario && s.implementation == imp)
            .map(|s| s.median_ns / 1e6)
    };
    let mut bars = Vec::new();
    let mut bar = |label: String, value: Option<f64>, published: bool| {
        if let Some(value) = value {
            bars.push(Bar {
                label,
                value,
                published,
            });
        }
    };
    for cache in ["warm", "cold"] {
        for mode in ["eager", "on-fault"] {
            bar(
                format!("{mode} {cache}"),
                get(&scenario(mode, cache), "marvin"),
                false,
            );
        }
        let (floor, label) = if cache == "warm" {
            (PAGE_CACHE_FLOOR, "page-cache floor")
        } else {
            (DISK_FLOOR, "disk floor")
        };
        bar(label.into(), get(&scenario("eager", cache), floor), false);
    }
    bar(
        "published".into(),
        get(&scenario("eager", "warm"), PUBLISHED),
        true,
    );
    Chart {
        name: "restore",
        title: format!("Restore of {} MiB beside its floors", large / MIB),
        x_label: "restore (mode, page cache) and floor",
        y_label: "time to restore (ms)",
        curves: Vec::new(),
        bars,
        y_log: true,
        caption: format!(
            "marvin bench reclaim{}, one-page arrays stubbed and saved, median of {reps}, commit {}",
            if quick { " --quick" } else { "" },
            marvin_system::provenance::commit()
        ),
    }
}

/// Times restoring every array of `saved` (eagerly, or on fault by a walk), from a warm
/// or a cold page cache: one warm-up then `reps` rounds, each after the floor's own
/// measurement (the page-cache floor warm, the disk floor cold, over the first
/// `floor_bytes` of the swap file). Returns marvin's row, carrying its ratio to the
/// floor, and the floor's row.
fn restore_rows(
    saved: &SavedHeap,
    scenario: &str,
    (eager, cold): (bool, bool),
    floor_bytes: u64,
    reps: usize,
) -> anyhow::Result<(Sample, Sample)> {
    let mut rounds = RestoreRounds::new(saved, scenario, (eager, cold), floor_bytes);
    for rep in 0..=reps {
        rounds.round(rep > 0)?;
    }
    rounds.rows()
}

/// The rounds of one restore row and its floor's ([`restore_rows`]), kept apart so that
/// rows to be compared can take their rounds in turn.
struct RestoreRounds<'a> {
    saved: &'a SavedHeap,
    scenario: &'a str,
    eager: bool,
    cold: bool,
    floor_bytes: u64,
    times: Vec<f64>,
    floor_times: Vec<f64>,
    fresh_times: Vec<f64>,
    file_bytes: u64,
    bytes: u64,
}

impl<'a> RestoreRounds<'a> {
    fn new(
        saved: &'a SavedHeap,
        scenario: &'a str,
        (eager, cold): (bool, bool),
        floor_bytes: u64,
    ) -> RestoreRounds<'a> {
        RestoreRounds {
            saved,
            scenario,
            eager,
            cold,
            floor_bytes,
            times: Vec::new(),
            floor_times: Vec::new(),
            fresh_times: Vec::new(),
            file_bytes: 0,
            bytes: 0,
        }
    }

    /// One round: the floor's measurement, then everything reclaimed and restored
    /// (timed), then checked. A round not `timed` (the warm-up) records nothing.
    fn round(&mut self, timed: bool) -> anyhow::Result<()> {
        let saved = self.saved;
        let cold = self.cold;
        if timed {
            let path = saved.swap.file.lock().path().to_path_buf();
            let limit = self.floor_bytes;
            let (b, ns) = if cold {
                cold_file_read(&path, limit)?
            } else {
                warm_file_read(&path, limit)?
            };
            self.file_bytes = b;
            self.floor_times.push(ns);
            if cold {
                self.fresh_times.push(cold_file_read_fresh(&path, limit)?.1);
            }
        }
        let taken = saved.reclaim_all();
        ensure!(
            taken == saved.bytes(),
            "reclaimed {taken} of {}",
            saved.bytes()
        );
        if cold {
            saved.drop_swap_cache()?;
        }
        let t = Instant::now();
        if self.eager {
            self.bytes = saved.restore_eager()?;
        } else {
            saved.walk_first_words()?;
            self.bytes = saved.object_bytes();
        }
        let ns = t.elapsed().as_nanos() as f64;
        if timed {
            self.times.push(ns);
        }
        saved.walk_first_words()
    }

    /// marvin's row, carrying its ratio to the floor, and the floor's row.
    fn rows(self) -> anyhow::Result<(Sample, Sample)> {
        let saved = self.saved;
        let (bytes, file_bytes, cold) = (self.bytes, self.file_bytes, self.cold);
        ensure!(
            bytes == saved.object_bytes(),
            "restored {bytes} of {}",
            saved.object_bytes()
        );
        let rounds = |ns: &[f64]| ns.iter().map(|t| t / 1e6).collect::<Vec<f64>>();
        let ns = median(&mut self.times.clone());
        let floor_ns = median(&mut self.floor_times.clone());
        let floor_row = Sample::new(
            self.scenario,
            if cold { DISK_FLOOR } else { PAGE_CACHE_FLOOR },
            floor_ns,
        )
        .with("bytes", file_bytes)
        .with("mb_per_s", mb_per_s(file_bytes, floor_ns))
        .with(ROUNDS_MS, rounds(&self.floor_times));
        let mut row = Sample::new(self.scenario, "marvin", ns)
            .with("bytes", bytes)
            .with("file_bytes", saved.stored_bytes())
            .with("mb_per_s", mb_per_s(bytes, ns))
            .with(ROUNDS_MS, rounds(&self.times));
        if cold {
            // Beside the floor, not instead of it: the disk floor reads into one reused
            // buffer, a restore into fresh pages; this says what those pages' faults add.
            let fresh_ns = median(&mut self.fresh_times.clone());
            let per_byte = |ns: f64, b: u64| ns / b as f64;
            row = row.with(
                FRESH_MEMORY_RATIO,
                per_byte(ns, bytes) / per_byte(fresh_ns, file_bytes),
            );
            row = row.with(FRESH_MEMORY_FLOOR_MS, fresh_ns / 1e6);
        }
        Ok((against_floor(row, &floor_row), floor_row))
    }
}

/// Eager restores of `large` bytes of arrays saved with `[saver] compress = "lz4"`:
/// random arrays (which do not compress, so each is stored as it is) beside the same
/// arrays saved without compression, and the workload's arrays (which do). Each row's
/// floor reads as many bytes of its own swap file as its checkpoints take, so a
/// compressed restore reads fewer bytes than it restores (`file_bytes` against
/// `bytes`).
///
/// The two random rows, which are compared with each other, take their rounds in turn
/// (plain first in even rounds, lz4 first in odd ones), both heaps built before either
/// is timed: measured one after the other, a change in the machine's load between the
/// two rows' rounds (other work on a shared machine) made either look slower.
fn compressed_rows(large: u64, reps: usize) -> anyhow::Result<Vec<Sample>> {
    let mut samples = Vec::new();
    let lz4 = PolicyConfig {
        saver: marvin_swap::policy::SaverConfig {
            compress: Compression::Lz4,
            ..Default::default()
        },
        ..Default::default()
    };
    let scenario = |cache: &str, arrays: &str, codec: &str| {
        format!(
            "restore {} MiB eager {cache}, {arrays} arrays, compress {codec}",
            large / MIB
        )
    };
    {
        let random = [
            (
                "none",
                SavedHeap::build_with(
                    large,
                    LargeBacking::Anonymous,
                    Fill::Random,
                    PolicyConfig::default(),
                )?,
            ),
            (
                "lz4",
                SavedHeap::build_with(large, LargeBacking::Anonymous, Fill::Random, lz4.clone())?,
            ),
        ];
        for (cache, cold) in [("warm", false), ("cold", true)] {
            let names: Vec<String> = random
                .iter()
                .map(|(codec, _)| scenario(cache, "random", codec))
                .collect();
            let mut rows: Vec<RestoreRounds<'_>> = random
                .iter()
                .zip(&names)
                .map(|((_, saved), name)| {
                    RestoreRounds::new(saved, name, (true, cold), saved.stored_bytes())
                })
                .collect();
            for rep in 0..=reps {
                let order = if rep % 2 == 0 { [0, 1] } else { [1, 0] };
                for k in order {
                    rows[k].round(rep > 0)?;
                }
            }
            for rounds in rows {
                let (row, floor_row) = rounds.rows()?;
                samples.push(row);
                samples.push(floor_row);
            }
        }
    }
    let saved = SavedHeap::build_with(large, LargeBacking::Anonymous, Fill::Workload, lz4)?;
    for (cache, cold) in [("warm", false), ("cold", true)] {
        let name = scenario(cache, "workload", "lz4");
        let (row, floor_row) =
            restore_rows(&saved, &name, (true, cold), saved.stored_bytes(), reps)?;
        samples.push(row);
        samples.push(floor_row);
    }
    Ok(samples)
}

pub fn run(args: &ReclaimArgs) -> anyhow::Result<()> {
    let (small, large, published) = if args.quick {
        (8 * MIB, 16 * MIB, None)
    } else {
        (250 * MIB, 500 * MIB, Some((52e6, 108e6)))
    };
    if let Some(dir) = &args.plot {
        super::prepare_plot(dir)?;
    }
    let saved = SavedHeap::build(large)?;
    let reps = args.common.reps.max(1);
    let mut samples = Vec::new();

    // Reclaim: ours (coalesced) and one madvise per object, beside the kernel's floor.
    for (size, pub_ns) in [
        (small, published.map(|p| p.0)),
        (large, published.map(|p| p.1)),
    ] {
        if let Some(p) = pub_ns {
            let scenario = format!("reclaim {} MiB", size / MIB);
            samples.push(Sample::new(&scenario, PUBLISHED, p).with("measured", false));
        }
    }
    let floor = Floor {
        name: MADVISE_FLOOR,
        calls_key: "madvise_calls",
        pages: FloorPages::Restored(madvise_floor),
    };
    let heap = &saved.heap;
    let mut reclaims: [Reclaim<'_>; 2] = [
        (
            "marvin",
            Box::new(|size| reclaimer::reclaim_from(heap, size)),
        ),
        (
            "per-object-madvise",
            Box::new(|size| reclaimer::reclaim_from_per_object(heap, size)),
        ),
    ];
    samples.extend(reclaim_rows(
        &saved,
        [small, large],
        reps,
        &floor,
        &mut reclaims,
    )?);

    samples.extend(memfd_rows(small, large, reps)?);

    // Restore: eager and on fault, warm and cold page cache.
    for (mode, eager) in [("eager", true), ("on-fault", false)] {
        for (cache, cold) in [("warm", false), ("cold", true)] {
            let scenario = format!("restore {} MiB {mode} {cache}", large / MIB);
            // As many bytes as the objects hold, as the floors always read.
            let floor_bytes = saved.object_bytes();
            let (row, floor_row) =
                restore_rows(&saved, &scenario, (eager, cold), floor_bytes, reps)?;
            let bytes = saved.object_bytes();
            samples.push(
                Sample::new(
                    &scenario,
                    PUBLISHED,
                    bytes as f64 / (PUBLISHED_RESTORE_MB_S * 1e6) * 1e9,
                )
                .with("bytes", bytes)
                .with("mb_per_s", PUBLISHED_RESTORE_MB_S)
                .with("measured", false),
            );
            samples.push(row);
            samples.push(floor_row);
        }
    }
    // Room for the compressed rows' heaps: this one is done.
    drop(reclaims);
    drop(saved);
    samples.extend(compressed_rows(large, reps)?);

    let mut notes = vec![format!(
        "one-page int arrays, stubbed and saved; median of {reps} after a warm-up; `published` rows are the paper's figures (not measured here)"
    )];
    let get = |scenario: &str, imp: &str| {
        samples
            .iter()
            .find(|s| s.scenario == scenario && s.implementation == imp)
            .map(|s| s.median_ns)
    };
    for size in [small, large] {
        let scenario = format!("reclaim {} MiB", size / MIB);
        let ours = get(&scenario, "marvin").unwrap_or(f64::NAN);
        let floor = get(&scenario, MADVISE_FLOOR).unwrap_or(f64::NAN);
        notes.push(format!(
            "{scenario}: {:.1} ms; the kernel's drop of the same pages alone takes {:.1} ms here",
            ours / 1e6,
            floor / 1e6
        ));
    }
    if let Some(p) = published {
        let ours = get(&format!("reclaim {} MiB", large / MIB), "marvin").unwrap_or(f64::NAN);
        let speedup = p.1 / ours;
        notes.push(format!(
            "reclaim of 500 MiB is {speedup:.1}x faster than published (goal >= 5x: {})",
            if speedup >= 5.0 { "met" } else { "NOT met" }
        ));
    }
    for s in &samples {
        if s.implementation == "marvin" && s.scenario.starts_with("restore") {
            let mbs = s.extra["mb_per_s"].as_f64().unwrap_or(0.0);
            notes.push(format!(
                "{}: {mbs:.0} MB/s, {:.1}x published (goal >= 10x: {})",
                s.scenario,
                mbs / PUBLISHED_RESTORE_MB_S,
                if mbs >= 10.0 * PUBLISHED_RESTORE_MB_S {
                    "met"
                } else {
                    "NOT met"
                }
            ));
        }
    }
    if let Some(dir) = &args.plot {
        let curve = |imp: &str, label: &str| Curve {
            label: label.to_owned(),
            points: [small, large]
                .iter()
                .filter_map(|&size| {
                    get(&format!("reclaim {} MiB", size / MIB), imp)
                        .map(|ns| ((size / MIB) as f64, ns / 1e6))
                })
                .collect(),
            published: false,
        };
        let chart = Chart {
            name: "reclaim",
            title: "Figure 6: reclaim latency".into(),
            x_label: "memory reclaimed (MiB)",
            y_label: "time to reclaim (ms)",
            curves: vec![
                curve("marvin", "marvin"),
                curve("per-object-madvise", "one madvise per object"),
                curve(MADVISE_FLOOR, "kernel floor: one madvise"),
                Curve {
                    label: "published (Marvin, ATC 2020)".into(),
                    points: vec![(250.0, 52.0), (500.0, 108.0)],
                    published: true,
                },
            ],
            bars: Vec::new(),
            y_log: false,
            caption: format!(
                "marvin bench reclaim{}, one-page arrays stubbed and saved, median of {reps}, commit {}",
                if args.quick { " --quick" } else { "" },
                marvin_system::provenance::commit()
            ),
        };
        for f in chart.write(dir)? {
            notes.push(format!("wrote {}", f.display()));
        }
        for f in restore_chart(&samples, large, reps, args.quick).write(dir)? {
            notes.push(format!("wrote {}", f.display()));
        }
    }
    finish(samples, PUBLISHED, &args.common, &notes)?;
    Ok(())
}
