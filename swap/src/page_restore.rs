//! Large objects restored a run of pages at a time, on first touch, as the kernel swaps
//! pages in: an object fault of a large array brings back only its first pages, and the
//! others come back when something touches them. A launch that reads two bytes of each of
//! ten 1 MiB arrays then reads twenty runs of pages, not 10 MiB.
//!
//! How ([`begin`]): the object's pages are all missing (it is out: the reclaimer returned
//! them), and its range is registered with the process's userfaultfd ([`crate::uffd`]), so
//! a touch of a missing page raises `SIGBUS` on the touching thread, which [`resolve`]
//! answers: it reads the run of [`RUN_PAGES`] pages from the faulting one on out of the
//! checkpoint, checks each [`SUM_BYTES`] piece against its own checksum (the swap file
//! keeps one per piece of a large checkpoint, [`crate::swap_file::page_sums`]), and
//! places the pages atomically. A run of fills in address order asks the kernel to read
//! the checkpoint ahead of itself.
//!
//! A piece that fails its check, or a read that fails, cannot be answered from the
//! signal handler with an error, and the touch must complete. So the fill records the
//! damage (plain atomics of the object's record, and the stub's own DAMAGED bit,
//! [`marvin_runtime::StubBits::set_damaged`]), places zeroed pages for its
//! run so the touch can finish, and returns: the touching access then asks whether its
//! object was damaged before it uses what it read ([`marvin_runtime::Access::check`];
//! the executor does after every object access, and turns the answer into the ordinary
//! runtime error at the instruction's position, with the program's output flushed and its
//! statistics written), and every later access, save or restore of the object fails with
//! the same error ([`damage`] says what it was). Only where the zero pages cannot be
//! placed does the process end from the handler, as before.
//!
//! What keeps it sound: only user code may touch a registered range (a registered missing
//! page fails a system call's access with `EFAULT`), and nothing else may fill it. So the
//! registration ends ([`cancel`]) before anything else is done with the object's pages:
//! when its stub is freed ([`crate::AppSwap`]'s `freed`, before the pages are reused), and
//! when it is restored again after a later reclaim (the object fault and the eager restore
//! cancel it before they read into the pages). The checkpoint stays readable meanwhile: its
//! slot is rewritten or freed only after a save, which reads (so fills) every page first,
//! or after the stub is freed; a compaction copies it to a new file and leaves the old
//! one, which the fills read through a handle of their own, as it was. Only objects with no
//! references are restored so (a restore copies the references of the others into their
//! pages at once).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{const_rwlock, RwLock};

use marvin_runtime::Stub;
use parking_lot::Mutex;

use crate::app_swap::SwapCounters;
use crate::swap_file::page_sums::SUM_BYTES;
use crate::swap_file::{crc32, PageSource};
use crate::uffd;

/// The status a run ends with after a runtime error (MASM's contract), as when an object
/// fault fails its checks.
pub const RUNTIME_ERROR_STATUS: i32 = 70;

/// The page size the fills place: the large-object space's, whose objects these are.
pub use marvin_runtime::PAGE;

/// Pages one fill places at most: the faulting page and those after it in the object.
pub const RUN_PAGES: usize = 8;

/// How far a run of fills in address order has the kernel read its checkpoint ahead of
/// it, asked for in steps of at least half of it.
pub const SEQUENTIAL_AHEAD_BYTES: u64 = 1 << 20;

/// Where an object restored a page run at a time lives, and its stub.
pub struct Target {
    /// Its first page.
    pub addr: usize,
    /// Bytes of its pages.
    pub len: usize,
    /// Bytes before the payload in its first page (its header, rebuilt by the restore,
    /// not stored in the checkpoint).
    pub header: usize,
    /// Its stub, whose DAMAGED bit a fill that finds a damaged piece sets.
    pub stub: Arc<Stub>,
}

/// What a fill found wrong, in atomics a signal handler may write: the first damage
/// wins.
#[derive(Default)]
struct Damage {
    /// 0: none; [`DAMAGE_SUM`] or [`DAMAGE_READ`].
    kind: std::sync::atomic::AtomicU32,
    /// The piece that failed its checksum, or the first piece of a read that failed.
    piece: std::sync::atomic::AtomicU32,
    /// The checksum computed, or the read's `errno`.
    value: std::sync::atomic::AtomicU32,
}

const DAMAGE_SUM: u32 = 1;
const DAMAGE_READ: u32 = 2;

/// One object being restored a page run at a time.
struct PagedObject {
    addr: usize,
    /// Bytes of the object's pages.
    len: usize,
    /// Bytes before the payload in the object's first page (its header, rebuilt by the
    /// restore, not stored in the checkpoint).
    header: usize,
    stub: Arc<Stub>,
    damage: Damage,
    src: PageSource,
    counters: Arc<SwapCounters>,
    /// The page after the last fill's run: a fault there continues a run in address order.
    next_page: AtomicUsize,
    /// Payload bytes below this were asked to be read ahead.
    advised_to: AtomicU64,
}

/// Every object of the process being restored so, by address.
static OBJECTS: RwLock<BTreeMap<usize, Arc<PagedObject>>> = const_rwlock(BTreeMap::new());
/// How many there are (so that [`cancel`] costs nothing while there are none).
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// What was found wrong with damaged objects whose restore has ended (cancelled), by
/// address, until their stubs are freed ([`forget_damage`]).
static REPORTS: Mutex<BTreeMap<usize, String>> = parking_lot::const_mutex(BTreeMap::new());

/// Starts restoring the out object at `[addr, addr + len)` (page-aligned, with `header`
/// bytes before its payload) a page run at a time from `src`. Returns false, having done
/// nothing, where it cannot be (no userfaultfd; a memory file the kernel will not
/// register; a page of the range already there): the caller restores it whole. The
/// caller holds the object as a fault does (entry shared, state locked), and touches its
/// pages only after this returns.
pub fn begin(target: Target, src: PageSource, counters: Arc<SwapCounters>, memfd: bool) -> bool {
    let Target {
        addr,
        len,
        header,
        stub,
    } = target;
    let Some(uffd) = uffd::get(resolve) else {
        return false;
    };
    if (memfd && !uffd.shmem)
        || !addr.is_multiple_of(PAGE)
        || !len.is_multiple_of(PAGE)
        || header >= PAGE
    {
        return false;
    }
    if header + src.len > len || len == 0 {
        return false;
    }
    // A page still there would be taken for the checkpoint's.
    if uffd::resident_pages(addr, len).map_or(true, |n| n > 0) {
        return false;
    }
    cancel(addr);
    let obj = Arc::new(PagedObject {
        addr,
        len,
        header,
        stub,
        damage: Damage::default(),
        src,
        counters,
        next_page: AtomicUsize::new(usize::MAX),
        advised_to: AtomicU64::new(0),
    });
    let mut objects = OBJECTS.write();
    if uffd.register_missing(addr, len).is_err() {
        return false;
    }
    if objects.insert(addr, obj).is_none() {
        COUNT.fetch_add(1, Ordering::Relaxed);
    }
    true
}

/// Ends the page-at-a-time restore of the object at `addr`, if there is one: its missing
/// pages, if any, then fault in as any memory does (as zeroes), for a restore or a new
/// object to fill.
pub fn cancel(addr: usize) {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    let mut objects = OBJECTS.write();
    if let Some(obj) = objects.remove(&addr) {
        COUNT.fetch_sub(1, Ordering::Relaxed);
        if let Some(report) = obj.damage_report() {
            REPORTS.lock().insert(addr, report);
        }
        if let Some(uffd) = uffd::get(resolve) {
            // Only fails for a range no longer mapped, which nothing touches.
            let _ = uffd.unregister(obj.addr, obj.len);
        }
    }
}

/// What a fill found wrong with the object at `addr`, if it found it damaged: the text
/// of the error every access to it reports.
pub fn damage(addr: usize) -> Option<String> {
    if COUNT.load(Ordering::Relaxed) > 0 {
        if let Some(obj) = OBJECTS.read().get(&addr) {
            if let Some(report) = obj.damage_report() {
                return Some(report);
            }
        }
    }
    REPORTS.lock().get(&addr).cloned()
}

/// Forgets what was found wrong with the object at `addr` (its stub is freed; its pages
/// may hold another object next).
pub fn forget_damage(addr: usize) {
    let mut reports = REPORTS.lock();
    if !reports.is_empty() {
        reports.remove(&addr);
    }
}

/// Whether this process can restore objects a page run at a time (a kernel with
/// userfaultfd's `SIGBUS` mode, 5.11 or later, and no sandbox that forbids it).
pub fn available() -> bool {
    uffd::get(resolve).is_some()
}

/// Whether the object at `addr` is being restored a page run at a time.
pub fn is_paged(addr: usize) -> bool {
    COUNT.load(Ordering::Relaxed) > 0 && OBJECTS.read().contains_key(&addr)
}

/// Answers a `SIGBUS` at `fault`: fills the run of pages from the faulting one on, when
/// the address is in an object being restored so. Returns false for any other address.
/// Runs in a signal handler on the touching thread: it takes no lock that thread can hold
/// while touching an object, and allocates nothing but on its way to exit.
fn resolve(fault: usize) -> bool {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let obj = {
        let objects = OBJECTS.read();
        match objects.range(..=fault).next_back() {
            Some((&a, o)) if fault < a + o.len => o.clone(),
            _ => return false,
        }
    };
    fill(&obj, (fault - obj.addr) / PAGE);
    true
}

/// The pieces of the payload, and where in the object its pages, of one fill.
#[derive(Debug, PartialEq, Eq)]
struct Plan {
    /// Pages `[p0, p1)` of the object.
    p0: usize,
    p1: usize,
    /// Payload bytes `[from, to)` read: whole pieces.
    from: usize,
    to: usize,
}

/// What a fill of the page `page` of an object of `pages` pages reads, its payload of
/// `len` bytes starting `header` bytes into its first page.
fn plan(page: usize, pages: usize, header: usize, len: usize) -> Plan {
    let p0 = page;
    let p1 = (page + RUN_PAGES).min(pages);
    let lo = (p0 * PAGE).saturating_sub(header).min(len);
    let hi = (p1 * PAGE - header).min(len);
    let from = lo / SUM_BYTES * SUM_BYTES;
    let to = (hi.div_ceil(SUM_BYTES) * SUM_BYTES).min(len);
    Plan { p0, p1, from, to }
}

/// Room before the payload's bytes in a fill's buffer, for the first page's header.
const PAD: usize = PAGE;
/// A fill's buffer: the pad, and the pieces that cover its run of pages (one more than
/// the run when the payload does not start on a page).
const FILL_BYTES: usize = PAD + (RUN_PAGES + 1) * PAGE;

fn fill(obj: &PagedObject, page: usize) {
    let pages = obj.len / PAGE;
    let p = plan(page, pages, obj.header, obj.src.len);
    let mut buf = [0u8; FILL_BYTES];
    let found = if obj.is_damaged() {
        // Damaged already: nothing more of it is read, its pages come back zero.
        Err(())
    } else {
        read_checked(obj, &p, &mut buf[PAD..PAD + (p.to - p.from)])
    };
    if found.is_err() {
        // The touch must complete: zero pages, and the access asks before it uses them.
        buf.fill(0);
    }
    // The object's byte x is the payload's x - header, at PAD + x - header - from.
    let start = PAD + p.p0 * PAGE - obj.header - p.from;
    let image = &buf[start..start + (p.p1 - p.p0) * PAGE];
    let Some(uffd) = uffd::get(resolve) else {
        fatal(obj, format_args!("its userfaultfd is gone"));
    };
    if let Err(e) = uffd.copy(obj.addr + p.p0 * PAGE, image) {
        fatal(obj, format_args!("cannot place its pages: {e}"));
    }
    if found.is_err() {
        return;
    }
    obj.counters
        .bytes_read
        .fetch_add((p.to - p.from) as u64, Ordering::Relaxed);
    let sequential = obj.next_page.swap(p.p1, Ordering::Relaxed) == p.p0;
    if sequential {
        read_ahead(obj, p.to as u64);
    }
}

/// Reads the pieces of plan `p` into `data` and checks each against its checksum; on a
/// failure records the damage (the object's record, then the stub's DAMAGED bit, both
/// before any page is placed) and returns `Err`.
fn read_checked(obj: &PagedObject, p: &Plan, data: &mut [u8]) -> Result<(), ()> {
    if let Err(e) = obj
        .src
        .file
        .read_exact_at(data, obj.src.payload_at + p.from as u64)
    {
        let errno = e.raw_os_error().unwrap_or(0) as u32;
        obj.record_damage(DAMAGE_READ, (p.from / SUM_BYTES) as u32, errno);
        return Err(());
    }
    for (i, piece) in data.chunks(SUM_BYTES).enumerate() {
        let n = p.from / SUM_BYTES + i;
        let computed = crc32(piece);
        if obj.src.sums.get(n) != Some(&computed) {
            obj.record_damage(DAMAGE_SUM, n as u32, computed);
            return Err(());
        }
    }
    Ok(())
}

impl PagedObject {
    fn is_damaged(&self) -> bool {
        self.damage.kind.load(Ordering::Acquire) != 0
    }

    /// Records the first damage found (async-signal-safe: atomics only).
    fn record_damage(&self, kind: u32, piece: u32, value: u32) {
        let d = &self.damage;
        if d.kind
            .compare_exchange(0, u32::MAX, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            d.piece.store(piece, Ordering::Relaxed);
            d.value.store(value, Ordering::Relaxed);
            d.kind.store(kind, Ordering::Release);
        }
        self.stub.bits.set_damaged();
        marvin_runtime::note_damage_on_this_thread();
    }

    /// The error text of the damage found, if any (not from a signal handler).
    fn damage_report(&self) -> Option<String> {
        let d = &self.damage;
        let kind = d.kind.load(Ordering::Acquire);
        let (piece, value) = (
            d.piece.load(Ordering::Relaxed) as usize,
            d.value.load(Ordering::Relaxed),
        );
        let why = match kind {
            0 => return None,
            DAMAGE_SUM => {
                let end = ((piece + 1) * SUM_BYTES).min(self.src.len);
                format!(
                    "bytes {}..{end} of its checkpoint fail their checksum (computed {value:#010x})",
                    piece * SUM_BYTES
                )
            }
            DAMAGE_READ => format!(
                "cannot read its pages back: {}",
                std::io::Error::from_raw_os_error(value as i32)
            ),
            // Being recorded by another thread's fill right now.
            _ => "a piece of its checkpoint failed its check".to_string(),
        };
        Some(format!(
            "swap file {}: checkpoint of object {key} in {} (a page at a time): {why}",
            self.src.path.display(),
            self.src.slot,
            key = self.src.key,
        ))
    }
}

/// A run of fills in address order reached payload byte `at`: keeps the kernel reading
/// [`SEQUENTIAL_AHEAD_BYTES`] of the checkpoint ahead of it.
fn read_ahead(obj: &PagedObject, at: u64) {
    let len = obj.src.len as u64;
    let want = (at + SEQUENTIAL_AHEAD_BYTES).min(len);
    let from = obj.advised_to.load(Ordering::Relaxed).max(at);
    if want <= from || (want - from < SEQUENTIAL_AHEAD_BYTES / 2 && want < len) {
        return;
    }
    obj.advised_to.store(want, Ordering::Relaxed);
    // Only a speed-up: a page not read ahead is read by its own fill.
    let _ = marvin_runtime::memfd::will_need(&obj.src.file, obj.src.payload_at + from, want - from);
}

/// A touch of the object cannot be answered, not even with zero pages: says why on
/// stderr and ends the process (the touch would otherwise run again, and again).
fn fatal(obj: &PagedObject, why: std::fmt::Arguments<'_>) -> ! {
    let mut msg = [0u8; 512];
    let mut w = std::io::Cursor::new(&mut msg[..]);
    let _ = writeln!(
        w,
        "error: cannot fault in object {key}: swap file {}: checkpoint of object {key} in {} \
         (a page at a time): {why}",
        obj.src.path.display(),
        obj.src.slot,
        key = obj.src.key,
    );
    let n = w.position() as usize;
    // A runtime error's status (the spec's 70), as a fault that fails its checks ends a run.
    uffd::die(&msg[..n], RUNTIME_ERROR_STATUS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fill_reads_whole_pieces_that_cover_its_pages() {
        // Header 16, payload 1 MiB: 257 pages.
        let (h, len): (usize, usize) = (16, 1 << 20);
        let pages = (h + len).div_ceil(PAGE);
        assert_eq!(
            plan(0, pages, h, len),
            Plan {
                p0: 0,
                p1: RUN_PAGES,
                from: 0,
                to: RUN_PAGES * PAGE
            }
        );
        // Page 1 starts at payload byte 4080, in piece 0; page 8 ends at 36848, in piece 8.
        assert_eq!(
            plan(1, pages, h, len),
            Plan {
                p0: 1,
                p1: 1 + RUN_PAGES,
                from: 0,
                to: (RUN_PAGES + 1) * PAGE
            }
        );
        // The last page holds the payload's last 16 bytes.
        let last = plan(pages - 1, pages, h, len);
        assert_eq!((last.p0, last.p1), (pages - 1, pages));
        assert_eq!((last.from, last.to), (len - PAGE, len));
        for page in 0..pages {
            let p = plan(page, pages, h, len);
            assert!(p.to - p.from + PAD <= FILL_BYTES);
            // The pages' image lies inside what is read, pad included.
            let start = PAD + p.p0 * PAGE - h - p.from;
            assert!(start + (p.p1 - p.p0) * PAGE <= FILL_BYTES, "page {page}");
        }
    }
}
