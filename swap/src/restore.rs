//! Restore: eagerly, when an app comes back to the foreground, every reclaimed object is
//! read back and given its references from its stub before the app's looper runs
//! again. (On demand, on first access, is the barrier's object fault.)
//!
//! The eager restore reads the swap file front to back in batches of about
//! [`BATCH_BYTES`] of objects: a batch's objects are held as a fault holds its object
//! (entry shared, state locked) and their checkpoints read by vectored reads straight
//! into the objects, each checked as every read is ([`SwapFile::read_many`]: header,
//! key, generation, length, checksum). The reads go through a descriptor of the file
//! that the kernel reads ahead of ([`crate::swap_file::SequentialReader`]; the file's
//! own reads nothing ahead), so the disk has requests in flight while a batch is
//! copied (without one, the kernel is asked to read [`AHEAD_BYTES`] ahead), and what
//! the batches read leaves the page cache behind them ([`ReadWindow`]). The objects'
//! pages are prefaulted in bulk ([`crate::prefault`]), the work shared with a second
//! thread when there is much to restore ([`crate::prefault_claims`]). An object a batch
//! cannot take at once (its state held elsewhere, an entry that failed its checks, no
//! checkpoint) is restored alone afterwards, through the object fault, which reports its
//! error as before.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use marvin_runtime::page_round;
use marvin_runtime::AccessError;
use marvin_runtime::Heap;
use marvin_runtime::{Stub, StubHooks, StubSpace, StubState};

use crate::app_swap::{counting_eager_read_ahead, payload_of, AppSwap};
use crate::prefault;
use crate::prefault_claims::Prefaults;
use crate::read_window::ReadWindow;
use crate::swap_file::layout::SLOT_HEADER_BYTES;
use crate::swap_file::{SequentialReader, SlotId, SlotRead, SwapFile};

/// Bytes of objects one batch reads back: its objects stay locked from their read to
/// their headers' install, and its reads fill about this much of the file.
pub const BATCH_BYTES: usize = 2 << 20;

/// How far ahead of the batch being read the kernel is asked to read the file: several
/// of the disk's largest requests (`max_sectors_kb`, 4 MiB on a virtio disk) in flight.
pub const AHEAD_BYTES: u64 = 16 << 20;

/// The fewest bytes one more advice asks for, once the batch itself is asked for.
const AHEAD_STEP: u64 = 4 << 20;

/// Checkpoints further apart in the file than this go to separate reads, so no read
/// carries more than this of bytes no object wants.
const MAX_GAP: u64 = 64 << 10;

/// Out bytes from which a restore prefaults on a second thread.
pub const PARALLEL_BYTES: usize = 8 << 20;

/// How many batches past the one being read may be reserved and prefaulted.
const LEAD: usize = 8;

/// What one eager restore did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoreReport {
    pub objects: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    /// Objects that could not be read back (each with its error).
    pub errors: Vec<String>,
}

/// Reads back every reclaimed object of `heap`.
pub fn restore_all(heap: &Heap, swap: &AppSwap) -> RestoreReport {
    let t0 = Instant::now();
    let mut r = RestoreReport::default();
    let Some(space) = heap.stub_space() else {
        return r;
    };
    // In the order of their checkpoints in the file (the saver wrote them in address
    // order), so that the batches read the file front to back; stubs without a
    // checkpoint last. Every stub is visited and its entry locked, resident or not: a
    // reclaimer that took an entry before the app came to the foreground may still be
    // dropping its pages.
    let mut stubs: Vec<(u64, Arc<Stub>)> = space
        .all()
        .into_iter()
        .map(|s| {
            let slot = s.state.lock().slot().unwrap_or(u64::MAX);
            (slot, s)
        })
        .collect();
    // By slot alone (each checkpoint has its own), then the stubs without one by
    // address: a key read from the stub itself would be a cache miss per comparison.
    stubs.sort_unstable_by_key(|(slot, _)| *slot);
    let no_checkpoint = stubs.partition_point(|(slot, _)| *slot != u64::MAX);
    stubs[no_checkpoint..].sort_unstable_by_key(|(_, s)| s.addr);
    let (batch, ahead, ahead_bytes) = counting_eager_read_ahead(|| {
        swap.batch(|| {
            let start = stubs.first().map_or(0, |s| s.0);
            let mut window = ReadWindow::new(start, AHEAD_BYTES, AHEAD_STEP);
            let mut alone = Vec::new();
            let reader = swap.file.lock().sequential_reader();
            let batch = Batch { heap, space, swap };
            batch.run(&stubs, reader.as_ref(), &mut window, &mut r, &mut alone);
            {
                let file = swap.file.lock();
                // To the end of the file: the kernel's read-ahead may reach past the
                // last slot, into the room the file has to grow.
                if let Some(left) = window.finish(file.file_bytes()) {
                    file.drop_range(left.start, left.end);
                }
            }
            for stub in alone {
                restore_alone(heap, space, swap, &stub, &mut r);
            }
        })
    });
    r.objects += ahead;
    r.bytes += ahead_bytes;
    if let Err(e) = batch {
        r.errors.push(e.to_string());
    }
    // Eager restores were counted as faults by the stub space; book them here too.
    swap.counters
        .restored_eager_objects
        .fetch_add(r.objects, Ordering::Relaxed);
    swap.counters
        .restored_eager_bytes
        .fetch_add(r.bytes, Ordering::Relaxed);
    r.elapsed = t0.elapsed();
    r
}

/// How many of `stubs` the next batch takes, and the bytes of its objects that are out
/// (as far as a glance without locks tells): at least one, and as many as hold about
/// [`BATCH_BYTES`] of objects that are out.
fn batch_len(space: &StubSpace, stubs: &[(u64, Arc<Stub>)]) -> (usize, usize) {
    let mut bytes = 0;
    for (n, (_, s)) in stubs.iter().enumerate() {
        if bytes >= BATCH_BYTES {
            return (n, bytes);
        }
        if !space.table.entry(s.entry).is_resident() {
            bytes += page_round(s.bytes());
        }
    }
    (stubs.len(), bytes)
}

/// One object of a batch, held as a fault holds its object while its checkpoint is read
/// into its pages.
struct Held<'a> {
    stub: &'a Stub,
    slot: u64,
    _entry: marvin_runtime::SharedGuard<'a>,
    _state: parking_lot::MutexGuard<'a, StubState>,
}

/// What a batch works on.
struct Batch<'a> {
    heap: &'a Heap,
    space: &'a StubSpace,
    swap: &'a AppSwap,
}

impl<'a> Batch<'a> {
    /// Restores every object of `stubs` that is out, batch after batch. With more than
    /// [`PARALLEL_BYTES`] to bring back, a second thread prefaults batches' pages
    /// ([`crate::prefault`]) ahead of this one, which reads them: faulting in fresh pages
    /// (allocating, zeroing and charging each) costs more than reading a warm file into
    /// them, so the two threads share the prefaulting ([`Prefaults`]): each takes the
    /// next batch no one took, and this one, finding its batch taken and not done, takes
    /// one further on instead of waiting. Batches are prefaulted at most [`LEAD`] ahead
    /// of the one being read, and each batch's memory is reserved before anyone
    /// prefaults it.
    fn run(
        &self,
        stubs: &'a [(u64, Arc<Stub>)],
        reader: Option<&SequentialReader>,
        window: &mut ReadWindow,
        r: &mut RestoreReport,
        alone: &mut Vec<Arc<Stub>>,
    ) {
        let mut batches = Vec::new();
        let mut rest = stubs;
        let mut out = 0;
        while !rest.is_empty() {
            let (n, bytes) = batch_len(self.space, rest);
            batches.push((&rest[..n], bytes));
            out += bytes;
            rest = &rest[n..];
        }
        let prefaults = Prefaults::new(batches.len());
        std::thread::scope(|scope| {
            // A thread that cannot be started (no memory for its stack, a thread limit)
            // leaves the prefaulting to this one.
            let helper = (out >= PARALLEL_BYTES)
                .then(|| {
                    std::thread::Builder::new()
                        .name("marvin-prefault".into())
                        .spawn_scoped(scope, || {
                            while let Some(j) = prefaults.claim_or_wait() {
                                self.prefault(batches[j].0);
                                prefaults.done(j);
                            }
                        })
                        .ok()
                })
                .flatten();
            let wake = || {
                if let Some(h) = &helper {
                    h.thread().unpark();
                }
            };
            let mut reserved = std::collections::VecDeque::new();
            for (k, &(batch, _)) in batches.iter().enumerate() {
                // The memory comes first, before any lock is held and before the batch
                // is prefaulted: making room may reclaim.
                while prefaults.reserved() < batches.len() && prefaults.reserved() <= k + LEAD {
                    let bytes = batches[prefaults.reserved()].1;
                    reserved.push_back(
                        (bytes > 0)
                            .then(|| self.heap.before_growth(bytes))
                            .flatten(),
                    );
                    prefaults.reserve_one();
                }
                wake();
                // This batch's pages: prefaulted here if no one took them yet; if the
                // other thread is on them, batches further on are prefaulted meanwhile.
                while !prefaults.is_done(k) {
                    match prefaults.claim() {
                        Some(j) => {
                            self.prefault(batches[j].0);
                            prefaults.done(j);
                        }
                        None => std::thread::yield_now(),
                    }
                }
                self.restore(batch, reader, window, r, alone);
                reserved.pop_front();
            }
            prefaults.stop();
            wake();
        });
    }

    /// Prefaults the pages of the objects of `stubs` that are out, in coalesced runs.
    fn prefault(&self, stubs: &[(u64, Arc<Stub>)]) {
        for (addr, len) in self.out_runs(stubs) {
            // Only a speed-up: pages it did not bring in fault in during the read.
            let _ = prefault::populate_write(addr, len);
        }
    }

    /// The page runs of the objects of `stubs` that are out (as far as a glance without
    /// locks tells), coalesced.
    fn out_runs(&self, stubs: &[(u64, Arc<Stub>)]) -> Vec<(usize, usize)> {
        let runs = stubs
            .iter()
            .filter(|(_, s)| !self.space.table.entry(s.entry).is_resident())
            .map(|(_, s)| (s.addr, page_round(s.bytes())))
            .collect();
        prefault::coalesce(runs)
    }

    /// Restores the objects of `stubs` that are out; those it cannot hold at once go to
    /// `alone`.
    fn restore(
        &self,
        stubs: &'a [(u64, Arc<Stub>)],
        reader: Option<&SequentialReader>,
        window: &mut ReadWindow,
        r: &mut RestoreReport,
        alone: &mut Vec<Arc<Stub>>,
    ) {
        let space = self.space;
        let mut held = self.hold(stubs, alone);
        if held.is_empty() {
            return;
        }
        held.sort_unstable_by_key(|h| h.slot);
        let results = {
            let file = self.swap.file.lock();
            read_held(&file, reader, &held, window)
        };
        let (mut read, mut restored) = (0u64, 0u64);
        for (h, result) in held.iter().zip(results) {
            // Nothing damaged it and no write began meanwhile (the table said "out"
            // under a live object).
            let result = result
                .map_err(|e| {
                    self.swap.record_error(&e);
                    AccessError::Fault {
                        handle: h.stub.handle.value(),
                        reason: e.into(),
                    }
                })
                .and_then(|()| space.check_restored(h.stub));
            match result {
                Ok(()) => {
                    // SAFETY: the checkpoint was just read into the object's pages, with
                    // its entry locked shared and its state locked (held in `h`).
                    unsafe {
                        AppSwap::install_header(h.stub);
                        space.finish_restore(h.stub);
                    }
                    restored += 1;
                    r.bytes += h.stub.bytes() as u64;
                    read += h.stub.kind.payload_bytes(h.stub.len) as u64;
                }
                Err(e) => r.errors.push(e.to_string()),
            }
        }
        r.objects += restored;
        let c = &self.swap.counters;
        c.bytes_read.fetch_add(read, Ordering::Relaxed);
        if space.collecting.load(Ordering::Relaxed) {
            space
                .counters
                .gc_faults
                .fetch_add(restored, Ordering::Relaxed);
        }
    }

    /// Takes every object of `stubs` that is out as a fault would: its entry shared (a
    /// bounded wait, for a reclaimer still dropping its pages) and its state locked. The
    /// batch's first object waits for its state; the others are only tried, since this
    /// thread already holds locks, and go to `alone` when held elsewhere, as do objects
    /// that are dead, have no checkpoint or whose entry failed its checks (their own
    /// restore reports why).
    fn hold(&self, stubs: &'a [(u64, Arc<Stub>)], alone: &mut Vec<Arc<Stub>>) -> Vec<Held<'a>> {
        let mut held: Vec<Held<'a>> = Vec::new();
        for (_, stub) in stubs {
            let entry = self.space.table.entry(stub.entry);
            let Ok(guard) = self.space.lock_entry(stub) else {
                alone.push(stub.clone());
                continue;
            };
            if entry.is_resident() {
                continue;
            }
            if !stub.bits.is_current() || stub.bits.is_damaged() {
                // Its checkpoint is not the object's latest contents (the app's own
                // record says so, whatever the table does): its own restore reports it.
                alone.push(stub.clone());
                continue;
            }
            let state = if held.is_empty() {
                stub.state.lock()
            } else if let Some(state) = stub.state.try_lock() {
                state
            } else {
                alone.push(stub.clone());
                continue;
            };
            match state.slot() {
                Some(slot) if !state.is_dead() && !entry.is_resident() => {
                    // A page-at-a-time restore of an earlier life ends before the batch
                    // reads into its pages ([`crate::page_restore`]).
                    crate::page_restore::cancel(stub.addr);
                    held.push(Held {
                        stub,
                        slot,
                        _entry: guard,
                        _state: state,
                    })
                }
                _ if entry.is_resident() => {}
                _ => alone.push(stub.clone()),
            }
        }
        held
    }
}

/// Reads the checkpoints of `held` (sorted by slot) into their objects' payloads, one
/// [`SwapFile::read_many`] per run of checkpoints at most [`MAX_GAP`] apart, asking the
/// kernel to read ahead and dropping what was read behind as `window` says. One result
/// per object, in `held`'s order.
fn read_held(
    file: &SwapFile,
    reader: Option<&SequentialReader>,
    held: &[Held<'_>],
    window: &mut ReadWindow,
) -> Vec<Result<(), crate::swap_file::SwapError>> {
    let end_of =
        |h: &Held<'_>| h.slot + SLOT_HEADER_BYTES + h.stub.kind.payload_bytes(h.stub.len) as u64;
    let (from, to) = (held[0].slot, held.iter().map(end_of).max().unwrap_or(0));
    // Through the sequential reader the kernel reads ahead by itself; without one, it is
    // asked to.
    if let (None, Some(ask)) = (reader, window.before(from, to)) {
        file.prefetch(ask.start, ask.end);
    }
    let mut results = Vec::with_capacity(held.len());
    let mut start = 0;
    while start < held.len() {
        let mut end = start + 1;
        let mut run_end = end_of(&held[start]);
        while end < held.len() && held[end].slot <= run_end + MAX_GAP {
            run_end = run_end.max(end_of(&held[end]));
            end += 1;
        }
        let mut reads: Vec<SlotRead<'_>> = held[start..end]
            .iter()
            .map(|h| SlotRead {
                slot: SlotId::from_offset(h.slot),
                key: h.stub.handle.value(),
                // SAFETY: the object is out, its entry locked shared and its state
                // locked (held in `h` until its result is used); each object's payload
                // is borrowed by this one read only.
                out: unsafe { payload_of(h.stub) },
            })
            .collect();
        results.extend(match reader {
            Some(reader) => file.read_many_sequential(reader, &mut reads),
            None => file.read_many(&mut reads),
        });
        start = end;
    }
    if let Some(done) = window.after(to) {
        file.drop_range(done.start, done.end);
    }
    results
}

/// Restores one object through the object fault, as the restore did before batches (a
/// fault's read-ahead brings its neighbours that are out along).
fn restore_alone(
    heap: &Heap,
    space: &StubSpace,
    swap: &AppSwap,
    stub: &Stub,
    r: &mut RestoreReport,
) {
    let _growth = (!space.table.entry(stub.entry).is_resident())
        .then(|| heap.before_growth(swap.fault_bytes(stub)))
        .flatten();
    match space.restore(stub) {
        Ok(true) => {
            r.objects += 1;
            r.bytes += stub.bytes() as u64;
        }
        Ok(false) => {}
        Err(e) => r.errors.push(e.to_string()),
    }
}
