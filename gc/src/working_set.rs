//! The working-set estimate (the Clock algorithm over header access bits): each round
//! shifts every object's READ and WRITE bits into its 4-bit history registers and
//! clears them; the working set is the bytes of objects read, and written, within the
//! last four rounds (non-zero registers). A round runs on every full collection (in
//! the sweep) and on a timer ([`walk`]).

use marvin_runtime::EntryFlags;
use marvin_runtime::Obj;
use marvin_runtime::{footprint, Heap, ENTRY_STUB};

/// Working-set bytes at the end of a round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkingSet {
    /// Bytes of objects read in the last four rounds.
    pub read_bytes: u64,
    /// Bytes of objects written in the last four rounds.
    pub written_bytes: u64,
    /// Bytes of all live objects walked.
    pub walked_bytes: u64,
}

impl WorkingSet {
    /// Counts one live object of `bytes` with its (read, write) history registers.
    pub fn add(&mut self, bytes: u64, read_history: u8, write_history: u8) {
        self.walked_bytes += bytes;
        if read_history != 0 {
            self.read_bytes += bytes;
        }
        if write_history != 0 {
            self.written_bytes += bytes;
        }
    }
}

/// Ages one live object behind handle entry `e` and counts it in `ws`. A stubbed
/// object is aged only while resident (under its entry's shared lock, so the reclaimer
/// cannot drop it meanwhile), and its entry's COLD flag follows the policy's verdict; a
/// reclaimed object is not touched.
///
/// # Safety
/// `e` must be a live entry of `heap` and the app's mutators stopped.
pub unsafe fn age_entry(heap: &Heap, e: u64, ws: &mut WorkingSet) {
    if marvin_runtime::is_chunk_entry(e) {
        // A member of a cold chunk: its chunk's stub is aged as one object (its header
        // records every member's accesses); the member's own bytes are left alone.
        return;
    }
    if e & ENTRY_STUB != 0 {
        // SAFETY: a live stub entry; stubs are freed only with mutators stopped, by the
        // collector, which is not running concurrently with this walk.
        let stub = unsafe { heap.stub_of_entry(e) };
        let Some(space) = heap.stub_space() else {
            return;
        };
        if !space.bookmarking {
            let growth = (!space.table.entry(stub.entry).is_resident())
                .then(|| heap.before_growth(space.hooks.fault_bytes(stub)))
                .flatten();
            let _ = space.fault(stub);
            drop(growth);
        }
        let entry = space.table.entry(stub.entry);
        // An entry that fails its checks is left alone: the app's own access to the
        // object reports it.
        let Ok(_g) = space.lock_entry(stub) else {
            return;
        };
        if entry.is_resident() {
            // SAFETY: resident under the shared lock.
            let (r, w) = unsafe { stub.object() }.header().age();
            ws.add(stub.bytes() as u64, r, w);
            if space.hooks.is_cold(r, w) {
                entry.lock().insert_flags(EntryFlags::COLD);
            } else {
                entry.lock().remove_flags(EntryFlags::COLD);
            }
        }
        return;
    }
    // SAFETY: an untagged live entry; mutators are stopped.
    let obj = unsafe { Obj::from_addr(e as usize) };
    let (r, w) = obj.header().age();
    ws.add(footprint(obj.kind(), obj.len()) as u64, r, w);
}

/// One working-set round over the whole heap, without collecting.
///
/// # Safety
/// The app's mutators must be stopped.
pub unsafe fn walk(heap: &Heap) -> WorkingSet {
    let mut ws = WorkingSet::default();
    // SAFETY: every entry `for_each` yields is live; mutators are stopped.
    heap.table()
        .for_each(|_, e| unsafe { age_entry(heap, e, &mut ws) });
    ws
}
