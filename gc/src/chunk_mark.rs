//! The collector's side of cold chunks: marking a member marks it in its record and
//! follows its reference copies (bookmarks) and its chunk's handle, never the chunk's
//! pages, so a collection faults no chunk in; the sweep keeps marked members and hands
//! the others to [`Heap::free_chunk_members`].

use std::sync::atomic::Ordering;

use marvin_runtime::Heap;

/// Marks the member behind chunk entry `e`; pushes what it references and its chunk's
/// handle onto `stack`. Returns whether it was newly marked.
///
/// # Safety
/// `e` is a chunk-tagged entry of `heap`; the world is stopped.
pub unsafe fn mark_member(heap: &Heap, e: u64, stack: &mut Vec<u64>) -> bool {
    // SAFETY: forwarded contract; records are dropped only by the sweep, after marking.
    let m = unsafe { heap.member_of_entry(e) };
    if m.marked.swap(true, Ordering::Relaxed) {
        return false;
    }
    let table = heap.table();
    stack.push(m.chunk().value());
    for r in m.refs() {
        let r = r.load(Ordering::Relaxed);
        if table.is_live(r) {
            stack.push(r);
        }
    }
    true
}

/// Whether the member behind chunk entry `e` was marked, clearing its mark.
///
/// # Safety
/// As [`mark_member`].
pub unsafe fn take_member_mark(heap: &Heap, e: u64) -> bool {
    // SAFETY: forwarded contract.
    unsafe { heap.member_of_entry(e) }
        .marked
        .swap(false, Ordering::Relaxed)
}
