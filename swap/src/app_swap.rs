//! One app's swap state: its swap file, its policy and its counters, and the
//! [`StubHooks`] the runtime calls to fault objects in and to free their slots.

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use marvin_runtime::page_round;
use marvin_runtime::Obj;
use marvin_runtime::SwapFolder;
use marvin_runtime::{FaultError, Stub, StubHooks, StubSpace, StubState};
use marvin_runtime::{Handle, Heap, LargeBacking};
use marvin_runtime::{HeaderBits, ObjHeader, ObjKind, HEADER_BYTES};
use marvin_runtime::{ReclaimTable, ReclaimTableError};
use parking_lot::Mutex;

use crate::policy::SwapPolicy;
use crate::read_window::FaultRun;
use crate::swap_dir::{SwapDirError, SwapDirLock};
use crate::swap_file::{SequentialReader, SlotId, SlotRead, SwapError, SwapFile};

/// Counters of one app's swap activity.
#[derive(Debug, Default)]
pub struct SwapCounters {
    pub saved_objects: AtomicU64,
    pub saved_bytes: AtomicU64,
    /// Saves abandoned because a write raced the copy.
    pub save_races: AtomicU64,
    pub save_errors: AtomicU64,
    pub reclaimed_objects: AtomicU64,
    pub reclaimed_bytes: AtomicU64,
    pub restored_eager_objects: AtomicU64,
    pub restored_eager_bytes: AtomicU64,
    /// Objects (and their bytes) read back along with a faulting neighbour (not during
    /// an eager restore, which counts them as restored eagerly).
    pub read_ahead_objects: AtomicU64,
    pub read_ahead_bytes: AtomicU64,
    pub bytes_written: AtomicU64,
    pub bytes_read: AtomicU64,
    /// Bytes of the swap file launches asked the kernel to read ahead of their faults
    /// ([`AppSwap::begin_launch_prefetch`]).
    pub prefetched_bytes: AtomicU64,
    pub compactions: AtomicU64,
    /// Objects whose fault brought back only their first pages, the others coming back
    /// on first touch ([`crate::page_restore`]).
    pub paged_objects: AtomicU64,
    /// Times a saver run wrote its checkpoints back to the disk and dropped them from the
    /// page cache before going on ([`crate::swap_file::WRITE_BACK_EVERY`]).
    pub write_backs: AtomicU64,
}

impl SwapCounters {
    /// Books objects whose pages were returned to the OS (a reclaim or a page-out).
    pub fn book_reclaim(&self, objects: u64, bytes: u64) {
        self.reclaimed_objects.fetch_add(objects, Ordering::Relaxed);
        self.reclaimed_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// The swap side of one app.
pub struct AppSwap {
    pub policy: Arc<dyn SwapPolicy>,
    pub file: Mutex<SwapFile>,
    pub counters: Arc<SwapCounters>,
    /// The last swap error, for reports.
    pub last_error: Mutex<Option<String>>,
    /// Marvin's bookmarking collector, or the page-swap baseline.
    bookmarking: bool,
    /// An eager restore is reading many checkpoints: the file is checked once, up front,
    /// instead of per fault ([`AppSwap::batch`]).
    batch: std::sync::atomic::AtomicBool,
    /// The swap file's index size when last seen ([`StubHooks::held_bytes`]).
    index_bytes: std::sync::atomic::AtomicUsize,
    /// The run's hold on the swap directory, for as long as the app swaps there.
    dir_lock: Arc<SwapDirLock>,
    /// A full disk was reported on stderr (it is, once per app).
    warned_full: std::sync::atomic::AtomicBool,
    /// The prefetch of the launch under way, if any.
    prefetch: Mutex<LaunchPrefetch>,
    /// Faults in a row through the file, outside launches: the kernel reads ahead of
    /// them ([`FaultRun`]).
    fault_run: Mutex<FaultRun>,
    /// The descriptor a run of faults reads through (opened at the first run).
    run_reader: Mutex<Option<SequentialReader>>,
    /// The heap's large objects live in memory files ([`LargeBacking::Memfd`]).
    memfd: bool,
}

/// A launch's prefetch: from the foreground transition until its frame, each fault
/// starts reading the swap file after its own read-ahead window, ahead of it, so the
/// faults that follow (a frame walking its state, which the saver wrote in address order)
/// find their checkpoints cached or on their way, instead of each waiting for the disk in
/// turn. How far ahead grows as the kernel's read-ahead window does: from
/// [`PREFETCH_AHEAD_BYTES`], doubled by each fault that lands in what was asked for, up to
/// [`PREFETCH_AHEAD_MAX_BYTES`]. The policy's [`SwapPolicy::launch_prefetch_bytes`] bounds
/// what is asked for and not yet used by a fault: the bytes a fault reads out of the
/// asked range are given back to the budget, so a frame that walks its state in file
/// order is read ahead all the way, whatever its size, while a launch whose faults do not
/// follow the prefetch wastes at most the budget.
#[derive(Debug, Default)]
struct LaunchPrefetch {
    /// A launch is under way.
    active: bool,
    /// Bytes it may still ask for ahead of what its faults used.
    left: u64,
    /// The range asked for last, `[from, to)`: a fault inside it (or at its start)
    /// extends it; a fault elsewhere starts a new one.
    from: u64,
    to: u64,
    /// How far into `[from, to)` faults have read: what they used of it.
    used: u64,
    /// How far ahead of a fault the range is kept.
    ahead: u64,
    /// Anything was asked for since the last drop.
    asked: bool,
}

/// How far ahead of a launch's first fault its prefetch reads: 512 KiB (four read-ahead
/// windows in flight at once). A default-workload frame faults about 1.2 MiB in 9-11
/// faults; 1 MiB ahead had launches ask for 2.9 MiB each (median), 512 KiB for less.
pub const PREFETCH_AHEAD_BYTES: u64 = 512 << 10;

/// The farthest a launch's prefetch reads ahead of a fault once its faults follow it:
/// 4 MiB, half a virtio disk's `read_ahead_kb`, enough to keep the disk busy while a
/// frame of the published scale (10 MiB of checkpoints) restores what already came.
pub const PREFETCH_AHEAD_MAX_BYTES: u64 = 4 << 20;

/// How far past a run of faults the kernel may have read ahead, dropped when the run
/// ends: twice a virtio disk's `read_ahead_kb` (8 MiB), as far as it reads ahead of a
/// descriptor advised `POSIX_FADV_SEQUENTIAL`.
pub const FAULT_RUN_MAX_AHEAD: u64 = 16 << 20;

/// Why an app's swap side could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error("cannot create {}: {source}", dir.display())]
    Dir {
        dir: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Locked(#[from] SwapDirError),
    #[error(transparent)]
    File(#[from] SwapError),
    #[error(transparent)]
    Table(#[from] ReclaimTableError),
    #[error(transparent)]
    Regions(#[from] marvin_runtime::RegionDirError),
    #[error("stubs are already enabled")]
    StubsEnabled,
}

/// Whether `e` says the file system holding the swap file is full.
fn is_disk_full(e: &SwapError) -> bool {
    match e {
        SwapError::DiskFull { .. } => true,
        SwapError::Io { source, .. } => source.raw_os_error() == Some(libc::ENOSPC),
        _ => false,
    }
}

/// The app's reclaim table in `dir`, its blocks allocated up front. On a full disk the
/// app carries on with a process-private table instead, as with any full disk: a warning
/// naming the directory (the app's one, hence `true`), and its objects stay in memory,
/// since no other process can reach a table that is not in a file.
fn table_or_full(
    folder: &SwapFolder,
    name: &str,
    capacity: u32,
) -> Result<(ReclaimTable, bool), ReclaimTableError> {
    let dir = folder.path();
    match ReclaimTable::create_in(folder, &crate::external::table_name(name), capacity) {
        Ok(table) => Ok((table, false)),
        Err(e) if e.is_disk_full() => {
            // A stderr that cannot be written loses the warning, nothing else.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "warning: swap directory {} is full: the reclaim table stays in this process, out of the System's reach ({e})",
                dir.display()
            );
            Ok((ReclaimTable::anonymous(capacity)?, true))
        }
        Err(e) => Err(e),
    }
}

/// A stubbed object that is out has no checkpoint to read back (a bug in the swap
/// layer: an object is reclaimed only once saved).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("object {0} has no checkpoint")]
pub struct NoCheckpoint(pub u64);

impl AppSwap {
    /// Takes `dir` for this run ([`SwapDirLock`]: a directory another run holds is
    /// refused before anything in it is touched), creates the app's swap file and reclaim
    /// table there and enables stubs on
    /// `heap`. A heap whose large objects live in memory files also publishes its region
    /// directory there, so a reclaimer in another process can reach them
    /// ([`crate::external`]).
    pub fn attach(
        heap: &Heap,
        dir: &Path,
        name: &str,
        policy: Arc<dyn SwapPolicy>,
        table_capacity: u32,
        bookmarking: bool,
    ) -> Result<Arc<AppSwap>, AttachError> {
        // A folder made here is the run's alone (a folder others may write in is refused).
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| AttachError::Dir {
                dir: dir.to_path_buf(),
                source,
            })?;
        let dir_lock = SwapDirLock::acquire(dir)?;
        let folder = dir_lock.folder();
        let file = SwapFile::create_in(folder, name, None)?;
        let (table, warned_full) = table_or_full(folder, name, table_capacity)?;
        if heap.large_space().backing() == LargeBacking::Memfd {
            heap.large_space()
                .publish_regions(folder.clone(), &crate::external::regions_name(name))?;
        }
        let swap = Arc::new(AppSwap {
            policy,
            file: Mutex::new(file),
            counters: Arc::default(),
            last_error: Mutex::new(None),
            bookmarking,
            batch: std::sync::atomic::AtomicBool::new(false),
            index_bytes: std::sync::atomic::AtomicUsize::new(0),
            dir_lock,
            warned_full: std::sync::atomic::AtomicBool::new(warned_full),
            prefetch: Mutex::new(LaunchPrefetch::default()),
            fault_run: Mutex::new(FaultRun::new(FAULT_RUN_MAX_AHEAD)),
            run_reader: Mutex::new(None),
            memfd: heap.large_space().backing() == LargeBacking::Memfd,
        });
        heap.enable_stubs(StubSpace::new(table, swap.clone(), bookmarking))
            .map_err(|_| AttachError::StubsEnabled)?;
        Ok(swap)
    }

    /// Runs `f` (many faults in a row, an eager restore) with the swap file checked once
    /// up front instead of per fault.
    pub fn batch<R>(&self, f: impl FnOnce() -> R) -> Result<R, SwapError> {
        self.file
            .lock()
            .check()
            .inspect_err(|e| self.record_error(e))?;
        self.batch.store(true, Ordering::Relaxed);
        let r = f();
        self.batch.store(false, Ordering::Relaxed);
        Ok(r)
    }

    /// A launch begins (its foreground transition): until
    /// [`end_launch_prefetch`](AppSwap::end_launch_prefetch), faults read the swap file
    /// ahead of themselves, up to the policy's [`SwapPolicy::launch_prefetch_bytes`] in
    /// all (nothing when that is 0, or for the page-swap baseline, which models the
    /// kernel's swap-in and its cluster alone).
    pub fn begin_launch_prefetch(&self) {
        let budget = self.policy.launch_prefetch_bytes();
        let mut p = self.prefetch.lock();
        p.active = self.bookmarking && budget > 0;
        p.left = budget;
        p.from = 0;
        p.to = 0;
        p.used = 0;
        p.ahead = PREFETCH_AHEAD_BYTES;
    }

    /// The launch's frame came (or none will): faults no longer read ahead of
    /// themselves. (Cheap: the looper calls it at the frame; the heap task then drops
    /// what the prefetch left in the page cache, [`AppSwap::drop_launch_prefetch`].)
    pub fn end_launch_prefetch(&self) {
        self.prefetch.lock().active = false;
    }

    /// Once a launch's prefetch has ended: drops the swap file's clean pages from the
    /// page cache, what the prefetch brought and no fault read among them, if the launch
    /// asked for any. Returns whether it did.
    pub fn drop_launch_prefetch(&self) -> bool {
        let asked = {
            let mut p = self.prefetch.lock();
            !p.active && std::mem::take(&mut p.asked)
        };
        if asked {
            self.file.lock().drop_clean();
        }
        asked
    }

    /// During a launch, after a fault read `window` of the file:
    /// keeps the prefetch its ahead distance past it (what is not already asked for),
    /// within the launch's budget; a fault in the asked range gives what it read of it
    /// back to the budget and doubles the ahead distance.
    fn prefetch_after(&self, file: &SwapFile, window: std::ops::Range<u64>) {
        let mut p = self.prefetch.lock();
        if !p.active {
            return;
        }
        let end = window.end;
        // A fault continues the range when its window meets it: inside it, right at its
        // end (its faults caught up with it) or just before it (another fault of the
        // window the range started after).
        let continues = p.to > p.from && window.end >= p.from && window.start <= p.to;
        let from = if continues {
            // What the fault read of the asked range goes back to the budget.
            let upto = end.min(p.to);
            p.left += upto.saturating_sub(p.used);
            p.used = p.used.max(upto);
            p.ahead = (p.ahead * 2).min(PREFETCH_AHEAD_MAX_BYTES);
            p.to.max(end)
        } else {
            p.from = end;
            p.used = end;
            p.ahead = PREFETCH_AHEAD_BYTES;
            end
        };
        let to = (end + p.ahead).min(from + p.left);
        if to <= from {
            return;
        }
        let asked = file.prefetch(from, to);
        // The budget counts what was meant, so a file ending early does not let the
        // launch ask again and again.
        p.left -= to - from;
        p.to = to;
        if asked > 0 {
            p.asked = true;
            self.counters
                .prefetched_bytes
                .fetch_add(asked, Ordering::Relaxed);
        }
    }

    /// Whether a fault whose window starts at `from` continues a run of faults through
    /// the file ([`FaultRun`]) that the kernel should read ahead of: not during an
    /// eager restore, which reads ahead of itself, nor during a launch, whose own
    /// prefetch does, nor for the page-swap baseline, which models the kernel's swap-in
    /// and its cluster alone.
    fn in_run(&self, from: u64) -> bool {
        self.bookmarking
            && !self.batch.load(Ordering::Relaxed)
            && !self.prefetch.lock().active
            && self.fault_run.lock().continues(from)
    }

    /// A fault's read of `reads` (its window starting at `from`): through the
    /// descriptor the kernel reads ahead of when the fault continues a run, else
    /// through the file's own, which reads nothing ahead.
    fn read_in_run(
        &self,
        file: &SwapFile,
        from: u64,
        reads: &mut [SlotRead<'_>],
    ) -> Vec<Result<(), SwapError>> {
        if self.in_run(from) {
            let mut reader = self.run_reader.lock();
            if reader.is_none() {
                *reader = file.sequential_reader();
            }
            if let Some(reader) = reader.as_ref() {
                return file.read_many_sequential(reader, reads);
            }
        }
        file.read_many(reads)
    }

    /// After a fault (not one of an eager restore's) read the window `window` of the
    /// file: drops what the run of faults it belongs to left in the page cache
    /// ([`FaultRun`]). During a launch its own prefetch reads ahead instead, and the
    /// run ends.
    fn follow_run(&self, file: &SwapFile, window: std::ops::Range<u64>) {
        if !self.bookmarking || self.batch.load(Ordering::Relaxed) {
            return;
        }
        let launch = self.prefetch.lock().active;
        let drops = {
            let mut run = self.fault_run.lock();
            if launch {
                run.end().into_iter().collect()
            } else {
                run.fault(window.start, window.end)
            }
        };
        for d in drops {
            file.drop_range(d.start, d.end);
        }
    }

    pub(crate) fn record_error(&self, e: &SwapError) {
        self.record(e, "objects stay in memory unsaved");
    }

    /// [`AppSwap::record_error`] for a failed compaction, which leaves the swap file as it
    /// was: every checkpoint stays saved and readable, and only the dead space stays.
    pub(crate) fn record_compaction_error(&self, e: &SwapError) {
        self.record(
            e,
            "the swap file is not compacted; its checkpoints stay saved in it as they were, \
             and its dead space is reused by later saves",
        );
    }

    /// Keeps `e` as the last swap error; the first full disk of each app is a warning that
    /// says `what` it means for the app's objects.
    fn record(&self, e: &SwapError, what: &str) {
        *self.last_error.lock() = Some(e.to_string());
        if is_disk_full(e) && !self.warned_full.swap(true, Ordering::Relaxed) {
            // Once per app, and the app carries on. A stderr that cannot be written loses
            // the warning, nothing else.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "warning: swap directory {} is full: {what} ({e})",
                self.dir_lock.dir().display()
            );
        }
    }

    /// Whether the swap directory ran out of room at least once (reported on stderr).
    pub fn disk_was_full(&self) -> bool {
        self.warned_full.load(Ordering::Relaxed)
    }

    /// Writes `obj`'s payload as `stub`'s checkpoint (over its old slot when it has one,
    /// through `buf`) and records the slot in `st`. On error `st` keeps its old slot.
    pub(crate) fn write_checkpoint(
        &self,
        stub: &Stub,
        st: &mut StubState,
        obj: Obj<'_>,
        buf: &mut Vec<u8>,
    ) -> Result<(), SwapError> {
        buf.clear();
        obj.copy_payload(buf);
        let slot = self.file.lock().write_with(
            stub.handle.value(),
            buf,
            st.slot().map(SlotId::from_offset),
            self.policy.compression(),
        )?;
        st.set_slot(Some(slot.offset()));
        Ok(())
    }
}

impl AppSwap {
    /// Whether a fault of `stub` restores it a page run at a time ([`crate::page_restore`]):
    /// Marvin's object fault (not an eager restore's, not a collection's) of an object of
    /// at least the policy's [`SwapPolicy::page_restore_min_bytes`] with no references.
    fn restores_by_page(&self, space: &StubSpace, stub: &Stub) -> bool {
        let min = self.policy.page_restore_min_bytes();
        self.bookmarking
            && min > 0
            && stub.nrefs == 0
            && stub.kind.payload_bytes(stub.len) >= min
            && !self.batch.load(Ordering::Relaxed)
            && !space.collecting.load(Ordering::Relaxed)
    }

    /// The aligned window of the file a fault reads around: Marvin's
    /// [`READ_AHEAD_BYTES`], or the page-swap baseline's cluster
    /// ([`PAGE_CLUSTER_BYTES`]).
    fn read_ahead_window(&self) -> u64 {
        if self.bookmarking {
            READ_AHEAD_BYTES
        } else {
            PAGE_CLUSTER_BYTES
        }
    }

    /// The aligned read-ahead window of the file around `slot`'s checkpoint.
    fn read_ahead_range(&self, slot: SlotId) -> std::ops::Range<u64> {
        let window = self.read_ahead_window();
        let from = slot.offset() / window * window;
        from..from + window
    }

    /// The most bytes of neighbours one fault of `own` bytes brings along: Marvin's
    /// [`READ_AHEAD_BYTES`]; the page-swap baseline's cluster less the faulting run, as
    /// the kernel reads `2^page-cluster` pages, the faulting one among them.
    fn read_ahead_budget(&self, own: usize) -> usize {
        if self.bookmarking {
            READ_AHEAD_BYTES as usize
        } else {
            (PAGE_CLUSTER_BYTES as usize).saturating_sub(own)
        }
    }

    /// The stubs of `space` whose checkpoints start within the aligned read-ahead
    /// window of the file around `slot`, other than `slot`'s own, in file order: the
    /// candidates to read along with a fault.
    fn read_ahead_candidates(
        &self,
        file: &SwapFile,
        space: &StubSpace,
        slot: SlotId,
    ) -> Vec<(Arc<Stub>, SlotId)> {
        if self.bookmarking && space.collecting.load(Ordering::Relaxed) {
            // Marvin's collection never brings an object in, read ahead or not. (The
            // page-swap baseline's collector faults like any access, cluster and all.)
            return Vec::new();
        }
        let window = self.read_ahead_range(slot);
        let slots = file
            .live_slots_in(window.start, window.end)
            .filter(|&(s, _)| s != slot)
            .filter_map(|(s, key)| Some((Handle::from_value(key)?, s)));
        space.get_many(slots)
    }

    /// Puts a rebuilt header in front of a payload just read back into `stub`'s pages.
    ///
    /// # Safety
    /// The payload must have just been read into the object's pages, with its entry
    /// locked shared and its state locked.
    pub(crate) unsafe fn install_header(stub: &Stub) {
        let header = ObjHeader::new(stub.kind, stub.class, stub.len, stub.nrefs);
        // SAFETY: the caller holds the object's locks; its pages are its own page-aligned
        // allocation of `stub.bytes()` bytes, the header goes in front of the payload.
        unsafe { std::ptr::write(stub.addr as *mut ObjHeader, header) };
        // SAFETY: just written.
        let obj = unsafe { stub.object() };
        // It comes back as its checkpoint: saved and clean.
        obj.header().set(HeaderBits::STUB | HeaderBits::SAVED);
    }
}

/// The payload bytes of `stub`'s object in its own pages, for a read to fill.
///
/// # Safety
/// The object must be out (its pages hold nothing of it), with its entry locked shared
/// (no reclaimer) and its state locked (no saver, no other fault), and no other slice
/// of its pages may be alive while the returned one is; the caller holds those locks
/// for as long as it uses the slice.
pub(crate) unsafe fn payload_of<'a>(stub: &Stub) -> &'a mut [u8] {
    let len = stub.kind.payload_bytes(stub.len);
    // SAFETY: the object's page-aligned allocation holds `stub.bytes()` bytes, header and
    // payload, and lives as long as its stub; the caller guarantees nothing else
    // touches it meanwhile.
    unsafe { std::slice::from_raw_parts_mut((stub.addr + HEADER_BYTES) as *mut u8, len) }
}

thread_local! {
    /// Objects and bytes this thread's faults read ahead during an eager restore, which
    /// books them as restored eagerly ([`counting_eager_read_ahead`]).
    static EAGER_READ_AHEAD: std::cell::Cell<Option<(u64, u64)>> =
        const { std::cell::Cell::new(None) };
}

/// Runs `f` (an eager restore) on this thread; returns its result and the objects and
/// bytes the faults it made read ahead, which are then not counted as read-ahead.
pub(crate) fn counting_eager_read_ahead<R>(f: impl FnOnce() -> R) -> (R, u64, u64) {
    let outer = EAGER_READ_AHEAD.with(|c| c.replace(Some((0, 0))));
    let r = f();
    let (objects, bytes) = EAGER_READ_AHEAD
        .with(|c| c.replace(outer))
        .unwrap_or((0, 0));
    (r, objects, bytes)
}

/// Bytes of the swap file read around a faulting checkpoint: the other objects whose
/// checkpoints start in the same aligned window and are out come back in the same read
/// (up to this many bytes of them), as a kernel's swap-in reads a cluster.
pub const READ_AHEAD_BYTES: u64 = 128 * 1024;

/// The page-swap baseline's swap read-ahead: the aligned cluster of 8 pages of the swap
/// file around a faulting slot (Linux's `vm.page-cluster` = 3), the faulting run
/// included. A slot carries a 48-byte header, so a cluster holds 7 or 8 one-page runs.
pub const PAGE_CLUSTER_BYTES: u64 = 8 * 4096;

impl StubHooks for AppSwap {
    fn fault_in(
        &self,
        space: &StubSpace,
        stub: &Stub,
        state: &mut StubState,
    ) -> Result<(), FaultError> {
        let Some(slot) = state.slot() else {
            return Err(NoCheckpoint(stub.handle.value()).into());
        };
        let slot = SlotId::from_offset(slot);
        // A page-at-a-time restore of an earlier life ends before anything is read into
        // the object's pages.
        crate::page_restore::cancel(stub.addr);
        let file = self.file.lock();
        if !self.batch.load(Ordering::Relaxed) {
            file.check().inspect_err(|e| self.record_error(e))?;
        }
        if self.restores_by_page(space, stub) {
            let src = file
                .page_source(slot, stub.handle.value(), stub.kind.payload_bytes(stub.len))
                .inspect_err(|e| self.record_error(e))?;
            // The stub itself goes along, for a fill that finds a damaged piece to mark.
            if let (Some(src), Some(owner)) = (src, space.get(stub.handle)) {
                let (addr, len) = (stub.addr, page_round(stub.bytes()));
                let counters = self.counters.clone();
                let target = crate::page_restore::Target {
                    addr,
                    len,
                    header: HEADER_BYTES,
                    stub: owner,
                };
                if crate::page_restore::begin(target, src, counters, self.memfd) {
                    drop(file);
                    // SAFETY: the object's locks are held by our caller; its pages come
                    // back on first touch, the header's first.
                    unsafe { Self::install_header(stub) };
                    self.counters.paged_objects.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
            }
        }
        // Neighbours that are out, each held as a fault holds its object: entry shared,
        // state locked, both taken without waiting (this thread already holds locks a
        // reclaimer, a saver or a compaction may be waiting for), skipped on contention.
        let candidates = self.read_ahead_candidates(&file, space, slot);
        let mut held = Vec::new();
        let mut budget = self.read_ahead_budget(page_round(stub.bytes()));
        for (n, s) in &candidates {
            let entry = space.table.entry(n.entry);
            let size = page_round(n.bytes());
            // Only a neighbour whose checkpoint is its latest contents by the app's own
            // record (whatever the table says); any other one's own fault reports it.
            if size > budget || entry.is_resident() || !n.bits.is_current() || n.bits.is_damaged() {
                continue;
            }
            let Some(guard) = entry.try_lock_shared() else {
                continue;
            };
            let Some(st) = n.state.try_lock() else {
                continue;
            };
            if entry.is_resident() || st.is_dead() || st.slot() != Some(s.offset()) {
                continue;
            }
            crate::page_restore::cancel(n.addr);
            budget -= size;
            held.push((&**n, *s, guard, st));
        }
        // The pages the read fills, faulted in with one advice instead of one page fault
        // each inside the read's copy (room for them was reserved before the fault).
        let runs = std::iter::once(stub)
            .chain(held.iter().map(|(n, _, _, _)| *n))
            .map(|s| (s.addr, page_round(s.bytes())))
            .collect();
        for (addr, len) in crate::prefault::coalesce(runs) {
            // Only a speed-up: pages it did not bring in fault in during the read.
            let _ = crate::prefault::populate_write(addr, len);
        }
        let mut reads = Vec::with_capacity(held.len() + 1);
        // SAFETY: the faulting object is out, its entry locked shared and its state
        // locked by our caller; the checkpoint is read straight into its payload.
        let out = unsafe { payload_of(stub) };
        reads.push(SlotRead {
            slot,
            key: stub.handle.value(),
            out,
        });
        for (n, s, _, _) in &held {
            // SAFETY: out, entry locked shared and state locked just above.
            let out = unsafe { payload_of(n) };
            reads.push(SlotRead {
                slot: *s,
                key: n.handle.value(),
                out,
            });
        }
        let window = self.read_ahead_range(slot);
        let mut results = self
            .read_in_run(&file, window.start, &mut reads)
            .into_iter();
        drop(reads);
        self.prefetch_after(&file, window.clone());
        self.follow_run(&file, window);
        drop(file);
        if let Some(Err(e)) = results.next() {
            self.record_error(&e);
            return Err(e.into());
        }
        // SAFETY: the payload is in place, the object's locks are held by our caller.
        unsafe { Self::install_header(stub) };
        let mut read = stub.kind.payload_bytes(stub.len) as u64;
        let (mut ahead, mut ahead_bytes) = (0, 0);
        for ((n, _, _guard, _st), result) in held.iter().zip(results) {
            // A neighbour that failed stays out; its own fault reports the error.
            if result.is_ok() && space.check_restored(n).is_ok() {
                // SAFETY: its payload was just read back, its locks are held here.
                unsafe {
                    Self::install_header(n);
                    space.finish_restore(n);
                }
                read += n.kind.payload_bytes(n.len) as u64;
                ahead += 1;
                ahead_bytes += n.bytes() as u64;
            }
        }
        drop(held);
        let c = &self.counters;
        c.bytes_read.fetch_add(read, Ordering::Relaxed);
        let eager = EAGER_READ_AHEAD.with(|cell| {
            cell.get()
                .map(|(o, b)| cell.set(Some((o + ahead, b + ahead_bytes))))
                .is_some()
        });
        if !eager {
            c.read_ahead_objects.fetch_add(ahead, Ordering::Relaxed);
            c.read_ahead_bytes.fetch_add(ahead_bytes, Ordering::Relaxed);
        }
        Ok(())
    }

    fn fault_bytes(&self, stub: &Stub) -> usize {
        let own = page_round(stub.bytes());
        own + self.read_ahead_budget(own)
    }

    fn freed(&self, stub: &Stub, state: &mut StubState) {
        // Before its pages can be handed out again.
        crate::page_restore::cancel(stub.addr);
        crate::page_restore::forget_damage(stub.addr);
        if let Some(slot) = state.take_slot() {
            let _ = self.file.lock().free(SlotId::from_offset(slot));
        }
    }

    fn damage(&self, stub: &Stub) -> Option<FaultError> {
        crate::page_restore::damage(stub.addr).map(Into::into)
    }

    fn held_bytes(&self) -> usize {
        // Asked on allocation paths: never wait for a long hold of the file (a
        // compaction); its last known size is close enough meanwhile.
        match self.file.try_lock() {
            Some(file) => {
                let bytes = file.index_bytes();
                self.index_bytes.store(bytes, Ordering::Relaxed);
                bytes
            }
            None => self.index_bytes.load(Ordering::Relaxed),
        }
    }

    fn is_cold(&self, read_history: u8, write_history: u8) -> bool {
        if self.bookmarking {
            self.policy.is_cold(read_history, write_history)
        } else {
            // A kernel's referenced bit is set by reads as by writes: the page-swap
            // baseline's run is cold only when the policy's window saw neither, which
            // is the policy's test with the two histories either way round.
            self.policy.is_cold(read_history, write_history)
                && self.policy.is_cold(write_history, read_history)
        }
    }

    fn stub_at_allocation(&self, kind: ObjKind, size_bytes: usize) -> bool {
        // Page-granular swapping (no bookmarking) takes every page run; Marvin only the
        // policy's candidates.
        !self.bookmarking || self.policy.is_candidate(kind, size_bytes)
    }
}
