//! The mark phase: a depth-first trace from the roots with an explicit stack.
//!
//! Bookmarking: when the trace reaches a stub it marks the stub and follows the stub's
//! copies of the object's references, never the object itself, so a collection faults
//! nothing in, whether the object is resident or not. (A heap whose stub space does not
//! bookmark, the page-swap baseline, faults each object in instead, as a collector over
//! kernel-swapped pages must.)

use std::sync::atomic::Ordering;

use marvin_runtime::HeaderBits;
use marvin_runtime::{is_chunk_entry, Handle, Heap, ENTRY_STUB};

/// Marks everything reachable from `roots`; returns how many objects were marked.
///
/// # Safety
/// The world must be stopped (see [`crate::collect`]).
pub unsafe fn mark(heap: &Heap, roots: &[u64]) -> u64 {
    let table = heap.table();
    let mut stack: Vec<u64> = roots
        .iter()
        .copied()
        .filter(|&v| table.is_live(v))
        .collect();
    let mut marked = 0u64;
    while let Some(v) = stack.pop() {
        let Some(h) = Handle::from_value(v) else {
            continue;
        };
        let e = table.entry(h).load(Ordering::Acquire);
        if is_chunk_entry(e) {
            // SAFETY: a chunk entry of this heap; the world is stopped.
            marked += unsafe { crate::chunk_mark::mark_member(heap, e, &mut stack) } as u64;
            continue;
        }
        if e & ENTRY_STUB != 0 {
            // SAFETY: a stub-tagged entry of this heap; stubs are freed only by the
            // sweep, after marking.
            let stub = unsafe { heap.stub_of_entry(e) };
            if stub.bits.swap_marked(true) {
                continue;
            }
            marked += 1;
            if let Some(space) = heap.stub_space().filter(|s| !s.bookmarking) {
                // Without bookmarking the collector reads the object itself, faulting it
                // in when it is out (counted as a GC fault).
                let growth = (!space.table.entry(stub.entry).is_resident())
                    .then(|| heap.before_growth(space.hooks.fault_bytes(stub)))
                    .flatten();
                let _ = space.fault(stub);
                drop(growth);
            }
            for r in stub.refs().iter() {
                let r = r.load(Ordering::Relaxed);
                if table.is_live(r) {
                    stack.push(r);
                }
            }
            continue;
        }
        // SAFETY: `v` is a live handle (checked when pushed) and the world is stopped.
        let Some(obj) = (unsafe { heap.raw_object(h) }) else {
            continue;
        };
        if obj
            .header()
            .set(HeaderBits::MARKED)
            .contains(HeaderBits::MARKED)
        {
            continue;
        }
        marked += 1;
        obj.for_each_ref(|r| {
            if table.is_live(r) {
                stack.push(r);
            }
        });
    }
    marked
}
