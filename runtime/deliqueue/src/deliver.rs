//! The looper's choice of the next message: the earlier top of its two heaps (only the
//! asynchronous one behind a sync barrier), claimed by one CAS from pending to
//! delivered, due ones first, the swept ones in order, and dropping what a quit leaves
//! in the future.

use std::ptr::NonNull;

use crate::heap::{self, Entry};
use crate::node::{Kind, Node, DELIVERED, REMOVED};
use crate::timeline::Timeline;
use crate::{node_ref, Clock, DeliQueue, LooperState, Message, Next, Side};

impl<T: Send + 'static, C: Clock> DeliQueue<T, C> {
    /// Pops tombstoned nodes off the top of a heap (the freelist reclaims them).
    #[inline(always)]
    pub(crate) fn clean_top(heap: &mut Timeline<T>) {
        while let Some(top) = heap.peek() {
            // SAFETY: nodes in a heap are alive.
            if unsafe { top.node.as_ref() }.is_pending() {
                break;
            }
            heap.pop();
        }
    }

    /// The first deliverable node: the earlier heap top, or only the asynchronous one
    /// when a sync barrier is at the front.
    #[inline(always)]
    pub(crate) fn candidate(st: &mut LooperState<T>) -> Option<(Side, Entry<T>)> {
        if st.async_heap.is_empty() {
            // No asynchronous message (the usual case): the synchronous front, unless it
            // is a barrier, which holds back every synchronous message.
            Self::clean_top(&mut st.sync_heap);
            let sync = *st.sync_heap.peek()?;
            // SAFETY: nodes in a heap are alive.
            if unsafe { sync.node.as_ref() }.kind == Kind::Barrier {
                return None;
            }
            return Some((Side::Sync, sync));
        }
        Self::clean_top(&mut st.sync_heap);
        Self::clean_top(&mut st.async_heap);
        let sync = st.sync_heap.peek().copied();
        let asynchronous = st.async_heap.peek().copied();
        match (sync, asynchronous) {
            // SAFETY: nodes in a heap are alive.
            (Some(s), a) if unsafe { s.node.as_ref() }.kind == Kind::Barrier => {
                a.map(|a| (Side::Async, a))
            }
            (Some(s), Some(a)) if heap::compare(&a, &s) < 0 => Some((Side::Async, a)),
            (Some(s), _) => Some((Side::Sync, s)),
            (None, a) => a.map(|a| (Side::Async, a)),
        }
    }

    /// Claims and hands out the first message due now, if any.
    #[inline(always)]
    pub(crate) fn take_due(&self, st: &mut LooperState<T>) -> Option<Next<T>> {
        loop {
            let (side, entry) = Self::candidate(st)?;
            if entry.when > st.now {
                // Everything swept so far was posted before this reading.
                st.now = self.clock.now();
                if entry.when > st.now {
                    return None;
                }
            }
            if let Some(next) = self.claim(st, side, entry) {
                return Some(next);
            }
        }
    }

    /// The fast path of `next`: hands out the first swept message without looking for
    /// newer posts, when none can come before it. That holds when it is due by the
    /// looper's latest clock reading and at or before the delivery bound, and no post
    /// flagged news: a post due at or before the bound flags news (see
    /// [`wake::Waker::flag_if_bounded`]), and one due after it comes after this message
    /// in (due time, sequence) order. The quit sentinel flags news too.
    #[inline(always)]
    pub(crate) fn deliver_swept(&self, st: &mut LooperState<T>) -> Option<Next<T>> {
        if st.quit.is_some() || self.waker.news() {
            return None;
        }
        loop {
            let (side, entry) = Self::candidate(st)?;
            if entry.when > st.bound || entry.when > st.now {
                return None;
            }
            if let Some(next) = self.claim(st, side, entry) {
                return Some(next);
            }
        }
    }

    /// After a sweep: publishes the latest clock reading as the delivery bound when the
    /// first swept message is due but beyond the current bound, so that the next calls
    /// of `next` deliver what is swept and due without sweeping ([`Self::deliver_swept`]).
    /// Then re-checks the head with a read-modify-write, sweeping what landed meanwhile,
    /// until it holds: from there on every post reads this bound (see
    /// [`wake::Waker::publish_bound`]).
    ///
    /// Only worth it with a second swept node: the first is delivered now anyway, and
    /// a looper that keeps up with its posters would pay a clock read, a store to a line
    /// posters read and a read-modify-write on the head for every message.
    #[inline(always)]
    pub(crate) fn extend_bound(&self, st: &mut LooperState<T>) {
        if st.sync_heap.len() + st.async_heap.len() < 2 {
            return;
        }
        let Some((_, entry)) = Self::candidate(st) else {
            return;
        };
        if entry.when <= st.bound {
            return;
        }
        if entry.when > st.now {
            st.now = self.clock.now();
            if entry.when > st.now {
                return;
            }
        }
        st.bound = st.now;
        self.waker.publish_bound(st.bound);
        while !self.stack.head_unchanged(st.swept_top) {
            self.sweep(st);
        }
    }

    /// Pops `entry` (the candidate of `side`) and claims it; the message, unless a
    /// remover won the node first (the freelist then reclaims it).
    #[inline(always)]
    pub(crate) fn claim(
        &self,
        st: &mut LooperState<T>,
        side: Side,
        entry: Entry<T>,
    ) -> Option<Next<T>> {
        Self::heap(st, side).pop();
        // SAFETY: just taken from the heap; linked, so alive.
        let node = unsafe { node_ref(entry.node.as_ptr()) };
        if !node.try_transition(DELIVERED) {
            return None;
        }
        // SAFETY: we won the claim; the payload is in place and ours alone.
        let payload = unsafe { node.take_payload() };
        let message = Message {
            key: node.key(),
            asynchronous: node.kind == Kind::Async,
            payload,
        };
        let when = node.when;
        self.unlink(st, entry.node.as_ptr());
        // SAFETY: unlinked, out of the heaps, payload moved out, retired once.
        unsafe { st.reclaimer.retire(entry.node.as_ptr()) };
        Some(Next::Message { when, message })
    }

    /// Quit-safely: drops every node due after `at`.
    pub(crate) fn drop_future(&self, st: &mut LooperState<T>, at: u64) {
        let doomed: Vec<(Side, NonNull<Node<T>>)> = st
            .sync_heap
            .iter()
            .map(|e| (Side::Sync, e))
            .chain(st.async_heap.iter().map(|e| (Side::Async, e)))
            .filter(|(_, e)| e.when > at)
            .map(|(side, e)| (side, e.node))
            .collect();
        for (side, ptr) in doomed {
            // SAFETY: in a heap, so alive.
            let node = unsafe { node_ref(ptr.as_ptr()) };
            if !node.try_transition(REMOVED) {
                continue; // a remover won: the freelist reclaims it
            }
            Self::heap(st, side).remove(node);
            // SAFETY: we won the tombstone, so the payload is ours; out of the heap now.
            unsafe { self.discard(st, ptr.as_ptr()) };
        }
    }
}
