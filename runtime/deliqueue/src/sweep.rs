//! The looper's sweep: walking the post stack from its head down to the last node
//! already swept, taking each new node into the looper's heaps (back-links built on the
//! way), tombstoning removed messages, unlinking them from the stack and handing them to
//! the reclaimer. Only the looper sweeps; walkers (`remove`, `has`) only read.

use std::ptr::{self, NonNull};

use marvin_sync::atomic::Ordering;

use crate::heap::Entry;
use crate::node::{self, Node, PENDING, REMOVED};
use crate::reclaim;
use crate::{node_ref, side_of, Clock, DeliQueue, LooperState, FRONT_OF_QUEUE};

impl<T: Send + 'static, C: Clock> DeliQueue<T, C> {
    /// Walks the live list; `visit` gets each node and its pointer and returns false to
    /// stop. Returns false when the queue is torn down (nothing to walk).
    pub(crate) fn walk(&self, mut visit: impl FnMut(&Node<T>, *mut Node<T>) -> bool) -> bool {
        let Some(_pass) = self.walkers.enter() else {
            return false;
        };
        let _guard = reclaim::pin();
        // SAFETY: pinned (retired nodes outlive the walk) and inside the tagged count
        // (teardown waits for us), as `iter` requires.
        for ptr in unsafe { self.stack.iter() } {
            // SAFETY: as above, the node stays allocated while we walk.
            if !visit(unsafe { node_ref(ptr) }, ptr) {
                break;
            }
        }
        true
    }

    /// Tombstones a node (if still pending) and hands it to the looper.
    pub(crate) fn tombstone(&self, node: &Node<T>, ptr: *mut Node<T>) -> bool {
        if !node.try_transition(REMOVED) {
            return false;
        }
        // SAFETY: `ptr` is the walked node `node` borrows (alive while the walk is
        // pinned), and we just won its tombstone, so we push it once.
        unsafe { self.freelist.push(ptr) };
        true
    }

    // ---- looper side ----

    /// Sweeps new nodes from the stack into the heaps, building back-links.
    #[inline(always)]
    pub(crate) fn sweep(&self, st: &mut LooperState<T>) {
        // Acquire: pairs with the posters' push CAS; through the release sequence on the
        // head, every node pushed below `top` is visible too.
        let top = self.stack.head(Ordering::Acquire);
        if top == st.swept_top {
            return;
        }
        // SAFETY: reachable from the head and not yet unlinked (only the looper unlinks,
        // and it unlinks only swept nodes), so alive.
        let first = unsafe { node_ref(top) };
        // Relaxed: written by the poster before its push, which we acquired.
        let below = first.next.load(Ordering::Relaxed);
        if below == st.swept_top {
            // One new node (the usual case while the looper keeps up).
            if !below.is_null() {
                // SAFETY: the last swept node: linked, so alive.
                unsafe { node_ref(below) }
                    .link
                    .store(top, Ordering::Relaxed);
            }
            self.take_in(st, top, first);
            st.swept_top = top;
            return;
        }
        self.sweep_many(st, top);
    }

    /// The sweep of more than one new node, from `top` down (out of line: the one-node
    /// sweep is the hot path).
    #[inline(never)]
    pub(crate) fn sweep_many(&self, st: &mut LooperState<T>, top: *mut Node<T>) {
        // Down: from the head to the last swept node, linking each node to the newer one.
        let mut cursor = top;
        let mut oldest = top;
        while cursor != st.swept_top {
            // SAFETY: reachable from the head and not yet unlinked (only the looper
            // unlinks, and it unlinks only swept nodes), so alive.
            let node = unsafe { node_ref(cursor) };
            // Relaxed: written by the poster before its push, which we acquired.
            let next = node.next.load(Ordering::Relaxed);
            if !next.is_null() {
                // SAFETY: `next` is unswept or the last swept node: linked, so alive.
                unsafe { node_ref(next) }
                    .link
                    .store(cursor, Ordering::Relaxed);
            }
            oldest = cursor;
            cursor = next;
        }
        // Up: from the oldest new node to the head through the back-links just written,
        // so sequence numbers follow pushes. A sweep is short while the looper keeps up
        // (its nodes are still in the cache); a long one reads its nodes a second time,
        // which costs less than keeping notes on the way down for every sweep.
        let mut cursor = oldest;
        loop {
            // SAFETY: a node of this sweep: linked, so alive.
            let node = unsafe { node_ref(cursor) };
            // Read before `take_in`: only the looper writes `link`, and not there.
            let newer = node.link.load(Ordering::Relaxed);
            self.take_in(st, cursor, node);
            if cursor == top {
                break;
            }
            cursor = newer;
        }
        st.swept_top = top;
    }

    /// Takes a newly swept node into its heap (or notes the quit, for the sentinel), in
    /// push order: sequence numbers follow pushes. A node tombstoned after its state is
    /// read here is still taken in; the freelist then takes it out again, as for any
    /// removal.
    #[inline(always)]
    pub(crate) fn take_in(&self, st: &mut LooperState<T>, ptr: *mut Node<T>, node: &Node<T>) {
        if ptr == self.sentinel {
            st.quit = self.quit.read();
        } else if node.state.load(Ordering::Relaxed) == PENDING {
            st.seq += 1;
            let when = node.when;
            let seq = if when == FRONT_OF_QUEUE {
                -st.seq
            } else {
                st.seq
            };
            let entry = Entry {
                when,
                seq,
                // The raw pointer (not a shared borrow): the node is freed through it
                // later.
                node: NonNull::new(ptr).expect("swept nodes are non-null"),
            };
            Self::heap(st, side_of(node)).push(entry);
        }
    }

    /// Unlinks a swept node from the stack in O(1).
    #[inline(always)]
    pub(crate) fn unlink(&self, st: &mut LooperState<T>, target: *mut Node<T>) {
        // SAFETY: the caller hands a linked (so alive) swept node.
        let node = unsafe { node_ref(target) };
        // Relaxed: `next` of a swept node is written only by the looper (or by its poster
        // before publication, which the sweep acquired).
        let next = node.next.load(Ordering::Relaxed);
        if node.link.load(Ordering::Relaxed).is_null() {
            // The topmost swept node: unlink it at the head unless someone pushed above.
            debug_assert_eq!(target, st.swept_top);
            if self.stack.replace_head(target, next) {
                st.swept_top = next;
                if !next.is_null() {
                    // SAFETY: `next` is linked, so alive.
                    unsafe { node_ref(next) }
                        .link
                        .store(ptr::null_mut(), Ordering::Relaxed);
                }
                return;
            }
            // New nodes sit above it: sweeping them gives it a back-link.
            self.sweep(st);
        }
        let prev = node.link.load(Ordering::Relaxed);
        debug_assert!(!prev.is_null());
        // SAFETY: `prev` is the newer neighbour, linked, so alive.
        let prev_node = unsafe { node_ref(prev) };
        // Release: pairs with walkers' Acquire loads of `next`.
        prev_node.next.store(next, Ordering::Release);
        if !next.is_null() {
            // SAFETY: `next` is linked, so alive.
            unsafe { node_ref(next) }
                .link
                .store(prev, Ordering::Relaxed);
        }
    }

    /// Takes the freelist, sweeps, and reclaims the tombstoned nodes taken. The freelist
    /// is taken first: a node on it was pushed on the stack before, so the sweep that
    /// follows has met it.
    #[inline(always)]
    pub(crate) fn sweep_and_reclaim(&self, st: &mut LooperState<T>) {
        if self.freelist.is_empty() {
            // Nothing removed (the usual case): as `take_all` finding the list empty.
            self.sweep(st);
            return;
        }
        self.sweep_and_reclaim_removed(st);
    }

    /// [`sweep_and_reclaim`](Self::sweep_and_reclaim) when removals wait on the freelist.
    #[inline(never)]
    pub(crate) fn sweep_and_reclaim_removed(&self, st: &mut LooperState<T>) {
        let mut removed = self.freelist.take_all();
        self.sweep(st);
        while !removed.is_null() {
            let ptr = removed;
            // SAFETY: a tombstoned node is freed only here, after leaving the freelist.
            let node = unsafe { node_ref(ptr) };
            // Relaxed: published by the freelist push we acquired.
            // SAFETY: as above, alive.
            removed = unsafe { node::free_next(ptr) }.load(Ordering::Relaxed);
            Self::heap(st, side_of(node)).remove(node);
            // SAFETY: the node is tombstoned (its remover won) and we are the looper: the
            // payload is ours to drop, once; it then leaves the list and is retired once.
            unsafe { self.discard(st, ptr) };
        }
    }

    /// Drops a dead node's payload, unlinks it and retires it.
    ///
    /// # Safety
    /// The node is linked, out of every heap, in state `REMOVED` with its payload still
    /// in place, and this is the only discard of it.
    pub(crate) unsafe fn discard(&self, st: &mut LooperState<T>, ptr: *mut Node<T>) {
        // SAFETY: by the contract the node is linked, so alive.
        let node = unsafe { node_ref(ptr) };
        debug_assert_eq!(node.state.load(Ordering::Relaxed), REMOVED);
        if node.is_message() {
            // SAFETY: by the contract the payload is in place and only we touch it.
            unsafe { node.drop_payload() };
        }
        self.unlink(st, ptr);
        // SAFETY: unlinked, out of the heaps, payload dropped, retired once.
        unsafe { st.reclaimer.retire(ptr) };
    }
}
