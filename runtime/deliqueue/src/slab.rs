//! Node memory carved from slabs: one allocation holds [`Slab::capacity`] nodes, handed
//! out in address order and freed when the last of them is.
//!
//! A burst of posts outruns the node pool (nodes come back only after the looper has
//! delivered them and a grace period has passed), and a node per `malloc`, freed by the
//! looper on another thread, made the allocator the post path's largest cost. Slabs make
//! that one allocation per [`Slab::capacity`] nodes, and lay a burst's nodes out in
//! address order, which the looper's sweep (a chain of dependent loads) benefits from.
//!
//! A slab starts with a header holding its count of nodes not yet freed (every slot
//! counts from the start, carved or not); [`super::node::free`] of a carved node counts
//! one down and the last one frees the slab. Whoever carves (the pool's taker) gives back
//! the slots it never carved with [`Carver::abandon`]. Nodes remember their slab (their
//! `slab` field); a node allocated on its own has none.

use std::alloc::{self, Layout};
use std::mem::{align_of, size_of};
use std::ptr;

use marvin_sync::atomic::{AtomicUsize, Ordering};

use super::node::Node;

/// Bytes of nodes a slab aims at.
const SLAB_BYTES: usize = 8 * 1024;

/// The header at the start of a slab.
#[repr(C)]
pub struct Slab {
    /// Slots not yet freed.
    live: AtomicUsize,
    /// The nodes' count (the layout is recomputed from it).
    capacity: usize,
}

impl Slab {
    /// How many nodes of payload type `T` a slab holds.
    pub fn capacity<T>() -> usize {
        (SLAB_BYTES / size_of::<Node<T>>()).max(4)
    }

    /// Where the nodes start (after the header, at node alignment).
    fn nodes_offset<T>() -> usize {
        size_of::<Slab>().next_multiple_of(align_of::<Node<T>>())
    }

    fn layout<T>(capacity: usize) -> Layout {
        let bytes = Self::nodes_offset::<T>() + capacity * size_of::<Node<T>>();
        Layout::from_size_align(bytes, align_of::<Node<T>>().max(align_of::<Slab>()))
            .expect("slab layout fits")
    }
}

/// The taker's current slab and the next slot to carve from it.
pub struct Carver<T> {
    slab: *mut Slab,
    next: usize,
    _nodes: std::marker::PhantomData<*mut Node<T>>,
}

impl<T> Default for Carver<T> {
    fn default() -> Self {
        Carver {
            slab: ptr::null_mut(),
            next: 0,
            _nodes: std::marker::PhantomData,
        }
    }
}

impl<T> Carver<T> {
    /// Uninitialised memory for one node, from the current slab or a new one, and that
    /// slab.
    pub fn carve(&mut self) -> (*mut Node<T>, *mut Slab) {
        let capacity = Slab::capacity::<T>();
        if self.slab.is_null() || self.next == capacity {
            self.abandon();
            let layout = Slab::layout::<T>(capacity);
            // SAFETY: the layout has a non-zero size (a header and at least 4 nodes).
            let slab = unsafe { alloc::alloc(layout) }.cast::<Slab>();
            if slab.is_null() {
                alloc::handle_alloc_error(layout);
            }
            // SAFETY: fresh memory, aligned for the header.
            unsafe {
                slab.write(Slab {
                    live: AtomicUsize::new(capacity),
                    capacity,
                })
            };
            self.slab = slab;
            self.next = 0;
        }
        let offset = Slab::nodes_offset::<T>() + self.next * size_of::<Node<T>>();
        self.next += 1;
        #[cfg(feature = "node-census")]
        super::node::LIVE_NODES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: `next` was below the capacity, so the slot is inside the allocation.
        let slot = unsafe { self.slab.cast::<u8>().add(offset).cast::<Node<T>>() };
        (slot, self.slab)
    }

    /// Gives back the current slab's uncarved slots (the slab is freed if every carved
    /// node already was).
    pub fn abandon(&mut self) {
        let slab = std::mem::replace(&mut self.slab, ptr::null_mut());
        if slab.is_null() {
            return;
        }
        let uncarved = Slab::capacity::<T>() - self.next;
        if uncarved > 0 {
            // SAFETY: the slab is alive: its uncarved slots still count.
            unsafe { release::<T>(slab, uncarved) };
        }
    }
}

impl<T> Drop for Carver<T> {
    fn drop(&mut self) {
        self.abandon();
    }
}

/// Counts `slots` of `slab` as freed; the last frees the slab.
///
/// # Safety
/// `slab` is alive and at least `slots` of its slots are counted and not yet released.
pub unsafe fn release<T>(slab: *mut Slab, slots: usize) {
    // SAFETY: alive by the contract.
    let header = unsafe { &*slab };
    // AcqRel: every release happens before the last one frees the memory.
    if header.live.fetch_sub(slots, Ordering::AcqRel) == slots {
        let layout = Slab::layout::<T>(header.capacity);
        // SAFETY: no slot is counted any more: nothing uses the slab; it was allocated
        // with this layout.
        unsafe { alloc::dealloc(slab.cast(), layout) };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn carves_in_address_order_and_frees_the_slab_with_its_last_node() {
        let mut carver = Carver::<u64>::default();
        let capacity = Slab::capacity::<u64>();
        let nodes: Vec<_> = (0..capacity + 2).map(|_| carver.carve()).collect();
        for pair in nodes[..capacity].windows(2) {
            assert_eq!(
                pair[1].0 as usize - pair[0].0 as usize,
                size_of::<Node<u64>>()
            );
            assert_eq!(pair[0].1, pair[1].1, "one slab for the first {capacity}");
        }
        assert_ne!(nodes[capacity].1, nodes[0].1, "a new slab once full");
        assert_eq!(nodes[0].0 as usize % align_of::<Node<u64>>(), 0);
        // Free the first slab's nodes (Miri checks the slab is freed exactly once).
        for &(_, slab) in &nodes[..capacity] {
            // SAFETY: each carved slot is released once; its slab counts it until then.
            unsafe { release::<u64>(slab, 1) };
        }
        for &(_, slab) in &nodes[capacity..] {
            // SAFETY: as above.
            unsafe { release::<u64>(slab, 1) };
        }
        // The second slab's uncarved slots go with the carver.
        drop(carver);
        #[cfg(feature = "node-census")]
        super::super::node::LIVE_NODES
            .fetch_sub(capacity + 2, std::sync::atomic::Ordering::Relaxed);
    }
}
