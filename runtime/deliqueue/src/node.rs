//! The queue node: one posted message (or sync barrier, or the quit sentinel), and its
//! three-state lifecycle.
//!
//! Fields by who writes them:
//! - the poster, before publishing: `when`, `kind`, the key, `payload`, first `next`;
//! - anyone, once: `state` (CAS from `PENDING` to `DELIVERED` by the looper, or to
//!   `REMOVED` by a remover), and then the freelist link (by the remover that won);
//! - the looper only, after publishing: `next` (when it unlinks a later node), `link`,
//!   `heap_index`. Looper-only fields are atomics accessed `Relaxed`, which compiles to
//!   plain loads and stores and keeps the node `Sync` without unsafe.
//!
//! **Layout.** A node with a word-sized payload is one cache line: the poster writes it,
//! the looper reads it from the other core and writes only to it (the back-link, the
//! claim, the retirement link), so a message moves one line between cores, and a burst
//! of posts touches half the memory a two-line node did. To fit, the key's object token is
//! a value and a flag rather than an `Option` (16 bytes), the heap index is 32 bits, the
//! retirement and pool chains reuse the back-link (`link`, which an unlinked node no longer
//! needs), and two things live beside the node rather than in it: the freelist link, used
//! only by removals ([`free_next`]: in a side array of the node's slab, or after a node
//! allocated on its own), and the node's slab, found from the node's address (slabs are
//! aligned to their size, see [`super::slab`]; a flag tells carved nodes from lone ones).
//!
//! The payload is read (moved out) only by the looper after it wins the claim CAS, or
//! dropped only by the looper when it reclaims a removed node or tears the queue down.

use std::mem::MaybeUninit;
use std::ptr;

use marvin_sync::atomic::{AtomicPtr, AtomicU32, AtomicU8, Ordering};
use marvin_sync::cell::UnsafeCell;

use super::message::{Message, MessageKey};
use super::slab;

/// Waiting to be delivered or removed.
pub const PENDING: u8 = 0;
/// Claimed by the looper: it runs (has run) the message.
pub const DELIVERED: u8 = 1;
/// Tombstoned: removed, never to run.
pub const REMOVED: u8 = 2;

/// What a node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A synchronous message (held back by a sync barrier at the front).
    Sync,
    /// An asynchronous message.
    Async,
    /// A sync barrier (no payload); `key.what` holds its token.
    Barrier,
    /// The quit sentinel on top of the stack (no payload).
    Sentinel,
}

/// "Not in any heap".
pub const NO_INDEX: usize = usize::MAX;

/// `heap_index` as stored (32 bits: a heap of four billion nodes is out of reach).
const NO_INDEX_STORED: u32 = u32::MAX;

/// `flags`: the key has an object token.
const HAS_OBJ: u8 = 1;
/// `flags`: the node was carved from a slab (else it is a [`Lone`] allocation).
const IN_SLAB: u8 = 2;

/// A queue node. Field order follows the readers: walkers (`remove`, `has`) read
/// `next`, the key, `state` and `kind`; the looper's sweep adds `when` and `link`, its
/// delivery the payload. All of those share the node's first cache line when the payload
/// is a word or less (nodes are cache-line aligned, so no node straddles a line it shares
/// with another; the looper's sweep is a chain of dependent loads, one miss per line).
#[repr(C, align(64))]
pub struct Node<T> {
    /// The next older node on the stack (toward the bottom).
    pub next: AtomicPtr<Node<T>>,
    target: u64,
    what: i64,
    /// The object token, when `flags` has [`HAS_OBJ`].
    obj: u64,
    pub when: u64,
    /// Looper only. While the node is linked: the next newer node (the back-link built
    /// by the sweep). Once unlinked: the next node of the retirement batch or the pool
    /// list it is on.
    pub link: AtomicPtr<Node<T>>,
    /// `PENDING`, `DELIVERED` or `REMOVED`.
    pub state: AtomicU8,
    pub kind: Kind,
    /// [`HAS_OBJ`], [`IN_SLAB`].
    flags: u8,
    /// Looper only: position in its heap, or [`NO_INDEX_STORED`] (see
    /// [`Node::heap_index`]).
    heap_index: AtomicU32,
    payload: UnsafeCell<MaybeUninit<T>>,
}

/// A node allocated on its own (not carved from a slab), with its freelist link after it.
#[repr(C)]
struct Lone<T> {
    node: Node<T>,
    free_next: AtomicPtr<Node<T>>,
}

impl<T> Node<T> {
    /// A message node holding `message`.
    pub fn message(when: u64, message: Message<T>) -> Node<T> {
        let kind = if message.asynchronous {
            Kind::Async
        } else {
            Kind::Sync
        };
        Node::new(when, kind, message.key, MaybeUninit::new(message.payload))
    }

    /// A payload-less node (barrier or sentinel).
    pub fn marker(when: u64, kind: Kind, key: MessageKey) -> Node<T> {
        debug_assert!(matches!(kind, Kind::Barrier | Kind::Sentinel));
        Node::new(when, kind, key, MaybeUninit::uninit())
    }

    fn new(when: u64, kind: Kind, key: MessageKey, payload: MaybeUninit<T>) -> Node<T> {
        Node {
            when,
            kind,
            target: key.target,
            what: key.what,
            obj: key.obj.unwrap_or(0),
            flags: if key.obj.is_some() { HAS_OBJ } else { 0 },
            payload: UnsafeCell::new(payload),
            state: AtomicU8::new(PENDING),
            next: AtomicPtr::new(ptr::null_mut()),
            link: AtomicPtr::new(ptr::null_mut()),
            heap_index: AtomicU32::new(NO_INDEX_STORED),
        }
    }

    /// The message's key (what `remove` and `has` match on).
    #[inline]
    pub fn key(&self) -> MessageKey {
        MessageKey {
            target: self.target,
            what: self.what,
            obj: (self.flags & HAS_OBJ != 0).then_some(self.obj),
        }
    }

    /// Looper only: the node's position in its heap, or [`NO_INDEX`].
    #[inline]
    pub fn heap_index(&self) -> usize {
        // Relaxed: looper-only data.
        match self.heap_index.load(Ordering::Relaxed) {
            NO_INDEX_STORED => NO_INDEX,
            index => index as usize,
        }
    }

    /// Looper only: records the node's position in its heap ([`NO_INDEX`]: out of it).
    #[inline]
    pub fn set_heap_index(&self, index: usize) {
        debug_assert!(index == NO_INDEX || index < NO_INDEX_STORED as usize);
        // Relaxed: looper-only data. `NO_INDEX` truncates to `NO_INDEX_STORED`.
        self.heap_index.store(index as u32, Ordering::Relaxed);
    }

    /// Whether the node carries a payload.
    #[inline]
    pub fn is_message(&self) -> bool {
        matches!(self.kind, Kind::Sync | Kind::Async)
    }

    /// Tries to move the node from `PENDING` to `to` (`DELIVERED` or `REMOVED`).
    /// Exactly one such transition succeeds per node: this is what makes a message run
    /// or removed, never both.
    #[inline]
    pub fn try_transition(&self, to: u8) -> bool {
        // AcqRel on success: the winner's later accesses (the looper moving the payload
        // out, a remover pushing on the freelist) are ordered after every earlier
        // transition attempt; Acquire on failure pairs with the winner's release so the
        // loser sees the final state.
        self.state
            .compare_exchange(PENDING, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Whether the node is still pending (a hint: the answer may change at once).
    #[inline]
    pub fn is_pending(&self) -> bool {
        self.state.load(Ordering::Relaxed) == PENDING
    }

    /// Moves the payload out.
    ///
    /// # Safety
    /// The node is a message node whose payload was neither taken nor dropped, and the
    /// caller has exclusive rights to the payload: it won the transition to `DELIVERED`
    /// (or owns the node outright, never published). The payload must not be used again.
    pub unsafe fn take_payload(&self) -> T {
        // SAFETY: by the contract the payload is initialised and nobody else reads or
        // writes it; reading moves it out and the caller never reads it again.
        self.payload.with(|p| unsafe { (*p).assume_init_read() })
    }

    /// Drops the payload in place.
    ///
    /// # Safety
    /// As for [`take_payload`](Node::take_payload): an initialised, untaken payload that
    /// the caller alone may touch (it was tombstoned and the caller is the looper, or the
    /// queue is being torn down).
    pub unsafe fn drop_payload(&self) {
        // SAFETY: by the contract the payload is initialised and exclusively ours.
        self.payload
            .with_mut(|p| unsafe { (*p).assume_init_drop() })
    }
}

/// Nodes allocated and not yet freed, in every queue (with the `node-census` feature).
#[cfg(feature = "node-census")]
pub static LIVE_NODES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Allocates a node on its own (with its freelist link) and leaks it as a raw pointer.
pub fn into_raw<T>(node: Node<T>) -> *mut Node<T> {
    #[cfg(feature = "node-census")]
    LIVE_NODES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let lone = Box::new(Lone {
        node,
        free_next: AtomicPtr::new(ptr::null_mut()),
    });
    // The node is the allocation's first field (`repr(C)`); the pointer keeps the whole
    // allocation's provenance, so the link after the node stays reachable through it.
    Box::into_raw(lone).cast::<Node<T>>()
}

/// The freelist link of `node` (beside it: see the module docs).
///
/// # Safety
/// `node` came from [`into_raw`] or [`init_carved`] (through a pointer carrying that
/// allocation's provenance) and stays allocated for `'a`.
#[inline]
pub unsafe fn free_next<'a, T>(node: *mut Node<T>) -> &'a AtomicPtr<Node<T>> {
    // SAFETY: by the contract the node is alive; `flags` is written before the node is
    // shared and never after.
    if unsafe { (*node).flags } & IN_SLAB != 0 {
        // SAFETY: a carved node: its slab holds its link, alive while the node is.
        unsafe { &*slab::free_next_of(node) }
    } else {
        // SAFETY: a lone node is the first field of its `Lone`, alive while it is.
        unsafe { &(*node.cast::<Lone<T>>()).free_next }
    }
}

/// Builds `node` in the memory of a dead node, for reuse.
///
/// # Safety
/// `slot` came from [`into_raw`] or [`init_carved`], holds no payload (moved out or
/// dropped) and no other thread can reach it.
pub unsafe fn reuse<T>(slot: *mut Node<T>, mut node: Node<T>) -> *mut Node<T> {
    // SAFETY: by the contract the old node is ours and its payload is gone, so dropping
    // it in place drops no payload; the memory then takes the new node, which keeps the
    // memory's origin (slab or lone).
    unsafe {
        node.flags |= (*slot).flags & IN_SLAB;
        ptr::drop_in_place(slot);
        ptr::write(slot, node);
    }
    slot
}

/// Builds `node` in a slot freshly carved from a slab.
///
/// # Safety
/// `slot` is uninitialised memory that [`slab::Carver::carve`] returned, used once.
pub unsafe fn init_carved<T>(slot: *mut Node<T>, mut node: Node<T>) -> *mut Node<T> {
    node.flags |= IN_SLAB;
    // SAFETY: by the contract the slot is ours, sized and aligned for a node.
    unsafe { ptr::write(slot, node) };
    slot
}

/// Frees a node's memory (never its payload: a node's payload is moved out or dropped
/// explicitly first).
///
/// # Safety
/// `node` came from [`into_raw`] or [`init_carved`], is freed once, and no thread can
/// reach it any more.
pub unsafe fn free<T>(node: *mut Node<T>) {
    // SAFETY: by the contract the node is alive and ours.
    if unsafe { (*node).flags } & IN_SLAB == 0 {
        // SAFETY: by the contract the pointer is a live, unique `Box<Lone>` allocation,
        // whose first field the node is.
        drop(unsafe { Box::from_raw(node.cast::<Lone<T>>()) });
    } else {
        // SAFETY: the node lives in its slab, which counts it until this release; it
        // holds no payload, so dropping it in place frees nothing else.
        unsafe {
            ptr::drop_in_place(node);
            slab::release::<T>(slab::slab_of(node), 1);
        }
    }
    #[cfg(feature = "node-census")]
    LIVE_NODES.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn a_word_sized_message_travels_in_the_first_cache_line() {
        let line_end = |offset: usize, size: usize| offset + size <= 64;
        assert!(line_end(offset_of!(Node<u64>, next), 8));
        assert!(line_end(offset_of!(Node<u64>, obj), 8));
        assert!(line_end(offset_of!(Node<u64>, when), 8));
        assert!(line_end(offset_of!(Node<u64>, link), 8));
        assert!(line_end(offset_of!(Node<u64>, heap_index), 4));
        assert!(line_end(offset_of!(Node<u64>, payload), size_of::<u64>()));
        assert_eq!(size_of::<Node<u64>>(), 64, "one cache line");
    }

    #[test]
    fn the_key_comes_back_as_posted() {
        for obj in [None, Some(0), Some(u64::MAX)] {
            let key = MessageKey {
                target: 7,
                what: -3,
                obj,
            };
            let message = Message {
                key,
                asynchronous: false,
                payload: 1,
            };
            let node = Node::<u64>::message(0, message);
            assert_eq!(node.key(), key);
            // SAFETY: never published: ours, payload in place.
            assert_eq!(unsafe { node.take_payload() }, 1);
        }
    }
}
