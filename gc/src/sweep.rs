//! The sweep phase: one walk of the handle table that frees unmarked objects, clears
//! the mark of the survivors and ages their access bits.

use marvin_runtime::header::HeaderBits;
use marvin_runtime::heap::{footprint, Heap};
use marvin_runtime::object::Obj;

use crate::working_set::WorkingSet;

pub struct Swept {
    pub freed_objects: u64,
    pub freed_bytes: u64,
    pub working_set: WorkingSet,
}

/// Frees every unmarked object.
///
/// # Safety
/// The world must be stopped and marking complete.
pub unsafe fn sweep(heap: &Heap) -> Swept {
    let mut dead = Vec::new();
    let mut freed_bytes = 0u64;
    let mut ws = WorkingSet::default();
    heap.table().for_each(|h, e| {
        if e & marvin_runtime::heap::ENTRY_STUB != 0 {
            return;
        }
        // SAFETY: an untagged entry is a live resident object; the world is stopped.
        let obj = unsafe { Obj::from_addr(e as usize) };
        let hdr = obj.header();
        if hdr.clear(HeaderBits::MARKED).contains(HeaderBits::MARKED) {
            let (r, w) = hdr.age();
            ws.add(footprint(obj.kind(), obj.len()) as u64, r, w);
        } else {
            freed_bytes += footprint(obj.kind(), obj.len()) as u64;
            dead.push(h);
        }
    });
    // SAFETY: unmarked objects are unreachable from every root; the world is stopped.
    unsafe { heap.free(&dead) };
    Swept {
        freed_objects: dead.len() as u64,
        freed_bytes,
        working_set: ws,
    }
}
