//! The queue node: one posted message (or sync barrier, or the quit sentinel), and its
//! three-state lifecycle.
//!
//! Fields by who writes them:
//! - the poster, before publishing: `when`, `kind`, `key`, `payload`, first `next`;
//! - anyone, once: `state` (CAS from `PENDING` to `DELIVERED` by the looper, or to
//!   `REMOVED` by a remover), and then `free_next` (by the remover that won);
//! - the looper only, after publishing: `next` (when it unlinks a later node), `prev`,
//!   `heap_index`. Looper-only fields are atomics accessed `Relaxed`, which compiles to
//!   plain loads and stores and keeps the node `Sync` without unsafe.
//!
//! The payload is read (moved out) only by the looper after it wins the claim CAS, or
//! dropped only by the looper when it reclaims a removed node or tears the queue down.

use std::mem::MaybeUninit;
use std::ptr;

use marvin_sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};
use marvin_sync::cell::UnsafeCell;

use super::message::{Message, MessageKey};
use super::slab::{self, Slab};

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

/// A queue node. Field order follows the readers: walkers (`remove`, `has`) read
/// `next`, `key`, `state` and `kind`, which come first; the looper's sweep adds `when`
/// and `prev`. Both then touch as few cache lines per node as the layout allows: nodes
/// are cache-line aligned, so those fields share the node's first line (and no node
/// straddles a line it shares with another; the looper's sweep is a chain of dependent
/// loads, one miss per line).
#[repr(C, align(64))]
pub struct Node<T> {
    /// The next older node on the stack (toward the bottom).
    pub next: AtomicPtr<Node<T>>,
    pub key: MessageKey,
    /// `PENDING`, `DELIVERED` or `REMOVED`.
    pub state: AtomicU8,
    pub kind: Kind,
    pub when: u64,
    /// Looper only: the next newer node (the back-link built by the sweep).
    pub prev: AtomicPtr<Node<T>>,
    /// Looper only: position in its heap, or [`NO_INDEX`].
    pub heap_index: AtomicUsize,
    /// The freelist link, written once by the remover that tombstoned the node (and
    /// the retirement link once the node is unlinked).
    pub free_next: AtomicPtr<Node<T>>,
    /// The slab the node's memory belongs to, or null for a node allocated on its own.
    slab: *mut Slab,
    payload: UnsafeCell<MaybeUninit<T>>,
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
            key,
            payload: UnsafeCell::new(payload),
            state: AtomicU8::new(PENDING),
            next: AtomicPtr::new(ptr::null_mut()),
            prev: AtomicPtr::new(ptr::null_mut()),
            heap_index: AtomicUsize::new(NO_INDEX),
            free_next: AtomicPtr::new(ptr::null_mut()),
            slab: ptr::null_mut(),
        }
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

/// Allocates a node on the heap and leaks it as a raw pointer.
pub fn into_raw<T>(node: Node<T>) -> *mut Node<T> {
    #[cfg(feature = "node-census")]
    LIVE_NODES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Box::into_raw(Box::new(node))
}

/// Builds `node` in the memory of a dead node, for reuse.
///
/// # Safety
/// `slot` came from [`into_raw`] or [`init_carved`], holds no payload (moved out or
/// dropped) and no other thread can reach it.
pub unsafe fn reuse<T>(slot: *mut Node<T>, mut node: Node<T>) -> *mut Node<T> {
    // SAFETY: by the contract the old node is ours and its payload is gone, so dropping
    // it in place drops no payload; the memory then takes the new node, which keeps the
    // memory's slab.
    unsafe {
        node.slab = (*slot).slab;
        ptr::drop_in_place(slot);
        ptr::write(slot, node);
    }
    slot
}

/// Builds `node` in a slot freshly carved from `slab`.
///
/// # Safety
/// `slot` is uninitialised memory that [`slab::Carver::carve`] returned, carved from
/// `slab`, and used once.
pub unsafe fn init_carved<T>(
    slot: *mut Node<T>,
    mut node: Node<T>,
    slab: *mut Slab,
) -> *mut Node<T> {
    node.slab = slab;
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
    let slab = unsafe { (*node).slab };
    if slab.is_null() {
        // SAFETY: by the contract the pointer is a live, unique `Box` allocation.
        drop(unsafe { Box::from_raw(node) });
    } else {
        // SAFETY: the node lives in `slab`, which counts it until this release; it holds
        // no payload, so dropping it in place frees nothing else.
        unsafe {
            ptr::drop_in_place(node);
            slab::release::<T>(slab, 1);
        }
    }
    #[cfg(feature = "node-census")]
    LIVE_NODES.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
}
