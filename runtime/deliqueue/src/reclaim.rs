//! When unlinked nodes may be freed: crossbeam-epoch normally; under loom and Miri, a
//! stand-in that keeps every retired node until the queue is dropped, which is
//! trivially safe. (crossbeam-epoch is not built for loom here, and crossbeam-epoch
//! 0.9 itself trips Miri's Stacked Borrows checks inside its own participant list, so
//! Miri checks the queue's own protocol with the stand-in.)
//!
//! The looper retires nodes in batches: it chains unlinked nodes through their
//! `link` (the back-link, unused once a node is unlinked; it shares the cache line the
//! looper has just written to claim the node) and hands a whole batch to the
//! epoch in one deferred function, pinning only then. Deferring later than the unlink
//! is only more conservative: the batch is freed after every thread pinned when it was
//! handed over has unpinned, and a thread pinned after the unlink cannot reach the node.
//! The looper itself needs no pin to touch nodes: only it retires them. Once freed by
//! the epoch, a batch goes back to the queue's [`NodePool`] for posters to reuse.

use marvin_sync::atomic::Ordering;
use marvin_sync::Arc;

use super::node::Node;
use super::pool::{free_chain, NodePool};

/// How many retired nodes the looper collects before handing them to the epoch.
const BATCH: usize = 128;

/// A pinned region: nodes reachable now stay allocated until it ends.
#[cfg(not(any(loom, miri)))]
pub struct Guard(#[allow(dead_code)] crossbeam_epoch::Guard);

#[cfg(any(loom, miri))]
pub struct Guard(());

/// Pins the current thread.
#[inline]
pub fn pin() -> Guard {
    #[cfg(not(any(loom, miri)))]
    return Guard(crossbeam_epoch::pin());
    #[cfg(any(loom, miri))]
    return Guard(());
}

/// The looper's retirement of unlinked nodes.
pub struct Reclaimer<T> {
    /// Retired nodes not yet handed over, chained through `link`, newest first.
    batch: *mut Node<T>,
    /// The oldest node of the batch (its chain's end).
    batch_last: *mut Node<T>,
    batch_len: usize,
    /// Where handed-over nodes go once unreachable, to be reused by posters.
    pool: Arc<NodePool<T>>,
    #[cfg(any(loom, miri))]
    kept: Vec<*mut Node<T>>,
}

impl<T> Reclaimer<T> {
    /// A reclaimer that recycles into `pool`.
    pub fn new(pool: Arc<NodePool<T>>) -> Self {
        Reclaimer {
            batch: std::ptr::null_mut(),
            batch_last: std::ptr::null_mut(),
            batch_len: 0,
            pool,
            #[cfg(any(loom, miri))]
            kept: Vec::new(),
        }
    }

    /// Recycles `node` once no thread that may still reach it is pinned.
    ///
    /// # Safety
    /// `node` came from `node::into_raw` or `node::init_carved`, is unlinked from the stack, off the freelist
    /// (taken) and out of every heap, its payload was moved out or dropped, and it is
    /// retired once.
    #[inline]
    pub unsafe fn retire(&mut self, node: *mut Node<T>) {
        // SAFETY: by the contract the node is alive and only the looper touches it now
        // (walkers may still read it, but never `link`).
        let node_ref = unsafe { &*node };
        // Relaxed: looper-only from now on.
        node_ref.link.store(self.batch, Ordering::Relaxed);
        if self.batch.is_null() {
            self.batch_last = node;
        }
        self.batch = node;
        self.batch_len += 1;
        if self.batch_len >= BATCH {
            self.flush();
        }
    }

    /// Hands the current batch over: back to the pool once every thread pinned now has
    /// unpinned.
    pub fn flush(&mut self) {
        let (first, last) = (self.batch, self.batch_last);
        let len = std::mem::take(&mut self.batch_len);
        self.batch = std::ptr::null_mut();
        self.batch_last = std::ptr::null_mut();
        if first.is_null() {
            return;
        }
        #[cfg(not(any(loom, miri)))]
        {
            self.pool.send_batch();
            let chain = Chain {
                first,
                last,
                len,
                pool: self.pool.clone(),
            };
            let guard = crossbeam_epoch::pin();
            // SAFETY: every node of the chain is unlinked, so only threads pinned now can
            // hold it; the epoch runs the hand-back after they unpin. The nodes hold no
            // payload, so running it on any thread is fine.
            unsafe { guard.defer_unchecked(move || chain.give()) };
            // Moves the deferred work along now rather than after many more pins, so
            // nodes come back to the pool while posting goes on.
            guard.flush();
        }
        #[cfg(any(loom, miri))]
        {
            let _ = (last, len, &self.pool);
            let mut cursor = first;
            while !cursor.is_null() {
                self.kept.push(cursor);
                // SAFETY: kept nodes stay allocated until `free_all`.
                cursor = unsafe { &*cursor }.link.load(Ordering::Relaxed);
            }
        }
    }

    /// Waits (a bounded while) for the batches handed to the epoch to come back to the
    /// pool, moving the epoch along from this thread: for the queue's drop, so that the
    /// pool is freed here and not by whichever thread runs the last hand-back (a looper,
    /// maybe: see `pool`'s module docs). Gives up after `ROUNDS` rounds if another
    /// thread stays pinned; those batches are then freed with the pool, wherever.
    pub fn wait_for_batches(&self) {
        #[cfg(not(any(loom, miri)))]
        {
            const ROUNDS: usize = 1_000;
            for _ in 0..ROUNDS {
                if self.pool.in_flight() == 0 {
                    return;
                }
                crossbeam_epoch::pin().flush();
                std::thread::yield_now();
            }
        }
    }

    /// Frees what is not yet handed over (and what the stand-in kept). Called when the
    /// queue is dropped, when no thread can reach any node.
    pub fn free_all(&mut self) {
        let chain = std::mem::replace(&mut self.batch, std::ptr::null_mut());
        self.batch_last = std::ptr::null_mut();
        self.batch_len = 0;
        // SAFETY: the queue is being dropped: nobody can reach the batch.
        unsafe { free_chain(chain) };
        #[cfg(any(loom, miri))]
        for node in self.kept.drain(..) {
            // SAFETY: the queue is being dropped: no thread can reach any node.
            unsafe { super::node::free(node) };
        }
    }
}

/// A retired batch on its way back to the pool (moved into the deferred function).
#[cfg(not(any(loom, miri)))]
struct Chain<T> {
    first: *mut Node<T>,
    last: *mut Node<T>,
    len: usize,
    pool: Arc<NodePool<T>>,
}

#[cfg(not(any(loom, miri)))]
impl<T> Chain<T> {
    fn give(self) {
        // SAFETY: the epoch runs this once no thread can reach the nodes; they hold no
        // payload and came from `node::into_raw` or `node::init_carved`.
        unsafe { self.pool.give_sent(self.first, self.last, self.len) };
    }
}

#[cfg(all(test, not(any(loom, miri))))]
mod tests {
    use super::*;
    use crate::message::MessageKey;
    use crate::node::{self, Kind};
    use crate::pool::Taken;

    #[test]
    fn waiting_for_batches_brings_every_retired_node_back_to_the_pool() {
        let pool = Arc::new(NodePool::<u64>::default());
        let mut reclaimer = Reclaimer::new(pool.clone());
        let key = MessageKey {
            target: 0,
            what: 0,
            obj: None,
        };
        let retired: Vec<_> = (0..BATCH + 3)
            .map(|_| node::into_raw(Node::<u64>::marker(0, Kind::Barrier, key)))
            .collect();
        for &node in &retired {
            // SAFETY: fresh nodes, never published, no payload, retired once.
            unsafe { reclaimer.retire(node) };
        }
        reclaimer.flush();
        reclaimer.wait_for_batches();
        assert_eq!(pool.in_flight(), 0, "both batches came back");
        let mut back = Vec::new();
        loop {
            match pool.take().expect("an idle pool always hands out") {
                Taken::Recycled(node) => back.push(node),
                Taken::Carved(slot) => {
                    // Dry: the pool carves. Build and free that node too.
                    let marker = Node::marker(0, Kind::Barrier, key);
                    // SAFETY: a freshly carved slot of `slab`, used once; then ours.
                    unsafe { node::free(node::init_carved(slot, marker)) };
                    break;
                }
            }
        }
        back.sort();
        let mut want = retired.clone();
        want.sort();
        assert_eq!(back, want, "the pool holds exactly the retired nodes");
        for node in back {
            // SAFETY: taken from the pool: ours, dead.
            unsafe { node::free(node) };
        }
    }
}
