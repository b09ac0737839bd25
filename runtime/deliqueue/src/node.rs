//! The queue node: one posted message (or sync barrier, or the quit sentinel), and its
//! three-state lifecycle.
//!
//! Fields by who writes them:
//! - the poster, before publishing: `when`, `kind`, the key, `payload`, first `next`;
//! - anyone, once: `state` (CAS from `PENDING` to `DELIVERED` by the looper, or to
//!   `REMOVED` by a remover), and then `free_next` (by the remover that won);
//! - the looper only, after publishing: `next` (when it unlinks a later node), `link`,
//!   `heap_index`. Looper-only fields are atomics accessed `Relaxed`, which compiles to
//!   plain loads and stores and keeps the node `Sync` without unsafe.
//!
//! **Layout.** Everything a message's trip through the queue touches sits in the node's
//! first cache line: the poster writes it, the looper reads it from the other core and
//! writes only to it (the back-link, the claim, the retirement link), so a message moves
//! one line between cores, not two. With a word-sized payload that line is full: the key's
//! object token is stored as a value and a flag rather than an `Option` (16 bytes), and
//! the retirement and pool chains reuse the back-link (`link`), which an unlinked node no
//! longer needs. What the common path does not touch (`heap_index`, used only for
//! messages out of order, `free_next`, used only by removals, and the slab) follows.
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
    /// The object token, when `has_obj`.
    obj: u64,
    pub when: u64,
    /// Looper only. While the node is linked: the next newer node (the back-link built
    /// by the sweep). Once unlinked: the next node of the retirement batch or the pool
    /// list it is on.
    pub link: AtomicPtr<Node<T>>,
    /// `PENDING`, `DELIVERED` or `REMOVED`.
    pub state: AtomicU8,
    pub kind: Kind,
    has_obj: bool,
    payload: UnsafeCell<MaybeUninit<T>>,
    /// Looper only: position in its heap, or [`NO_INDEX`].
    pub heap_index: AtomicUsize,
    /// The freelist link, written once by the remover that tombstoned the node.
    pub free_next: AtomicPtr<Node<T>>,
    /// The slab the node's memory belongs to, or null for a node allocated on its own.
    slab: *mut Slab,
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
            has_obj: key.obj.is_some(),
            payload: UnsafeCell::new(payload),
            state: AtomicU8::new(PENDING),
            next: AtomicPtr::new(ptr::null_mut()),
            link: AtomicPtr::new(ptr::null_mut()),
            heap_index: AtomicUsize::new(NO_INDEX),
            free_next: AtomicPtr::new(ptr::null_mut()),
            slab: ptr::null_mut(),
        }
    }

    /// The message's key (what `remove` and `has` match on).
    #[inline]
    pub fn key(&self) -> MessageKey {
        MessageKey {
            target: self.target,
            what: self.what,
            obj: self.has_obj.then_some(self.obj),
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
        assert!(line_end(offset_of!(Node<u64>, has_obj), 1));
        assert!(line_end(offset_of!(Node<u64>, payload), size_of::<u64>()));
        assert!(offset_of!(Node<u64>, heap_index) >= 64, "the rest comes after");
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
