//! DeliQueue: Android 17's lock-free message queue, and the trait it shares with the
//! legacy queue ([`LegacyQueue`]). The loop over it is the app's main looper
//! (`app/src/messages.rs`, the one message loop of the project): it takes messages with
//! [`MessageQueue::next`] and sleeps in [`MessageQueue::wait`], as Android's
//! `Looper.loop()` does over `MessageQueue.next()`.
//!
//! The crate stands alone: it knows nothing of marvin's objects or heap, and takes its
//! atomics, cells, threads and futex from `marvin-sync`, so that under `cfg(loom)` the
//! same code is model-checked (`tests/loom_deliqueue.rs`).
//!
//! How it works (the design Android 17's `MessageQueue` published, in Rust):
//! - **Post** ([`stack`]): any thread pushes a node on a Treiber stack with one CAS, then
//!   wakes the looper only if the message is due before the looper's published wake-up
//!   time ([`wake`]). A post that finds that time past by more than the timer slack
//!   (the looper's timer fired and it has not run since, waiting for a CPU) yields the
//!   CPU once; posters never block on the queue, so otherwise the looper waits for a
//!   running poster's slice to end.
//! - **Sweep** ([`sweep`]; delivery in [`deliver`]): only the looper walks the stack
//!   from the head down to the last node it already swept, building back-links (`link`)
//!   and inserting each new node into a
//!   min-heap it owns ([`heap`]), ordered by (due time, insert sequence) with the
//!   branchless comparator. Sequence numbers follow push order; front-of-queue posts
//!   (due time 0) get negative ones, so they run first and last-in first-out. Nodes
//!   that arrive already in order skip the heap: they are appended to a sorted run
//!   beside it ([`timeline`]), and the looper takes the earlier of the two fronts.
//!   Asynchronous messages live in a second heap, so a sync barrier at the front of
//!   the synchronous heap holds back only synchronous messages.
//! - **Delivery bound** ([`wake`]): the head is one cache line that every post writes, so
//!   `next` reads it only when it must. After a sweep that leaves more than one message
//!   due, the looper publishes its latest clock reading as a bound and re-checks the head
//!   with a read-modify-write (sweeping what landed meanwhile) until that holds. Until
//!   its next sweep it then delivers swept messages due at or before the bound without
//!   reading the head: a post due at or before the bound (a front-of-queue post, one for
//!   a time already past, a barrier) flags news after its push, which sends the next
//!   `next` to sweep first; any other post is due later and comes after those messages
//!   anyway. Posters read the bound on the line they already read for the looper's
//!   wake-up time. While the poster runs ahead, the looper so takes messages in batches
//!   and the head's line stays with the poster.
//! - **Unlink**: with back-links, the looper unlinks any node in O(1): by rewriting the
//!   newer node's `next`, or, for the topmost node, by a CAS on the head (on failure it
//!   sweeps the newly pushed nodes first, which gives the node a back-link).
//! - **Remove** (any thread): read the head once, walk `next` with plain loads, CAS a
//!   matching node's state from `PENDING` to `REMOVED` (a tombstone), push it on the
//!   [`freelist`]; the looper drains the freelist, drops the payload, unlinks the node.
//!   The looper claims a message with the same CAS (to `DELIVERED`) before handing it
//!   out, so a message is run or removed, never both.
//! - **Memory** ([`reclaim`]): unlinked nodes are retired in batches through
//!   crossbeam-epoch and, only once no walker can still reach them, go back to a node
//!   pool ([`pool`]) that posts take from; when it is dry, a post carves a fresh node
//!   from a slab of nodes ([`slab`]) rather than calling the allocator for each one.
//!   The looper never frees node memory while the queue lives: freeing takes the
//!   allocator lock of the poster that allocated it, which a preempted background
//!   poster may hold (see [`pool`]); posts free what the pool cannot keep. A
//!   post reads the clock (a time-stamp-counter read, [`clock`]) after getting its node,
//!   just before the push, so the due time is never older than the push by more than a
//!   few instructions.
//! - **Counting**: `pending` walks the list like `has` (no shared counter on the post
//!   path). The looper keeps its latest clock reading and reads the clock again only
//!   when the first message is not due by then (clocks never go backward).
//! - **Quit** ([`quit`]): the first quit request pushes a sentinel node on the stack;
//!   every later post sees it on top and fails, handing the message back. Quit drops
//!   everything; quit-safely delivers what was due when it was called. Before tearing
//!   down, the looper closes a tagged count and waits for every walker to leave.
//!
//! Payloads: a [`Message`]'s payload is owned by the queue and dropped exactly once:
//! moved out when delivered, or dropped by the looper when a removed node is reclaimed,
//! at quit, at teardown or when the queue is dropped. Other threads only ever see keys.
//!
//! The looper side ([`MessageQueue::next`], [`MessageQueue::wait`]) may be called from
//! any one thread at a time (calls from two threads at once panic); the loop hands over
//! from one thread to another safely.
//!
//! # Surface
//!
//! Public modules: none. The queue [`DeliQueue`] and the trait it shares with
//! [`LegacyQueue`] ([`MessageQueue`]); messages ([`Message`], [`MessageKey`],
//! [`KeyFilter`], [`Next`], [`BarrierToken`], [`FRONT_OF_QUEUE`]) and their errors
//! ([`PostError`], [`QueueClosed`]); the clocks ([`Clock`], [`MonotonicClock`],
//! [`InstantClock`], [`VirtualClock`]); the wake-up's lateness bound [`OVERDUE_NS`] and
//! the node census [`live_node_count`].
//!
//! Tests: `cargo test -p marvin-deliqueue` runs the unit tests, the differential test
//! against the legacy queue (`tests/deliqueue_diff.rs`) and the stress test
//! (`tests/deliqueue_stress.rs`), with the `node-census` feature on so that the stress
//! test checks that no node leaks. The loom models: `RUSTFLAGS="--cfg loom" cargo test -p marvin-deliqueue
//! --release --test loom_deliqueue`. Miri over the unit tests:
//! `MIRIFLAGS="-Zmiri-disable-isolation" cargo +nightly miri test -p marvin-deliqueue --lib`.

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its error
// handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]
// This page tours the queue's private parts; `cargo doc --document-private-items` links them.
#![allow(rustdoc::private_intra_doc_links)]
// Under loom the pool carves no slabs (a node comes from the allocator, which loom
// tracks) and the batch paths of the real-thread build are not modelled: with the parts
// private, those are dead code in the loom build only; the ordinary build keeps the lint.
#![cfg_attr(loom, allow(dead_code))]

// The queue's own parts are private: its users need the queue, its messages and the
// clock, the legacy queue it is measured against, and the wake-up's lateness bound
// (`OVERDUE_NS`, which the loom model checks), all re-exported below.
mod clock;
mod deliver;
mod freelist;
mod heap;
mod legacy_queue;
mod message;
mod node;
mod pool;
mod quit;
mod reclaim;
mod slab;
mod stack;
mod sweep;
mod timeline;
mod wake;

use std::ptr;
use std::time::Duration;

use crossbeam_utils::CachePadded;
use marvin_sync::atomic::{AtomicBool, AtomicU64, Ordering};
use marvin_sync::cell::UnsafeCell;
use marvin_sync::Arc;

pub use clock::{Clock, InstantClock, MonotonicClock, VirtualClock};
pub use legacy_queue::LegacyQueue;
pub use message::{
    BarrierToken, KeyFilter, Message, MessageKey, MessageQueue, Next, PostError, QueueClosed,
    FRONT_OF_QUEUE,
};

use freelist::FreeList;
use message::delay_nanos;
use node::{Kind, Node, DELIVERED};
use pool::{NodePool, Taken};
use quit::{QuitMode, QuitRequest, TaggedCount};
use reclaim::Reclaimer;
use stack::Stack;
use timeline::Timeline;
use wake::Waker;
pub use wake::OVERDUE_NS;

/// How many DeliQueue nodes (in every queue, retired ones included) are allocated now;
/// `None` unless built with the `node-census` feature (the crate's tests turn it on).
pub fn live_node_count() -> Option<usize> {
    #[cfg(feature = "node-census")]
    return Some(node::LIVE_NODES.load(std::sync::atomic::Ordering::Relaxed));
    #[cfg(not(feature = "node-census"))]
    None
}

/// The lock-free message queue. See the crate docs.
pub struct DeliQueue<T: Send + 'static, C: Clock = MonotonicClock> {
    stack: Stack<T>,
    freelist: FreeList<T>,
    waker: Waker,
    walkers: TaggedCount,
    /// Recycled nodes for posts (fed by the looper's reclaimer through the epoch).
    pool: Arc<NodePool<T>>,
    quit: QuitRequest,
    /// The quit sentinel, allocated up front; owned by the queue, pushed at most once.
    sentinel: *mut Node<T>,
    next_barrier: AtomicU64,
    /// The looper's fields sit on their own cache lines: posters never read them.
    looper_busy: CachePadded<AtomicBool>,
    looper: CachePadded<UnsafeCell<LooperState<T>>>,
    clock: C,
}

// SAFETY: every field shared between threads is an atomic, except `looper` (only touched
// while holding `looper_busy`, which gives the looper exclusive access and orders hand-
// overs) and the raw node pointers, whose nodes follow the protocols documented in the
// submodules. Payloads move between threads (posted on one, delivered or dropped on the
// looper), hence `T: Send`; no `&T` is ever shared, so `T: Sync` is not needed.
unsafe impl<T: Send + 'static, C: Clock> Send for DeliQueue<T, C> {}
// SAFETY: as above; shared access goes through atomics or the looper guard.
unsafe impl<T: Send + 'static, C: Clock> Sync for DeliQueue<T, C> {}

/// What only the looper touches.
struct LooperState<T> {
    /// The topmost node already swept (the head as of the last sweep, after unlinks).
    swept_top: *mut Node<T>,
    sync_heap: Timeline<T>,
    async_heap: Timeline<T>,
    /// Insert sequence counter (push order of swept nodes).
    seq: i64,
    /// The latest clock reading (the clock never goes back, so a node due by then is
    /// due now: the looper reads the clock only when the first node is not).
    now: u64,
    /// The delivery bound last published (see [`DeliQueue::deliver_swept`]).
    bound: u64,
    /// Set when the sweep meets the quit sentinel.
    quit: Option<QuitMode>,
    /// Quit-safely already dropped the messages due after the quit time.
    quit_applied: bool,
    torn_down: bool,
    reclaimer: Reclaimer<T>,
}

impl<T: Send + 'static> DeliQueue<T, MonotonicClock> {
    /// An empty queue on the monotonic clock.
    pub fn new() -> Self {
        DeliQueue::with_clock(MonotonicClock::new())
    }
}

impl<T: Send + 'static> Default for DeliQueue<T, MonotonicClock> {
    fn default() -> Self {
        DeliQueue::new()
    }
}

/// Which heap a node belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Sync,
    Async,
}

fn side_of<T>(node: &Node<T>) -> Side {
    if node.kind == Kind::Async {
        Side::Async
    } else {
        Side::Sync
    }
}

/// Borrows a node.
///
/// # Safety
/// The node is alive for `'a`: the looper uses it while it is linked, in a heap or on
/// the freelist it has taken, all of which keep it allocated until the looper retires it.
#[inline(always)]
unsafe fn node_ref<'a, T>(node: *mut Node<T>) -> &'a Node<T> {
    // SAFETY: by the contract.
    unsafe { &*node }
}

impl<T: Send + 'static, C: Clock> DeliQueue<T, C> {
    /// An empty queue reading time from `clock`.
    pub fn with_clock(clock: C) -> Self {
        let no_key = MessageKey {
            target: 0,
            what: 0,
            obj: None,
        };
        let pool = Arc::new(NodePool::default());
        DeliQueue {
            stack: Stack::default(),
            freelist: FreeList::default(),
            waker: Waker::default(),
            walkers: TaggedCount::default(),
            pool: pool.clone(),
            quit: QuitRequest::default(),
            sentinel: node::into_raw(Node::marker(0, Kind::Sentinel, no_key)),
            next_barrier: AtomicU64::new(1),
            looper_busy: CachePadded::new(AtomicBool::new(false)),
            looper: CachePadded::new(UnsafeCell::new(LooperState {
                swept_top: ptr::null_mut(),
                sync_heap: Timeline::default(),
                async_heap: Timeline::default(),
                seq: 0,
                now: 0,
                bound: 0,
                quit: None,
                quit_applied: false,
                torn_down: false,
                reclaimer: Reclaimer::new(pool),
            })),
            clock,
        }
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Runs `f` with exclusive access to the looper state.
    #[inline(always)]
    fn with_looper<R>(&self, f: impl FnOnce(&mut LooperState<T>) -> R) -> R {
        // Acquire: pairs with the Release store below by the previous looper call, so the
        // looper state it left is visible here, even on another thread.
        if self.looper_busy.swap(true, Ordering::Acquire) {
            panic!("DeliQueue: next/wait called from two threads at once");
        }
        struct Release<'a>(&'a AtomicBool);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                // Release: pairs with the Acquire swap above.
                self.0.store(false, Ordering::Release);
            }
        }
        let _release = Release(&self.looper_busy);
        // SAFETY: `looper_busy` was false and is now ours, so no other reference to the
        // looper state exists until `_release` drops after `f` returns.
        self.looper.with_mut(|state| f(unsafe { &mut *state }))
    }

    fn heap(st: &mut LooperState<T>, side: Side) -> &mut Timeline<T> {
        match side {
            Side::Sync => &mut st.sync_heap,
            Side::Async => &mut st.async_heap,
        }
    }

    /// Places `node` in a recycled node, or in a fresh allocation.
    #[inline]
    fn new_node(&self, node: Node<T>) -> *mut Node<T> {
        match self.pool.take() {
            // SAFETY: a node from the pool is dead (no payload, unreachable) and ours.
            Some(Taken::Recycled(slot)) => unsafe { node::reuse(slot, node) },
            // SAFETY: a freshly carved slot of `slab`, used once.
            Some(Taken::Carved(slot)) => unsafe { node::init_carved(slot, node) },
            None => node::into_raw(node),
        }
    }

    fn push_node(&self, node: *mut Node<T>) -> bool {
        // SAFETY: `node` is freshly allocated by the caller and not yet published.
        unsafe { self.stack.push(node, self.sentinel) }.is_ok()
    }

    /// Tears the queue down: waits for walkers to leave, then drops every payload still
    /// in place and frees every node still linked.
    fn teardown(&self, st: &mut LooperState<T>) {
        self.walkers.close_and_drain();
        // Nobody can reach a node now: walkers are out for good and posters never
        // dereference nodes. Free the list in place.
        let mut cursor = self.stack.head(Ordering::Acquire);
        while !cursor.is_null() {
            // SAFETY: linked, so alive; after this step nothing else points to it.
            let node = unsafe { node_ref(cursor) };
            let next = node.next.load(Ordering::Relaxed);
            if cursor == self.sentinel {
                node.next.store(ptr::null_mut(), Ordering::Relaxed);
            } else {
                let state = node.state.load(Ordering::Relaxed);
                debug_assert_ne!(state, DELIVERED, "delivered nodes are unlinked at once");
                if node.is_message() {
                    // SAFETY: a linked node's payload is in place (delivered and
                    // reclaimed nodes leave the list), and walkers are gone.
                    unsafe { node.drop_payload() };
                }
                // SAFETY: unlinked from everything (the whole list goes), freed once.
                unsafe { node::free(cursor) };
            }
            cursor = next;
        }
        st.sync_heap.clear();
        st.async_heap.clear();
        self.freelist.clear();
        st.swept_top = self.stack.head(Ordering::Relaxed);
        st.torn_down = true;
    }

    fn request_quit(&self, mode: QuitMode) {
        if self.quit.request(mode) {
            // SAFETY: the sentinel is pushed once (only the first request gets here), it
            // never carries a payload, and the queue owns it. It is not on the stack yet,
            // so the "sentinel on top" check cannot refuse it.
            let pushed = unsafe { self.stack.push(self.sentinel, self.sentinel) };
            debug_assert!(pushed.is_ok());
            // The looper sweeps (and meets the sentinel) before it delivers again.
            self.waker.flag_news();
            // Nothing lands below the sentinel any more: tombstone what quit drops now,
            // so `pending`, `has` and `remove` see the quit at once (the looper drops
            // the payloads, racing fairly with it through the same CAS).
            let keep_until = match mode {
                QuitMode::Now => None,
                QuitMode::Safely { at } => Some(at),
            };
            self.walk(|node, ptr| {
                if node.kind != Kind::Sentinel && keep_until.is_none_or(|at| node.when > at) {
                    self.tombstone(node, ptr);
                }
                true
            });
            self.waker.wake();
        }
    }

    /// Spins with backoff while nothing new arrives; true when something did (a post,
    /// a removal or a wake request). It never yields the CPU: a looper that yields stays
    /// runnable on its CPU, so a poster that started on the same CPU gets it for a whole
    /// slice while the other CPU idles, and the looper then meets tens of thousands of
    /// messages at once (measured: see `docs/benchmarks.md`, "The delivery bound"). A
    /// looper that sleeps instead is woken by the first post, and the wake-up puts it on
    /// an idle CPU. Not under loom, where it would only add states.
    fn spin_for_news(&self, swept_top: *mut Node<T>) -> bool {
        #[cfg(not(loom))]
        for step in 0..=6u32 {
            let news = self.stack.head(Ordering::Relaxed) != swept_top
                || !self.freelist.is_empty()
                || self.waker.has_request();
            if news {
                return true;
            }
            if step < 6 {
                for _ in 0..1u32 << step {
                    std::hint::spin_loop();
                }
            }
        }
        let _ = swept_top;
        false
    }

    /// Posts a message due `delay_ns` after the clock reading taken just before the push:
    /// the node is made first, so a poster preempted while allocating does not post a
    /// message that is already late when the looper first sees it.
    #[inline(always)]
    fn post_after(&self, delay_ns: u64, message: Message<T>) -> Result<(), PostError<T>> {
        let node = self.new_node(Node::message(0, message));
        let when = self.clock.now().saturating_add(delay_ns);
        // SAFETY: the node is not published yet: this thread alone can reach it.
        unsafe { (*node).when = when };
        self.publish_message(node)
    }

    /// Pushes an unpublished message node and wakes the looper if it is due earlier than
    /// the looper's sleep (yielding once if the looper is overdue); after quit the
    /// message comes back in the error.
    #[inline(always)]
    fn publish_message(&self, node: *mut Node<T>) -> Result<(), PostError<T>> {
        // Read before the push: once published, the node may be delivered and freed.
        // SAFETY: not published yet, so alive and ours.
        let when = unsafe { node_ref(node) }.when;
        if self.push_node(node) {
            if self.waker.notify_if_earlier(when, || self.clock.now()) {
                make_way();
            }
            return Ok(());
        }
        // SAFETY: the push failed, so the node was never published: it is still ours.
        let node_ref = unsafe { node_ref(node) };
        // SAFETY: an unpublished message node: its payload is in place and ours.
        let payload = unsafe { node_ref.take_payload() };
        let message = Message {
            key: node_ref.key(),
            asynchronous: node_ref.kind == Kind::Async,
            payload,
        };
        // SAFETY: never published, payload moved out, freed once.
        unsafe { node::free(node) };
        Err(PostError(message))
    }

    /// The number of nodes the looper holds in its heaps (for tests and diagnostics).
    pub fn swept_len(&self) -> usize {
        self.with_looper(|st| st.sync_heap.len() + st.async_heap.len())
    }
}

/// A poster found the looper overdue: its timer fired a while ago and it has not run
/// since, so it waits for a CPU, which posters never give up on their own (they do not
/// block on the queue). Yields once; out of line, off the post path.
#[cold]
#[inline(never)]
fn make_way() {
    marvin_sync::thread::yield_now();
}

impl<T: Send + 'static, C: Clock> MessageQueue<T> for DeliQueue<T, C> {
    fn now(&self) -> u64 {
        self.clock.now()
    }

    fn post_at(&self, when: u64, message: Message<T>) -> Result<(), PostError<T>> {
        self.publish_message(self.new_node(Node::message(when, message)))
    }

    fn post_delayed(&self, delay: Duration, message: Message<T>) -> Result<(), PostError<T>> {
        self.post_after(delay_nanos(delay), message)
    }

    fn post(&self, message: Message<T>) -> Result<(), PostError<T>> {
        self.post_after(0, message)
    }

    fn post_sync_barrier(&self, when: u64) -> Result<BarrierToken, QueueClosed> {
        // Relaxed: tokens need only be unique.
        let token = self.next_barrier.fetch_add(1, Ordering::Relaxed);
        let key = MessageKey {
            target: 0,
            what: token as i64,
            obj: None,
        };
        let node = self.new_node(Node::marker(when, Kind::Barrier, key));
        if self.push_node(node) {
            // A barrier due at or before the delivery bound holds back swept messages.
            self.waker.flag_if_bounded(when);
            Ok(BarrierToken(token))
        } else {
            // SAFETY: never published, still ours, no payload.
            unsafe { node::free(node) };
            Err(QueueClosed)
        }
    }

    fn remove_sync_barrier(&self, token: BarrierToken) -> bool {
        let mut found = false;
        self.walk(|node, ptr| {
            if node.kind == Kind::Barrier && node.key().what == token.0 as i64 {
                found = self.tombstone(node, ptr);
                return false;
            }
            true
        });
        if found {
            // Held-back messages may be due now.
            self.waker.wake();
        }
        found
    }

    fn remove(&self, filter: KeyFilter<'_>) -> usize {
        let mut removed = 0;
        self.walk(|node, ptr| {
            if node.is_message()
                && node.is_pending()
                && filter(&node.key())
                && self.tombstone(node, ptr)
            {
                removed += 1;
            }
            true
        });
        removed
    }

    fn has(&self, filter: KeyFilter<'_>) -> bool {
        let mut found = false;
        self.walk(|node, _| {
            found = node.is_message() && node.is_pending() && filter(&node.key());
            !found
        });
        found
    }

    fn quit(&self) {
        self.request_quit(QuitMode::Now);
    }

    fn quit_safely(&self) {
        self.request_quit(QuitMode::Safely {
            at: self.clock.now(),
        });
    }

    fn is_quitting(&self) -> bool {
        self.quit.requested()
    }

    fn wake(&self) {
        self.waker.wake();
    }

    fn pending(&self) -> usize {
        // Counted by walking (no shared counter on the post path): the pending message
        // nodes still linked. Delivered nodes are unlinked at once; removed ones are no
        // longer pending.
        let mut count = 0;
        self.walk(|node, _| {
            count += usize::from(node.is_message() && node.is_pending());
            true
        });
        count
    }

    fn is_empty(&self) -> bool {
        !self.has(&|_| true)
    }

    fn next(&self) -> Next<T> {
        self.with_looper(|st| {
            if st.torn_down {
                return Next::Quit;
            }
            if let Some(next) = self.deliver_swept(st) {
                return next;
            }
            self.waker.take_news();
            self.sweep_and_reclaim(st);
            match st.quit {
                Some(QuitMode::Now) => {
                    self.teardown(st);
                    return Next::Quit;
                }
                Some(QuitMode::Safely { at }) if !st.quit_applied => {
                    st.quit_applied = true;
                    self.drop_future(st, at);
                }
                _ => {}
            }
            if st.quit.is_none() {
                self.extend_bound(st);
            }
            if let Some(next) = self.take_due(st) {
                return next;
            }
            if st.quit.is_some() {
                self.teardown(st);
                return Next::Quit;
            }
            Next::Idle
        })
    }

    fn wait(&self) {
        self.with_looper(|st| {
            if st.torn_down {
                return;
            }
            let mut spun = false;
            let (snapshot, deadline) = loop {
                let snapshot = self.waker.snapshot();
                if self.waker.take_request() {
                    return;
                }
                self.sweep_and_reclaim(st);
                let deadline = Self::candidate(st).map_or(u64::MAX, |(_, e)| e.when);
                let now = self.clock.now();
                st.now = now;
                if st.quit.is_some() || deadline <= now {
                    return;
                }
                // Spin a little first (as channel receivers do): a post arriving within
                // microseconds then costs no futex sleep and wake-up. Once only: news
                // that leave nothing due (say, later timers) do not keep the looper
                // polling; it sleeps, and posters wake it for anything due earlier.
                if spun || !self.spin_for_news(st.swept_top) {
                    break (snapshot, deadline);
                }
                spun = true;
            };
            // Going to sleep: hand the retired nodes over so they need not wait for more.
            st.reclaimer.flush();
            self.waker.publish_deadline(deadline);
            // The looper's half of the pairing with posters (deadline store, then head
            // check; a poster pushes, then reads the deadline): one sees the other.
            if self.stack.head_unchanged(st.swept_top) {
                // The timeout is relative: measure it from now, not from the reading
                // before the spin and the flush, or the looper oversleeps by their time.
                let timeout = (deadline != u64::MAX)
                    .then(|| Duration::from_nanos(deadline.saturating_sub(self.clock.now())));
                if timeout != Some(Duration::ZERO) {
                    self.waker.sleep(snapshot, timeout);
                }
            }
            self.waker.clear_deadline();
        })
    }
}

impl<T: Send + 'static, C: Clock> Drop for DeliQueue<T, C> {
    fn drop(&mut self) {
        self.with_looper(|st| {
            if !st.torn_down {
                self.teardown(st);
            }
            st.reclaimer.free_all();
            // Free the pooled nodes here, on the dropping thread, rather than wherever
            // the epoch hands back the last batch (a looper, maybe: see `pool`'s docs).
            st.reclaimer.wait_for_batches();
        });
        self.pool.free_pooled();
        // SAFETY: the sentinel was allocated by `with_clock`, teardown unlinked it from
        // the list, and nothing else frees it.
        unsafe { node::free(self.sentinel) };
    }
}

#[cfg(test)]
mod tests;
