//! The lock-free freelist: a remover that tombstoned a node pushes it here, and the
//! looper takes the whole list at once and unlinks the nodes from its stack and heaps.

use crossbeam_utils::CachePadded;
use marvin_sync::atomic::{AtomicPtr, Ordering};

use super::node::{self, Node};

/// A push-only Treiber stack drained all at once (so no ABA: nothing is popped singly).
pub struct FreeList<T> {
    head: CachePadded<AtomicPtr<Node<T>>>,
}

impl<T> Default for FreeList<T> {
    fn default() -> Self {
        FreeList {
            head: CachePadded::new(AtomicPtr::new(std::ptr::null_mut())),
        }
    }
}

impl<T> FreeList<T> {
    /// Pushes a tombstoned node. Each node is pushed at most once: only the thread that
    /// won its transition to `REMOVED` pushes it.
    ///
    /// # Safety
    /// `ptr` is a node of the queue's list (with its allocation's provenance: the looper
    /// frees through it), tombstoned by the caller, who has not pushed it before; the
    /// looper reclaims it only after this push, so it stays alive through it.
    pub unsafe fn push(&self, ptr: *mut Node<T>) {
        // SAFETY: by the contract the node is alive until the push is done.
        let free_next = unsafe { node::free_next(ptr) };
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // Relaxed: published by the CAS below.
            free_next.store(head, Ordering::Relaxed);
            // Release: pairs with the Acquire swap in `take_all`, so the looper sees
            // the link and, through the remover's own Acquire walk, the node's push.
            match self
                .head
                .compare_exchange_weak(head, ptr, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(current) => head = current,
            }
        }
    }

    /// Looper only: takes every node pushed so far (a chain through [`node::free_next`]).
    pub fn take_all(&self) -> *mut Node<T> {
        if self.head.load(Ordering::Relaxed).is_null() {
            return std::ptr::null_mut();
        }
        // Acquire: pairs with the Release push CAS of each remover.
        self.head.swap(std::ptr::null_mut(), Ordering::Acquire)
    }

    /// Whether nothing waits on the list (a hint).
    pub fn is_empty(&self) -> bool {
        self.head.load(Ordering::Relaxed).is_null()
    }

    /// Forgets the list (teardown frees the nodes through the stack instead).
    pub fn clear(&self) {
        self.head.store(std::ptr::null_mut(), Ordering::Relaxed);
    }
}
