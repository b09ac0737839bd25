//! Recycled nodes: the looper's retired batches come back here once no walker can reach
//! them (the epoch runs the hand-back, see [`super::reclaim`]), and posters take a node
//! from here before asking the allocator.
//!
//! Batches arrive on `incoming`, a push-only Treiber stack drained whole (no ABA: nothing
//! is popped singly from it). Takers pop singly from `owned`, a plain list that only the
//! holder of the `taking` flag touches; when it runs dry the holder swaps `incoming` in
//! whole. A poster that finds the flag held (another poster is taking) allocates
//! instead of waiting. The pool keeps at most [`CAP`] nodes.
//!
//! **Who frees.** Batches come back through the epoch, whose deferred functions run on
//! whichever thread collects: usually a looper, the latency-critical thread. Freeing
//! there takes the allocator's arena lock of the poster that allocated the node, and a
//! background poster preempted inside `malloc` holds it: the looper then waits for that
//! poster to be scheduled again, a priority inversion of many milliseconds (measured:
//! `marvin bench queue --only dispatch`, see `docs/benchmarks.md`). So handing back never
//! frees: a batch beyond the cap goes to `surplus`, another push-only stack, for a post
//! to deal with on its own time: a post that finds the pool dry takes the surplus in
//! whole (posts outrunning the looper would otherwise free those nodes and carve fresh
//! memory, page faults included, for the same messages), and a post frees it only once
//! it has waited unused through [`CAP`] posts (the pool never ran dry meanwhile, see
//! `Taker::surplus_unused`). Freeing it at the first post that found the pool full, as
//! before, freed it in the middle of bursts: batches come back in clumps, the pool is
//! full for a moment, the posts empty it within microseconds and then carved the same
//! number of fresh nodes. A queue idle after a burst so keeps that burst's surplus until
//! [`CAP`] more posts or its drop. Dropping the queue first waits (a bounded
//! while) for the batches still in the epoch ([`NodePool::in_flight`]), then frees what
//! is pooled on the dropping thread ([`NodePool::free_pooled`]); only if another thread
//! stays pinned past that wait are its last batches freed wherever the pool's last
//! reference goes.
//!
//! When the pool is dry, the flag holder carves a fresh node from its slab (see
//! [`super::slab`]) rather than asking the allocator for each one.

use crossbeam_utils::CachePadded;
use marvin_sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use marvin_sync::cell::UnsafeCell;

use super::node::{self, Node};
#[cfg(not(loom))]
use super::slab::Carver;

/// The most nodes a pool keeps; a batch handed back beyond it is freed.
pub const CAP: usize = 4096;

/// Dead nodes (no payload, unreachable) ready to be reused.
pub struct NodePool<T> {
    /// Batches handed back, chained through `link`.
    incoming: CachePadded<AtomicPtr<Node<T>>>,
    /// Nodes handed back so far (by count).
    given: CachePadded<AtomicUsize>,
    /// Batches beyond the cap, chained through `link`, for the next post to free.
    surplus: CachePadded<AtomicPtr<Node<T>>>,
    /// Nodes in `surplus` (a bound, like `given`).
    surplus_len: AtomicUsize,
    /// Batches on their way back through the epoch (see [`NodePool::in_flight`]).
    in_flight: AtomicUsize,
    /// The taker's side: the flag, the list it pops from and how many it took.
    taker: CachePadded<Taker<T>>,
}

/// A node handed to a poster.
pub enum Taken<T> {
    /// A dead node to build the new one in (see [`node::reuse`]).
    Recycled(*mut Node<T>),
    /// Uninitialised memory carved from a slab (see [`node::init_carved`]).
    Carved(*mut Node<T>),
}

struct Taker<T> {
    taking: AtomicBool,
    owned: UnsafeCell<*mut Node<T>>,
    /// The slab fresh nodes are carved from (not under loom, whose models keep to the
    /// pool's own protocol).
    #[cfg(not(loom))]
    carver: UnsafeCell<Carver<T>>,
    /// Written only by the flag holder; read by givers to bound the pool.
    taken: AtomicUsize,
    /// Flag holder only: the `taken` count at the first take that saw the current
    /// surplus unneeded, or [`NOT_SEEN`] (see [`Taker::surplus_unused`]).
    surplus_since: AtomicUsize,
}

/// `surplus_since`: no take has seen the current surplus yet.
const NOT_SEEN: usize = usize::MAX;

impl<T> Taker<T> {
    /// Called by the flag holder after each take, `waiting` telling whether a surplus was
    /// there and stayed (not adopted), `taken` being the count before the take: whether
    /// that surplus has now waited unused through [`CAP`] takes (the pool never ran dry
    /// meanwhile, or the take would have adopted it). Only then is it memory a burst left
    /// behind; a surplus that a stream of posts outrunning the looper is about to need
    /// is reused, not freed and carved again.
    fn surplus_unused(&self, waiting: bool, taken: usize) -> bool {
        // Relaxed: taker-only data, ordered by the flag.
        let since = self.surplus_since.load(Ordering::Relaxed);
        if !waiting {
            if since != NOT_SEEN {
                self.surplus_since.store(NOT_SEEN, Ordering::Relaxed);
            }
            return false;
        }
        if since == NOT_SEEN {
            self.surplus_since.store(taken, Ordering::Relaxed);
            return false;
        }
        if taken.wrapping_sub(since) < CAP {
            return false;
        }
        self.surplus_since.store(NOT_SEEN, Ordering::Relaxed);
        true
    }
}

// SAFETY: the pool holds only dead nodes (no payload) through raw pointers; `owned` and
// `carver` are touched only by the holder of `taking` (acquired and released around
// every access), everything else is atomic.
unsafe impl<T> Send for NodePool<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for NodePool<T> {}

impl<T> Default for NodePool<T> {
    fn default() -> Self {
        NodePool {
            incoming: CachePadded::new(AtomicPtr::new(std::ptr::null_mut())),
            given: CachePadded::new(AtomicUsize::new(0)),
            surplus: CachePadded::new(AtomicPtr::new(std::ptr::null_mut())),
            surplus_len: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            taker: CachePadded::new(Taker {
                taking: AtomicBool::new(false),
                owned: UnsafeCell::new(std::ptr::null_mut()),
                #[cfg(not(loom))]
                carver: UnsafeCell::new(Carver::default()),
                taken: AtomicUsize::new(0),
                surplus_since: AtomicUsize::new(NOT_SEEN),
            }),
        }
    }
}

impl<T> NodePool<T> {
    /// Takes a dead node to reuse, or else carves a fresh one, unless another thread is
    /// taking (the caller then allocates a node on its own). Pooled nodes go first, then
    /// the surplus (nodes that came back beyond the cap while posts were outrunning the
    /// looper: reusing them beats freeing them and carving fresh memory); a take that
    /// finds the surplus unused through [`CAP`] takes frees it instead.
    #[inline]
    pub fn take(&self) -> Option<Taken<T>> {
        let taker = &*self.taker;
        // Acquire: pairs with the previous holder's Release below, so its `owned` and
        // `taken` writes are visible.
        if taker.taking.swap(true, Ordering::Acquire) {
            return None;
        }
        // Relaxed: a bound for givers, nothing is published through it.
        let taken = taker.taken.load(Ordering::Relaxed);
        // Relaxed test first: no surplus (the usual case) costs a read of a line that
        // is rarely written.
        let surplus = !self.surplus.load(Ordering::Relaxed).is_null();
        let mut adopted = false;
        // SAFETY: we hold `taking`, so nobody else touches `owned` until we release it.
        let node = taker.owned.with_mut(|owned| unsafe {
            if (*owned).is_null() {
                // Relaxed test first: an empty pool costs no read-modify-write.
                if !self.incoming.load(Ordering::Relaxed).is_null() {
                    // Acquire: pairs with the givers' Release push, so the chain's
                    // links are visible.
                    *owned = self.incoming.swap(std::ptr::null_mut(), Ordering::Acquire);
                } else if surplus {
                    *owned = self.adopt_surplus();
                    adopted = true;
                }
            }
            let node = *owned;
            if !node.is_null() {
                // Relaxed: the link was published by the give we acquired.
                *owned = (*node).link.load(Ordering::Relaxed);
            }
            node
        });
        let result = if !node.is_null() {
            taker.taken.store(taken + 1, Ordering::Relaxed);
            Some(Taken::Recycled(node))
        } else {
            self.carve()
        };
        let free = taker.surplus_unused(surplus && !adopted, taken);
        // Release: pairs with the next holder's Acquire swap.
        taker.taking.store(false, Ordering::Release);
        if free {
            self.free_surplus();
        }
        result
    }

    /// Takes the surplus whole into the pool (its nodes now count as given). The caller
    /// holds `taking`.
    #[cold]
    fn adopt_surplus(&self) -> *mut Node<T> {
        // Acquire: pairs with the givers' Release push, so the chain's links are visible.
        let chain = self.surplus.swap(std::ptr::null_mut(), Ordering::Acquire);
        // Relaxed: a bound; a batch pushed between the two swaps is counted either way.
        let len = self.surplus_len.swap(0, Ordering::Relaxed);
        self.given.fetch_add(len, Ordering::Relaxed);
        chain
    }

    /// Frees the batches beyond the cap (a poster's work, see the module docs).
    #[cold]
    fn free_surplus(&self) {
        // Acquire: pairs with the givers' Release push, so the chain's links are visible.
        let chain = self.surplus.swap(std::ptr::null_mut(), Ordering::Acquire);
        // Relaxed: a bound, as in `adopt_surplus`.
        self.surplus_len.store(0, Ordering::Relaxed);
        // SAFETY: swapped out whole, the chain is ours alone; every node in it is dead
        // and came from `node::into_raw` or `node::init_carved`.
        unsafe { free_chain(chain) };
    }

    /// Counts a batch handed to the epoch, to come back through [`NodePool::give`].
    pub fn send_batch(&self) {
        // Relaxed: a count the dropping thread polls; the batch itself is published by
        // the epoch.
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// Batches handed to the epoch and not yet given back.
    pub fn in_flight(&self) -> usize {
        // Acquire: pairs with `give`'s Release decrement, so a batch counted back is
        // in the pool (or its surplus) for `free_pooled` to find.
        self.in_flight.load(Ordering::Acquire)
    }

    /// Frees every pooled node, the surplus and the carver's slab, now, on this thread.
    /// For the queue's drop and the pool's own: no poster can take any more (batches
    /// still in the epoch at the queue's drop are freed by the pool's).
    pub fn free_pooled(&self) {
        self.free_surplus();
        // Acquire: pairs with the givers' Release push.
        let incoming = self.incoming.swap(std::ptr::null_mut(), Ordering::Acquire);
        // SAFETY: swapped out whole: ours, dead nodes.
        unsafe { free_chain(incoming) };
        let taker = &*self.taker;
        // Acquire: as in `take`. Nobody takes any more, so the flag is free.
        if taker.taking.swap(true, Ordering::Acquire) {
            return;
        }
        let owned = taker.owned.with_mut(|owned| {
            // SAFETY: we hold `taking`.
            unsafe { std::mem::replace(&mut *owned, std::ptr::null_mut()) }
        });
        // SAFETY: taken out of `owned` under the flag: ours, dead nodes.
        unsafe { free_chain(owned) };
        #[cfg(not(loom))]
        self.taker.carver.with_mut(|carver| {
            // SAFETY: we hold `taking`, so nobody else touches the carver.
            unsafe { (*carver).abandon() }
        });
        // Release: pairs with any later holder's Acquire swap.
        taker.taking.store(false, Ordering::Release);
    }

    /// Carves a fresh node. The caller holds `taking`.
    #[inline]
    fn carve(&self) -> Option<Taken<T>> {
        #[cfg(not(loom))]
        {
            self.taker.carver.with_mut(|carver| {
                // SAFETY: the caller holds `taking`, so nobody else touches the carver.
                Some(Taken::Carved(unsafe { (*carver).carve() }))
            })
        }
        #[cfg(loom)]
        None
    }

    /// Hands back a chain of `len` dead nodes from `first` to `last`, linked through
    /// `link`; when the pool is full, leaves them for the next post to free. Never
    /// frees memory itself (it runs on loopers, see the module docs).
    ///
    /// # Safety
    /// Every node of the chain came from `node::into_raw` or `node::init_carved`, holds no
    /// payload and is unreachable by any other thread; the caller gives up the chain.
    pub unsafe fn give(&self, first: *mut Node<T>, last: *mut Node<T>, len: usize) {
        // Relaxed: only a bound; being off by a batch either way is harmless.
        let pooled = self
            .given
            .load(Ordering::Relaxed)
            .saturating_sub(self.taker.taken.load(Ordering::Relaxed));
        let stack = if pooled + len > CAP {
            self.surplus_len.fetch_add(len, Ordering::Relaxed);
            &self.surplus
        } else {
            self.given.fetch_add(len, Ordering::Relaxed);
            &self.incoming
        };
        // SAFETY: by the contract `last` is alive and ours.
        let last_ref = unsafe { &*last };
        let mut head = stack.load(Ordering::Relaxed);
        loop {
            // Relaxed: published by the CAS below.
            last_ref.link.store(head, Ordering::Relaxed);
            // Release: pairs with the taker's (or surplus freer's) Acquire swap.
            match stack.compare_exchange_weak(head, first, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return,
                Err(current) => head = current,
            }
        }
    }

    /// Gives back a batch that [`NodePool::send_batch`] counted.
    ///
    /// # Safety
    /// As for [`NodePool::give`].
    pub unsafe fn give_sent(&self, first: *mut Node<T>, last: *mut Node<T>, len: usize) {
        // SAFETY: forwarded contract.
        unsafe { self.give(first, last, len) };
        // Release: pairs with `in_flight`'s Acquire load.
        self.in_flight.fetch_sub(1, Ordering::Release);
    }
}

impl<T> Drop for NodePool<T> {
    fn drop(&mut self) {
        // Whatever the queue's drop left (batches given back after it): nobody can take
        // any more, so the `taking` flag is free.
        self.free_pooled();
    }
}

/// Frees a chain of dead nodes linked through `link`.
///
/// # Safety
/// Every node of the chain came from `node::into_raw` or `node::init_carved`, holds no
/// payload and is unreachable by any other thread; each is freed once, here.
pub unsafe fn free_chain<T>(mut cursor: *mut Node<T>) {
    while !cursor.is_null() {
        // SAFETY: by the contract the node is alive until freed just below.
        let next = unsafe { &*cursor }.link.load(Ordering::Relaxed);
        // SAFETY: by the contract, dead and unreachable; freed once.
        unsafe { node::free(cursor) };
        cursor = next;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::message::MessageKey;
    use crate::node::Kind;
    use std::sync::Arc;

    fn dead_node() -> *mut Node<u64> {
        let key = MessageKey {
            target: 0,
            what: 0,
            obj: None,
        };
        node::into_raw(Node::marker(0, Kind::Barrier, key))
    }

    /// Links `n` fresh nodes through `link`; returns (first, last).
    fn chain(n: usize) -> (*mut Node<u64>, *mut Node<u64>) {
        let nodes: Vec<_> = (0..n).map(|_| dead_node()).collect();
        for pair in nodes.windows(2) {
            // SAFETY: fresh nodes, ours.
            unsafe { &*pair[0] }.link.store(pair[1], Ordering::Relaxed);
        }
        (nodes[0], nodes[n - 1])
    }

    /// Takes a node: a recycled one as is; a carved one is built (as a barrier node) so
    /// that it can be freed like any other.
    fn take_any(pool: &NodePool<u64>) -> Option<(*mut Node<u64>, bool)> {
        let key = MessageKey {
            target: 0,
            what: 0,
            obj: None,
        };
        match pool.take()? {
            Taken::Recycled(node) => Some((node, true)),
            // SAFETY: a freshly carved slot, used once.
            Taken::Carved(slot) => Some((
                unsafe { node::init_carved(slot, Node::marker(0, Kind::Barrier, key)) },
                false,
            )),
        }
    }

    #[test]
    fn recycles_what_was_given_once_each_then_carves() {
        let pool = NodePool::<u64>::default();
        let (carved, recycled) = take_any(&pool).expect("an idle pool always hands out");
        assert!(!recycled, "an empty pool carves");
        let (first, last) = chain(5);
        // SAFETY: a fresh chain we give up.
        unsafe { pool.give(first, last, 5) };
        let mut taken: Vec<_> = (0..6).map(|_| take_any(&pool).unwrap()).collect();
        assert!(taken[..5].iter().all(|&(_, recycled)| recycled));
        assert!(!taken[5].1, "carves again once the given nodes are used up");
        assert_eq!(
            taken[5].0 as usize - carved as usize,
            std::mem::size_of::<Node<u64>>(),
            "carved nodes follow each other in memory"
        );
        taken.push((carved, false));
        let mut addresses: Vec<_> = taken.iter().map(|&(node, _)| node).collect();
        addresses.sort();
        addresses.dedup();
        assert_eq!(addresses.len(), 7, "no node handed out twice");
        for node in addresses {
            // SAFETY: taken from the pool: ours.
            unsafe { node::free(node) };
        }
    }

    #[test]
    fn a_dry_pool_reuses_the_surplus_before_carving() {
        let pool = NodePool::<u64>::default();
        let (first, last) = chain(CAP);
        // SAFETY: a fresh chain we give up.
        unsafe { pool.give(first, last, CAP) };
        let mut held = vec![take_any(&pool).unwrap()];
        let (first, last) = chain(3);
        // SAFETY: as above; CAP - 1 pooled plus 3 is beyond the cap: surplus.
        unsafe { pool.give(first, last, 3) };
        assert_eq!(pool.surplus.load(Ordering::Relaxed), first);
        loop {
            let (node, was_recycled) = take_any(&pool).unwrap();
            held.push((node, was_recycled));
            if !was_recycled {
                break;
            }
        }
        let recycled = held.iter().filter(|&&(_, recycled)| recycled).count();
        assert_eq!(
            recycled,
            CAP + 3,
            "every pooled and surplus node reused first"
        );
        assert!(pool.surplus.load(Ordering::Relaxed).is_null());
        for (node, _) in held {
            // SAFETY: taken from the pool: ours.
            unsafe { node::free(node) };
        }
    }

    #[test]
    fn keeps_at_most_the_cap_and_leaves_the_rest_for_a_poster_to_free() {
        let pool = NodePool::<u64>::default();
        let (first, last) = chain(CAP);
        // SAFETY: a fresh chain we give up.
        unsafe { pool.give(first, last, CAP) };
        let (first, last) = chain(3);
        // SAFETY: as above; the pool is full, so these wait as surplus.
        unsafe { pool.give(first, last, 3) };
        assert_eq!(
            pool.surplus.load(Ordering::Relaxed),
            first,
            "handing back never frees: the surplus waits for a post"
        );
        // Posts that never find the pool dry (each node comes back before the next post,
        // as with a looper keeping up): the surplus is not needed, and after CAP such
        // takes a post frees it.
        let mut takes = 0;
        while !pool.surplus.load(Ordering::Relaxed).is_null() {
            assert!(takes <= CAP, "the unused surplus is freed after CAP takes");
            let (node, was_recycled) = take_any(&pool).unwrap();
            assert!(was_recycled, "the pool never runs dry here");
            takes += 1;
            // SAFETY: taken from the pool: ours, dead; given back at once.
            unsafe { pool.give(node, node, 1) };
        }
        assert_eq!(takes, CAP + 1, "freed by the take after CAP unneeded ones");
        let mut recycled = 0;
        loop {
            let (node, was_recycled) = take_any(&pool).unwrap();
            // SAFETY: taken from the pool: ours.
            unsafe { node::free(node) };
            if !was_recycled {
                break;
            }
            recycled += 1;
        }
        assert_eq!(recycled, CAP, "the pool kept its cap");
    }

    #[test]
    fn posts_outrunning_the_looper_reuse_the_surplus_instead_of_freeing_it() {
        // The pool fills to its cap and more comes back while posts run ahead of the
        // looper: every post then needs a node, so none of those nodes is freed (and
        // fresh memory carved) while the pool still holds them.
        let pool = NodePool::<u64>::default();
        let (first, last) = chain(CAP);
        // SAFETY: a fresh chain we give up.
        unsafe { pool.give(first, last, CAP) };
        let (first, last) = chain(5);
        // SAFETY: as above; beyond the cap: surplus.
        unsafe { pool.give(first, last, 5) };
        let mut held = Vec::new();
        for _ in 0..CAP + 5 {
            let (node, was_recycled) = take_any(&pool).unwrap();
            assert!(was_recycled, "a pooled or surplus node before any carving");
            held.push(node);
        }
        let (carved, was_recycled) = take_any(&pool).unwrap();
        assert!(!was_recycled, "only a dry pool with no surplus carves");
        held.push(carved);
        for node in held {
            // SAFETY: taken from the pool: ours.
            unsafe { node::free(node) };
        }
    }

    /// A taken node on its way back to the test thread.
    struct Sent(*mut Node<u64>);
    // SAFETY: a dead node, owned by whoever holds it; only its address is read before the
    // test thread frees it.
    unsafe impl Send for Sent {}

    #[test]
    fn concurrent_takers_and_a_giver_never_share_a_node() {
        let rounds = if cfg!(miri) { 20 } else { 2_000 };
        let pool = Arc::new(NodePool::<u64>::default());
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let pool = pool.clone();
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    for _ in 0..rounds {
                        got.extend(take_any(&pool).map(|(node, _)| Sent(node)));
                    }
                    got
                })
            })
            .collect();
        for _ in 0..rounds / 2 {
            let (first, last) = chain(2);
            // SAFETY: a fresh chain we give up.
            unsafe { pool.give(first, last, 2) };
        }
        let mut all: Vec<_> = takers.into_iter().flat_map(|t| t.join().unwrap()).collect();
        let count = all.len();
        all.sort_by_key(|sent| sent.0 as usize);
        all.dedup_by_key(|sent| sent.0 as usize);
        assert_eq!(all.len(), count, "no node handed out twice");
        for sent in all {
            // SAFETY: taken from the pool: ours.
            unsafe { node::free(sent.0) };
        }
        // The rest is freed with the pool (the census would show a leak).
    }
}
