//! The sweep phase: one walk of the handle table that frees unmarked objects and
//! stubs, clears the mark of the survivors and ages their access bits.
//!
//! Survivors are aged by [`age_entry`], which never faults a reclaimed object in.

use marvin_runtime::HeaderBits;
use marvin_runtime::Obj;
use marvin_runtime::{footprint, is_chunk_entry, Heap, ENTRY_STUB};

use crate::chunk_mark::take_member_mark;

use crate::working_set::{age_entry, WorkingSet};

pub struct Swept {
    pub freed_objects: u64,
    pub freed_bytes: u64,
    pub working_set: WorkingSet,
}

/// Frees every unmarked object and stub.
///
/// # Safety
/// The world must be stopped and marking complete.
pub unsafe fn sweep(heap: &Heap) -> Swept {
    let mut dead = Vec::new();
    let mut dead_stubs = Vec::new();
    let mut dead_members = Vec::new();
    let mut freed_bytes = 0u64;
    let mut ws = WorkingSet::default();
    heap.table().for_each(|h, e| {
        if is_chunk_entry(e) {
            // SAFETY: a chunk entry; the world is stopped and only this sweep frees.
            if !unsafe { take_member_mark(heap, e) } {
                dead_members.push(h);
            }
            return;
        }
        let live = if e & ENTRY_STUB != 0 {
            // SAFETY: a live stub entry; the world is stopped and only this sweep frees.
            unsafe { heap.stub_of_entry(e) }.bits.swap_marked(false)
        } else {
            // SAFETY: an untagged entry is a live resident object; the world is stopped.
            let obj = unsafe { Obj::from_addr(e as usize) };
            obj.header()
                .clear(HeaderBits::MARKED)
                .contains(HeaderBits::MARKED)
        };
        if live {
            // SAFETY: live entry, world stopped.
            unsafe { age_entry(heap, e, &mut ws) };
        } else if e & ENTRY_STUB != 0 {
            dead_stubs.push(h);
        } else {
            // SAFETY: as above.
            let obj = unsafe { Obj::from_addr(e as usize) };
            freed_bytes += footprint(obj.kind(), obj.len()) as u64;
            dead.push(h);
        }
    });
    // SAFETY: unmarked objects are unreachable from every root; the world is stopped.
    unsafe { heap.free(&dead) };
    // SAFETY: as above, for members of chunks (before the chunks' own stubs go).
    unsafe { heap.free_chunk_members(&dead_members) };
    // SAFETY: as above, for stubs and their objects.
    freed_bytes += unsafe { heap.free_stubs(&dead_stubs) };
    Swept {
        freed_objects: (dead.len() + dead_stubs.len() + dead_members.len()) as u64,
        freed_bytes,
        working_set: ws,
    }
}
