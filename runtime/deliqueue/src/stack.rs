//! The Treiber stack every post lands on: one CAS on the head per push.
//!
//! The stack doubles as the list of every node not yet unlinked by the looper, newest
//! first. Other threads walk it for `remove`/`has`: they read the head once and follow
//! `next` with plain (Acquire) loads. The looper unlinks nodes in the middle by
//! rewriting a newer node's `next`, and the topmost node by a CAS on the head; an
//! unlinked node keeps pointing forward into the live list, so a walker standing on it
//! carries on safely, and epochs keep it allocated while a walker may stand on it.

use crossbeam_utils::CachePadded;
use marvin_sync::atomic::{AtomicPtr, Ordering};

use super::node::Node;

/// The head of the stack.
pub struct Stack<T> {
    head: CachePadded<AtomicPtr<Node<T>>>,
}

impl<T> Default for Stack<T> {
    fn default() -> Self {
        Stack {
            head: CachePadded::new(AtomicPtr::new(std::ptr::null_mut())),
        }
    }
}

/// The stack is closed: the quit sentinel is on top.
#[derive(Debug)]
pub struct Closed;

impl<T> Stack<T> {
    /// Pushes `node` unless `sentinel` is on top. Once the sentinel is on top it stays
    /// there (nothing is pushed over it and the looper never unlinks it), so every push
    /// either lands below the sentinel or fails.
    ///
    /// # Safety
    /// `node` is a valid node this thread owns and has not published.
    pub unsafe fn push(&self, node: *mut Node<T>, sentinel: *mut Node<T>) -> Result<(), Closed> {
        // SAFETY: the caller owns the unpublished node.
        let node_ref = unsafe { &*node };
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            if head == sentinel {
                return Err(Closed);
            }
            // Relaxed: published by the CAS below.
            node_ref.next.store(head, Ordering::Relaxed);
            // SeqCst: releases the node to the looper's sweep (its Acquire head load) and
            // to walkers; and it is the poster's half of the Dekker pairing with the
            // looper's deadline store in `wake.rs` (push, then read the deadline).
            match self
                .head
                .compare_exchange_weak(head, node, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(current) => head = current,
            }
        }
    }

    /// Loads the head.
    #[inline]
    pub fn head(&self, order: Ordering) -> *mut Node<T> {
        self.head.load(order)
    }

    /// Looper only: replaces the head `current` by `new` (unlinking the top node).
    #[inline]
    pub fn replace_head(&self, current: *mut Node<T>, new: *mut Node<T>) -> bool {
        // SeqCst: a head update ordered with the posters' pushes and the looper's own
        // SeqCst head load in `wait`; it also releases `new` to walkers (already
        // published, so nothing new to release).
        self.head
            .compare_exchange(current, new, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    }

    /// Looper only: whether the head is still `expected`, as a read-modify-write (a CAS
    /// of the head to itself). Being an RMW, it reads the latest head, and when it
    /// succeeds, every later push reads from it (acquiring it), so the looper's earlier
    /// deadline store is visible to that poster: the Dekker pairing in `wake.rs` holds
    /// with acquire/release alone, not only under SeqCst's total order.
    #[inline]
    pub fn head_unchanged(&self, expected: *mut Node<T>) -> bool {
        self.head
            .compare_exchange(expected, expected, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Walks the stack from the head.
    ///
    /// # Safety
    /// The caller keeps every node reachable from the head allocated for the iterator's
    /// life: it is pinned (so retired nodes outlive it) and holds a pass of the quit
    /// count (so teardown cannot free the list under it).
    pub unsafe fn iter(&self) -> Iter<'_, T> {
        Iter {
            // Acquire: pairs with the pushes' SeqCst CAS, so node contents are visible.
            next: self.head.load(Ordering::Acquire),
            _stack: std::marker::PhantomData,
        }
    }
}

/// Walks nodes from the head toward the bottom.
pub struct Iter<'a, T> {
    next: *mut Node<T>,
    _stack: std::marker::PhantomData<&'a Stack<T>>,
}

impl<T> Iterator for Iter<'_, T> {
    /// A node's pointer (valid for the iterator's life, by `Stack::iter`'s contract).
    type Item = *mut Node<T>;

    fn next(&mut self) -> Option<*mut Node<T>> {
        let ptr = self.next;
        // SAFETY: `Stack::iter`'s contract keeps every reachable node allocated while the
        // iterator lives.
        let node = unsafe { ptr.as_ref()? };
        // Acquire: pairs with the looper's Release store when it unlinks a node (the
        // node it now points to is published to us) and, transitively, the pushes.
        self.next = node.next.load(Ordering::Acquire);
        Some(ptr)
    }
}
