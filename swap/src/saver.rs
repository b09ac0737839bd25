//! The ahead-of-time saver: writes checkpoints of cold stubbed objects to the app's swap
//! file before any memory is needed, so that reclaiming them later is only dropping
//! pages.
//!
//! Protocol per object, under the entry's shared lock (the reclaimer stays out) and the
//! stub's state lock (no fault, no free): clear DIRTY, copy the payload, write the slot
//! (in place when it has one), then look at DIRTY again. A write that raced the copy set
//! it (writers set DIRTY again after writing, still under their shared lock), and the
//! object stays unsaved: never CLEAN with a stale checkpoint. Otherwise the entry
//! becomes SAVED and CLEAN, and DIRTY is checked once more: a write that ended between
//! the check and the publication cleared CLEAN too early, so the saver takes it back.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use marvin_runtime::HeaderBits;
use marvin_runtime::Heap;
use marvin_runtime::{EntryError, EntryFlags};

use crate::app_swap::AppSwap;
use crate::swap_file::{SlotId, SwapError, SwapFile, SyncHandle, WRITE_BACK_EVERY};

/// Objects whose index growth the saver charges at a time.
const CHARGE_EVERY: usize = 256;

/// What one saver run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SaveReport {
    pub saved_objects: u64,
    pub saved_bytes: u64,
    pub raced: u64,
    pub errors: u64,
    /// Candidates left for a later run because the time budget ran out.
    pub left: u64,
    pub elapsed: Duration,
}

/// Saves cold, unsaved-or-dirty stubbed objects of `heap`, for at most `budget` (time
/// spent waiting for the disk not counted).
/// `all` saves every stubbed object whatever its coldness (a lifecycle `save`).
pub fn save(heap: &Heap, swap: &AppSwap, budget: Duration, all: bool) -> SaveReport {
    let t0 = Instant::now();
    let mut r = SaveReport::default();
    let Some(space) = heap.stub_space() else {
        return r;
    };
    let mut buf = Vec::new();
    let mut written_since_release = 0usize;
    // The descriptor the run writes its checkpoints back through, without the file's
    // lock (taken at the first write-back).
    let mut handle: Option<SyncHandle> = None;
    // Time spent waiting for those write-backs: not the run's own work, so not counted
    // against its budget (as the run's final wait for the disk is not), or a slow disk
    // would cut how much a run saves.
    let mut waited = Duration::ZERO;
    // In address order: neighbours in the heap get neighbouring slots in the file, so
    // the read of a fault brings back objects likely to be used next (read-ahead), and
    // an eager restore reads the file front to back.
    let mut stubs = space.all();
    stubs.sort_unstable_by_key(|s| s.addr);
    let mut charged = None;
    for (i, stub) in stubs.iter().enumerate() {
        if t0.elapsed().saturating_sub(waited) > budget {
            r.left = (stubs.len() - i) as u64;
            break;
        }
        if i % CHARGE_EVERY == 0 {
            // The swap file's index grows with each checkpoint: its growth for the next
            // objects is charged to the app first, with no lock held.
            drop(charged.take());
            let next = &stubs[i..(i + CHARGE_EVERY).min(stubs.len())];
            let buffer = next.iter().map(|s| s.bytes()).max().unwrap_or(0);
            let sums: usize = next
                .iter()
                .map(|s| SwapFile::page_sum_bytes(s.bytes()))
                .sum();
            charged = Some(heap.runtime_growth(
                next.len() * SwapFile::index_bytes_per_checkpoint() + sums + buffer,
            ));
        }
        if written_since_release >= WRITE_BACK_EVERY {
            // Keep the run's checkpoints from sitting dirty in the page cache, which
            // the kernel charges to the app's group and whose reclaim stalls every
            // thread of the group that charges a page meanwhile (the looper drawing a
            // frame among them): written back and dropped now, waiting for the disk
            // here, with no lock of the app's held.
            let w0 = Instant::now();
            write_back(swap, &mut handle);
            waited += w0.elapsed();
            written_since_release = 0;
        }
        let entry = space.table.entry(stub.entry);
        // Checked against the stub: an entry the shared table no longer holds right is
        // an error (the app's own access to the object reports it too), never saved on.
        let _g = match space.lock_entry(stub) {
            Ok(g) => g,
            Err(e) if e.reason == EntryError::Freed => continue,
            Err(e) => {
                *swap.last_error.lock() = Some(e.to_string());
                swap.counters.save_errors.fetch_add(1, Ordering::Relaxed);
                r.errors += 1;
                continue;
            }
        };
        // Whether there is anything to save is the app's own record (the stub's), not
        // the table's CLEAN, which another process may have cleared or set.
        if !entry.is_resident() || stub.bits.is_current() || stub.bits.is_damaged() {
            continue;
        }
        let mut st = stub.state.lock();
        // Checked again under the state lock: another saver run may have saved the
        // object while this one waited for the lock.
        if st.is_dead() || stub.bits.is_current() || stub.bits.is_damaged() {
            continue;
        }
        // SAFETY: resident under the shared lock.
        let obj = unsafe { stub.object() };
        let hdr = obj.header();
        if !hdr.bits().contains(HeaderBits::STUB) {
            // The table says resident, but the pages are gone (they read zero): never
            // saved over the checkpoint; the app's access reports it.
            let e = format!(
                "object {} is not in its pages though its reclaim-table entry says it is \
                 resident: not saved",
                stub.handle.value()
            );
            *swap.last_error.lock() = Some(e);
            swap.counters.save_errors.fetch_add(1, Ordering::Relaxed);
            r.errors += 1;
            continue;
        }
        if !all && !swap.policy.is_cold(hdr.read_history(), hdr.write_history()) {
            continue;
        }
        hdr.clear(HeaderBits::DIRTY);
        let written = swap.write_checkpoint(stub, &mut st, obj, &mut buf);
        written_since_release += buf.len();
        if let Err(e) = written {
            // The object stays resident and unsaved; the app carries on.
            hdr.set(HeaderBits::DIRTY);
            swap.record_error(&e);
            swap.counters.save_errors.fetch_add(1, Ordering::Relaxed);
            r.errors += 1;
            continue;
        }
        swap.counters
            .bytes_written
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
        if stub.bits.is_damaged() {
            // Its copy touched a page that came back damaged (a page at a time): what
            // was written is not the object; the slot is never read back, since a
            // damaged object is never restored.
            *swap.last_error.lock() = Some(space.damage_error(stub).to_string());
            swap.counters.save_errors.fetch_add(1, Ordering::Relaxed);
            r.errors += 1;
            continue;
        }
        if hdr.bits().contains(HeaderBits::DIRTY) {
            r.raced += 1;
            swap.counters.save_races.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let mut flags = EntryFlags::SAVED | EntryFlags::CLEAN;
        if swap.policy.is_cold(hdr.read_history(), hdr.write_history()) {
            flags |= EntryFlags::COLD;
        }
        hdr.set(HeaderBits::SAVED);
        // The app's own record first, checked against DIRTY once more (a writer sets
        // DIRTY, then clears it): then its published copy.
        if !stub
            .bits
            .set_current_then(|| hdr.bits().contains(HeaderBits::DIRTY))
        {
            r.raced += 1;
            swap.counters.save_races.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        entry.lock().insert_flags(flags);
        // A write that ended between the check above and this insert cleared CLEAN
        // before it was set. Look again: either that writer's CLEAN removal comes after
        // our insert, or our insert (an acquire RMW on the flags) reads from it and so
        // sees its DIRTY. The reclaimer cannot see the brief CLEAN meanwhile: we hold
        // the entry shared.
        if hdr.bits().contains(HeaderBits::DIRTY) {
            entry.lock().remove_flags(EntryFlags::CLEAN);
            stub.bits.clear_current();
            r.raced += 1;
            swap.counters.save_races.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        r.saved_objects += 1;
        r.saved_bytes += stub.bytes() as u64;
        swap.counters.saved_objects.fetch_add(1, Ordering::Relaxed);
        swap.counters
            .saved_bytes
            .fetch_add(stub.bytes() as u64, Ordering::Relaxed);
    }
    // The run's checkpoints are durable and out of the page cache: the runtime keeps no
    // copy of them. A failed sync leaves them cached (and the error recorded). The wait
    // for the disk holds no lock of the file: the looper's frees and faults take it.
    if r.saved_objects + r.raced > 0 {
        let handle = match handle {
            Some(h) => Ok(h),
            None => swap.file.lock().sync_handle(),
        };
        if let Err(e) = handle.and_then(|h| h.sync_and_release()) {
            swap.record_error(&e);
        }
    }
    drop(charged);
    r.elapsed = t0.elapsed();
    r
}

/// Writes the swap file's dirty pages back and drops them from the page cache, through
/// `handle` (taken from the file first if it is `None`). An error is recorded: the
/// pages stay cached until the run's final sync.
fn write_back(swap: &AppSwap, handle: &mut Option<SyncHandle>) {
    if handle.is_none() {
        match swap.file.lock().sync_handle() {
            Ok(h) => *handle = Some(h),
            Err(e) => {
                swap.record_error(&e);
                return;
            }
        }
    }
    if let Some(Err(e)) = handle.as_ref().map(SyncHandle::write_back_and_release) {
        swap.record_error(&e);
    }
    swap.counters.write_backs.fetch_add(1, Ordering::Relaxed);
}

/// Compacts the swap file when its dead bytes pass the policy's threshold, moving every
/// stub's slot to its new place. Returns whether it compacted.
pub fn compact_if_needed(heap: &Heap, swap: &AppSwap) -> Result<bool, SwapError> {
    let Some(space) = heap.stub_space() else {
        return Ok(false);
    };
    let stubs = space.all();
    // Compaction builds the new file's index beside the old one (and holds a guard per
    // stub): charged first, with no lock held.
    let index = swap.file.lock().index_bytes();
    let _charged = heap.runtime_growth(index + stubs.len() * std::mem::size_of::<usize>());
    // Hold every stub's state so no save, fault or free moves a slot meanwhile.
    let mut states: Vec<_> = stubs.iter().map(|s| s.state.lock()).collect();
    let mut file = swap.file.lock();
    let Some(report) = file
        .compact_if_needed(swap.policy.compaction_threshold())
        .inspect_err(|e| swap.record_compaction_error(e))?
    else {
        return Ok(false);
    };
    for st in states.iter_mut() {
        if let Some(old) = st.slot() {
            st.set_slot(
                report
                    .new_slot(SlotId::from_offset(old))
                    .map(|s| s.offset()),
            );
        }
    }
    swap.counters.compactions.fetch_add(1, Ordering::Relaxed);
    Ok(true)
}
