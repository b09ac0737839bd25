//! Node memory carved from slabs: one allocation holds [`Slab::capacity`] nodes, handed
//! out in address order and freed when the last of them is.
//!
//! A burst of posts outruns the node pool (nodes come back only after the looper has
//! delivered them and a grace period has passed), and a node per `malloc`, freed by the
//! looper on another thread, made the allocator the post path's largest cost. Slabs make
//! that one allocation per [`Slab::capacity`] nodes, and lay a burst's nodes out in
//! address order, which the looper's sweep (a chain of dependent loads) benefits from.
//!
//! A slab is a header holding its count of nodes not yet freed (every slot counts from the
//! start, carved or not), then the nodes' freelist links (one word each, see
//! [`super::node::free_next`]), then the nodes. [`super::node::free`] of a carved node
//! counts one down and the last one frees the slab. Whoever carves (the pool's taker)
//! gives back the slots it never carved with [`Carver::abandon`]. A slab is aligned to
//! its size (a power of two, 8 KiB for small nodes), so a node finds its slab, and its
//! link, from its own address ([`slab_of`], [`free_next_of`]).

use std::alloc::{self, Layout};
use std::mem::{align_of, size_of};
use std::ptr;

use marvin_sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use super::node::Node;

/// Bytes a slab aims at (more for nodes so large that fewer than 4 would fit).
const SLAB_BYTES: usize = 8 * 1024;

/// The header at the start of a slab.
#[repr(C)]
pub struct Slab {
    /// Slots not yet freed.
    live: AtomicUsize,
    /// The nodes' count (the layout is recomputed from it).
    capacity: usize,
}

/// A node's freelist link, in its slab's side array.
type Link<T> = AtomicPtr<Node<T>>;

impl Slab {
    /// How many nodes of payload type `T` a slab holds.
    pub fn capacity<T>() -> usize {
        let room = SLAB_BYTES - size_of::<Slab>() - align_of::<Node<T>>();
        (room / (size_of::<Node<T>>() + size_of::<Link<T>>())).max(4)
    }

    /// Where the links start (after the header).
    fn links_offset<T>() -> usize {
        size_of::<Slab>().next_multiple_of(align_of::<Link<T>>())
    }

    /// Where the nodes start (after the links, at node alignment).
    fn nodes_offset<T>() -> usize {
        (Self::links_offset::<T>() + Self::capacity::<T>() * size_of::<Link<T>>())
            .next_multiple_of(align_of::<Node<T>>())
    }

    /// The slab's alignment, which is also the bound of its size.
    fn align<T>() -> usize {
        (Self::nodes_offset::<T>() + Self::capacity::<T>() * size_of::<Node<T>>())
            .next_power_of_two()
    }

    fn layout<T>() -> Layout {
        let bytes = Self::nodes_offset::<T>() + Self::capacity::<T>() * size_of::<Node<T>>();
        Layout::from_size_align(bytes, Self::align::<T>()).expect("slab layout fits")
    }
}

/// The slab a carved node lives in.
///
/// Only address arithmetic (no access): callers dereference the result only for a node
/// carved from a slab, whose pointer carries the slab's provenance.
#[inline]
pub fn slab_of<T>(node: *mut Node<T>) -> *mut Slab {
    let offset = node.addr() & (Slab::align::<T>() - 1);
    node.cast::<u8>().wrapping_sub(offset).cast::<Slab>()
}

/// The freelist link of a carved node, in its slab's side array.
///
/// Only address arithmetic, as for [`slab_of`].
#[inline]
pub fn free_next_of<T>(node: *mut Node<T>) -> *mut Link<T> {
    let offset = node.addr() & (Slab::align::<T>() - 1);
    let index = (offset - Slab::nodes_offset::<T>()) / size_of::<Node<T>>();
    node.cast::<u8>()
        .wrapping_sub(offset)
        .wrapping_add(Slab::links_offset::<T>() + index * size_of::<Link<T>>())
        .cast::<Link<T>>()
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
    /// Uninitialised memory for one node, from the current slab or a new one.
    pub fn carve(&mut self) -> *mut Node<T> {
        let capacity = Slab::capacity::<T>();
        if self.slab.is_null() || self.next == capacity {
            self.abandon();
            let layout = Slab::layout::<T>();
            // SAFETY: the layout has a non-zero size (a header and at least 4 nodes).
            let slab = unsafe { alloc::alloc(layout) }.cast::<Slab>();
            if slab.is_null() {
                alloc::handle_alloc_error(layout);
            }
            // SAFETY: fresh memory, aligned for the header and, after it, the links.
            unsafe {
                slab.write(Slab {
                    live: AtomicUsize::new(capacity),
                    capacity,
                });
                let links = slab.cast::<u8>().add(Slab::links_offset::<T>());
                for i in 0..capacity {
                    links
                        .cast::<Link<T>>()
                        .add(i)
                        .write(AtomicPtr::new(ptr::null_mut()));
                }
            }
            self.slab = slab;
            self.next = 0;
        }
        let offset = Slab::nodes_offset::<T>() + self.next * size_of::<Node<T>>();
        self.next += 1;
        #[cfg(feature = "node-census")]
        super::node::LIVE_NODES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: `next` was below the capacity, so the slot is inside the allocation.
        unsafe { self.slab.cast::<u8>().add(offset).cast::<Node<T>>() }
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
/// `slab` is alive (and a pointer with its provenance) and at least `slots` of its slots
/// are counted and not yet released.
pub unsafe fn release<T>(slab: *mut Slab, slots: usize) {
    // SAFETY: alive by the contract.
    let header = unsafe { &*slab };
    debug_assert_eq!(header.capacity, Slab::capacity::<T>());
    // AcqRel: every release happens before the last one frees the memory.
    if header.live.fetch_sub(slots, Ordering::AcqRel) == slots {
        // SAFETY: no slot is counted any more: nothing uses the slab; it was allocated
        // with this layout. The links are plain atomics, which need no drop.
        unsafe { alloc::dealloc(slab.cast(), Slab::layout::<T>()) };
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
            assert_eq!(pair[1] as usize - pair[0] as usize, size_of::<Node<u64>>());
            assert_eq!(slab_of(pair[0]), slab_of(pair[1]), "one slab for the first");
        }
        assert_ne!(
            slab_of(nodes[capacity]),
            slab_of(nodes[0]),
            "a new slab once full"
        );
        assert_eq!(nodes[0] as usize % align_of::<Node<u64>>(), 0);
        // Every node has its own link, inside its slab, before the nodes.
        let mut links: Vec<_> = nodes.iter().map(|&node| free_next_of(node)).collect();
        for (&node, &link) in nodes.iter().zip(&links) {
            let slab = slab_of(node) as usize;
            assert!(slab < link as usize && (link as usize) < slab + Slab::nodes_offset::<u64>());
            // SAFETY: the link is inside the live slab and was initialised by the carve.
            assert!(unsafe { &*link }.load(Ordering::Relaxed).is_null());
        }
        links.sort();
        links.dedup();
        assert_eq!(links.len(), nodes.len(), "no two nodes share a link");
        // Free every carved node (Miri checks each slab is freed exactly once).
        for &node in &nodes {
            // SAFETY: each carved slot is released once; its slab counts it until then.
            unsafe { release::<u64>(slab_of(node), 1) };
        }
        // The second slab's uncarved slots go with the carver.
        drop(carver);
        #[cfg(feature = "node-census")]
        super::super::node::LIVE_NODES
            .fetch_sub(capacity + 2, std::sync::atomic::Ordering::Relaxed);
    }

    #[test]
    fn large_nodes_get_a_larger_slab_aligned_to_its_size() {
        let capacity = Slab::capacity::<[u8; 9000]>();
        assert_eq!(capacity, 4);
        let layout = Slab::layout::<[u8; 9000]>();
        assert!(layout.size() <= layout.align() && layout.align().is_power_of_two());
        let layout = Slab::layout::<u64>();
        assert_eq!(layout.align(), SLAB_BYTES, "small nodes fill 8 KiB");
        assert!(layout.size() <= SLAB_BYTES);
    }
}
