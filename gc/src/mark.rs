//! The mark phase: a depth-first trace from the roots with an explicit stack.

use marvin_runtime::header::HeaderBits;
use marvin_runtime::heap::{Handle, Heap};

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
